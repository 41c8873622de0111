/*
 * The main thread, from its filter's install point in run_execute (every
 * vCPU thread and PLE watch started, the --json/--trace files already
 * open) to the end of the process: the io_uring event loop, then the
 * report and the tear-down.
 */
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "vmm/sandbox/seccomp_table.h"

static const struct seccomp_row rows[] = {
	SC_ALLOW("io_uring_enter", "the event loop's own ring only", SC_EQ_RT(0, SRC_LOOP_URING)),
	SC_ALLOW("read", "the PLE perf counters", SC_EQ_RT(0, SRC_READ_FDS)),
	SC_ALLOW("pread64", "each vCPU's KVM binary stats: the halt check", SC_EQ_RT(0, SRC_PREAD_FDS)),
	SC_ALLOW("close", "the tear-down"),
	SC_ALLOW("fstat", "stdio checks its streams before the report"),
	SC_ALLOW("newfstatat", "stdio checks its streams before the report"),
	SC_ALLOW("ioctl", "TCGETS: stdio asks whether stdout is a terminal", SC_EQ(1, TCGETS)),
};

SECCOMP_TABLE(seccomp_rows_loop, "loop", rows);

/* A Linux guest's devices that only the loop drives. */
static const struct seccomp_row linux_rows[] = {
	SC_ALLOW("read", "the disk backend's completion eventfd", SC_EQ_RT(0, SRC_BLK_EVENT)),
	SC_ALLOW("read", "fd 0: the console's input", SC_EQ_RT(0, SRC_CONSOLE)),
	SC_ALLOW("ioctl", "TCSETS on fd 0: the terminal back to cooked mode at the end",
	  SC_EQ_RT(0, SRC_CONSOLE), SC_EQ(1, TCSETS)),
	SC_ALLOW("ioctl", "TCSETSW on fd 0: tcsetattr(TCSADRAIN)", SC_EQ_RT(0, SRC_CONSOLE), SC_EQ(1, TCSETSW)),
	SC_ALLOW("ioctl", "TCSETSF on fd 0: tcsetattr(TCSAFLUSH)", SC_EQ_RT(0, SRC_CONSOLE), SC_EQ(1, TCSETSF)),
};

SECCOMP_TABLE(seccomp_rows_loop_linux, "loop-linux", linux_rows);

static const struct seccomp_table *const tables[] = { &seccomp_rows_common, &seccomp_rows_loop, &seccomp_rows_linux,
						      &seccomp_rows_loop_linux };
const struct seccomp_kind seccomp_kind_loop = { "loop", tables, sizeof(tables) / sizeof(tables[0]) };
