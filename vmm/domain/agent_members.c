/*
 * What members do to the agent's books: join (segments, doorbell, pidfd),
 * leave (death and a clean leave alike), doorbells (their req words
 * reconciled with the books), and the core's actions written into grant
 * words. Every req word is untrusted: loaded once, decoded, and acted on
 * only when it fits the books (sched/DOMAIN.md).
 */
#include "vmm/domain/agent_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

/* The member's process as a pidfd. SO_PEERPIDFD (Linux 6.5) names the very
 * process that connected; pidfd_open of SO_PEERCRED's pid is the fallback,
 * and then the connection being still open says the pid was not reused. */
static int peer_pidfd(int fd, pid_t pid)
{
	int pidfd = -1;
	socklen_t l = sizeof(pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &l) == 0 && pidfd >= 0)
		return pidfd;
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return pidfd < 0 ? -errno : pidfd;
}

static uint32_t next_gen(struct agent_member *am)
{
	am->next_gen = (am->next_gen + 1) & DOM_GEN_MASK;
	if (!am->next_gen)
		am->next_gen = 1; /* 0 is "never granted" in req words */
	return am->next_gen;
}

static void member_free(struct agent *a, int m)
{
	struct agent_member *am = &a->mem[m];
	if (am->bell >= 0) {
		agent_cancel(a, agent_tag(AEV_BELL, am->gen, m));
		close(am->bell);
	}
	if (am->pidfd >= 0) {
		agent_cancel(a, agent_tag(AEV_PID, am->gen, m));
		close(am->pidfd);
	}
	dom_shm_destroy(&am->shm);
	free(am->seen);
	free(am->cur_gen);
	uint32_t gen = am->gen + 1;
	*am = (struct agent_member){ .conn = -1, .pidfd = -1, .bell = -1, .gen = gen };
}

int agent_join(struct agent *a, int c, const struct dom_msg_join *j)
{
	struct agent_conn *k = &a->conn[c];
	uint64_t now = agent_now();
	int nseats = (int)j->nseats < a->o->nslots ? (int)j->nseats : a->o->nslots;
	int m = dom_core_join(a->core, j->weight, nseats, (j->flags & DOM_JOIN_GANG) ? DOM_MEMBER_GANG : 0, now);
	if (m < 0) {
		agent_send_error(k->fd, m, m == -ENOSPC ? "the domain is full (%d members)" : "cannot join (%d)",
				 m == -ENOSPC ? a->max_members : m);
		return m;
	}
	agent_apply(a);
	struct agent_member *am = &a->mem[m];
	uint32_t gen = am->gen;
	*am = (struct agent_member){ .conn = c, .pid = k->pid, .pidfd = -1, .bell = -1, .gen = gen,
				     .nseats = nseats, .nvcpus = (int)j->nvcpus };
	memcpy(am->policy, j->policy, sizeof(am->policy));
	memcpy(am->vm_name, j->vm_name, sizeof(am->vm_name));
	am->seen = calloc((size_t)nseats, sizeof(*am->seen));
	am->cur_gen = calloc((size_t)nseats, sizeof(*am->cur_gen));
	int rc = am->seen && am->cur_gen ? 0 : -ENOMEM;
	if (!rc)
		rc = dom_shm_create(&am->shm, nseats, (int)j->nvcpus, a->epoch);
	if (!rc) {
		struct dom_grant_live *live = dom_shm_live(&am->shm);
		snprintf(live->policy, sizeof(live->policy), "%s", j->policy);
		live->waiting = a->waiting;
		live->weight = j->weight;
		am->bell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		rc = am->bell < 0 ? -errno : 0;
	}
	if (!rc) {
		am->pidfd = peer_pidfd(k->fd, k->pid);
		rc = am->pidfd < 0 ? am->pidfd : 0;
	}
	/* before JOIN_OK: every thread the member starts after it is born confined */
	if (!rc) {
		rc = dom_confine_member(&a->confine, k->pid, j->weight);
		if (rc)
			fprintf(a->log, "vmm: domain %s: cannot put pid %d into its cgroup: %s\n", a->o->name, (int)k->pid,
				strerror(-rc));
	}
	struct dom_msg_join_ok ok;
	if (!rc) {
		int n = dom_proto_join_ok(&ok, (uint32_t)m, (uint32_t)a->o->nslots, (uint32_t)nseats, a->epoch,
					  a->core->slice_ns, a->core->grace_ns, a->o->slot_cpu);
		int fds[3] = { am->shm.req_fd, am->shm.grant_fd, am->bell };
		rc = n < 0 ? n : agent_send(k->fd, &ok, (size_t)n, fds, 3);
	}
	if (!rc)
		rc = agent_read(a, am->bell, &am->bell_buf, sizeof(am->bell_buf), agent_tag(AEV_BELL, am->gen, m));
	if (!rc)
		rc = agent_poll(a, am->pidfd, agent_tag(AEV_PID, am->gen, m));
	if (rc) {
		fprintf(a->log, "vmm: domain %s: cannot take pid %d in: %s\n", a->o->name, (int)k->pid, strerror(-rc));
		agent_send_error(k->fd, rc, "the agent could not set up the membership: %s", strerror(-rc));
		dom_core_leave(a->core, m, agent_now());
		agent_apply(a);
		dom_confine_release(&a->confine, k->pid);
		member_free(a, m);
		return rc;
	}
	dom_shm_close_fds(&am->shm); /* the member has them now */
	k->member = m;
	a->joins++;
	a->nmembers++;
	fprintf(a->log, "vmm: domain %s: member %d joined: pid %d, uid %u, vm '%s', %u vCPUs on %d seats, weight %u, %s%s\n",
		a->o->name, m, (int)k->pid, (unsigned)k->uid, am->vm_name, j->nvcpus, nseats, j->weight, am->policy,
		(j->flags & DOM_JOIN_GANG) ? " (seats granted together)" : "");
	return 0;
}

