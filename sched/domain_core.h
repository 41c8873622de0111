/*
 * The scheduling domain's pure decision core (sched/DOMAIN.md): which
 * member VM's vCPU holds which of the domain's P slots. Single-threaded and
 * deterministic, like core.h: no clock, no processes, no shared memory.
 * Every entry takes now_ns and appends ACTIONS that the caller (the domain
 * agent) executes and then clears.
 *
 * Members are whole VMs (one `vmm` process each) with a weight (cgroup
 * cpu.weight semantics, 1..10000, 100 = default). Between members the
 * core is fair by weighted virtual time: a member's vtime grows by
 * held_ns * 100 / weight, and a free slot goes to the queued member with the
 * smallest vtime. Within a member its vCPUs take free slots in FIFO order;
 * the member's own yield policy moves a slot it holds to a sibling by
 * dom_core_handoff.
 *
 * At a slice end with another member waiting (its queued vCPUs not served
 * by free or revoked slots), the holder is revoked if the best waiting
 * member is not further ahead in vtime; else its slice is renewed and it
 * is probed: it must answer (dom_core_alive) within the grace. Either way a
 * member that stops answering (SIGSTOP, hung) loses the slot at the hard
 * deadline, one slice plus grace at most, even while it is behind its
 * share. The holder's own queued vCPUs never revoke it: a member's seats
 * are alike, so that would only cost a switch.
 *
 * A GANG member (DOM_MEMBER_GANG at join, or dom_core_set_gang) has its
 * queued vCPUs granted together: when it is the least-vtime queued member
 * and holds nothing, it starts only once as many slots as it has queued
 * vCPUs are free, and then takes them all in one event with one common
 * slice end. Until then the free slots are kept for it (the one exception
 * to "no slot free while anyone is queued") and slots whose slice ended
 * are revoked for it as for anyone, so it waits at most about one slice
 * plus grace. A gang's slots end, renew and are revoked together; a vCPU of
 * a running gang that queues again joins it on a free slot, with the
 * gang's slice end. Held time is charged as for anyone, so weighted shares
 * hold; the kept slots' idle time is charged to nobody.
 *
 * Every event comes from an untrusted member (through the agent), so each
 * one is validated against the state: a bad one returns -EINVAL and changes
 * nothing.
 *
 * Cost per event: O(P + P log M) for P slots and M members (the slots are
 * charged and scanned; the queued members sit in a binary min-heap by
 * vtime); never a scan over all vCPUs. A gang adds an O(P) scan of its
 * slots where it is granted or ends a slice (O(P^2) at worst, P <= 256).
 */
#ifndef VMM_SCHED_DOMAIN_CORE_H
#define VMM_SCHED_DOMAIN_CORE_H

#include <stdbool.h>
#include <stdint.h>

#define DOM_WEIGHT_MIN 1
#define DOM_WEIGHT_DEFAULT 100
#define DOM_WEIGHT_MAX 10000
#define DOM_VCPUS_MAX 1024
#define DOM_MEMBER_GANG 1u /* dom_core_join flags: its vCPUs run together */

enum dom_action_kind {
	DOM_ACT_GRANT,   /* (m, v) may run on slot now: write its word, wake it */
	DOM_ACT_REVOKE,  /* slice over, someone waits: (m, v) must release slot */
	DOM_ACT_RECLAIM, /* (m, v) did not release by the hard deadline: slot is
			    taken back in the books (and regranted in the same
			    event); (m, v) is OVERRUN until it releases */
	DOM_ACT_MOVE,    /* the member moved slot to its (m, v) (handoff): the
			    books follow; rewrite both vCPUs' grant words */
	DOM_ACT_PROBE,   /* slice renewed for (m, v) while another member waits:
			    m must answer mem[m].probe_seq (dom_core_alive)
			    by the hard deadline, or the slot is reclaimed */
};

struct dom_action {
	enum dom_action_kind kind;
	int m, v, slot;
};

