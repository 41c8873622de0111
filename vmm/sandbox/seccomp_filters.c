/*
 * Per-thread-kind seccomp filters (see seccomp_filters.h). The lists were
 * taken from `strace -f` of real runs (every workload, lock kind, policy,
 * --sched host, the fault/deadlock/timeout guests, SIGINT) and cut to the
 * calls made after each install point, plus what the error paths need.
 */
#include "vmm/sandbox/seccomp_filters.h"

#include <errno.h>
#include <linux/kvm.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "vcpu/vcpu.h"
#include "vmm/errors.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define VMM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define VMM_SANITIZED 1
#endif
#endif

#define NAMES 512
#define NAME_LEN 32
#define MAX_VCPU_WRITE_FDS 8
#define MAX_READ_RULES 256

/* Filled before any filter exists: the SIGSYS handler may not allocate. */
static char syscall_names[NAMES][NAME_LEN];
static bool names_ready;
static uint32_t native_arch;
static __thread char thread_name[16];
static int vcpu_write_fds[MAX_VCPU_WRITE_FDS];
static unsigned nvcpu_write_fds;
static struct seccomp_guest guest = { -1, -1, -1, false };
static enum { VIOLATE_NONE, VIOLATE_VCPU, VIOLATE_LOOP } violate;

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

/* ---- building filters ---- */

static int rule(scmp_filter_ctx ctx, int nr, unsigned argc, ...)
{
	struct scmp_arg_cmp a[4];
	va_list ap;
	va_start(ap, argc);
	for (unsigned i = 0; i < argc && i < 4; i++)
		a[i] = va_arg(ap, struct scmp_arg_cmp);
	va_end(ap);
	return seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, argc, a);
}

#define ALLOW(nr) rule(ctx, SCMP_SYS(nr), 0)

/* What every thread kind needs: locks, signals, time, memory, leaving. */
static int common_rules(scmp_filter_ctx ctx, const int *wfd, unsigned nw)
{
	int rc = 0;
	rc |= ALLOW(futex);
	rc |= ALLOW(rt_sigprocmask);
	rc |= ALLOW(rt_sigreturn);
	rc |= ALLOW(restart_syscall);
	rc |= ALLOW(exit);
	rc |= ALLOW(exit_group);
	rc |= ALLOW(getpid);
	rc |= ALLOW(gettid);
	/* vDSO fall-backs, and sleeps in waits with a timeout */
	rc |= ALLOW(clock_gettime);
	rc |= ALLOW(gettimeofday);
	rc |= ALLOW(clock_nanosleep);
	rc |= ALLOW(nanosleep);
	/* the scheduler: pin a granted vCPU thread (pthread_setaffinity_np), host yield */
	rc |= ALLOW(sched_setaffinity);
	rc |= ALLOW(sched_yield);
	/* force a vCPU out of KVM_RUN (pthread_kill), or abort() */
	rc |= rule(ctx, SCMP_SYS(tgkill), 2, SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)getpid()),
		   SCMP_A2_32(SCMP_CMP_EQ, VCPU_KICK_SIGNAL));
	rc |= rule(ctx, SCMP_SYS(tgkill), 2, SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)getpid()),
		   SCMP_A2_32(SCMP_CMP_EQ, SIGABRT));
	/* malloc (thread arenas grow by mprotect), thread stacks freed at exit; never executable */
	rc |= ALLOW(brk);
	rc |= ALLOW(madvise);
	rc |= ALLOW(munmap);
	rc |= ALLOW(mremap); /* realloc of a large block: the --trace buffer grows on vCPU threads */
	rc |= rule(ctx, SCMP_SYS(mmap), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	rc |= rule(ctx, SCMP_SYS(mprotect), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	/* stdout (console, report), stderr (warnings, this handler), and the named fds */
	rc |= rule(ctx, SCMP_SYS(write), 1, SCMP_A0_32(SCMP_CMP_EQ, STDOUT_FILENO));
	rc |= rule(ctx, SCMP_SYS(write), 1, SCMP_A0_32(SCMP_CMP_EQ, STDERR_FILENO));
	for (unsigned i = 0; i < nw; i++)
		if (wfd[i] > STDERR_FILENO)
			rc |= rule(ctx, SCMP_SYS(write), 1, SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)wfd[i]));
#ifdef VMM_SANITIZED
	/*
	 * Test builds only: the sanitizer runtime's own call at thread exit.
	 * (LeakSanitizer's exit-time check needs clone/ptrace/open: the
	 * sanitized suite runs vmm with detect_leaks=0 under the filters, and
	 * with leak checks on under --no-seccomp; see tests/run_all.py.)
	 */
	rc |= ALLOW(sigaltstack);
#endif
	return rc;
}

static scmp_filter_ctx new_filter(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
	if (ctx && seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP) < 0) {
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

static int load(scmp_filter_ctx ctx, int rc, const char *kind)
{
	if (rc == 0)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	(void)kind;
	return rc < 0 ? rc : rc > 0 ? -EINVAL : 0;
}

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

/* A Linux guest's devices, on both thread kinds: interrupt lines and disk submissions. */
static int guest_device_rules(scmp_filter_ctx ctx)
{
	int rc = 0;
	if (guest.vm_fd >= 0)
		rc |= rule(ctx, SCMP_SYS(ioctl), 2, SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)guest.vm_fd),
			   SCMP_A1_32(SCMP_CMP_EQ, (uint32_t)KVM_IRQ_LINE));
	if (guest.blk_uring >= 0)
		rc |= rule(ctx, SCMP_SYS(io_uring_enter), 1, SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)guest.blk_uring));
	return rc;
}

