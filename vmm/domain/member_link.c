/*
 * The member's link to its domain's agent (member_link.h). Seats are this
 * process's co-scheduler slots; each has one of four states, guarded by
 * l->mu (taken inside the scheduler's mutex by the slot callback, alone by
 * the link thread, which never calls the scheduler while holding it):
 *
 *   FREE    not asked for; req word says NONE
 *   ASKED   req word says SLOT; waiting for a grant with a new gen
 *   HELD    granted (gen, slot): online in the co-scheduler
 *   GIVING  revoked or reclaimed: going offline; SLOT_OFF gives it back
 */
#include "vmm/domain/member_link.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sched/policy.h"
#include "sched/sched.h"
#include "vmm/domain/member_int.h"
#include "vmm/domain/paths.h"
#include "vmm/domain/shm.h"

uint64_t dlink_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void dlink_ring(struct dlink *l)
{
	uint64_t one = 1;
	/* EAGAIN only at a counter near 2^64: the agent has a wake pending anyway */
	if (write(l->info.doorbell, &one, sizeof(one)) < 0) {
	}
}

static void set_req(struct dlink *l, int j, uint32_t gen, enum dom_want want)
{
	__atomic_store_n(dom_shm_req(&l->shm, j), dom_req_word(gen, want), __ATOMIC_RELEASE);
}

/* Seats held or asked for (GIVING ones are decided when they are off). */
static int seats_in_use(const struct dlink *l, int except)
{
	int n = 0;
	for (int j = 0; j < l->nlive; j++)
		if (j != except && l->seat[j].st != SEAT_FREE)
			n++;
	return n;
}

/* Asks for free seats up to the demand; l->mu held. true: a req word changed. */
static bool ask_more(struct dlink *l)
{
	bool changed = false;
	int have = seats_in_use(l, -1);
	for (int j = 0; j < l->nlive && have < l->want; j++) {
		struct seat *st = &l->seat[j];
		if (st->st != SEAT_FREE)
			continue;
		st->st = SEAT_ASKED;
		set_req(l, j, st->gen, DOM_WANT_SLOT);
		have++;
		changed = true;
	}
	return changed;
}

/* Seat j's grant is off the co-scheduler: given back, and asked for again
 * if the demand wants it; l->mu held. true: its req word changed. */
bool dlink_seat_off(struct dlink *l, int j)
{
	struct seat *st = &l->seat[j];
	if (st->st != SEAT_HELD && st->st != SEAT_GIVING)
		return false;
	bool again = !atomic_load(&l->stopping) && seats_in_use(l, j) < l->want;
	st->st = again ? SEAT_ASKED : SEAT_FREE;
	set_req(l, j, st->gen, again ? DOM_WANT_SLOT : DOM_WANT_NONE);
	return true;
}

/* The co-scheduler's slot callback: its mutex is held; no calls back into it. */
static void on_slot(void *ctx, enum sched_action_kind kind, int val)
{
	struct dlink *l = ctx;
	bool changed = false;
	pthread_mutex_lock(&l->mu);
	if (kind == SCHED_ACT_SLOT_DEMAND) {
		l->want = val;
		if (!l->lost)
			changed = ask_more(l);
	} else if (kind == SCHED_ACT_SLOT_OFF && val >= l->nlive && val < l->nlocal && !l->lost) {
		l->seat[val].st = SEAT_FREE; /* a seat the agent does not know: stays off */
	} else if (kind == SCHED_ACT_SLOT_OFF && val >= 0 && val < l->nlive && !l->lost) {
		changed = dlink_seat_off(l, val);
	}
	pthread_mutex_unlock(&l->mu);
	if (changed)
		dlink_ring(l);
}


