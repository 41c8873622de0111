#include "vmm/spin/hypercall_count.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vmm/spin/ple_perf.h"

int hypercall_counter_open(pid_t tid, unsigned nr)
{
	long id = ple_tracepoint_id("kvm:kvm_hypercall");
	if (id < 0)
		return (int)id;
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.config = (uint64_t)id;
	int fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	char filter[32];
	snprintf(filter, sizeof(filter), "nr == %u", nr);
	if (ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int hypercall_counter_read(int fd, uint64_t *count)
{
	ssize_t n = read(fd, count, sizeof(*count));
	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(*count) ? 0 : -EIO;
}
