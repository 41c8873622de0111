/*
 * thread_prio_raise (vmm/host/thread_prio.c): what the domain's agent and
 * link threads ask of the host. Each case runs on a thread of its own, so
 * what it raises dies with it. Asserted through the kernel's own answer
 * (sched_getattr), not the function's: FIFO where the thread may, the short
 * EEVDF slice where it may not (capability dropped for that thread alone)
 * on a kernel that has it, and never inherited by what the raised thread
 * creates or forks.
 */
#include <linux/capability.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "vmm/host/thread_prio.h"

/* the kernel's struct sched_attr (its header clashes with <sched.h>) */
struct sched_attr {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
	uint32_t sched_util_min, sched_util_max;
};

static int attr_of(pid_t tid, struct sched_attr *a)
{
	memset(a, 0, sizeof(*a));
	return (int)syscall(SYS_sched_getattr, tid, a, sizeof(*a), 0);
}

/* What the calling thread runs as: policy, priority, runtime, flags. */
static struct sched_attr mine(void)
{
	struct sched_attr a;
	CHECK_EQ(attr_of(0, &a), 0);
	return a;
}

/* 6.12 made sched_runtime a SCHED_OTHER thread's slice. */
static bool kernel_has_slices(void)
{
	struct utsname u;
	int maj = 0, min = 0;
	if (uname(&u) || sscanf(u.release, "%d.%d", &maj, &min) != 2)
		return false;
	return maj > 6 || (maj == 6 && min >= 12);
}

/* May this thread have SCHED_FIFO? CAP_SYS_NICE, or an RLIMIT_RTPRIO. */
static bool may_fifo(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	struct rlimit r;
	if (syscall(SYS_capget, &h, d) == 0 && (d[0].effective & (1u << CAP_SYS_NICE)))
		return true;
	return getrlimit(RLIMIT_RTPRIO, &r) == 0 && r.rlim_cur >= 1;
}

static void on_thread(void *(*fn)(void *))
{
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, fn, NULL), 0);
	pthread_join(t, NULL);
}

static void test_names(void)
{
	for (int p = THREAD_PRIO_NORMAL; p <= THREAD_PRIO_FIFO; p++)
		CHECK_EQ(thread_prio_parse(thread_prio_name((enum thread_prio)p)), p);
	CHECK(!strcmp(thread_prio_name(THREAD_PRIO_FIFO), "fifo"));
	CHECK_EQ(thread_prio_parse("rt"), -1);
	CHECK_EQ(thread_prio_parse(""), -1);
	CHECK(!strcmp(thread_prio_name((enum thread_prio)7), "?"));
}

static void *normal_stays(void *arg)
{
	(void)arg;
	CHECK_EQ(thread_prio_raise(THREAD_PRIO_NORMAL), THREAD_PRIO_NORMAL);
	struct sched_attr a = mine();
	CHECK_EQ(a.sched_policy, SCHED_NORMAL);
	CHECK_EQ(a.sched_runtime == THREAD_PRIO_SLICE_NS, 0);
	return NULL;
}

static void test_normal_changes_nothing(void)
{
	on_thread(normal_stays);
}

static void *child_thread(void *arg)
{
	*(struct sched_attr *)arg = mine();
	return NULL;
}

/* What this thread raised, its threads and children do not inherit. */
static void check_not_inherited(void)
{
	struct sched_attr c;
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, child_thread, &c), 0);
	pthread_join(t, NULL);
	CHECK_EQ(c.sched_policy, SCHED_NORMAL);
	CHECK_EQ(c.sched_runtime == THREAD_PRIO_SLICE_NS, 0);
	pid_t pid = fork();
	if (pid == 0) {
		struct sched_attr a;
		_exit(attr_of(0, &a) == 0 && a.sched_policy == SCHED_NORMAL &&
			      a.sched_runtime != THREAD_PRIO_SLICE_NS ? 0 : 1);
	}
	int st = -1;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void *fifo_where_allowed(void *arg)
{
	(void)arg;
	bool may = may_fifo();
	enum thread_prio got = thread_prio_raise(THREAD_PRIO_FIFO);
	struct sched_attr a = mine();
	if (!may) {
		SKIP("SCHED_FIFO: this process has neither CAP_SYS_NICE nor an RLIMIT_RTPRIO");
		CHECK(got != THREAD_PRIO_FIFO);
		return NULL;
	}
	CHECK_EQ(got, THREAD_PRIO_FIFO);
	CHECK_EQ(a.sched_policy, SCHED_FIFO);
	CHECK_EQ(a.sched_priority, 1);
	CHECK(a.sched_flags & SCHED_FLAG_RESET_ON_FORK);
	check_not_inherited();
	return NULL;
}

static void test_fifo_where_allowed_and_not_inherited(void)
{
	on_thread(fifo_where_allowed);
}

/* CAP_SYS_NICE dropped for this thread alone (capabilities are per
 * thread), RLIMIT_RTPRIO 0 for the process while it runs. */
static void *refused_fifo(void *arg)
{
	(void)arg;
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	CHECK_EQ(syscall(SYS_capget, &h, d), 0);
	d[0].effective &= ~(1u << CAP_SYS_NICE);
	d[0].permitted &= ~(1u << CAP_SYS_NICE);
	CHECK_EQ(syscall(SYS_capset, &h, d), 0);
	CHECK(!may_fifo());
	enum thread_prio got = thread_prio_raise(THREAD_PRIO_FIFO);
	struct sched_attr a = mine();
	CHECK_EQ(a.sched_policy, SCHED_NORMAL);
	if (kernel_has_slices()) {
		CHECK_EQ(got, THREAD_PRIO_SLICE);
		CHECK_EQ(a.sched_runtime, THREAD_PRIO_SLICE_NS);
		CHECK(a.sched_flags & SCHED_FLAG_RESET_ON_FORK);
		check_not_inherited();
	} else {
		SKIP("the short slice: this kernel is older than 6.12");
		CHECK_EQ(got, THREAD_PRIO_NORMAL);
	}
	/* asking for the slice alone gives the same */
	CHECK_EQ(thread_prio_raise(THREAD_PRIO_SLICE), got);
	return NULL;
}

static void test_refused_fifo_falls_back_to_the_slice(void)
{
	struct rlimit old, zero = { 0, 0 };
	CHECK_EQ(getrlimit(RLIMIT_RTPRIO, &old), 0);
	zero.rlim_max = old.rlim_max;
	CHECK_EQ(setrlimit(RLIMIT_RTPRIO, &zero), 0);
	on_thread(refused_fifo);
	CHECK_EQ(setrlimit(RLIMIT_RTPRIO, &old), 0);
}

int main(void)
{
	RUN(test_names);
	RUN(test_normal_changes_nothing);
	RUN(test_fifo_where_allowed_and_not_inherited);
	RUN(test_refused_fifo_falls_back_to_the_slice);
	return check_summary();
}
