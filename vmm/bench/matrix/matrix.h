/*
 * The matrix layer, the harness's floor: the cells a struct bench_opts asks
 * for (matrix.c), the values of a dimension (loop.c), which workloads and
 * locks each kind of cell can run (names.c), and the NaN-aware arithmetic
 * every layer above uses (num.c); units, shards and cell keys are shard.h's.
 * It runs nothing and reads no file.
 */
#ifndef VMM_BENCH_MATRIX_H
#define VMM_BENCH_MATRIX_H

#include "vmm/bench/matrix/types.h"

extern const char *const bench_kind_names[BENCH_KINDS]; /* "vm", "native", "qemu" */
extern const char *const bench_mode_names[BENCH_MODES]; /* "process", "domain", "host-procs" */

/* "auto", "none" or the CPU number, in buf (at least 12 bytes). */
const char *bench_loop_name(const struct bench_loop *l, char *buf, size_t len);
bool bench_loop_same(const struct bench_loop *a, const struct bench_loop *b);
/* One value as --loop-cpu takes it; -EINVAL when it is none of them. */
int bench_loop_parse(const char *s, struct bench_loop *out);

int bench_matrix_build(const struct bench_opts *o, struct bench_matrix *m, char *err,
		       size_t errlen);
void bench_matrix_free(struct bench_matrix *m);
/* The order of the cells in repetition rep: a permutation, different per rep. */
void bench_run_order(unsigned ncells, unsigned rep, unsigned *order);

/* Statistics over doubles; NaN for an empty set. v is not modified. */
double bench_median(const double *v, unsigned n);
double bench_min(const double *v, unsigned n);
double bench_max(const double *v, unsigned n);
/* (max - min) / median in percent; NaN when median is 0 or unknown. */
double bench_spread_pct(double min, double max, double median);
double bench_ratio(double num, double den);
/* Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all equal, 1/n when
 * one gets everything; NaN when n is 0, any x is unknown or negative, or all are 0. */
double bench_jain(const double *v, unsigned n);

/* Linux workloads: hackbench, sysbench-threads, ... booted under vmm run -k,
 * or under QEMU -accel kvm for BENCH_QEMU cells (exec/linux.c runs them). */
bool bench_linux_workload(const char *workload);
extern const char *const bench_linux_workloads[]; /* NULL-terminated */
/* The locks exec/native.c has as host threads. */
bool bench_native_has_lock(const char *lock);

#endif
