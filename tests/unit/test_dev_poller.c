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

static void test_rearmed_after_each_run(void)
{
	struct evloop loop;
	CHECK_EQ(evloop_init(&loop), 0);
	struct run_ctl ctl = { .wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	struct dev d = { .fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	struct vm_poller p = { d.fd, drain, &d };
	struct dev_poller dp;
	CHECK_EQ(dev_poller_arm(&dp, &loop, &p, &ctl), 0);
	for (unsigned i = 1; i <= 3; i++) {
		kick(d.fd);
		CHECK_EQ(evloop_run_once(&loop), 1);
		CHECK_EQ(d.runs, i);
	}
	CHECK_EQ(dp.err, 0);
	CHECK_EQ(atomic_load(&ctl.stop), VM_STOP_NONE);
	evloop_fini(&loop);
	close(d.fd);
	close(ctl.wake_fd);
}

/* The fd cannot even be polled (here: closed before the first arm, which the
 * loop's locked ring refuses when it registers the fd): a host error at once. */
static void test_unpollable_fd_stops_the_run(void)
{
	struct evloop loop;
	CHECK_EQ(evloop_init(&loop), 0);
	struct run_ctl ctl = { .wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	struct dev d = { .fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	struct vm_poller p = { d.fd, drain, &d };
	struct dev_poller dp;
	close(d.fd);
	CHECK_EQ(dev_poller_arm(&dp, &loop, &p, &ctl), -EBADF);
	CHECK_EQ(dp.err, -EBADF);
	CHECK_EQ(atomic_load(&ctl.stop), VM_STOP_HOST_ERROR);
	uint64_t woken = 0;
	CHECK_EQ(read(ctl.wake_fd, &woken, sizeof(woken)), (ssize_t)sizeof(woken)); /* the loop was told */
	evloop_fini(&loop);
	close(ctl.wake_fd);
}

/* A poll that completes with an error (as the kernel reports one: the
 * completion's res) stops the run; once the run stops, a failing poll is the
 * loop going away and says nothing. The completion is delivered by hand: a
 * registered fd cannot be made to fail its poll from outside. */
static void test_failed_poll_stops_the_run(void)
{
	struct evloop loop;
	CHECK_EQ(evloop_init(&loop), 0);
	struct run_ctl ctl = { .wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	struct dev d = { .fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	struct vm_poller p = { d.fd, drain, &d };
	struct dev_poller dp;
	CHECK_EQ(dev_poller_arm(&dp, &loop, &p, &ctl), 0);
	dp.ev.cb(dp.ev.arg, -EIO);
	CHECK_EQ(d.runs, 0);
	CHECK_EQ(dp.err, -EIO);
	CHECK_EQ(atomic_load(&ctl.stop), VM_STOP_HOST_ERROR);
	uint64_t woken = 0;
	CHECK_EQ(read(ctl.wake_fd, &woken, sizeof(woken)), (ssize_t)sizeof(woken)); /* the loop was told */

	struct dev_poller late;
	CHECK_EQ(dev_poller_arm(&late, &loop, &p, &ctl), 0);
	late.ev.cb(late.ev.arg, -ECANCELED);
	CHECK_EQ(late.err, 0);
	evloop_fini(&loop);
	close(d.fd);
	close(ctl.wake_fd);
}

/* -EINTR/-EAGAIN are not errors of the device: the poll is armed again. */
static void test_interrupted_poll_is_rearmed(void)
{
	struct evloop loop;
	CHECK_EQ(evloop_init(&loop), 0);
	struct run_ctl ctl = { .wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	struct dev d = { .fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	struct vm_poller p = { d.fd, drain, &d };
	struct dev_poller dp;
	CHECK_EQ(dev_poller_arm(&dp, &loop, &p, &ctl), 0);
	dp.ev.cb(dp.ev.arg, -EINTR);
	CHECK_EQ(dp.err, 0);
	CHECK_EQ(dp.interrupted, 1u);
	CHECK_EQ(atomic_load(&ctl.stop), VM_STOP_NONE);
	kick(d.fd);
	CHECK(evloop_run_once(&loop) >= 1); /* the re-armed poll (and the first one) see the fd ready */
	CHECK(d.runs >= 1);
	evloop_fini(&loop);
	close(d.fd);
	close(ctl.wake_fd);
}

int main(void)
{
	RUN(test_rearmed_after_each_run);
	RUN(test_unpollable_fd_stops_the_run);
	RUN(test_failed_poll_stops_the_run);
	RUN(test_interrupted_poll_is_rearmed);
	return check_summary();
}
