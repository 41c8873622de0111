/*
 * Rows every thread kind has: locks, signals, time, memory, leaving, and
 * writing to stdout/stderr (the console, the report, warnings, the SIGSYS
 * message itself).
 */
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmm/sandbox/seccomp_table.h"

static const struct seccomp_row rows[] = {
	SC_ALLOW("futex", "pthread mutexes, the scheduler's per-vCPU grant words, run control"),
	SC_ALLOW("rt_sigprocmask", "glibc blocks signals around thread exit and in abort()"),
	SC_ALLOW("rt_sigreturn", "returning from the kick signal's handler"),
	SC_ALLOW("restart_syscall", "a sleep interrupted by the kick signal resumes"),
	SC_ALLOW("exit", "the thread ends"),
	SC_ALLOW("exit_group", "the process ends (exit status after the report)"),
	SC_ALLOW("getpid", "tgkill's first argument (pthread_kill, raise)"),
	SC_ALLOW("gettid", "raise() and abort() name the calling thread"),
	SC_ALLOW("clock_gettime", "vDSO fall-back: timestamps, slices, deadlines"),
	SC_ALLOW("gettimeofday", "vDSO fall-back"),
	SC_ALLOW("clock_nanosleep", "waits with a timeout"),
	SC_ALLOW("nanosleep", "waits with a timeout"),
	SC_ALLOW("sched_setaffinity", "the scheduler pins a granted vCPU thread to its slot's CPU"),
	SC_ALLOW("sched_yield", "--sched host: a vCPU's PV yield"),
	SC_ALLOW("timerfd_settime", "the thread that moves the co-scheduler's next deadline sets its timer",
	  SC_EQ_RT(0, SRC_SCHED_TIMER)),
	SC_ALLOW("timer_settime", "the thread that moves a slot's deadline sets its holder's own timer "
	  "(sched/own_tick.c; a process's POSIX timers are its own)"),
	SC_ALLOW("timer_delete", "a vCPU thread's own timer goes when it ends"),
	SC_ALLOW("tgkill", "pthread_kill: force a vCPU out of KVM_RUN, only in this process",
	  SC_EQ_RT(0, SRC_PID), SC_EQ_RT(2, SRC_KICK_SIGNAL)),
	SC_ALLOW("tgkill", "abort(): only this process, only SIGABRT", SC_EQ_RT(0, SRC_PID), SC_EQ(2, SIGABRT)),
	SC_ALLOW("brk", "malloc"),
	SC_ALLOW("madvise", "malloc trims its arenas"),
	SC_ALLOW("munmap", "free of a large block, thread stacks at exit"),
	SC_ALLOW("mremap", "realloc of a large block: the --trace buffer grows on any thread"),
	SC_ALLOW("mmap", "malloc's arenas and large blocks, never executable", SC_MASKED_EQ64(2, PROT_EXEC, 0)),
	SC_ALLOW("mprotect", "thread arenas grow, never executable", SC_MASKED_EQ64(2, PROT_EXEC, 0)),
	SC_ALLOW("write", "stdout: the console, the report", SC_EQ(0, STDOUT_FILENO)),
	SC_ALLOW("write", "stderr: warnings, the SIGSYS message", SC_EQ(0, STDERR_FILENO)),
	SC_ALLOW("write", "the fds this kind was given: eventfds, --json/--trace files", SC_EQ_RT(0, SRC_WRITE_FDS)),
#ifdef VMM_SANITIZED
	/*
	 * Test builds only. LeakSanitizer's exit-time check (clone, ptrace,
	 * /proc) cannot run under the filters: the sanitized suite runs vmm
	 * with detect_leaks=0, and checks leaks with --no-seccomp.
	 */
	SC_ALLOW("sigaltstack", "ASan/TSan: the sanitizer runtime at thread exit"),
#endif
};

SECCOMP_TABLE(seccomp_rows_common, "common", rows);
