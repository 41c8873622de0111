/*
 * results.json through jansson: the same fields, order and types the
 * hand-written writer gave (README), plus "shard" (which units this file
 * holds, of which matrix) so a merge can rebuild every struct bench_run.
 * Doubles print with 17 digits, so a merge re-derives exactly what a full
 * run derived; NaN (unknown) is null.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>

#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/matrix/shard.h"
#include "vmm/bench/report/report.h"
#include "vmm/bench/stats/stats.h"
#include "vmm/config.h"

/* Adding to a NULL object is a no-op in jansson; the dump then fails. */
static void put(json_t *o, const char *key, json_t *v)
{
	json_object_set_new(o, key, v);
}

/* Free text from children and /proc: jansson takes UTF-8 only, and a string
 * it refused would silently drop its key, so other bytes become '?'. */
static json_t *text(const char *s)
{
	char buf[512];
	size_t n = 0;
	for (; s && *s && n + 1 < sizeof(buf); s++)
		buf[n++] = (unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e ? '?' : *s;
	buf[n] = '\0';
	return json_string(buf);
}

static json_t *uint_(uint64_t v)
{
	return json_integer((json_int_t)v);
}

static json_t *list_s(const struct bench_strs *s)
{
	json_t *a = json_array();
	for (unsigned i = 0; i < s->n; i++)
		json_array_append_new(a, json_string(s->v[i]));
	return a;
}

static json_t *list_n(const struct bench_nums *s)
{
	json_t *a = json_array();
	for (unsigned i = 0; i < s->n; i++)
		json_array_append_new(a, bench_json_number(s->v[i]));
	return a;
}

/* A run's or a cell's scheduler statistics; NULL when none is known (native). */
static json_t *sched_json(const double *s)
{
	bool any = false;
	for (int k = 0; k < BENCH_SCHED_STATS; k++)
		any |= isfinite(s[k]);
	if (!any)
		return NULL;
	json_t *o = json_object();
	for (int k = 0; k < BENCH_SCHED_STATS; k++)
		put(o, bench_sched_names[k], bench_json_number(s[k]));
	return o;
}

static json_t *run_json(const struct bench_cell *c, const struct bench_run *r)
{
	json_t *o = json_object();
	put(o, "rep", uint_(r->rep));
	put(o, "ok", json_boolean(r->ok));
	put(o, "exit_code", json_integer(r->exit_code));
	put(o, "ops_per_s", bench_json_number(r->ops_per_s));
	put(o, "wall_s", bench_json_number(r->wall_s));
	if (r->vm_ops) {
		json_t *vms = json_array();
		for (unsigned k = 0; k < c->vms; k++) {
			json_t *v = json_object();
			put(v, "ops_per_s", bench_json_number(r->vm_ops[k]));
			if (c->mode != BENCH_MODE_PROCESS)
				put(v, "start_ns", uint_(r->vm_start_ns[k]));
			json_array_append_new(vms, v);
		}
		put(o, "vms", vms);
		if (c->mode != BENCH_MODE_PROCESS) {
			put(o, "start_spread_ms", bench_json_number(r->start_spread_ms));
			put(o, "max_start_late_ms", bench_json_number(r->max_late_ms));
			put(o, "unready", json_boolean(r->unready));
		}
		if (c->mode == BENCH_MODE_DOMAIN)
			put(o, "min_domain_grants", uint_(r->min_grants));
	}
	if (!r->ok)
		put(o, "reason", text(r->why));
	json_t *st = sched_json(r->sched);
	if (st)
		put(o, "sched", st);
	return o;
}

static json_t *multi_vm(json_t *o, const struct bench_cell *c)
{
	json_t *a = json_array();
	for (unsigned k = 0; c->vm_median && k < c->vms; k++)
		json_array_append_new(a, bench_json_number(c->vm_median[k]));
	put(o, "per_vm_ops_per_s", a);
	put(o, "jain", bench_json_number(c->jain));
	put(o, "max_over_min", bench_json_number(c->max_over_min));
	put(o, "vs_1vm", bench_json_number(c->vs_one_vm));
	put(o, "vs_1vm_ref_id", json_integer(c->one_vm_ref));
	put(o, "vs_process", bench_json_number(c->vs_process));
	put(o, "process_ref_id", json_integer(c->process_ref));
	put(o, "vs_host_procs", bench_json_number(c->vs_host_procs));
	put(o, "host_procs_ref_id", json_integer(c->host_procs_ref));
	put(o, "max_start_late_ms", bench_json_number(c->max_late_ms));
	put(o, "start_spread_ms", bench_json_number(c->start_spread_ms));
	return o;
}

static json_t *cell_json(const struct bench_cell *c)
{
	json_t *o = json_object();
	put(o, "id", uint_(c->id));
	put(o, "kind", json_string(bench_kind_names[c->kind]));
	put(o, "workload", json_string(c->workload));
	put(o, "lock", json_string(c->lock));
	put(o, "policy", json_string(c->policy));
	put(o, "spin_threshold", uint_(c->spin_threshold));
	put(o, "slice_us", uint_(c->slice_us));
	put(o, "defer_us", uint_(c->defer_us));
	put(o, "guest_slice", json_string(c->guest_slice_off ? "off" : "on"));
	char l[16];
	put(o, "loop_cpu", json_string(bench_loop_name(&c->loop, l, sizeof(l))));
	put(o, "wake_slice_us", uint_(c->wake_slice_us));
	put(o, "vms", uint_(c->vms));
	put(o, "vcpus_per_vm", uint_(c->vcpus));
	put(o, "vcpus_total", uint_(c->vms * c->vcpus));
	put(o, "pcpus", uint_(c->pcpus));
	put(o, "overcommit", bench_json_number(c->overcommit));
	put(o, "auto_added", json_boolean(c->auto_added));
	put(o, "ref_id", json_integer(c->ref));
	put(o, "native_ref_id", json_integer(c->native_ref));
	put(o, "status", json_string(c->failed ? "failed" : "ok"));
	put(o, "exit_code", json_integer(c->failed ? c->fail_exit : 0));
	if (c->failed)
		put(o, "reason", text(c->fail_why));
	put(o, "median_ops_per_s", bench_json_number(c->median));
	put(o, "min_ops_per_s", bench_json_number(c->min));
	put(o, "max_ops_per_s", bench_json_number(c->max));
	put(o, "spread_pct", bench_json_number(c->spread_pct));
	put(o, "median_lo", bench_json_number(c->median_lo));
	put(o, "median_hi", bench_json_number(c->median_hi));
	put(o, "median_ci_level", bench_json_number(c->median_level));
	put(o, "efficiency", bench_json_number(c->eff));
	put(o, "eff_lo", bench_json_number(c->eff_lo));
	put(o, "eff_hi", bench_json_number(c->eff_hi));
	put(o, "pooled_1x_ops_per_s", bench_json_number(c->pooled_1x));
	json_t *ids = json_array();
	for (unsigned k = 0; k < c->nused; k++)
		json_array_append_new(ids, json_integer(c->used[k]));
	put(o, "ref_ids", ids);
	put(o, "of_native", bench_json_number(c->of_native));
	put(o, "mode", json_string(bench_mode_names[c->mode]));
	put(o, "qemu_ref_id", json_integer(c->qemu_ref));
	put(o, "vs_qemu", bench_json_number(c->vs_qemu));
	put(o, "vs_qemu_lo", bench_json_number(c->vs_qemu_lo));
	put(o, "vs_qemu_hi", bench_json_number(c->vs_qemu_hi));
	if (c->kind == BENCH_VM && c->vms > 1)
		multi_vm(o, c);
	json_t *st = sched_json(c->sched_median);
	if (st) {
		for (int k = 0; k < BENCH_RATES; k++)
			put(st, bench_rate_names[k], bench_json_number(c->rate[k]));
		put(o, "sched", st);
	}
	json_t *runs = json_array();
	for (unsigned k = 0; k < c->nruns; k++)
		json_array_append_new(runs, run_json(c, &c->runs[k]));
	put(o, "runs", runs);
	return o;
}

static json_t *config_json(const struct bench_opts *o, unsigned learned)
{
	json_t *j = json_object();
	put(j, "pcpus", uint_(o->pcpus));
	put(j, "reps", uint_(o->reps));
	put(j, "duration_ms", uint_(o->duration_ms));
	put(j, "cs_cycles", uint_(o->cs_cycles));
	put(j, "work_cycles", uint_(o->work_cycles));
	put(j, "workloads", list_s(&o->workloads));
	put(j, "locks", list_s(&o->locks));
	put(j, "policies", list_s(&o->policies));
	put(j, "overcommit", list_n(&o->overcommit));
	put(j, "vms", list_n(&o->vms));
	put(j, "spin_thresholds", list_n(&o->thresholds));
	put(j, "slice_us", list_n(&o->slices));
	put(j, "defer_us", list_n(&o->defers));
	json_t *gs = json_array();
	for (unsigned k = 0; k < o->guest_slices.n; k++)
		json_array_append_new(gs, json_string(o->guest_slices.off[k] ? "off" : "on"));
	put(j, "guest_slice", gs);
	json_t *lc = json_array();
	for (unsigned k = 0; k < o->loops.n; k++) {
		char l[16];
		json_array_append_new(lc, json_string(bench_loop_name(&o->loops.v[k], l, sizeof(l))));
	}
	put(j, "loop_cpu", lc);
	put(j, "wake_slice_us", list_n(&o->wake_slices));
	put(j, "native", json_boolean(o->native));
	put(j, "micro", json_boolean(o->micro));
	json_t *modes = json_array();
	for (int k = 0; k < BENCH_MODES; k++)
		if (o->modes[k])
			json_array_append_new(modes, json_string(bench_mode_names[k]));
	put(j, "vm_modes", modes);
	put(j, "start_margin_ms", uint_(o->start_margin_ms));
	put(j, "start_margin_learned_ms", uint_(learned));
	/* Linux workloads: what both VMMs booted (only when given) */
	if (o->kernel || o->initrd) {
		put(j, "kernel", json_string(o->kernel ? o->kernel : ""));
		put(j, "initrd", json_string(o->initrd ? o->initrd : ""));
		put(j, "qemu", json_string(o->qemu ? o->qemu : ""));
		put(j, "linux_size", uint_(o->linux_size));
		put(j, "linux_threads", uint_(o->linux_threads));
		put(j, "linux_timeout_s", uint_(o->linux_timeout_s));
	}
	/* Only when set: they change what cells measure, so the fingerprint has them. */
	if (o->test_fail_cell >= 0)
		put(j, "test_fail_cell", json_integer(o->test_fail_cell));
	if (o->test_synthetic)
		put(j, "test_synthetic", json_true());
	return j;
}

static json_t *micro_json(const struct bench_micro *mi)
{
	json_t *j = json_object();
	put(j, "reps", uint_(mi->reps));
	for (int k = 0; k < BENCH_MICRO_KINDS; k++) {
		json_t *one = json_object(), *runs = json_array();
		put(one, "median", bench_json_number(mi->median[k]));
		for (unsigned r = 0; r < mi->reps; r++)
			json_array_append_new(runs, bench_json_number(mi->raw[k][r]));
		put(one, "runs", runs);
		put(j, bench_micro_names[k], one);
	}
	put(j, "hypercall_over_exit",
	    bench_json_number(bench_ratio(mi->median[BENCH_MICRO_HC], mi->median[BENCH_MICRO_EXIT])));
	put(j, "kick_over_futex",
	    bench_json_number(bench_ratio(mi->median[BENCH_MICRO_KICK], mi->median[BENCH_MICRO_FUTEX])));
	put(j, "kick_to_guest_over_futex",
	    bench_json_number(bench_ratio(mi->median[BENCH_MICRO_KICK_GUEST], mi->median[BENCH_MICRO_FUTEX])));
	put(j, "safe_point_switch_over_forced_preemption",
	    bench_json_number(bench_ratio(mi->median[BENCH_MICRO_SP_SWITCH], mi->median[BENCH_MICRO_PREEMPT])));
	put(j, "request_switch_over_safe_point_switch",
	    bench_json_number(bench_ratio(mi->median[BENCH_MICRO_REQ_SWITCH], mi->median[BENCH_MICRO_SP_SWITCH])));
	put(j, "own_tick_over_loop_preemption",
	    bench_json_number(bench_ratio(mi->median[BENCH_MICRO_PREEMPT_OWN], mi->median[BENCH_MICRO_PREEMPT])));
	put(j, "failures", uint_(mi->failures));
	return j;
}

static json_t *shard_json(const struct bench_shard_meta *meta)
{
	json_t *j = json_object(), *units = json_array();
	put(j, "index", uint_(meta->index));
	put(j, "count", uint_(meta->count));
	put(j, "matrix", json_string(meta->matrix));
	for (unsigned i = 0; i < meta->nunits; i++) {
		const struct bench_unit *u = &meta->units[i];
		json_t *cell = u->cell == BENCH_UNIT_MICRO ? json_string("micro") : uint_((unsigned)u->cell);
		json_array_append_new(units, json_pack("[o, I]", cell, (json_int_t)u->rep));
	}
	put(j, "units", units);
	return j;
}

int bench_report_json(const char *path, const struct bench_opts *o, const struct bench_matrix *m,
		      const struct bench_micro *mi, const struct bench_machine *mc,
		      const struct bench_shard_meta *meta)
{
	json_t *root = json_object(), *machine = json_object(), *cells = json_array();
	unsigned nfail = 0;
	put(root, "vmm_version", json_string(VMM_VERSION));
	put(root, "preset", json_string(o->preset));
	put(machine, "nproc", uint_(mc->nproc));
	put(machine, "cpu", text(mc->cpu));
	put(machine, "kernel", text(mc->kernel));
	put(machine, "kvm", text(mc->kvm));
	put(root, "machine", machine);
	put(root, "config", config_json(o, meta->margin_learned_ms));
	for (unsigned i = 0; i < m->n; i++) {
		json_array_append_new(cells, cell_json(&m->cells[i]));
		nfail += m->cells[i].failed;
	}
	put(root, "cells", cells);
	put(root, "failed_cells", uint_(nfail));
	if (mi->ran)
		put(root, "micro", micro_json(mi));
	bench_derived_json(root, m);
	bench_targets_json(root, m);
	put(root, "shard", shard_json(meta));
	FILE *f = fopen(path, "w");
	int r = f ? 0 : -errno;
	if (f) {
		if (json_dumpf(root, f, JSON_INDENT(1) | JSON_REAL_PRECISION(17)) || fputc('\n', f) == EOF)
			r = -EIO;
		if (fclose(f) && !r)
			r = -errno;
	}
	json_decref(root);
	return r;
}
