/*
 * The co-scheduler's pure core: a single-threaded, deterministic state
 * machine. No threads, no clock, no sleeping. Every entry point takes now_ns
 * and appends ACTIONS to a list that the caller executes and then clears
 * (sched.c does it under its mutex; the unit tests do it with fake vCPUs).
 *
 * The core reads the guest's spin/critical-section hints through one pure
 * input function (sched_core_hint_fn) so the policies can look at any vCPU
 * when they need to; it never calls out for anything else.
 *
 * Halts inside the host kernel (a guest HLT with an in-kernel irqchip) are
 * invisible to the VMM: the thread stays in KVM_RUN. With halt_check_ns set,
 * every tick past the check time asks the blocked probe about each vCPU. A
 * RUNNING vCPU that is blocked is PARKED: IDLE, its slot given away, its
 * thread left in guest mode (it uses no CPU there). A parked vCPU found
 * unblocked is running guest code without a slot: it takes a free slot if
 * there is one, else it is queued at the front and forced out. So a vCPU
 * may run unslotted for at most one check interval; the guest's wake-up is
 * never delayed by the scheduler. Any return of a parked vCPU's thread to
 * userspace (PARK makes it come to sched_core_yield) also unparks it.
 *
 * Slots that come and go (params.slots_offline; a domain member's seats):
 * each slot is ONLINE, GOING_OFF or OFFLINE. Only an ONLINE slot is ever
 * granted. sched_core_slot_offline frees a free slot at once; a held one
 * goes GOING_OFF, its holder is asked to leave as at a slice end, and
 * whatever way it gives the slot back (yield, wait, halt, done, park, a
 * hand-off, whose receiver is queued at the front instead) the slot goes
 * OFFLINE, never to anyone else. Each time a slot goes OFFLINE the core
 * emits SLOT_OFF; and after every event, when it changed, SLOT_DEMAND with
 * min(nslots, nrunning + nrunnable): how many slots it could use now.
 *
 * Invariant: at most npcpus vCPUs are RUNNING. A RUNNING vCPU keeps its slot
 * until its own thread gives it back (sched_core_yield and friends), so a
 * FORCE_EXIT'ed vCPU still counts until it has really left guest mode.
 */
#ifndef VMM_SCHED_CORE_H
#define VMM_SCHED_CORE_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/types.h"
#include "sched/vheap.h"

struct sched_policy;

struct sched_hint {
	uint64_t spinning_since; /* ns, same clock as now; 0 = not spinning */
	bool in_critical;
	int waiting_for;         /* vCPU index or -1 */
	bool guest_slice;        /* the guest times its own slices (core_gslice.c) */
};
typedef void (*sched_core_hint_fn)(void *ctx, int v, struct sched_hint *out);
/* Is v's thread blocked inside the host kernel right now? */
typedef bool (*sched_core_blocked_fn)(void *ctx, int v);

enum sched_action_kind {
	SCHED_ACT_GRANT,               /* v may run on slot now (wake it) */
	SCHED_ACT_FORCE_EXIT,          /* v must leave guest mode, then yield */
	SCHED_ACT_SET_PREEMPTED,       /* shared-page flag := val */
	SCHED_ACT_SET_PREEMPT_PENDING, /* shared-page field := val: 0, or the
					  request's number (never 0) */
	SCHED_ACT_WAKE_ALL,            /* stop or deadlock: wake every thread */
	SCHED_ACT_PARK,                /* v lost its slot while blocked in guest
					  mode: its next exit must yield (no
					  forced exit) */
	SCHED_ACT_SET_KICK_PENDING,    /* shared-page flag := val */
	SCHED_ACT_SLOT_OFF,            /* slot val is offline now (v = -1) */
	SCHED_ACT_SLOT_DEMAND,         /* val slots could be used now (v = -1) */
	SCHED_ACT_SET_CONTENDED,       /* shared-page flag := val: someone queues */
	SCHED_ACT_NEW_SLICE,           /* v's slice starts now and lasts val us */
};

struct sched_action {
	enum sched_action_kind kind;
	int v;
	int val; /* slot for GRANT, the flag for SET_* */
};

