#include "devices/blk_backend_uring.h"
#include "lib/uring_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int fail(char *err, size_t errlen, int code, const char *fmt, const char *path, const char *why)
{
	if (err && errlen)
		snprintf(err, errlen, fmt, path, why);
	return code;
}

/*
 * The only opcodes the backend submits: the ring is created disabled and
 * locked to these (IORING_REGISTER_RESTRICTIONS, Linux 5.10), on the one
 * registered file, the image (IMAGE_SLOT; IOSQE_FIXED_FILE required), with
 * no register operation left allowed. A request forged into the SQ (shared
 * memory) cannot open, write or reach any other file: it completes with
 * -EACCES. All of it happens in blk_backend_open, before any seccomp filter.
 */
static const uint8_t disk_ops[] = { IORING_OP_READV, IORING_OP_WRITEV, IORING_OP_FSYNC, IORING_OP_ASYNC_CANCEL };
#define IMAGE_SLOT 0

/*
 * The reset's cancel: every request on the image's registered file
 * (IORING_ASYNC_CANCEL_ALL and _FD, Linux 5.19; _FD_FIXED, Linux 6.0).
 * ASYNC_CANCEL takes no file itself, but the restriction requires
 * IOSQE_FIXED_FILE of every SQE; the kernel accepts it and then reads fd
 * as a slot too.
 */
static void prep_cancel(struct io_uring_sqe *sqe)
{
	io_uring_prep_cancel_fd(sqe, IMAGE_SLOT, IORING_ASYNC_CANCEL_ALL | IORING_ASYNC_CANCEL_FD_FIXED);
	sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data(sqe, NULL);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Waits at most ns for one completion (none is reaped): 0 when one is
 * there, -ETIME when the time ran out, -EINTR, or io_uring_enter's -errno.
 * The timeout travels with the call (IORING_ENTER_EXT_ARG, Linux 5.11), not
 * as an IORING_OP_TIMEOUT entry, which the locked ring would refuse and
 * which would need a free SQE. Called raw, so its result is the kernel's
 * own (-1 and errno), whatever liburing's wrappers return.
 */
static int wait_cqe_for(struct blk_backend *b, uint64_t ns)
{
	struct __kernel_timespec ts = { .tv_sec = (long long)(ns / 1000000000ull),
					.tv_nsec = (long long)(ns % 1000000000ull) };
	struct io_uring_getevents_arg arg = { .ts = (uint64_t)(uintptr_t)&ts };
	long r = syscall(__NR_io_uring_enter, b->ring.ring_fd, 0, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG,
			 &arg, sizeof(arg));
	return r < 0 ? -errno : 0;
}

/*
 * A kernel that does not know one of the cancel's flags answers -EINVAL
 * only when a reset needs it, and the reset would then wait its whole bound
 * for a read it could not stop: the cancel is tried once here, with nothing
 * in flight (0 or -ENOENT: nothing matched), so that such a kernel fails
 * set-up. Its completion is posted inline by the submitting io_uring_enter;
 * BLK_PROBE_WAIT_MS only guards against a kernel that never posts it.
 */
static int probe_cancel(struct blk_backend *b)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
	if (!sqe)
		return -EBUSY;
	prep_cancel(sqe);
	int r = io_uring_submit(&b->ring);
	if (r >= 0)
		r = wait_cqe_for(b, BLK_PROBE_WAIT_MS * 1000000ull);
	struct io_uring_cqe *cqe;
	if (r >= 0)
		r = io_uring_peek_cqe(&b->ring, &cqe);
	if (r < 0)
		return r == -ETIME ? -ETIMEDOUT : r;
	r = cqe->res;
	io_uring_cqe_seen(&b->ring, cqe);
	uint64_t cnt;
	while (read(b->efd, &cnt, sizeof(cnt)) == (ssize_t)sizeof(cnt))
		; /* the probe's completion signalled the eventfd */
	return r >= 0 || r == -ENOENT ? 0 : r;
}

#ifdef VMM_TEST_HOOKS
/*
 * Test builds only (build/vmm-test and the unit tests that link the hooked
 * objects), read by blk_backend_open:
 *  - VMM_TEST_BLK_RING_FD=N registers fd N (a pipe whose reads wait) as the
 *    ring's file instead of the image, so that a read can be in flight at a
 *    reset. The image keeps its own fd for the size; a dup2 over it would
 *    not reach the ring.
 *  - VMM_TEST_BLK_CANCEL=nosqe: a drain's cancel finds no free SQE (a ring
 *    whose SQ stays full); =miss: the cancel is submitted but stops nothing
 *    (it names no request: -ENOENT), as a kernel that cannot stop a read.
 *  - VMM_TEST_BLK_DRAIN_MS=N: the drain's bound, shortened from
 *    BLK_DRAIN_WAIT_MS so a test that expires it takes no 5 s.
 */
