/*
 * Splitting a matrix over machines. A shard takes every N-th unit of the
 * global order a full run uses, so each shard still interleaves cells and
 * repetitions the way one machine would, and a cell's repetitions land on
 * different nodes (a slow node shows as spread, not as a biased cell).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/matrix/shard.h"
#include "vmm/cli/parse.h"

int bench_units_all(const struct bench_opts *o, const struct bench_matrix *m,
		    struct bench_unit **out, unsigned *n)
{
	unsigned per = m->n + (o->micro ? 1 : 0), k = 0;
	struct bench_unit *u = calloc((size_t)per * o->reps + 1, sizeof(*u));
	unsigned *order = calloc(m->n + 1, sizeof(*order));
	if (!u || !order) {
		free(u);
		free(order);
		return -ENOMEM;
	}
	for (unsigned rep = 0; rep < o->reps; rep++) {
		bench_run_order(m->n, rep, order);
		for (unsigned i = 0; i < m->n; i++)
			u[k++] = (struct bench_unit){ (int)order[i], rep };
		if (o->micro)
			u[k++] = (struct bench_unit){ BENCH_UNIT_MICRO, rep };
	}
	free(order);
	*out = u;
	*n = k;
	return 0;
}

unsigned bench_shard_of(unsigned k, unsigned count)
{
	return count ? k % count + 1 : 1;
}

int bench_units_select(const struct bench_opts *o, const struct bench_matrix *m,
		       struct bench_unit **out, unsigned *n, char *err, size_t errlen)
{
	struct bench_unit *u;
	unsigned all, k = 0;
	bool *sel = NULL, micro = false;
	if (bench_units_all(o, m, &u, &all))
		return parse_fail(err, errlen, "out of memory for the units");
	if (o->cells) {
		sel = calloc(m->n + 1, sizeof(*sel));
		int r = sel ? bench_cells_parse(o->cells, m->n, sel, &micro, err, errlen)
			    : parse_fail(err, errlen, "out of memory");
		if (r) {
			free(sel);
			free(u);
			return r;
		}
	}
	for (unsigned i = 0; i < all; i++) {
		bool take;
		if (o->shard_count)
			take = bench_shard_of(i, o->shard_count) == o->shard_index;
		else if (sel)
			take = u[i].cell == BENCH_UNIT_MICRO ? micro : sel[u[i].cell];
		else
			take = true;
		if (take)
			u[k++] = u[i];
	}
	free(sel);
	*out = u;
	*n = k;
	return 0;
}

static int parse_uint(const char *s, const char **end, unsigned *v)
{
	char *e;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	unsigned long x = strtoul(s, &e, 10);
	if (errno || x > 1000000)
		return -EINVAL;
	*v = (unsigned)x;
	*end = e;
	return 0;
}

int bench_shard_parse(const char *arg, unsigned *index, unsigned *count)
{
	const char *p;
	unsigned i, n;
	if (parse_uint(arg, &p, &i) || *p != '/' || parse_uint(p + 1, &p, &n) || *p)
		return -EINVAL;
	if (i < 1 || n < 1 || i > n)
		return -EINVAL;
	*index = i;
	*count = n;
	return 0;
}

int bench_cells_parse(const char *list, unsigned ncells, bool *sel, bool *micro, char *err,
		      size_t errlen)
{
	const char *p = list;
	unsigned any = 0;
	*micro = false;
	for (unsigned i = 0; i < ncells; i++)
		sel[i] = false;
	while (*p) {
		unsigned a, b;
		const char *e;
		if (!strncmp(p, "micro", 5) && (p[5] == ',' || !p[5])) {
			*micro = true;
			e = p + 5;
		} else {
			if (parse_uint(p, &e, &a))
				return parse_fail(err, errlen, "--cells: '%s' is not a list like 0,3-5", list);
			b = a;
			if (*e == '-' && parse_uint(e + 1, &e, &b))
				return parse_fail(err, errlen, "--cells: '%s' is not a list like 0,3-5", list);
			if (a > b || b >= ncells)
				return parse_fail(err, errlen, "--cells: %u-%u is not within the %u cells (0-%u)",
						  a, b, ncells, ncells ? ncells - 1 : 0);
			for (unsigned i = a; i <= b; i++)
				sel[i] = true;
		}
		any++;
		if (*e == ',' && e[1])
			e++;
		else if (*e)
			return parse_fail(err, errlen, "--cells: '%s' is not a list like 0,3-5", list);
		p = e;
	}
	if (!any)
		return parse_fail(err, errlen, "--cells: empty list");
	return 0;
}

void bench_cell_key(const struct bench_cell *c, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s:%s:%s:%s:%s:%ux%u:p%u:t%u", bench_kind_names[c->kind],
			 c->workload, c->lock, c->policy, bench_mode_names[c->mode], c->vms, c->vcpus,
			 c->pcpus, c->spin_threshold);
	/* Only when not vmm run's default, so the keys from before these were
	 * dimensions (and the fingerprints made of them) still hold. */
	if (n > 0 && (size_t)n < len && c->slice_us != BENCH_SLICE_US_DEFAULT)
		n += snprintf(buf + n, len - (size_t)n, ":s%u", c->slice_us);
	if (n > 0 && (size_t)n < len && c->defer_us != BENCH_DEFER_US_DEFAULT)
		n += snprintf(buf + n, len - (size_t)n, ":d%u", c->defer_us);
	if (n > 0 && (size_t)n < len && c->guest_slice_off)
		n += snprintf(buf + n, len - (size_t)n, ":gsoff");
	char l[16];
	if (n > 0 && (size_t)n < len && c->loop.kind != BENCH_LOOP_AUTO)
		n += snprintf(buf + n, len - (size_t)n, ":loop%s", bench_loop_name(&c->loop, l, sizeof(l)));
	if (n > 0 && (size_t)n < len && c->wake_slice_us != BENCH_WAKE_SLICE_US_DEFAULT)
		snprintf(buf + n, len - (size_t)n, ":w%u", c->wake_slice_us);
}

