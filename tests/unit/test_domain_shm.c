/*
 * The domain's shared segments (vmm/domain/shm.h) across a real process
 * boundary: the agent (this process) creates them, a forked member receives
 * the fds over a socket (SCM_RIGHTS, as in the VMM) and attaches. The member
 * must not be able to change the grant segment by any path the kernel
 * offers, nor resize either segment; attach must refuse anything that is
 * not what the agent makes, without leaking an fd or a mapping.
 *
 * A child counts its own checks (its copy of check.h's counters) and sends
 * the difference back; its exit status is checked as well, and alarm()
 * turns a hang into a failure.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sched/domain_core.h"
#include "tests/unit/check.h"
#include "vmm/domain/shm.h"

#define NSEATS 4
#define NVCPUS 6
#define EPOCH 0x123456789abcull
#define SEALS_SIZE (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
#define SEALS_GRANT (SEALS_SIZE | F_SEAL_FUTURE_WRITE)
#define CHILD_ALARM_S 20
#define WAIT_NS 5000000000ull

/* ---- helpers ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* mappings of any memfd: a refused attach must leave none behind */
static int memfd_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "/memfd:") != NULL;
	fclose(f);
	return n;
}

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static bool unmapped(void *p, size_t len)
{
	unsigned char vec[64];
	return len <= 64 * 4096 && mincore(p, len, vec) < 0 && errno == ENOMEM;
}

static int send_fds(int sock, int a, int b)
{
	char byte = 'F';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	int fds[2] = { a, b };
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fds(int sock, int *a, int *b)
{
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(2 * sizeof(int)))
		return -1;
	int fds[2];
	memcpy(fds, CMSG_DATA(c), sizeof(fds));
	*a = fds[0];
	*b = fds[1];
	return 0;
}

static void say(int sock, char c)
{
	if (write(sock, &c, 1) != 1)
		_exit(90);
}

static char hear(int sock)
{
	char c = 0;
	if (read(sock, &c, 1) != 1)
		return 0;
	return c;
}

/* Blocks until pid sleeps (state S): then it sits in the futex wait, the
 * only blocking call it makes after telling us it is about to. */
static bool wait_sleeping(pid_t pid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 2000; i++) {
		FILE *f = fopen(path, "r");
		if (!f)
			return false;
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		char *p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == 'S')
			return true;
		usleep(1000);
	}
	return false;
}

/* child side: ends the child with its own check counts sent to the parent */
struct child_counts {
	unsigned passed, failed;
};

static void child_end(int sock, unsigned p0, unsigned f0)
{
	struct child_counts c = { check_passed - p0, check_failed - f0 };
	if (write(sock, &c, sizeof(c)) != sizeof(c))
		_exit(91);
	_exit(c.failed ? 1 : 0);
}

/* parent side: takes the child's counts into ours and checks its exit */
static void child_reap(int sock, pid_t pid)
{
	struct child_counts c = { 0, 0 };
	ssize_t n = read(sock, &c, sizeof(c));
	CHECK_EQ(n, sizeof(c));
	check_passed += c.passed;
	check_failed += c.failed;
	int st = 0;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
}

/* A memfd of `size` with `seals` added, holding `hdr` at offset 0 if given:
 * forgeries that differ from what the agent makes in one thing. */