struct sched_vcore {
	enum sched_vstate state;
	int vm;
	int slot;                /* when RUNNING */
	int last_slot;           /* the slot of its last grant, -1: none yet */
	uint32_t last_gen;       /* ... and that slot's gen then */
	int qprev, qnext;        /* run-queue links when RUNNABLE */
	bool preempt_req;        /* FORCE_EXIT sent, slot not yet given back */
	int handoff_to;          /* who gets the slot when it is given back */
	bool preempt_pending;    /* safe-point deferral in progress */
	bool contended;          /* mirror of the shared-page flag */
	bool gs_declined;        /* refused an early slice end: the guest stops
				    timing this slice (core_gslice.c) */
	bool gs_guest;           /* hint.guest_slice, as last read by one of
				    its own thread's events */
	bool woken;              /* RUNNABLE since a kick, wake or unpark: slices
				    are wake_slice_ns while any such queues */
	uint32_t pending_seq;    /* the number of the last request */
	uint64_t defer_deadline;
	bool preempted;          /* mirror of the shared-page flag */
	bool kick_pending;       /* a kick/wake no wait has consumed yet (mirrored
				    to the shared page) */
	bool resume_due;         /* granted; its thread is not back yet */
	bool fresh_slice;        /* ... and the grant was a new slice, which
				    sched_core_resumed starts */
	uint64_t wait_deadline;  /* UINT64_MAX: none */
	int wake_reason;         /* 0: kicked/woken, -ETIMEDOUT */
	uint64_t state_since;
	uint64_t last_hint_spin;
	uint64_t kicked_at;      /* 0: not woken by a kick */
	bool parked;             /* IDLE with its thread still in KVM_RUN */
	bool unslotted;          /* RUNNABLE with its thread still in guest mode */
	bool unslotted_forced;   /* ... and FORCE_EXIT sent */
	bool unpark_listed;      /* in c->unparked */
	struct sched_vcpu_stats st;
	/* The indices (core_index.c): kept on every state and queue change so
	 * that no event scans every vCPU. */
	int rq_pos;              /* in rq_arr when RUNNABLE, else -1 */
	bool q_crit;             /* queued inside a lock region (sampled) */
	bool crit_forced;        /* ... and forced out there, not a hand-off
				    (read only while queued) */
	int cprev, cnext;        /* crit-list links when queued and q_crit */
	int vqprev, vqnext;      /* its VM's run-queue links when RUNNABLE */
	int64_t qseq;            /* run-queue order: smaller is nearer the head */
};

enum sched_slot_state {
	SCHED_SLOT_ONLINE,       /* may be granted (0: the default) */
	SCHED_SLOT_GOING_OFF,    /* held; offline once its holder gives it back */
	SCHED_SLOT_OFFLINE,      /* free, and never granted */
};

struct sched_slot {
	int vcpu;                /* -1: free */
	int last_vcpu;           /* its last holder, -1: none yet */
	uint32_t gen;            /* times it went OFFLINE: it may come back
				    on another host CPU, which is not warm */
	uint64_t slice_start;
	bool floor_off;          /* its holder spun past its own slice: the
				    slice floor no longer keeps this slice */
	uint64_t lease_end;      /* a seat: the domain's slice end of its grant (0: none) */
	enum sched_slot_state state;
};

struct sched_slot_end {  /* scratch for a tick's slice ends */
	uint64_t start;
	int slot;
};

