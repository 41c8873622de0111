/*
 * A disk image served through its own io_uring: vectored reads and writes at
 * byte offsets, and fsync for flushes. The ring signals an eventfd on every
 * completion; whoever owns the device (the VMM's event loop, or a unit test)
 * waits for that fd and then calls blk_backend_reap(), which runs each
 * finished I/O's callback. Short transfers are resubmitted for the rest, so a
 * callback sees either the whole transfer (0) or an error (-errno).
 *
 * The ring is locked down before its first submission: READV, WRITEV, FSYNC
 * and ASYNC_CANCEL only, on the image as registered file 0 only, no register
 * operation (IORING_REGISTER_RESTRICTIONS). It needs Linux 6.0 (a reset
 * cancels by registered file); an older kernel fails blk_backend_open.
 *
 * Not thread-safe: the caller serialises queue/submit/reap (the virtio-blk
 * device does so under its transport lock).
 */
#ifndef VMM_DEVICES_BLK_BACKEND_URING_H
#define VMM_DEVICES_BLK_BACKEND_URING_H

#include <liburing.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * The bound of a drain (a reset's cancel and wait, and the one at close):
 * the cancel stops every queued request at once; what it cannot stop is
 * I/O a kernel worker already runs on the image, one request of at most
 * 254 segments, which a healthy disk, even a loaded rotating one or a
 * network block device, finishes well inside a second. 5 s is far past
 * that and short of what a guest survives inside one register write
 * (Linux's soft-lockup watchdog: 20 s). Past it the host's storage is hung.
 */
#define BLK_DRAIN_WAIT_MS 5000u
/*
 * Set-up's probe of the cancel, with nothing in flight: the kernel posts its
 * completion inline in the submitting io_uring_enter; 1 s only guards
 * against one that never does.
 */
#define BLK_PROBE_WAIT_MS 1000u

enum blk_op { BLK_OP_READ, BLK_OP_WRITE, BLK_OP_FLUSH };

struct blk_io {
	enum blk_op op;
	struct iovec *iov; /* consumed (advanced) as the transfer progresses */
	unsigned niov;
	uint64_t offset;
	bool dsync;        /* a write that must be durable when it completes (RWF_DSYNC) */
	void (*done)(struct blk_io *io, int res);
	size_t remaining;  /* backend's */
};

struct blk_backend {
	int fd, efd;
	bool read_only;
	bool host_fault; /* blk_backend_open failed after the image opened (eventfd, io_uring): the host's fault */
	uint64_t size; /* bytes */
	struct io_uring ring;
	unsigned inflight;
	bool draining; /* a drain runs, or left I/O out: no resubmission of partial transfers */
	unsigned drain_wait_ms; /* BLK_DRAIN_WAIT_MS (test builds: VMM_TEST_BLK_DRAIN_MS) */
	uint64_t reads, writes, flushes, dsync_writes, errors, resubmits, cancels;
	uint64_t cancel_unsent;  /* drains whose cancel found no SQE or was refused by io_uring_enter */
	uint64_t drain_timeouts; /* drains that reached drain_wait_ms with I/O still out */
	uint64_t submit_errors; /* io_uring_enter refused: the I/O it carried ended with that error */
};

/*
 * Opens path (a regular file or block device) and sets up its locked ring;
 * err gets one line on failure, and host_fault says whether the image was
 * fine and the host refused the rest (eventfd, io_uring set-up or lock-down).
 */
int blk_backend_open(struct blk_backend *b, const char *path, bool read_only, unsigned depth, char *err,
		     size_t errlen);
/*
 * Cancels what is in flight, waits for it at most drain_wait_ms (as
 * blk_backend_cancel_all), then closes. 0, or blk_backend_cancel_all's
 * -errno: I/O was still out, handed to the kernel's own ring exit (its
 * callbacks never run), and may still write its buffers.
 */
int blk_backend_close(struct blk_backend *b);
/* Prepares io; it starts at the next blk_backend_submit. -EROFS, -EBUSY. */
int blk_backend_queue(struct blk_backend *b, struct blk_io *io);
/*
 * Starts what was queued. When io_uring_enter fails (other than EINTR, or
 * EBUSY while completions wait to be reaped), the I/O it would have started
 * is taken back and each callback runs at once with that -errno, which is
 * returned; nothing of it starts later.
 */
int blk_backend_submit(struct blk_backend *b);
/* Readable when completions wait; non-blocking; blk_backend_reap drains it. */
int blk_backend_event_fd(const struct blk_backend *b);
/* The ring's own fd (io_uring_enter on it submits: the seccomp filters name it). */
int blk_backend_uring_fd(const struct blk_backend *b);
/* Runs the callbacks of all finished I/O without blocking; returns how many finished. */
unsigned blk_backend_reap(struct blk_backend *b);
/*
 * Cancels everything in flight and waits until every callback has run
 * (-ECANCELED, or the real result of an I/O that could not be stopped), at
 * most drain_wait_ms in all. 0: no I/O of this backend touches its buffers
 * any more (a virtio reset needs that). Otherwise I/O is still out and may:
 * -ETIMEDOUT (the bound; cancel_unsent says whether the cancel never reached
 * the kernel), or the -errno of an io_uring_enter that cannot wait. Its late
 * completions come through blk_backend_reap, which no longer resubmits
 * partial transfers until nothing is in flight.
 */
int blk_backend_cancel_all(struct blk_backend *b);

#endif
