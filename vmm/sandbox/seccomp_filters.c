/*
 * Per-thread-kind seccomp filters (see seccomp_filters.h): the SIGSYS
 * report, and installing a kind's rows (filter_*.c, built by
 * seccomp_build.c) with this run's fds. The rows were taken from
 * `strace -f` of real runs (every workload, lock kind, policy, --sched
 * host, the fault/deadlock/timeout guests, SIGINT) and cut to the calls
 * made after each install point, plus what the error paths need.
 */
#include "vmm/sandbox/seccomp_filters.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vcpu/vcpu.h"
#include "vmm/errors.h"
#include "vmm/sandbox/seccomp_table.h"

#ifdef VMM_TEST_HOOKS
#include <sys/socket.h>
#include <sys/syscall.h>
#endif

#define NAMES 512
#define NAME_LEN 32
#define MAX_WRITE_FDS 8

/* Filled before any filter exists: the SIGSYS handler may not allocate. */
static char syscall_names[NAMES][NAME_LEN];
static bool names_ready;
static uint32_t native_arch;
static __thread char thread_name[16];
static int vcpu_write_fds[MAX_WRITE_FDS];
static unsigned nvcpu_write_fds;
static struct seccomp_guest guest = { -1, -1, -1, false };
static int sched_timer = -1; /* the co-scheduler's timerfd: every kind sets it */

/* ---- SIGSYS: async-signal-safe, write(2) and _exit(2) only ---- */

static size_t put(char *b, size_t at, size_t cap, const char *s)
{
	while (*s && at + 1 < cap)
		b[at++] = *s++;
	return at;
}

static size_t put_num(char *b, size_t at, size_t cap, unsigned long v, unsigned base)
{
	char d[24];
	int n = 0;
	do {
		d[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v && n < (int)sizeof(d));
	while (n && at + 1 < cap)
		b[at++] = d[--n];
	return at;
}

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	char b[200];
	size_t n = 0, cap = sizeof(b);
	int nr = si->si_syscall;
	n = put(b, n, cap, "vmm: seccomp: thread ");
	n = put(b, n, cap, thread_name[0] ? thread_name : "?");
	n = put(b, n, cap, " made forbidden system call ");
	n = put(b, n, cap, nr >= 0 && nr < NAMES && syscall_names[nr][0] ? syscall_names[nr] : "unknown");
	n = put(b, n, cap, " (");
	n = put_num(b, n, cap, (unsigned long)(unsigned)nr, 10);
	if ((uint32_t)si->si_arch != native_arch) {
		n = put(b, n, cap, ", arch 0x");
		n = put_num(b, n, cap, si->si_arch, 16);
	}
	n = put(b, n, cap, ")\n");
	ssize_t w = write(STDERR_FILENO, b, n);
	(void)w;
	_exit(VMM_EXIT_SECCOMP);
}

/* ---- the test hook: test builds only (build/vmm-test, -DVMM_TEST_HOOKS) ---- */

#ifdef VMM_TEST_HOOKS
/*
 * VMM_TEST_SECCOMP_VIOLATE=vcpu|loop: that thread (vCPU 0 for vcpu) calls
 * socket(2), which no row allows, right after installing its filter, so
 * that tests/integration/test_seccomp.py can prove each filter is on. The
 * shipped build/vmm has neither the variable's name nor the call.
 */
static enum { VIOLATE_NONE, VIOLATE_VCPU, VIOLATE_LOOP } violate;

static void hook_prepare(void)
{
	const char *v = getenv("VMM_TEST_SECCOMP_VIOLATE");
	violate = !v ? VIOLATE_NONE : !strcmp(v, "vcpu") ? VIOLATE_VCPU : !strcmp(v, "loop") ? VIOLATE_LOOP
											     : VIOLATE_NONE;
}

static void hook_violate(bool vcpu, unsigned vcpu_id)
{
	if (vcpu ? violate == VIOLATE_VCPU && vcpu_id == 0 : violate == VIOLATE_LOOP)
		syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
}
#else
static void hook_prepare(void)
{
}

static void hook_violate(bool vcpu, unsigned vcpu_id)
{
	(void)vcpu;
	(void)vcpu_id;
}
#endif

/* ---- installing a kind's rows ---- */

static void name_thread(const char *fmt, unsigned id)
{
	/* snprintf is fine here: no filter yet on this thread */
	char b[16];
	unsigned n = 0;
	for (const char *p = fmt; *p && n + 1 < sizeof(b); p++) {
		if (*p == '#') {
			char d[12];
			int k = 0;
			do {
				d[k++] = (char)('0' + id % 10);
				id /= 10;
			} while (id && k < (int)sizeof(d));
			while (k && n + 1 < sizeof(b))
				b[n++] = d[--k];
		} else {
			b[n++] = *p;
		}
	}
	b[n] = '\0';
	memcpy(thread_name, b, sizeof(b));
}

