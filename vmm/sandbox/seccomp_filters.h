/*
 * The seccomp sandbox: one libseccomp filter per thread kind, each installed
 * by the thread on itself once its set-up is done, allowing only the calls
 * (and, where it matters, the arguments: ioctl requests, fds) that thread
 * makes from then on. Everything else raises SIGSYS; the handler prints
 *
 *	vmm: seccomp: thread <name> made forbidden system call <syscall> (<nr>)
 *
 * and ends the process with VMM_EXIT_SECCOMP. Filters cannot be removed, so
 * the event loop's filter stays on the main thread to the end of the
 * process: a second run in the same process cannot create VMs (a `vmm bench`
 * that runs many guests must fork per run, or turn the sandbox off).
 *
 * Thread kinds (their rows, each with its reason, are in filter_*.c; see
 * seccomp_table.h and SECURITY.md):
 *   vcpu  each vCPU thread, after KVM_SET_SIGNAL_MASK, before its first slot
 *   loop  the main thread, once every vCPU thread and PLE watch is started:
 *         the io_uring event loop, then the report and the tear-down
 *   domain  --domain: the member's link thread, from its start
 * A Linux guest (-k) adds to both what its devices do on those threads
 * (struct seccomp_guest, filter_linux.c): KVM_IRQ_LINE on its VM fd (the
 * UART's and virtio-blk's interrupt lines are driven from vCPU threads and
 * from the loop), io_uring_enter on the virtio-blk backend's ring (a queue
 * kick submits from the vCPU thread, completions resubmit from the loop),
 * and on the loop: read on that backend's eventfd, the console on fd 0
 * (read, and the terminal ioctls that restore cooked mode). The loop also
 * preads each vCPU's KVM stats fd (the co-scheduler's halt check).
 *
 * Test hook, in test builds only (build/vmm-test, -DVMM_TEST_HOOKS):
 * VMM_TEST_SECCOMP_VIOLATE=vcpu|loop makes that thread (vCPU 0 for vcpu)
 * call socket(2), which no filter allows, right after installing its
 * filter; tests/integration/test_seccomp.py proves each filter with it.
 */
#ifndef VMM_SECCOMP_FILTERS_H
#define VMM_SECCOMP_FILTERS_H

#include <stdbool.h>

/* The fds a thread may use beyond stdout/stderr; -1 entries are skipped.
 * At most 8 write fds besides stdout/stderr (-E2BIG). */
struct seccomp_fds {
	const int *write; /* write(2) */
	unsigned nwrite;
	const int *read; /* read(2) (PLE perf counters) */
	unsigned nread;
	const int *pread; /* pread64(2) (Linux guests: KVM's per-vCPU stats for parking) */
	unsigned npread;
	int uring;       /* io_uring_enter(2), -1: none */
};

/* A Linux guest's fds, known once its devices exist; -1: none. */
struct seccomp_guest {
	int vm_fd;     /* ioctl KVM_IRQ_LINE (vCPU threads and loop) */
	int blk_uring; /* io_uring_enter (vCPU threads and loop) */
	int blk_event; /* read (loop): the backend's completion eventfd */
	bool console;  /* the loop reads fd 0 and sets its terminal modes */
};

/*
 * From the main thread before any vCPU thread starts: the SIGSYS handler,
 * the syscall-name table it prints from, the test hook, the co-scheduler's
 * timerfd (every thread that runs the scheduler sets it), the fds the vCPU
 * threads may write to (at most 8 besides stdout/stderr), and a Linux
 * guest's fds (NULL: not a Linux guest). 0 or -errno.
 */
int seccomp_prepare(const int *vcpu_write_fds, unsigned n, int sched_timer_fd,
		    const struct seccomp_guest *guest);
/* Installs the vCPU filter on the calling thread: ioctl only on vcpu_fd. */
int seccomp_enter_vcpu(int vcpu_fd, unsigned vcpu_id);
/* Installs the event-loop filter on the calling (main) thread; -E2BIG (and
 * a line on stderr) when the read/pread fds cannot be written exactly. */
int seccomp_enter_loop(const struct seccomp_fds *f);
/* --domain: the member link thread's filter (vmm/domain/member_link.c):
 * sendto only on the agent's socket, write to the vCPUs' fds (the doorbell). */
int seccomp_enter_domain(int sock);

#endif