void agent_leave(struct agent *a, int m, const char *why)
{
	struct agent_member *am = &a->mem[m];
	if (am->conn < 0)
		return;
	struct dom_member_stats st = { 0 };
	uint64_t now = agent_now();
	dom_core_member_stats(a->core, m, now, &st);
	/* its slots are regranted in this same event */
	dom_core_leave(a->core, m, now);
	agent_apply(a);
	dom_confine_release(&a->confine, am->pid); /* once its process has ended */
	int c = am->conn;
	if (c >= 0 && a->conn[c].fd >= 0 && a->conn[c].member == m)
		agent_conn_close(a, c);
	fprintf(a->log, "vmm: domain %s: member %d (pid %d) left: %s; slot time %.3f s, %llu reclaims, %llu revokes obeyed in %.2f ms mean, %.2f ms max\n",
		a->o->name, m, (int)am->pid, why, (double)st.held_ns / 1e9, (unsigned long long)st.reclaims,
		(unsigned long long)am->gave_back, am->gave_back ? (double)am->gave_back_ns / (double)am->gave_back / 1e6 : 0.0,
		(double)am->gave_back_max_ns / 1e6);
	member_free(a, m);
	a->leaves++;
	a->nmembers--;
}

int agent_doorbell(struct agent *a, int m)
{
	struct agent_member *am = &a->mem[m];
	uint64_t now = agent_now();
	int changed = 0;
	/* One doorbell is one decision: a gang's seats that ask together
	 * start together. */
	dom_core_defer(a->core);
	for (int j = 0; j < am->nseats; j++) {
		uint32_t w = __atomic_load_n(dom_shm_req(&am->shm, j), __ATOMIC_ACQUIRE);
		if (w == am->seen[j])
			continue;
		am->seen[j] = w;
		changed++;
		int want = dom_req_want(w);
		uint32_t gen = dom_req_gen(w);
		enum dom_vstate st = a->core->mem[m].v[j].state;
		int rc = -EINVAL;
		if (want >= 0 && (st == DOM_V_HOLDING || st == DOM_V_OVERRUN) && gen == am->cur_gen[j]) {
			enum dom_release why = want == DOM_WANT_SLOT ? DOM_REL_YIELD
					       : want == DOM_WANT_DONE ? DOM_REL_DONE : DOM_REL_BLOCK;
			const struct dom_slot *sl = st == DOM_V_HOLDING ? &a->core->slot[a->core->mem[m].v[j].slot] : NULL;
			if (sl && sl->revoking) { /* how quickly members obey, for status */
				uint64_t took = now - (sl->hard_at - a->core->grace_ns);
				am->gave_back++;
				am->gave_back_ns += took;
				if (took > am->gave_back_max_ns)
					am->gave_back_max_ns = took;
			}
			/* no wake: the member gave it back and knows */
			__atomic_store_n(dom_shm_grant(&am->shm, j), 0, __ATOMIC_RELEASE);
			rc = dom_core_release(a->core, m, j, why, now);
		} else if (want == DOM_WANT_SLOT && st == DOM_V_BLOCKED) {
			rc = dom_core_runnable(a->core, m, j, now);
		} else if (want == DOM_WANT_NONE || (want == DOM_WANT_SLOT && st == DOM_V_QUEUED)) {
			rc = 0; /* a state the books already have */
		}
		if (rc)
			am->bad_words++;
	}
	dom_core_commit(a->core, now);
	agent_apply(a);
	return changed;
}

