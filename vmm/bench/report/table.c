/*
 * What `vmm bench` prints and writes. The headline is a pivot: one row per
 * workload/lock/policy, one column per overcommit, cells = efficiency
 * against the same policy's 1x; a second pivot says how close each gets
 * to the native-threads bound. Raw runs go to runs.csv and the JSON so any
 * median can be re-derived (the tests do exactly that).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/report/report.h"
#include "vmm/bench/stats/stats.h"
#include "vmm/config.h"

#define MAX_COLS 32

static const char *fmt_ops(double v, char *buf, size_t len)
{
	if (!isfinite(v))
		snprintf(buf, len, "-");
	else if (v >= 1e6)
		snprintf(buf, len, "%.3gM", v / 1e6);
	else if (v >= 1e3)
		snprintf(buf, len, "%.3gk", v / 1e3);
	else
		snprintf(buf, len, "%.3g", v);
	return buf;
}

static const char *fmt_ratio(double v, char *buf, size_t len)
{
	if (!isfinite(v))
		snprintf(buf, len, "-");
	else if (v >= 0.01)
		snprintf(buf, len, "%.3f", v);
	else
		snprintf(buf, len, "%.1e", v);
	return buf;
}

static const char *status_of(const struct bench_cell *c, char *buf, size_t len)
{
	if (!c->failed)
		snprintf(buf, len, "ok");
	else if (c->fail_exit == -1)
		snprintf(buf, len, "FAILED (%s)", c->fail_why ? c->fail_why : "timeout");
	else
		snprintf(buf, len, "FAILED (exit %d: %.60s)", c->fail_exit, c->fail_why ? c->fail_why : "");
	return buf;
}

static bool same_group(const struct bench_cell *a, const struct bench_cell *b)
{
	return a->kind == b->kind && !strcmp(a->workload, b->workload) && !strcmp(a->lock, b->lock) &&
	       !strcmp(a->policy, b->policy) && a->spin_threshold == b->spin_threshold &&
	       a->slice_us == b->slice_us && a->defer_us == b->defer_us &&
	       a->guest_slice_off == b->guest_slice_off && bench_loop_same(&a->loop, &b->loop) &&
	       a->wake_slice_us == b->wake_slice_us && a->mode == b->mode;
}

/* The policy column's width in the main tables: 12 unless a label is longer. */
#define LABEL_MIN 12

/* Pivot columns: every (VMs, overcommit) the VM cells use, by overcommit. */
struct col {
	unsigned vms;
	double x;
};

static unsigned columns(const struct bench_matrix *m, struct col *cols)
{
	unsigned n = 0;
	for (unsigned i = 0; i < m->n; i++) {
		const struct bench_cell *c = &m->cells[i];
		if (c->kind != BENCH_VM)
			continue;
		bool seen = false;
		for (unsigned k = 0; k < n; k++)
			seen |= cols[k].vms == c->vms && cols[k].x == c->overcommit;
		if (seen || n == MAX_COLS)
			continue;
		unsigned k = n++;
		while (k && (cols[k - 1].x > c->overcommit ||
			     (cols[k - 1].x == c->overcommit && cols[k - 1].vms > c->vms))) {
			cols[k] = cols[k - 1];
			k--;
		}
		cols[k] = (struct col){ c->vms, c->overcommit };
	}
	return n;
}

static const char *col_name(const struct col *c, char *buf, size_t len)
{
	if (c->vms == 1)
		snprintf(buf, len, "%gx", c->x);
	else
		snprintf(buf, len, "%gx/%uvm", c->x, c->vms);
	return buf;
}

static const struct bench_cell *cell_at(const struct bench_matrix *m, const struct bench_cell *g,
					const struct col *col)
{
	for (unsigned i = 0; i < m->n; i++) {
		const struct bench_cell *c = &m->cells[i];
		if (!same_group(c, g))
			continue;
		if (c->kind == BENCH_NATIVE ? c->overcommit == col->x
					    : c->vms == col->vms && c->overcommit == col->x)
			return c;
	}
	return NULL;
}

/* The workload column: as wide as the longest workload name (Linux ones
 * such as sysbench-threads are longer than the bundled guest's). */
static int workload_width(const struct bench_matrix *m)
{
	int w = 10;
	for (unsigned i = 0; i < m->n; i++)
		if ((int)strlen(m->cells[i].workload) > w)
			w = (int)strlen(m->cells[i].workload);
	return w;
}

