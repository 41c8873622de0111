/*
 * The domain agent's process: the directory and socket, the io_uring loop,
 * connections and their messages. What a member's messages and doorbells
 * do to the books is agent_members.c; status and set are agent_status.c.
 */
#include "vmm/domain/agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "vmm/domain/agent_guard.h"
#include "vmm/domain/dir_trust.h"
#include "vmm/domain/paths.h"

#define AGENT_BEAT_NS (100 * 1000000ull) /* members watch `beat` (DOMAIN.md) */
/* A timer this late means the agent was not running (stopped): a busy
 * host delays a wake-up by milliseconds, not two beats. */
#define AGENT_STALL_NS (2 * AGENT_BEAT_NS)
/* After an agent that died: its members keep the seats they held on its
 * slots until they rejoin, and they look for a new agent every second
 * (LINK_REJOIN_NS), taking every seat offline as they rejoin. So nothing
 * is granted for a second and a half: by then each live one is back and
 * holds nothing (sched/DOMAIN.md, "Agent restart"). */
#define AGENT_QUIET_NS (1500 * 1000000ull)
#define AGENT_RING 512

uint64_t agent_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t agent_tag(enum agent_ev kind, uint32_t gen, int idx)
{
	return (uint64_t)kind << 56 | (uint64_t)(gen & 0xffffffffu) << 24 | (uint64_t)(idx & 0xffffff);
}

static struct io_uring_sqe *sqe_get(struct agent *a)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&a->ring);
	if (!sqe && io_uring_submit(&a->ring) >= 0)
		sqe = io_uring_get_sqe(&a->ring);
	return sqe;
}

int agent_poll(struct agent *a, int fd, uint64_t tag)
{
	struct io_uring_sqe *sqe = sqe_get(a);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, fd, POLLIN);
	io_uring_sqe_set_data64(sqe, tag);
	return 0;
}

int agent_read(struct agent *a, int fd, void *buf, unsigned len, uint64_t tag)
{
	struct io_uring_sqe *sqe = sqe_get(a);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, fd, buf, len, 0);
	io_uring_sqe_set_data64(sqe, tag);
	return 0;
}

void agent_cancel(struct agent *a, uint64_t tag)
{
	struct io_uring_sqe *sqe = sqe_get(a);
	if (!sqe)
		return; /* its completion comes with a stale gen and is dropped */
	io_uring_prep_cancel64(sqe, tag, 0);
	io_uring_sqe_set_data64(sqe, agent_tag(AEV_CANCEL, 0, 0));
}

