/*
 * Reading a shard's results.json for a merge. The files come from many
 * hosts, so this is a trust boundary: jansson parses (duplicate keys
 * refused), and every field read is checked for type and range here; a bad
 * file is one line naming the file and the field.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vmm/bench/cli/cli.h"
#include "vmm/bench/exec/exec.h"
#include "vmm/bench/fleet/fleet.h"
#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/matrix/shard.h"

struct ctx {
	const char *path;
	char *err;
	size_t errlen;
};

static int bad(const struct ctx *x, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(const struct ctx *x, const char *field, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(x->err, x->errlen, "%s: %s: %s", x->path, field, what);
	return -EINVAL;
}

static int get_uint(const struct ctx *x, json_t *o, const char *key, const char *field,
		    uint64_t max, uint64_t *out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
		return bad(x, field, "not a whole number from 0 to %llu", (unsigned long long)max);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int get_int(const struct ctx *x, json_t *o, const char *key, const char *field,
		   int64_t min, int64_t max, int64_t *out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return bad(x, field, "not a whole number from %lld to %lld", (long long)min, (long long)max);
	*out = json_integer_value(v);
	return 0;
}

/* A number, or null for unknown (NaN). */
static int get_num(const struct ctx *x, json_t *o, const char *key, const char *field, double *out)
{
	json_t *v = json_object_get(o, key);
	if (json_is_null(v)) {
		*out = NAN;
		return 0;
	}
	if (!json_is_number(v))
		return bad(x, field, "not a number or null");
	*out = json_number_value(v);
	return 0;
}

static int get_bool(const struct ctx *x, json_t *o, const char *key, const char *field, bool *out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_boolean(v))
		return bad(x, field, "not true or false");
	*out = json_is_true(v);
	return 0;
}

static int get_str(const struct ctx *x, json_t *o, const char *key, const char *field, char *out,
		   size_t len)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_string(v) || json_string_length(v) >= len)
		return bad(x, field, "not a string of at most %zu bytes", len - 1);
	snprintf(out, len, "%s", json_string_value(v));
	return 0;
}

/* The whole file: its bytes are hashed, so a copy of a shard is seen as one. */
static char *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		char *b = realloc(buf, cap *= 2);
		if (!b)
			free(buf);
		buf = b;
	}
	if (ferror(f)) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*size = n;
	return buf;
}

static int load_units(const struct ctx *x, json_t *shard, struct bench_shard_file *f)
{
	json_t *units = json_object_get(shard, "units"), *u;
	size_t i;
	if (!json_is_array(units))
		return bad(x, "shard.units", "not an array");
	f->units = calloc(json_array_size(units) + 1, sizeof(*f->units));
	if (!f->units)
		return bad(x, "shard.units", "out of memory");
	json_array_foreach(units, i, u) {
		json_t *c = json_array_get(u, 0), *r = json_array_get(u, 1);
		char field[64];
		snprintf(field, sizeof(field), "shard.units[%zu]", i);
		if (!json_is_array(u) || json_array_size(u) != 2 || !json_is_integer(r) ||
		    json_integer_value(r) < 0 || json_integer_value(r) >= BENCH_MAX_REPS)
			return bad(x, field, "not [cell, rep] with rep from 0 to %d", BENCH_MAX_REPS - 1);
		if (json_is_string(c) && !strcmp(json_string_value(c), "micro"))
			f->units[i].cell = BENCH_UNIT_MICRO;
		else if (json_is_integer(c) && json_integer_value(c) >= 0 &&
			 json_integer_value(c) < BENCH_MAX_CELLS)
			f->units[i].cell = (int)json_integer_value(c);
		else
			return bad(x, field, "the cell is not an id from 0 to %d or \"micro\"", BENCH_MAX_CELLS - 1);
		f->units[i].rep = (unsigned)json_integer_value(r);
	}
	f->nunits = (unsigned)json_array_size(units);
	return 0;
}

