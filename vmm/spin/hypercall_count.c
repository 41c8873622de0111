#include "vmm/spin/hypercall_count.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "vmm/spin/ple_perf.h"

int hypercall_counter_open(pid_t tid, unsigned nr)
{
	char filter[32];
	snprintf(filter, sizeof(filter), "nr == %u", nr);
	return perf_tracepoint_open(tid, "kvm:kvm_hypercall", filter, 0);
}

int hypercall_counter_read(int fd, uint64_t *count)
{
	ssize_t n = read(fd, count, sizeof(*count));
	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(*count) ? 0 : -EIO;
}
