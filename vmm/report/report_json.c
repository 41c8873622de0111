/* The report as one JSON object (--json FILE); README.md documents every field. */
#include <errno.h>

#include "lib/json_writer.h"
#include "vmm/report/report.h"
#include "vmm/core/vm_linux.h"

/* A Linux guest: what it was booted with, and what CPUID offered it and why. */
static void json_domain(struct json *j, const struct run *r);

static void json_linux(struct json *j, const struct run *r)
{
	const struct vm_config *cfg = r->cfg;
	const struct vm_linux *lx = r->vms_created ? r->vms[0].linux_guest : NULL;
	if (!cfg->kernel_path)
		return;
	json_obj(j, "linux");
	json_str(j, "kernel", cfg->kernel_path);
	if (lx && lx->bz.kernel_version[0])
		json_str(j, "kernel_version", lx->bz.kernel_version);
	if (cfg->initrd_path)
		json_str(j, "initrd", cfg->initrd_path);
	json_str(j, "cmdline", cfg->cmdline);
	if (cfg->disk_path) {
		json_str(j, "disk", cfg->disk_path);
		json_bool(j, "disk_read_only", cfg->disk_read_only);
	}
	if (lx && lx->blk) {
		struct virtio_blk_stats d = virtio_blk_pci_stats(lx->blk);
		json_obj(j, "disk_stats");
		json_u64(j, "requests", d.requests);
		json_u64(j, "ok", d.ok);
		json_u64(j, "io_errors", d.ioerr);
		json_u64(j, "host_errors", d.backend_errors);
		json_u64(j, "submit_errors", d.submit_errors);
		json_u64(j, "unsupported", d.unsupp);
		json_u64(j, "malformed", d.bad_chains);
		json_u64(j, "resets_cancelling_io", d.reset_cancels);
		json_u64(j, "reset_errors", d.reset_errors);
		json_end_obj(j);
	}
	if (lx) {
		json_str(j, "cpuid_mask", lx->mask_note);
		json_i64(j, "vmcall_probe", lx->vmcall_ok);
		json_str(j, "vmcall_note", lx->vmcall_note);
		json_u64(j, "kvm_pv_features", lx->cpuid.kvm_features);
		json_str(j, "kvm_pv_note", lx->pv_note);
	}
	json_end_obj(j);
}

static void json_config(struct json *j, const struct run *r)
{
	const struct vm_config *cfg = r->cfg;
	json_obj(j, "config");
	json_u64(j, "cpus", cfg->ncpus);
	json_u64(j, "vms", r->nvms);
	json_u64(j, "mem_bytes", cfg->mem_bytes);
	json_str(j, "firmware", cfg->firmware_path ? cfg->firmware_path : "bundled");
	json_str(j, "workload", cfg->kernel_path ? "linux" : cfg->workload);
	json_str(j, "lock", cfg->kernel_path ? "none" : cfg->lock);
	json_u64(j, "cs_cycles", cfg->cs_cycles);
	json_u64(j, "work_cycles", cfg->work_cycles);
	json_u64(j, "spin_threshold", cfg->spin_threshold);
	json_u64(j, "duration_ms", cfg->duration_ms);
	json_u64(j, "timeout_ms", cfg->timeout_ms);
	json_u64(j, "tsc_hz", r->vms_created ? r->vms[0].tsc_hz : 0);
	json_bool(j, "pv_spinlock", cfg->pv_spinlock);
	json_bool(j, "pv_shootdown", cfg->pv_shootdown);
	json_u64(j, "pv_features", r->vms_created ? r->vms[0].hc.pv_features : 0);
	json_bool(j, "seccomp", !cfg->no_seccomp);
	json_obj(j, "sched");
	json_str(j, "mode", cfg->sched_mode == SCHED_MODE_HOST ? "host" : "vmm");
	json_u64(j, "pcpus", r->nslots);
	json_str(j, "yield", cfg->sched_mode == SCHED_MODE_HOST ? "none" : cfg->policy);
	json_arr(j, "spin_detect");
	if (cfg->spin_detect & SPIN_DETECT_PLE)
		json_str(j, NULL, "ple");
	if (cfg->spin_detect & SPIN_DETECT_HINT)
		json_str(j, NULL, "hint");
	if (cfg->spin_detect & SPIN_DETECT_YIELD)
		json_str(j, NULL, "yield");
	json_end_arr(j);
	if (r->ple_note[0])
		json_str(j, "ple_note", r->ple_note);
	if (r->ple_on)
		json_str(j, "ple_tracepoint", cfg->ple_tracepoint ? cfg->ple_tracepoint : "kvm:kvm_exit");
	json_u64(j, "ple_events", r->ple_events);
	json_u64(j, "slice_us", cfg->slice_us);
	json_u64(j, "ple_window_us", cfg->ple_window_us);
	json_bool(j, "safe_point", cfg->safe_point);
	json_u64(j, "defer_us", cfg->defer_us);
	json_u64(j, "halt_check_us", r->halt_check_us);
	if (r->halt_note[0])
		json_str(j, "halt_note", r->halt_note);
	json_end_obj(j);
	json_linux(j, r);
	json_end_obj(j);
}