static int load_head(const struct ctx *x, json_t *root, struct bench_shard_file *f)
{
	json_t *mc = json_object_get(root, "machine"), *sh = json_object_get(root, "shard");
	json_t *cfg = json_object_get(root, "config"), *micro = json_object_get(root, "micro");
	uint64_t v;
	int r;
	if (!json_is_object(root))
		return bad(x, "(top)", "not an object");
	if (!json_is_object(mc))
		return bad(x, "machine", "not an object");
	if (!json_is_object(sh))
		return bad(x, "shard", "absent or not an object (not a vmm bench results.json of this version)");
	if (!json_is_object(cfg))
		return bad(x, "config", "not an object");
	if ((r = get_uint(x, mc, "nproc", "machine.nproc", 1u << 20, &v)))
		return r;
	f->mc.nproc = (unsigned)v;
	if ((r = get_str(x, mc, "cpu", "machine.cpu", f->mc.cpu, sizeof(f->mc.cpu))) ||
	    (r = get_str(x, mc, "kernel", "machine.kernel", f->mc.kernel, sizeof(f->mc.kernel))) ||
	    (r = get_str(x, mc, "kvm", "machine.kvm", f->mc.kvm, sizeof(f->mc.kvm))))
		return r;
	if ((r = get_uint(x, sh, "count", "shard.count", 1000000, &v)))
		return r;
	f->count = (unsigned)v;
	/* 0: a --cells run (count 0) or a merge of count shards */
	if ((r = get_uint(x, sh, "index", "shard.index", f->count, &v)))
		return r;
	f->index = (unsigned)v;
	if (f->count && !f->index && !json_object_get(sh, "units"))
		return bad(x, "shard.index", "0 of %u without units", f->count);
	if ((r = get_str(x, sh, "matrix", "shard.matrix", f->matrix, sizeof(f->matrix))))
		return r;
	if (strlen(f->matrix) != 16 || strspn(f->matrix, "0123456789abcdef") != 16)
		return bad(x, "shard.matrix", "not 16 hex digits");
	if ((r = get_uint(x, cfg, "start_margin_learned_ms", "config.start_margin_learned_ms", 600000, &v)))
		return r;
	f->margin_learned_ms = (unsigned)v;
	if (micro) {
		if (!json_is_object(micro))
			return bad(x, "micro", "not an object");
		if ((r = get_uint(x, micro, "failures", "micro.failures", 1u << 20, &v)))
			return r;
		f->micro_failures = (unsigned)v;
	}
	return load_units(x, sh, f);
}

int bench_load_file(const char *arg, struct bench_shard_file *f, char *err, size_t errlen)
{
	struct stat st;
	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "%s", arg);
	if (!stat(arg, &st) && S_ISDIR(st.st_mode))
		snprintf(f->path, sizeof(f->path), "%s/results.json", arg);
	struct ctx x = { f->path, err, errlen };
	char *text = slurp(f->path, &f->size);
	if (!text) {
		snprintf(err, errlen, "%s: %s", f->path, strerror(errno ? errno : EIO));
		return -EINVAL;
	}
	if (!realpath(f->path, f->real))
		snprintf(f->real, sizeof(f->real), "%s", f->path);
	f->content = bench_fnv1a(text, f->size, BENCH_FNV_INIT);
	json_error_t je;
	json_t *root = json_loadb(text, f->size, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!root) {
		snprintf(err, errlen, "%s: line %d: not JSON: %s", f->path, je.line, je.text);
		return -EINVAL;
	}
	f->root = root;
	return load_head(&x, root, f);
}

void bench_load_free(struct bench_shard_file *f)
{
	json_decref(f->root);
	free(f->units);
	f->root = NULL;
	f->units = NULL;
}

/* A JSON list as the comma list the option takes. */
static int join(const struct ctx *x, json_t *cfg, const char *key, bool strings, char *buf,
		size_t len)
{
	json_t *a = json_object_get(cfg, key), *v;
	size_t i, o = 0;
	char field[64];
	snprintf(field, sizeof(field), "config.%s", key);
	if (!json_is_array(a) || !json_array_size(a) || json_array_size(a) > BENCH_MAX_LIST)
		return bad(x, field, "not a list of 1 to %d values", BENCH_MAX_LIST);
	json_array_foreach(a, i, v) {
		char one[64];
		if (strings && json_is_string(v) && json_string_length(v) < 48 &&
		    !strchr(json_string_value(v), ','))
			snprintf(one, sizeof(one), "%s", json_string_value(v));
		else if (!strings && json_is_number(v) && isfinite(json_number_value(v)))
			snprintf(one, sizeof(one), "%.17g", json_number_value(v));
		else
			return bad(x, field, "item %zu is not a %s", i, strings ? "name" : "number");
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? "," : "", one);
		if (o >= len)
			return bad(x, field, "too long");
	}
	return 0;
}

