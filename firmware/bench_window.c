#include "firmware/bench_window.h"
#include "firmware/tsc.h"

/* Each on its own cache line: arrivals hammer one, the spinners read another. */
static struct {
	_Alignas(64) uint32_t arrived;
	_Alignas(64) uint32_t go;
	uint64_t start_tsc, deadline_tsc;
	_Alignas(64) uint32_t finished;
	uint64_t total_ops;
} win;

void fw_window_start(const struct fw_cpu *self, struct fw_window *w)
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
}

bool fw_window_finish(const struct fw_cpu *self, uint64_t ops, uint64_t *total_ops)
{
	__atomic_add_fetch(&win.total_ops, ops, __ATOMIC_RELAXED);
	if (__atomic_add_fetch(&win.finished, 1, __ATOMIC_ACQ_REL) != self->cfg->num_cpus)
		return false;
	*total_ops = __atomic_load_n(&win.total_ops, __ATOMIC_RELAXED);
	return true;
}