static int forge(uint64_t size, int seals, const struct dom_grant_hdr *hdr)
{
	int fd = memfd_create("forge", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    (hdr && pwrite(fd, hdr, sizeof(*hdr), 0) != (ssize_t)sizeof(*hdr)) ||
	    (seals && fcntl(fd, F_ADD_SEALS, seals) < 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

static const struct dom_grant_hdr good_hdr = {
	.magic = DOM_SHM_MAGIC, .nseats = NSEATS, .nvcpus = NVCPUS, .epoch = EPOCH,
};

/* ---- the words ---- */

static void test_words(void)
{
	const uint32_t gens[] = { 0, 1, 2, 0x1234, DOM_GEN_MASK - 1, DOM_GEN_MASK };
	const int slots[] = { 0, 1, 17, 254, 255 };
	for (size_t g = 0; g < sizeof(gens) / sizeof(gens[0]); g++) {
		for (unsigned fl = 0; fl < 4; fl++) {
			for (size_t s = 0; s < sizeof(slots) / sizeof(slots[0]); s++) {
				uint32_t w = dom_grant_word(gens[g], fl, slots[s]);
				CHECK(w != 0);
				CHECK_EQ(dom_grant_gen(w), gens[g]);
				CHECK_EQ(dom_grant_flags(w), fl);
				CHECK_EQ(dom_grant_slot(w), slots[s]);
			}
			uint32_t none = dom_grant_word(gens[g], fl, -1);
			CHECK_EQ(dom_grant_slot(none), -1);
			CHECK_EQ(dom_grant_gen(none), gens[g]);
			CHECK_EQ(dom_grant_flags(none), fl);
		}
		for (int want = 0; want <= 2; want++) {
			uint32_t w = dom_req_word(gens[g], (enum dom_want)want);
			CHECK_EQ(dom_req_gen(w), gens[g]);
			CHECK_EQ(dom_req_want(w), want);
		}
	}
	/* the gen wraps at 21 bits and never spills into the other fields */
	CHECK_EQ(dom_grant_gen(dom_grant_word(DOM_GEN_MASK + 1, 0, 5)), 0);
	CHECK_EQ(dom_grant_slot(dom_grant_word(DOM_GEN_MASK + 1, 0, 5)), 5);
	CHECK_EQ(dom_grant_gen(dom_grant_word(0xffffffffu, 0, 0)), DOM_GEN_MASK);
	CHECK_EQ(dom_req_gen(dom_req_word(DOM_GEN_MASK + 7, DOM_WANT_DONE)), 6);
	CHECK_EQ(dom_req_want(dom_req_word(DOM_GEN_MASK + 7, DOM_WANT_DONE)), DOM_WANT_DONE);
	/* flags out of range are cut, not carried into the gen */
	CHECK_EQ(dom_grant_gen(dom_grant_word(9, 4u | DOM_GRANT_REVOKE, 3)), 9);
	CHECK_EQ(dom_grant_flags(dom_grant_word(9, 4u | DOM_GRANT_REVOKE, 3)), DOM_GRANT_REVOKE);
	/* the all-zero word is "no slot"; a member's garbage decodes to a refusal */
	CHECK_EQ(dom_grant_slot(0), -1);
	CHECK_EQ(dom_req_want(3), -1);
	CHECK_EQ(dom_req_want(0xffffffffu), -1);
	CHECK_EQ(dom_req_gen(0xffffffffu), DOM_GEN_MASK);
}

/* ---- layout: both sides in one process see the same words ---- */

static void layout_check(int nseats, int nvcpus)
{
	struct dom_shm a, m;
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t rs, gs;
	dom_shm_sizes(nseats, nvcpus, &rs, &gs);
	CHECK(rs % (uint64_t)pg == 0 && gs % (uint64_t)pg == 0);
	const int before = 2 + DOM_SHM_BELL_LINES; /* header, live, bells */
	CHECK(gs >= (uint64_t)(before + nseats) * DOM_SHM_LINE);
	CHECK(gs < (uint64_t)(before + nseats) * DOM_SHM_LINE + (uint64_t)pg);
	CHECK(rs >= (uint64_t)(1 + nseats) * DOM_SHM_LINE + (uint64_t)nvcpus * sizeof(struct dom_req_vcpu));
	CHECK(rs < (uint64_t)(1 + nseats) * DOM_SHM_LINE + (uint64_t)nvcpus * sizeof(struct dom_req_vcpu) +
			   (uint64_t)pg);

	CHECK_EQ(dom_shm_create(&a, nseats, nvcpus, EPOCH + (uint64_t)nseats), 0);
	CHECK_EQ(a.req_size, rs);
	CHECK_EQ(a.grant_size, gs);
	CHECK(a.agent);
	int r = dup(a.req_fd), g = dup(a.grant_fd);
	CHECK_EQ(dom_shm_attach(&m, r, g, nseats, nvcpus, EPOCH + (uint64_t)nseats), 0);
	CHECK(!m.agent);
	CHECK(!fd_open(r) && !fd_open(g));
	CHECK(m.req_fd == -1 && m.grant_fd == -1);

	char *gb = a.grant, *rb = a.req;
	CHECK((char *)dom_shm_grant_hdr(&a) == gb);
	CHECK((char *)dom_shm_live(&a) == gb + DOM_SHM_LINE);
	CHECK((char *)dom_shm_req_hdr(&a) == rb);
	for (int j = 0; j < nseats; j++) {
		CHECK((char *)dom_shm_grant(&a, j) == gb + (before + j) * DOM_SHM_LINE);
		CHECK((char *)dom_shm_req(&a, j) == rb + (1 + j) * DOM_SHM_LINE);
		/* each seat's probe answer beside its req word, on its line */
		CHECK((char *)dom_shm_probe_ack(&a, j) == rb + (1 + j) * DOM_SHM_LINE + 4);
		*dom_shm_grant(&a, j) = dom_grant_word((uint32_t)j * 3, 0, j % 256);
		*dom_shm_req(&m, j) = dom_req_word((uint32_t)j * 5, DOM_WANT_SLOT);
		*dom_shm_probe_ack(&m, j) = (uint32_t)j * 11 + 1;
	}
	for (int v = 0; v < nvcpus; v++) {
		char *e = (char *)dom_shm_req_vcpu(&a, v);
		CHECK(e == rb + (1 + nseats) * DOM_SHM_LINE + v * (int)sizeof(struct dom_req_vcpu));
		CHECK(e + sizeof(struct dom_req_vcpu) <= rb + rs);
		dom_shm_req_vcpu(&m, v)->ns_running = (uint64_t)v * 1000 + 1;
	}
	/* a bell per domain slot, packed between the live line and seat 0 */
	for (int s = 0; s < DOM_SLOTS_MAX; s++) {
		char *b = (char *)dom_shm_slot_bell(&a, s);
		CHECK(b == gb + 2 * DOM_SHM_LINE + s * (int)sizeof(uint32_t));
		CHECK(b + sizeof(uint32_t) <= gb + before * DOM_SHM_LINE);
		*dom_shm_slot_bell(&a, s) = (uint32_t)s * 7 + 1;
	}
	CHECK(dom_shm_slot_bell(&a, -1) == NULL && dom_shm_slot_bell(&a, DOM_SLOTS_MAX) == NULL);
	/* written on one side's mapping, read on the other's */
	int bad = 0;
	for (int s = 0; s < DOM_SLOTS_MAX; s++)
		bad += *dom_shm_slot_bell(&m, s) != (uint32_t)s * 7 + 1;
	for (int j = 0; j < nseats; j++) {
		bad += *dom_shm_grant(&m, j) != dom_grant_word((uint32_t)j * 3, 0, j % 256);
		bad += *dom_shm_req(&a, j) != dom_req_word((uint32_t)j * 5, DOM_WANT_SLOT);
		bad += *dom_shm_probe_ack(&a, j) != (uint32_t)j * 11 + 1;
	}
	for (int v = 0; v < nvcpus; v++)
		bad += dom_shm_req_vcpu(&a, v)->ns_running != (uint64_t)v * 1000 + 1;
	CHECK_EQ(bad, 0);
	/* no seat or vCPU outside the segment */
	CHECK(dom_shm_grant(&a, -1) == NULL && dom_shm_grant(&a, nseats) == NULL);
	CHECK(dom_shm_req(&m, -1) == NULL && dom_shm_req(&m, nseats) == NULL);
	CHECK(dom_shm_probe_ack(&m, -1) == NULL && dom_shm_probe_ack(&m, nseats) == NULL);
	CHECK(dom_shm_req_vcpu(&m, -1) == NULL && dom_shm_req_vcpu(&m, nvcpus) == NULL);

	void *ar = a.req, *ag = a.grant, *mr = m.req, *mg = m.grant;
	dom_shm_destroy(&m);
	CHECK(m.req == NULL && m.grant == NULL);
	CHECK(unmapped(mr, m.req_size) && unmapped(mg, m.grant_size));
	CHECK(!unmapped(ar, a.req_size) && !unmapped(ag, a.grant_size));
	int rfd = a.req_fd, gfd = a.grant_fd;
	dom_shm_destroy(&a);
	CHECK(unmapped(ar, a.req_size) && unmapped(ag, a.grant_size));
	CHECK(!fd_open(rfd) && !fd_open(gfd));
	CHECK(a.req_fd == -1 && a.grant_fd == -1);
	dom_shm_destroy(&a); /* twice is harmless */
}

static void test_layout(void)
{
	int fds0 = fd_count(), maps0 = memfd_maps();
	layout_check(1, 1);
	layout_check(NSEATS, NVCPUS);
	layout_check(63, 64);       /* grant just past one page */
	layout_check(DOM_VCPUS_MAX, DOM_VCPUS_MAX);
	CHECK_EQ(fd_count(), fds0);
	CHECK_EQ(memfd_maps(), maps0);
}

static void test_create_refuses(void)
{
	struct dom_shm a;
	int fds0 = fd_count();
	CHECK_EQ(dom_shm_create(&a, 0, 1, 1), -EINVAL);
	CHECK_EQ(dom_shm_create(&a, 2, 1, 1), -EINVAL);
	CHECK_EQ(dom_shm_create(&a, 1, DOM_VCPUS_MAX + 1, 1), -EINVAL);
	CHECK_EQ(dom_shm_create(&a, -1, 4, 1), -EINVAL);
	CHECK(a.req == NULL && a.grant == NULL && a.req_fd == -1 && a.grant_fd == -1);
	CHECK_EQ(fd_count(), fds0);
}

/* ---- the agent's own view of req is read-only ---- */

static void test_agent_req_readonly(void)
{
	struct dom_shm a;
	CHECK_EQ(dom_shm_create(&a, NSEATS, NVCPUS, EPOCH), 0);
	/* the kernel refuses to store into it on our behalf ... */
	int p[2];
	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(write(p[1], "abcd", 4), 4);
	errno = 0;
	CHECK_EQ(read(p[0], dom_shm_req(&a, 0), 4), -1);
	CHECK_EQ(errno, EFAULT);
	close(p[0]);
	close(p[1]);
	/* ... and a store of our own faults */
	pid_t pid = fork();
	if (pid == 0) {
		alarm(CHILD_ALARM_S);
		signal(SIGSEGV, SIG_DFL); /* not a sanitizer's report */
		*(volatile uint32_t *)dom_shm_req(&a, 1) = 1;
		_exit(0);
	}
	int st = 0;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	CHECK_EQ(*dom_shm_req(&a, 1), 0);
	dom_shm_destroy(&a);
}

/* ---- the member, in a child ---- */

/* Every path to change grant, tried by the member with its own fd. */
static void member_tries_grant(struct dom_shm *m, int gfd)
{
	uint64_t gs = m->grant_size;
	uint32_t before = *dom_shm_grant(m, 0);
	uint32_t junk = 0xdeadbeef;

	errno = 0;
	CHECK(mmap(NULL, gs, PROT_READ | PROT_WRITE, MAP_SHARED, gfd, 0) == MAP_FAILED);
	CHECK_EQ(errno, EPERM);
	CHECK(mmap(NULL, gs, PROT_WRITE, MAP_SHARED, gfd, 0) == MAP_FAILED);
	CHECK(mprotect(m->grant, gs, PROT_READ | PROT_WRITE) < 0);
	void *ro = mmap(NULL, gs, PROT_READ, MAP_SHARED, gfd, 0);
	CHECK(ro != MAP_FAILED);
	if (ro != MAP_FAILED) {
		CHECK(mprotect(ro, gs, PROT_READ | PROT_WRITE) < 0);
		CHECK(madvise(ro, gs, MADV_REMOVE) < 0);
		munmap(ro, gs);
	}
	CHECK(madvise(m->grant, gs, MADV_REMOVE) < 0);
	errno = 0;
	CHECK_EQ(write(gfd, &junk, sizeof(junk)), -1);
	CHECK_EQ(errno, EPERM);
	errno = 0;
	CHECK_EQ(pwrite(gfd, &junk, sizeof(junk), 2 * DOM_SHM_LINE), -1);
	CHECK_EQ(errno, EPERM);
	errno = 0;
	CHECK_EQ(ftruncate(gfd, (off_t)gs / 2), -1);
	CHECK_EQ(errno, EPERM);
	CHECK_EQ(ftruncate(gfd, 0), -1);
	errno = 0;
	CHECK_EQ(ftruncate(gfd, (off_t)gs * 2), -1);
	CHECK_EQ(errno, EPERM);
	/* a hole would read back as zeros: "no slot" */
	CHECK_EQ(fallocate(gfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)gs), -1);
	CHECK_EQ(fallocate(gfd, 0, (off_t)gs, 4096), -1);
	/* no seal can be added, and no call takes one away */
	errno = 0;
	CHECK_EQ(fcntl(gfd, F_ADD_SEALS, F_SEAL_WRITE), -1);
	CHECK_EQ(errno, EPERM);
	CHECK_EQ(fcntl(gfd, F_ADD_SEALS, 0), -1);
	CHECK_EQ(fcntl(gfd, F_GET_SEALS), SEALS_GRANT);
	/* a fresh open file description of the same memfd is bound the same */
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", gfd);
	int again = open(path, O_RDWR);
	CHECK(again >= 0);
	if (again >= 0) {
		CHECK_EQ(fcntl(again, F_GET_SEALS), SEALS_GRANT);
		CHECK_EQ(write(again, &junk, sizeof(junk)), -1);
		CHECK_EQ(ftruncate(again, 0), -1);
		CHECK(mmap(NULL, gs, PROT_READ | PROT_WRITE, MAP_SHARED, again, 0) == MAP_FAILED);
		CHECK_EQ(fcntl(again, F_ADD_SEALS, F_SEAL_WRITE), -1);
		close(again);
	}
	/* a private copy may be written: the shared words do not change */
	uint32_t *priv = mmap(NULL, gs, PROT_READ | PROT_WRITE, MAP_PRIVATE, gfd, 0);
	CHECK(priv != MAP_FAILED);
	if (priv != MAP_FAILED) {
		priv[2 * DOM_SHM_LINE / 4] = junk;
		munmap(priv, gs);
	}
	struct stat st;
	CHECK_EQ(fstat(gfd, &st), 0);
	CHECK_EQ(st.st_size, gs);
	CHECK_EQ(*dom_shm_grant(m, 0), before);
}

static void member_tries_req(struct dom_shm *m, int rfd)
{
	uint64_t rs = m->req_size;
	errno = 0;
	CHECK_EQ(ftruncate(rfd, (off_t)rs / 2), -1);
	CHECK_EQ(errno, EPERM);
	CHECK_EQ(ftruncate(rfd, 0), -1);
	errno = 0;
	CHECK_EQ(ftruncate(rfd, (off_t)rs * 2), -1);
	CHECK_EQ(errno, EPERM);
	CHECK_EQ(fallocate(rfd, 0, (off_t)rs, 4096), -1);
	CHECK_EQ(fcntl(rfd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE), -1);
	struct stat st;
	CHECK_EQ(fstat(rfd, &st), 0);
	CHECK_EQ(st.st_size, rs);
}

static void member(int sock)
{
	unsigned p0 = check_passed, f0 = check_failed;
	struct dom_shm m;
	int rfd = -1, gfd = -1;
	alarm(CHILD_ALARM_S);

	CHECK_EQ(recv_fds(sock, &rfd, &gfd), 0);
	int fds_before = fd_count();
	int rdup = dup(rfd), gdup = dup(gfd); /* to try them after attach */
	CHECK_EQ(dom_shm_attach(&m, rfd, gfd, NSEATS, NVCPUS, EPOCH), 0);
	CHECK(!fd_open(rfd) && !fd_open(gfd));
	CHECK_EQ(fd_count(), fds_before); /* two closed, two dups */

	/* the header and the words the agent wrote before sending */
	const struct dom_grant_hdr *h = dom_shm_grant_hdr(&m);
	CHECK_EQ(h->magic, DOM_SHM_MAGIC);
	CHECK_EQ(h->nseats, NSEATS);
	CHECK_EQ(h->nvcpus, NVCPUS);
	CHECK_EQ(h->epoch, EPOCH);
	CHECK_EQ(dom_grant_slot(*dom_shm_grant(&m, 2)), 7);
	CHECK_EQ(dom_grant_gen(*dom_shm_grant(&m, 2)), 11);
	CHECK_EQ(dom_grant_slot(*dom_shm_grant(&m, 0)), -1);
	CHECK_EQ(strcmp(dom_shm_live(&m)->policy, "fair"), 0);

	/* our words, which the agent reads */
	for (int j = 0; j < NSEATS; j++)
		__atomic_store_n(dom_shm_req(&m, j), dom_req_word(100 + (uint32_t)j, DOM_WANT_SLOT),
				 __ATOMIC_RELEASE);
	for (int v = 0; v < NVCPUS; v++)
		dom_shm_req_vcpu(&m, v)->ns_running = 1000 * (uint64_t)v + 7;
	dom_shm_req_hdr(&m)->policy_ack = 3;
	say(sock, 'W');

	/* agent -> member: the agent wakes us once we sleep on a2m */
	uint32_t *a2m = &dom_shm_live(&m)->a2m;
	uint32_t seen = __atomic_load_n(a2m, __ATOMIC_ACQUIRE);
	say(sock, 'S');
	uint64_t t0 = now_ns();
	CHECK_EQ(dom_futex_wait(a2m, seen, WAIT_NS), 0);
	CHECK(now_ns() - t0 < WAIT_NS);
	CHECK(__atomic_load_n(a2m, __ATOMIC_ACQUIRE) != seen);

	/* member -> agent: the agent sleeps on our seat 1 word until we change it */
	CHECK_EQ(hear(sock), 'A');
	CHECK(wait_sleeping(getppid()));
	__atomic_store_n(dom_shm_req(&m, 1), dom_req_word(555, DOM_WANT_DONE), __ATOMIC_RELEASE);
	CHECK_EQ(dom_futex_wake(dom_shm_req(&m, 1)), 1);

	member_tries_grant(&m, gdup);
	member_tries_req(&m, rdup);
	close(rdup);
	close(gdup);
	say(sock, 'T');
	child_end(sock, p0, f0);
}

static void test_member(void)
{
	struct dom_shm a;
	int sv[2];
	CHECK_EQ(dom_shm_create(&a, NSEATS, NVCPUS, EPOCH), 0);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	*dom_shm_grant(&a, 2) = dom_grant_word(11, 0, 7);
	strcpy(dom_shm_live(&a)->policy, "fair");
	/* sealed: the agent's own mapping still writes, and no new one can */
	CHECK_EQ(fcntl(a.grant_fd, F_GET_SEALS), SEALS_GRANT);
	CHECK_EQ(fcntl(a.req_fd, F_GET_SEALS), SEALS_SIZE);
	CHECK(mmap(NULL, a.grant_size, PROT_READ | PROT_WRITE, MAP_SHARED, a.grant_fd, 0) == MAP_FAILED);

	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		dom_shm_destroy(&a); /* the member has only what the socket brings */
		member(sv[1]);
	}
	close(sv[1]);
	CHECK_EQ(send_fds(sv[0], a.req_fd, a.grant_fd), 0);
	dom_shm_close_fds(&a);
	CHECK(a.req_fd == -1 && a.grant_fd == -1);

	CHECK_EQ(hear(sv[0]), 'W');
	for (int j = 0; j < NSEATS; j++) {
		uint32_t w = __atomic_load_n(dom_shm_req(&a, j), __ATOMIC_ACQUIRE);
		CHECK_EQ(dom_req_gen(w), 100 + j);
		CHECK_EQ(dom_req_want(w), DOM_WANT_SLOT);
	}
	for (int v = 0; v < NVCPUS; v++)
		CHECK_EQ(dom_shm_req_vcpu(&a, v)->ns_running, 1000 * (uint64_t)v + 7);
	CHECK_EQ(dom_shm_req_hdr(&a)->policy_ack, 3);

	CHECK_EQ(hear(sv[0]), 'S');
	CHECK(wait_sleeping(pid));
	__atomic_add_fetch(&dom_shm_live(&a)->a2m, 1, __ATOMIC_RELEASE);
	CHECK_EQ(dom_futex_wake(&dom_shm_live(&a)->a2m), 1);

	uint32_t *r1 = dom_shm_req(&a, 1);
	uint32_t seen = __atomic_load_n(r1, __ATOMIC_ACQUIRE);
	say(sv[0], 'A');
	uint64_t t0 = now_ns();
	CHECK_EQ(dom_futex_wait(r1, seen, WAIT_NS), 0);
	CHECK(now_ns() - t0 < WAIT_NS);
	uint32_t w = __atomic_load_n(r1, __ATOMIC_ACQUIRE);
	CHECK_EQ(dom_req_gen(w), 555);
	CHECK_EQ(dom_req_want(w), DOM_WANT_DONE);

	CHECK_EQ(hear(sv[0]), 'T');
	child_reap(sv[0], pid);
	/* whatever the member tried, grant is as the agent left it */
	CHECK_EQ(*dom_shm_grant(&a, 2), dom_grant_word(11, 0, 7));
	CHECK_EQ(dom_shm_grant_hdr(&a)->magic, DOM_SHM_MAGIC);
	close(sv[0]);
	dom_shm_destroy(&a);
}

/* ---- futex outcomes in one process ---- */

static void test_futex_results(void)
{
	struct dom_shm a;
	CHECK_EQ(dom_shm_create(&a, 1, 1, EPOCH), 0);
	uint32_t *w = &dom_shm_live(&a)->a2m;
	*w = 5;
	CHECK_EQ(dom_futex_wait(w, 4, WAIT_NS), -EAGAIN);
	uint64_t t0 = now_ns();
	CHECK_EQ(dom_futex_wait(w, 5, 20000000ull), -ETIMEDOUT);
	uint64_t took = now_ns() - t0;
	CHECK(took >= 20000000ull && took < WAIT_NS);
	CHECK_EQ(dom_futex_wake(w), 0);
	dom_shm_destroy(&a);
}

/* ---- attach refuses what the agent does not make ---- */

static int attach_leaves(int rfd, int gfd, int nseats, int nvcpus, uint64_t epoch)
{
	struct dom_shm m;
	int rc = dom_shm_attach(&m, rfd, gfd, nseats, nvcpus, epoch);
	if (rc == 0)
		dom_shm_destroy(&m);
	CHECK(rfd < 0 || !fd_open(rfd));
	CHECK(gfd < 0 || !fd_open(gfd));
	return rc;
}

static void test_attach_refuses(void)
{
	uint64_t rs, gs;
	dom_shm_sizes(NSEATS, NVCPUS, &rs, &gs);
	int fds0 = fd_count(), maps0 = memfd_maps();
	struct dom_grant_hdr h;

	/* the forgeries are good but for their one difference */
	CHECK_EQ(attach_leaves(forge(rs, SEALS_SIZE, NULL), forge(gs, SEALS_GRANT, &good_hdr),
			       NSEATS, NVCPUS, EPOCH), 0);

	/* not a memfd */
	int p[2];
	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(attach_leaves(p[0], p[1], NSEATS, NVCPUS, EPOCH), -EPROTO);
	CHECK_EQ(pipe(p), 0);
	close(p[1]);
	CHECK_EQ(attach_leaves(forge(rs, SEALS_SIZE, NULL), p[0], NSEATS, NVCPUS, EPOCH), -EPROTO);
	const char *dirs[] = { "/tmp", "/dev/shm", "." };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char path[256];
		snprintf(path, sizeof(path), "%s/test_domain_shm.XXXXXX", dirs[i]);
		int f = mkstemp(path);
		if (f < 0)
			continue; /* no such place here: the others still run */
		unlink(path);
		CHECK_EQ(ftruncate(f, (off_t)gs), 0);
		CHECK_EQ(pwrite(f, &good_hdr, sizeof(good_hdr), 0), sizeof(good_hdr));
		CHECK_EQ(attach_leaves(forge(rs, SEALS_SIZE, NULL), f, NSEATS, NVCPUS, EPOCH), -EPROTO);
	}
	/* wrong size, either segment, either way */
	CHECK_EQ(attach_leaves(forge(rs, SEALS_SIZE, NULL), forge(gs + 4096, SEALS_GRANT, &good_hdr),
			       NSEATS, NVCPUS, EPOCH), -EPROTO);
	CHECK_EQ(attach_leaves(forge(rs, SEALS_SIZE, NULL), forge(gs - 64, SEALS_GRANT, &good_hdr),
			       NSEATS, NVCPUS, EPOCH), -EPROTO);
	CHECK_EQ(attach_leaves(forge(rs + 4096, SEALS_SIZE, NULL), forge(gs, SEALS_GRANT, &good_hdr),
			       NSEATS, NVCPUS, EPOCH), -EPROTO);
	/* seals missing, one at a time */
	CHECK_EQ(attach_leaves(forge(rs, SEALS_SIZE, NULL), forge(gs, 0, &good_hdr),
			       NSEATS, NVCPUS, EPOCH), -EPROTO);
	CHECK_EQ(attach_leaves(forge(rs, 0, NULL), forge(gs, SEALS_GRANT, &good_hdr),
			       NSEATS, NVCPUS, EPOCH), -EPROTO);
	const int need[] = { F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_SEAL, F_SEAL_FUTURE_WRITE };
	for (size_t i = 0; i < 4; i++) {
		CHECK_EQ(attach_leaves(forge(rs, SEALS_SIZE, NULL), forge(gs, SEALS_GRANT & ~need[i], &good_hdr),
				       NSEATS, NVCPUS, EPOCH), -EPROTO);
		if (need[i] != F_SEAL_FUTURE_WRITE)
			CHECK_EQ(attach_leaves(forge(rs, SEALS_SIZE & ~need[i], NULL),
					       forge(gs, SEALS_GRANT, &good_hdr), NSEATS, NVCPUS, EPOCH),
				 -EPROTO);
	}
	/* a req the member could not write; the two swapped */
	CHECK_EQ(attach_leaves(forge(rs, SEALS_SIZE | F_SEAL_FUTURE_WRITE, NULL),
			       forge(gs, SEALS_GRANT, &good_hdr), NSEATS, NVCPUS, EPOCH), -EPROTO);
	CHECK_EQ(attach_leaves(forge(rs, SEALS_SIZE | F_SEAL_WRITE, NULL),
			       forge(gs, SEALS_GRANT, &good_hdr), NSEATS, NVCPUS, EPOCH), -EPROTO);
	if (rs == gs)
		CHECK_EQ(attach_leaves(forge(gs, SEALS_GRANT, &good_hdr), forge(rs, SEALS_SIZE, NULL),
				       NSEATS, NVCPUS, EPOCH), -EPROTO);
	/* the header: each field wrong alone */
	h = good_hdr;
	h.magic ^= 1;
	CHECK_EQ(attach_leaves(forge(rs, SEALS_SIZE, NULL), forge(gs, SEALS_GRANT, &h),
			       NSEATS, NVCPUS, EPOCH), -EPROTO);
	h = good_hdr;
	h.nseats = NSEATS + 1; /* same page counts: only the header tells */
	CHECK_EQ(attach_leaves(forge(rs, SEALS_SIZE, NULL), forge(gs, SEALS_GRANT, &h),
			       NSEATS, NVCPUS, EPOCH), -EPROTO);
	h = good_hdr;
	h.nvcpus = NVCPUS + 1;
	CHECK_EQ(attach_leaves(forge(rs, SEALS_SIZE, NULL), forge(gs, SEALS_GRANT, &h),
			       NSEATS, NVCPUS, EPOCH), -EPROTO);
	CHECK_EQ(attach_leaves(forge(rs, SEALS_SIZE, NULL), forge(gs, SEALS_GRANT, &good_hdr),
			       NSEATS, NVCPUS, EPOCH + 1), -EPROTO);
	/* the agent's real segments, with the member's expectation wrong */
	struct dom_shm a;
	const int ask[][2] = { { NSEATS + 1, NVCPUS }, { NSEATS, NVCPUS + 1 }, { NSEATS - 1, NVCPUS } };
	for (size_t i = 0; i < 3; i++) {
		CHECK_EQ(dom_shm_create(&a, NSEATS, NVCPUS, EPOCH), 0);
		CHECK_EQ(attach_leaves(dup(a.req_fd), dup(a.grant_fd), ask[i][0], ask[i][1], EPOCH), -EPROTO);
		dom_shm_destroy(&a);
	}
	CHECK_EQ(dom_shm_create(&a, NSEATS, NVCPUS, EPOCH), 0);
	CHECK_EQ(attach_leaves(dup(a.req_fd), dup(a.grant_fd), NSEATS, NVCPUS, EPOCH ^ (1ull << 40)), -EPROTO);
	CHECK_EQ(attach_leaves(dup(a.grant_fd), dup(a.req_fd), NSEATS, NVCPUS, EPOCH), -EPROTO);
	/* counts no member may have */
	CHECK_EQ(attach_leaves(dup(a.req_fd), dup(a.grant_fd), 0, NVCPUS, EPOCH), -EINVAL);
	CHECK_EQ(attach_leaves(dup(a.req_fd), dup(a.grant_fd), NSEATS, NSEATS - 1, EPOCH), -EINVAL);
	CHECK_EQ(attach_leaves(dup(a.req_fd), dup(a.grant_fd), NSEATS, DOM_VCPUS_MAX + 1, EPOCH), -EINVAL);
	/* and once more right, so the refusals above were for their reasons */
	CHECK_EQ(attach_leaves(dup(a.req_fd), dup(a.grant_fd), NSEATS, NVCPUS, EPOCH), 0);
	dom_shm_destroy(&a);

	CHECK_EQ(fd_count(), fds0);
	CHECK_EQ(memfd_maps(), maps0);
}

int main(void)
{
	RUN(test_words);
	RUN(test_layout);
	RUN(test_create_refuses);
	RUN(test_futex_results);
	RUN(test_agent_req_readonly);
	RUN(test_member);
	RUN(test_attach_refuses);
	return check_summary();
}