/* The command line a file's "config" is read back as; its strings live in pool. */
struct cmdline {
	const char *argv[64];
	int argc;
	char pool[32768];
	size_t used;
};

/* opt, and a copy of val when not NULL. */
static int add(const struct ctx *x, struct cmdline *c, const char *opt, const char *val)
{
	c->argv[c->argc++] = opt;
	if (!val)
		return 0;
	size_t len = strlen(val) + 1;
	if (len > sizeof(c->pool) - c->used)
		return bad(x, "config", "too long");
	c->argv[c->argc++] = memcpy(c->pool + c->used, val, len);
	c->used += len;
	return 0;
}

static int lists_of(const struct ctx *x, json_t *cfg, struct cmdline *c)
{
	static const char *const lists[][2] = {
		{ "workloads", "--workloads" }, { "locks", "--locks" }, { "policies", "--policies" },
		{ "vm_modes", "--vm-mode" }, { "overcommit", "--overcommit" }, { "vms", "--vms" },
		{ "spin_thresholds", "--spin-thresholds" },
	};
	char val[1024];
	int r = 0;
	for (unsigned i = 0; !r && i < sizeof(lists) / sizeof(lists[0]); i++)
		if (!(r = join(x, cfg, lists[i][0], i < 4, val, sizeof(val))))
			r = add(x, c, lists[i][1], val);
	return r;
}

static int wholes_of(const struct ctx *x, json_t *cfg, struct cmdline *c)
{
	static const char *const whole[][3] = {
		{ "pcpus", "--pcpus", "" }, { "reps", "--reps", "" }, { "duration_ms", "--duration", "ms" },
		{ "cs_cycles", "--cs-cycles", "" }, { "work_cycles", "--work-cycles", "" },
		{ "start_margin_ms", "--start-margin", "ms" },
	};
	uint64_t v;
	int r;
	for (unsigned i = 0; i < sizeof(whole) / sizeof(whole[0]); i++) {
		char field[64], num[32];
		snprintf(field, sizeof(field), "config.%s", whole[i][0]);
		if ((r = get_uint(x, cfg, whole[i][0], field, UINT32_MAX, &v)))
			return r;
		if (!strcmp(whole[i][0], "start_margin_ms") && !v)
			continue; /* 0: automatic, no option */
		snprintf(num, sizeof(num), "%llu%s", (unsigned long long)v, whole[i][2]);
		if ((r = add(x, c, whole[i][1], num)))
			return r;
	}
	return 0;
}

/* Absent from files of before these were dimensions: vmm run's default,
 * which is what those runs had, given explicitly so that a preset that
 * sweeps the dimension now (slices: --wake-slice-us 0,1000) does not
 * widen an old file's matrix. */
static int dims_of(const struct ctx *x, json_t *cfg, struct cmdline *c)
{
#define STR_(v) #v
#define STR(v) STR_(v)
	static const struct {
		const char *key, *opt, *old;
		bool strings;
	} dims[] = { { "slice_us", "--slice-us", STR(BENCH_SLICE_US_DEFAULT), false },
		     { "defer_us", "--defer-us", STR(BENCH_DEFER_US_DEFAULT), false },
		     { "guest_slice", "--guest-slice", "on", true },
		     { "loop_cpu", "--loop-cpu", "auto", true },
		     { "wake_slice_us", "--wake-slice-us", STR(BENCH_WAKE_SLICE_US_DEFAULT), false } };
#undef STR
#undef STR_
	char val[1024];
	int r = 0;
	for (unsigned i = 0; !r && i < sizeof(dims) / sizeof(dims[0]); i++) {
		if (!json_object_get(cfg, dims[i].key))
			r = add(x, c, dims[i].opt, dims[i].old);
		else if (!(r = join(x, cfg, dims[i].key, dims[i].strings, val, sizeof(val))))
			r = add(x, c, dims[i].opt, val);
	}
	return r;
}