/* ---- the public calls ---- */

int seccomp_prepare(const int *vcpu_fds, unsigned n, const struct seccomp_guest *g)
{
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
	nvcpu_write_fds = 0;
	for (unsigned i = 0; i < n && nvcpu_write_fds < MAX_VCPU_WRITE_FDS; i++)
		vcpu_write_fds[nvcpu_write_fds++] = vcpu_fds[i];
	guest = g ? *g : (struct seccomp_guest){ -1, -1, -1, false };

	const char *v = getenv("VMM_TEST_SECCOMP_VIOLATE");
	violate = !v ? VIOLATE_NONE : !strcmp(v, "vcpu") ? VIOLATE_VCPU : !strcmp(v, "loop") ? VIOLATE_LOOP
											     : VIOLATE_NONE;

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
	scmp_filter_ctx ctx = new_filter();
	if (!ctx)
		return -ENOMEM;
	int rc = common_rules(ctx, vcpu_write_fds, nvcpu_write_fds);
	/* the guest's signal kick is drained here, never delivered */
	rc |= ALLOW(rt_sigtimedwait);
	/* KVM: its own vCPU fd, and only what the run loop and the fault report use */
	/* KVM_GET_MSRS: where the guest keeps its steal-time record (vcpu.c);
	 * SET_REGS, the VCPU_EVENTS pair and GET_FPU: the emulation fallbacks */
	static const unsigned long kvm_reqs[] = { KVM_RUN, KVM_GET_REGS, KVM_GET_SREGS, KVM_GET_MSRS, KVM_SET_REGS,
						  KVM_GET_VCPU_EVENTS, KVM_SET_VCPU_EVENTS, KVM_GET_FPU };
	for (unsigned i = 0; i < sizeof(kvm_reqs) / sizeof(kvm_reqs[0]); i++)
		rc |= rule(ctx, SCMP_SYS(ioctl), 2, SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)vcpu_fd),
			   SCMP_A1_32(SCMP_CMP_EQ, (uint32_t)kvm_reqs[i]));
	rc |= guest_device_rules(ctx);
	rc = load(ctx, rc, "vcpu");
	if (rc == 0 && violate == VIOLATE_VCPU && vcpu_id == 0)
		syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
	return rc;
}

/* One rule per fd; past a few hundred, every fd from the lowest one on. */
static int fd_rules(scmp_filter_ctx ctx, int nr, const int *fds, unsigned n)
{
	int rc = 0, lo = -1;
	for (unsigned i = 0; i < n; i++) {
		if (fds[i] < 0)
			continue;
		if (lo < 0 || fds[i] < lo)
			lo = fds[i];
		if (n <= MAX_READ_RULES)
			rc |= rule(ctx, nr, 1, SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)fds[i]));
	}
	if (n > MAX_READ_RULES && lo >= 0)
		rc |= rule(ctx, nr, 1, SCMP_A0_32(SCMP_CMP_GE, (uint32_t)lo));
	return rc;
}

int seccomp_enter_loop(const struct seccomp_fds *f)
{
	name_thread("loop", 0);
	scmp_filter_ctx ctx = new_filter();
	if (!ctx)
		return -ENOMEM;
	int rc = common_rules(ctx, f->write, f->nwrite);
	if (f->uring >= 0)
		rc |= rule(ctx, SCMP_SYS(io_uring_enter), 1, SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)f->uring));
	rc |= fd_rules(ctx, SCMP_SYS(read), f->read, f->nread);   /* PLE perf counters */
	rc |= fd_rules(ctx, SCMP_SYS(pread64), f->pread, f->npread); /* KVM stats */
	/* the report (stdio checks its streams) and the tear-down */
	rc |= ALLOW(close);
	rc |= ALLOW(fstat);
	rc |= ALLOW(newfstatat);
	rc |= rule(ctx, SCMP_SYS(ioctl), 1, SCMP_A1_32(SCMP_CMP_EQ, TCGETS));
	/* a Linux guest: its devices' completions, and the console */
	rc |= guest_device_rules(ctx);
	if (guest.blk_event >= 0)
		rc |= rule(ctx, SCMP_SYS(read), 1, SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)guest.blk_event));
	if (guest.console) {
		rc |= rule(ctx, SCMP_SYS(read), 1, SCMP_A0_32(SCMP_CMP_EQ, STDIN_FILENO));
		/* tcsetattr(0, TCSAFLUSH) when the run ends: raw mode off */
		static const unsigned long tty_reqs[] = { TCSETS, TCSETSW, TCSETSF };
		for (unsigned i = 0; i < sizeof(tty_reqs) / sizeof(tty_reqs[0]); i++)
			rc |= rule(ctx, SCMP_SYS(ioctl), 2, SCMP_A0_32(SCMP_CMP_EQ, STDIN_FILENO),
				   SCMP_A1_32(SCMP_CMP_EQ, (uint32_t)tty_reqs[i]));
	}
	rc = load(ctx, rc, "loop");
	if (rc == 0 && violate == VIOLATE_LOOP)
		syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
	return rc;
}
