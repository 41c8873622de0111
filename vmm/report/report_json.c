/* The report as one JSON object (--json FILE); README.md documents every field. */
#include <errno.h>

#include "lib/json_out.h"
#include "vmm/report/report.h"
#include "vmm/core/vm_linux.h"

/* A Linux guest: what it was booted with, and what CPUID offered it and why. */
static void json_domain(struct json_out *o, json_t *parent, const struct run *r);

static void json_linux(struct json_out *o, json_t *parent, const struct run *r)
{
	const struct vm_config *cfg = r->cfg;
	const struct vm_linux *lx = r->vms_created ? r->vms[0].linux_guest : NULL;
	if (!cfg->kernel_path)
		return;
	json_t *kernel = json_out_obj(o, parent, "linux");
	json_out_str(o, kernel, "kernel", cfg->kernel_path);
	if (lx && lx->bz.kernel_version[0])
		json_out_str(o, kernel, "kernel_version", lx->bz.kernel_version);
	if (cfg->initrd_path)
		json_out_str(o, kernel, "initrd", cfg->initrd_path);
	json_out_str(o, kernel, "cmdline", cfg->cmdline);
	if (cfg->disk_path) {
		json_out_str(o, kernel, "disk", cfg->disk_path);
		json_out_bool(o, kernel, "disk_read_only", cfg->disk_read_only);
	}
	if (lx && lx->blk) {
		struct virtio_blk_stats d = virtio_blk_pci_stats(lx->blk);
		json_t *disk_stats = json_out_obj(o, kernel, "disk_stats");
		json_out_u64(o, disk_stats, "requests", d.requests);
		json_out_u64(o, disk_stats, "ok", d.ok);
		json_out_u64(o, disk_stats, "io_errors", d.ioerr);
		json_out_u64(o, disk_stats, "host_errors", d.backend_errors);
		json_out_u64(o, disk_stats, "submit_errors", d.submit_errors);
		json_out_u64(o, disk_stats, "unsupported", d.unsupp);
		json_out_u64(o, disk_stats, "malformed", d.bad_chains);
		json_out_u64(o, disk_stats, "resets_cancelling_io", d.reset_cancels);
		json_out_u64(o, disk_stats, "reset_errors", d.reset_errors);
		json_out_u64(o, disk_stats, "reset_timeouts", d.reset_timeouts);
	}
	if (lx) {
		json_out_str(o, kernel, "cpuid_mask", lx->mask_note);
		json_out_i64(o, kernel, "vmcall_probe", lx->vmcall_ok);
		json_out_str(o, kernel, "vmcall_note", lx->vmcall_note);
		json_out_u64(o, kernel, "kvm_pv_features", lx->cpuid.kvm_features);
		json_out_str(o, kernel, "kvm_pv_note", lx->pv_note);
		if (r->pv_count_note[0])
			json_out_str(o, kernel, "pv_kicks_note", r->pv_count_note);
		else
			json_out_null(o, kernel, "pv_kicks_note");
	}
}

