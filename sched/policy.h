/*
 * One interface for every yield policy. Each policy is a small file that
 * fills a struct sched_policy; sched_policy_find() looks one up by name.
 * Any method may be NULL, meaning the default in brackets.
 */
#ifndef VMM_SCHED_POLICY_H
#define VMM_SCHED_POLICY_H

#include <stdint.h>

#include "sched/core.h"

enum sched_slice_verdict { SCHED_SLICE_PREEMPT, SCHED_SLICE_CONTINUE };
enum sched_kick_verdict {
	SCHED_KICK_FRONT,   /* woken vCPU goes to the front of the queue */
	SCHED_KICK_BACK,
	SCHED_KICK_HANDOFF, /* the running kicker gives it its slot now */
};

struct sched_policy {
	const char *name;
	const char *help;
	int (*init)(struct sched_core *c);  /* [nothing]; <0 fails create */
	void (*fini)(struct sched_core *c);
	/* v (RUNNING) spins, waiting for target (-1: unknown). Return the
	 * RUNNABLE vCPU that gets v's slot, or -1 to let v keep it. [-1] */
	int (*on_spin)(struct sched_core *c, int v, int target, uint64_t now);
	/* A RUNNABLE vCPU for a free slot, or -1 to leave it empty. [head]
	 * slot is the one on offer; the core may grant the pick another free
	 * slot, the one it last ran on (core_sticky.c). */
	int (*pick_next)(struct sched_core *c, int slot, uint64_t now);
	/* v's slice is over and someone is RUNNABLE. [PREEMPT] */
	enum sched_slice_verdict (*on_slice_end)(struct sched_core *c, int v,
						 uint64_t now);
	/* from (RUNNING, or -1 for the VMM) woke to from WAITING/IDLE. [FRONT] */
	enum sched_kick_verdict (*on_kick)(struct sched_core *c, int from, int to);
	void (*tick)(struct sched_core *c, uint64_t now);   /* [nothing] */
	uint64_t (*deadline)(const struct sched_core *c);   /* [UINT64_MAX] */
};

const struct sched_policy *sched_policy_find(const char *name);
/* NULL-terminated list of every name, for help texts and error messages. */
const char *const *sched_policy_names(void);

/* Shared by directed and holder: the next non-spinning RUNNABLE vCPU of v's
 * VM after the last one boosted (a spinning one only if that is all there
 * is), or -1. */
int sched_directed_candidate(struct sched_core *c, int v, int *last_boost);

/* gang: is VM vm in the set that owns the slots now? (false for any other
 * policy) */
bool sched_gang_in_set(const struct sched_core *c, int vm);

extern const struct sched_policy sched_policy_none, sched_policy_random,
	sched_policy_directed, sched_policy_holder, sched_policy_pv,
	sched_policy_gang;

#endif
