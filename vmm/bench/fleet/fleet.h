/*
 * The fleet layer: shards' results.json read back (load.c) and merged into
 * the full run's tables and files (merge.c; `vmm bench merge`, `tables`).
 */
#ifndef VMM_BENCH_FLEET_H
#define VMM_BENCH_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/bench/exec/exec.h"
#include "vmm/bench/matrix/shard.h"
#include "vmm/bench/matrix/types.h"

/* One results.json read for a merge (fleet/load.c); jansson keeps the strings. */
struct bench_shard_file {
	char path[4096];   /* the file, as named (a directory's results.json) */
	char real[4096];   /* realpath: the same file named twice is a duplicate */
	uint64_t content;  /* FNV-1a of the bytes: so is an identical copy */
	size_t size;
	void *root;        /* json_t */
	struct bench_machine mc;
	unsigned index, count;
	char matrix[17];
	struct bench_unit *units;
	unsigned nunits;
	unsigned margin_learned_ms, micro_failures;
};
/* arg: a results.json or a directory holding one. 0 or -EINVAL with err. */
int bench_load_file(const char *arg, struct bench_shard_file *f, char *err, size_t errlen);
void bench_load_free(struct bench_shard_file *f);
/* The options the file's run had (its "config" and "preset"), as bench_parse checks them. */
int bench_load_opts(const struct bench_shard_file *f, struct bench_opts *o, char *err,
		    size_t errlen);
/* f's runs into stage[cell * reps + rep] (vm arrays malloc'd), its micro reps into mi->raw. */
int bench_load_runs(const struct bench_shard_file *f, const struct bench_opts *o,
		    const struct bench_matrix *m, struct bench_run *stage, struct bench_micro *mi,
		    char *err, size_t errlen);

/* `vmm bench merge [--out DIR] [--no-plot] PATH...` */
int bench_merge_main(int argc, char **argv, bool tables); /* tables: `vmm bench tables`, writes nothing */

#endif