/* Every thread of the link looks again (l->local). */
void dlink_wake_all(struct dlink *l)
{
	atomic_fetch_add(&l->local, 1);
	syscall(SYS_futex, &l->local, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* ---- the link thread ---- */


/*
 * The seats whose grant word names domain slot `only`; l->mu held. Each
 * seat's grant, revoke and reclaim on a slot come through that slot's
 * thread alone, so its online and offline calls keep their order; and the
 * seat is granted on another slot only after it went offline here and was
 * given back (the agent waits for its release).
 */
void dlink_read_grants(struct dlink *l, struct todo *t, int only)
{
	for (int j = 0; j < l->nlive; j++) {
		struct seat *st = &l->seat[j];
		uint32_t w = __atomic_load_n(dom_shm_grant(&l->shm, j), __ATOMIC_ACQUIRE);
		int slot = dom_grant_slot(w);
		uint32_t gen = dom_grant_gen(w);
		unsigned fl = dom_grant_flags(w);
		if (slot != only || slot >= l->info.nslots)
			continue;
		bool gone = fl & (DOM_GRANT_REVOKE | DOM_GRANT_RECLAIMED);
		switch (st->st) {
		case SEAT_ASKED:
			if (gen == st->gen)
				break; /* the grant it gave back, not a new one */
			st->gen = gen;
			st->slot = slot;
			st->reclaimed = false;
			l->rep.grants++;
			if (gone) { /* granted and revoked before we looked: never online */
				st->st = SEAT_GIVING;
				if (fl & DOM_GRANT_RECLAIMED) { /* so late the agent took it back */
					st->reclaimed = true;
					l->rep.reclaims++;
				}
				t->give_back |= dlink_seat_off(l, j);
			} else {
				st->st = SEAT_HELD;
				st->lease = __atomic_load_n(dom_shm_grant_until(&l->shm, j), __ATOMIC_RELAXED);
				t->until[t->non] = st->lease;
				t->ncpu[t->non] = l->info.slot_cpu[slot];
				t->online[t->non++] = j;
			}
			break;
		case SEAT_HELD:
			if (gen == st->gen && gone) {
				st->st = SEAT_GIVING;
				t->offgen[t->noff] = gen;
				t->offline[t->noff++] = j;
				l->rep.revokes++;
			}
			break;
		case SEAT_FREE:
			if (gen != st->gen && !gone) { /* not asked for (any more): back at once */
				st->gen = gen;
				set_req(l, j, gen, DOM_WANT_NONE);
				t->give_back = true;
			}
			break;
		case SEAT_GIVING:
			break;
		}
		/* slower than the grace: the agent took it back while we held it */
		if ((st->st == SEAT_GIVING || st->st == SEAT_HELD) && gen == st->gen && (fl & DOM_GRANT_RECLAIMED) &&
		    !st->reclaimed) {
			st->reclaimed = true;
			l->rep.reclaims++;
		}
	}
}

static void read_policy(struct dlink *l, struct todo *t)
{
	struct dom_grant_live *live = dom_shm_live(&l->shm);
	uint32_t g = __atomic_load_n(&live->policy_gen, __ATOMIC_ACQUIRE);
	if (g == l->policy_seen)
		return;
	char name[DOM_NAME_MAX];
	memcpy(name, (const void *)live->policy, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	if (__atomic_load_n(&live->policy_gen, __ATOMIC_ACQUIRE) != g)
		return; /* changed while copied: the next look gets it whole */
	l->policy_seen = g;
	snprintf(t->policy, sizeof(t->policy), "%s", name);
	t->policy_gen = g;
}

/* The agent closed its socket (ended) or said something. (One that stops
 * beating is stalled, not gone: member_fallback.c.) */
static const char *agent_gone(struct dlink *l)
{
	struct pollfd p = { .fd = l->sock, .events = POLLIN | POLLRDHUP };
	if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLIN)))
		return "the agent ended (its socket closed)";
	return NULL;
}

/* No new agent took the VM back within LINK_ALONE_NS of the old one's
 * end: every seat comes online on the domain's CPUs, for good (until a new
 * agent does). Nothing waits for a grant that cannot come, and nothing
 * bounds the domain any more. */
