/*
 * A member's side of a scheduling domain (`vmm run --domain NAME`): join over
 * the agent's socket, then keep this process's co-scheduler's slots (its
 * "seats") in step with the agent's grants. The member's own sched/ core and
 * --yield policy still decide which of its vCPUs runs on a seat it holds;
 * the agent decides which VM holds the domain's CPUs (sched/DOMAIN.md).
 * The agent's liveness probes are answered seat by seat by the vCPUs that
 * hold them, at a scheduling point (member_probe.c), never by the link
 * alone: a seat whose vCPU thread hangs is reclaimed.
 *
 * One thread per domain slot waits (futex_waitv) on that slot's bell and
 * brings seats online when granted there and offline when revoked; it may
 * run on the slot's CPU, the one a grant finds free. One more thread, the
 * link, waits on the agent's a2m word (probes, `waiting`, live settings)
 * and looks at the grant words too, at least every 100 ms. The co-scheduler's slot callback, on whatever thread runs the
 * scheduler, asks for seats and gives them back (req words, doorbell).
 *
 * If the agent hangs (its beat stops for 1 s while a seat is asked for),
 * the member keeps the seats it holds where they were granted and waits for
 * the rest, obeying what the agent wrote, until the beat moves again
 * (member_fallback.c). If the agent dies (its socket closes), the member
 * keeps the seats it held, on their slots' CPUs, under the host scheduler,
 * and only if no new agent took it back within 5 s brings every seat
 * online on the domain's CPUs: it never waits for good for a grant that
 * cannot come. The report says so from when.
 * Every second it looks for a new agent of the domain's name and, when one
 * answers, joins it as a new member (nothing of the old books carries over:
 * fresh segments, vtime at the floor) and gives it its seats back.
 */
#ifndef VMM_DOMAIN_MEMBER_LINK_H
#define VMM_DOMAIN_MEMBER_LINK_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "sched/domain_proto.h"

struct sched;
struct dlink;

struct dlink_params {
	const char *domain;
	int nvcpus;
	uint32_t weight;
	const char *policy;
	const char *vm_name; /* may be "" */
	bool slice_floor;    /* sched_set_slice_floor while another seat waits */
};

struct dlink_info { /* what JOIN_OK said */
	int member, nslots, nseats;
	uint64_t slice_ns, grace_ns, epoch;
	int slot_cpu[DOM_SLOTS_MAX];
	cpu_set_t cpus; /* the domain's CPUs */
	int nvcpus_total; /* the VM's vCPUs */
	int doorbell;   /* the fd scheduler threads write (for their seccomp filters) */
};

struct dlink_report {
	bool lost;            /* the agent went away (maybe taken back since: rejoins) */
	uint64_t lost_ns;     /* when (CLOCK_MONOTONIC) */
	char lost_why[96];
	int lost_held;        /* seats online when it went: kept until a new agent or alone_ns */
	uint64_t alone_ns;    /* every seat online from then (no new agent); 0: never */
	uint64_t grants, revokes, reclaims;
	uint64_t policy_changes;
	uint64_t rejoins;     /* taken back by a new agent */
	uint64_t rejoin_ns;   /* the last time */
	uint64_t probes;      /* liveness probes answered, a seat each, by its vCPU */
	/* Agent stalls: its beat stopped for 1 s while a seat was asked for;
	 * the member kept the seats it held and nothing more (member_fallback.c). */
	uint64_t stalls;
	uint64_t stall_ns;     /* the last one's start (CLOCK_MONOTONIC) */
	uint64_t stall_end_ns; /* when its beat moved again; 0: not yet */
	int stall_held;        /* seats online when it started */
	int stall_most;        /* most seats online during it: never above stall_held */
};

/* Connects and joins; -ENOENT: no such domain, -EACCES: not allowed in;
 * why says it in one line. */
int dlink_join(struct dlink **out, const struct dlink_params *p, struct dlink_info *info, char *why,
	       size_t len);
/* Ties the link to the co-scheduler (created with slots_offline and
 * npcpus == info.nseats) and starts the link thread; call before
 * sched_start. A policy change from the agent is applied with
 * sched_set_policy; hooks->on_policy is told after. hooks->sandbox runs
 * first on the new thread (its seccomp filter); if it fails the thread
 * ends and dlink_start returns its error. */
struct dlink_hooks {
	void (*on_policy)(void *ctx, const char *name); /* after a live change; may be NULL */
	void (*on_weight)(void *ctx, uint32_t weight);  /* the agent changed the weight; may be NULL */
	int (*sandbox)(void *ctx, int sock);            /* run first on the link thread; may be NULL */
	void *ctx;
};
int dlink_start(struct dlink *l, struct sched *s, const struct dlink_hooks *h);
/* Moves the link thread to the CPUs of set (--loop-cpu: it wakes every
 * 100 ms, with the event loop); now gets the affinity it has after.
 * -ESRCH when the thread is not running. */
int dlink_pin(struct dlink *l, const cpu_set_t *set, cpu_set_t *now);
/* Gives every seat back, says LEAVE, ends the thread. */
void dlink_stop(struct dlink *l);
void dlink_destroy(struct dlink *l);
void dlink_get_report(struct dlink *l, struct dlink_report *r);

#ifdef VMM_TEST_HOOKS
/* Test builds only: called by a slot thread between its look at the grant
 * words and the online and offline calls it led to (the window a
 * preempted slot thread opens), so tests/unit/test_domain_link.c can hold
 * it open. */
extern void (*dlink_test_gap)(int slot);
#endif



#endif
