/*
 * The co-scheduler as the VMM uses it: M physical-CPU slots shared by N vCPU
 * threads, at most M of them inside KVM_RUN at any instant. One mutex guards
 * the pure core (core.h); each vCPU thread sleeps on its own futex word
 * until it is granted a slot; its granter moves it to the slot's host CPU
 * and wakes it after unlocking (sched/README.md). Nothing here knows KVM: the vCPU side is reached through
 * struct sched_vcpu_ops.
 *
 * A vCPU thread's loop (all calls from that vCPU's own thread):
 *
 *	if (sched_vcpu_enter(s, v) < 0) goto out;    // blocks until granted
 *	for (;;) {
 *		KVM_RUN;
 *		handle the exit; for the scheduler's hypercalls:
 *		  WAIT     r = sched_vcpu_wait(s, v, timeout_ns);
 *		  KICK     r = sched_vcpu_kick(s, v, target);
 *		  YIELD_TO r = sched_vcpu_spin(s, v, target, SCHED_SPIN_YIELD);
 *		  SPIN     r = sched_vcpu_spin(s, v, target, SCHED_SPIN_YIELD);
 *		  (preempt_pending seen at a safe point: sched_vcpu_safe_point)
 *		if (r == -ECANCELED || r == -EDEADLK) break;
 *		if (sched_vcpu_after_exit(s, v) &&       // one atomic load
 *		    sched_vcpu_yield_slot(s, v) < 0)      // blocks until regranted
 *			break;
 *	}
 *	out: sched_vcpu_done(s, v);
 *
 * after_exit also answers a poke (sched_slot_poke) by itself, false: the
 * vCPU keeps its slot and goes back into KVM_RUN.
 *
 * Every call that can give the slot away returns only once v holds a slot
 * again (0), or with -ECANCELED (sched_stop) or -EDEADLK (every live vCPU
 * waits with no timeout and no kick can come). A vCPU must hold a slot when
 * it calls wait, kick, spin, safe_point or yield_slot.
 *
 * force_exit must make KVM_RUN return even if it is called just before the
 * vCPU enters it (signal blocked outside KVM_RUN + KVM_SET_SIGNAL_MASK, or
 * immediate_exit): the "give the slot back" flag is set before force_exit
 * is called and read by sched_vcpu_after_exit after KVM_RUN returns.
 *
 * Guest halts never reach this layer: a HLT exit of a direct-entry guest
 * ends its vCPU (no interrupt controller could wake it, vcpu/vcpu.c), and a
 * Linux guest's halt blocks inside KVM_RUN (in-kernel irqchip). For the
 * latter, with params.halt_check_ns and ops.blocked_in_kernel, the scheduler
 * parks the vCPU (frees its slot, leaves it in KVM_RUN) and takes it back
 * when it wakes; sched_vcpu_after_exit is true for a parked vCPU, and the yield
 * that follows unparks it (see core.h).
 *
 * The event loop: wait until sched_timer_fd(s) is readable (a timerfd the
 * scheduler keeps at its next deadline, set by whichever thread moves it),
 * read it, then call sched_tick(s, sched_now_ns()). vmm/core/run.c does it
 * with an io_uring read; tests/unit/test_sched_threads.c with poll.
 */
#ifndef VMM_SCHED_SCHED_H
#define VMM_SCHED_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/core.h"
#include "sched/types.h"

/* Per-vCPU callbacks; any may be NULL (reads as 0 / false / -1). The reads
 * are called with the scheduler's mutex held and must be cheap plain loads
 * from the shared page; none may call back into the scheduler. */