struct sched_core {
	int nvcpus, nslots, nvms;
	uint64_t slice_ns;       /* in force: base_slice_ns, or the slice floor if longer */
	uint64_t base_slice_ns;  /* params.slice_ns */
	uint64_t ple_window_ns, defer_max_ns;
	unsigned spin_sources;
	bool defer;
	bool guest_slice;        /* params.guest_slice */
	bool contended;          /* nrunnable > 0, as the guests were told */
	bool lease_on;           /* another domain member waits: seats' leases end their slices */
	bool gs_dirty;           /* a grant since the last sync of the flag */
	uint64_t contended_since;
	uint64_t wake_slice_ns;  /* params.wake_slice_ns */
	int nwoken;              /* RUNNABLE with woken set */
	const struct sched_policy *pol;
	void *pstate;            /* the policy's own */
	struct sched_vcore *v;
	struct sched_slot *slot;
	struct sched_slot_end *ended; /* [nslots] */
	int qhead, qtail;
	int nrunnable, nrunning;
	int nusable;             /* ONLINE slots */
	bool slots_offline;      /* params.slots_offline: slot actions on */
	int demand;              /* the last SLOT_DEMAND's val; -1: none yet */
	bool started, stopping, deadlock;
	uint64_t last_now, next_hint_check;
	uint64_t halt_check_ns, next_halt_check;
	bool maybe_unslotted;    /* an unpark since the last sc_force_unslotted pass */
	int *unparked, nunparked; /* who, once each (unpark_listed) */
	sched_core_blocked_fn blocked;
	void *blocked_ctx;
	uint64_t rng;
	sched_core_hint_fn hint;
	void *hint_ctx;
	sched_trace_fn trace;
	void *trace_ctx;
	struct sched_action *act;
	int nact, act_cap;
	/* The indices (core_index.c). */
	struct sched_vheap wait_heap; /* WAITING with a deadline, by deadline */
	struct sched_vheap age_heap;  /* RUNNABLE, by state_since */
	int *rq_arr;             /* the RUNNABLE vCPUs, in no order */
	int crit_head, crit_tail; /* queued with q_crit, in queue order */
	int64_t qlo, qhi;        /* the next qseq at the head / tail */
	int *vm_qhead, *vm_qtail; /* [nvms] each VM's RUNNABLE, in queue order */
	int *vm_running, *vm_runnable, *vm_live; /* [nvms] */
	int nwant_vms;           /* VMs with a RUNNING or RUNNABLE vCPU */
	uint64_t *want_bits, *want_sum; /* those VMs as a bitset, and which of
				    its words are not zero */
	int *vm_mem, *vm_start;  /* the vCPUs of VM i, ascending:
				    vm_mem[vm_start[i] .. vm_start[i + 1]) */
	int ndone, nstuck;       /* DONE; WAITING with no deadline */
};

/* NULL on bad params or unknown policy (*why gets a static message). */
struct sched_core *sched_core_create(const struct sched_params *p,
				     sched_core_hint_fn hint, void *hint_ctx,
				     const char **why);
void sched_core_destroy(struct sched_core *c);
/* The probe for parking (see above); without it halt_check_ns does nothing. */
void sched_core_set_blocked_fn(struct sched_core *c, sched_core_blocked_fn fn, void *ctx);

/* Events. */
void sched_core_start(struct sched_core *c, uint64_t now);
void sched_core_tick(struct sched_core *c, uint64_t now);
/* Only the deadlines sched_core_deadlines gives the slots (deferrals,
 * leases, slice ends): a slot holder's own tick (own_tick.c). Waits, halt
 * checks, hint polls and the policy's tick stay sched_core_tick's, on the
 * event loop, whose thread may read what a vCPU's may not (KVM stats). */
void sched_core_tick_slots(struct sched_core *c, uint64_t now);
void sched_core_yield(struct sched_core *c, int v, uint64_t now);
void sched_core_spin(struct sched_core *c, int v, int target, unsigned source,
		     uint64_t now);
/* A spin observed by the VMM while v runs in guest mode (PLE exits). */
void sched_core_spin_seen(struct sched_core *c, int v, unsigned source, uint64_t now);
void sched_core_safe_point(struct sched_core *c, int v, uint64_t now);
/* 0: returned at once (kick pending); 1: v gave up its slot and waits. */
int sched_core_wait(struct sched_core *c, int v, uint64_t timeout_ns, uint64_t now);
int sched_core_halt(struct sched_core *c, int v, uint64_t now);
void sched_core_kick(struct sched_core *c, int from, int to, uint64_t now);
void sched_core_wake(struct sched_core *c, int v, uint64_t now);
void sched_core_done(struct sched_core *c, int v, uint64_t now);
void sched_core_stop(struct sched_core *c, uint64_t now);
/* v's thread is back in guest mode after a grant: ends a kick-latency
 * sample, and starts v's slice. A grant can take a while to reach a thread
 * (the host wakes it); a preemption request made meanwhile is dropped, so
 * a vCPU never comes back to a preempt_pending it could not have seen. */
void sched_core_resumed(struct sched_core *c, int v, uint64_t now);
/* v's guest acknowledged the guest-timed slice fields (ABI.md 4.3), whose
 * writes the VMM dropped until then: NEW_SLICE for what is left of its
 * slice and SET_CONTENDED, now; its opt-in is read again. Only while v
 * runs, and only with params.guest_slice. */