static void pivot(FILE *out, const struct bench_matrix *m, const struct col *cols, unsigned ncols,
		  bool of_native)
{
	char b[32], h[32], pl[BENCH_LABEL_MAX];
	int lw = bench_label_width(m, NULL, LABEL_MIN), ww = workload_width(m);
	fprintf(out, "%-*s %-9s %6s %-*s %9s", ww, "workload", "lock", "thr", lw, "policy", "pooled 1x");
	for (unsigned k = 0; k < ncols; k++)
		fprintf(out, " %9s", col_name(&cols[k], h, sizeof(h)));
	fputc('\n', out);
	for (unsigned i = 0; i < m->n; i++) {
		const struct bench_cell *g = &m->cells[i];
		bool first = true;
		for (unsigned j = 0; j < i; j++)
			first &= !same_group(&m->cells[j], g);
		if (!first || (of_native && g->kind == BENCH_NATIVE))
			continue;
		char thr[16];
		snprintf(thr, sizeof(thr), strncmp(g->lock, "pv", 2) ? "-" : "%u", g->spin_threshold);
		fprintf(out, "%-*s %-9s %6s %-*s %9s", ww, g->workload, g->lock, thr, lw,
			bench_cell_label(g, pl, sizeof(pl)), fmt_ops(g->pooled_1x, b, sizeof(b)));
		for (unsigned k = 0; k < ncols; k++) {
			const struct bench_cell *c = cell_at(m, g, &cols[k]);
			const char *s = "";
			if (c && c->failed)
				s = "FAILED";
			else if (c)
				s = fmt_ratio(of_native ? c->of_native : c->eff, b, sizeof(b));
			fprintf(out, " %9s", s);
		}
		fputc('\n', out);
	}
}

static void cells_table(FILE *out, const struct bench_matrix *m)
{
	char med[32], mn[32], mx[32], eff[32], nat[32], st[128], thr[16], pl[BENCH_LABEL_MAX], elo[32], ehi[32];
	int lw = bench_label_width(m, NULL, LABEL_MIN), ww = workload_width(m);
	fprintf(out, "%-4s %-*s %-9s %6s %-*s %3s %5s %6s %10s %21s %7s %7s %13s %7s  %s\n", "cell",
		ww, "workload", "lock", "thr", lw, "policy", "VMs", "vCPUs", "x", "median/s", "min..max",
		"spread", "eff", "eff 95% CI", "native", "status");
	for (unsigned i = 0; i < m->n; i++) {
		const struct bench_cell *c = &m->cells[i];
		char range[48];
		snprintf(thr, sizeof(thr), strncmp(c->lock, "pv", 2) ? "-" : "%u", c->spin_threshold);
		snprintf(range, sizeof(range), "%s..%s", fmt_ops(c->min, mn, sizeof(mn)),
			 fmt_ops(c->max, mx, sizeof(mx)));
		char spread[16];
		snprintf(spread, sizeof(spread), isfinite(c->spread_pct) ? "%.0f%%" : "-", c->spread_pct);
		char ci[80] = "-";
		if (isfinite(c->eff_lo))
			snprintf(ci, sizeof(ci), "%s..%s", fmt_ratio(c->eff_lo, elo, sizeof(elo)),
				 fmt_ratio(c->eff_hi, ehi, sizeof(ehi)));
		fprintf(out, "%-4u %-*s %-9s %6s %-*s %3u %5u %5gx %10s %21s %7s %7s %13s %7s  %s\n", c->id, ww,
			c->workload, c->lock, thr, lw, bench_cell_label(c, pl, sizeof(pl)), c->vms, c->vcpus,
			c->overcommit,
			fmt_ops(c->median, med, sizeof(med)), range, spread,
			fmt_ratio(c->eff, eff, sizeof(eff)), ci, fmt_ratio(c->of_native, nat, sizeof(nat)),
			status_of(c, st, sizeof(st)));
	}
}

/* "a/b/c" of the per-VM medians, cut at len. */
static const char *per_vm_list(const struct bench_cell *c, char *buf, size_t len)
{
	char one[32];
	size_t o = 0;
	buf[0] = '\0';
	for (unsigned k = 0; c->vm_median && k < c->vms && o + 1 < len; k++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", k ? "/" : "",
				      fmt_ops(c->vm_median[k], one, sizeof(one)));
	return buf[0] ? buf : "-";
}