int agent_send(int fd, const void *msg, size_t len, const int *fds, int nfds)
{
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = len };
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (nfds > 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	/* a peer that does not read its replies gets none: never block the agent */
	ssize_t n = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

void agent_send_error(int fd, int code, const char *fmt, ...)
{
	char why[sizeof(((struct dom_msg_error *)0)->why)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	for (char *p = why; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			*p = '?';
	struct dom_msg_error e;
	int n = dom_proto_error(&e, code, why);
	if (n > 0)
		agent_send(fd, &e, (size_t)n, NULL, 0);
}

/* ---- connections ---- */

void agent_conn_close(struct agent *a, int c)
{
	struct agent_conn *k = &a->conn[c];
	if (k->fd < 0)
		return;
	agent_cancel(a, agent_tag(AEV_CONN, k->gen, c));
	close(k->fd);
	k->fd = -1;
	k->gen++;
	k->member = -1;
}

static void on_listen(struct agent *a)
{
	for (;;) {
		int fd = accept4(a->lsock, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			break; /* EAGAIN, or a connection that died queued */
		int c = 0;
		while (c < a->max_conns && a->conn[c].fd >= 0)
			c++;
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		int rc = c == a->max_conns || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0
				 ? -EMFILE
				 : agent_guard_accept(a, cr.uid);
		if (rc) {
			if (rc == -EUSERS)
				agent_send_error(fd, rc, "uid %u holds %d connections to this domain, its bound",
						 (unsigned)cr.uid, a->uid_conns);
			else
				agent_send_error(fd, rc, "the domain has no room for another connection");
			close(fd);
			a->refused++;
			continue;
		}
		struct agent_conn *k = &a->conn[c];
		k->fd = fd;
		k->member = -1;
		k->pid = cr.pid;
		k->uid = cr.uid;
		k->opened_ns = agent_now();
		if (agent_guard_join_by(k->opened_ns) < a->guard_next)
			a->guard_next = agent_guard_join_by(k->opened_ns);
		if (agent_poll(a, fd, agent_tag(AEV_CONN, k->gen, c)) < 0)
			agent_conn_close(a, c);
	}
	if (agent_poll(a, a->lsock, agent_tag(AEV_LISTEN, 0, 0)) < 0)
		a->stop = true;
}

/* Refused: the sender learns why, its connection ends, and if it was a
 * member it leaves. Nothing else changes. */
static void refuse(struct agent *a, int c, int code, const char *why)
{
	struct agent_conn *k = &a->conn[c];
	fprintf(a->log, "vmm: domain %s: refused a message from pid %d (uid %u): %s\n", a->o->name, (int)k->pid,
		(unsigned)k->uid, why);
	a->refused++;
	agent_send_error(k->fd, code, "%s", why);
	int m = k->member;
	agent_conn_close(a, c);
	if (m >= 0)
		agent_leave(a, m, "refused message");
}

/* Over a bound of agent_guard.c: it is told why, counted and leaves; its
 * slots go to the others in the same event. */
static void eject(struct agent *a, int m, const char *why)
{
	struct agent_member *am = &a->mem[m];
	fprintf(a->log, "vmm: domain %s: member %d (pid %d) ejected: %s\n", a->o->name, m, (int)am->pid, why);
	if (am->conn >= 0 && a->conn[am->conn].fd >= 0)
		agent_send_error(a->conn[am->conn].fd, -EDQUOT, "ejected: %s", why);
	agent_leave(a, m, "ejected");
}

static void guard_tick(struct agent *a)
{
	uint64_t now = agent_now();
	a->guard_next = agent_guard_tick(a, now);
	for (int m = 0; m < a->max_members; m++) {
		const char *why = a->mem[m].conn >= 0 ? agent_guard_words(a, m) : NULL;
		if (why)
			eject(a, m, why);
	}
}

static void on_conn(struct agent *a, int c)
{
	struct agent_conn *k = &a->conn[c];
	_Alignas(8) unsigned char buf[DOM_MSG_MAX + 64];
	/* MSG_TRUNC: the packet's real length, so an oversized one is seen as such */
	ssize_t n = recv(k->fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		if (agent_poll(a, k->fd, agent_tag(AEV_CONN, k->gen, c)) < 0)
			agent_conn_close(a, c);
		return;
	}
	if (n <= 0) { /* EOF or a reset: a member's end, or a client done */
		int m = k->member;
		agent_conn_close(a, c);
		if (m >= 0)
			agent_leave(a, m, "connection closed");
		return;
	}
	if ((size_t)n > sizeof(buf)) {
		refuse(a, c, -EMSGSIZE, "message too long");
		return;
	}
	union dom_msg msg;
	const char *why = NULL;
	int type = dom_proto_decode(buf, (size_t)n, &msg, NULL, &why);
	if (type < 0) {
		refuse(a, c, type, why ? why : "malformed message");
		return;
	}
	switch (type) {
	case DOM_MSG_JOIN:
		if (k->member >= 0) {
			refuse(a, c, -EISCONN, "already joined");
			return;
		}
		char gwhy[160];
		int grc = agent_guard_join(a, c, msg.join.weight, gwhy, sizeof(gwhy));
		if (grc) {
			refuse(a, c, grc, gwhy);
			return;
		}
		if (agent_join(a, c, &msg.join) < 0) {
			agent_conn_close(a, c); /* agent_join said why */
			return;
		}
		break;
	case DOM_MSG_LEAVE:
		if (k->member < 0) {
			refuse(a, c, -ENOTCONN, "LEAVE without JOIN");
			return;
		} else {
			int m = k->member;
			agent_conn_close(a, c);
			agent_leave(a, m, "left");
			return;
		}
	case DOM_MSG_STATUS:
	case DOM_MSG_SET:
		if (k->member >= 0) {
			refuse(a, c, -EPERM, "a member connection is for JOIN and LEAVE only");
			return;
		}
		if (type == DOM_MSG_STATUS)
			agent_status(a, c, msg.status.flags);
		else
			agent_set(a, c, &msg.set);
		break;
	default:
		refuse(a, c, -EPROTO, "not a message an agent takes");
		return;
	}
	if (a->conn[c].fd >= 0 && agent_poll(a, a->conn[c].fd, agent_tag(AEV_CONN, a->conn[c].gen, c)) < 0)
		agent_conn_close(a, c);
}

/* ---- the tick: slice ends, hard deadlines, the beat ---- */

static void arm_timer(struct agent *a)
{
	uint64_t now = agent_now();
	uint64_t at = dom_core_next_deadline(a->core);
	if ((a->nmembers || a->confine.npending) && at > now + AGENT_BEAT_NS)
		at = now + AGENT_BEAT_NS;
	if (a->guard_next < at)
		at = a->guard_next > now ? a->guard_next : now;
	if (a->quiet_until && a->quiet_until < at)
		at = a->quiet_until;
	/* A timer armed no later stays: re-arming at every pass moved the beat
	 * ahead of itself (now + beat is later at each pass) and the update's
	 * own completion woke the loop for the next pass, so an agent whose
	 * members did not contend spun on io_uring_enter (~29k calls a second
	 * under strace) and never ticked. Early is harmless: a tick acts only
	 * on what is due. */
	if (at == UINT64_MAX || (a->timer_armed && a->timer_at <= at))
		return;
	a->ts.tv_sec = (long long)(at / 1000000000ull);
	a->ts.tv_nsec = (long long)(at % 1000000000ull);
	struct io_uring_sqe *sqe = sqe_get(a);
	if (!sqe)
		return; /* the next loop pass tries again */
	if (a->timer_armed) {
		io_uring_prep_timeout_update(sqe, &a->ts, agent_tag(AEV_TIMER, 0, 0), IORING_TIMEOUT_ABS);
		io_uring_sqe_set_data64(sqe, agent_tag(AEV_CANCEL, 0, 0));
	} else {
		io_uring_prep_timeout(sqe, &a->ts, 0, IORING_TIMEOUT_ABS);
		io_uring_sqe_set_data64(sqe, agent_tag(AEV_TIMER, 0, 0));
	}
	a->timer_armed = true;
	a->timer_at = at;
}

/* ---- setup and teardown ---- */

static int fail(char *why, size_t len, int rc, const char *fmt, const char *arg)
{
	char msg[160];
	snprintf(msg, sizeof(msg), fmt, arg);
	snprintf(why, len, "%s: %s", msg, strerror(-rc));
	return rc;
}

/* -EEXIST when the pid file names a live agent */
static int claim(struct agent *a, char *why, size_t len)
{
	long pid = dom_pid_file_read(a->dirfd);
	if (pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM)) {
		snprintf(why, len, "domain %s already has an agent (pid %ld)", a->o->name, pid);
		return -EEXIST;
	}
	unlinkat(a->dirfd, "ctl.sock", 0); /* a dead agent's */
	if (pid > 0) { /* it died: its members may still run on its slots */
		a->quiet_until = agent_now() + AGENT_QUIET_NS;
		fprintf(a->log, "vmm: domain %s: the last agent (pid %ld) died; nothing granted for %.1f s while its members "
				"come back\n", a->o->name, pid, (double)AGENT_QUIET_NS / 1e9);
	}
	return 0;
}

/* The pid file, written through the directory's fd and never through a
 * link: a link planted there must not truncate a file of ours. */
static int write_pid(struct agent *a, char *why, size_t len)
{
	int fd = openat(a->dirfd, "agent.pid", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return fail(why, len, -errno, "cannot write %s", a->pid_path);
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	int rc = write(fd, buf, (size_t)n) == n ? 0 : -EIO;
	close(fd);
	return rc ? fail(why, len, rc, "cannot write %s", a->pid_path) : 0;
}

static int open_socket(struct agent *a, char *why, size_t len)
{
	char dwhy[256];
	uid_t owner;
	a->dirfd = dom_dir_open(a->dir, DOM_DIR_MODE, &owner, dwhy, sizeof(dwhy));
	if (a->dirfd < 0) {
		snprintf(why, len, "the domain's directory is not safe to serve from: %s", dwhy);
		return a->dirfd;
	}
	if (a->o->gid >= 0 && fchown(a->dirfd, (uid_t)-1, (gid_t)a->o->gid) < 0)
		return fail(why, len, -errno, "cannot give %s to the group", a->dir);
	int rc = claim(a, why, len);
	if (rc)
		return rc;
	a->lsock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (a->lsock < 0)
		return fail(why, len, -errno, "socket %s", "AF_UNIX");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", a->sock_path);
	mode_t old = umask(0117); /* 0660: the directory decides who gets in */
	rc = bind(a->lsock, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	umask(old);
	if (rc)
		return fail(why, len, rc, "bind %s", a->sock_path);
	a->bound = true;
	if (a->o->gid >= 0 && fchownat(a->dirfd, "ctl.sock", (uid_t)-1, (gid_t)a->o->gid, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(why, len, -errno, "cannot give %s to the group", a->sock_path);
	if (listen(a->lsock, 64) < 0)
		return fail(why, len, -errno, "listen %s", a->sock_path);
	return write_pid(a, why, len);
}

int agent_books_init(struct agent *a, const struct dom_agent_opts *o, char *why, size_t len)
{
	memset(a, 0, sizeof(*a));
	a->o = o;
	a->lsock = a->sigfd = a->dirfd = -1;
	a->ring.ring_fd = -1;
	a->log = stderr;
	a->max_members = o->max_members ? o->max_members : 256;
	a->max_conns = a->max_members + 64;
	a->owner = geteuid();
	a->uid_conns = o->uid_conns ? o->uid_conns : GUARD_UID_CONNS_DEFAULT;
	a->guard_next = UINT64_MAX;
	struct dom_params p = { .nslots = o->nslots, .max_members = a->max_members, .slice_ns = o->slice_ns,
				.grace_ns = o->grace_ns };
	const char *cwhy = NULL;
	a->core = dom_core_create(&p, &cwhy);
	if (!a->core) {
		snprintf(why, len, "%s", cwhy ? cwhy : "bad domain parameters");
		return -EINVAL;
	}
	a->mem = calloc((size_t)a->max_members, sizeof(*a->mem));
	a->conn = calloc((size_t)a->max_conns, sizeof(*a->conn));
	a->dirty = calloc((size_t)a->max_members, sizeof(*a->dirty));
	if (!a->mem || !a->conn || !a->dirty) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	for (int m = 0; m < a->max_members; m++)
		a->mem[m] = (struct agent_member){ .conn = -1, .pidfd = -1, .bell = -1 };
	for (int c = 0; c < a->max_conns; c++)
		a->conn[c] = (struct agent_conn){ .fd = -1, .member = -1 };
	a->start_ns = agent_now();
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	a->epoch = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
	return 0;
}

static int agent_init(struct agent *a, const struct dom_agent_opts *o, char *why, size_t len)
{
	int rc = agent_books_init(a, o, why, len);
	if (rc)
		return rc;
	if (dom_path(o->name, NULL, a->dir, sizeof(a->dir)) || dom_path(o->name, "ctl.sock", a->sock_path, sizeof(a->sock_path)) ||
	    dom_path(o->name, "agent.pid", a->pid_path, sizeof(a->pid_path))) {
		snprintf(why, len, "the domain's directory path is too long for a socket address");
		return -ENAMETOOLONG;
	}
	rc = open_socket(a, why, len);
	if (rc)
		return rc;
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	a->sigfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	if (a->sigfd < 0)
		return fail(why, len, -errno, "%s", "signalfd");
	/* after claim(): a second agent of this name never touches the first's
	 * cgroups. Members may run on the domain's CPUs and on the agent's own
	 * (their loops and link threads stay off the vCPUs' CPUs). */
	cpu_set_t where;
	if (sched_getaffinity(0, sizeof(where), &where) < 0)
		CPU_ZERO(&where);
	for (int s = 0; s < o->nslots; s++)
		CPU_SET(o->slot_cpu[s], &where);
	rc = dom_confine_init(&a->confine, (enum dom_confine_want)o->confine, o->name, &where);
	if (rc) {
		snprintf(why, len, "--confine cgroup: %s", a->confine.why);
		return rc;
	}
	rc = io_uring_queue_init(AGENT_RING, &a->ring, 0);
	if (rc < 0) {
		a->ring.ring_fd = -1;
		return fail(why, len, rc, "%s", "io_uring");
	}
	return 0;
}

static void agent_fini(struct agent *a)
{
	for (int m = 0; m < a->max_members; m++)
		if (a->mem && a->mem[m].conn >= 0)
			agent_leave(a, m, "the agent stops");
	for (int c = 0; a->conn && c < a->max_conns; c++)
		if (a->conn[c].fd >= 0)
			close(a->conn[c].fd);
	dom_confine_fini(&a->confine);
	if (a->lsock >= 0)
		close(a->lsock);
	if (a->bound) { /* ours to remove: never a live agent's files */
		unlinkat(a->dirfd, "ctl.sock", 0);
		unlinkat(a->dirfd, "agent.pid", 0);
		rmdir(a->dir);
	}
	if (a->dirfd >= 0)
		close(a->dirfd);
	if (a->sigfd >= 0)
		close(a->sigfd);
	if (a->ring.ring_fd > 0)
		io_uring_queue_exit(&a->ring);
	dom_core_destroy(a->core);
	free(a->mem);
	free(a->conn);
	free(a->dirty);
}

static void dispatch(struct agent *a, uint64_t tag, int res)
{
	enum agent_ev kind = (enum agent_ev)(tag >> 56);
	uint32_t gen = (uint32_t)(tag >> 24);
	int idx = (int)(tag & 0xffffff);
	switch (kind) {
	case AEV_LISTEN:
		on_listen(a);
		break;
	case AEV_CONN:
		if (idx < a->max_conns && a->conn[idx].fd >= 0 && a->conn[idx].gen == gen)
			on_conn(a, idx);
		break;
	case AEV_BELL:
		if (idx < a->max_members && a->mem[idx].conn >= 0 && a->mem[idx].gen == gen) {
			if (res < 0 && res != -EAGAIN && res != -EINTR) {
				agent_leave(a, idx, "doorbell failed");
				break;
			}
			struct agent_member *am = &a->mem[idx];
			uint64_t rings = res == (int)sizeof(am->bell_buf) ? am->bell_buf : 0;
			/* quiet: read at its end (agent_quiet_end) */
			int changed = a->quiet_until ? 0 : agent_doorbell(a, idx);
			const char *over = agent_guard_bell(a, idx, rings, (uint64_t)changed, agent_now());
			if (over) {
				eject(a, idx, over);
				break;
			}
			if (agent_read(a, am->bell, &am->bell_buf, sizeof(am->bell_buf), agent_tag(AEV_BELL, am->gen, idx)) < 0)
				agent_leave(a, idx, "cannot re-arm its doorbell");
		}
		break;
	case AEV_PID:
		if (idx < a->max_members && a->mem[idx].conn >= 0 && a->mem[idx].gen == gen)
			agent_leave(a, idx, "process ended");
		break;
	case AEV_TIMER:
		if (res == -ETIME) {
			a->timer_armed = false;
			uint64_t now = agent_now();
			if (now > a->timer_at && now - a->timer_at > AGENT_STALL_NS)
				agent_stalled(a, now - a->timer_at);
			if (a->quiet_until && now >= a->quiet_until)
				agent_quiet_end(a);
			agent_tick(a);
			guard_tick(a);
		}
		break;
	case AEV_SIGNAL:
		a->stop = true;
		break;
	case AEV_CANCEL:
		break;
	}
}

int dom_agent_run(const struct dom_agent_opts *o, char *why, size_t len)
{
	struct agent a;
	int rc = agent_init(&a, o, why, len);
	if (rc) {
		agent_fini(&a);
		return rc;
	}
	agent_poll(&a, a.lsock, agent_tag(AEV_LISTEN, 0, 0));
	agent_read(&a, a.sigfd, a.sig_buf, sizeof(a.sig_buf), agent_tag(AEV_SIGNAL, 0, 0));
	printf("vmm: domain %s: %d slot%s on CPU%s", o->name, o->nslots, o->nslots == 1 ? "" : "s",
	       o->nslots == 1 ? "" : "s");
	for (int s = 0; s < o->nslots; s++)
		printf("%s%d", s ? "," : " ", o->slot_cpu[s]);
	char conf[PATH_MAX + 64];
	printf("; socket %s; confinement: %s\n", a.sock_path, dom_confine_describe(&a.confine, conf, sizeof(conf)));
	fflush(stdout);
	while (!a.stop) {
		arm_timer(&a);
		rc = io_uring_submit_and_wait(&a.ring, 1);
		if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
			snprintf(why, len, "io_uring_enter: %s", strerror(-rc));
			break;
		}
		struct io_uring_cqe *cqe;
		unsigned head, n = 0;
		io_uring_for_each_cqe(&a.ring, head, cqe)
		{
			dispatch(&a, cqe->user_data, cqe->res);
			n++;
			if (a.stop)
				break;
		}
		io_uring_cq_advance(&a.ring, n);
		rc = 0;
	}
	fprintf(stderr, "vmm: domain %s: stopping (%llu joins, %llu leaves, %llu refused, %llu stalls)\n", o->name,
		(unsigned long long)a.joins, (unsigned long long)a.leaves, (unsigned long long)a.refused,
		(unsigned long long)a.stalls);
	agent_fini(&a);
	return rc;
}
