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

#ifdef VMM_TEST_HOOKS
void (*dlink_test_gap)(int slot);
#endif

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void ring(struct dlink *l)
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
static bool seat_off(struct dlink *l, int j)
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
		changed = seat_off(l, val);
	}
	pthread_mutex_unlock(&l->mu);
	if (changed)
		ring(l);
}

static bool try_rejoin(struct dlink *l);

/* Every thread of the link looks again (l->local). */
static void wake_all(struct dlink *l)
{
	atomic_fetch_add(&l->local, 1);
	syscall(SYS_futex, &l->local, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* ---- the link thread ---- */

struct todo {
	int online[DOM_SLOTS_MAX], ncpu[DOM_SLOTS_MAX], non;
	uint64_t until[DOM_SLOTS_MAX];
	int offline[DOM_SLOTS_MAX], noff;
	uint32_t offgen[DOM_SLOTS_MAX]; /* the grant each offline is for */
	char policy[DOM_NAME_MAX];
	uint32_t policy_gen;
	bool give_back; /* a grant was given back here, not by SLOT_OFF: ring */
};

/*
 * The seats whose grant word names domain slot `only`; l->mu held. Each
 * seat's grant, revoke and reclaim on a slot come through that slot's
 * thread alone, so its online and offline calls keep their order; and the
 * seat is granted on another slot only after it went offline here and was
 * given back (the agent waits for its release).
 */
static void read_grants(struct dlink *l, struct todo *t, int only)
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
				t->give_back |= seat_off(l, j);
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
	l->rep.alone_ns = now_ns();
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
static void apply_todo(struct dlink *l, const struct todo *t)
{
	if (t->give_back)
		ring(l);
	for (int i = 0; i < t->non; i++) {
		sched_slot_lease(l->s, t->online[i], t->until[i]);
		sched_slot_online(l->s, t->online[i], t->ncpu[i]);
	}
	for (int i = 0; i < t->noff; i++) {
		struct off_check k = { l, t->offgen[i] };
		sched_slot_offline_if(l->s, t->offline[i], still_giving, &k);
	}
}

/* Shared words (the agent's) to wait on beside the link's own. */
#define WAIT_SHARED_MAX 127 /* futex_waitv takes 128 */
struct waitset {
	const uint32_t *word[WAIT_SHARED_MAX];
	uint32_t val[WAIT_SHARED_MAX];
	int n;
};

/* Until one of ws's words or local changes; ns 0: no timeout. */
static int wait_words(const struct waitset *ws, const _Atomic uint32_t *local, uint32_t b, uint64_t ns)
{
	struct futex_waitv w[WAIT_SHARED_MAX + 1];
	for (int i = 0; i < ws->n; i++)
		w[i] = (struct futex_waitv){ .val = ws->val[i], .uaddr = (uintptr_t)ws->word[i], .flags = FUTEX_32 };
	w[ws->n] = (struct futex_waitv){ .val = b, .uaddr = (uintptr_t)local, .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG };
	unsigned n = (unsigned)ws->n + 1;
	if (!ns)
		return (int)syscall(SYS_futex_waitv, w, n, 0, NULL, CLOCK_MONOTONIC);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t at = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + ns;
	ts.tv_sec = (time_t)(at / 1000000000ull);
	ts.tv_nsec = (long)(at % 1000000000ull);
	return (int)syscall(SYS_futex_waitv, w, n, 0, &ts, CLOCK_MONOTONIC);
}

/*
 * A slot's look: its bell's value into ws, then the seats its grant words
 * name on it, brought online or offline. The slot's own thread does this;
 * the link thread does it for slots a new agent added beyond this
 * member's slot threads (a rejoin to a bigger domain).
 */
static void serve_slot(struct dlink *l, int slot, struct waitset *ws)
{
	struct todo t;
	t.non = t.noff = 0;
	t.give_back = false;
	pthread_rwlock_rdlock(&l->apply);
	pthread_mutex_lock(&l->mu);
	/* a new agent's segments are swapped in under mu: read the bell here */
	const uint32_t *bell = dom_shm_slot_bell(&l->shm, slot);
	if (bell && ws->n < WAIT_SHARED_MAX) {
		ws->word[ws->n] = bell;
		ws->val[ws->n++] = __atomic_load_n(bell, __ATOMIC_ACQUIRE);
	}
	if (!l->lost)
		read_grants(l, &t, slot);
	pthread_mutex_unlock(&l->mu);
#ifdef VMM_TEST_HOOKS
	if (dlink_test_gap && (t.non || t.noff))
		dlink_test_gap(slot);
#endif
	apply_todo(l, &t);
	pthread_rwlock_unlock(&l->apply);
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
		apply_todo(l, t);
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
		__atomic_store_n(&rh->policy_at_ns, now_ns(), __ATOMIC_RELAXED);
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
	dfall_reset(l, now_ns());
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
		uint64_t now = now_ns();
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
			if (try_rejoin(l)) {
				md.keeping = false;
				continue;
			}
		}
		struct waitset ws = { .word = { &live->a2m }, .val = { a }, .n = 1 };
		pthread_mutex_lock(&l->mu);
		int nslots = l->info.nslots;
		pthread_mutex_unlock(&l->mu);
		for (int k = l->nslot_threads; k < nslots; k++)
			serve_slot(l, k, &ws);
		wait_words(&ws, &l->local, b, LINK_WAKE_NS);
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

/*
 * A domain slot's own thread (one per slot, "vmm-slotN"): it waits on that
 * slot's bell, which the agent rings for every grant, revoke and reclaim
 * on the slot, and brings the seats named there online or offline. It may
 * run on the slot's CPU (and on CPUs outside the domain): a grant comes
 * when a releaser has just left that CPU, so it runs there at once, where
 * one link thread for all slots, woken on a CPU that runs a vCPU in guest
 * mode, waited milliseconds with the slot idle (docs/benchmarks-history.md).
 */
static bool slot_thread_cpus(const struct slot_thread *t, cpu_set_t *set);

static void *slot_main(void *arg)
{
	struct slot_thread *me = arg;
	struct dlink *l = me->l;
	int rc = l->hooks.sandbox ? l->hooks.sandbox(l->hooks.ctx, l->sock) : 0;
	me->start_rc = rc;
	sem_post(&l->started);
	if (rc)
		return NULL;
	while (!atomic_load(&l->stopping)) {
		uint32_t b = atomic_load(&l->local);
		pthread_mutex_lock(&l->mu);
		int cpu = me->slot < l->info.nslots ? l->info.slot_cpu[me->slot] : -1;
		pthread_mutex_unlock(&l->mu);
		cpu_set_t set;
		if (cpu >= 0 && cpu != me->cpu) { /* a new agent put this slot elsewhere */
			me->cpu = cpu;
			if (slot_thread_cpus(me, &set))
				sched_setaffinity(0, sizeof(set), &set);
		}
		struct waitset ws = { .n = 0 };
		serve_slot(l, me->slot, &ws);
		/* no timeout: the bell is read before the look, so no ring is
		 * lost; a new agent's segments wake it through l->local */
		wait_words(&ws, &l->local, b, 0);
	}
	return NULL;
}

/* ---- join, start, stop ---- */

/* The JOIN_OK and its three fds, or the agent's ERROR. */
static int receive_join(int fd, union dom_msg *msg, int fds[3], char *why, size_t len)
{
	_Alignas(8) unsigned char buf[DOM_MSG_MAX];
	union {
		char b[CMSG_SPACE(sizeof(int) * 3)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b) };
	ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	int nfds = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); n > 0 && cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			for (int i = 0; i < k; i++) {
				int f;
				memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (nfds < 3)
					fds[nfds++] = f;
				else
					close(f);
			}
		}
	if (n <= 0) {
		snprintf(why, len, "the agent did not answer the join: %s", n < 0 ? strerror(errno) : "connection closed");
		goto bad;
	}
	const char *dwhy = NULL;
	int type = dom_proto_decode(buf, (size_t)n, msg, NULL, &dwhy);
	if (type == DOM_MSG_ERROR) {
		snprintf(why, len, "the agent refused the join: %s", msg->error.why);
		goto bad;
	}
	if (type != DOM_MSG_JOIN_OK || nfds != 3) {
		snprintf(why, len, "the agent's answer to the join is not a JOIN_OK with 3 fds (%s)", dwhy ? dwhy : "wrong type");
		goto bad;
	}
	return 0;
bad:
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	return -EPROTO;
}

