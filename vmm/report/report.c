#include "vmm/report/report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "devices/blk_backend_uring.h"
#include "vcpu/x86/regs_dump.h"
#include "vmm/errors.h"
#include "vmm/core/vm_linux.h"

const char *report_status_name(int status)
{
	switch (status) {
	case VMM_EXIT_OK: return "ok";
	case VMM_EXIT_GUEST_FAIL: return "guest_failed";
	case VMM_EXIT_GUEST_FAULT: return "guest_fault";
	case VMM_EXIT_TIMEOUT: return "timeout";
	case VMM_EXIT_DEADLOCK: return "guest_deadlock";
	case VMM_EXIT_HOST_ERROR: return "host_error";
	default: return status > 128 ? "signal" : "error";
	}
}

static void add_exits(struct vcpu_exit_counts *t, const struct vcpu_exit_counts *e)
{
	t->total += e->total;
	t->io += e->io;
	t->mmio += e->mmio;
	t->hypercall += e->hypercall;
	t->hlt += e->hlt;
	t->intr += e->intr;
	t->other += e->other;
}

static void add_stats(struct sched_vcpu_stats *t, const struct sched_vcpu_stats *x)
{
	t->ns_running += x->ns_running;
	t->ns_runnable += x->ns_runnable;
	t->ns_waiting += x->ns_waiting;
	t->ns_idle += x->ns_idle;
	t->preemptions += x->preemptions;
	t->spin_events += x->spin_events;
	t->yields_given += x->yields_given;
	t->yields_received += x->yields_received;
	t->waits += x->waits;
	t->kicks_sent += x->kicks_sent;
	t->kicks_received += x->kicks_received;
	t->deferrals += x->deferrals;
	t->deferrals_hard += x->deferrals_hard;
	t->spins_queued_kept += x->spins_queued_kept;
	t->guest_slice_yields += x->guest_slice_yields;
	t->guest_slice_declined += x->guest_slice_declined;
	t->wake_cut_slices += x->wake_cut_slices;
	t->floor_spin_ends += x->floor_spin_ends;
	t->lock_drains += x->lock_drains;
	t->lease_ends += x->lease_ends;
	t->kernel_halts += x->kernel_halts;
	t->unslotted_wakes += x->unslotted_wakes;
	t->sticky_grants += x->sticky_grants;
	t->slot_moves += x->slot_moves;
	sched_hist_merge(&t->kick_latency, &x->kick_latency);
}

/* Of the time the reporting vCPUs could have run in the longest window:
 * with more vCPUs than slots it is at most slots / vCPUs. */
static void running_fraction(struct vm_summary *s)
{
	if (s->run_vcpus && s->elapsed_ns)
		s->running_fraction = (double)s->run_ns_total / ((double)s->run_vcpus * (double)s->elapsed_ns);
}

static void summarize_vm(const struct vm *vm, struct vm_summary *s)
{
	memset(s, 0, sizeof(*s));
	for (unsigned i = 0; i < vm->cfg->ncpus; i++) {
		uint64_t v;
		if (hc_report_get(&vm->hc, i, "ops", &v)) {
			s->ops_total += v;
			s->ops_vcpus++;
		}
		if (hc_report_get(&vm->hc, i, "elapsed_ns", &v) && v > s->elapsed_ns)
			s->elapsed_ns = v;
		if (hc_report_get(&vm->hc, i, "counter", &v)) {
			s->have_counter = true;
			s->counter = v;
		}
		if (hc_report_get(&vm->hc, i, "run_ns", &v)) {
			s->run_ns_total += v;
			s->run_vcpus++;
		}
	}
	if (s->elapsed_ns)
		s->ops_per_s = (double)s->ops_total * 1e9 / (double)s->elapsed_ns;
	running_fraction(s);
	s->mutual_exclusion_ok = s->have_counter && s->counter == s->ops_total;
}

