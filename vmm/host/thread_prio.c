/* See thread_prio.h. */
#include "vmm/host/thread_prio.h"

#include <linux/sched.h>
#include <linux/sched/types.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int set_attr(unsigned policy, unsigned prio, unsigned long long runtime)
{
	struct sched_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.sched_policy = policy;
	a.sched_priority = prio;
	a.sched_runtime = runtime;
	a.sched_flags = SCHED_FLAG_RESET_ON_FORK;
	return (int)syscall(SYS_sched_setattr, 0, &a, 0);
}

enum thread_prio thread_prio_raise(enum thread_prio want)
{
	if (want >= THREAD_PRIO_FIFO && set_attr(SCHED_FIFO, 1, 0) == 0)
		return THREAD_PRIO_FIFO;
	if (want < THREAD_PRIO_SLICE || set_attr(SCHED_NORMAL, 0, THREAD_PRIO_SLICE_NS))
		return THREAD_PRIO_NORMAL;
	/* Before 6.12 the kernel takes sched_runtime for SCHED_OTHER and
	 * ignores it; it reads back only where it is in force. */
	struct sched_attr a;
	memset(&a, 0, sizeof(a));
	if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) == 0 && a.sched_runtime == THREAD_PRIO_SLICE_NS)
		return THREAD_PRIO_SLICE;
	return THREAD_PRIO_NORMAL;
}

static const char *const names[] = { "normal", "slice", "fifo" };

const char *thread_prio_name(enum thread_prio p)
{
	return (unsigned)p < sizeof(names) / sizeof(names[0]) ? names[p] : "?";
}

int thread_prio_parse(const char *s)
{
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i]))
			return (int)i;
	return -1;
}
