/*
 * The `ple` plumbing, proved with tracepoints that fire on every host: a
 * one-vCPU real-mode VM on its own thread does port I/O exits on command, and
 * per-thread perf watches on kvm:kvm_pio / kvm:kvm_userspace_exit must count
 * exactly those, wake poll(2) and io_uring, and honour filters. kvm:kvm_exit
 * (the real PLE source) never fires on hosts without PLE, so it cannot be
 * the test's event.
 */
#include "tests/unit/check.h"
#include "vmm/spin/ple_perf.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/kvm.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PORT 0x3f8

/* mov $0x3f8,%dx; mov $'A',%al; 1: out %al,(%dx); jmp 1b -- one exit per KVM_RUN. */
static const unsigned char guest_code[] = {0xba, 0xf8, 0x03, 0xb0, 0x41, 0xee, 0xeb, 0xfd};

struct test_vcpu {
	int kvm, vm, fd;
	struct kvm_run *run;
	size_t run_len;
	void *mem;
	pthread_t thread;
	pid_t tid;
	sem_t go, done;
	int todo;      /* exits to run on the next go; -1 ends the thread */
	int bad_exits; /* exits that were not our OUT */
};

static void *tv_thread(void *arg)
{
	struct test_vcpu *v = arg;
	v->tid = (pid_t)syscall(SYS_gettid);
	sem_post(&v->done);
	for (;;) {
		sem_wait(&v->go);
		if (v->todo < 0)
			return NULL;
		for (int i = 0; i < v->todo; i++) {
			if (ioctl(v->fd, KVM_RUN, 0) < 0 || v->run->exit_reason != KVM_EXIT_IO ||
			    v->run->io.port != PORT || v->run->io.direction != KVM_EXIT_IO_OUT)
				v->bad_exits++;
		}
		sem_post(&v->done);
	}
}

/* Runs n OUT exits on the vCPU thread and waits for them. */
static void tv_exits(struct test_vcpu *v, int n)
{
	v->todo = n;
	sem_post(&v->go);
	sem_wait(&v->done);
}

