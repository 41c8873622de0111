/*
 * A member's JOIN: the first one (dlink_join), and a new agent's, which
 * takes the VM back with its old fd numbers (dlink_try_rejoin). Both take
 * the agent's JOIN_OK and its three fds and check and map the segments.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sched/policy.h"
#include "sched/sched.h"
#include "vmm/domain/member_int.h"
#include "vmm/domain/paths.h"

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
	/* refused at accept while the JOIN crossed the close: the reset is
	 * said once, then the agent's queued ERROR (its reason) is there */
	if (n < 0 && errno == ECONNRESET)
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
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
	ssize_t sent = n < 0 ? -1 : send(fd, &j, (size_t)n, MSG_NOSIGNAL);
	if (sent < 0 && n >= 0 && (errno == EPIPE || errno == ECONNRESET))
		sent = n; /* refused at accept: its reason may be queued, read below */
	if (n < 0 || sent != n) {
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
bool dlink_try_rejoin(struct dlink *l)
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
	dfall_reset(l, dlink_now_ns());
	l->rep.rejoins++;
	l->rep.rejoin_ns = dlink_now_ns();
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
			changed |= dlink_seat_off(l, j);
		pthread_mutex_unlock(&l->mu);
	}
	if (changed)
		dlink_ring(l);
	pthread_rwlock_unlock(&l->apply);
	dlink_wake_all(l); /* the slot threads: the new segments' bells */
	fprintf(stderr, "vmm: domain %s: taken back by a new agent, as member %d (%d seats)\n", l->domain, in.member,
		in.nseats);
	return true;
}
