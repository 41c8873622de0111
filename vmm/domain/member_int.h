/*
 * The member's link, shared by member_link.c (join, seats, slot threads,
 * the link thread, rejoin), member_probe.c (the answers to the agent's
 * liveness probes, given by the vCPUs) and member_fallback.c (a stalled
 * agent: the seats held and nothing more). Seat states: see
 * member_link.c's head.
 */
#ifndef VMM_DOMAIN_MEMBER_INT_H
#define VMM_DOMAIN_MEMBER_INT_H

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "vmm/domain/member_link.h"
#include "vmm/domain/shm.h"

#define LINK_WAKE_NS (100 * 1000000ull)  /* how often the link looks at the agent unasked */
#define LINK_HUNG_NS (1000 * 1000000ull) /* no beat for this long while asking: agent stalled */
#define LINK_REJOIN_NS (1000 * 1000000ull) /* how often an orphan looks for a new agent */
#define LINK_ALONE_NS (5000 * 1000000ull) /* an orphan no new agent took back: every seat online */

enum seat_state { SEAT_FREE, SEAT_ASKED, SEAT_HELD, SEAT_GIVING };

struct seat {
	enum seat_state st;
	uint32_t gen;  /* HELD/GIVING: the grant's; FREE/ASKED: the last given back */
	int slot;
	bool reclaimed; /* this grant was taken back at the hard deadline (counted once) */
	uint64_t lease;  /* HELD: the slice end last given to the co-scheduler */
};

struct slot_thread {
	struct dlink *l;
	int slot;
	pthread_t thr;
	int start_rc;
	cpu_set_t outside; /* the CPUs it may use outside the domain */
	int cpu;           /* the slot's CPU it is allowed on (a new agent may move it) */
};

struct dlink {
	struct dlink_info info;
	char domain[DOM_NAME_MAX], vm_name[DOM_NAME_MAX];
	uint32_t weight;
	bool slice_floor;
	int nlocal;          /* the co-scheduler's slots: seats 0..nlocal-1 */
	int nlive;           /* of those, the ones the agent knows (a new agent may have fewer slots) */
	int sock;
	struct dom_shm shm;
	struct sched *s;
	pthread_t thr;
	bool thr_on;
	struct dlink_hooks hooks;
	sem_t started;
	int start_rc;
	pthread_mutex_t mu;
	/* Shared by a slot thread from its look at the grant words to the end
	 * of the online/offline calls it led to; exclusive for the link
	 * thread's changes to every seat (agent lost, new agent). Never a
	 * mutex between slot threads: one that woke a vCPU onto its own CPU
	 * is preempted by it, and would hold the other slots' grants. */
	pthread_rwlock_t apply;
	struct slot_thread *sthr; /* [info.nslots] */
	int nsthr;           /* started (joined at the end) */
	int nslot_threads;   /* slots with a thread of their own: the first
				info.nslots of the join, fixed before any thread
				starts; the link serves any a new agent adds */
	struct seat *seat;
	int want;            /* the co-scheduler's demand */
	bool lost;
	bool alone;          /* lost, and every seat online (go_alone) */
	/* The agent's beat as the link last saw it move (member_fallback.c);
	 * stalled: it stopped for LINK_HUNG_NS while a seat was asked for. */
	uint32_t beat;
	uint64_t beat_at;
	bool stalled;
	uint64_t lost_ns;
	char lost_why[96];
	uint32_t policy_seen, weight_seen;
	struct dlink_report rep;
	/* Probes (member_probe.c): the link bumps probe_want at each probe it
	 * sees; a vCPU at a scheduling point on seat j whose probe_done[j]
	 * differs answers on seat j's line. */
	_Atomic uint32_t probe_want;
	_Atomic uint32_t *probe_done; /* [nlocal] */
	uint32_t probe_seen;          /* the agent's probe word the link last acted on; under mu */
	_Atomic uint32_t local; /* bumped (and woken) to make the link thread look */
	atomic_bool stopping;
};

/* What one look at the agent's words found to do, applied outside l->mu. */
struct todo {
	int online[DOM_SLOTS_MAX], ncpu[DOM_SLOTS_MAX], non;
	uint64_t until[DOM_SLOTS_MAX];
	int offline[DOM_SLOTS_MAX], noff;
	uint32_t offgen[DOM_SLOTS_MAX]; /* the grant each offline is for */
	char policy[DOM_NAME_MAX];
	uint32_t policy_gen;
	bool give_back; /* a grant was given back here, not by SLOT_OFF: ring */
};

/* Shared words (the agent's) to wait on beside the link's own. */
#define WAIT_SHARED_MAX 127 /* futex_waitv takes 128 */
struct waitset {
	const uint32_t *word[WAIT_SHARED_MAX];
	uint32_t val[WAIT_SHARED_MAX];
	int n;
};


/* member_link.c: the seats' books and the link thread */
uint64_t dlink_now_ns(void);
void dlink_ring(struct dlink *l);                 /* the agent's doorbell */
bool dlink_seat_off(struct dlink *l, int j);      /* l->mu held; true: a req word changed */
void dlink_wake_all(struct dlink *l);             /* every thread of the link looks again */
void dlink_read_grants(struct dlink *l, struct todo *t, int only); /* l->mu held */
void dlink_apply_todo(struct dlink *l, const struct todo *t);
/* member_slots.c: the slot threads */
int dlink_wait_words(const struct waitset *ws, const _Atomic uint32_t *local, uint32_t b, uint64_t ns);
void dlink_serve_slot(struct dlink *l, int slot, struct waitset *ws);
int dlink_start_slot_threads(struct dlink *l);
/* member_join.c: a new agent's JOIN; true: taken back */
bool dlink_try_rejoin(struct dlink *l);

/* member_fallback.c (all three with mu held) */
/* The agent's beat read from now on (a join or a rejoin): no stall. */
void dfall_reset(struct dlink *l, uint64_t now);
/* The link thread's look at the beat: true while the agent is stalled
 * (entered or left here, and said so on stderr and in the report); then
 * the member keeps the seats it holds, idle or not, and nothing more. */
bool dfall_look(struct dlink *l, uint64_t now);
/* The agent ended (its socket closed): lost from now, keeping the seats
 * held, and said so on stderr and in the report. */
void dfall_lost(struct dlink *l, const char *why, uint64_t now);

/* member_probe.c */
/* sched_set_point_cb's callback: a vCPU passed a scheduling point on seat j. */
void dprobe_point(void *ctx, int seat);
/* The link thread, at every look: a new probe makes every held seat's
 * vCPU pass a point (sched_slot_poke); an online seat nobody holds is
 * answered here (no vCPU there to hang). Takes mu; call without it. */
void dprobe_look(struct dlink *l);
/* A new agent's segments are in (mu held): its probe word is the start. */
void dprobe_rejoined(struct dlink *l);

#endif