static void json_config(struct json_out *o, json_t *parent, const struct run *r)
{
	const struct vm_config *cfg = r->cfg;
	json_t *config = json_out_obj(o, parent, "config");
	json_out_u64(o, config, "cpus", cfg->ncpus);
	json_out_u64(o, config, "vms", r->nvms);
	json_out_u64(o, config, "mem_bytes", cfg->mem_bytes);
	json_out_str(o, config, "firmware", cfg->firmware_path ? cfg->firmware_path : "bundled");
	json_out_str(o, config, "workload", cfg->kernel_path ? "linux" : cfg->workload);
	json_out_str(o, config, "lock", cfg->kernel_path ? "none" : cfg->lock);
	json_out_u64(o, config, "cs_cycles", cfg->cs_cycles);
	json_out_u64(o, config, "work_cycles", cfg->work_cycles);
	json_out_u64(o, config, "spin_threshold", cfg->spin_threshold);
	json_out_u64(o, config, "duration_ms", cfg->duration_ms);
	json_out_u64(o, config, "timeout_ms", cfg->timeout_ms);
	json_out_u64(o, config, "tsc_hz", r->vms_created ? r->vms[0].tsc_hz : 0);
	json_out_bool(o, config, "pv_spinlock", cfg->pv_spinlock);
	json_out_bool(o, config, "pv_shootdown", cfg->pv_shootdown);
	json_out_u64(o, config, "pv_features", r->vms_created ? r->vms[0].hc.pv_features : 0);
	json_out_bool(o, config, "seccomp", !cfg->no_seccomp);
	json_t *sched = json_out_obj(o, config, "sched");
	json_out_str(o, sched, "mode", cfg->sched_mode == SCHED_MODE_HOST ? "host" : "vmm");
	json_out_u64(o, sched, "pcpus", r->nslots);
	json_out_str(o, sched, "yield", cfg->sched_mode == SCHED_MODE_HOST ? "none" : cfg->policy);
	json_t *spin_detect = json_out_arr(o, sched, "spin_detect");
	if (cfg->spin_detect & SPIN_DETECT_PLE)
		json_out_str(o, spin_detect, NULL, "ple");
	if (cfg->spin_detect & SPIN_DETECT_HINT)
		json_out_str(o, spin_detect, NULL, "hint");
	if (cfg->spin_detect & SPIN_DETECT_YIELD)
		json_out_str(o, spin_detect, NULL, "yield");
	if (r->ple_note[0])
		json_out_str(o, sched, "ple_note", r->ple_note);
	if (r->ple_on)
		json_out_str(o, sched, "ple_tracepoint", cfg->ple_tracepoint ? cfg->ple_tracepoint : "kvm:kvm_exit");
	json_out_u64(o, sched, "ple_events", r->ple_events);
	json_out_u64(o, sched, "slice_us", cfg->slice_us);
	json_out_u64(o, sched, "wake_slice_us", cfg->wake_slice_us);
	json_out_u64(o, sched, "ple_window_us", cfg->ple_window_us);
	json_out_bool(o, sched, "safe_point", cfg->safe_point);
	json_out_bool(o, sched, "guest_slice", cfg->safe_point && cfg->guest_slice);
	json_out_bool(o, sched, "own_tick", cfg->own_tick);
	json_out_u64(o, sched, "defer_us", cfg->defer_us);
	json_out_u64(o, sched, "halt_check_us", r->halt_check_us);
	if (r->halt_note[0])
		json_out_str(o, sched, "halt_note", r->halt_note);
	json_linux(o, config, r);
}

static void json_domain(struct json_out *o, json_t *parent, const struct run *r)
{
	struct dlink_report d;
	dlink_get_report(r->domain, &d);
	json_t *domain = json_out_obj(o, parent, "domain");
	json_out_str(o, domain, "name", r->cfg->domain);
	json_out_i64(o, domain, "member", r->dom.member);
	json_out_i64(o, domain, "seats", r->dom.nseats);
	json_out_i64(o, domain, "slots", r->dom.nslots);
	json_out_u64(o, domain, "weight", r->cfg->weight);
	json_out_u64(o, domain, "grants", d.grants);
	json_out_u64(o, domain, "revokes", d.revokes);
	json_out_u64(o, domain, "reclaims", d.reclaims);
	json_out_bool(o, domain, "agent_lost", d.lost);
	if (d.lost) {
		json_out_f64(o, domain, "agent_lost_at_s", d.lost_ns > r->start_ns ? (double)(d.lost_ns - r->start_ns) / 1e9 : 0.0);
		json_out_str(o, domain, "agent_lost_why", d.lost_why);
		json_out_i64(o, domain, "agent_lost_seats_held", d.lost_held);
		if (d.alone_ns)
			json_out_f64(o, domain, "agent_alone_at_s", d.alone_ns > r->start_ns ? (double)(d.alone_ns - r->start_ns) / 1e9 : 0.0);
	}
	json_out_u64(o, domain, "agent_stalls", d.stalls);
	if (d.stalls) { /* the last one */
		json_out_f64(o, domain, "agent_stalled_at_s", d.stall_ns > r->start_ns ? (double)(d.stall_ns - r->start_ns) / 1e9 : 0.0);
		if (d.stall_end_ns)
			json_out_f64(o, domain, "agent_stall_s", (double)(d.stall_end_ns - d.stall_ns) / 1e9);
		json_out_i64(o, domain, "stall_seats_held", d.stall_held);
		json_out_i64(o, domain, "stall_seats_most", d.stall_most);
	}
	json_out_u64(o, domain, "rejoins", d.rejoins);
	if (d.rejoins)
		json_out_f64(o, domain, "rejoined_at_s", d.rejoin_ns > r->start_ns ? (double)(d.rejoin_ns - r->start_ns) / 1e9 : 0.0);
	json_t *policy_changes = json_out_arr(o, domain, "policy_changes");
	unsigned n = atomic_load(&r->npolicy_changes);
	for (unsigned i = 0; i < n; i++) {
		json_t *item = json_out_obj(o, policy_changes, NULL);
		json_out_str(o, item, "policy", r->policy_change[i].policy);
		json_out_f64(o, item, "at_s", r->policy_change[i].at_ns > r->start_ns
					    ? (double)(r->policy_change[i].at_ns - r->start_ns) / 1e9 : 0.0);
	}
	json_t *weight_changes = json_out_arr(o, domain, "weight_changes");
	unsigned nw = atomic_load(&r->nweight_changes);
	for (unsigned i = 0; i < nw; i++) {
		json_t *item = json_out_obj(o, weight_changes, NULL);
		json_out_u64(o, item, "weight", r->weight_change[i].weight);
		json_out_f64(o, item, "at_s", r->weight_change[i].at_ns > r->start_ns
					    ? (double)(r->weight_change[i].at_ns - r->start_ns) / 1e9 : 0.0);
	}
}

