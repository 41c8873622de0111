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

static void test_failed_poll_stops_the_run(void)
{
	struct evloop loop;
	CHECK_EQ(evloop_init(&loop), 0);
	struct run_ctl ctl = { .wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	struct dev d = { .fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	struct vm_poller p = { d.fd, drain, &d };
	struct dev_poller dp;
	close(d.fd); /* the poll is armed on an fd that no longer exists: it ends -EBADF */
	CHECK_EQ(dev_poller_arm(&dp, &loop, &p, &ctl), 0);
	CHECK_EQ(evloop_run_once(&loop), 1);
	CHECK_EQ(d.runs, 0);
	CHECK_EQ(dp.err, -EBADF);
	CHECK_EQ(atomic_load(&ctl.stop), VM_STOP_HOST_ERROR);
	uint64_t woken = 0;
	CHECK_EQ(read(ctl.wake_fd, &woken, sizeof(woken)), (ssize_t)sizeof(woken)); /* the loop was told */

	/* Once the run stops, a failing poll is the loop going away: no error of its own. */
	struct dev_poller late;
	CHECK_EQ(dev_poller_arm(&late, &loop, &p, &ctl), 0);
	CHECK_EQ(evloop_run_once(&loop), 1);
	CHECK_EQ(late.err, 0);
	evloop_fini(&loop);
	close(ctl.wake_fd);
}

int main(void)
{
	test_rearmed_after_each_run();
	test_failed_poll_stops_the_run();
	return check_summary();
}