enum dom_vstate {
	DOM_V_BLOCKED,  /* not runnable (waits, halts, not started) */
	DOM_V_QUEUED,   /* runnable, in its member's FIFO */
	DOM_V_HOLDING,  /* holds a slot */
	DOM_V_OVERRUN,  /* lost its slot at the hard deadline, not back yet */
	DOM_V_DONE,
};

enum dom_release {
	DOM_REL_YIELD, /* still runnable: back of its member's queue */
	DOM_REL_BLOCK, /* waits or halts: runnable again by dom_core_runnable */
	DOM_REL_DONE,  /* the vCPU has ended */
};

struct dom_vcpu {
	enum dom_vstate state;
	int slot;       /* when HOLDING */
	int qprev, qnext; /* FIFO links when QUEUED, -1 = none */
};

struct dom_member {
	bool used;
	bool gang;         /* its queued vCPUs are granted together */
	uint32_t weight;
	int nvcpus;
	struct dom_vcpu *v;
	int qhead, qtail, nqueued;
	int nheld;         /* slots held */
	int heap_idx;      /* -1: not in the heap (nothing queued) */
	uint64_t vtime;    /* weighted virtual time, ns at weight 100 */
	uint64_t vtime_in; /* vtime when it last became busy or changed weight */
	uint64_t held_in;  /* held_ns at that moment */
	uint64_t ncharges; /* charges since then (each may round down by 1) */
	uint64_t held_ns;  /* slot time charged since it joined */
	uint64_t joined_ns;
	uint64_t reclaims; /* hard-deadline reclaims */
	uint32_t probe_seq; /* the last probe sent (wraps; compared by difference) */
	uint64_t probes;   /* probes sent since it joined */
	int noverrun;      /* vCPUs reclaimed and not yet back: while > 0 it is granted
			      nothing more (its queued vCPUs wait outside the heap) */
};

struct dom_slot {
	int m, v;          /* -1: free */
	uint64_t charged;  /* held time charged up to here */
	uint64_t slice_end;
	bool revoking;      /* REVOKE sent, slot not given back yet */
	bool probing;       /* PROBE sent (probe_seq), not answered yet */
	uint32_t probe_seq;
	uint64_t hard_at;   /* either way: when it is taken back regardless */
};

struct dom_params {
	int nslots;          /* P, 1..256 */
	int max_members;     /* 1..4096 */
	uint64_t slice_ns;   /* 0: 10 ms */
	uint64_t grace_ns;   /* revoke -> hard deadline; 0: 5 ms */
};

struct dom_core {
	int nslots, max_members;
	uint64_t slice_ns, grace_ns;
	struct dom_slot *slot;
	struct dom_member *mem;
	int *heap, nheap;    /* member ids with queued vCPUs, min vtime first */
	int nqueued;         /* vCPUs queued, all members */
	int nqueued_ok;      /* ... of members that may be granted (no OVERRUN vCPU) */
	int nrevoking;       /* slots with a revoke outstanding */
	uint64_t min_vtime;  /* monotonic floor: joiners and wakers start here */
	bool deferred;       /* dom_core_defer: no grants until dom_core_commit */
	uint64_t last_now;
	struct dom_action *act;
	int nact, act_cap;
};

/* NULL on bad params (*why gets a static message). */
struct dom_core *dom_core_create(const struct dom_params *p, const char **why);
void dom_core_destroy(struct dom_core *c);

/* Events. Each returns 0, or -EINVAL / -ENOSPC / -ENOMEM with no change. */
/* A new member, all its vCPUs BLOCKED; returns its id (>= 0). Its vtime
 * starts at the domain's floor: no credit for the time before it joined.
 * flags: DOM_MEMBER_GANG or 0; a gang needs nvcpus <= the slots. */
int dom_core_join(struct dom_core *c, uint32_t weight, int nvcpus, uint32_t flags,
		  uint64_t now);
