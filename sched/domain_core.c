/*
 * The domain's decision core; see domain_core.h and sched/DOMAIN.md.
 * Every event first charges the held slots up to now (so vtimes are
 * current when a decision reads them), then changes state, then fills free
 * slots from the heap, then raises the vtime floor.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched/domain_int.h"

static void emit(struct dom_core *c, enum dom_action_kind k, int m, int v, int slot)
{
	if (c->nact == c->act_cap) {
		/* Sized for the worst event up front (create); kept for safety. */
		int cap = c->act_cap * 2;
		struct dom_action *a = realloc(c->act, sizeof(*a) * (size_t)cap);
		if (!a)
			abort();
		c->act = a;
		c->act_cap = cap;
	}
	c->act[c->nact++] = (struct dom_action){ k, m, v, slot };
}

struct dom_core *dom_core_create(const struct dom_params *p, const char **why)
{
	if (p->nslots < 1 || p->nslots > 256) {
		*why = "slots must be 1..256";
		return NULL;
	}
	if (p->max_members < 1 || p->max_members > 4096) {
		*why = "max members must be 1..4096";
		return NULL;
	}
	struct dom_core *c = calloc(1, sizeof(*c));
	if (!c) {
		*why = "out of memory";
		return NULL;
	}
	c->nslots = p->nslots;
	c->max_members = p->max_members;
	c->slice_ns = p->slice_ns ? p->slice_ns : 10000000ull;
	c->grace_ns = p->grace_ns ? p->grace_ns : 5000000ull;
	c->act_cap = 3 * p->nslots + 8; /* a tick: reclaim + revoke + grant each */
	c->slot = calloc((size_t)p->nslots, sizeof(*c->slot));
	c->mem = calloc((size_t)p->max_members, sizeof(*c->mem));
	c->heap = calloc((size_t)p->max_members, sizeof(*c->heap));
	c->act = calloc((size_t)c->act_cap, sizeof(*c->act));
	if (!c->slot || !c->mem || !c->heap || !c->act) {
		dom_core_destroy(c);
		*why = "out of memory";
		return NULL;
	}
	for (int s = 0; s < c->nslots; s++)
		c->slot[s].m = c->slot[s].v = -1;
	for (int m = 0; m < c->max_members; m++)
		c->mem[m].heap_idx = -1;
	return c;
}

void dom_core_destroy(struct dom_core *c)
{
	if (!c)
		return;
	if (c->mem)
		for (int m = 0; m < c->max_members; m++)
			free(c->mem[m].v);
	free(c->slot);
	free(c->mem);
	free(c->heap);
	free(c->act);
	free(c);
}

/* ---- time ---- */

static uint64_t clamp_now(struct dom_core *c, uint64_t now)
{
	/* The agent's clock is monotonic; a stale reading must not make the
	 * accounting go backwards. */
	if (now < c->last_now)
		now = c->last_now;
	c->last_now = now;
	return now;
}

static void raise_floor(struct dom_core *c);

/* Charge every held slot up to now, and raise the floor to match: a member
 * that wakes in this event starts from the floor of now, not of the last
 * event (which may be seconds old while one member runs uncontended).
 * O(P log M). */
static void charge(struct dom_core *c, uint64_t now)
{
	for (int s = 0; s < c->nslots; s++) {
		struct dom_slot *sl = &c->slot[s];
		if (sl->m < 0 || now <= sl->charged)
			continue;
		struct dom_member *x = &c->mem[sl->m];
		uint64_t dt = now - sl->charged;
		sl->charged = now;
		x->held_ns += dt;
		x->vtime += dt * DOM_WEIGHT_DEFAULT / x->weight;
		x->ncharges++;
		if (x->heap_idx >= 0)
			dh_sift_down(c, x->heap_idx);
	}
	raise_floor(c);
}

/* The floor only rises, to the least vtime of a busy member: the queued
 * ones are the heap, the others hold slots. O(P). */