static void json_domain(struct json *j, const struct run *r)
{
	struct dlink_report d;
	dlink_get_report(r->domain, &d);
	json_obj(j, "domain");
	json_str(j, "name", r->cfg->domain);
	json_i64(j, "member", r->dom.member);
	json_i64(j, "seats", r->dom.nseats);
	json_i64(j, "slots", r->dom.nslots);
	json_u64(j, "weight", r->cfg->weight);
	json_u64(j, "grants", d.grants);
	json_u64(j, "revokes", d.revokes);
	json_u64(j, "reclaims", d.reclaims);
	json_bool(j, "agent_lost", d.lost);
	if (d.lost) {
		json_f64(j, "agent_lost_at_s", d.lost_ns > r->start_ns ? (double)(d.lost_ns - r->start_ns) / 1e9 : 0.0);
		json_str(j, "agent_lost_why", d.lost_why);
	}
	json_u64(j, "rejoins", d.rejoins);
	if (d.rejoins)
		json_f64(j, "rejoined_at_s", d.rejoin_ns > r->start_ns ? (double)(d.rejoin_ns - r->start_ns) / 1e9 : 0.0);
	json_arr(j, "policy_changes");
	unsigned n = atomic_load(&r->npolicy_changes);
	for (unsigned i = 0; i < n; i++) {
		json_obj(j, NULL);
		json_str(j, "policy", r->policy_change[i].policy);
		json_f64(j, "at_s", r->policy_change[i].at_ns > r->start_ns
					    ? (double)(r->policy_change[i].at_ns - r->start_ns) / 1e9 : 0.0);
		json_end_obj(j);
	}
	json_end_arr(j);
	json_arr(j, "weight_changes");
	unsigned nw = atomic_load(&r->nweight_changes);
	for (unsigned i = 0; i < nw; i++) {
		json_obj(j, NULL);
		json_u64(j, "weight", r->weight_change[i].weight);
		json_f64(j, "at_s", r->weight_change[i].at_ns > r->start_ns
					    ? (double)(r->weight_change[i].at_ns - r->start_ns) / 1e9 : 0.0);
		json_end_obj(j);
	}
	json_end_arr(j);
	json_end_obj(j);
}

static void json_exits(struct json *j, const struct vcpu_exit_counts *e)
{
	json_obj(j, "exits");
	json_u64(j, "total", e->total);
	json_u64(j, "hypercall", e->hypercall);
	json_u64(j, "io", e->io);
	json_u64(j, "mmio", e->mmio);
	json_u64(j, "hlt", e->hlt);
	json_u64(j, "signal", e->intr);
	json_u64(j, "other", e->other);
	json_end_obj(j);
}

static void json_sched(struct json *j, const struct sched_vcpu_stats *st)
{
	json_obj(j, "sched");
	json_u64(j, "ns_running", st->ns_running);
	json_u64(j, "ns_runnable", st->ns_runnable);
	json_u64(j, "ns_waiting", st->ns_waiting);
	json_u64(j, "ns_idle", st->ns_idle);
	json_u64(j, "preemptions", st->preemptions);
	json_u64(j, "spin_events", st->spin_events);
	json_u64(j, "yields_given", st->yields_given);
	json_u64(j, "yields_received", st->yields_received);
	json_u64(j, "waits", st->waits);
	json_u64(j, "kicks_sent", st->kicks_sent);
	json_u64(j, "kicks_received", st->kicks_received);
	json_u64(j, "deferrals", st->deferrals);
	json_u64(j, "deferrals_hard", st->deferrals_hard);
	json_u64(j, "kernel_halts", st->kernel_halts);
	json_u64(j, "unslotted_wakes", st->unslotted_wakes);
	json_obj(j, "kick_latency_ns");
	json_u64(j, "count", st->kick_latency.count);
	json_u64(j, "p50", sched_hist_percentile(&st->kick_latency, 50));
	json_u64(j, "p99", sched_hist_percentile(&st->kick_latency, 99));
	json_u64(j, "max", st->kick_latency.max);
	json_end_obj(j);
	json_end_obj(j);
}

static void json_regs(struct json *j, const struct vcpu *v)
{
	json_obj(j, "regs");
	json_u64(j, "rip", v->regs.rip);
	json_u64(j, "rsp", v->regs.rsp);
	json_u64(j, "rflags", v->regs.rflags);
	json_u64(j, "rax", v->regs.rax);
	json_u64(j, "rdi", v->regs.rdi);
	json_u64(j, "rsi", v->regs.rsi);
	json_u64(j, "cr0", v->sregs.cr0);
	json_u64(j, "cr2", v->sregs.cr2);
	json_u64(j, "cr3", v->sregs.cr3);
	json_u64(j, "cr4", v->sregs.cr4);
	json_u64(j, "cpl", v->sregs.cs.selector & 3);
	json_end_obj(j);
}

