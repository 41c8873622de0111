/*
 * The domain's messengers (the agent, each member's link thread) sleep
 * most of the time and are on the path of every hand-off between VMs. As
 * plain SCHED_OTHER threads on CPUs full of vCPU threads they waited
 * milliseconds for a CPU after each wake-up (BENCHMARKS.md, "The same
 * comparison on a real KVM"). These ask the host to run the calling
 * thread at once when it wakes: SCHED_FIFO 1 where the process may
 * (CAP_SYS_NICE, or RLIMIT_RTPRIO), else a short EEVDF slice (Linux 6.12+:
 * an earlier deadline, so its wake-up preempts a vCPU thread), else
 * nothing. Never for vCPU threads: they run guest code for whole slices.
 */
#ifndef VMM_HOST_THREAD_PRIO_H
#define VMM_HOST_THREAD_PRIO_H

enum thread_prio {
	THREAD_PRIO_NORMAL = 0, /* SCHED_OTHER as created */
	THREAD_PRIO_SLICE = 1,  /* SCHED_OTHER, sched_runtime THREAD_PRIO_SLICE_NS */
	THREAD_PRIO_FIFO = 2,   /* SCHED_FIFO 1 */
};
#define THREAD_PRIO_SLICE_NS 100000ull /* the least the kernel takes */

/*
 * Puts the calling thread at the highest of `want` and below that the host
 * allows; children it forks or threads it creates start SCHED_OTHER
 * (SCHED_FLAG_RESET_ON_FORK). Returns what it got (THREAD_PRIO_NORMAL when
 * want is, or when nothing else is allowed).
 */
enum thread_prio thread_prio_raise(enum thread_prio want);

const char *thread_prio_name(enum thread_prio p); /* "normal", "slice", "fifo" */
/* From a name; -1 if none. */
int thread_prio_parse(const char *s);

#endif