/* Linux workloads: what they booted, as the run that wrote the file was told. */
static int linux_of(const struct ctx *x, json_t *cfg, struct cmdline *c)
{
	static const char *const paths[][2] = { { "kernel", "--kernel" }, { "initrd", "--initrd" }, { "qemu", "--qemu" } };
	static const char *const lnums[][3] = { { "linux_size", "--linux-size", "" },
						{ "linux_threads", "--linux-threads", "" },
						{ "linux_timeout_s", "--linux-timeout", "s" } };
	char val[4096], field[32];
	uint64_t v;
	int r;
	if (!json_object_get(cfg, "kernel"))
		return 0;
	for (unsigned i = 0; i < 3; i++) {
		snprintf(field, sizeof(field), "config.%s", paths[i][0]);
		if ((r = get_str(x, cfg, paths[i][0], field, val, sizeof(val))) || (r = add(x, c, paths[i][1], val)))
			return r;
	}
	for (unsigned i = 0; i < 3; i++) {
		snprintf(field, sizeof(field), "config.%s", lnums[i][0]);
		if ((r = get_uint(x, cfg, lnums[i][0], field, UINT32_MAX, &v)))
			return r;
		if (!v)
			continue; /* linux_size 0: the workload's own */
		snprintf(val, sizeof(val), "%llu%s", (unsigned long long)v, lnums[i][2]);
		if ((r = add(x, c, lnums[i][1], val)))
			return r;
	}
	return 0;
}

static int switches_of(const struct ctx *x, json_t *cfg, struct cmdline *c)
{
	bool b = false;
	int r;
	if ((r = get_bool(x, cfg, "native", "config.native", &b)))
		return r;
	if (!b)
		add(x, c, "--no-native", NULL);
	if ((r = get_bool(x, cfg, "micro", "config.micro", &b)))
		return r;
	if (!b)
		add(x, c, "--no-micro", NULL);
	if (json_object_get(cfg, "test_synthetic")) {
		if ((r = get_bool(x, cfg, "test_synthetic", "config.test_synthetic", &b)))
			return r;
		if (b)
			add(x, c, "--test-synthetic", NULL);
	}
	if (json_object_get(cfg, "test_fail_cell")) {
		int64_t fc;
		char num[32];
		if ((r = get_int(x, cfg, "test_fail_cell", "config.test_fail_cell", 0, BENCH_MAX_CELLS, &fc)))
			return r;
		snprintf(num, sizeof(num), "%lld", (long long)fc);
		return add(x, c, "--test-fail-cell", num);
	}
	return 0;
}

int bench_load_opts(const struct bench_shard_file *f, struct bench_opts *o, char *err,
		    size_t errlen)
{
	struct ctx x = { f->path, err, errlen };
	json_t *root = f->root, *cfg = json_object_get(root, "config");
	struct cmdline c;
	char preset[32], perr[256];
	int r;
	c.argc = 0;
	c.used = 0;
	add(&x, &c, "bench", NULL);
	if ((r = get_str(&x, root, "preset", "preset", preset, sizeof(preset))) || (r = add(&x, &c, "--preset", preset)) ||
	    (r = lists_of(&x, cfg, &c)) || (r = wholes_of(&x, cfg, &c)) || (r = dims_of(&x, cfg, &c)) ||
	    (r = linux_of(&x, cfg, &c)) || (r = switches_of(&x, cfg, &c)))
		return r;
	c.argv[c.argc] = NULL;
	bench_opts_defaults(o);
	o->pcpus_max = 1u << 16; /* the shard's host, not this one, had them */
	o->merging = true;       /* and its --kernel and --initrd */
	/* what bench_parse keeps of argv it copies into its own pools (lists, paths) */
	if (bench_parse(c.argc, (char **)c.argv, o, perr, sizeof(perr)))
		return bad(&x, "config", "%s", perr);
	return 0;
}

/* A run's "sched": absent (a native run, or an older file) is all unknown;
 * present, every statistic is a non-negative number or null, but for the
 * run meter's two, the guest-timed slices' two and the loop's CPU, which
 * files written before them lack (unknown then). The loop's CPU is not a
 * count: a CPU number, -1 or -2 (matrix/types.h). */
static int load_sched(const struct ctx *x, json_t *st, const char *field, double *out)
{
	bench_sched_clear(out);
	if (!st)
		return 0;
	if (!json_is_object(st))
		return bad(x, field, "not an object");
	for (int k = 0; k < BENCH_SCHED_STATS; k++) {
		char f2[192];
		snprintf(f2, sizeof(f2), "%s.%s", field, bench_sched_names[k]);
		if (k >= BENCH_SCHED_RUN_NS_TOTAL && !json_object_get(st, bench_sched_names[k]))
			continue;
		int r = get_num(x, st, bench_sched_names[k], f2, &out[k]);
		if (r)
			return r;
		if (k == BENCH_SCHED_LOOP_CPU) {
			if (!isnan(out[k]) && (out[k] != floor(out[k]) || out[k] < -2 || out[k] > BENCH_LOOP_CPU_MAX))
				return bad(x, f2, "not a CPU number, -1 or -2");
		} else if (out[k] < 0 || isinf(out[k])) {
			return bad(x, f2, "negative or infinite");
		}
	}
	return 0;
}