static void json_exits(struct json_out *o, json_t *parent, const struct vcpu_exit_counts *e)
{
	json_t *exits = json_out_obj(o, parent, "exits");
	json_out_u64(o, exits, "total", e->total);
	json_out_u64(o, exits, "hypercall", e->hypercall);
	json_out_u64(o, exits, "io", e->io);
	json_out_u64(o, exits, "mmio", e->mmio);
	json_out_u64(o, exits, "hlt", e->hlt);
	json_out_u64(o, exits, "signal", e->intr);
	json_out_u64(o, exits, "other", e->other);
}

static void json_sched(struct json_out *o, json_t *parent, const struct sched_vcpu_stats *st)
{
	json_t *sched = json_out_obj(o, parent, "sched");
	json_out_u64(o, sched, "ns_running", st->ns_running);
	json_out_u64(o, sched, "ns_runnable", st->ns_runnable);
	json_out_u64(o, sched, "ns_waiting", st->ns_waiting);
	json_out_u64(o, sched, "ns_idle", st->ns_idle);
	json_out_u64(o, sched, "preemptions", st->preemptions);
	json_out_u64(o, sched, "spin_events", st->spin_events);
	json_out_u64(o, sched, "yields_given", st->yields_given);
	json_out_u64(o, sched, "yields_received", st->yields_received);
	json_out_u64(o, sched, "waits", st->waits);
	json_out_u64(o, sched, "kicks_sent", st->kicks_sent);
	json_out_u64(o, sched, "kicks_received", st->kicks_received);
	json_out_u64(o, sched, "deferrals", st->deferrals);
	json_out_u64(o, sched, "deferrals_hard", st->deferrals_hard);
	json_out_u64(o, sched, "spins_queued_kept", st->spins_queued_kept);
	json_out_u64(o, sched, "guest_slice_yields", st->guest_slice_yields);
	json_out_u64(o, sched, "guest_slice_declined", st->guest_slice_declined);
	json_out_u64(o, sched, "wake_cut_slices", st->wake_cut_slices);
	json_out_u64(o, sched, "floor_spin_ends", st->floor_spin_ends);
	json_out_u64(o, sched, "lock_drains", st->lock_drains);
	json_out_u64(o, sched, "lease_ends", st->lease_ends);
	json_out_u64(o, sched, "kernel_halts", st->kernel_halts);
	json_out_u64(o, sched, "unslotted_wakes", st->unslotted_wakes);
	json_out_u64(o, sched, "sticky_grants", st->sticky_grants);
	json_out_u64(o, sched, "slot_moves", st->slot_moves);
	json_t *kick_latency_ns = json_out_obj(o, sched, "kick_latency_ns");
	json_out_u64(o, kick_latency_ns, "count", st->kick_latency.count);
	json_out_u64(o, kick_latency_ns, "p50", sched_hist_percentile(&st->kick_latency, 50));
	json_out_u64(o, kick_latency_ns, "p99", sched_hist_percentile(&st->kick_latency, 99));
	json_out_u64(o, kick_latency_ns, "max", st->kick_latency.max);
}