uint64_t bench_fnv1a(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
	return bench_fnv1a(s, strlen(s) + 1, h);
}

/*
 * What a cell measures depends on these and on nothing about the host but
 * pcpus (part of every key): the lists show through the cell keys, in id
 * order. What a run learned (start_margin_learned) is not the matrix.
 */
void bench_fingerprint(const struct bench_opts *o, const struct bench_matrix *m, char out[17])
{
	char line[256];
	uint64_t h = fnv_str(BENCH_FNV_INIT, "vmm-bench-matrix 1");
	snprintf(line, sizeof(line),
		 "preset=%s pcpus=%u reps=%u duration_ms=%u cs=%u work=%u native=%d micro=%d "
		 "start_margin_ms=%u fail_cell=%d synthetic=%d",
		 o->preset ? o->preset : "", o->pcpus, o->reps, o->duration_ms, o->cs_cycles,
		 o->work_cycles, o->native, o->micro, o->start_margin_ms, o->test_fail_cell,
		 o->test_synthetic);
	h = fnv_str(h, line);
	/* Linux workloads: what they boot and how much work they do (only when
	 * set, so the fingerprints of matrices without them still hold) */
	if (o->kernel || o->initrd) {
		snprintf(line, sizeof(line), "kernel=%s initrd=%s qemu=%s size=%u threads=%u", o->kernel ? o->kernel : "",
			 o->initrd ? o->initrd : "", o->qemu ? o->qemu : "", o->linux_size, o->linux_threads);
		h = fnv_str(h, line);
	}
	for (unsigned i = 0; i < m->n; i++) {
		bench_cell_key(&m->cells[i], line, sizeof(line));
		h = fnv_str(h, line);
	}
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}

bool bench_machine_same(const struct bench_machine *a, const struct bench_machine *b)
{
	return a->nproc == b->nproc && !strcmp(a->cpu, b->cpu) && !strcmp(a->kvm, b->kvm) &&
	       !strcmp(a->kernel, b->kernel);
}

/* Lower-case letters and digits of s, runs of anything else as one '-'. */
static size_t slug_part(const char *s, char *buf, size_t len, size_t max)
{
	size_t o = 0;
	bool dash = false;
	for (; *s && o + 2 < len && o < max; s++) {
		char ch = *s;
		if (ch >= 'A' && ch <= 'Z')
			ch = (char)(ch - 'A' + 'a');
		if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')) {
			if (dash && o)
				buf[o++] = '-';
			buf[o++] = ch;
			dash = false;
		} else {
			dash = true;
		}
	}
	buf[o] = '\0';
	return o;
}

void bench_identity_slug(const struct bench_machine *mc, char *buf, size_t len)
{
	char cpu[32], kvm[32], id[512];
	slug_part(mc->cpu, cpu, sizeof(cpu), 24);
	slug_part(mc->kvm, kvm, sizeof(kvm), 24);
	snprintf(id, sizeof(id), "%s\n%s\n%s\n%u", mc->cpu, mc->kvm, mc->kernel, mc->nproc);
	uint64_t h = fnv_str(BENCH_FNV_INIT, id);
	snprintf(buf, len, "%s-%s-n%u-%08llx", cpu[0] ? cpu : "cpu", kvm[0] ? kvm : "kvm", mc->nproc,
		 (unsigned long long)(h & 0xffffffffu));
}

void bench_list_cells(FILE *out, const struct bench_opts *o, const struct bench_matrix *m)
{
	char key[256];
	for (unsigned i = 0; i < m->n; i++) {
		bench_cell_key(&m->cells[i], key, sizeof(key));
		fprintf(out, "%u\t%s\treps=%u\n", m->cells[i].id, key, o->reps);
	}
	if (o->micro)
		fprintf(out, "micro\tmicro\treps=%u\n", o->reps);
	unsigned units = (m->n + (o->micro ? 1 : 0)) * o->reps;
	fprintf(out, "units=%u shards-max=%u\n", units, units);
}
