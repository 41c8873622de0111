/*
 * The report layer: what a run or a merge shows and writes. format.c holds
 * what every table and file shares (labels, numbers); table.c the main
 * table, csv.c its CSV files, derived.c the slice fit and loss tables,
 * linux.c the Linux one, targets.c the speed targets, results_json.c
 * results.json, plot.c the SVGs, outputs.c all of them after a run.
 */
#ifndef VMM_BENCH_REPORT_H
#define VMM_BENCH_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vmm/bench/exec/exec.h"
#include "vmm/bench/matrix/shard.h"
#include "vmm/bench/matrix/types.h"

/* The policy as the tables show it, with its mode and every dimension not at
 * vmm run's default: "none@dom/s3ms/d100us/gsoff/loopnone/w500us". */
#define BENCH_LABEL_MAX 64
const char *bench_cell_label(const struct bench_cell *c, char *buf, size_t len);
/* The widest label among the cells show() keeps (all when NULL), at least min:
 * the tables' policy column, so long labels keep the columns aligned. */
int bench_label_width(const struct bench_matrix *m, bool (*show)(const struct bench_cell *c), int min);

/* Table to out; CSV and JSON into o->out_dir. 0 or -errno. */
void bench_report_table(FILE *out, const struct bench_opts *o, const struct bench_matrix *m,
			const struct bench_micro *mi, const struct bench_machine *mc);
int bench_report_csv(const char *dir, const struct bench_matrix *m, const struct bench_micro *mi);
struct bench_shard_meta; /* matrix/shard.h */
int bench_report_json(const char *path, const struct bench_opts *o, const struct bench_matrix *m,
		      const struct bench_micro *mi, const struct bench_machine *mc,
		      const struct bench_shard_meta *meta);

/* The slice fit and the loss table (report/derived.c): after the main table,
 * into DIR/slice_fit.csv and DIR/loss.csv, and as results.json's "slice_fit"
 * and "loss" arrays. */
void bench_report_derived(FILE *out, const struct bench_matrix *m);
int bench_derived_csv(const char *dir, const struct bench_matrix *m);
void bench_derived_json(struct json_t *root, const struct bench_matrix *m);
/* v with printf format f, or "-" when unknown (NaN). */
const char *bench_fmt(double v, const char *f, char *buf, size_t len);
/* Linux workloads beside QEMU+KVM (report/linux.c): after the main
 * table, when the matrix has any. */
void bench_report_linux(FILE *out, const struct bench_matrix *m);
/* The open issues' speed targets judged on the cells (report/targets.c): a
 * table after the derived ones, and "targets" in results.json. */
void bench_targets_print(FILE *out, const struct bench_matrix *m);
void bench_targets_json(struct json_t *root, const struct bench_matrix *m);
/* A results.json number: whole values as integers, NaN (unknown) as null. */
struct json_t *bench_json_number(double v);
/* ",value" in the shortest text that reads back as the same double; "," when unknown. */
void bench_csv_num(FILE *f, double v);
/* The shortest text that reads back as the same double, in buf. */
const char *bench_exact(double v, char *buf, size_t len);

/* Writes DIR/<name>.gp + .dat and runs gnuplot for the SVGs. 0, or -1 with
 * one line in err (gnuplot missing or failed). */
int bench_plot(const char *dir, const struct bench_matrix *m, char *err, size_t errlen);

/* outputs.c: what a full run does after its runs, shared with the merge. */
int bench_write_outputs(const struct bench_opts *o, struct bench_matrix *m,
			const struct bench_micro *mi, const struct bench_machine *mc,
			const struct bench_shard_meta *meta, int status);
int bench_mkdir_p(const char *dir);
bool bench_cell_counts_failed(const struct bench_cell *c);
void bench_print_summary(const struct bench_opts *o, const struct bench_matrix *m,
			 const struct bench_micro *mi);

#endif
