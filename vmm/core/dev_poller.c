#include "vmm/core/dev_poller.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int fail(struct dev_poller *dp, const char *what, int err)
{
	dp->err = err;
	fprintf(stderr, "vmm: event loop: %s device fd %d: %s; stopping the run (its I/O would stall)\n", what,
		dp->p->fd, strerror(-err));
	run_request_stop(dp->ctl, VM_STOP_HOST_ERROR, -1, -1, 0);
	return err;
}

static int rearm(struct dev_poller *dp)
{
	int rc = evloop_poll(dp->loop, &dp->ev, dp->p->fd);
	return rc ? fail(dp, "cannot poll", rc) : 0;
}

static void on_ready(void *arg, int res)
{
	struct dev_poller *dp = arg;
	if (res < 0) {
		if (atomic_load(&dp->ctl->stop) != VM_STOP_NONE)
			return; /* the loop is going away */
		if (res == -EINTR || res == -EAGAIN) {
			dp->interrupted++;
			rearm(dp);
			return;
		}
		fail(dp, "polling", res);
		return;
	}
	dp->p->fn(dp->p->ctx);
	if (atomic_load(&dp->ctl->stop) == VM_STOP_NONE)
		rearm(dp);
}

int dev_poller_arm(struct dev_poller *dp, struct evloop *loop, const struct vm_poller *p, struct run_ctl *ctl)
{
	*dp = (struct dev_poller){ .ev = { .cb = on_ready, .arg = dp }, .loop = loop, .p = p, .ctl = ctl };
	return rearm(dp);
}