int report_summarize(const struct run *r, int status, struct run_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->status = status;
	s->vm = calloc(r->nvms, sizeof(*s->vm));
	s->st = calloc(r->nvcpus, sizeof(*s->st));
	if (!s->vm || !s->st)
		return -ENOMEM;
	s->all.have_counter = true;
	s->all.mutual_exclusion_ok = true;
	for (unsigned k = 0; k < r->vms_created; k++) {
		const struct vm *vm = &r->vms[k];
		struct vm_summary *v = &s->vm[k];
		summarize_vm(vm, v);
		/* Several VMs run side by side: their throughputs add up. */
		s->all.ops_total += v->ops_total;
		s->all.ops_vcpus += v->ops_vcpus;
		s->all.ops_per_s += v->ops_per_s;
		if (v->elapsed_ns > s->all.elapsed_ns)
			s->all.elapsed_ns = v->elapsed_ns;
		s->all.run_ns_total += v->run_ns_total;
		s->all.run_vcpus += v->run_vcpus;
		s->all.have_counter &= v->have_counter;
		s->all.mutual_exclusion_ok &= v->mutual_exclusion_ok;
		s->all.counter += v->counter;
		for (unsigned i = 0; i < vm->nvcpus_created; i++)
			add_exits(&s->exits, &vm->vcpus[i].exits);
	}
	if (!s->all.have_counter)
		s->all.mutual_exclusion_ok = false;
	running_fraction(&s->all);
	for (unsigned g = 0; r->sched && g < r->nvcpus; g++) {
		sched_stats(r->sched, (int)g, &s->st[g]);
		add_stats(&s->st_all, &s->st[g]);
	}
	if (r->sched)
		sched_get_loop_stats(r->sched, &s->loop);
	return 0;
}