static void json_regs(struct json_out *o, json_t *parent, const struct vcpu *v)
{
	json_t *regs = json_out_obj(o, parent, "regs");
	json_out_u64(o, regs, "rip", v->regs.rip);
	json_out_u64(o, regs, "rsp", v->regs.rsp);
	json_out_u64(o, regs, "rflags", v->regs.rflags);
	json_out_u64(o, regs, "rax", v->regs.rax);
	json_out_u64(o, regs, "rdi", v->regs.rdi);
	json_out_u64(o, regs, "rsi", v->regs.rsi);
	json_out_u64(o, regs, "cr0", v->sregs.cr0);
	json_out_u64(o, regs, "cr2", v->sregs.cr2);
	json_out_u64(o, regs, "cr3", v->sregs.cr3);
	json_out_u64(o, regs, "cr4", v->sregs.cr4);
	json_out_u64(o, regs, "cpl", v->sregs.cs.selector & 3);
}

/* A Linux guest's vCPU inside KVM: its PV kicks, halts and hypercalls (null: not counted here). */
static void json_linux_pv(struct json_out *o, json_t *item, const struct run *r, unsigned g)
{
	if (!r->pv)
		return;
	const struct linux_pv_vcpu *p = &r->pv[g];
	json_t *k = json_out_obj(o, item, "kvm");
	if (p->kicks_counted)
		json_out_u64(o, k, "pv_kicks", p->kicks);
	else
		json_out_null(o, k, "pv_kicks");
	static const char *const names[] = { "halt_exits", "halt_wakeups", "hypercalls" };
	const uint64_t vals[] = { p->halt_exits, p->halt_wakeups, p->hypercalls };
	for (unsigned i = 0; i < 3; i++) {
		if (p->stats_read)
			json_out_u64(o, k, names[i], vals[i]);
		else
			json_out_null(o, k, names[i]);
	}
}

static void json_vcpu(struct json_out *o, json_t *parent, const struct run *r, const struct run_summary *s, unsigned g)
{
	unsigned i;
	const struct vm *vm = run_vm_of(r, g, &i);
	const struct vcpu *v = &vm->vcpus[i];
	const struct hc_vcpu_reports *rep = &vm->hc.reports[i];
	uint64_t ops;
	json_t *item = json_out_obj(o, parent, NULL);
	json_out_u64(o, item, "id", i);
	json_out_u64(o, item, "vm", vm->id);
	json_out_str(o, item, "state", vcpu_end_name(v->end));
	json_out_u64(o, item, "exit_status", v->exit_status);
	if (hc_report_get(&vm->hc, i, "ops", &ops))
		json_out_u64(o, item, "ops", ops);
	else
		json_out_null(o, item, "ops");
	json_t *reports = json_out_obj(o, item, "reports");
	for (unsigned k = 0; k < rep->n; k++)
		json_out_u64(o, reports, rep->e[k].key, rep->e[k].value);
	json_exits(o, item, &v->exits);
	/* the shared page's count (every guest), and what went into KVM's record */
	json_out_u64(o, item, "steal_ns", __atomic_load_n(&vm_shared_page(vm, i)->steal_ns, __ATOMIC_RELAXED));
	json_out_u64(o, item, "kvm_steal_ns", v->steal_ns);
	json_t *emulated = json_out_obj(o, item, "emulated");
	json_out_u64(o, emulated, "int3", v->int3_emulated);
	json_out_u64(o, emulated, "fwait", v->fwait_emulated);
	json_linux_pv(o, item, r, g);
	json_sched(o, item, &s->st[g]);
	if (v->fault[0])
		json_out_str(o, item, "fault", v->fault);
	if (v->regs_valid)
		json_regs(o, item, v);
}