static void raise_floor(struct dom_core *c)
{
	uint64_t lo = UINT64_MAX;
	if (c->nheap)
		lo = c->mem[c->heap[0]].vtime;
	for (int s = 0; s < c->nslots; s++)
		if (c->slot[s].m >= 0 && c->mem[c->slot[s].m].vtime < lo)
			lo = c->mem[c->slot[s].m].vtime;
	if (lo != UINT64_MAX && lo > c->min_vtime)
		c->min_vtime = lo;
}

/* Accounting restarts from the floor when a member was idle: like CFS, no
 * credit is banked while it asked for nothing. */
static void wake_member(struct dom_core *c, struct dom_member *x)
{
	if (dom_busy(x) || x->vtime >= c->min_vtime)
		return;
	x->vtime = c->min_vtime;
	x->vtime_in = x->vtime;
	x->held_in = x->held_ns;
	x->ncharges = 0;
}

/* ---- queues and slots ---- */

static void enqueue(struct dom_core *c, int m, int v)
{
	struct dom_member *x = &c->mem[m];
	wake_member(c, x);
	x->v[v].state = DOM_V_QUEUED;
	x->v[v].qnext = -1;
	x->v[v].qprev = x->qtail;
	if (x->qtail >= 0)
		x->v[x->qtail].qnext = v;
	else
		x->qhead = v;
	x->qtail = v;
	x->nqueued++;
	c->nqueued++;
	if (!x->noverrun)
		c->nqueued_ok++;
	if (x->heap_idx < 0 && !x->noverrun)
		dh_insert(c, m);
}

/* Out of its member's FIFO, from anywhere in it: O(1). */
static void unqueue(struct dom_core *c, int m, int v)
{
	struct dom_member *x = &c->mem[m];
	struct dom_vcpu *y = &x->v[v];
	if (y->qprev >= 0)
		x->v[y->qprev].qnext = y->qnext;
	else
		x->qhead = y->qnext;
	if (y->qnext >= 0)
		x->v[y->qnext].qprev = y->qprev;
	else
		x->qtail = y->qprev;
	y->qprev = y->qnext = -1;
	x->nqueued--;
	c->nqueued--;
	if (!x->noverrun)
		c->nqueued_ok--;
	if (!x->nqueued && x->heap_idx >= 0)
		dh_remove(c, m);
}

/*
 * A member that let a slot go past its hard deadline (stopped, hung, or a
 * rogue) is granted nothing more until it reports that vCPU out: its
 * queued vCPUs leave the heap, so a SIGSTOPped member is reclaimed once,
 * not granted and reclaimed again at every slice.
 */
static void overrun_out(struct dom_core *c, int m)
{
	struct dom_member *x = &c->mem[m];
	if (x->noverrun++ || !x->nqueued)
		return;
	c->nqueued_ok -= x->nqueued;
	if (x->heap_idx >= 0)
		dh_remove(c, m);
}

static void overrun_back(struct dom_core *c, int m)
{
	struct dom_member *x = &c->mem[m];
	if (x->noverrun == 1 && x->nqueued)
		wake_member(c, x); /* no credit for the time it was out */
	if (--x->noverrun || !x->nqueued)
		return;
	c->nqueued_ok += x->nqueued;
	dh_insert(c, m);
}

static int dequeue(struct dom_core *c, int m)
{
	int v = c->mem[m].qhead;
	unqueue(c, m, v);
	return v;
}

static void free_slot(struct dom_core *c, int s)
{
	struct dom_slot *sl = &c->slot[s];
	c->mem[sl->m].nheld--;
	if (sl->revoking)
		c->nrevoking--;
	sl->m = sl->v = -1;
	sl->revoking = sl->probing = false;
}

/* REVOKE: give it back within the grace. An unanswered probe's earlier
 * deadline stands: the revoke does not extend it. */