struct sched_vcpu_ops {
	void (*force_exit)(void *opaque);
	uint64_t (*spinning_since_ns)(void *opaque); /* CLOCK_MONOTONIC ns, 0 */
	bool (*in_critical)(void *opaque);
	int (*waiting_for)(void *opaque);            /* global vCPU index, -1 */
	void (*set_preempted)(void *opaque, bool on);
	/* 0, or the number of a new request (per vCPU, never 0) */
	void (*set_preempt_pending)(void *opaque, uint32_t req);
	/* Blocked inside the host kernel (halted with an in-kernel irqchip);
	 * asked every params.halt_check_ns, so a cheap read is enough. */
	bool (*blocked_in_kernel)(void *opaque);
	/* Shared-page writes: a kick no wait consumed; the vCPU's time spent
	 * runnable but not running so far (at each grant). */
	void (*set_kick_pending)(void *opaque, bool on);
	void (*set_steal_ns)(void *opaque, uint64_t ns);
	/* Guest-timed slices (params.guest_slice, sched/core_gslice.c): does
	 * the guest time its own slices; someone queues for a slot; v's slice
	 * starts now and lasts ns. */
	bool (*guest_slice)(void *opaque);
	void (*set_contended)(void *opaque, bool on);
	void (*new_slice)(void *opaque, uint64_t ns);
};

struct sched;

/* NULL with *why set on bad parameters (e.g. an unknown policy). */
struct sched *sched_create(const struct sched_params *p, const char **why);
void sched_set_vcpu(struct sched *s, int v, const struct sched_vcpu_ops *ops,
		    void *opaque);
/* Called once, with the mutex held, when a deadlock is detected. */
void sched_set_deadlock_cb(struct sched *s, void (*cb)(void *ctx), void *ctx);
/* Grants the first M slots; call after every sched_set_vcpu. */
void sched_start(struct sched *s);
/* Forces every vCPU out; every blocked or later call returns -ECANCELED. */
void sched_stop(struct sched *s);
void sched_destroy(struct sched *s); /* stops first */

int sched_vcpu_enter(struct sched *s, int v);
bool sched_vcpu_after_exit(struct sched *s, int v);
int sched_vcpu_yield_slot(struct sched *s, int v);
int sched_vcpu_spin(struct sched *s, int v, int target, unsigned source);
int sched_vcpu_safe_point(struct sched *s, int v);
/* From any thread: the VMM saw v spin (e.g. pause-loop exits); never blocks. */
void sched_vcpu_spin_seen(struct sched *s, int v, unsigned source);
/* 0: kicked (or a kick was already pending), -ETIMEDOUT, -EDEADLK,
 * -ECANCELED. timeout_ns SCHED_NO_TIMEOUT waits for a kick only. */
int sched_vcpu_wait(struct sched *s, int v, uint64_t timeout_ns);
/* from = -1: the VMM (never blocks). Otherwise from's own thread; it may
 * hand its slot to target and then blocks until granted again. */
int sched_vcpu_kick(struct sched *s, int from, int target);
void sched_vcpu_done(struct sched *s, int v);
/* v's own thread: its guest acknowledged the fields of guest-timed slices
 * (ABI.md 4.3); their current values are written now. Never blocks. */
void sched_vcpu_features_acked(struct sched *s, int v);
/* When v was last granted a slot (sched_now_ns clock): the end of the time
 * the scheduler held it out. Only v's own thread, after a call that returned
 * 0; the time from the grant until the thread runs is the host's run delay. */
uint64_t sched_vcpu_granted_ns(const struct sched *s, int v);
/* The host CPU of the slot v holds: the one its granter moved it to, -1
 * where its slots have no CPU. Only v's own thread, after a call that
 * returned 0 (while it holds that slot). */
int sched_vcpu_host_cpu(const struct sched *s, int v);

/*
 * A slot's deadlines on its holder's own thread (own_tick.c). v's own
 * thread, before it enters: a POSIX timer that sends signo to that thread
 * only, set to its slot's next deadline while it holds one (then the event
 * loop wakes for them only as a backstop); 0 or -errno (v then stays on
 * the loop's timer). After the signal ends its run (KVM_RUN's -EINTR),
 * sched_vcpu_own_tick ticks the scheduler if the deadline is due (true
 * then); sched_vcpu_after_exit says next whether the slot goes.
 */
int sched_vcpu_own_timer(struct sched *s, int v, int signo);
bool sched_vcpu_own_tick(struct sched *s, int v);

uint64_t sched_now_ns(void);
/* The event loop's side (see the top of this file): the core's next
 * deadline (absolute CLOCK_MONOTONIC ns, UINT64_MAX: none), the tick at or
 * after it, and the timerfd that is readable once it is due. */
uint64_t sched_next_deadline(struct sched *s);
void sched_tick(struct sched *s, uint64_t now_ns);
int sched_timer_fd(struct sched *s);

