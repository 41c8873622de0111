/*
 * A matrix split over machines: units (one repetition of one cell, or of the
 * microbenchmarks) in the order a full run takes them, dealt round robin to
 * N shards; stable cell keys and a fingerprint of the matrix, so shards of
 * different matrices never merge; and the merge itself (fleet/merge.c).
 */
#ifndef VMM_BENCH_SHARD_H
#define VMM_BENCH_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vmm/bench/matrix/types.h"

#define BENCH_UNIT_MICRO (-1)

struct bench_unit {
	int cell;     /* cell id, or BENCH_UNIT_MICRO */
	unsigned rep; /* global repetition, 0-based */
};

/* What results.json says about the share of the matrix it holds. */
struct bench_shard_meta {
	unsigned index, count; /* 1-based; 1/1 a full run; 0/0 a --cells run; 0/N a merge of N shards */
	char matrix[17];       /* bench_fingerprint */
	const struct bench_unit *units;
	unsigned nunits;
	unsigned margin_learned_ms;
};

/* Every unit in the order a full run takes them: rep-major, bench_run_order
 * within a rep, the microbenchmarks last in each. *out is malloc'd. */
int bench_units_all(const struct bench_opts *o, const struct bench_matrix *m,
		    struct bench_unit **out, unsigned *n);
/* The shard (1-based) that runs the unit at position k of the global order. */
unsigned bench_shard_of(unsigned k, unsigned count);
/* This invocation's units: all, --shard's or --cells'. -EINVAL with err. */
int bench_units_select(const struct bench_opts *o, const struct bench_matrix *m,
		       struct bench_unit **out, unsigned *n, char *err, size_t errlen);
/* "I/N", 1 <= I <= N. 0 or -EINVAL. */
int bench_shard_parse(const char *arg, unsigned *index, unsigned *count);
/* "0,3-5,micro" against ncells cells: sel[ncells] per cell, *micro. 0 or -EINVAL with err. */
int bench_cells_parse(const char *list, unsigned ncells, bool *sel, bool *micro, char *err,
		      size_t errlen);
/* kind:workload:lock:policy:mode:VMSxVCPUS:pPCPUS:tTHRESHOLD[:sSLICE_US][:dDEFER_US]
 * [:gsoff][:loopNONE_OR_CPU][:wWAKE_SLICE_US], the optional ones only when not vmm
 * run's defaults */
void bench_cell_key(const struct bench_cell *c, char *buf, size_t len);
uint64_t bench_fnv1a(const void *p, size_t n, uint64_t h);
#define BENCH_FNV_INIT 0xcbf29ce484222325ull
/* Hex FNV-1a 64 of everything that changes what the matrix measures. */
void bench_fingerprint(const struct bench_opts *o, const struct bench_matrix *m, char out[17]);
/* (cpu, kvm, kernel, nproc) as a short readable name plus a hash. */
void bench_identity_slug(const struct bench_machine *mc, char *buf, size_t len);
bool bench_machine_same(const struct bench_machine *a, const struct bench_machine *b);
/* --list-cells */
void bench_list_cells(FILE *out, const struct bench_opts *o, const struct bench_matrix *m);

#endif