/*
 * Cells with several VMs: the sum of aligned windows beside one VM of the
 * same size on the same slots (the honest denominator: above 1 only if the
 * VMs together use the slots better than one does), how evenly the VMs
 * shared them, and K processes against one process and against the host.
 */
static bool multi_vm(const struct bench_cell *c)
{
	return c->kind == BENCH_VM && c->vms > 1;
}

static void multi_vm_table(FILE *out, const struct bench_matrix *m)
{
	char sum[32], jain[32], mm[32], v1[32], vp[32], vh[32], pl[BENCH_LABEL_MAX], per[160], late[32], sp[32];
	bool any = false;
	for (unsigned i = 0; i < m->n; i++)
		any |= multi_vm(&m->cells[i]);
	if (!any)
		return;
	int lw = bench_label_width(m, multi_vm, LABEL_MIN), ww = workload_width(m);
	fprintf(out, "\nmulti-VM cells: sum = median over reps of the VMs' summed ops/s (one window, "
		"--start-at for K processes); per-VM = each VM's own median\n");
	fprintf(out, "%-4s %-*s %-9s %-*s %3s %5s %9s %6s %7s %7s %8s %8s %7s %7s  %s\n", "cell",
		ww, "workload", "lock", lw, "policy", "VMs", "vCPUs", "sum/s", "jain", "max/min", "vs 1VM",
		"vs proc", "vs host", "late", "spread", "per-VM ops/s");
	for (unsigned i = 0; i < m->n; i++) {
		const struct bench_cell *c = &m->cells[i];
		if (!multi_vm(c))
			continue;
		snprintf(late, sizeof(late), isfinite(c->max_late_ms) ? "%.1fms" : "-", c->max_late_ms);
		snprintf(sp, sizeof(sp), isfinite(c->start_spread_ms) ? "%.1fms" : "-", c->start_spread_ms);
		fprintf(out, "%-4u %-*s %-9s %-*s %3u %5u %9s %6s %7s %7s %8s %8s %7s %7s  %s\n", c->id, ww,
			c->workload, c->lock, lw, bench_cell_label(c, pl, sizeof(pl)), c->vms, c->vcpus,
			c->failed ? "FAILED" : fmt_ops(c->median, sum, sizeof(sum)),
			fmt_ratio(c->jain, jain, sizeof(jain)), fmt_ratio(c->max_over_min, mm, sizeof(mm)),
			fmt_ratio(c->vs_one_vm, v1, sizeof(v1)), fmt_ratio(c->vs_process, vp, sizeof(vp)),
			fmt_ratio(c->vs_host_procs, vh, sizeof(vh)), late, sp,
			per_vm_list(c, per, sizeof(per)));
	}
	fprintf(out, "vs 1VM = sum / 1 VM of the same vCPUs, lock and policy on the same slots; vs proc = "
		"@dom / the same VMs in one process (--vms K); vs host = @dom / @procs (K processes under "
		"--sched host); late = worst start after --start-at; spread = worst gap between the K starts\n");
}

