/*
 * How long after forking K processes their vCPUs start: asked for, or by K,
 * or what the runs so far showed is needed. Its own file because both the
 * child's timeout (args.c) and the K processes (procs.c) need it.
 */
#include <stdio.h>

#include "vmm/bench/exec/exec.h"

/*
 * What the runs so far showed the margin must be. A process whose VM was
 * not made by the instant starts late and its window is not the others':
 * where VMs are slow to make (a nested KVM: 100+ ms late on a 1.5 s margin)
 * the next runs get more, so only the first run of a slow host pays. A
 * process that was ready but not scheduled at the instant is late too, and
 * more margin would not help it: that is only reported. The bench runs one
 * cell at a time, so plain state is enough.
 */
static unsigned learned_margin_ms;

void bench_start_margin_learn(unsigned used_ms, double late_ms)
{
	if (!(late_ms > 1))
		return;
	double want = used_ms + 2 * late_ms + 100;
	unsigned w = want > 30000 ? 30000 : (unsigned)want;
	if (w > learned_margin_ms) {
		learned_margin_ms = w;
		fprintf(stderr, "\r\033[Kvmm bench: a VM was not ready at the common instant (%.0f ms late); "
			"margins from now on at least %u ms\n", late_ms, w);
	}
}

unsigned bench_start_margin_learned_ms(void)
{
	return learned_margin_ms;
}

unsigned bench_start_margin_ms(const struct bench_opts *o, const struct bench_cell *c)
{
	/* Each process makes its VM before the instant: longer with more of them. */
	unsigned m = o->start_margin_ms ? o->start_margin_ms : 500 + 250 * c->vms;
	return m > learned_margin_ms ? m : learned_margin_ms;
}
