/*
 * The event loop's device pollers (vmm/core/dev_poller.c) on a real io_uring
 * loop and eventfds, without KVM: a ready fd runs the device's function and
 * is polled again; a poll that fails (an fd that is not open) stops the run
 * as a host error instead of leaving the device deaf for the rest of it; a
 * failure while the run already stops is quiet.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "check.h"
#include "vmm/core/dev_poller.h"

struct dev {
	int fd;
	unsigned runs;
};

static void drain(void *ctx)
{
	struct dev *d = ctx;
	uint64_t v;
	if (read(d->fd, &v, sizeof(v)) == sizeof(v))
		d->runs++;
}

static void kick(int fd)
{
	uint64_t one = 1;
	CHECK_EQ(write(fd, &one, sizeof(one)), (ssize_t)sizeof(one));
}

/* One device on a real loop: its eventfd, the run's control and wake fd. */
struct bench {
	struct evloop loop;
	struct run_ctl ctl;
	struct dev d;
	struct vm_poller p;
	struct dev_poller dp;
};

static void bench_init(struct bench *b)
{
	CHECK_EQ(evloop_init(&b->loop), 0);
	b->ctl = (struct run_ctl){ .wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	b->d = (struct dev){ .fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	b->p = (struct vm_poller){ b->d.fd, drain, &b->d };
}

static void bench_fini(struct bench *b)
{
	evloop_fini(&b->loop);
	close(b->d.fd);
	close(b->ctl.wake_fd);
}

/* The run stopped as a host error and the loop was told (its wake fd). */
static void check_host_error_stop(struct bench *b)
{
	CHECK_EQ(atomic_load(&b->ctl.stop), VM_STOP_HOST_ERROR);
	uint64_t woken = 0;
	CHECK_EQ(read(b->ctl.wake_fd, &woken, sizeof(woken)), (ssize_t)sizeof(woken));
}

static void test_rearmed_after_each_run(void)
{
	struct bench b;
	bench_init(&b);
	CHECK_EQ(dev_poller_arm(&b.dp, &b.loop, &b.p, &b.ctl), 0);
	for (unsigned i = 1; i <= 3; i++) {
		kick(b.d.fd);
		CHECK_EQ(evloop_run_once(&b.loop), 1);
		CHECK_EQ(b.d.runs, i);
	}
	CHECK_EQ(b.dp.err, 0);
	CHECK_EQ(atomic_load(&b.ctl.stop), VM_STOP_NONE);
	bench_fini(&b);
}

/* The fd cannot even be polled (here: closed before the first arm, which the
 * loop's locked ring refuses when it registers the fd): a host error at once. */
static void test_unpollable_fd_stops_the_run(void)
{
	struct bench b;
	bench_init(&b);
	close(b.d.fd);
	CHECK_EQ(dev_poller_arm(&b.dp, &b.loop, &b.p, &b.ctl), -EBADF);
	CHECK_EQ(b.dp.err, -EBADF);
	check_host_error_stop(&b);
	b.d.fd = -1;
	bench_fini(&b);
}

/* A poll that completes with an error (as the kernel reports one: the
 * completion's res) stops the run; once the run stops, a failing poll is the
 * loop going away and says nothing. The completion is delivered by hand: a
 * registered fd cannot be made to fail its poll from outside. */
static void test_failed_poll_stops_the_run(void)
{
	struct bench b;
	bench_init(&b);
	CHECK_EQ(dev_poller_arm(&b.dp, &b.loop, &b.p, &b.ctl), 0);
	b.dp.ev.cb(b.dp.ev.arg, -EIO);
	CHECK_EQ(b.d.runs, 0);
	CHECK_EQ(b.dp.err, -EIO);
	check_host_error_stop(&b);

	struct dev_poller late;
	CHECK_EQ(dev_poller_arm(&late, &b.loop, &b.p, &b.ctl), 0);
	late.ev.cb(late.ev.arg, -ECANCELED);
	CHECK_EQ(late.err, 0);
	bench_fini(&b);
}

/* -EINTR/-EAGAIN are not errors of the device: the poll is armed again. */
static void test_interrupted_poll_is_rearmed(void)
{
	struct bench b;
	bench_init(&b);
	CHECK_EQ(dev_poller_arm(&b.dp, &b.loop, &b.p, &b.ctl), 0);
	b.dp.ev.cb(b.dp.ev.arg, -EINTR);
	CHECK_EQ(b.dp.err, 0);
	CHECK_EQ(b.dp.interrupted, 1u);
	CHECK_EQ(atomic_load(&b.ctl.stop), VM_STOP_NONE);
	kick(b.d.fd);
	CHECK(evloop_run_once(&b.loop) >= 1); /* the re-armed poll (and the first one) see the fd ready */
	CHECK(b.d.runs >= 1);
	bench_fini(&b);
}

int main(void)
{
	RUN(test_rearmed_after_each_run);
	RUN(test_unpollable_fd_stops_the_run);
	RUN(test_failed_poll_stops_the_run);
	RUN(test_interrupted_poll_is_rearmed);
	return check_summary();
}
