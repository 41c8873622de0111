/*
 * The process event loop on io_uring: one-shot reads and absolute
 * CLOCK_MONOTONIC timeouts, each completing into a callback. The main thread
 * sleeps here; vCPU threads and the scheduler wake it through eventfds.
 */
#ifndef VMM_EVENT_LOOP_H
#define VMM_EVENT_LOOP_H

#include <liburing.h>
#include <stdint.h>

struct ev {
	void (*cb)(void *arg, int res);
	void *arg;
	struct __kernel_timespec ts; /* storage a pending timeout points to */
};

struct evloop {
	struct io_uring ring;
	int err; /* a request that could not be queued: -EBUSY */
};

/*
 * A ring of 16 entries (evloop_init_entries: any size), restricted to the
 * opcodes the helpers use, without SQE flags; 0 or -errno.
 */
int evloop_init(struct evloop *l);
int evloop_init_entries(struct evloop *l, unsigned entries);
void evloop_fini(struct evloop *l);
/*
 * The helpers return 0, or -EBUSY when the SQ is full and submitting it
 * failed: the request is then lost, and evloop_run_once returns -EBUSY from
 * then on (evloop_error), so a caller that ignores the return still learns it.
 */
/* Arms a one-shot read of len bytes from fd; the callback gets read's result. */
int evloop_read(struct evloop *l, struct ev *ev, int fd, void *buf, unsigned len);
/* Arms a one-shot wait for fd to become readable; res is the poll mask. */
int evloop_poll(struct evloop *l, struct ev *ev, int fd);
/* Arms a one-shot timeout at abs_ns (CLOCK_MONOTONIC); res is -ETIME when it fires. */
int evloop_timeout_at(struct evloop *l, struct ev *ev, uint64_t abs_ns);
/* Moves a pending timeout armed with ev to a new deadline. */
int evloop_timeout_move(struct evloop *l, struct ev *ev, uint64_t abs_ns);
/* Waits for at least one completion and runs the callbacks of all that are ready;
 * the number run, or -errno (a lost request: -EBUSY). */
int evloop_run_once(struct evloop *l);
/* 0, or -EBUSY once a helper could not queue its request. */
int evloop_error(const struct evloop *l);

uint64_t monotonic_ns(void);

#endif