void sched_core_features_acked(struct sched_core *c, int v, uint64_t now);
/* Slots coming and going (see above). A slot out of range is ignored.
 * Online cancels a GOING_OFF (its holder still leaves as asked; the slot
 * is then refilled as any freed slot). Offline answers whether a SLOT_OFF
 * is to come (now, or when the holder leaves): false for an OFFLINE slot,
 * whose SLOT_OFF was said once, when it went off, and is never said again. */
void sched_core_slot_online(struct sched_core *c, int slot, uint64_t now);
bool sched_core_slot_offline(struct sched_core *c, int slot, uint64_t now);
/* A domain member's slices last at least ns while another member waits for
 * a slot (0: as params.slice_ns again). The domain's revoke then ends a
 * seat's slice, one switch, instead of a rotation of the member's own just
 * before it and the revoke's switch right after. Running vCPUs' guests are
 * told their slice's new end. */
void sched_core_set_slice_floor(struct sched_core *c, uint64_t ns, uint64_t now);
/* A seat's lease (core_slots.c): the domain's slice end of the grant that
 * brought the slot online (CLOCK_MONOTONIC ns; 0: none). While another
 * member waits (sched_core_set_lease on), a seat whose lease ends goes
 * back by itself: its holder's slice ends LEASE_MARGIN_NS before it (a
 * guest timing its slice yields at its lock boundary there), and at that
 * yield the slot goes offline instead of to a sibling, so the domain's
 * revoke (the agent's and the member's wake-ups, a deferral) is not needed. */
#define LEASE_MARGIN_NS 300000ull
void sched_core_slot_lease(struct sched_core *c, int slot, uint64_t end, uint64_t now);
void sched_core_set_lease(struct sched_core *c, bool on, uint64_t now);
/* Switches the yield policy live: -EINVAL for an unknown name (nothing
 * changes), the new policy's init error (the old one stays), else 0. */
int sched_core_set_policy(struct sched_core *c, const char *name, uint64_t now);
/* NULL, or the invariant that does not hold (core_check.c). */
const char *sched_core_check(const struct sched_core *c);

/* Queries. */
uint64_t sched_core_next_deadline(const struct sched_core *c);
/*
 * The same deadlines split by who can act on them: slot_d[s] (nslots
 * entries) gets slot s's own (its holder's slice end, deferral, lease), and
 * the return value is the rest (waits, checks, the policy's). With slot_d
 * NULL it is sched_core_next_deadline. The thread layer arms each holder's
 * own timer at its slot's deadline, so a slice end needs no event loop.
 */
uint64_t sched_core_deadlines(const struct sched_core *c, uint64_t *slot_d);
void sched_core_stats(const struct sched_core *c, int v, uint64_t now,
		      struct sched_vcpu_stats *out);
static inline enum sched_vstate sched_core_state(const struct sched_core *c, int v)
{
	return c->v[v].state;
}

static inline bool sched_core_slot_usable(const struct sched_core *c, int slot)
{
	return c->slot[slot].state == SCHED_SLOT_ONLINE;
}

/* The action list: read, execute in order, clear. */
static inline void sched_core_clear_actions(struct sched_core *c) { c->nact = 0; }

/* For policies. */
struct sched_hint sched_core_get_hint(const struct sched_core *c, int v);
void sched_core_request_preempt(struct sched_core *c, int v, uint64_t now);
uint64_t sched_core_rand(struct sched_core *c);
#define SCHED_FOR_EACH_QUEUED(c, it) \
	for (int it = (c)->qhead; it >= 0; it = (c)->v[it].qnext)
/* The same, only VM vm's vCPUs. */
#define SCHED_FOR_EACH_QUEUED_OF(c, vm, it) \
	for (int it = (c)->vm_qhead[vm]; it >= 0; it = (c)->v[it].vqnext)
/* The first VM >= vm with a RUNNING or RUNNABLE vCPU, or -1 (no wrap). */
int sched_core_next_want_vm(const struct sched_core *c, int vm);
/* The k-th RUNNABLE vCPU, 0 <= k < nrunnable, in no particular order. */
static inline int sched_core_runnable_at(const struct sched_core *c, int k)
{
	return c->rq_arr[k];
}

#endif
