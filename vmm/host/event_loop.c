#include "vmm/host/event_loop.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int evloop_init(struct evloop *l)
{
	return io_uring_queue_init(16, &l->ring, 0);
}

void evloop_fini(struct evloop *l)
{
	io_uring_queue_exit(&l->ring);
}

static struct io_uring_sqe *get_sqe(struct evloop *l)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);
	if (!sqe) {
		io_uring_submit(&l->ring);
		sqe = io_uring_get_sqe(&l->ring);
	}
	return sqe;
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
