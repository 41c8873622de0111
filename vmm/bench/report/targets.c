/*
 * The open issues' speed targets, judged on this run's cells (BENCHMARKS.md,
 * "Targets"), so one `vmm bench --preset hotpath` (or `gang`) on a KVM
 * machine says which are met instead of leaving it to reading tables:
 *
 *   efficiency  lockbench ticket/none and pvticket/pv, one VM: median
 *               efficiency >= 0.97 at 2x and >= 0.95 at 4x (issue 13), from
 *               at least 5 interleaved runs (fewer: unknown, issue 32);
 *   vs host     every co-scheduler cell of one VM against --sched host at the
 *               same workload, lock, threshold and overcommit: the ratio of
 *               median efficiencies >= 1.00 and the cell's interval not
 *               wholly below the host's (issue 32: overlapping intervals
 *               alone let a cell below the host pass);
 *   vs process  each multi-VM domain cell against the same VMs in one
 *               process: ratio >= 0.97 (issue 12);
 *   vs qemu     a Linux workload at 2x under --yield pv against QEMU -accel
 *               kvm with the same kernel, vCPUs and CPUs: the ratio of
 *               medians >= 1.00 and its interval not wholly below (issue 30).
 *
 * A pure function of the matrix, so a merge of shards prints what the full
 * run did. A target's verdict is unknown when a cell failed or has no number.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/matrix/shard.h"
#include "vmm/bench/report/report.h"
#include "vmm/bench/stats/stats.h"

#define EFF_AT_2X 0.97
#define EFF_AT_4X 0.95
#define VS_PROCESS 0.97
#define VS_QEMU 1.0
#define MIN_EFF_RUNS 5 /* an efficiency verdict from fewer runs is noise (issue 32) */
#define MAX_TARGETS 3 /* a cell's: efficiency, vs host, vs qemu */

enum target_kind { T_EFFICIENCY, T_VS_HOST, T_VS_PROCESS, T_VS_QEMU };
static const char *const kind_names[] = { "efficiency", "vs host", "vs process", "vs qemu" };

struct target {
	enum target_kind kind;
	const struct bench_cell *c, *other; /* other: the host cell (vs host), QEMU's (vs qemu) */
	double value, lo, hi, bound;        /* lo, hi: NaN when unknown */
	int met;                            /* 1, 0, -1 unknown */
};

static bool at(double overcommit, double x)
{
	return fabs(overcommit - x) < 1e-9;
}

static bool one_vm(const struct bench_cell *c)
{
	return c->kind == BENCH_VM && c->vms == 1;
}

/* 1 met, 0 missed, -1 unknown (a failed cell, or no number to judge). */
static int judge(const struct bench_cell *c, const struct bench_cell *h, double v, double bound)
{
	if (c->failed || (h && h->failed) || !isfinite(v))
		return -1;
	return v >= bound;
}

static const struct bench_cell *host_twin(const struct bench_matrix *m, const struct bench_cell *c)
{
	for (unsigned i = 0; i < m->n; i++) {
		const struct bench_cell *h = &m->cells[i];
		if (one_vm(h) && !strcmp(h->policy, BENCH_POLICY_HOST) && !strcmp(h->workload, c->workload) &&
		    !strcmp(h->lock, c->lock) && h->spin_threshold == c->spin_threshold &&
		    h->vcpus == c->vcpus && h->pcpus == c->pcpus)
			return h;
	}
	return NULL;
}

/* The targets c is judged by (at most MAX_TARGETS), in t. */
static unsigned targets_of(const struct bench_matrix *m, const struct bench_cell *c, struct target t[MAX_TARGETS])
{
	unsigned n = 0;
	if (c->kind != BENCH_VM)
		return 0;
	struct target z = { .c = c, .value = NAN, .lo = c->eff_lo, .hi = c->eff_hi, .met = -1 };
	if (c->mode == BENCH_MODE_DOMAIN && c->vms > 1) {
		t[n] = z;
		t[n].kind = T_VS_PROCESS;
		t[n].value = c->vs_process;
		t[n].lo = t[n].hi = NAN; /* a ratio of medians: no interval */
		t[n].bound = VS_PROCESS;
		t[n].met = judge(c, NULL, t[n].value, t[n].bound);
		return ++n;
	}
	if (!one_vm(c) || c->overcommit <= 1 || !strcmp(c->policy, BENCH_POLICY_HOST))
		return 0;
	bool pinned = !strcmp(c->workload, "lockbench") &&
		      ((!strcmp(c->lock, "ticket") && !strcmp(c->policy, "none")) ||
		       (!strcmp(c->lock, "pvticket") && !strcmp(c->policy, "pv")));
	if (pinned && (at(c->overcommit, 2) || at(c->overcommit, 4))) {
		t[n] = z;
		t[n].kind = T_EFFICIENCY;
		t[n].value = c->eff;
		t[n].bound = at(c->overcommit, 2) ? EFF_AT_2X : EFF_AT_4X;
		t[n].met = c->nok < MIN_EFF_RUNS ? -1 : judge(c, NULL, t[n].value, t[n].bound);
		n++;
	}
	const struct bench_cell *h = host_twin(m, c);
	if (h) {
		t[n] = z;
		t[n].kind = T_VS_HOST;
		t[n].other = h;
		t[n].value = bench_ratio(c->eff, h->eff);
		t[n].bound = 1.0;
		t[n].met = judge(c, h, t[n].value, 1.0);
		if (t[n].met == 1 && isfinite(c->eff_hi) && isfinite(h->eff_lo) && c->eff_hi < h->eff_lo)
			t[n].met = 0; /* a median above with the interval wholly below: not trusted */
		n++;
	}
	if (c->qemu_ref >= 0 && !strcmp(c->policy, "pv") && at(c->overcommit, 2)) {
		const struct bench_cell *q = &m->cells[c->qemu_ref];
		t[n] = z;
		t[n].kind = T_VS_QEMU;
		t[n].other = q;
		t[n].value = c->vs_qemu;
		t[n].lo = c->vs_qemu_lo;
		t[n].hi = c->vs_qemu_hi;
		t[n].bound = VS_QEMU;
		t[n].met = judge(c, q, t[n].value, VS_QEMU);
		if (t[n].met == 1 && isfinite(t[n].hi) && t[n].hi < VS_QEMU)
			t[n].met = 0;
		n++;
	}
	return n;
}