/*
 * JOIN on the connected fd, then the JOIN_OK: its segments attached into
 * *shm, its doorbell into *bell, what it said into *in. At most max seats
 * are asked for (this process's slots).
 */
static int join_on(int fd, const char *domain, int nvcpus, int max, uint32_t weight, const char *policy,
		   const char *vm_name, struct dom_shm *shm, int *bell, struct dlink_info *in, char *why, size_t len)
{
	struct dom_msg_join j;
	/* A gang VM's seats must be granted together across the domain too. */
	uint32_t flags = strcmp(policy, "gang") == 0 ? DOM_JOIN_GANG : 0;
	int n = dom_proto_join(&j, (uint32_t)max, (uint32_t)nvcpus, weight, flags, policy, vm_name);
	if (n < 0 || send(fd, &j, (size_t)n, MSG_NOSIGNAL) != n) {
		snprintf(why, len, "cannot send the join to domain '%s': %s", domain, strerror(n < 0 ? -n : errno));
		return n < 0 ? n : -EIO;
	}
	union dom_msg msg;
	int fds[3] = { -1, -1, -1 };
	int rc = receive_join(fd, &msg, fds, why, len);
	if (rc)
		return rc;
	const struct dom_msg_join_ok *ok = &msg.join_ok;
	if ((int)ok->nseats > max) {
		snprintf(why, len, "the agent gave %u seats for %d asked", ok->nseats, max);
		for (int i = 0; i < 3; i++)
			close(fds[i]);
		return -EPROTO;
	}
	rc = dom_shm_attach(shm, fds[0], fds[1], (int)ok->nseats, nvcpus, ok->epoch);
	if (rc) {
		snprintf(why, len, "the domain's shared segments are not as agreed: %s", strerror(-rc));
		close(fds[2]);
		return rc;
	}
	*bell = fds[2];
	in->member = (int)ok->member;
	in->nslots = (int)ok->nslots;
	in->nseats = (int)ok->nseats;
	in->nvcpus_total = nvcpus;
	in->slice_ns = ok->slice_ns;
	in->grace_ns = ok->grace_ns;
	in->epoch = ok->epoch;
	CPU_ZERO(&in->cpus);
	for (int s = 0; s < in->nslots; s++) {
		in->slot_cpu[s] = ok->slot_cpu[s];
		if (ok->slot_cpu[s] >= 0)
			CPU_SET(ok->slot_cpu[s], &in->cpus);
	}
	return 0;
}