static int load_run(const struct ctx *x, json_t *j, const struct bench_cell *c, const char *field,
		    struct bench_run *out)
{
	char fl[160];
	int64_t v;
	uint64_t u;
	int r;
	json_t *vms = json_object_get(j, "vms");
#define F(name) (snprintf(fl, sizeof(fl), "%s.%s", field, name), fl)
	if ((r = get_bool(x, j, "ok", F("ok"), &out->ok)) ||
	    (r = get_int(x, j, "exit_code", F("exit_code"), -1, 255, &v)))
		return r;
	out->exit_code = (int)v;
	if ((r = get_num(x, j, "ops_per_s", F("ops_per_s"), &out->ops_per_s)) ||
	    (r = get_num(x, j, "wall_s", F("wall_s"), &out->wall_s)))
		return r;
	if (!out->ok && (r = get_str(x, j, "reason", F("reason"), out->why, sizeof(out->why))))
		return r;
	if ((r = load_sched(x, json_object_get(j, "sched"), F("sched"), out->sched)))
		return r;
	out->start_spread_ms = out->max_late_ms = NAN;
	if (!vms)
		return 0;
	if (c->kind != BENCH_VM || c->vms < 2 || !json_is_array(vms) || json_array_size(vms) != c->vms)
		return bad(x, F("vms"), "not a list of the cell's %u VMs", c->vms);
	out->vm_ops = calloc(c->vms, sizeof(*out->vm_ops));
	out->vm_start_ns = calloc(c->vms, sizeof(*out->vm_start_ns));
	if (!out->vm_ops || !out->vm_start_ns)
		return bad(x, F("vms"), "out of memory");
	bool procs = c->mode != BENCH_MODE_PROCESS;
	for (unsigned k = 0; k < c->vms; k++) {
		json_t *vm = json_array_get(vms, k);
		char f2[192];
		snprintf(f2, sizeof(f2), "%s.vms[%u]", field, k);
		if (!json_is_object(vm))
			return bad(x, f2, "not an object");
		snprintf(f2, sizeof(f2), "%s.vms[%u].ops_per_s", field, k);
		if ((r = get_num(x, vm, "ops_per_s", f2, &out->vm_ops[k])))
			return r;
		snprintf(f2, sizeof(f2), "%s.vms[%u].start_ns", field, k);
		if (procs && (r = get_uint(x, vm, "start_ns", f2, INT64_MAX, &out->vm_start_ns[k])))
			return r;
	}
	if (procs && ((r = get_num(x, j, "start_spread_ms", F("start_spread_ms"), &out->start_spread_ms)) ||
		      (r = get_num(x, j, "max_start_late_ms", F("max_start_late_ms"), &out->max_late_ms)) ||
		      (r = get_bool(x, j, "unready", F("unready"), &out->unready))))
		return r;
	if (c->mode == BENCH_MODE_DOMAIN) {
		if ((r = get_uint(x, j, "min_domain_grants", F("min_domain_grants"), INT64_MAX, &u)))
			return r;
		out->min_grants = u;
	}
#undef F
	return 0;
}

/*
 * Kinds are only ever added at the end, so a file from before some were
 * added has a prefix of ours: at least the first BENCH_MICRO_KINDS_FIRST,
 * then none missing before one present. The missing tail is unknown (NaN);
 * a gap, or a missing early kind, is a malformed file.
 */
static int micro_kinds_in(const struct ctx *x, json_t *micro, unsigned *n)
{
	*n = 0;
	while (*n < BENCH_MICRO_KINDS && json_object_get(micro, bench_micro_names[*n]))
		(*n)++;
	char field[96];
	if (*n < BENCH_MICRO_KINDS_FIRST) {
		snprintf(field, sizeof(field), "micro.%s", bench_micro_names[*n]);
		return bad(x, field, "absent");
	}
	for (unsigned k = *n + 1; k < BENCH_MICRO_KINDS; k++)
		if (json_object_get(micro, bench_micro_names[k])) {
			snprintf(field, sizeof(field), "micro.%s", bench_micro_names[*n]);
			return bad(x, field, "absent, but the later micro.%s is there", bench_micro_names[k]);
		}
	return 0;
}