static void revoke(struct dom_core *c, int s, uint64_t now)
{
	struct dom_slot *sl = &c->slot[s];
	uint64_t at = now + c->grace_ns;
	if (!sl->probing || at < sl->hard_at)
		sl->hard_at = at;
	sl->probing = false;
	sl->revoking = true;
	c->nrevoking++;
	emit(c, DOM_ACT_REVOKE, sl->m, sl->v, s);
}

/* Renewed while another member waits: the holder must show it is alive.
 * A probe still unanswered keeps its seq and deadline. */
static void probe(struct dom_core *c, int s, uint32_t seq, uint64_t now)
{
	struct dom_slot *sl = &c->slot[s];
	if (sl->probing)
		return;
	sl->probing = true;
	sl->probe_seq = seq;
	sl->hard_at = now + c->grace_ns;
	emit(c, DOM_ACT_PROBE, sl->m, sl->v, s);
}

/* Work conservation: while a slot is free and someone is queued, the member
 * with the least vtime gets it, its oldest queued vCPU first; a gang takes
 * all its queued vCPUs' slots at once or, while too few are free, keeps
 * them free for itself (dg_take). */
static void fill(struct dom_core *c, uint64_t now)
{
	int nfree = 0, s = 0;
	for (int i = 0; i < c->nslots; i++)
		nfree += c->slot[i].m < 0;
	while (nfree && c->nheap) {
		int m = c->heap[0];
		uint64_t end;
		int n = dg_take(c, m, nfree, now, &end);
		if (!n)
			break;
		for (; n; n--, nfree--) {
			while (c->slot[s].m >= 0)
				s++;
			int v = dequeue(c, m);
			c->mem[m].v[v].state = DOM_V_HOLDING;
			c->mem[m].v[v].slot = s;
			c->mem[m].nheld++;
			c->slot[s] = (struct dom_slot){ .m = m, .v = v, .charged = now, .slice_end = end };
			emit(c, DOM_ACT_GRANT, m, v, s);
		}
	}
}

static void finish(struct dom_core *c, uint64_t now)
{
	if (!c->deferred)
		fill(c, now);
	raise_floor(c);
}

void dom_core_defer(struct dom_core *c)
{
	c->deferred = true;
}

void dom_core_commit(struct dom_core *c, uint64_t now)
{
	now = clamp_now(c, now);
	charge(c, now);
	c->deferred = false;
	finish(c, now);
}

static bool valid_vcpu(const struct dom_core *c, int m, int v)
{
	return m >= 0 && m < c->max_members && c->mem[m].used && v >= 0 &&
	       v < c->mem[m].nvcpus;
}

/* ---- events ---- */

int dom_core_join(struct dom_core *c, uint32_t weight, int nvcpus, uint32_t flags,
		  uint64_t now)
{
	if (weight < DOM_WEIGHT_MIN || weight > DOM_WEIGHT_MAX || nvcpus < 1 ||
	    nvcpus > DOM_VCPUS_MAX || (flags & ~DOM_MEMBER_GANG) ||
	    ((flags & DOM_MEMBER_GANG) && nvcpus > c->nslots))
		return -EINVAL;
	now = clamp_now(c, now);
	int m = 0;
	while (m < c->max_members && c->mem[m].used) /* O(M); joins are rare */
		m++;
	if (m == c->max_members)
		return -ENOSPC;
	struct dom_vcpu *v = calloc((size_t)nvcpus, sizeof(*v));
	if (!v)
		return -ENOMEM;
	charge(c, now);
	raise_floor(c);
	for (int i = 0; i < nvcpus; i++)
		v[i] = (struct dom_vcpu){ DOM_V_BLOCKED, -1, -1, -1 };
	c->mem[m] = (struct dom_member){
		.used = true, .gang = flags & DOM_MEMBER_GANG, .weight = weight, .nvcpus = nvcpus, .v = v,
		.qhead = -1, .qtail = -1, .heap_idx = -1,
		.vtime = c->min_vtime, .vtime_in = c->min_vtime, .joined_ns = now,
	};
	return m;
}