static void go_alone(struct dlink *l, struct todo *t)
{
	l->alone = true;
	l->rep.alone_ns = dlink_now_ns();
	for (int j = 0; j < l->nlocal; j++) {
		struct seat *st = &l->seat[j];
		if (st->st == SEAT_HELD)
			continue; /* online already, on a domain CPU */
		st->st = SEAT_HELD;
		t->until[t->non] = 0; /* no domain: no lease */
		t->ncpu[t->non] = l->info.slot_cpu[j % l->info.nslots];
		t->online[t->non++] = j;
	}
	fprintf(stderr, "vmm: domain %s: no new agent: every seat of this VM runs on under the host scheduler, on the "
			"domain's CPUs\n", l->domain);
}

static void publish_states(struct dlink *l)
{
	for (int v = 0; v < l->info.nvcpus_total; v++) {
		struct sched_vcpu_stats st;
		sched_stats(l->s, v, &st);
		struct dom_req_vcpu *rv = dom_shm_req_vcpu(&l->shm, v);
		__atomic_store_n(&rv->state, (uint32_t)sched_vcpu_state(l->s, v), __ATOMIC_RELAXED);
		__atomic_store_n(&rv->ns_running, st.ns_running, __ATOMIC_RELAXED);
	}
}

struct off_check {
	struct dlink *l;
	uint32_t gen;
};

/* With the scheduler's mutex held: is the seat still going off for the
 * grant its revoke named? Once its own yield gave that grant back (SLOT_OFF,
 * under the same mutex) the revoke is stale: another slot thread may have
 * brought the seat's next grant online already, and must keep it. */
static bool still_giving(void *ctx, int j)
{
	struct off_check *k = ctx;
	pthread_mutex_lock(&k->l->mu);
	bool yes = k->l->seat[j].st == SEAT_GIVING && k->l->seat[j].gen == k->gen;
	pthread_mutex_unlock(&k->l->mu);
	return yes;
}

/* What one look found; l->apply held. */
void dlink_apply_todo(struct dlink *l, const struct todo *t)
{
	if (t->give_back)
		dlink_ring(l);
	for (int i = 0; i < t->non; i++) {
		sched_slot_lease(l->s, t->online[i], t->until[i]);
		sched_slot_online(l->s, t->online[i], t->ncpu[i]);
	}
	for (int i = 0; i < t->noff; i++) {
		struct off_check k = { l, t->offgen[i] };
		sched_slot_offline_if(l->s, t->offline[i], still_giving, &k);
	}
}



/* The agent renews a slice without a wake while nobody else waits: the
 * held seats' slice ends as it wrote them last, for the co-scheduler,
 * before it acts on them (someone else waits now). */
static void refresh_leases(struct dlink *l)
{
	int seat[DOM_SLOTS_MAX], n = 0;
	uint64_t until[DOM_SLOTS_MAX];
	pthread_rwlock_rdlock(&l->apply);
	pthread_mutex_lock(&l->mu);
	for (int j = 0; j < l->nlive && !l->lost && n < DOM_SLOTS_MAX; j++) {
		struct seat *st = &l->seat[j];
		uint64_t u = __atomic_load_n(dom_shm_grant_until(&l->shm, j), __ATOMIC_RELAXED);
		if (st->st != SEAT_HELD || u == st->lease)
			continue;
		st->lease = u;
		seat[n] = j;
		until[n++] = u;
	}
	pthread_mutex_unlock(&l->mu);
	for (int i = 0; i < n; i++)
		sched_slot_lease(l->s, seat[i], until[i]);
	pthread_rwlock_unlock(&l->apply);
}

/* The link thread's look at the agent: a live policy change into t; gone
 * (its socket closed): the seats held and nothing more, then every seat
 * online, alone, if no new agent came; true while it is stalled
 * (member_fallback.c). */
static bool look_at_agent(struct dlink *l, struct todo *t, uint64_t now)
{
	pthread_mutex_lock(&l->mu);
	const char *why = NULL;
	bool stalled = false, alone = false;
	if (!l->lost) {
		read_policy(l, t);
		why = agent_gone(l);
		stalled = !why && dfall_look(l, now);
		if (why)
			dfall_lost(l, why, now);
	}
	alone = l->lost && !l->alone && now - l->lost_ns >= LINK_ALONE_NS;
	pthread_mutex_unlock(&l->mu);
	if (alone) { /* every seat: no slot thread in the middle of one */
		pthread_rwlock_wrlock(&l->apply);
		pthread_mutex_lock(&l->mu);
		go_alone(l, t);
		pthread_mutex_unlock(&l->mu);
		dlink_apply_todo(l, t);
		pthread_rwlock_unlock(&l->apply);
	}
	return stalled;
}