/*
 * Whether a seat waits for a slot (queued seats mean every slot is held):
 * told to every member, and the holders are woken when it becomes true, so
 * seats they keep idle come back at once and their leases end their
 * slices. One word for the whole domain, not one per member excluding its
 * own queued seats: that one flipped at nearly every switch (~50 times a
 * second per member) and took the slice floor off and on as often, each
 * time ending slices past their own length (measured, the shootdown 2-VM
 * cell: 0.930 of one process with it, 0.956 with this). The cost of this:
 * a member whose own seat is the only one waiting gives a held seat back
 * at its lease's end and is granted it again. O(M) only when it changes.
 */
static void publish_waiting(struct agent *a)
{
	bool w = a->core->nqueued_ok > 0;
	if (w == a->waiting)
		return;
	a->waiting = w;
	for (int m = 0; m < a->max_members; m++)
		if (a->mem[m].conn >= 0 && a->mem[m].shm.grant)
			__atomic_store_n(&dom_shm_live(&a->mem[m].shm)->waiting, w, __ATOMIC_RELEASE);
	for (int s = 0; w && s < a->core->nslots; s++)
		if (a->core->slot[s].m >= 0)
			agent_mark_dirty(a, a->core->slot[s].m);
}

void agent_mark_dirty(struct agent *a, int m)
{
	if (!a->mem[m].dirty) {
		a->mem[m].dirty = true;
		a->dirty[a->ndirty++] = m;
	}
}

/*
 * After every grant word of this batch is written: each grant, revoke or
 * reclaim wakes its member's thread for that slot (DOMAIN.md, "The hot
 * paths"), not the member's link thread, which may be waiting for a CPU that
 * runs a vCPU while the slot's own CPU is the one just freed. A member named
 * twice on one slot is woken twice: rare, and harmless.
 */
static void ring_slot_bells(struct agent *a)
{
	const struct dom_core *c = a->core;
	for (int i = 0; i < c->nact; i++) {
		const struct dom_action *x = &c->act[i];
		struct agent_member *am = &a->mem[x->m];
		if (am->conn < 0 || !am->shm.grant)
			continue;
		if (x->kind != DOM_ACT_GRANT && x->kind != DOM_ACT_REVOKE && x->kind != DOM_ACT_RECLAIM)
			continue;
		uint32_t *bell = dom_shm_slot_bell(&am->shm, x->slot);
		if (!bell)
			continue;
		__atomic_fetch_add(bell, 1, __ATOMIC_RELEASE);
		dom_futex_wake(bell);
	}
}

/* Each held slot's slice end, renewed or not, on its holder's seat line
 * (no wake: the member reads it when it needs it). O(P). */
static void publish_leases(struct agent *a)
{
	const struct dom_core *c = a->core;
	for (int s = 0; s < c->nslots; s++) {
		const struct dom_slot *sl = &c->slot[s];
		if (sl->m < 0 || a->mem[sl->m].conn < 0 || !a->mem[sl->m].shm.grant)
			continue;
		uint64_t *u = dom_shm_grant_until(&a->mem[sl->m].shm, sl->v);
		if (u && __atomic_load_n(u, __ATOMIC_RELAXED) != sl->slice_end)
			__atomic_store_n(u, sl->slice_end, __ATOMIC_RELAXED);
	}
}