int dom_core_leave(struct dom_core *c, int m, uint64_t now)
{
	if (m < 0 || m >= c->max_members || !c->mem[m].used)
		return -EINVAL;
	now = clamp_now(c, now);
	charge(c, now);
	struct dom_member *x = &c->mem[m];
	for (int s = 0; s < c->nslots; s++)
		if (c->slot[s].m == m)
			free_slot(c, s);
	if (x->heap_idx >= 0)
		dh_remove(c, m);
	c->nqueued -= x->nqueued;
	if (!x->noverrun)
		c->nqueued_ok -= x->nqueued;
	free(x->v);
	*x = (struct dom_member){ .heap_idx = -1, .qhead = -1, .qtail = -1 };
	finish(c, now);
	return 0;
}

int dom_core_set_weight(struct dom_core *c, int m, uint32_t weight, uint64_t now)
{
	if (m < 0 || m >= c->max_members || !c->mem[m].used ||
	    weight < DOM_WEIGHT_MIN || weight > DOM_WEIGHT_MAX)
		return -EINVAL;
	now = clamp_now(c, now);
	charge(c, now); /* the time so far at the old weight */
	struct dom_member *x = &c->mem[m];
	x->weight = weight;
	x->vtime_in = x->vtime;
	x->held_in = x->held_ns;
	x->ncharges = 0;
	finish(c, now);
	return 0;
}

/* Turning gang on makes what m holds one gang now (domain_core.h); the
 * change never lengthens a hold. */
int dom_core_set_gang(struct dom_core *c, int m, bool gang, uint64_t now)
{
	if (m < 0 || m >= c->max_members || !c->mem[m].used ||
	    (gang && c->mem[m].nvcpus > c->nslots))
		return -EINVAL;
	now = clamp_now(c, now);
	charge(c, now);
	struct dom_member *x = &c->mem[m];
	x->gang = gang;
	uint64_t end;
	bool rev;
	if (gang && dg_held(c, m, &end, &rev))
		for (int s = 0; s < c->nslots; s++) {
			struct dom_slot *sl = &c->slot[s];
			if (sl->m != m)
				continue;
			sl->slice_end = end;
			if (rev && !sl->revoking)
				revoke(c, s, now);
		}
	finish(c, now);
	return 0;
}

int dom_core_runnable(struct dom_core *c, int m, int v, uint64_t now)
{
	if (!valid_vcpu(c, m, v) || c->mem[m].v[v].state != DOM_V_BLOCKED)
		return -EINVAL;
	now = clamp_now(c, now);
	charge(c, now);
	enqueue(c, m, v);
	finish(c, now);
	return 0;
}

int dom_core_release(struct dom_core *c, int m, int v, enum dom_release why,
		     uint64_t now)
{
	if (!valid_vcpu(c, m, v) || (unsigned)why > DOM_REL_DONE)
		return -EINVAL;
	struct dom_vcpu *x = &c->mem[m].v[v];
	if (x->state != DOM_V_HOLDING && x->state != DOM_V_OVERRUN)
		return -EINVAL;
	now = clamp_now(c, now);
	charge(c, now);
	if (x->state == DOM_V_HOLDING)
		free_slot(c, x->slot);
	else
		overrun_back(c, m);
	x->slot = -1;
	if (why == DOM_REL_YIELD)
		enqueue(c, m, v);
	else
		x->state = why == DOM_REL_DONE ? DOM_V_DONE : DOM_V_BLOCKED;
	finish(c, now);
	return 0;
}