static void json_vcpu(struct json *j, const struct run *r, const struct run_summary *s, unsigned g)
{
	unsigned i;
	const struct vm *vm = run_vm_of(r, g, &i);
	const struct vcpu *v = &vm->vcpus[i];
	const struct hc_vcpu_reports *rep = &vm->hc.reports[i];
	uint64_t ops;
	json_obj(j, NULL);
	json_u64(j, "id", i);
	json_u64(j, "vm", vm->id);
	json_str(j, "state", vcpu_end_name(v->end));
	json_u64(j, "exit_status", v->exit_status);
	if (hc_report_get(&vm->hc, i, "ops", &ops))
		json_u64(j, "ops", ops);
	else
		json_null(j, "ops");
	json_obj(j, "reports");
	for (unsigned k = 0; k < rep->n; k++)
		json_u64(j, rep->e[k].key, rep->e[k].value);
	json_end_obj(j);
	json_exits(j, &v->exits);
	/* the shared page's count (every guest), and what went into KVM's record */
	json_u64(j, "steal_ns", __atomic_load_n(&vm_shared_page(vm, i)->steal_ns, __ATOMIC_RELAXED));
	json_u64(j, "kvm_steal_ns", v->steal_ns);
	json_obj(j, "emulated");
	json_u64(j, "int3", v->int3_emulated);
	json_u64(j, "fwait", v->fwait_emulated);
	json_end_obj(j);
	json_sched(j, &s->st[g]);
	if (v->fault[0])
		json_str(j, "fault", v->fault);
	if (v->regs_valid)
		json_regs(j, v);
	json_end_obj(j);
}

static void json_vm_summary(struct json *j, const struct vm_summary *v)
{
	if (v->ops_vcpus) {
		json_f64(j, "ops_per_s", v->ops_per_s);
		json_u64(j, "ops_total", v->ops_total);
	} else {
		json_null(j, "ops_per_s");
		json_null(j, "ops_total");
	}
	json_u64(j, "elapsed_ns", v->elapsed_ns);
	if (v->have_counter) {
		json_u64(j, "counter", v->counter);
		json_bool(j, "mutual_exclusion_ok", v->mutual_exclusion_ok);
	} else {
		json_null(j, "counter");
		json_null(j, "mutual_exclusion_ok");
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
	struct json j;
	uint64_t errs = 0;
	errno = 0;
	for (unsigned k = 0; k < r->vms_created; k++)
		errs += atomic_load(&r->vms[k].hc.errors);
	json_begin(&j, f);
	json_obj(&j, NULL);
	json_str(&j, "vmm_version", VMM_VERSION);
	json_u64(&j, "abi_version", VMM_ABI_VERSION);
	json_str(&j, "status", report_status_name(s->status));
	json_i64(&j, "exit_code", s->status);
	json_u64(&j, "guest_status", atomic_load(&r->ctl.guest_status));
	json_config(&j, r);
	if (r->domain)
		json_domain(&j, r);
	json_vm_summary(&j, &s->all);
	json_u64(&j, "wall_ns", r->end_ns - r->start_ns);
	/* CLOCK_MONOTONIC: several processes' windows compare on one axis */
	json_u64(&j, "start_ns", r->start_ns);
	json_u64(&j, "end_ns", r->end_ns);
	if (r->cfg->start_at_ns) {
		json_u64(&j, "start_at_ns", r->cfg->start_at_ns);
		json_u64(&j, "start_late_ns", r->start_late_ns);
		json_u64(&j, "start_wait_ns", r->start_wait_ns);
	} else {
		json_null(&j, "start_at_ns");
		json_null(&j, "start_late_ns");
		json_null(&j, "start_wait_ns");
	}
	json_u64(&j, "hypercall_errors", errs);
	json_exits(&j, &s->exits);
	json_sched(&j, &s->st_all);
	json_arr(&j, "vms");
	for (unsigned k = 0; k < r->vms_created; k++) {
		json_obj(&j, NULL);
		json_u64(&j, "id", k);
		json_vm_summary(&j, &s->vm[k]);
		json_end_obj(&j);
	}
	json_end_arr(&j);
	json_arr(&j, "vcpus");
	for (unsigned g = 0; g < r->vms_created * r->cfg->ncpus; g++)
		json_vcpu(&j, r, s, g);
	json_end_arr(&j);
	json_end_obj(&j);
	json_finish(&j);
	/* a write that failed midway set errno (ENOSPC on a full disk): name that, not EIO */
	int rc = ferror(f) ? (errno ? -errno : -EIO) : 0;
	if ((f == r->json_out ? fflush(f) : fclose(f)) && !rc)
		rc = -errno;
	return rc;
}