/* What the link last told the co-scheduler. */
struct link_mode {
	bool keeping, leasing;
	uint64_t floor_set;
};

/* keep: idle seats kept, no leases, no slice floor (nobody else waits, or
 * nobody could regrant them); else leases and the floor. */
static void set_mode(struct dlink *l, struct link_mode *md, bool keep)
{
	if (keep != md->keeping) {
		sched_slots_keep(l->s, keep);
		md->keeping = keep;
	}
	if (!keep)
		refresh_leases(l);
	if (!keep != md->leasing) {
		sched_set_lease(l->s, !keep);
		md->leasing = !keep;
	}
	/* While others wait, the domain's revoke ends a seat's slice (one
	 * switch); a rotation of this VM's own just before it would be a
	 * second. Past slice + grace the revoke is late: rotate anyway. */
	uint64_t floor = keep || !l->slice_floor ? 0 : l->info.slice_ns + l->info.grace_ns;
	if (floor != md->floor_set) {
		sched_set_slice_floor(l->s, floor);
		md->floor_set = floor;
	}
}

/* A live policy change (read into t) applied and acknowledged; a weight
 * change told. */
static void apply_settings(struct dlink *l, struct dom_grant_live *live, const struct todo *t)
{
	if (t->policy[0]) {
		int rc = sched_policy_find(t->policy) ? sched_set_policy(l->s, t->policy) : -EINVAL;
		struct dom_req_hdr *rh = dom_shm_req_hdr(&l->shm);
		__atomic_store_n(&rh->policy_at_ns, dlink_now_ns(), __ATOMIC_RELAXED);
		__atomic_store_n(&rh->policy_ack, t->policy_gen, __ATOMIC_RELEASE);
		if (!rc) {
			pthread_mutex_lock(&l->mu);
			l->rep.policy_changes++;
			pthread_mutex_unlock(&l->mu);
			if (l->hooks.on_policy)
				l->hooks.on_policy(l->hooks.ctx, t->policy);
		}
	}
	uint32_t w = __atomic_load_n(&live->weight, __ATOMIC_ACQUIRE);
	if (w != l->weight_seen) {
		l->weight_seen = w;
		if (l->hooks.on_weight)
			l->hooks.on_weight(l->hooks.ctx, w);
	}
}