/* What the event loop's wake-ups cost, for the report. */
struct sched_loop_stats {
	uint64_t ticks;       /* sched_tick calls */
	uint64_t ticks_early; /* of those, before any deadline was due: woken for nothing */
	uint64_t timer_sets;  /* timerfd_settime calls (the deadline moved) */
	uint64_t own_ticks;   /* ticks taken on a slot holder's own thread (own_tick.c) */
	uint64_t own_timer_sets; /* timer_settime calls on holders' own timers */
};
void sched_get_loop_stats(struct sched *s, struct sched_loop_stats *out);

void sched_stats(struct sched *s, int v, struct sched_vcpu_stats *out);
bool sched_deadlocked(struct sched *s);
/* The current policy; follows sched_set_policy (lock-free read). */
const char *sched_policy_name(const struct sched *s);

/*
 * Slots as seats (params.slots_offline; see core.h). online: the slot may
 * be used, its threads pinned to host_cpu (-1: don't pin; it may differ at
 * each grant of the seat). offline: free slots go at once, a held one when
 * its vCPU leaves (forced out as at a slice end); false: the slot was
 * offline already, and no SLOT_OFF comes for it (the one said when it went
 * off was the only one). The callback gets every
 * SLOT_OFF (val = slot) and SLOT_DEMAND (val = slots wanted) in order,
 * with the scheduler's mutex held: it must not call into the scheduler
 * (queue the news and act on it elsewhere). A vCPU waiting for a seat
 * blocks in enter/yield like any queued one; that is no deadlock.
 */
void sched_set_slot_cb(struct sched *s, void (*cb)(void *ctx, enum sched_action_kind kind, int val),
		       void *ctx);
void sched_slot_online(struct sched *s, int slot, int host_cpu);
bool sched_slot_offline(struct sched *s, int slot);
/*
 * Scheduling points, for a domain member's liveness answers (sched/DOMAIN.md,
 * "Probe"): cb(ctx, slot) runs on a vCPU's own thread, outside the mutex,
 * each time that vCPU passes a scheduling point holding `slot`: every call
 * above that returns 0 (enter, yield_slot, spin, safe_point, wait, kick),
 * and an after_exit that finds a poke. It proves the thread runs its loop;
 * nothing on another thread calls it. It must be cheap and must not call
 * the scheduler. poke: the holder of `slot` is forced out of guest mode
 * (force_exit) without losing its slot, and its after_exit then calls cb
 * and says false (nothing to give back): 1. 0: the slot is online and
 * nobody holds it (no vCPU there to answer for); -ENOENT: offline;
 * -EINVAL: no such slot. A give-back already asked for is not poked again.
 */
void sched_set_point_cb(struct sched *s, void (*cb)(void *ctx, int slot), void *ctx);
int sched_slot_poke(struct sched *s, int slot);
/* sched_slot_offline only if still(ctx, slot) says so, asked with the mutex
 * held, so that no SLOT_OFF can come between the question and the offline
 * (a domain member's stale revoke must not reach the seat's next grant);
 * false, nothing done, when it says no. still must not call the scheduler. */
bool sched_slot_offline_if(struct sched *s, int slot, bool (*still)(void *ctx, int slot), void *ctx);
/* -EINVAL (unknown name, nothing changed), the policy's init error, or 0. */
int sched_set_policy(struct sched *s, const char *name);
/* Slots online or going off, for reports. */
int sched_slots_online(struct sched *s);
/* A seat that sits free while nobody is runnable is given back at once
 * (offline, SLOT_OFF), unless keep: then online seats stay online (a
 * domain member whose agent is gone, or nobody else in the domain waits).
 * Turning keep off gives the idle ones back now. */
void sched_slots_keep(struct sched *s, bool keep);
/* sched_core_set_slice_floor: a domain member's slices while another
 * member waits (0: none). */
void sched_set_slice_floor(struct sched *s, uint64_t ns);
/* sched_core_slot_lease, sched_core_set_lease (core.h) */
void sched_slot_lease(struct sched *s, int slot, uint64_t end);
void sched_set_lease(struct sched *s, bool on);
/* v's state now (for status displays). */
enum sched_vstate sched_vcpu_state(struct sched *s, int v);

#endif