static int load_micro(const struct ctx *x, json_t *root, unsigned rep, struct bench_micro *mi)
{
	json_t *micro = json_object_get(root, "micro");
	unsigned kinds;
	if (!json_is_object(micro))
		return bad(x, "micro", "absent, but the units have micro repetitions");
	int r = micro_kinds_in(x, micro, &kinds);
	if (r)
		return r;
	for (unsigned k = kinds; k < BENCH_MICRO_KINDS; k++)
		mi->raw[k][rep] = NAN;
	for (unsigned k = 0; k < kinds; k++) {
		char field[96];
		json_t *one = json_object_get(micro, bench_micro_names[k]);
		json_t *runs = json_object_get(one, "runs"), *v = json_array_get(runs, rep);
		snprintf(field, sizeof(field), "micro.%s.runs[%u]", bench_micro_names[k], rep);
		if (!json_is_number(v) && !json_is_null(v))
			return bad(x, field, "absent or not a number or null");
		mi->raw[k][rep] = json_is_number(v) ? json_number_value(v) : NAN;
	}
	return 0;
}

int bench_load_runs(const struct bench_shard_file *f, const struct bench_opts *o,
		    const struct bench_matrix *m, struct bench_run *stage, struct bench_micro *mi,
		    char *err, size_t errlen)
{
	struct ctx x = { f->path, err, errlen };
	json_t *cells = json_object_get(f->root, "cells");
	unsigned reps = o->reps, found = 0, want = 0;
	int r;
	if (!json_is_array(cells) || json_array_size(cells) != m->n)
		return bad(&x, "cells", "not a list of the matrix's %u cells", m->n);
	/* Which units the file claims: a run it holds must be one of them. */
	unsigned char *mine = calloc((size_t)m->n * reps + 1, 1);
	if (!mine)
		return bad(&x, "cells", "out of memory");
	for (unsigned i = 0; i < f->nunits; i++) {
		const struct bench_unit *u = &f->units[i];
		if (u->cell >= (int)m->n || u->rep >= reps) {
			free(mine);
			return bad(&x, "shard.units", "[%d, %u] is not in the matrix (%u cells, %u reps)",
				   u->cell, u->rep, m->n, reps);
		}
		if (u->cell == BENCH_UNIT_MICRO) {
			if ((r = load_micro(&x, f->root, u->rep, mi))) {
				free(mine);
				return r;
			}
			continue;
		}
		mine[(size_t)u->cell * reps + u->rep] = 1;
		want++;
	}
	for (unsigned i = 0; i < m->n; i++) {
		json_t *c = json_array_get(cells, i), *runs = json_object_get(c, "runs"), *j;
		char field[96];
		size_t k;
		uint64_t v;
		snprintf(field, sizeof(field), "cells[%u].id", i);
		if (!json_is_object(c) || (r = get_uint(&x, c, "id", field, BENCH_MAX_CELLS, &v)))
			goto out;
		if (v != i) {
			r = bad(&x, field, "%llu where the matrix has %u", (unsigned long long)v, i);
			goto out;
		}
		snprintf(field, sizeof(field), "cells[%u].runs", i);
		if (!json_is_array(runs)) {
			r = bad(&x, field, "not an array");
			goto out;
		}
		json_array_foreach(runs, k, j) {
			snprintf(field, sizeof(field), "cells[%u].runs[%zu]", i, k);
			char f2[128];
			snprintf(f2, sizeof(f2), "%s.rep", field);
			if (!json_is_object(j) || (r = get_uint(&x, j, "rep", f2, reps - 1, &v)))
				goto out;
			size_t at = (size_t)i * reps + v;
			if (mine[at] != 1) {
				r = bad(&x, f2, "%llu is %s", (unsigned long long)v,
					mine[at] ? "there twice" : "not among shard.units");
				goto out;
			}
			mine[at] = 2;
			stage[at].rep = (unsigned)v;
			if ((r = load_run(&x, j, &m->cells[i], field, &stage[at])))
				goto out;
			found++;
		}
	}
	r = found == want ? 0 : bad(&x, "cells", "%u of the %u units in shard.units have no run", want - found, want);
out:
	free(mine);
	return r;
}
