/*
 * Types shared by the co-scheduler's pure core (core.h), its policies
 * (policy.h) and its thread layer (sched.h). Nothing here knows about KVM or
 * the guest ABI: every vCPU is an index 0..nvcpus-1, global across VMs (the
 * caller maps a guest's own vCPU numbers to these).
 */
#ifndef VMM_SCHED_TYPES_H
#define VMM_SCHED_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/hist.h"

#define SCHED_DEFAULT_SLICE_NS (2 * 1000 * 1000ull)
#define SCHED_DEFAULT_PLE_WINDOW_NS (50 * 1000ull)
#define SCHED_DEFAULT_DEFER_MAX_NS (200 * 1000ull)
#define SCHED_NO_TIMEOUT 0ull /* timeout_ns for a wait that only a kick ends */

enum sched_vstate {
	SCHED_ST_RUNNING,  /* holds a slot */
	SCHED_ST_RUNNABLE, /* queued for a slot */
	SCHED_ST_WAITING,  /* PV wait: until kicked or its timeout */
	SCHED_ST_IDLE,     /* guest halted: until kicked or woken (or, parked
			      in guest mode, until its blocking ends) */
	SCHED_ST_DONE,
};

/* Spin-detection sources (params.spin_sources); a disabled source's events
 * are dropped before they reach the policy. */
#define SCHED_SPIN_PLE (1u << 0)   /* pause-loop exits seen by the VMM */
#define SCHED_SPIN_HINT (1u << 1)  /* spinning_since in the shared page */
#define SCHED_SPIN_YIELD (1u << 2) /* the guest's yield/spin hypercall */
#define SCHED_SPIN_ALL (SCHED_SPIN_PLE | SCHED_SPIN_HINT | SCHED_SPIN_YIELD)

/* Trace events: trace(ctx, ev, v, arg, now). arg is the slot for GRANT, the
 * other vCPU for KICK/YIELD (the kicker / the one given the slot), the
 * target for SPIN, -1 otherwise. */
enum sched_trace_ev {
	SCHED_TR_GRANT,       /* v -> RUNNING on slot arg */
	SCHED_TR_RUNNABLE,    /* v -> RUNNABLE (queued) */
	SCHED_TR_WAITING,     /* v -> WAITING */
	SCHED_TR_IDLE,        /* v -> IDLE */
	SCHED_TR_DONE,        /* v -> DONE */
	SCHED_TR_PREEMPT,     /* v asked to leave guest mode (FORCE_EXIT) */
	SCHED_TR_DEFER,       /* v's preemption deferred (preempt pending) */
	SCHED_TR_DEFER_HARD,  /* a deferral hit defer_max_ns */
	SCHED_TR_KICK,        /* v kicked by arg (-1: by the VMM) */
	SCHED_TR_YIELD,       /* v gave its slot to arg */
	SCHED_TR_SPIN,        /* spin event on v, named target arg */
	SCHED_TR_DEADLOCK,    /* every live vCPU waits forever; v = -1 */
	SCHED_TR_SLOT_ON,     /* slot arg came online; v = -1 */
	SCHED_TR_SLOT_OFF,    /* slot arg went offline; v = -1 */
	SCHED_TR_POLICY,      /* the policy changed to sched_policy_names()[arg]; v = -1 */
	SCHED_TR_SLICE_GUEST, /* v ended its own slice (guest-timed slices) */
	SCHED_TR_SLICE_CUT,   /* v's slice was cut short for a woken vCPU */
	SCHED_TR_SLICE_FLOOR, /* the slice floor became arg µs (0: none); v = -1 */
	SCHED_TR_COUNT,       /* keep last */
};

typedef void (*sched_trace_fn)(void *ctx, enum sched_trace_ev ev, int v, int arg,
			       uint64_t now_ns);

struct sched_params {
	int nvcpus;
	int npcpus;              /* M slots */
	const int *host_cpu;     /* [npcpus] host CPU of each slot, -1 = don't
				    pin; NULL = pin nothing */
	uint64_t slice_ns;       /* 0: SCHED_DEFAULT_SLICE_NS */
	uint64_t ple_window_ns;  /* 0: SCHED_DEFAULT_PLE_WINDOW_NS */
	const char *policy;      /* NULL: "none" */
	unsigned spin_sources;   /* SCHED_SPIN_* */
	bool defer;              /* safe-point preemption deferral */
	/* With defer: guests that opt in (hint.guest_slice) end their own
	 * slices at a safe point; the core arms only the hard deadline for
	 * them (core_gslice.c). */
	bool guest_slice;
	/* While a vCPU woken by a kick, a wake (an interrupt) or an unpark
	 * queues for a slot, slices last at most this long (0: no shorter
	 * than slice_ns): a wake-up waits a fraction of a slice, not a whole
	 * one (issue 13). Gang keeps its own slices. */
	uint64_t wake_slice_ns;
	uint64_t defer_max_ns;   /* 0: SCHED_DEFAULT_DEFER_MAX_NS */
	int nvms;                /* 0: 1 */
	const int *vm_of;        /* [nvcpus] VM of each vCPU; NULL: all in VM 0 */
	uint64_t seed;           /* for `random` */
	/* How often to ask whether a vCPU is blocked inside the host kernel
	 * (a guest HLT with an in-kernel irqchip); 0: never. See core.h. */
	uint64_t halt_check_ns;
	/* Slots come and go (a domain member's seats, see core.h): every slot
	 * starts offline until sched_core_slot_online. false: all online
	 * for good, and no slot actions are ever emitted. */
	bool slots_offline;
	sched_trace_fn trace;    /* optional */
	void *trace_ctx;
};

struct sched_vcpu_stats {
	uint64_t ns_running, ns_runnable, ns_waiting, ns_idle;
	uint64_t preemptions;      /* forced out (slice end, hard deadline) */
	uint64_t spin_events;
	uint64_t yields_given, yields_received; /* slot hand-offs (spin, kick) */
	uint64_t waits;            /* wait calls, immediate returns included */
	uint64_t kicks_sent, kicks_received;
	uint64_t deferrals, deferrals_hard;
	uint64_t spins_queued_kept; /* SPIN exits while queued in a lock with a preemption pending: not a safe point */
	uint64_t guest_slice_yields;   /* left at its own slice end (guest-timed slices) */
	uint64_t guest_slice_declined; /* asked to leave before its slice ended or with nobody queued */
	uint64_t wake_cut_slices;  /* its slice was ended early for a woken vCPU (wake_slice_ns) */
	uint64_t lease_ends;      /* seats given back at their lease's end, unasked (domain members) */
	uint64_t lock_drains;     /* asked to leave at its next lock boundary: a sibling forced out inside one waits (domain seats) */
	uint64_t floor_spin_ends;  /* spun past its own slice under a domain's slice floor: ended there */
	uint64_t sticky_grants;    /* granted the slot it last held (warm cache and TLB) */
	uint64_t slot_moves;       /* granted another slot than the one it last held */
	uint64_t kernel_halts;     /* parked: blocked in the host kernel, slot freed */
	uint64_t unslotted_wakes;  /* woke from a park with no slot free: forced out */
	struct sched_hist kick_latency; /* kick of a sleeper -> back in guest */
};

#endif
