/*
 * Seccomp filters as data. Each thread kind's filter is a list of tables
 * (filter_*.c); each row allows one system call, with the argument
 * comparisons that must all hold, and says in one line why that thread
 * needs it. seccomp_build() turns a kind's rows into libseccomp rules,
 * taking the values only known at run time (fds, the pid) from a
 * struct seccomp_rt. A call allowed by no row raises SIGSYS.
 *
 * Reviewing a filter means reading its rows; tests/unit/test_seccomp_tables.c
 * runs the generated BPF and checks it allows exactly what the rows say.
 */
#ifndef VMM_SECCOMP_TABLE_H
#define VMM_SECCOMP_TABLE_H

#include <seccomp.h>
#include <stdint.h>

/*
 * ASan/TSan builds: the sanitizer runtime makes calls of its own (one row
 * in filter_common.c), so the tests name this macro too.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define VMM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define VMM_SANITIZED 1
#endif
#endif

/* Where a comparison's value comes from. */
enum seccomp_src {
	SRC_CONST,      /* the row's own a (and b) */
	SRC_PID,        /* this process */
	SRC_KICK_SIGNAL, /* VCPU_KICK_SIGNAL: SIGRTMIN is glibc's, known at run time */
	SRC_VCPU_FD,    /* the calling vCPU thread's own fd */
	SRC_LOOP_URING, /* the event loop's io_uring */
	SRC_VM_FD,      /* Linux guest: the VM fd (interrupt lines) */
	SRC_BLK_URING,  /* Linux guest: the virtio-blk backend's io_uring */
	SRC_BLK_EVENT,  /* Linux guest: that backend's completion eventfd */
	SRC_CONSOLE,    /* Linux guest: fd 0, the console's input */
	SRC_DOMAIN_SOCK, /* --domain: the agent's socket */
	SRC_SCHED_TIMER, /* the co-scheduler's deadline timerfd */
	/* lists: the row stands for one rule per fd in the list */
	SRC_WRITE_FDS,  /* write(2) beyond stdout/stderr: eventfds, output files */
	SRC_READ_FDS,   /* read(2): PLE perf counters */
	SRC_PREAD_FDS,  /* pread64(2): KVM's per-vCPU binary stats */
	SRC_COUNT
};

/* One argument comparison; op 0 (no SCMP_CMP_* is 0) ends a row's list. */
struct seccomp_cmp {
	enum scmp_compare op;
	uint8_t arg;  /* 0..5 */
	uint8_t w32;  /* the value is an int: truncated to 32 bits, as SCMP_CMP32 does */
	enum seccomp_src src;
	uint64_t a;   /* SRC_CONST: datum_a (the mask for SCMP_CMP_MASKED_EQ) */
	uint64_t b;   /* datum_b (MASKED_EQ: the value under the mask) */
};

#define SECCOMP_MAX_CMP 3

struct seccomp_row {
	const char *syscall; /* resolved with seccomp_syscall_resolve_name */
	const char *reason;  /* one line: why this thread kind makes the call */
	struct seccomp_cmp cmp[SECCOMP_MAX_CMP];
};

/* How rows are written in filter_*.c: SC_ALLOW(name, reason, comparisons...). */
#define SC_ALLOW(name, why, ...) { .syscall = (name), .reason = (why), .cmp = { __VA_ARGS__ } }
#define SC_EQ(n, v) { .op = SCMP_CMP_EQ, .arg = (n), .w32 = 1, .src = SRC_CONST, .a = (uint32_t)(v) }
#define SC_EQ_RT(n, s) { .op = SCMP_CMP_EQ, .arg = (n), .w32 = 1, .src = (s) }
#define SC_MASKED_EQ64(n, m, v) { .op = SCMP_CMP_MASKED_EQ, .arg = (n), .src = SRC_CONST, .a = (m), .b = (v) }

struct seccomp_table {
	const char *name;
	const struct seccomp_row *rows;
	unsigned n;
};

#define SECCOMP_TABLE(var, label, rows_) \
	const struct seccomp_table var = { label, rows_, sizeof(rows_) / sizeof((rows_)[0]) }

/* A thread kind: its tables, applied in order. */
struct seccomp_kind {
	const char *name;
	const struct seccomp_table *const *tables;
	unsigned ntables;
};

extern const struct seccomp_table seccomp_rows_common; /* every kind */
extern const struct seccomp_table seccomp_rows_linux;  /* Linux guest devices, every kind */
extern const struct seccomp_table seccomp_rows_vcpu;
extern const struct seccomp_table seccomp_rows_loop;
extern const struct seccomp_table seccomp_rows_loop_linux;
extern const struct seccomp_kind seccomp_kind_vcpu, seccomp_kind_loop, seccomp_kind_domain;

struct seccomp_fd_list {
	const int *fd; /* entries < 0 are absent */
	unsigned n;
};

/*
 * The run-time values rows refer to. A scalar below 0 means "not here":
 * every row that compares against it is left out (a guest without a
 * disk has no blk rows).
 */
struct seccomp_rt {
	int pid, kick_signal;
	int vcpu_fd, loop_uring;
	int vm_fd, blk_uring, blk_event, console;
	int domain_sock;
	int sched_timer;
	struct seccomp_fd_list write, read, pread;
};

/*
 * Past this many fds in one list, a row's fds are written as aligned
 * power-of-two blocks (fd & ~(2^k - 1) == base), which allow exactly the
 * same fds in fewer rules; SECCOMP_MAX_FD_RULES rules at most, or -E2BIG
 * (the BPF program would not fit the kernel's 4096 instructions).
 */
#define SECCOMP_FD_EXACT_RULES 256
#define SECCOMP_MAX_FD_RULES 512

/* SRC_* of a row's comparison: its value, or <0 when absent (scalars only). */
int64_t seccomp_rt_value(const struct seccomp_rt *rt, enum seccomp_src src);
const struct seccomp_fd_list *seccomp_rt_list(const struct seccomp_rt *rt, enum seccomp_src src);


/*
 * A new filter with kind's rows, not loaded: every other call (and every
 * call of another architecture, x32 included) raises SIGSYS. The caller
 * loads or exports it, then seccomp_release()s it. 0 or -errno.
 */
int seccomp_filter_new(const struct seccomp_kind *kind, const struct seccomp_rt *rt, scmp_filter_ctx *out);

#endif
