/*
 * --spin-detect ple: pause-loop exits seen through the kvm:kvm_exit
 * tracepoint, one perf event per vCPU thread, polled by the event loop. KVM
 * consumes PLE exits in the kernel; this is how userspace learns of them.
 */
#ifndef VMM_PLE_SOURCE_H
#define VMM_PLE_SOURCE_H

#include "vmm/host/event_loop.h"
#include "vmm/spin/ple_perf.h"

struct run;

struct ple_source {
	struct ple_watch w;
	struct ev ev;
	struct evloop *loop;
	struct run *r;
	int g;          /* the scheduler's vCPU index */
	bool armed;
	uint64_t events;
};

/*
 * Opens a watch on every vCPU thread and arms the polls. Returns 0, or
 * -errno with why filled; the run goes on without the source then.
 */
int ple_sources_start(struct run *r, struct evloop *loop, char *why, unsigned len);
/* After the event loop has stopped. */
void ple_sources_stop(struct run *r);

#endif