static void micro_table(FILE *out, const struct bench_micro *mi)
{
	const double *md = mi->median;
	fprintf(out, "\nmicrobenchmarks (median of %u; raw runs in results.json)\n", mi->reps);
	fprintf(out, "  hypercall round trip      %8.2f us   bare MMIO exit     %8.2f us   ratio %.2f\n",
		md[BENCH_MICRO_HC] / 1e3, md[BENCH_MICRO_EXIT] / 1e3,
		bench_ratio(md[BENCH_MICRO_HC], md[BENCH_MICRO_EXIT]));
	fprintf(out, "  PV kick -> vCPU running   %8.2f us   futex wake -> run  %8.2f us   ratio %.2f (VMM-side)\n",
		md[BENCH_MICRO_KICK] / 1e3, md[BENCH_MICRO_FUTEX] / 1e3,
		bench_ratio(md[BENCH_MICRO_KICK], md[BENCH_MICRO_FUTEX]));
	fprintf(out, "  PV kick -> guest code     %8.2f us   futex wake -> run  %8.2f us   ratio %.2f "
		"(guest TSC, %.0f kicks)\n",
		md[BENCH_MICRO_KICK_GUEST] / 1e3, md[BENCH_MICRO_FUTEX] / 1e3,
		bench_ratio(md[BENCH_MICRO_KICK_GUEST], md[BENCH_MICRO_FUTEX]), md[BENCH_MICRO_KICKS_TIMED]);
	fprintf(out, "  forced preemption         %8.2f us of slot time each, %.2f us before subtracting the\n"
		"                            host's own steal (%.0f preemptions at 500 us slices)\n",
		md[BENCH_MICRO_PREEMPT] / 1e3, md[BENCH_MICRO_PREEMPT_GROSS] / 1e3,
		md[BENCH_MICRO_SIGNAL_EXITS]);
	fprintf(out, "  ... by its own timer      %8.2f us of slot time each with --own-tick on, ratio %.2f\n"
		"                            own/loop (%.0f preemptions)\n",
		md[BENCH_MICRO_PREEMPT_OWN] / 1e3,
		bench_ratio(md[BENCH_MICRO_PREEMPT_OWN], md[BENCH_MICRO_PREEMPT]),
		md[BENCH_MICRO_SIGNAL_EXITS_OWN]);
	fprintf(out, "  safe-point switch         %8.2f us guest to guest, ratio %.2f to a forced preemption\n"
		"                            (%.0f switches at 500 us slices, %.0f hard deferrals)\n",
		md[BENCH_MICRO_SP_SWITCH] / 1e3,
		bench_ratio(md[BENCH_MICRO_SP_SWITCH], md[BENCH_MICRO_PREEMPT]),
		md[BENCH_MICRO_SP_SWITCHES], md[BENCH_MICRO_SP_HARD]);
	fprintf(out, "  requested switch          %8.2f us guest to guest with --guest-slice off, ratio %.2f\n"
		"                            to the guest-timed one (%.0f switches, %.0f hard deferrals)\n",
		md[BENCH_MICRO_REQ_SWITCH] / 1e3,
		bench_ratio(md[BENCH_MICRO_REQ_SWITCH], md[BENCH_MICRO_SP_SWITCH]),
		md[BENCH_MICRO_REQ_SWITCHES], md[BENCH_MICRO_REQ_HARD]);
}

void bench_report_table(FILE *out, const struct bench_opts *o, const struct bench_matrix *m,
			const struct bench_micro *mi, const struct bench_machine *mc)
{
	struct col cols[MAX_COLS];
	unsigned ncols = columns(m, cols);
	fprintf(out, "== vmm bench %s: preset %s, %u pcpus, %u reps x %u ms, cs %u / work %u cycles ==\n",
		VMM_VERSION, o->preset, o->pcpus, o->reps, o->duration_ms, o->cs_cycles, o->work_cycles);
	fprintf(out, "machine: %u CPUs, %s, %s, /dev/kvm from %s\n\n", mc->nproc, mc->cpu, mc->kernel,
		mc->kvm);
	cells_table(out, m);
	multi_vm_table(out, m);
	bench_report_linux(out, m);
	fprintf(out, "\novercommit efficiency = median ops/s at N vCPUs on %u slots / pooled 1x = median of "
		"every policy's runs at %u vCPUs on %u slots (same workload, lock, threshold: at 1x they "
		"run alike; host = --sched host, native = host threads, no VM, against its own bound; "
		"qemu = QEMU -accel kvm, against its own 1x)\n",
		o->pcpus, o->pcpus, o->pcpus);
	if (o->loops.n > 1 || o->loops.v[0].kind != BENCH_LOOP_AUTO)
		fprintf(out, "each --loop-cpu placement pools only its own 1x runs (the host's are auto's): "
			"at 1x with a CPU to spare auto moves the loop off the slots and none does not\n");
	pivot(out, m, cols, ncols, false);
	bool natives = false;
	for (unsigned i = 0; i < m->n; i++)
		natives |= m->cells[i].kind == BENCH_NATIVE;
	if (o->native && natives) {
		fprintf(out, "\nfraction of bare metal = median ops/s / native threads' ops/s on %u CPUs "
			"(same lock, %u threads)\n", o->pcpus, o->pcpus);
		pivot(out, m, cols, ncols, true);
	}
	bench_report_derived(out, m);
	bench_targets_print(out, m);
	if (mi->ran)
		micro_table(out, mi);
}