int dlink_join(struct dlink **out, const struct dlink_params *p, struct dlink_info *info, char *why, size_t len)
{
	*out = NULL;
	struct dlink *l = calloc(1, sizeof(*l));
	if (l) {
		l->seat = calloc((size_t)p->nvcpus, sizeof(*l->seat));
		l->probe_done = calloc((size_t)p->nvcpus, sizeof(*l->probe_done));
	}
	if (!l || !l->seat || !l->probe_done) {
		if (l) {
			free(l->seat);
			free(l->probe_done);
		}
		free(l);
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	int fd = dom_dial(p->domain, why, len);
	int rc = fd < 0 ? fd
			: join_on(fd, p->domain, p->nvcpus, p->nvcpus, p->weight, p->policy, p->vm_name, &l->shm,
				  &l->info.doorbell, &l->info, why, len);
	if (rc) {
		if (fd >= 0)
			close(fd);
		free(l->seat);
		free(l->probe_done);
		free(l);
		return rc;
	}
	l->sock = fd;
	snprintf(l->domain, sizeof(l->domain), "%s", p->domain);
	snprintf(l->vm_name, sizeof(l->vm_name), "%s", p->vm_name);
	l->weight = p->weight;
	l->slice_floor = p->slice_floor;
	l->nlocal = l->nlive = l->info.nseats;
	pthread_mutex_init(&l->mu, NULL);
	pthread_rwlock_init(&l->apply, NULL);
	*info = l->info;
	*out = l;
	return 0;
}

/*
 * A new agent of the domain's name: join it as a new member and give it
 * this VM back. The fd numbers stay (dup3 onto the old socket and doorbell),
 * since the threads' seccomp filters name them. Every seat goes offline
 * (its holder is forced out as at a revoke) and is asked for again as the
 * co-scheduler's demand says. true: taken back.
 */
static bool try_rejoin(struct dlink *l)
{
	char why[200];
	int fd = dom_redial(l->domain, why, sizeof(why));
	if (fd < 0)
		return false;
	int rc = dup3(fd, l->sock, O_CLOEXEC) < 0 ? -errno : 0;
	close(fd);
	struct dom_shm shm;
	struct dlink_info in;
	int bell = -1;
	if (!rc)
		rc = join_on(l->sock, l->domain, l->info.nvcpus_total, l->nlocal, l->weight, sched_policy_name(l->s),
			     l->vm_name, &shm, &bell, &in, why, sizeof(why));
	if (!rc && dup3(bell, l->info.doorbell, O_CLOEXEC) < 0)
		rc = -errno;
	if (bell >= 0)
		close(bell);
	if (rc) {
		if (bell >= 0)
			dom_shm_destroy(&shm);
		return false;
	}
	pthread_rwlock_wrlock(&l->apply);
	pthread_mutex_lock(&l->mu);
	struct dom_shm old = l->shm;
	l->shm = shm;
	in.doorbell = l->info.doorbell;
	l->info = in;
	l->nlive = in.nseats;
	for (int j = 0; j < l->nlocal; j++)
		l->seat[j] = (struct seat){ .st = SEAT_GIVING, .gen = 0, .slot = -1 };
	l->lost = l->alone = false;
	dfall_reset(l, now_ns());
	l->rep.rejoins++;
	l->rep.rejoin_ns = now_ns();
	l->policy_seen = __atomic_load_n(&dom_shm_live(&l->shm)->policy_gen, __ATOMIC_ACQUIRE);
	l->weight_seen = __atomic_load_n(&dom_shm_live(&l->shm)->weight, __ATOMIC_ACQUIRE);
	dprobe_rejoined(l);
	pthread_mutex_unlock(&l->mu);
	dom_shm_destroy(&old);
	sched_slots_keep(l->s, false);
	/* each SLOT_OFF asks for that seat again, if the demand wants it; a
	 * seat already off gets none, and is asked for here */
	bool changed = false;
	for (int j = 0; j < l->nlocal; j++) {
		if (sched_slot_offline(l->s, j))
			continue;
		pthread_mutex_lock(&l->mu);
		if (j >= l->nlive)
			l->seat[j].st = SEAT_FREE;
		else
			changed |= seat_off(l, j);
		pthread_mutex_unlock(&l->mu);
	}
	if (changed)
		ring(l);
	pthread_rwlock_unlock(&l->apply);
	wake_all(l); /* the slot threads: the new segments' bells */
	fprintf(stderr, "vmm: domain %s: taken back by a new agent, as member %d (%d seats)\n", l->domain, in.member,
		in.nseats);
	return true;
}

/* The CPUs the calling thread may use outside the domain: a big host's
 * housekeeping CPUs, where a revoke finds one idle while the slot's own CPU
 * runs the vCPU to be revoked. */
static void outside_cpus(const struct dlink *l, cpu_set_t *set)
{
	cpu_set_t mine;
	CPU_ZERO(set);
	if (sched_getaffinity(0, sizeof(mine), &mine) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &mine) && !CPU_ISSET(c, &l->info.cpus))
				CPU_SET(c, set);
}