enum test_cancel { TEST_CANCEL_REAL, TEST_CANCEL_NOSQE, TEST_CANCEL_MISS };
static enum test_cancel test_cancel;

static void read_test_hooks(struct blk_backend *b)
{
	const char *c = getenv("VMM_TEST_BLK_CANCEL"), *ms = getenv("VMM_TEST_BLK_DRAIN_MS");
	test_cancel = !c ? TEST_CANCEL_REAL : !strcmp(c, "nosqe") ? TEST_CANCEL_NOSQE
			: !strcmp(c, "miss") ? TEST_CANCEL_MISS : TEST_CANCEL_REAL;
	if (ms)
		b->drain_wait_ms = (unsigned)atoi(ms);
}

static int ring_file(const struct blk_backend *b)
{
	const char *v = getenv("VMM_TEST_BLK_RING_FD");
	return v ? atoi(v) : b->fd;
}

static bool test_no_cancel_sqe(void)
{
	return test_cancel == TEST_CANCEL_NOSQE;
}

static void test_miss_cancel(struct io_uring_sqe *sqe)
{
	if (test_cancel != TEST_CANCEL_MISS)
		return;
	io_uring_prep_cancel64(sqe, ~0ull, 0); /* a user_data no request carries */
	sqe->fd = IMAGE_SLOT;
	sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data(sqe, NULL);
}
#else
static void read_test_hooks(struct blk_backend *b)
{
	(void)b;
}

static int ring_file(const struct blk_backend *b)
{
	return b->fd;
}

static bool test_no_cancel_sqe(void)
{
	return false;
}

static void test_miss_cancel(struct io_uring_sqe *sqe)
{
	(void)sqe;
}
#endif

/* The ring, locked down and enabled, its eventfd registered; 0 or -errno (*step: what failed). */
static int lock_ring(struct blk_backend *b, unsigned depth, const char **step)
{
	int r = io_uring_queue_init(depth, &b->ring, IORING_SETUP_R_DISABLED);
	if (r) {
		*step = "io_uring set-up (IORING_SETUP_R_DISABLED: Linux 5.10)";
		return r;
	}
	int fd = ring_file(b);
	r = uring_register(&b->ring, IORING_REGISTER_FILES, &fd, 1);
	*step = "io_uring: registering the image's file";
	if (!r) {
		r = io_uring_register_eventfd(&b->ring, b->efd);
		*step = "io_uring: registering the completion eventfd";
	}
	if (!r) {
		r = uring_lock(&b->ring, disk_ops, sizeof(disk_ops), NULL, 0);
		*step = "io_uring: IORING_REGISTER_RESTRICTIONS (Linux 5.10)";
	}
	if (!r) {
		r = probe_cancel(b);
		*step = "io_uring: cancelling by registered file at a reset (IORING_ASYNC_CANCEL_FD_FIXED, "
			"Linux 6.0)";
	}
	if (r)
		io_uring_queue_exit(&b->ring);
	return r;
}

