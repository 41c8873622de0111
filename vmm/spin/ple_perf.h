/*
 * The `ple` spin-detection source: KVM handles pause-loop exits inside the
 * kernel and never tells userspace, but each one fires the kvm:kvm_exit
 * tracepoint on the vCPU thread. A per-thread perf tracepoint event (filtered
 * to the PAUSE exit reason) turns those into a pollable fd per vCPU, with no
 * host changes.
 *
 * Who calls what:
 *   - ple_host_support(): once at start; print the reason if it fails.
 *   - ple_watch_open(): by whoever sets up the scheduler, once the vCPU thread
 *     exists (needs its tid); one watch per vCPU thread.
 *   - ple_watch_fd(): given to the event loop (poll / io_uring POLL_ADD).
 *     POLLIN means "events arrived since the fd was last polled"; the kernel
 *     clears it when it reports it, so re-arm after each completion.
 *   - ple_watch_drain() / ple_watch_count(): the event loop only; the ring
 *     buffer has one userspace consumer and the kernel (running on the vCPU
 *     thread) as its producer, so no locking is needed.
 *   - ple_watch_close(): after the event loop stopped using the fd.
 */
#ifndef VMM_PLE_PERF_H
#define VMM_PLE_PERF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ple_watch {
	int fd;             /* perf event fd, -1 when closed */
	void *ring;         /* perf_event_mmap_page + data pages */
	size_t ring_len;
	pid_t tid;
	uint64_t drained; /* the count at the last drain */
};

/*
 * 0 if this host's KVM does pause-loop exiting and kvm:kvm_exit is there to
 * see it; else -ENOTSUP with a one-line reason in why.
 */
int ple_host_support(char *why, size_t len);

/* What ple_host_support() reads off the host, so its decision can be tested. */
struct ple_host_facts {
	int kvm, kvm_intel, kvm_amd;          /* modules loaded */
	long ple_gap, ple_window;             /* kvm_intel's parameters, -1 if absent */
	long pause_filter_count;              /* kvm_amd's, -1 if absent */
	char backends[128];                   /* loaded kvm_* modules, comma-separated */
	long kvm_exit_id;                     /* tracepoint id, or -errno */
};

/* ple_host_support()'s decision on given facts. */
int ple_support_decide(const struct ple_host_facts *f, char *why, size_t len);

/* The kvm:kvm_exit filter selecting PAUSE exits on this host's KVM, or NULL. */
const char *ple_exit_filter(void);

/*
 * The id of tracepoint "sys:name" from tracefs (mounting tracefs at
 * /sys/kernel/tracing if nothing is mounted there), or -errno.
 */
long ple_tracepoint_id(const char *tracepoint);

/*
 * A perf event on tracepoint "sys:name" for thread tid only, with filter (a
 * tracefs expression, or NULL): a plain counter (read(2) gives the count)
 * when wakeup_events is 0, else a sampling event whose ring wakes a poller
 * every wakeup_events events. The fd, or -errno as ple_watch_open.
 */
int perf_tracepoint_open(pid_t tid, const char *tracepoint, const char *filter, unsigned wakeup_events);

/*
 * Count tracepoint events on thread tid only; the fd turns readable every
 * wakeup_events events (ple_watch_open: every event). filter is a tracefs
 * filter expression or NULL. Returns 0 or -errno: -ENOENT no such tracepoint
 * (or no tracefs), -EINVAL bad filter, -EACCES/-EPERM perf not allowed,
 * -ESRCH no such thread.
 */
int ple_watch_open(struct ple_watch *w, pid_t tid, const char *tracepoint, const char *filter);
int ple_watch_open_n(struct ple_watch *w, pid_t tid, const char *tracepoint, const char *filter,
		     unsigned wakeup_events);

int ple_watch_fd(const struct ple_watch *w);

/* Events counted since open (exact, independent of the ring). */
uint64_t ple_watch_count(struct ple_watch *w);

/* Empties the ring; returns the events since the last drain (exact, even if the ring overflowed). */
int ple_watch_drain(struct ple_watch *w);

void ple_watch_close(struct ple_watch *w);

#endif
