/*
 * A device's fd in the event loop (virtio-blk's completion eventfd): a
 * one-shot poll, re-armed after each time the device's function ran, until
 * the run stops. If the poll cannot be armed or fails, the device would never
 * hear of its completions again and its guest's I/O would stall for good, so
 * the run stops instead as a host error (exit 6), with one line naming it.
 */
#ifndef VMM_CORE_DEV_POLLER_H
#define VMM_CORE_DEV_POLLER_H

#include "vmm/host/event_loop.h"
#include "vmm/core/vm.h"

struct dev_poller {
	struct ev ev;
	struct evloop *loop;
	const struct vm_poller *p;
	struct run_ctl *ctl;
	int err;              /* the -errno that stopped the run, 0 while it polls */
	unsigned interrupted; /* polls that ended -EINTR/-EAGAIN and were armed again */
};

/* Arms the first poll; a failure stops the run as dev_poller's callback would. */
int dev_poller_arm(struct dev_poller *dp, struct evloop *loop, const struct vm_poller *p, struct run_ctl *ctl);

#endif