static const char *verdict(int met)
{
	return met < 0 ? "unknown" : met ? "met" : "MISSED";
}

static const char *num(double v, char *buf, size_t len)
{
	if (isfinite(v))
		snprintf(buf, len, "%.3f", v);
	else
		snprintf(buf, len, "-");
	return buf;
}

void bench_targets_print(FILE *out, const struct bench_matrix *m)
{
	struct target t[MAX_TARGETS];
	int w = 0; /* the key column: as wide as the longest judged cell's key; 0: none judged */
	for (unsigned i = 0; i < m->n; i++) {
		char key[256];
		if (targets_of(m, &m->cells[i], t)) {
			bench_cell_key(&m->cells[i], key, sizeof(key));
			w = (int)strlen(key) > w ? (int)strlen(key) : w;
		}
	}
	if (!w)
		return;
	unsigned n[3] = { 0 }; /* missed, met, unknown */
	fprintf(out, "\ntargets (the open issues' acceptance, judged on this run; BENCHMARKS.md, \"Targets\"):\n");
	fprintf(out, "%-10s %4s %-*s %6s %-13s %6s %s\n", "target", "cell", w, "key", "value", "95% CI", "bound",
		"verdict");
	for (unsigned i = 0; i < m->n; i++) {
		unsigned k = targets_of(m, &m->cells[i], t);
		for (unsigned j = 0; j < k; j++) {
			char key[256], v[32], lo[32], hi[32], iv[72];
			bench_cell_key(t[j].c, key, sizeof(key));
			snprintf(iv, sizeof(iv), "%s..%s", num(t[j].lo, lo, sizeof(lo)), num(t[j].hi, hi, sizeof(hi)));
			fprintf(out, "%-10s %4u %-*s %6s %-13s %s%.2f %s", kind_names[t[j].kind], t[j].c->id, w, key,
				num(t[j].value, v, sizeof(v)), iv, ">=", t[j].bound,
				verdict(t[j].met));
			if (t[j].other && t[j].kind == T_VS_QEMU)
				fprintf(out, " (qemu: cell %u)", t[j].other->id);
			else if (t[j].other)
				fprintf(out, " (host: cell %u, %s..%s)", t[j].other->id,
					num(t[j].other->eff_lo, lo, sizeof(lo)), num(t[j].other->eff_hi, hi, sizeof(hi)));
			fputc('\n', out);
			n[t[j].met < 0 ? 2 : t[j].met]++;
		}
	}
	fprintf(out, "targets: %u met, %u missed, %u unknown\n", n[1], n[0], n[2]);
}

void bench_targets_json(json_t *root, const struct bench_matrix *m)
{
	json_t *arr = json_array();
	for (unsigned i = 0; i < m->n; i++) {
		struct target t[MAX_TARGETS];
		unsigned k = targets_of(m, &m->cells[i], t);
		for (unsigned j = 0; j < k; j++) {
			json_t *o = json_object();
			json_object_set_new(o, "target", json_string(kind_names[t[j].kind]));
			json_object_set_new(o, "cell_id", json_integer(t[j].c->id));
			json_object_set_new(o, "host_id", t[j].other && t[j].kind == T_VS_HOST ? json_integer(t[j].other->id)
												 : json_null());
			if (t[j].kind == T_VS_QEMU)
				json_object_set_new(o, "qemu_id", json_integer(t[j].other->id));
			json_object_set_new(o, "lo", bench_json_number(t[j].lo));
			json_object_set_new(o, "hi", bench_json_number(t[j].hi));
			json_object_set_new(o, "value", bench_json_number(t[j].value));
			json_object_set_new(o, "bound", json_real(t[j].bound));
			json_object_set_new(o, "met", t[j].met < 0 ? json_null() : json_boolean(t[j].met));
			json_array_append_new(arr, o);
		}
	}
	json_object_set_new(root, "targets", arr);
}
