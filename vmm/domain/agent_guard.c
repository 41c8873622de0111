/*
 * The agent's guard against its own clients, the way a host daemon guards
 * itself (libvirtd, containerd): who may change what, checked with the
 * kernel's word on the caller (SO_PEERCRED at accept), and how much any
 * one client may take of the agent's time and room. A client over a bound
 * is counted and ejected; nobody else notices (SECURITY.md).
 */
#include "vmm/domain/agent_guard.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "sched/domain_core.h"

/* A connection that has not joined within this is closed: status and set
 * clients ask at once, members JOIN right after connect(), so only a
 * client that holds a slot doing nothing waits this long. */
#define GUARD_JOIN_NS (3000 * 1000000ull)
/* The window the doorbell and req-word counts are taken over. */
#define GUARD_WINDOW_NS (1000 * 1000000ull)
/* Per seat and second: four lease ends a slice, a block and a wake every
 * 200 us of a seat's time; and a floor for the whole member. An honest
 * member rings once per changed batch of words; a flood (one eventfd
 * write in a loop: about a million a second) is far past this. */
#define GUARD_BELLS_BASE 10000ull
#define GUARD_BELLS_PER_SEAT 5000ull
/* Words that fit nothing: a few come from races an honest member cannot
 * avoid (a revoke and a give-back crossing); this many is a broken or
 * hostile member. */
#define GUARD_BAD_WORDS_MAX 256

static bool privileged(const struct agent *a, uid_t uid)
{
	return uid == 0 || uid == a->owner;
}

int agent_guard_accept(struct agent *a, uid_t uid)
{
	if (privileged(a, uid))
		return 0;
	int n = 0;
	for (int c = 0; c < a->max_conns; c++)
		n += a->conn[c].fd >= 0 && a->conn[c].uid == uid;
	if (n < a->uid_conns)
		return 0;
	a->over_uid_conns++;
	return -EUSERS;
}

int agent_guard_join(const struct agent *a, int c, uint32_t weight, char *why, size_t len)
{
	uid_t uid = a->conn[c].uid;
	if (privileged(a, uid) || weight <= DOM_WEIGHT_DEFAULT)
		return 0;
	snprintf(why, len, "weight %u: above %u only for the domain's owner (uid %u) or root; ask them for `vmm domain set`",
		 weight, DOM_WEIGHT_DEFAULT, (unsigned)a->owner);
	return -EPERM;
}

int agent_guard_set(const struct agent *a, int c, int m, const struct dom_msg_set *s, char *why, size_t len)
{
	const struct agent_conn *k = &a->conn[c];
	if (!privileged(a, k->uid)) {
		snprintf(why, len, "set: only the domain's owner (uid %u) or root may change a member, not uid %u",
			 (unsigned)a->owner, (unsigned)k->uid);
		return -EPERM;
	}
	/* a VM's own process is the one party that gains from its weight */
	if (m >= 0 && (s->what & DOM_SET_WEIGHT) && k->pid == a->mem[m].pid && s->weight > a->core->mem[m].weight) {
		snprintf(why, len, "set: a member cannot raise its own weight (%u to %u)", a->core->mem[m].weight,
			 s->weight);
		return -EPERM;
	}
	return 0;
}

static uint64_t bells_bound(const struct agent *a, int m)
{
	uint64_t per_seat = GUARD_BELLS_PER_SEAT + 4ull * 1000000000ull / (a->core->slice_ns ? a->core->slice_ns : 1);
	return GUARD_BELLS_BASE + per_seat * (uint64_t)a->mem[m].nseats;
}

const char *agent_guard_bell(struct agent *a, int m, uint64_t rings, uint64_t rewrites, uint64_t now)
{
	struct agent_member *am = &a->mem[m];
	if (now - am->win_start >= GUARD_WINDOW_NS) {
		am->win_start = now;
		am->win_rings = am->win_rewrites = 0;
	}
	am->win_rings += rings;
	am->win_rewrites += rewrites;
	uint64_t bound = bells_bound(a, m);
	bool rings_over = am->win_rings > bound;
	if (rings_over || am->win_rewrites > bound) {
		snprintf(am->eject_why, sizeof(am->eject_why), "%s %llu times within 1 s (bound %llu)",
			 rings_over ? "rang its doorbell" : "rewrote its req words",
			 (unsigned long long)(rings_over ? am->win_rings : am->win_rewrites), (unsigned long long)bound);
		a->ejected_bells++;
		return am->eject_why;
	}
	return agent_guard_words(a, m);
}

const char *agent_guard_words(struct agent *a, int m)
{
	struct agent_member *am = &a->mem[m];
	if (am->bad_words <= GUARD_BAD_WORDS_MAX)
		return NULL;
	snprintf(am->eject_why, sizeof(am->eject_why), "%llu req words that fit nothing (bound %d)",
		 (unsigned long long)am->bad_words, GUARD_BAD_WORDS_MAX);
	a->ejected_words++;
	return am->eject_why;
}

uint64_t agent_guard_join_by(uint64_t opened_ns)
{
	return opened_ns + GUARD_JOIN_NS;
}

uint64_t agent_guard_tick(struct agent *a, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	for (int c = 0; c < a->max_conns; c++) {
		struct agent_conn *k = &a->conn[c];
		if (k->fd < 0 || k->member >= 0)
			continue;
		uint64_t due = agent_guard_join_by(k->opened_ns);
		if (now >= due) {
			fprintf(stderr, "vmm: domain %s: closed the connection of pid %d (uid %u): no JOIN within %llu ms\n",
				a->o->name, (int)k->pid, (unsigned)k->uid, (unsigned long long)(GUARD_JOIN_NS / 1000000));
			a->timed_out++;
			agent_conn_close(a, c);
		} else if (due < next) {
			next = due;
		}
	}
	return next;
}
