/*
 * A member whose agent stalls (sched/DOMAIN.md, "Agent stall"): the agent's
 * beat has not moved for LINK_HUNG_NS while a seat is asked for. Stopped,
 * frozen or hung, the agent still owns the books, and they still say which
 * domain slot each member's held seats are on: disjoint across members. So
 * the fall-back is the member's own share and no more: the seats it holds
 * stay online where the agent granted them (kept even while idle, and no
 * lease ends them: nobody could regrant them), the seats it asks for stay
 * asked, and whatever the agent did write before it stopped (a revoke, a
 * reclaim, a probe) is obeyed as ever. Every member of the domain doing
 * the same keeps the domain's bound, where bringing every seat online (as
 * a dead agent's orphans do, member_link.c's go_alone) ran each member's
 * seats all at once on the domain's CPUs.
 *
 * When the beat moves again the same agent is back: its books still match
 * what the member holds and asks for, so the member just leaves the
 * stall; nothing is rejoined. (The agent, for its part, moves the hard
 * deadlines that fell in its stall out by it: agent_members.c's
 * agent_stalled.) A stalled agent that dies is an agent lost.
 */
#include <stdio.h>

#include "vmm/domain/member_int.h"

/* Seats online in the co-scheduler by the agent's grants: held, or going
 * off after a revoke. mu held. */
static int seats_online(const struct dlink *l)
{
	int n = 0;
	for (int j = 0; j < l->nlive; j++)
		n += l->seat[j].st == SEAT_HELD || l->seat[j].st == SEAT_GIVING;
	return n;
}

static bool asking(const struct dlink *l)
{
	for (int j = 0; j < l->nlive; j++)
		if (l->seat[j].st == SEAT_ASKED)
			return true;
	return false;
}

void dfall_reset(struct dlink *l, uint64_t now)
{
	l->beat = __atomic_load_n(&dom_shm_live(&l->shm)->beat, __ATOMIC_ACQUIRE);
	l->beat_at = now;
	l->stalled = false;
}

/*
 * A dead agent's books die with it, but what they said still holds: no
 * other member runs on the slots this one's held seats are on. So an
 * orphan keeps those (and the vCPUs asking for more wait) until a new
 * agent takes it back: rejoining takes every seat offline before that
 * agent grants anything (its quiet start, agent.c). Only if none comes
 * within LINK_ALONE_NS does every seat come online (member_link.c's
 * go_alone): then nothing bounds the domain.
 */
void dfall_lost(struct dlink *l, const char *why, uint64_t now)
{
	l->lost = true;
	l->lost_ns = now;
	snprintf(l->lost_why, sizeof(l->lost_why), "%s", why);
	if (l->stalled) /* it ended stalled */
		l->rep.stall_end_ns = now;
	l->stalled = false;
	l->rep.lost_held = seats_online(l);
	fprintf(stderr, "vmm: domain %s: agent lost: %s; this VM keeps the %d seat%s it held, under the host scheduler, "
			"until a new agent takes it back (every seat after %.0f s without one)\n",
		l->domain, why, l->rep.lost_held, l->rep.lost_held == 1 ? "" : "s", (double)LINK_ALONE_NS / 1e9);
}

bool dfall_look(struct dlink *l, uint64_t now)
{
	uint32_t b = __atomic_load_n(&dom_shm_live(&l->shm)->beat, __ATOMIC_ACQUIRE);
	if (b != l->beat) {
		l->beat = b;
		l->beat_at = now;
		if (l->stalled) {
			l->stalled = false;
			l->rep.stall_end_ns = now;
			fprintf(stderr, "vmm: domain %s: the agent beats again after %.3f s; back to its grants\n",
				l->domain, (double)(now - l->rep.stall_ns) / 1e9);
		}
		return false;
	}
	if (l->stalled) {
		int n = seats_online(l);
		if (n > l->rep.stall_most)
			l->rep.stall_most = n;
		return true;
	}
	if (!asking(l) || now - l->beat_at <= LINK_HUNG_NS)
		return false;
	l->stalled = true;
	l->rep.stalls++;
	l->rep.stall_ns = now;
	l->rep.stall_end_ns = 0;
	l->rep.stall_held = l->rep.stall_most = seats_online(l);
	fprintf(stderr, "vmm: domain %s: the agent stopped answering (no beat for %.1f s): this VM keeps the %d seat%s "
			"it holds, on the CPUs the agent granted, and waits for the rest\n",
		l->domain, (double)(now - l->beat_at) / 1e9, l->rep.stall_held, l->rep.stall_held == 1 ? "" : "s");
	return true;
}