static void *link_main(void *arg)
{
	struct dlink *l = arg;
	l->start_rc = l->hooks.sandbox ? l->hooks.sandbox(l->hooks.ctx, l->sock) : 0;
	int rc = l->start_rc;
	sem_post(&l->started);
	if (rc)
		return NULL;
	pthread_mutex_lock(&l->mu);
	dfall_reset(l, dlink_now_ns());
	pthread_mutex_unlock(&l->mu);
	uint64_t published = 0, tried = 0;
	struct link_mode md = { false, false, 0 };
	while (!atomic_load(&l->stopping)) {
		/* a new agent replaces the segments: this iteration's */
		struct dom_grant_live *live = dom_shm_live(&l->shm);
		uint32_t a = __atomic_load_n(&live->a2m, __ATOMIC_ACQUIRE);
		uint32_t b = atomic_load(&l->local);
		/* The agent's probe first: the held seats' vCPUs answer it at a
		 * scheduling point, which is how the domain tells a live seat
		 * from a stopped or hung one that would keep its slot. */
		dprobe_look(l);
		struct todo t;
		t.non = t.noff = 0;
		t.policy[0] = '\0';
		t.give_back = false;
		uint64_t now = dlink_now_ns();
		bool stalled = look_at_agent(l, &t, now);
		pthread_mutex_lock(&l->mu);
		/* idle seats are kept while nobody else waits, while the agent
		 * is stalled, and for good once it is gone (nobody to give them
		 * to, or nobody to regrant them) */
		bool keep = l->lost || stalled || !__atomic_load_n(&live->waiting, __ATOMIC_ACQUIRE);
		pthread_mutex_unlock(&l->mu);
		set_mode(l, &md, keep);
		apply_settings(l, live, &t);
		if (now - published >= LINK_WAKE_NS) {
			publish_states(l);
			published = now;
		}
		if (l->lost && now - tried >= LINK_REJOIN_NS) {
			tried = now;
			if (dlink_try_rejoin(l)) {
				md.keeping = false;
				continue;
			}
		}
		struct waitset ws = { .word = { &live->a2m }, .val = { a }, .n = 1 };
		pthread_mutex_lock(&l->mu);
		int nslots = l->info.nslots;
		pthread_mutex_unlock(&l->mu);
		for (int k = l->nslot_threads; k < nslots; k++)
			dlink_serve_slot(l, k, &ws);
		dlink_wait_words(&ws, &l->local, b, LINK_WAKE_NS);
	}
	/* Said from here, not by dlink_stop's caller: the main thread's seccomp
	 * filter has no sendto, and this thread's end is the member's. */
	struct dom_msg_hdr h;
	int n = dom_proto_leave(&h);
	if (n > 0 && send(l->sock, &h, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* the agent is gone: its end of the socket says the rest */
	}
	return NULL;
}


/* ---- join, start, stop ---- */








int dlink_start(struct dlink *l, struct sched *s, const struct dlink_hooks *h)
{
	l->s = s;
	l->hooks = *h;
	l->policy_seen = __atomic_load_n(&dom_shm_live(&l->shm)->policy_gen, __ATOMIC_ACQUIRE);
	l->weight_seen = __atomic_load_n(&dom_shm_live(&l->shm)->weight, __ATOMIC_ACQUIRE);
	sched_set_slot_cb(s, on_slot, l);
	sched_set_point_cb(s, dprobe_point, l);
	l->nslot_threads = l->info.nslots;
	sem_init(&l->started, 0, 0);
	int rc = pthread_create(&l->thr, NULL, link_main, l);
	if (rc)
		return -rc;
	l->thr_on = true;
	/* named from here: its own filter has no prctl (where it runs: loop_pin.h) */
	pthread_setname_np(l->thr, "vmm-link");
	while (sem_wait(&l->started) < 0 && errno == EINTR)
		;
	if (l->start_rc)
		return l->start_rc;
	return dlink_start_slot_threads(l);
}

int dlink_pin(struct dlink *l, const cpu_set_t *set, cpu_set_t *now)
{
	if (!l || !l->thr_on)
		return -ESRCH;
	int rc = pthread_setaffinity_np(l->thr, sizeof(*set), set);
	int rd = pthread_getaffinity_np(l->thr, sizeof(*now), now);
	return rc ? -rc : -rd;
}

void dlink_stop(struct dlink *l)
{
	if (!l)
		return;
	atomic_store(&l->stopping, true);
	dlink_wake_all(l);
	if (l->thr_on)
		pthread_join(l->thr, NULL);
	l->thr_on = false;
	for (int k = 0; k < l->nsthr; k++)
		pthread_join(l->sthr[k].thr, NULL);
	l->nsthr = 0;
}

void dlink_destroy(struct dlink *l)
{
	if (!l)
		return;
	dlink_stop(l);
	if (l->sock >= 0)
		close(l->sock);
	if (l->info.doorbell >= 0)
		close(l->info.doorbell);
	dom_shm_destroy(&l->shm);
	pthread_mutex_destroy(&l->mu);
	pthread_rwlock_destroy(&l->apply);
	free(l->sthr);
	free(l->seat);
	free(l->probe_done);
	free(l);
}

void dlink_get_report(struct dlink *l, struct dlink_report *r)
{
	pthread_mutex_lock(&l->mu);
	*r = l->rep;
	r->lost = l->lost_ns != 0; /* even if a new agent took it back since */
	r->lost_ns = l->lost_ns;
	snprintf(r->lost_why, sizeof(r->lost_why), "%s", l->lost_why);
	pthread_mutex_unlock(&l->mu);
}
