/*
 * The names the matrix is built from: which workloads boot Linux, which
 * locks the native-threads bound has, and how a multi-VM cell runs. Here,
 * not beside the code that runs them (exec/linux.c, exec/native.c,
 * exec/procs.c), because the matrix, the CLI and the tables ask too, and
 * they sit below exec/ or beside it.
 */
#include <stdbool.h>
#include <string.h>

#include "vmm/bench/matrix/matrix.h"

const char *const bench_linux_workloads[] = { "hackbench", "sysbench-threads", "sysbench-mutex", "kbuild", NULL };

bool bench_linux_workload(const char *workload)
{
	for (unsigned i = 0; bench_linux_workloads[i]; i++)
		if (!strcmp(workload, bench_linux_workloads[i]))
			return true;
	return false;
}

static const char *const native_locks[] = { "ticket", "pvticket", "tas", "mcs", "pvmcs", NULL };

bool bench_native_has_lock(const char *lock)
{
	for (const char *const *l = native_locks; *l; l++)
		if (!strcmp(*l, lock))
			return true;
	return false;
}

const char *const bench_mode_names[BENCH_MODES] = { "process", "domain", "host-procs" };