static void json_vm_summary(struct json_out *o, json_t *parent, const struct vm_summary *v)
{
	if (v->ops_vcpus) {
		json_out_f64(o, parent, "ops_per_s", v->ops_per_s);
		json_out_u64(o, parent, "ops_total", v->ops_total);
	} else {
		json_out_null(o, parent, "ops_per_s");
		json_out_null(o, parent, "ops_total");
	}
	json_out_u64(o, parent, "elapsed_ns", v->elapsed_ns);
	if (v->run_vcpus) {
		json_out_u64(o, parent, "run_ns_total", v->run_ns_total);
		json_out_f64(o, parent, "running_fraction", v->running_fraction);
	} else {
		json_out_null(o, parent, "run_ns_total");
		json_out_null(o, parent, "running_fraction");
	}
	if (v->have_counter) {
		json_out_u64(o, parent, "counter", v->counter);
		json_out_bool(o, parent, "mutual_exclusion_ok", v->mutual_exclusion_ok);
	} else {
		json_out_null(o, parent, "counter");
		json_out_null(o, parent, "mutual_exclusion_ok");
	}
}

int report_write_json(const char *path, const struct run *r, const struct run_summary *s)
{
	/* run_execute opened it before the seccomp filter; run_destroy closes it */
	if (r->json_out_err)
		return r->json_out_err;
	FILE *f = r->json_out ? r->json_out : fopen(path, "w");
	if (!f)
		return -errno;
	uint64_t errs = 0;
	for (unsigned k = 0; k < r->vms_created; k++)
		errs += atomic_load(&r->vms[k].hc.errors);
	struct json_out out, *o = &out;
	json_t *top = json_out_begin(o);
	json_out_str(o, top, "vmm_version", VMM_VERSION);
	json_out_u64(o, top, "abi_version", VMM_ABI_VERSION);
	json_out_str(o, top, "status", report_status_name(s->status));
	json_out_i64(o, top, "exit_code", s->status);
	json_out_u64(o, top, "guest_status", atomic_load(&r->ctl.guest_status));
	json_config(o, top, r);
	if (r->domain)
		json_domain(o, top, r);
	json_vm_summary(o, top, &s->all);
	json_out_u64(o, top, "wall_ns", r->end_ns - r->start_ns);
	/* CLOCK_MONOTONIC: several processes' windows compare on one axis */
	json_out_u64(o, top, "start_ns", r->start_ns);
	json_out_u64(o, top, "end_ns", r->end_ns);
	if (r->cfg->start_at_ns) {
		json_out_u64(o, top, "start_at_ns", r->cfg->start_at_ns);
		json_out_u64(o, top, "start_late_ns", r->start_late_ns);
		json_out_u64(o, top, "start_wait_ns", r->start_wait_ns);
	} else {
		json_out_null(o, top, "start_at_ns");
		json_out_null(o, top, "start_late_ns");
		json_out_null(o, top, "start_wait_ns");
	}
	json_out_u64(o, top, "hypercall_errors", errs);
	json_exits(o, top, &s->exits);
	json_sched(o, top, &s->st_all);
	json_t *loop = json_out_obj(o, top, "event_loop");
	json_out_u64(o, loop, "ticks", s->loop.ticks);
	json_out_u64(o, loop, "ticks_early", s->loop.ticks_early);
	json_out_u64(o, loop, "timer_sets", s->loop.timer_sets);
	json_out_u64(o, loop, "own_ticks", s->loop.own_ticks);
	json_out_u64(o, loop, "own_timer_sets", s->loop.own_timer_sets);
	/* read back from the thread after --loop-cpu was applied (loop_pin.h) */
	json_out_i64(o, loop, "cpu", r->loop_pin.cpu);
	json_out_str(o, loop, "cpus", r->loop_pin.cpus);
	json_out_str(o, loop, "cpu_note", r->loop_pin.note);
	json_t *vms = json_out_arr(o, top, "vms");
	for (unsigned k = 0; k < r->vms_created; k++) {
		json_t *vm = json_out_obj(o, vms, NULL);
		json_out_u64(o, vm, "id", k);
		json_vm_summary(o, vm, &s->vm[k]);
	}
	json_t *vcpus = json_out_arr(o, top, "vcpus");
	for (unsigned g = 0; g < r->vms_created * r->cfg->ncpus; g++)
		json_vcpu(o, vcpus, r, s, g);
	errno = 0;
	int rc = json_out_write(o, f);
	/* a write that failed midway set errno (ENOSPC on a full disk): name that, not EIO */
	if (!rc && ferror(f))
		rc = errno ? -errno : -EIO;
	if ((f == r->json_out ? fflush(f) : fclose(f)) && !rc)
		rc = -errno;
	return rc;
}
