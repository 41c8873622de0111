#include "firmware/bench_window.h"
#include "firmware/hypercall.h"
#include "firmware/tsc.h"

/* Each on its own cache line: arrivals hammer one, the spinners read another. */
static struct {
	_Alignas(64) uint32_t arrived;
	_Alignas(64) uint32_t go;
	uint64_t start_tsc, deadline_tsc;
	_Alignas(64) uint32_t finished;
	uint64_t total_ops;
} win;

void fw_window_start(struct fw_cpu *self, struct fw_window *w)
{
	const struct fw_config *cfg = self->cfg;

	if (__atomic_add_fetch(&win.arrived, 1, __ATOMIC_ACQ_REL) == cfg->num_cpus) {
		uint64_t now = fw_rdtsc();

		win.start_tsc = now;
		win.deadline_tsc = now + fw_muldiv64(cfg->duration_ms, cfg->tsc_hz, 1000);
		if (win.deadline_tsc < now)
			win.deadline_tsc = UINT64_MAX;
		__atomic_store_n(&win.go, 1, __ATOMIC_RELEASE);
	} else {
		while (!__atomic_load_n(&win.go, __ATOMIC_ACQUIRE))
			fw_pause();
	}
	w->start_tsc = win.start_tsc;
	w->deadline_tsc = win.deadline_tsc;
	/* From the common start, not from when this vCPU saw go: a vCPU taken
	 * off its slot while it waited for go lost window time too. */
	fw_run_start(&self->run, w->start_tsc, cfg->tsc_hz);
}

uint64_t fw_window_stop(struct fw_cpu *self, struct fw_window *w)
{
	w->end_tsc = fw_run_tick(&self->run);
	w->run_cycles = fw_run_cycles(&self->run, w->start_tsc);
	w->gaps = self->run.gaps;
	w->gap_cycles = self->run.gap_cycles;
	return w->end_tsc;
}

static uint64_t to_ns(uint64_t cycles, uint64_t tsc_hz)
{
	return fw_muldiv64(cycles, 1000000000ull, tsc_hz);
}

void fw_window_report(const struct fw_cpu *self, const struct fw_window *w)
{
	uint64_t hz = self->cfg->tsc_hz;

	fw_report("elapsed_ns", to_ns(w->end_tsc - w->start_tsc, hz));
	fw_report("run_ns", to_ns(w->run_cycles, hz));
	fw_report("gaps", w->gaps);
	fw_report("gap_ns", to_ns(w->gap_cycles, hz));
}

bool fw_window_finish(const struct fw_cpu *self, uint64_t ops, uint64_t *total_ops)
{
	__atomic_add_fetch(&win.total_ops, ops, __ATOMIC_RELAXED);
	if (__atomic_add_fetch(&win.finished, 1, __ATOMIC_ACQ_REL) != self->cfg->num_cpus)
		return false;
	*total_ops = __atomic_load_n(&win.total_ops, __ATOMIC_RELAXED);
	return true;
}