/* 0, or a reason to skip in why. */
static int tv_start(struct test_vcpu *v, char *why, size_t len)
{
	memset(v, 0, sizeof(*v));
	v->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (v->kvm < 0) {
		snprintf(why, len, "/dev/kvm: %s", strerror(errno));
		return -1;
	}
	v->vm = ioctl(v->kvm, KVM_CREATE_VM, 0);
	v->mem = mmap(NULL, 0x1000, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (v->vm < 0 || v->mem == MAP_FAILED) {
		snprintf(why, len, "KVM_CREATE_VM / guest memory: %s", strerror(errno));
		return -1;
	}
	memcpy(v->mem, guest_code, sizeof(guest_code));
	struct kvm_userspace_memory_region region = {
		.slot = 0, .guest_phys_addr = 0x1000, .memory_size = 0x1000,
		.userspace_addr = (uint64_t)(uintptr_t)v->mem,
	};
	int mmap_size = ioctl(v->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (ioctl(v->vm, KVM_SET_USER_MEMORY_REGION, &region) < 0 || mmap_size <= 0 ||
	    (v->fd = ioctl(v->vm, KVM_CREATE_VCPU, 0)) < 0) {
		snprintf(why, len, "KVM VM set-up: %s", strerror(errno));
		return -1;
	}
	v->run_len = (size_t)mmap_size;
	v->run = mmap(NULL, v->run_len, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
	struct kvm_sregs sregs;
	struct kvm_regs regs = {.rip = 0x1000, .rflags = 2};
	if (v->run == MAP_FAILED || ioctl(v->fd, KVM_GET_SREGS, &sregs) < 0) {
		snprintf(why, len, "vCPU set-up: %s", strerror(errno));
		return -1;
	}
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(v->fd, KVM_SET_SREGS, &sregs) < 0 || ioctl(v->fd, KVM_SET_REGS, &regs) < 0) {
		snprintf(why, len, "vCPU registers: %s", strerror(errno));
		return -1;
	}
	sem_init(&v->go, 0, 0);
	sem_init(&v->done, 0, 0);
	pthread_create(&v->thread, NULL, tv_thread, v);
	sem_wait(&v->done); /* tid is known */
	return 0;
}

static void tv_stop(struct test_vcpu *v)
{
	v->todo = -1;
	sem_post(&v->go);
	pthread_join(v->thread, NULL);
	munmap(v->run, v->run_len);
	close(v->fd);
	close(v->vm);
	close(v->kvm);
	munmap(v->mem, 0x1000);
}

static int readable(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

/* Every branch of the host decision, on made-up facts. */
static void test_decide(void)
{
	char why[256];
	struct ple_host_facts intel = {.kvm = 1, .kvm_intel = 1, .ple_gap = 128, .ple_window = 4096,
				       .pause_filter_count = -1, .kvm_exit_id = 7};
	CHECK_EQ(ple_support_decide(&intel, why, sizeof(why)), 0);
	CHECK(strstr(why, "on (kvm_intel)") != NULL);
	intel.ple_gap = 0;
	CHECK_EQ(ple_support_decide(&intel, why, sizeof(why)), -ENOTSUP);
	CHECK(strstr(why, "ple_gap=0") != NULL);
	struct ple_host_facts amd = {.kvm = 1, .kvm_amd = 1, .ple_gap = -1, .ple_window = -1,
				     .pause_filter_count = 3000, .kvm_exit_id = 7};
	CHECK_EQ(ple_support_decide(&amd, why, sizeof(why)), 0);
	CHECK(strstr(why, "on (kvm_amd)") != NULL);
	amd.kvm_exit_id = -ENOENT;
	CHECK_EQ(ple_support_decide(&amd, why, sizeof(why)), -ENOTSUP);
	CHECK(strstr(why, "kvm:kvm_exit is not available") != NULL);
	amd.pause_filter_count = 0;
	CHECK_EQ(ple_support_decide(&amd, why, sizeof(why)), -ENOTSUP);
	CHECK(strstr(why, "pause_filter_count=0") != NULL);
	struct ple_host_facts pvm = {.kvm = 1, .backends = "kvm_pvm", .kvm_exit_id = -ENOENT};
	CHECK_EQ(ple_support_decide(&pvm, why, sizeof(why)), -ENOTSUP);
	CHECK(strstr(why, "backend kvm_pvm has no pause-loop exiting") != NULL);
	struct ple_host_facts none = {.kvm_exit_id = -ENOENT};
	CHECK_EQ(ple_support_decide(&none, why, sizeof(why)), -ENOTSUP);
	CHECK(strstr(why, "KVM is not loaded") != NULL);
	none.kvm = 1;
	CHECK_EQ(ple_support_decide(&none, why, sizeof(why)), -ENOTSUP);
	CHECK(strstr(why, "no KVM vendor module") != NULL);
}

/* A sysfs number, or -1: read here independently of ple_perf.c. */
static long sys_number(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* This host's answer, against what its sysfs says. */
static void test_this_host(void)
{
	char why[256];
	int rc = ple_host_support(why, sizeof(why));
	printf("ple_host_support: %d: %s\n", rc, why);
	long gap = sys_number("/sys/module/kvm_intel/parameters/ple_gap");
	long count = sys_number("/sys/module/kvm_amd/parameters/pause_filter_count");
	if (access("/sys/module/kvm_pvm", F_OK) == 0) {
		CHECK_EQ(rc, -ENOTSUP);
		CHECK(strstr(why, "kvm_pvm") != NULL);
	} else if (access("/sys/module/kvm_amd", F_OK) == 0) {
		CHECK_EQ(rc, count > 0 && ple_tracepoint_id("kvm:kvm_exit") > 0 ? 0 : -ENOTSUP);
		if (count <= 0)
			CHECK(strstr(why, "pause_filter_count=") != NULL);
	} else if (access("/sys/module/kvm_intel", F_OK) == 0) {
		CHECK_EQ(rc, gap > 0 && ple_tracepoint_id("kvm:kvm_exit") > 0 ? 0 : -ENOTSUP);
	} else {
		CHECK_EQ(rc, -ENOTSUP);
	}
	const char *f = ple_exit_filter();
	printf("ple_exit_filter: %s\n", f ? f : "(none)");
	if (access("/sys/module/kvm_amd", F_OK) == 0)
		CHECK(f && !strcmp(f, "exit_reason == 119"));
	else if (access("/sys/module/kvm_intel", F_OK) == 0)
		CHECK(f && !strcmp(f, "exit_reason == 40"));
	else
		CHECK(f == NULL);
}

/* The tracepoints counted on a real vCPU: skipped (and said why) where there is none. */
static void test_real_vcpu(void)
{
	enum { K = 100 };
	char why[256];
	struct test_vcpu v;
	if (tv_start(&v, why, sizeof(why)) < 0) {
		SKIP("the tracepoint counts on a real vCPU: %s", why);
		return;
	}
	pid_t self = (pid_t)syscall(SYS_gettid);
	struct ple_watch pio, uexit, other, nomatch, match;
	int rc = ple_watch_open(&pio, v.tid, "kvm:kvm_pio", NULL);
	if (rc == -ENOENT || rc == -EACCES || rc == -EPERM) {
		SKIP("perf tracepoint kvm:kvm_pio: %s", strerror(-rc));
		tv_stop(&v);
		return;
	}
	CHECK_EQ(rc, 0);
	CHECK_EQ(ple_watch_open(&uexit, v.tid, "kvm:kvm_userspace_exit", NULL), 0);
	CHECK_EQ(ple_watch_open(&other, self, "kvm:kvm_pio", NULL), 0);
	CHECK_EQ(ple_watch_open(&nomatch, v.tid, "kvm:kvm_pio", "port == 12345"), 0);
	CHECK_EQ(ple_watch_open(&match, v.tid, "kvm:kvm_pio", "port == 1016 && rw == 1"), 0);
	CHECK(!readable(ple_watch_fd(&pio), 0)); /* nothing yet */

	/* Counting: exactly one kvm_pio and one kvm_userspace_exit per OUT exit, on that thread only. */
	tv_exits(&v, K);
	CHECK_EQ(v.bad_exits, 0);
	CHECK_EQ(ple_watch_count(&pio), K);
	CHECK_EQ(ple_watch_count(&uexit), K);
	CHECK_EQ(ple_watch_count(&other), 0);
	CHECK_EQ(ple_watch_count(&nomatch), 0);
	CHECK_EQ(ple_watch_count(&match), K);
	CHECK_EQ(ple_watch_drain(&nomatch), 0);
	CHECK_EQ(ple_watch_drain(&match), K);
	printf("after %d OUT exits: kvm_pio %llu, kvm_userspace_exit %llu, main thread %llu, "
	       "port==12345 %llu\n", K, (unsigned long long)ple_watch_count(&pio),
	       (unsigned long long)ple_watch_count(&uexit), (unsigned long long)ple_watch_count(&other),
	       (unsigned long long)ple_watch_count(&nomatch));

	/* poll(2): POLLIN is reported once per batch of wakeups, then cleared by the kernel. */
	CHECK(readable(ple_watch_fd(&pio), 0));
	CHECK(!readable(ple_watch_fd(&pio), 0));
	CHECK(!readable(ple_watch_fd(&other), 0));
	CHECK(!readable(ple_watch_fd(&nomatch), 0));
	CHECK_EQ(ple_watch_drain(&pio), K);
	CHECK_EQ(ple_watch_drain(&pio), 0);
	tv_exits(&v, 1);
	CHECK(readable(ple_watch_fd(&pio), 1000));
	CHECK_EQ(ple_watch_drain(&pio), 1);

	/* The event-loop path: an io_uring POLL_ADD completes only once the vCPU exits. */
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(4, &ring, 0), 0);
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	io_uring_prep_poll_add(sqe, ple_watch_fd(&uexit), POLLIN);
	ple_watch_drain(&uexit);
	(void)readable(ple_watch_fd(&uexit), 0); /* consume the POLLIN left by the first batch */
	CHECK_EQ(io_uring_submit(&ring), 1);
	struct io_uring_cqe *cqe = NULL;
	CHECK_EQ(io_uring_peek_cqe(&ring, &cqe), -EAGAIN);
	tv_exits(&v, K);
	struct __kernel_timespec ts = {.tv_sec = 2};
	CHECK_EQ(io_uring_wait_cqe_timeout(&ring, &cqe, &ts), 0);
	CHECK(cqe && cqe->res > 0 && (cqe->res & POLLIN));
	if (cqe)
		io_uring_cqe_seen(&ring, cqe);
	CHECK_EQ(ple_watch_drain(&uexit), K);
	io_uring_queue_exit(&ring);

	/* Wake every N events; and an overflowing ring still accounts for every event. */
	struct ple_watch every10;
	CHECK_EQ(ple_watch_open_n(&every10, v.tid, "kvm:kvm_pio", NULL, 10), 0);
	tv_exits(&v, 9);
	CHECK(!readable(ple_watch_fd(&every10), 0));
	tv_exits(&v, 1);
	CHECK(readable(ple_watch_fd(&every10), 1000));
	ple_watch_drain(&pio);
	uint64_t before = ple_watch_count(&pio);
	tv_exits(&v, 3000); /* the ring holds ~1024 records */
	CHECK_EQ(ple_watch_count(&pio) - before, 3000);
	int drained = ple_watch_drain(&pio);
	printf("3000 exits into a ~1024-record ring: drain says %d\n", drained);
	CHECK_EQ(drained, 3000);
	(void)readable(ple_watch_fd(&pio), 0);
	tv_exits(&v, 1); /* wakeups resume once the ring was emptied */
	CHECK(readable(ple_watch_fd(&pio), 1000));
	CHECK_EQ(ple_watch_drain(&pio), 1);
	CHECK_EQ(v.bad_exits, 0);

	/* Errors the caller will print. */
	struct ple_watch bad;
	CHECK_EQ(ple_watch_open(&bad, v.tid, "kvm:no_such_tracepoint", NULL), -ENOENT);
	CHECK_EQ(ple_watch_open(&bad, v.tid, "kvm:kvm_pio", "no_such_field == 1"), -EINVAL);
	CHECK_EQ(ple_watch_open(&bad, v.tid, "kvm_pio", NULL), -EINVAL);
	CHECK_EQ(ple_watch_open(&bad, 0x3fffffff, "kvm:kvm_pio", NULL), -ESRCH);
	CHECK_EQ(ple_watch_fd(&bad), -1);
	ple_watch_close(&bad); /* harmless on a failed open */
	CHECK(ple_tracepoint_id("kvm:kvm_exit") > 0);

	ple_watch_close(&every10);
	ple_watch_close(&pio);
	ple_watch_close(&uexit);
	ple_watch_close(&other);
	ple_watch_close(&nomatch);
	ple_watch_close(&match);
	CHECK_EQ(ple_watch_fd(&pio), -1);
	tv_stop(&v);
}

int main(void)
{
	RUN(test_decide);
	RUN(test_this_host);
	RUN(test_real_vcpu);
	return check_summary();
}
