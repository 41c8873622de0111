#include "vmm/host/event_loop.h"
#include "lib/uring_lock.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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
 * The opcodes the helpers below submit: the ring is created disabled and
 * locked to these (and to registered files, lock_down) before its first
 * submission, so a request forged into the SQ (the ring is shared memory)
 * cannot open, write or connect anything (IORING_REGISTER_RESTRICTIONS,
 * Linux 5.10).
 */
static const uint8_t allowed_ops[] = { IORING_OP_READ, IORING_OP_POLL_ADD, IORING_OP_TIMEOUT,
				       IORING_OP_TIMEOUT_REMOVE };

/*
 * Every request names a registered file (IOSQE_FIXED_FILE required): the
 * table starts empty (sparse, -1) and an fd takes a slot the first time a
 * helper arms it. All of the loop's fds are first armed before its seccomp
 * filter, which has no io_uring_register, so after that the ring can reach
 * no file it did not have by then.
 */
static int lock_down(struct evloop *l)
{
	/* the kernel counts the table against RLIMIT_NOFILE; no more fds can exist anyway */
	struct rlimit rl;
	l->cap = EVLOOP_FILES;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < l->cap)
		l->cap = (unsigned)rl.rlim_cur;
	int *empty = malloc(sizeof(int) * l->cap);
	if (!empty)
		return -ENOMEM;
	for (unsigned i = 0; i < l->cap; i++)
		empty[i] = -1;
	int rc = uring_register(&l->ring, IORING_REGISTER_FILES, empty, l->cap);
	free(empty);
	if (rc < 0)
		return rc;
	static const uint8_t reg_ops[] = { IORING_REGISTER_FILES_UPDATE };
	return uring_lock(&l->ring, allowed_ops, sizeof(allowed_ops), reg_ops, sizeof(reg_ops));
}

static int evloop_init_entries(struct evloop *l, unsigned entries)
{
	l->err = 0;
	l->nfiles = 0;
	hook_init();
	int rc = io_uring_queue_init(entries, &l->ring, IORING_SETUP_R_DISABLED);
	if (rc < 0)
		return rc;
	rc = lock_down(l);
	if (rc < 0) {
		io_uring_queue_exit(&l->ring);
		return rc;
	}
	return 0;
}

/* fd's slot in the ring's file table, registered on first use; or -errno. */
static int file_slot(struct evloop *l, int fd)
{
	for (unsigned i = 0; i < l->nfiles; i++)
		if (l->files[i] == fd)
			return (int)i;
	if (fd < 0)
		return -EBADF;
	if (l->nfiles == l->cap)
		return -EMFILE;
	struct io_uring_files_update up = { .offset = l->nfiles, .fds = (__u64)(uintptr_t)&fd };
	int rc = uring_register(&l->ring, IORING_REGISTER_FILES_UPDATE, &up, 1);
	if (rc < 0)
		return rc;
	l->files[l->nfiles] = fd;
	return (int)l->nfiles++;
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
 * A full SQ is submitted to make room. If even that fails (or fd cannot have
 * a slot), the request is lost: that is remembered, and the next
 * evloop_run_once reports it instead of waiting for a completion that will
 * never come. *slot: fd's file-table slot (0 when fd is -1: a timeout).
 */
static struct io_uring_sqe *get_sqe(struct evloop *l, int fd, int *slot)
{
	int rc = hook_lose() ? -EBUSY : fd >= 0 ? file_slot(l, fd) : 0;
	if (rc < 0) {
		if (!l->err)
			l->err = rc;
		return NULL;
	}
	*slot = rc;
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
	int slot;
	struct io_uring_sqe *sqe = get_sqe(l, fd, &slot);
	if (!sqe)
		return l->err;
	io_uring_prep_read(sqe, slot, buf, len, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data(sqe, ev);
	return 0;
}

int evloop_poll(struct evloop *l, struct ev *ev, int fd)
{
	int slot;
	struct io_uring_sqe *sqe = get_sqe(l, fd, &slot);
	if (!sqe)
		return l->err;
	io_uring_prep_poll_add(sqe, slot, POLLIN);
	sqe->flags |= IOSQE_FIXED_FILE;
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
	int slot;
	struct io_uring_sqe *sqe = get_sqe(l, -1, &slot);
	if (!sqe)
		return l->err;
	set_ts(ev, abs_ns);
	io_uring_prep_timeout(sqe, &ev->ts, 0, IORING_TIMEOUT_ABS);
	sqe->flags |= IOSQE_FIXED_FILE; /* required of every request; no file is used */
	io_uring_sqe_set_data(sqe, ev);
	return 0;
}

int evloop_timeout_move(struct evloop *l, struct ev *ev, uint64_t abs_ns)
{
	int slot;
	struct io_uring_sqe *sqe = get_sqe(l, -1, &slot);
	if (!sqe)
		return l->err;
	set_ts(ev, abs_ns);
	io_uring_prep_timeout_update(sqe, &ev->ts, (__u64)(uintptr_t)ev, IORING_TIMEOUT_ABS);
	sqe->flags |= IOSQE_FIXED_FILE;
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
