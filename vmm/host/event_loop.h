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

/* The most distinct fds one loop may wait on (its registered-file table). */
#define EVLOOP_FILES 1024

struct evloop {
	struct io_uring ring;
	int err; /* a request that could not be queued: -EBUSY, or why its fd has no slot */
	int files[EVLOOP_FILES]; /* the fd in each slot of the ring's file table */
	unsigned nfiles, cap;    /* slots used, and the table's size (at most RLIMIT_NOFILE) */
};

/*
 * A ring of 16 entries, restricted to the
 * opcodes the helpers use and to registered files (each fd is registered
 * the first time a helper arms it: do that before a seccomp filter without
 * io_uring_register); 0 or -errno.
 */
int evloop_init(struct evloop *l);
void evloop_fini(struct evloop *l);
/*
 * The helpers return 0, or -EBUSY when the SQ is full and submitting it
 * failed (or the -errno of registering a new fd): the request is then lost,
 * and evloop_run_once returns that error from then on (evloop_error), so a
 * caller that ignores the return still learns it.
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
/* 0, or the error (-EBUSY: SQ full) once a helper could not queue its request. */
int evloop_error(const struct evloop *l);

uint64_t monotonic_ns(void);

#endif