int dom_core_handoff(struct dom_core *c, int m, int from, int to,
		     enum dom_release why, uint64_t now)
{
	if (!valid_vcpu(c, m, from) || !valid_vcpu(c, m, to) || from == to ||
	    (unsigned)why > DOM_REL_DONE)
		return -EINVAL;
	struct dom_member *x = &c->mem[m];
	struct dom_vcpu *f = &x->v[from], *t = &x->v[to];
	if (f->state != DOM_V_HOLDING ||
	    (t->state != DOM_V_QUEUED && t->state != DOM_V_BLOCKED))
		return -EINVAL;
	now = clamp_now(c, now);
	charge(c, now); /* the same member either way; keeps charges per event */
	int s = f->slot;
	if (t->state == DOM_V_QUEUED)
		unqueue(c, m, to);
	t->state = DOM_V_HOLDING;
	t->slot = s;
	c->slot[s].v = to;
	emit(c, DOM_ACT_MOVE, m, to, s);
	if (c->slot[s].revoking)
		emit(c, DOM_ACT_REVOKE, m, to, s);
	f->slot = -1;
	if (why == DOM_REL_YIELD)
		enqueue(c, m, from);
	else
		f->state = why == DOM_REL_DONE ? DOM_V_DONE : DOM_V_BLOCKED;
	finish(c, now);
	return 0;
}

static int cmp_ahead(const struct dom_core *c, int a, int b)
{
	/* Furthest ahead first: the larger vtime, then the lower slot. */
	uint64_t va = c->mem[c->slot[a].m].vtime, vb = c->mem[c->slot[b].m].vtime;
	return va != vb ? (va > vb ? -1 : 1) : a - b;
}

/* The least-vtime queued member other than m, or -1: the heap's top, or
 * if that is m, the lesser of its children. O(1). */
static int best_other(const struct dom_core *c, int m)
{
	if (!c->nheap)
		return -1;
	if (c->heap[0] != m)
		return c->heap[0];
	int best = -1;
	for (int i = 1; i <= 2 && i < c->nheap; i++)
		if (best < 0 || dh_less(c, c->heap[i], best))
			best = c->heap[i];
	return best;
}

void dom_core_tick(struct dom_core *c, uint64_t now)
{
	now = clamp_now(c, now);
	charge(c, now);
	int nfree = 0, nexp = 0;
	int exp[256];
	for (int s = 0; s < c->nslots; s++) {
		struct dom_slot *sl = &c->slot[s];
		if (sl->m >= 0 && (sl->revoking || sl->probing) && now >= sl->hard_at) {
			/* Hard deadline, revoke or probe unanswered: the books take
			 * the slot back now, so one member that stops answering
			 * cannot shrink the domain. */
			struct dom_member *x = &c->mem[sl->m];
			x->v[sl->v].state = DOM_V_OVERRUN;
			x->v[sl->v].slot = -1;
			x->reclaims++;
			overrun_out(c, sl->m);
			emit(c, DOM_ACT_RECLAIM, sl->m, sl->v, s);
			free_slot(c, s);
		}
		if (sl->m < 0)
			nfree++;
		else if (!sl->revoking && now >= sl->slice_end)
			exp[nexp++] = s;
	}
	/* Insertion sort: P is small. */
	for (int i = 1; i < nexp; i++)
		for (int j = i; j > 0 && cmp_ahead(c, exp[j - 1], exp[j]) > 0; j--) {
			int t = exp[j];
			exp[j] = exp[j - 1];
			exp[j - 1] = t;
		}
	bool done[256] = { false };
	for (int i = 0; i < nexp; i++) {
		if (done[i])
			continue;
		struct dom_slot *sl = &c->slot[exp[i]];
		int m = sl->m;
		struct dom_member *x = &c->mem[m];
		/* Someone else waits: another member's queued vCPUs are more
		 * than the free and revoked slots serve. Its own do not count
		 * (domain_core.h). */
		int others = c->nqueued_ok - (x->heap_idx >= 0 ? x->nqueued : 0);
		int o = best_other(c, m);
		bool waits = o >= 0 && c->nrevoking + nfree < others;
		/* Preempt only if the best of them is not further ahead than
		 * the holder; else renew, and probe that the holder lives. */
		bool rev = waits && c->mem[o].vtime <= x->vtime;
		uint32_t seq = x->probe_seq;
		if (waits && !rev) {
			seq = ++x->probe_seq;
			x->probes++;
		}
		/* A gang's slots share their slice end, so all of them are in
		 * exp: what one gets, all get. */
		for (int j = i; j < (x->gang ? nexp : i + 1); j++) {
			struct dom_slot *sj = &c->slot[exp[j]];
			if (j != i && !(x->gang && sj->m == m))
				continue;
			done[j] = true;
			if (rev) {
				revoke(c, exp[j], now);
				continue;
			}
			sj->slice_end = now + c->slice_ns;
			if (waits)
				probe(c, exp[j], seq, now);
		}
	}
	finish(c, now);
}

