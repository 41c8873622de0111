/*
 * The Linux guests' table: each Linux workload's `vmm run` cell beside QEMU
 * -accel kvm with the same kernel, initramfs, vCPUs and CPUs (qemu_ref),
 * both timed by the guest itself. vs qemu above 1 means the guest did its
 * fixed work faster under vmm than under the stock VMM on the same CPUs.
 */
#include <stdio.h>

#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/report/report.h"

static bool linux_vm(const struct bench_cell *c)
{
	return c->kind == BENCH_VM && bench_linux_workload(c->workload);
}

void bench_report_linux(FILE *out, const struct bench_matrix *m)
{
	bool any = false;
	for (unsigned i = 0; i < m->n; i++)
		any |= linux_vm(&m->cells[i]);
	if (!any)
		return;
	char pl[BENCH_LABEL_MAX], med[32], eff[32], q[32], qe[32], vs[32], lo[32], hi[32], ci[72];
	int lw = bench_label_width(m, linux_vm, 12);
	fprintf(out, "\nLinux guests against QEMU+KVM (same kernel, initramfs, vCPUs and CPUs; ops/s of a fixed "
		"amount of work, timed by the guest):\n");
	fprintf(out, "%-4s %-16s %-*s %5s %5s %10s %6s %10s %6s %7s %-13s %s\n", "cell", "workload", lw, "policy",
		"vCPUs", "x", "median/s", "eff", "qemu/s", "q eff", "vs qemu", "95% CI", "status");
	for (unsigned i = 0; i < m->n; i++) {
		const struct bench_cell *c = &m->cells[i];
		if (!linux_vm(c))
			continue;
		const struct bench_cell *qc = c->qemu_ref >= 0 ? &m->cells[c->qemu_ref] : NULL;
		snprintf(ci, sizeof(ci), "%s..%s", bench_fmt(c->vs_qemu_lo, "%.3f", lo, sizeof(lo)),
			 bench_fmt(c->vs_qemu_hi, "%.3f", hi, sizeof(hi)));
		fprintf(out, "%-4u %-16s %-*s %5u %4gx %10s %6s %10s %6s %7s %-13s %s\n", c->id, c->workload, lw,
			bench_cell_label(c, pl, sizeof(pl)), c->vcpus, c->overcommit,
			bench_fmt(c->median, "%.4g", med, sizeof(med)), bench_fmt(c->eff, "%.3f", eff, sizeof(eff)),
			qc ? bench_fmt(qc->median, "%.4g", q, sizeof(q)) : "-", qc ? bench_fmt(qc->eff, "%.3f", qe, sizeof(qe)) : "-",
			bench_fmt(c->vs_qemu, "%.3f", vs, sizeof(vs)), ci,
			c->failed ? "FAILED" : qc && qc->failed ? "qemu FAILED" : qc ? "ok" : "no qemu cell");
	}
	fprintf(out, "eff = against the same VMM's pooled 1x (vmm's every policy, QEMU's own); vs qemu = median / "
		"QEMU's median at the same vCPUs, with a bootstrap 95%% interval\n");
}
