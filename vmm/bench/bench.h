/*
 * `vmm bench`: runs a matrix of `vmm run` configurations (workload x lock x
 * policy x overcommit x VMs x spin threshold), each cell several times,
 * interleaved, and reports medians, spreads and overcommit efficiency next
 * to the --sched host baseline and a native-threads upper bound.
 *
 * The layers, each including only those below it (tests/check_includes.py):
 * matrix/ (the cells) <- cli/ (options), exec/ (running a unit) <- stats/
 * <- report/ <- fleet/ (shards, merge) <- bench.c (this command).
 */
#ifndef VMM_BENCH_H
#define VMM_BENCH_H

int bench_main(int argc, char **argv);

#endif