void dom_core_shift_deadlines(struct dom_core *c, uint64_t gap)
{
	for (int s = 0; s < c->nslots; s++) {
		struct dom_slot *sl = &c->slot[s];
		if (sl->m >= 0 && (sl->revoking || sl->probing))
			sl->hard_at = sl->hard_at > UINT64_MAX - gap ? UINT64_MAX : sl->hard_at + gap;
	}
}

int dom_core_alive(struct dom_core *c, int m, uint32_t seq, uint64_t now)
{
	if (m < 0 || m >= c->max_members || !c->mem[m].used || (int32_t)(seq - c->mem[m].probe_seq) > 0)
		return -EINVAL;
	clamp_now(c, now);
	for (int s = 0; s < c->nslots; s++) {
		struct dom_slot *sl = &c->slot[s];
		if (sl->m == m && sl->probing && (int32_t)(seq - sl->probe_seq) >= 0)
			sl->probing = false;
	}
	return 0;
}

int dom_core_alive_seat(struct dom_core *c, int m, int v, uint32_t seq, uint64_t now)
{
	if (m < 0 || m >= c->max_members || !c->mem[m].used || v < 0 || v >= c->mem[m].nvcpus ||
	    (int32_t)(seq - c->mem[m].probe_seq) > 0)
		return -EINVAL;
	clamp_now(c, now);
	const struct dom_vcpu *x = &c->mem[m].v[v];
	if (x->state == DOM_V_HOLDING) {
		struct dom_slot *sl = &c->slot[x->slot];
		if (sl->probing && (int32_t)(seq - sl->probe_seq) >= 0)
			sl->probing = false;
	}
	return 0;
}

int dom_core_member_stats(const struct dom_core *c, int m, uint64_t now,
			  struct dom_member_stats *out)
{
	if (m < 0 || m >= c->max_members || !c->mem[m].used)
		return -EINVAL;
	const struct dom_member *x = &c->mem[m];
	*out = (struct dom_member_stats){ x->weight, x->nvcpus, x->nheld, x->nqueued,
					  x->held_ns, x->joined_ns, x->reclaims, x->gang, x->probes };
	/* The held slots' time since their last charge, without charging. */
	for (int s = 0; s < c->nslots; s++)
		if (c->slot[s].m == m && now > c->slot[s].charged)
			out->held_ns += now - c->slot[s].charged;
	return 0;
}

uint64_t dom_core_next_deadline(const struct dom_core *c)
{
	uint64_t d = UINT64_MAX;
	int nfree = 0;
	for (int s = 0; s < c->nslots; s++)
		nfree += c->slot[s].m < 0;
	for (int s = 0; s < c->nslots; s++) {
		const struct dom_slot *sl = &c->slot[s];
		if (sl->m < 0)
			continue;
		const struct dom_member *x = &c->mem[sl->m];
		int others = c->nqueued_ok - (x->heap_idx >= 0 ? x->nqueued : 0);
		uint64_t t = sl->revoking || sl->probing ? sl->hard_at : UINT64_MAX;
		/* Slice ends matter only when another member waits (as in
		 * dom_core_tick); then an uncontended holder's long-past end
		 * means "now". */
		if (!sl->revoking && others > c->nrevoking + nfree && sl->slice_end < t)
			t = sl->slice_end;
		if (t < d)
			d = t;
	}
	return d;
}
