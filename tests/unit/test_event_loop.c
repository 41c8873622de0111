/*
 * The event loop's ring (vmm/host/event_loop.c), on this host's real
 * io_uring: it accepts only the opcodes its helpers use (issue 15: the
 * IORING_REGISTER_RESTRICTIONS lock-down), the helpers still work through
 * it, and a request that cannot be queued is not lost silently.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "vmm/host/event_loop.h"

struct seen {
	int calls, res;
};

static void on_done(void *arg, int res)
{
	struct seen *s = arg;
	s->calls++;
	s->res = res;
}

/* One raw SQE of the given opcode and flags straight into the ring; its completion's res. */
static int submit_raw(struct evloop *l, uint8_t opcode, uint8_t flags, int fd, const void *buf, unsigned len)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);
	if (!sqe)
		return -ENOSPC;
	io_uring_prep_rw(opcode, sqe, fd, buf, len, 0);
	sqe->flags = flags;
	io_uring_sqe_set_data(sqe, NULL);
	int rc = io_uring_submit_and_wait(&l->ring, 1);
	if (rc < 0)
		return rc;
	struct io_uring_cqe *cqe;
	rc = io_uring_peek_cqe(&l->ring, &cqe);
	if (rc < 0)
		return rc;
	int res = cqe->res;
	io_uring_cqe_seen(&l->ring, cqe);
	return res;
}

/* What a forged SQE may do: only the helpers' opcodes, no SQE flag. */
static void restricted_ring(void)
{
	struct evloop l;
	CHECK_EQ(evloop_init(&l), 0);
	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	CHECK(fd >= 0);
	uint64_t one = 1;
	/* a write (and nop, openat) is outside the list: refused, not done */
	CHECK_EQ(submit_raw(&l, IORING_OP_WRITE, 0, fd, &one, sizeof(one)), -EACCES);
	CHECK_EQ(submit_raw(&l, IORING_OP_WRITE, IOSQE_FIXED_FILE, 0, &one, sizeof(one)), -EACCES);
	CHECK_EQ(submit_raw(&l, IORING_OP_NOP, IOSQE_FIXED_FILE, -1, NULL, 0), -EACCES);
	CHECK_EQ(submit_raw(&l, IORING_OP_OPENAT, 0, AT_FDCWD, "/etc/passwd", 0), -EACCES);
	/* an allowed opcode on a plain fd, not a registered one: refused too */
	uint64_t got = 0;
	CHECK_EQ(submit_raw(&l, IORING_OP_READ, 0, fd, &got, sizeof(got)), -EACCES);
	/* and the table cannot be grown or swapped but by its one allowed update */
	int other[1] = { fd };
	CHECK_EQ(syscall(__NR_io_uring_register, l.ring.ring_fd, IORING_UNREGISTER_FILES, NULL, 0) < 0 ? -errno : 0,
		 -EACCES);
	CHECK_EQ(syscall(__NR_io_uring_register, l.ring.ring_fd, IORING_REGISTER_FILES, other, 1) < 0 ? -errno : 0,
		 -EACCES);
	uint64_t v = 0;
	CHECK_EQ(read(fd, &v, sizeof(v)) < 0 ? -errno : 0, -EAGAIN); /* the write never happened */
	close(fd);
	evloop_fini(&l);
}

/* The allowed opcodes still work: a read, a poll, a timeout and its move. */
static void helpers_work(void)
{
	struct evloop l;
	CHECK_EQ(evloop_init(&l), 0);
	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	uint64_t buf = 0, one = 1;
	struct seen rd = { 0 }, pl = { 0 }, tm = { 0 };
	struct ev rd_ev = { .cb = on_done, .arg = &rd }, pl_ev = { .cb = on_done, .arg = &pl },
		  tm_ev = { .cb = on_done, .arg = &tm };
	CHECK_EQ(evloop_poll(&l, &pl_ev, fd), 0);
	CHECK_EQ(write(fd, &one, sizeof(one)), (long)sizeof(one));
	while (!pl.calls)
		CHECK(evloop_run_once(&l) >= 0);
	CHECK(pl.res > 0);
	CHECK_EQ(evloop_read(&l, &rd_ev, fd, &buf, sizeof(buf)), 0);
	while (!rd.calls)
		CHECK(evloop_run_once(&l) >= 0);
	CHECK_EQ(rd.res, (int)sizeof(buf));
	CHECK_EQ(buf, 1);
	uint64_t now = monotonic_ns();
	CHECK_EQ(evloop_timeout_at(&l, &tm_ev, now + 10000000000ull), 0);
	CHECK_EQ(evloop_timeout_move(&l, &tm_ev, now + 1000000ull), 0);
	while (!tm.calls)
		CHECK(evloop_run_once(&l) >= 0);
	CHECK_EQ(tm.res, -ETIME);
	CHECK_EQ(evloop_error(&l), 0);
	close(fd);
	evloop_fini(&l);
}

/*
 * A full SQ whose submission fails (here: a ring not yet enabled) loses the
 * next request: the helper says -EBUSY, and the loop keeps saying it rather
 * than waiting for a completion that will never come.
 */
static void lost_request_is_reported(void)
{
	static struct evloop l;
	memset(&l, 0, sizeof(l));
	l.cap = 2;
	CHECK_EQ(io_uring_queue_init(1, &l.ring, IORING_SETUP_R_DISABLED), 0);
	int empty[2] = { -1, -1 }; /* the file table the helpers expect (evloop_init makes it) */
	CHECK_EQ(syscall(__NR_io_uring_register, l.ring.ring_fd, IORING_REGISTER_FILES, empty, 2), 0);
	int fd = eventfd(0, EFD_CLOEXEC);
	uint64_t a = 0, b = 0;
	struct seen s = { 0 };
	struct ev e1 = { .cb = on_done, .arg = &s }, e2 = { .cb = on_done, .arg = &s };
	CHECK_EQ(evloop_read(&l, &e1, fd, &a, sizeof(a)), 0);
	CHECK_EQ(evloop_read(&l, &e2, fd, &b, sizeof(b)), -EBUSY);
	CHECK_EQ(evloop_error(&l), -EBUSY);
	/* even once the ring works again, the loss is not forgotten */
	CHECK_EQ(syscall(__NR_io_uring_register, l.ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0), 0);
	uint64_t one = 1;
	CHECK_EQ(write(fd, &one, sizeof(one)), (long)sizeof(one));
	CHECK_EQ(evloop_run_once(&l), -EBUSY);
	CHECK_EQ(evloop_run_once(&l), -EBUSY);
	close(fd);
	evloop_fini(&l);
}

int main(void)
{
	RUN(restricted_ring);
	RUN(helpers_work);
	RUN(lost_request_is_reported);
	return check_summary();
}