/* false: the slot has no CPU of its own (leave the thread unpinned) */
static bool slot_thread_cpus(const struct slot_thread *t, cpu_set_t *set)
{
	if (t->cpu < 0 || t->cpu >= CPU_SETSIZE)
		return false;
	*set = t->outside;
	CPU_SET(t->cpu, set);
	return true;
}

static int start_slot_threads(struct dlink *l)
{
	l->sthr = calloc((size_t)l->info.nslots, sizeof(*l->sthr));
	if (!l->sthr)
		return -ENOMEM;
	for (int k = 0; k < l->info.nslots; k++) {
		struct slot_thread *t = &l->sthr[k];
		*t = (struct slot_thread){ .l = l, .slot = k, .cpu = l->info.slot_cpu[k] };
		outside_cpus(l, &t->outside);
		pthread_attr_t at;
		pthread_attr_init(&at);
		cpu_set_t set;
		if (slot_thread_cpus(t, &set))
			pthread_attr_setaffinity_np(&at, sizeof(set), &set);
		int rc = pthread_create(&t->thr, &at, slot_main, t);
		pthread_attr_destroy(&at);
		if (rc)
			return -rc;
		l->nsthr++;
		char name[16];
		snprintf(name, sizeof(name), "vmm-slot%d", k % 1000); /* DOM_SLOTS_MAX: 3 digits */
		pthread_setname_np(t->thr, name);
		while (sem_wait(&l->started) < 0 && errno == EINTR)
			;
		if (t->start_rc)
			return t->start_rc;
	}
	return 0;
}

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
	return start_slot_threads(l);
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
	wake_all(l);
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