/* This run's values for the rows; the fd lists are the caller's. */
static struct seccomp_rt runtime(void)
{
	return (struct seccomp_rt){ .pid = getpid(), .kick_signal = VCPU_KICK_SIGNAL, .vcpu_fd = -1,
				    .loop_uring = -1, .vm_fd = guest.vm_fd, .blk_uring = guest.blk_uring,
				    .blk_event = guest.blk_event, .console = guest.console ? STDIN_FILENO : -1,
				    .domain_sock = -1, .sched_timer = sched_timer };
}

/* The write list without stdout/stderr, which have rows of their own. */
static int write_fds(int *out, const int *fds, unsigned n)
{
	int k = 0;
	for (unsigned i = 0; i < n; i++) {
		if (fds[i] <= STDERR_FILENO)
			continue;
		if (k == MAX_WRITE_FDS)
			return -E2BIG;
		out[k++] = fds[i];
	}
	return k;
}

static int install(const struct seccomp_kind *kind, const struct seccomp_rt *rt)
{
	scmp_filter_ctx ctx;
	int rc = seccomp_filter_new(kind, rt, &ctx);
	if (rc < 0)
		return rc;
	rc = seccomp_load(ctx);
	seccomp_release(ctx);
	return rc < 0 ? rc : rc > 0 ? -EINVAL : 0;
}

/* ---- the public calls ---- */

int seccomp_prepare(const int *vcpu_fds, unsigned n, int timer_fd, const struct seccomp_guest *g)
{
	sched_timer = timer_fd;
	if (!names_ready) {
		for (int nr = 0; nr < NAMES; nr++) {
			char *s = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
			if (s) {
				strncpy(syscall_names[nr], s, NAME_LEN - 1);
				free(s);
			}
		}
		native_arch = seccomp_arch_native();
		names_ready = true;
	}
	int k = write_fds(vcpu_write_fds, vcpu_fds, n);
	if (k < 0)
		return k;
	nvcpu_write_fds = (unsigned)k;
	guest = g ? *g : (struct seccomp_guest){ -1, -1, -1, false };
	hook_prepare();
	/*
	 * glibc shrinks a thread arena's heap (free of memory another thread
	 * allocated, e.g. the --trace buffer grown on a domain link or vCPU
	 * thread) only after reading /proc/sys/vm/overcommit_memory, an
	 * openat no filter allows (seen on the loop at exit). Heaps are then
	 * never trimmed: a VMM's heap is small and lives as long as its VM.
	 */
	mallopt(M_TRIM_THRESHOLD, INT_MAX);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGSYS, &sa, NULL) < 0 ? -errno : 0;
}

int seccomp_enter_vcpu(int vcpu_fd, unsigned vcpu_id)
{
	name_thread("vcpu#", vcpu_id);
	struct seccomp_rt rt = runtime();
	rt.vcpu_fd = vcpu_fd;
	rt.write = (struct seccomp_fd_list){ vcpu_write_fds, nvcpu_write_fds };
	int rc = install(&seccomp_kind_vcpu, &rt);
	if (rc == 0)
		hook_violate(true, vcpu_id);
	return rc;
}

int seccomp_enter_loop(const struct seccomp_fds *f)
{
	name_thread("loop", 0);
	int wfd[MAX_WRITE_FDS];
	int k = write_fds(wfd, f->write, f->nwrite);
	if (k < 0)
		return k;
	struct seccomp_rt rt = runtime();
	rt.loop_uring = f->uring;
	rt.write = (struct seccomp_fd_list){ wfd, (unsigned)k };
	rt.read = (struct seccomp_fd_list){ f->read, f->nread };
	rt.pread = (struct seccomp_fd_list){ f->pread, f->npread };
	int rc = install(&seccomp_kind_loop, &rt);
	if (rc == -E2BIG)
		fprintf(stderr, "vmm: seccomp: %u PLE and %u KVM stats fds are too scattered for the loop's filter "
				"(at most %u rules each); fewer vCPUs, or --no-seccomp\n",
			f->nread, f->npread, SECCOMP_MAX_FD_RULES);
	if (rc == 0)
		hook_violate(false, 0);
	return rc;
}

int seccomp_enter_domain(int sock)
{
	name_thread("domain", 0);
	struct seccomp_rt rt = runtime();
	rt.domain_sock = sock;
	rt.write = (struct seccomp_fd_list){ vcpu_write_fds, nvcpu_write_fds };
	return install(&seccomp_kind_domain, &rt);
}