/* Clean leave and death alike: its slots go to others in this same event. */
int dom_core_leave(struct dom_core *c, int m, uint64_t now);
int dom_core_set_weight(struct dom_core *c, int m, uint32_t weight, uint64_t now);
/* A live change to or from gang (`vmm domain set --yield`). Turning it on
 * makes what m holds one gang: its slots take the earliest of their slice
 * ends, and if any is being revoked the others are revoked too. -EINVAL if
 * m has more vCPUs than the domain has slots. */
int dom_core_set_gang(struct dom_core *c, int m, bool gang, uint64_t now);
int dom_core_runnable(struct dom_core *c, int m, int v, uint64_t now);
/* (m, v) gives its slot back (or, when OVERRUN, reports it is out). */
int dom_core_release(struct dom_core *c, int m, int v, enum dom_release why,
		     uint64_t now);
/* Member m moved the slot `from` holds to its sibling `to` (QUEUED or
 * BLOCKED), as its own yield policy decided (directed yield, PV kick). The
 * slot keeps its slice end, and a pending revoke and its hard deadline
 * follow the slot (REVOKE is sent again to `to`): hand-offs never extend a
 * member's hold. `from` goes on as `why` says. */
int dom_core_handoff(struct dom_core *c, int m, int from, int to,
		     enum dom_release why, uint64_t now);
/* Slice ends and hard deadlines up to now. */
void dom_core_tick(struct dom_core *c, uint64_t now);
/* Member m answered its probes up to seq (its acknowledgement word): they
 * stop counting against it. -EINVAL (nothing changes) for a seq it was
 * never sent; an older one than its last probe is fine and clears less. */
int dom_core_alive(struct dom_core *c, int m, uint32_t seq, uint64_t now);
/* The same for the slot (m, v) holds only: a member's seats answer one by
 * one, each once its own vCPU passed a scheduling point (the agent's way,
 * sched/DOMAIN.md "Probe"), so a hung seat is reclaimed while its live
 * siblings keep theirs. -EINVAL for a v out of range or a seq never sent;
 * 0 (nothing cleared) when v holds nothing or was probed later than seq. */
int dom_core_alive_seat(struct dom_core *c, int m, int v, uint32_t seq, uint64_t now);
/* Several events as one: until dom_core_commit the events change the books
 * but grant no free slot; commit then fills them. The agent brackets one
 * doorbell's req words with these, so a gang whose vCPUs ask together is
 * seen asking together (else its first vCPU would start it alone). */
void dom_core_defer(struct dom_core *c);
void dom_core_commit(struct dom_core *c, uint64_t now);

/* The agent itself was stopped (SIGSTOP, a frozen cgroup, a host that
 * did not run it) for gap ns: every revoke's and probe's hard deadline
 * moves out by gap. The members could answer while it was stopped (they
 * write their words; it read nothing), so deadlines that passed in the
 * stall say nothing about them, and a reclaim there would regrant a slot
 * whose holder obeyed. Slice ends stay: long past, they end at the next
 * tick with fresh deadlines. */
void dom_core_shift_deadlines(struct dom_core *c, uint64_t gap);

/* Queries. */
struct dom_member_stats {
	uint32_t weight;
	int nvcpus, nheld, nqueued;
	uint64_t held_ns;   /* slot time since it joined, up to now */
	uint64_t joined_ns;
	uint64_t reclaims;  /* slots taken back at the hard deadline */
	bool gang;
	uint64_t probes;    /* liveness probes sent (slices renewed while others waited) */
};
/* For `vmm domain status`: -EINVAL for an id not in use. Charges nothing. */
int dom_core_member_stats(const struct dom_core *c, int m, uint64_t now,
			  struct dom_member_stats *out);
/* The next instant dom_core_tick has work; UINT64_MAX = none. */
uint64_t dom_core_next_deadline(const struct dom_core *c);
/* NULL if every invariant holds, else what broke (tests: after each event). */
const char *dom_core_check(const struct dom_core *c);
static inline void dom_core_clear_actions(struct dom_core *c) { c->nact = 0; }

#endif