void agent_apply(struct agent *a)
{
	struct dom_core *c = a->core;
	for (int i = 0; i < c->nact; i++) {
		const struct dom_action *x = &c->act[i];
		struct agent_member *am = &a->mem[x->m];
		if (am->conn < 0 || !am->shm.grant)
			continue; /* a member on its way in or out: nothing to write */
		uint32_t *w = dom_shm_grant(&am->shm, x->v);
		switch (x->kind) {
		case DOM_ACT_GRANT:
			__atomic_store_n(dom_shm_grant_until(&am->shm, x->v), c->slot[x->slot].slice_end, __ATOMIC_RELAXED);
			am->cur_gen[x->v] = next_gen(am);
			__atomic_store_n(w, dom_grant_word(am->cur_gen[x->v], 0, x->slot), __ATOMIC_RELEASE);
			break;
		case DOM_ACT_REVOKE:
			__atomic_store_n(w, dom_grant_word(am->cur_gen[x->v], DOM_GRANT_REVOKE, x->slot), __ATOMIC_RELEASE);
			break;
		case DOM_ACT_RECLAIM:
			__atomic_store_n(w, dom_grant_word(am->cur_gen[x->v], DOM_GRANT_RECLAIMED, x->slot),
					 __ATOMIC_RELEASE);
			break;
		case DOM_ACT_MOVE: /* members move slots among their own vCPUs themselves */
			break;
		case DOM_ACT_PROBE: /* the latest probe answers all before it */
			__atomic_store_n(&dom_shm_live(&am->shm)->probe, c->mem[x->m].probe_seq, __ATOMIC_RELEASE);
			agent_mark_dirty(a, x->m);
			break;
		}
	}
	ring_slot_bells(a);
	publish_leases(a);
	dom_core_clear_actions(c);
	publish_waiting(a);
	for (int i = 0; i < a->ndirty; i++) {
		struct agent_member *am = &a->mem[a->dirty[i]];
		am->dirty = false;
		if (!am->shm.grant)
			continue;
		struct dom_grant_live *live = dom_shm_live(&am->shm);
		__atomic_fetch_add(&live->a2m, 1, __ATOMIC_RELEASE);
		dom_futex_wake(&live->a2m);
	}
	a->ndirty = 0;
}

/* The probed seats' answers, read before the tick that would reclaim
 * their slots: O(P). Each seat answers for itself, written by a vCPU of
 * its own at a scheduling point (member_probe.c), so a hung seat is not
 * covered by a live link thread or sibling. A value that was never sent
 * is the member's own bad word (counted once a value); the probe then
 * stays unanswered. */
static void read_probe_acks(struct agent *a, uint64_t now)
{
	for (int s = 0; s < a->core->nslots; s++) {
		const struct dom_slot *sl = &a->core->slot[s];
		if (sl->m < 0 || !sl->probing)
			continue;
		struct agent_member *am = &a->mem[sl->m];
		const uint32_t *w = am->conn >= 0 && am->shm.req ? dom_shm_probe_ack(&am->shm, sl->v) : NULL;
		if (!w)
			continue;
		uint32_t ack = __atomic_load_n(w, __ATOMIC_ACQUIRE);
		if (dom_core_alive_seat(a->core, sl->m, sl->v, ack, now) && ack != am->probe_ack_seen) {
			am->probe_ack_seen = ack;
			am->bad_words++;
		}
	}
}

/*
 * The agent itself did not run for `late` ns (SIGSTOP, a frozen cgroup, an
 * overloaded host): its timer fired that late. The members went on
 * meanwhile: they gave revoked slots back and their vCPUs answered probes,
 * writing words nobody read. The revokes' and probes' hard deadlines fell
 * in the stall and say nothing about them, and a reclaim now would regrant
 * a slot to a second member while the first, if it had not yet answered,
 * may still be in guest mode on it. So every member's words are read
 * first (their doorbells' completions may come after this tick), and the
 * deadlines move out by the stall: each holder gets its grace again.
 */
static void read_all(struct agent *a)
{
	for (int m = 0; m < a->max_members && !a->quiet_until; m++)
		if (a->mem[m].conn >= 0 && a->mem[m].shm.req)
			agent_doorbell(a, m);
}

void agent_stalled(struct agent *a, uint64_t late)
{
	read_all(a);
	dom_core_shift_deadlines(a->core, late);
	a->stalls++;
	fprintf(a->log, "vmm: domain %s: the agent did not run for %.3f s; revoke and probe deadlines moved out by it\n",
		a->o->name, (double)late / 1e9);
}

void agent_quiet_end(struct agent *a)
{
	a->quiet_until = 0;
	read_all(a);
	fprintf(a->log, "vmm: domain %s: quiet start over, %d members back\n", a->o->name, a->nmembers);
}

void agent_tick(struct agent *a)
{
	uint64_t now = agent_now();
	read_probe_acks(a, now);
	if (a->confine.npending)
		dom_confine_sweep(&a->confine);
	dom_core_tick(a->core, now);
	for (int m = 0; m < a->max_members; m++)
		if (a->mem[m].conn >= 0 && a->mem[m].shm.grant)
			__atomic_fetch_add(&dom_shm_live(&a->mem[m].shm)->beat, 1, __ATOMIC_RELEASE);
	agent_apply(a);
}