void report_summary_free(struct run_summary *s)
{
	free(s->vm);
	free(s->st);
	s->vm = NULL;
	s->st = NULL;
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static double since_start(const struct run *r, uint64_t ns)
{
	return ns > r->start_ns ? (double)(ns - r->start_ns) / 1e9 : 0.0;
}

static void print_domain(FILE *out, const struct run *r)
{
	struct dlink_report d;
	dlink_get_report(r->domain, &d);
	fprintf(out, "domain     %s: member %d, %d seats of its %d slots, weight %u; %llu grants, %llu revokes, %llu reclaims\n",
		r->cfg->domain, r->dom.member, r->dom.nseats, r->dom.nslots, r->cfg->weight,
		(unsigned long long)d.grants, (unsigned long long)d.revokes, (unsigned long long)d.reclaims);
	unsigned n = atomic_load(&r->npolicy_changes);
	for (unsigned i = 0; i < n; i++)
		fprintf(out, "yield      %s from %.3f s (changed live)\n", r->policy_change[i].policy,
			since_start(r, r->policy_change[i].at_ns));
	n = atomic_load(&r->nweight_changes);
	for (unsigned i = 0; i < n; i++)
		fprintf(out, "weight     %u from %.3f s (changed live)\n", r->weight_change[i].weight,
			since_start(r, r->weight_change[i].at_ns));
	if (d.lost) {
		char cpus[256] = "";
		size_t o = 0;
		for (int s = 0; s < r->dom.nslots && o < sizeof(cpus) - 8; s++)
			o += (size_t)snprintf(cpus + o, sizeof(cpus) - o, "%s%d", s ? "," : "", r->dom.slot_cpu[s]);
		fprintf(out, "domain     agent lost at %.3f s (%s): kept the %d seat%s it held, host scheduler on CPUs %s since",
			since_start(r, d.lost_ns), d.lost_why, d.lost_held, d.lost_held == 1 ? "" : "s", cpus);
		if (d.alone_ns)
			fprintf(out, "; every seat from %.3f s (no new agent)", since_start(r, d.alone_ns));
		fprintf(out, "\n");
	}
	if (d.stalls) {
		fprintf(out, "domain     agent stalled at %.3f s (%llu time%s): kept the %d seat%s it held (at most %d online) ",
			since_start(r, d.stall_ns), (unsigned long long)d.stalls, d.stalls == 1 ? "" : "s", d.stall_held,
			d.stall_held == 1 ? "" : "s", d.stall_most);
		if (d.stall_end_ns)
			fprintf(out, "until %.3f s\n", since_start(r, d.stall_end_ns));
		else
			fprintf(out, "to the end\n");
	}
	if (d.rejoins)
		fprintf(out, "domain     taken back by a new agent at %.3f s (%llu time%s)\n", since_start(r, d.rejoin_ns),
			(unsigned long long)d.rejoins, d.rejoins == 1 ? "" : "s");
}

/* What the guest's PV spinlocks did inside KVM (vmm/core/linux_pv_counts.h). */
static void print_linux_pv(FILE *out, const struct run *r)
{
	uint64_t kicks = 0, halts = 0, wakeups = 0, hcalls = 0;
	bool counted = r->pv != NULL, stats = r->pv != NULL;
	for (unsigned g = 0; r->pv && g < r->nvcpus; g++) {
		counted = counted && r->pv[g].kicks_counted;
		stats = stats && r->pv[g].stats_read;
		kicks += r->pv[g].kicks;
		halts += r->pv[g].halt_exits;
		wakeups += r->pv[g].halt_wakeups;
		hcalls += r->pv[g].hypercalls;
	}
	fprintf(out, "pv locks   ");
	if (counted)
		fprintf(out, "%llu kicks sent (KVM_HC_KICK_CPU%s%s)", (unsigned long long)kicks,
			r->pv_count_note[0] ? "; " : "", r->pv_count_note);
	else
		fprintf(out, "%s", r->pv_count_note[0] ? r->pv_count_note : "kicks not counted");
	if (stats)
		fprintf(out, "; in KVM: %llu halts, %llu wake-ups from halt, %llu hypercalls", (unsigned long long)halts,
			(unsigned long long)wakeups, (unsigned long long)hcalls);
	fprintf(out, "\n");
}

/* A Linux guest's lines: its halts, CPUID and PV offer, its disk. */
static void print_linux_guest(FILE *out, const struct run *r, const struct run_summary *s, const struct vm_linux *lx)
{
	const struct vm_config *cfg = r->cfg;
	if (cfg->kernel_path && cfg->sched_mode == SCHED_MODE_VMM) {
		if (r->halt_check_us)
			fprintf(out, "halts      checked every %uus: %llu parked in the host kernel, %llu woke with no slot free\n",
				r->halt_check_us, (unsigned long long)s->st_all.kernel_halts,
				(unsigned long long)s->st_all.unslotted_wakes);
		else
			fprintf(out, "halts      not checked: %s\n",
				r->halt_note[0] ? r->halt_note : "--halt-check-us 0, a halted vCPU keeps its slot");
	}
	if (lx) {
		fprintf(out, "cpuid      %s\n", lx->mask_note);
		fprintf(out, "kvm pv     %s; %s\n", lx->pv_note, lx->vmcall_note);
		print_linux_pv(out, r);
	}
	if (lx && lx->blk) {
		struct virtio_blk_stats d = virtio_blk_pci_stats(lx->blk);
		fprintf(out, "disk       %llu requests, %llu ok, %llu io errors (%llu failed by the host, %llu refused submissions), %llu unsupported, %llu malformed\n",
			(unsigned long long)d.requests, (unsigned long long)d.ok, (unsigned long long)d.ioerr,
			(unsigned long long)d.backend_errors, (unsigned long long)d.submit_errors,
			(unsigned long long)d.unsupp, (unsigned long long)d.bad_chains);
		if (d.reset_errors)
			fprintf(out, "disk       %llu resets left I/O in flight (%llu past the %u ms bound, %llu with no cancel submitted): "
				"the status read NEEDS_RESET, not 0, until it was back; the run ended as a host error\n",
				(unsigned long long)d.reset_errors, (unsigned long long)d.reset_timeouts, BLK_DRAIN_WAIT_MS,
				(unsigned long long)d.reset_cancel_unsent);
	}
}

/* How the run ended and what it did: status, ops, the counter, emulation
 * gaps, kick latency. */
static void print_outcome(FILE *out, const struct run *r, const struct run_summary *s)
{
	const struct vm_config *cfg = r->cfg;
	fprintf(out, "status     %s (exit %d, guest status %u), wall %.3f s\n", report_status_name(s->status),
		s->status, atomic_load(&r->ctl.guest_status), (double)(r->end_ns - r->start_ns) / 1e9);
	if (s->all.ops_vcpus) {
		fprintf(out, "ops/s      %.0f  (%llu ops in %.3f s)\n", s->all.ops_per_s,
			(unsigned long long)s->all.ops_total, (double)s->all.elapsed_ns / 1e9);
		if (s->all.run_vcpus)
			fprintf(out, "running    %.1f%% of %u vCPUs x %.3f s (%.3f s run in all; the guest's own TSC)\n",
				100.0 * s->all.running_fraction, s->all.run_vcpus,
				(double)s->all.elapsed_ns / 1e9, (double)s->all.run_ns_total / 1e9);
		for (unsigned k = 0; k < r->nvms; k++) {
			char who[16] = "";
			if (r->nvms > 1)
				snprintf(who, sizeof(who), "vm%u ", k);
			if (s->vm[k].have_counter)
				fprintf(out, "counter    %s%llu: mutual exclusion %s\n", who,
					(unsigned long long)s->vm[k].counter,
					s->vm[k].mutual_exclusion_ok ? "holds" : "VIOLATED");
		}
	}
	uint64_t int3 = 0, fwait = 0;
	for (unsigned k = 0; k < r->vms_created; k++)
		for (unsigned i = 0; i < cfg->ncpus; i++) {
			int3 += r->vms[k].vcpus[i].int3_emulated;
			fwait += r->vms[k].vcpus[i].fwait_emulated;
		}
	if (int3 || fwait)
		fprintf(out, "emulated   %llu INT3, %llu FWAIT the host's KVM could not (vcpu/x86/emulation_gaps.c)\n",
			(unsigned long long)int3, (unsigned long long)fwait);
	const struct sched_vcpu_stats *a = &s->st_all;
	if (a->kick_latency.count)
		fprintf(out, "kick->run  median %.1f us, p99 %.1f us over %llu kicks of sleepers\n",
			(double)sched_hist_percentile(&a->kick_latency, 50) / 1e3,
			(double)sched_hist_percentile(&a->kick_latency, 99) / 1e3,
			(unsigned long long)a->kick_latency.count);
}

static void print_header(FILE *out, const struct run *r, const struct run_summary *s)
{
	const struct vm_config *cfg = r->cfg;
	const char *pl = cfg->ncpus == 1 ? "" : "s";
	const struct vm_linux *lx = r->vms_created ? r->vms[0].linux_guest : NULL;
	if (cfg->kernel_path)
		fprintf(out, "\n== vmm %s: linux %s, %u vCPU%s", VMM_VERSION,
			lx && lx->bz.kernel_version[0] ? lx->bz.kernel_version : cfg->kernel_path, cfg->ncpus, pl);
	else if (cfg->firmware_path)
		fprintf(out, "\n== vmm %s: guest %s, %u vCPU%s", VMM_VERSION, cfg->firmware_path, cfg->ncpus, pl);
	else
		fprintf(out, "\n== vmm %s: %s, lock %s, %u vCPU%s", VMM_VERSION, cfg->workload, cfg->lock,
			cfg->ncpus, pl);
	if (r->nvms > 1)
		fprintf(out, " x %u VMs", r->nvms);
	fprintf(out, ", %lluM ==\n", (unsigned long long)(cfg->mem_bytes >> 20));
	if (cfg->sched_mode == SCHED_MODE_HOST)
		fprintf(out, "sched      host (threads left to the host kernel on %u CPUs)\n", r->nslots);
	else
		fprintf(out, "sched      vmm, %u slots, yield %s, spin-detect%s%s%s%s, slice %uus, ple window %uus, safe points %s (defer %uus%s)\n",
			r->nslots, cfg->policy, cfg->spin_detect ? "" : " none",
			(cfg->spin_detect & SPIN_DETECT_PLE) ? " ple" : "",
			(cfg->spin_detect & SPIN_DETECT_HINT) ? " hint" : "",
			(cfg->spin_detect & SPIN_DETECT_YIELD) ? " yield" : "", cfg->slice_us, cfg->ple_window_us,
			cfg->safe_point ? "on" : "off", cfg->defer_us,
			cfg->safe_point && cfg->guest_slice ? ", guest-timed slices" : "");
	if (r->domain)
		print_domain(out, r);
	print_linux_guest(out, r, s, lx);
	if (r->ple_note[0])
		fprintf(out, "note       --spin-detect ple: %s\n", r->ple_note);
	/* --loop-cpu: where the event loop thread may run, read back (loop_pin.h) */
	if (r->loop_pin.cpu >= 0)
		fprintf(out, "loop       on CPU %d (%s)\n", r->loop_pin.cpu, r->loop_pin.note);
	else if (r->loop_pin.cpus[0])
		fprintf(out, "loop       on CPUs %s (%s)\n", r->loop_pin.cpus, r->loop_pin.note);
	else
		fprintf(out, "loop       %s\n", r->loop_pin.note);
	fprintf(out, "seccomp    %s\n", cfg->no_seccomp ? "off (--no-seccomp)" : "on (vcpu, loop filters)");
	/* --start-at: a start more than 1 ms late spoils a shared window; say so */
	if (cfg->start_at_ns && r->start_late_ns > 1000000)
		fprintf(out, "start      %.3f ms after --start-at (the VM was not ready in time)\n",
			(double)r->start_late_ns / 1e6);
	print_outcome(out, r, s);
}

void report_print(FILE *out, const struct run *r, const struct run_summary *s)
{
	print_header(out, r, s);
	fprintf(out, "\n%-7s %-8s %4s %11s %7s %7s %7s %6s %6s %6s %6s %6s %6s %6s\n", "vcpu", "state", "exit",
		"ops", "run_ms", "wait_q", "pv_wait", "preem", "spins", "y_give", "y_recv", "waits", "kicks", "exits");
	for (unsigned g = 0; g < r->nvcpus; g++) {
		unsigned i;
		const struct vm *vm = run_vm_of(r, g, &i);
		if (vm - r->vms >= (long)r->vms_created)
			break;
		const struct vcpu *v = &vm->vcpus[i];
		const struct sched_vcpu_stats *st = &s->st[g];
		uint64_t ops = 0;
		char name[16], opsbuf[24];
		if (r->nvms > 1)
			snprintf(name, sizeof(name), "%u/%u", vm->id, i);
		else
			snprintf(name, sizeof(name), "%u", i);
		bool has_ops = hc_report_get(&vm->hc, i, "ops", &ops);
		snprintf(opsbuf, sizeof(opsbuf), has_ops ? "%llu" : "-", (unsigned long long)ops);
		fprintf(out, "%-7s %-8s %4u %11s %7.1f %7.1f %7.1f %6llu %6llu %6llu %6llu %6llu %6llu %6llu\n", name,
			vcpu_end_name(v->end), v->exit_status, opsbuf, ms(st->ns_running), ms(st->ns_runnable),
			ms(st->ns_waiting), (unsigned long long)st->preemptions,
			(unsigned long long)st->spin_events, (unsigned long long)st->yields_given,
			(unsigned long long)st->yields_received, (unsigned long long)st->waits,
			(unsigned long long)st->kicks_sent, (unsigned long long)v->exits.total);
	}
	const struct sched_vcpu_stats *a = &s->st_all;
	fprintf(out, "%-7s %-8s %4s %11llu %7.1f %7.1f %7.1f %6llu %6llu %6llu %6llu %6llu %6llu %6llu\n", "all", "", "",
		(unsigned long long)s->all.ops_total, ms(a->ns_running), ms(a->ns_runnable), ms(a->ns_waiting),
		(unsigned long long)a->preemptions, (unsigned long long)a->spin_events,
		(unsigned long long)a->yields_given, (unsigned long long)a->yields_received,
		(unsigned long long)a->waits, (unsigned long long)a->kicks_sent,
		(unsigned long long)s->exits.total);
	fprintf(out, "exits      %llu hypercall, %llu io, %llu mmio, %llu hlt, %llu signal, %llu other\n",
		(unsigned long long)s->exits.hypercall, (unsigned long long)s->exits.io,
		(unsigned long long)s->exits.mmio, (unsigned long long)s->exits.hlt,
		(unsigned long long)s->exits.intr, (unsigned long long)s->exits.other);
	if (r->cfg->sched_mode == SCHED_MODE_VMM && r->cfg->safe_point)
		fprintf(out, "slices     %llu deferred (%llu hit the hard deadline), %llu ended by the guest (%llu declined), %llu spins kept queued, %llu cut for a wake-up\n",
			(unsigned long long)a->deferrals, (unsigned long long)a->deferrals_hard,
			(unsigned long long)a->guest_slice_yields, (unsigned long long)a->guest_slice_declined,
			(unsigned long long)a->spins_queued_kept, (unsigned long long)a->wake_cut_slices);
	uint64_t errs = 0;
	for (unsigned k = 0; k < r->vms_created; k++)
		errs += atomic_load(&r->vms[k].hc.errors);
	if (errs)
		fprintf(out, "hypercall errors: %llu (bad calls answered with an error code)\n",
			(unsigned long long)errs);
}

void report_print_fault(FILE *out, const struct run *r, const struct run_summary *s)
{
	if (s->status != VMM_EXIT_GUEST_FAULT && s->status != VMM_EXIT_TIMEOUT && s->status != VMM_EXIT_DEADLOCK)
		return;
	if (s->status == VMM_EXIT_TIMEOUT)
		fprintf(out, "vmm: guest timed out after %llu ms; vCPU states:\n",
			(unsigned long long)r->cfg->timeout_ms);
	if (s->status == VMM_EXIT_DEADLOCK)
		fprintf(out, "vmm: guest deadlock: every vCPU waits for a kick that nothing can send\n");
	for (unsigned k = 0; k < r->vms_created; k++)
		for (unsigned i = 0; i < r->vms[k].nvcpus_created; i++) {
			const struct vcpu *v = &r->vms[k].vcpus[i];
			bool culprit = v->end == VCPU_FAULTED ||
				       (s->status != VMM_EXIT_GUEST_FAULT && v->end == VCPU_STOPPED);
			if (!culprit)
				continue;
			char who[16] = "";
			if (r->nvms > 1)
				snprintf(who, sizeof(who), "VM %u ", k);
			fprintf(out, "vmm: %svCPU %u %s%s%s\n", who, i, vcpu_end_name(v->end), v->fault[0] ? ": " : "",
				v->fault);
			if (v->regs_valid)
				x86_regs_print(out, "    ", &v->regs, &v->sregs);
		}
}
