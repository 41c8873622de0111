#include "vmm/host/event_loop.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#ifdef VMM_TEST_HOOKS
/*
 * Test builds only (build/vmm-test): VMM_TEST_EVLOOP_LOSE_AFTER=N makes
 * every request after the Nth one be lost as if the SQ stayed full, so that
 * tests/integration/test_faults.py can see a whole run end on it.
 */
static long hook_left = -1;

static void hook_init(void)
{
	const char *v = getenv("VMM_TEST_EVLOOP_LOSE_AFTER");
	hook_left = v ? atol(v) : -1;
}

static bool hook_lose(void)
{
	if (hook_left < 0)
		return false;
	if (hook_left > 0) {
		hook_left--;
		return false;
	}
	return true;
}
#else
static void hook_init(void)
{
}

static bool hook_lose(void)
{
	return false;
}
#endif

/*
 * The opcodes the helpers below submit, and no SQE flag: the ring is created
 * disabled and locked to these before its first submission, so a request
 * forged into the SQ (the ring is shared memory) cannot open, write or
 * connect anything (IORING_REGISTER_RESTRICTIONS, Linux 5.10).
 */
static const uint8_t allowed_ops[] = { IORING_OP_READ, IORING_OP_POLL_ADD, IORING_OP_TIMEOUT,
				       IORING_OP_TIMEOUT_REMOVE };

/*
 * io_uring_register(2) directly: Debian's liburing 2.3 has
 * io_uring_register_restrictions and io_uring_enable_rings in its static
 * library only, not in liburing.so's symbol map.
 */
static int ring_register(struct io_uring *ring, unsigned op, const void *arg, unsigned n)
{
	long rc = syscall(__NR_io_uring_register, ring->ring_fd, op, arg, n);
	return rc < 0 ? -errno : 0;
}

int evloop_init_entries(struct evloop *l, unsigned entries)
{
	l->err = 0;
	hook_init();
	int rc = io_uring_queue_init(entries, &l->ring, IORING_SETUP_R_DISABLED);
	if (rc < 0)
		return rc;
	struct io_uring_restriction res[sizeof(allowed_ops) + 1];
	unsigned n = 0;
	for (unsigned i = 0; i < sizeof(allowed_ops); i++)
		res[n++] = (struct io_uring_restriction){ .opcode = IORING_RESTRICTION_SQE_OP,
							  .sqe_op = allowed_ops[i] };
	res[n++] = (struct io_uring_restriction){ .opcode = IORING_RESTRICTION_SQE_FLAGS_ALLOWED, .sqe_flags = 0 };
	rc = ring_register(&l->ring, IORING_REGISTER_RESTRICTIONS, res, n);
	if (rc >= 0)
		rc = ring_register(&l->ring, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
	if (rc < 0) {
		io_uring_queue_exit(&l->ring);
		return rc;
	}
	return 0;
}

int evloop_init(struct evloop *l)
{
	return evloop_init_entries(l, 16);
}

void evloop_fini(struct evloop *l)
{
	io_uring_queue_exit(&l->ring);
}

/*
 * A full SQ is submitted to make room. If even that fails, the request is
 * lost: that is remembered, and the next evloop_run_once reports it instead
 * of waiting for a completion that will never come.
 */

static struct io_uring_sqe *get_sqe(struct evloop *l)
{
	if (hook_lose()) {
		l->err = -EBUSY;
		return NULL;
	}
	struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);
	if (!sqe) {
		io_uring_submit(&l->ring);
		sqe = io_uring_get_sqe(&l->ring);
	}
	if (!sqe && !l->err)
		l->err = -EBUSY;
	return sqe;
}

int evloop_error(const struct evloop *l)
{
	return l->err;
}

int evloop_read(struct evloop *l, struct ev *ev, int fd, void *buf, unsigned len)
{
	struct io_uring_sqe *sqe = get_sqe(l);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, fd, buf, len, 0);
	io_uring_sqe_set_data(sqe, ev);
	return 0;
}

int evloop_poll(struct evloop *l, struct ev *ev, int fd)
{
	struct io_uring_sqe *sqe = get_sqe(l);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, fd, POLLIN);
	io_uring_sqe_set_data(sqe, ev);
	return 0;
}

static void set_ts(struct ev *ev, uint64_t abs_ns)
{
	ev->ts.tv_sec = (long long)(abs_ns / 1000000000ull);
	ev->ts.tv_nsec = (long long)(abs_ns % 1000000000ull);
}

int evloop_timeout_at(struct evloop *l, struct ev *ev, uint64_t abs_ns)
{
	struct io_uring_sqe *sqe = get_sqe(l);
	if (!sqe)
		return -EBUSY;
	set_ts(ev, abs_ns);
	io_uring_prep_timeout(sqe, &ev->ts, 0, IORING_TIMEOUT_ABS);
	io_uring_sqe_set_data(sqe, ev);
	return 0;
}

int evloop_timeout_move(struct evloop *l, struct ev *ev, uint64_t abs_ns)
{
	struct io_uring_sqe *sqe = get_sqe(l);
	if (!sqe)
		return -EBUSY;
	set_ts(ev, abs_ns);
	io_uring_prep_timeout_update(sqe, &ev->ts, (__u64)(uintptr_t)ev, IORING_TIMEOUT_ABS);
	io_uring_sqe_set_data(sqe, NULL); /* the update's own completion needs no callback */
	return 0;
}

int evloop_run_once(struct evloop *l)
{
	struct io_uring_cqe *cqe;
	if (l->err)
		return l->err;
	int r = io_uring_submit_and_wait(&l->ring, 1);
	if (r < 0 && r != -EINTR)
		return r;
	unsigned head, n = 0;
	io_uring_for_each_cqe(&l->ring, head, cqe) {
		struct ev *ev = io_uring_cqe_get_data(cqe);
		int res = cqe->res;
		n++;
		/* Mark the cqe seen before the callback, which may arm new requests. */
		io_uring_cq_advance(&l->ring, 1);
		if (ev && ev->cb)
			ev->cb(ev->arg, res);
	}
	return (int)n;
}