int blk_backend_open(struct blk_backend *b, const char *path, bool read_only, unsigned depth, char *err,
		     size_t errlen)
{
	memset(b, 0, sizeof(*b));
	b->fd = b->efd = -1;
	b->read_only = read_only;
	b->drain_wait_ms = BLK_DRAIN_WAIT_MS;
	read_test_hooks(b);
	b->fd = open(path, (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (b->fd < 0)
		return fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(b->fd, &st) < 0) {
		int e = -errno;
		close(b->fd);
		return fail(err, errlen, e, "%s: %s", path, strerror(-e));
	}
	if (S_ISREG(st.st_mode)) {
		b->size = (uint64_t)st.st_size;
	} else if (S_ISBLK(st.st_mode)) {
		if (ioctl(b->fd, BLKGETSIZE64, &b->size) < 0) {
			int e = -errno;
			close(b->fd);
			return fail(err, errlen, e, "%s: %s", path, strerror(-e));
		}
	} else {
		close(b->fd);
		return fail(err, errlen, -EINVAL, "%s: %s", path, "not a regular file or block device");
	}
	b->host_fault = true; /* the image is fine: what fails from here on is the host's */
	b->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (b->efd < 0) {
		int e = -errno;
		close(b->fd);
		return fail(err, errlen, e, "%s: eventfd: %s", path, strerror(-e));
	}
	const char *step = "io_uring";
	int r = lock_ring(b, depth, &step);
	if (r) {
		close(b->efd);
		close(b->fd);
		if (err && errlen)
			snprintf(err, errlen, "%s: %s: %s", path, step, strerror(-r));
		return r;
	}
	b->host_fault = false;
	return 0;
}

static size_t iov_bytes(const struct iovec *iov, unsigned n)
{
	size_t t = 0;
	for (unsigned i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* A free SQE, submitting what is queued once to make room; NULL when the ring stays full. */
static struct io_uring_sqe *free_sqe(struct blk_backend *b)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
	if (!sqe) {
		blk_backend_submit(b);
		sqe = io_uring_get_sqe(&b->ring);
	}
	return sqe;
}

static int prep(struct blk_backend *b, struct blk_io *io)
{
	struct io_uring_sqe *sqe = free_sqe(b);
	if (!sqe)
		return -EBUSY;
	switch (io->op) {
	case BLK_OP_READ: io_uring_prep_readv(sqe, IMAGE_SLOT, io->iov, io->niov, io->offset); break;
	case BLK_OP_WRITE:
		io_uring_prep_writev2(sqe, IMAGE_SLOT, io->iov, io->niov, io->offset, io->dsync ? RWF_DSYNC : 0);
		break;
	case BLK_OP_FLUSH: io_uring_prep_fsync(sqe, IMAGE_SLOT, 0); break;
	}
	sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data(sqe, io);
	b->inflight++;
	return 0;
}

int blk_backend_queue(struct blk_backend *b, struct blk_io *io)
{
	if (io->op == BLK_OP_WRITE && b->read_only)
		return -EROFS;
	io->remaining = io->op == BLK_OP_FLUSH ? 0 : iov_bytes(io->iov, io->niov);
	int r = prep(b, io);
	if (r)
		return r;
	switch (io->op) {
	case BLK_OP_READ: b->reads++; break;
	case BLK_OP_WRITE: b->writes++; b->dsync_writes += io->dsync; break;
	case BLK_OP_FLUSH: b->flushes++; break;
	}
	return 0;
}

/*
 * After io_uring_enter failed: the entries the kernel never consumed are
 * taken off the ring (without SQPOLL the kernel reads the tail only inside
 * io_uring_enter, so moving it back is safe) and their I/O ends with err.
 * Left there, they would run at some later enter, after the guest was told.
 */
static void take_back(struct blk_backend *b, int err)
{
	struct io_uring_sq *sq = &b->ring.sq;
	unsigned head = io_uring_smp_load_acquire(sq->khead), tail = *sq->ktail;
	*sq->ktail = head;
	sq->sqe_head = sq->sqe_tail = head;
	for (unsigned i = head; i != tail; i++) {
		struct io_uring_sqe *sqe = &sq->sqes[sq->array[i & sq->ring_mask]];
		struct blk_io *io = (struct blk_io *)(uintptr_t)sqe->user_data;
		if (!io)
			continue; /* a cancel */
		b->inflight--;
		b->errors++;
		io->done(io, err);
	}
}

int blk_backend_submit(struct blk_backend *b)
{
	while (io_uring_sq_ready(&b->ring)) {
		int r = io_uring_submit(&b->ring);
		if (r > 0 || r == -EINTR)
			continue;
		/* Completions wait to be reaped (CQ overflow): the reap submits the rest. */
		if (r == -EBUSY)
			return 0;
		if (r == 0)
			r = -EAGAIN;
		b->submit_errors++;
		take_back(b, r);
		return r;
	}
	return 0;
}

int blk_backend_event_fd(const struct blk_backend *b)
{
	return b->efd;
}

int blk_backend_uring_fd(const struct blk_backend *b)
{
	return b->fd < 0 ? -1 : b->ring.ring_fd;
}

/* Skips n bytes already transferred. */
static void advance(struct blk_io *io, size_t n)
{
	io->offset += n;
	io->remaining -= n;
	while (io->niov && n >= io->iov[0].iov_len) {
		n -= io->iov[0].iov_len;
		io->iov++;
		io->niov--;
	}
	if (io->niov && n) {
		io->iov[0].iov_base = (uint8_t *)io->iov[0].iov_base + n;
		io->iov[0].iov_len -= n;
	}
}

/* One completion; the io either finishes (callback) or goes round again. */
static void complete(struct blk_backend *b, struct blk_io *io, int res)
{
	b->inflight--;
	if (b->draining && res >= 0 && (io->op == BLK_OP_FLUSH ? 0 : (size_t)res) != io->remaining)
		res = -ECANCELED; /* a partial transfer is not sent round again while draining */
	if (io->op != BLK_OP_FLUSH && res > 0 && (size_t)res < io->remaining) {
		advance(io, (size_t)res);
		if (prep(b, io) == 0) {
			b->resubmits++;
			return;
		}
		res = -EBUSY;
	} else if (io->op != BLK_OP_FLUSH && res >= 0 && (size_t)res != io->remaining) {
		res = -EIO; /* end of file: the image shrank under us */
	} else if (res > 0) {
		res = 0;
	}
	if (res < 0)
		b->errors++;
	io->done(io, res);
}

/* Runs the callbacks of the completions already posted; the eventfd is left alone. */
static unsigned reap_cqes(struct blk_backend *b)
{
	unsigned done = 0;
	for (;;) {
		struct io_uring_cqe *cqe;
		if (io_uring_peek_cqe(&b->ring, &cqe) != 0)
			break;
		struct blk_io *io = io_uring_cqe_get_data(cqe);
		int res = cqe->res;
		io_uring_cqe_seen(&b->ring, cqe);
		if (io) {
			complete(b, io, res);
			done++;
		}
	}
	return done;
}

unsigned blk_backend_reap(struct blk_backend *b)
{
	uint64_t cnt;
	while (read(b->efd, &cnt, sizeof(cnt)) == (ssize_t)sizeof(cnt))
		;
	unsigned done = reap_cqes(b);
	if (b->draining && !b->inflight)
		b->draining = false; /* the last of what a failed drain left out */
	blk_backend_submit(b); /* resubmissions prepared by complete(); a failure ends them */
	return done;
}

/*
 * The drain's cancel, handed to the kernel: 0, -EBUSY when no SQE is free
 * even after a submit (the SQ stays full while completions wait to be
 * reaped), or the -errno of an io_uring_enter that refused it (taken back).
 */
static int send_cancel(struct blk_backend *b)
{
	struct io_uring_sqe *sqe = test_no_cancel_sqe() ? NULL : free_sqe(b);
	if (!sqe)
		return -EBUSY;
	/*
	 * One cancel for every request on the image's file: a read that waits
	 * (a pipe, a stalled network disk) ends with -ECANCELED; one a worker
	 * has already started cannot be stopped and is waited for.
	 */
	prep_cancel(sqe);
	test_miss_cancel(sqe);
	b->cancels++;
	return blk_backend_submit(b);
}

/*
 * Until nothing is in flight or the deadline passes: 0, -ETIMEDOUT, or the
 * -errno of an io_uring_enter that cannot wait. The cancel is tried again
 * while it has not reached the kernel (its SQE may free up once the
 * completions that filled the CQ are reaped).
 */
static int drain_until(struct blk_backend *b, uint64_t deadline, bool sent)
{
	while (b->inflight) {
		uint64_t now = now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		int r = wait_cqe_for(b, deadline - now);
		if (r < 0 && r != -ETIME && r != -EINTR && r != -EBUSY)
			return r;
		reap_cqes(b);
		if (!sent)
			sent = send_cancel(b) == 0;
		else
			blk_backend_submit(b); /* a cancel a full CQ held back (-EBUSY) */
	}
	return 0;
}

int blk_backend_cancel_all(struct blk_backend *b)
{
	if (!b->inflight)
		return 0;
	b->draining = true;
	uint64_t deadline = now_ns() + (uint64_t)b->drain_wait_ms * 1000000ull;
	bool sent = send_cancel(b) == 0;
	if (!sent)
		b->cancel_unsent++;
	int err = drain_until(b, deadline, sent);
	if (err == -ETIMEDOUT)
		b->drain_timeouts++;
	/* Left in flight: still draining, so no partial transfer goes round again (blk_backend_reap). */
	b->draining = b->inflight != 0;
	return b->inflight ? err : 0;
}

int blk_backend_close(struct blk_backend *b)
{
	if (b->fd < 0)
		return 0;
	int r = blk_backend_cancel_all(b);
	/*
	 * What is still out after the bound goes with the ring: the kernel
	 * cancels it on exit and waits for it itself, not here. Its callbacks
	 * never run (their requests are not freed).
	 */
	io_uring_queue_exit(&b->ring);
	close(b->efd);
	close(b->fd);
	b->fd = b->efd = -1;
	return r;
}
