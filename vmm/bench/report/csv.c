/*
 * The CSV files of a run: results.csv (a row per cell), runs.csv (a row per
 * run, so any median can be re-derived) and micro.csv. Numbers are written
 * exactly (format.c), so the CSV and results.json hold equal values.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/bench/exec/exec.h"
#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/report/report.h"

static FILE *open_in(const char *dir, const char *name, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", dir, name);
	return fopen(path, "w");
}

/* Free text in a CSV field: quoted, quotes doubled. */
static void csv_text(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s == '\n' ? ' ' : *s, f);
	}
	fputc('"', f);
}

/* results.csv's columns; new ones go at the end. */
static void results_header(FILE *f)
{
	fprintf(f, "id,kind,workload,lock,policy,spin_threshold,vms,vcpus_per_vm,vcpus_total,pcpus,"
		   "overcommit,auto_added,reps,ok_runs,median_ops_per_s,min_ops_per_s,max_ops_per_s,"
		   "spread_pct,efficiency,ref_id,of_native,status,exit_code,reason,mode,per_vm_ops_per_s,"
		   "jain,max_over_min,vs_1vm,vs_1vm_ref_id,vs_process,vs_host_procs,max_start_late_ms,"
		   "start_spread_ms,slice_us,defer_us,median_lo,median_hi,median_ci_level,eff_lo,eff_hi,"
		   "pooled_1x_ops_per_s,ref_ids");
	for (int k = 0; k < BENCH_RATES; k++)
		fprintf(f, ",%s", bench_rate_names[k]);
	/* New columns go at the end: loop_cpu as asked, loop_cpu_ran as the runs' loops ran (matrix/types.h) */
	fputs(",guest_slice,loop_cpu,loop_cpu_ran,wake_slice_us,qemu_ref_id,vs_qemu,vs_qemu_lo,vs_qemu_hi\n", f);
}

static void results_row(FILE *f, const struct bench_cell *c)
{
	char b[40];
	fprintf(f, "%u,%s,%s,%s,%s,%u,%u,%u,%u,%u,%g,%d,%u,%u", c->id,
		bench_kind_names[c->kind], c->workload, c->lock, c->policy,
		c->spin_threshold, c->vms, c->vcpus, c->vms * c->vcpus, c->pcpus, c->overcommit,
		c->auto_added, c->nruns, c->nok);
	bench_csv_num(f, c->median);
	bench_csv_num(f, c->min);
	bench_csv_num(f, c->max);
	bench_csv_num(f, c->spread_pct);
	bench_csv_num(f, c->eff);
	fprintf(f, ",%d", c->ref);
	bench_csv_num(f, c->of_native);
	fprintf(f, ",%s,%d,", c->failed ? "failed" : "ok", c->failed ? c->fail_exit : 0);
	csv_text(f, c->failed ? c->fail_why : "");
	fprintf(f, ",%s,", bench_mode_names[c->mode]);
	for (unsigned k = 0; c->vm_median && k < c->vms; k++)
		fprintf(f, "%s%s", k ? ";" : "",
			isfinite(c->vm_median[k]) ? bench_exact(c->vm_median[k], b, sizeof(b)) : "");
	bench_csv_num(f, c->jain);
	bench_csv_num(f, c->max_over_min);
	bench_csv_num(f, c->vs_one_vm);
	fprintf(f, ",%d", c->one_vm_ref);
	bench_csv_num(f, c->vs_process);
	bench_csv_num(f, c->vs_host_procs);
	bench_csv_num(f, c->max_late_ms);
	bench_csv_num(f, c->start_spread_ms);
	fprintf(f, ",%u,%u", c->slice_us, c->defer_us);
	bench_csv_num(f, c->median_lo);
	bench_csv_num(f, c->median_hi);
	bench_csv_num(f, c->median_level);
	bench_csv_num(f, c->eff_lo);
	bench_csv_num(f, c->eff_hi);
	bench_csv_num(f, c->pooled_1x);
	fputc(',', f);
	for (unsigned k = 0; k < c->nused; k++)
		fprintf(f, "%s%d", k ? ";" : "", c->used[k]);
	for (int k = 0; k < BENCH_RATES; k++)
		bench_csv_num(f, c->rate[k]);
	fprintf(f, ",%s,%s", c->guest_slice_off ? "off" : "on", bench_loop_name(&c->loop, b, sizeof(b)));
	bench_csv_num(f, c->sched_median[BENCH_SCHED_LOOP_CPU]);
	fprintf(f, ",%u,%d", c->wake_slice_us, c->qemu_ref);
	bench_csv_num(f, c->vs_qemu);
	bench_csv_num(f, c->vs_qemu_lo);
	bench_csv_num(f, c->vs_qemu_hi);
	fputc('\n', f);
}

static int results_csv(const char *dir, const struct bench_matrix *m)
{
	char path[4096];
	FILE *f = open_in(dir, "results.csv", path, sizeof(path));
	if (!f)
		return -errno;
	results_header(f);
	for (unsigned i = 0; i < m->n; i++)
		results_row(f, &m->cells[i]);
	return fclose(f) ? -errno : 0;
}

/* A row per run, so any median can be re-derived. */
static int runs_csv(const char *dir, const struct bench_matrix *m)
{
	char path[4096];
	FILE *f = open_in(dir, "runs.csv", path, sizeof(path));
	if (!f)
		return -errno;
	fprintf(f, "id,rep,ok,exit_code,ops_per_s,wall_s,reason");
	for (int k = 0; k < BENCH_RATES; k++)
		fprintf(f, ",%s", bench_rate_names[k]);
	fputs(",loop_cpu\n", f);
	for (unsigned i = 0; i < m->n; i++)
		for (unsigned k = 0; k < m->cells[i].nruns; k++) {
			const struct bench_run *x = &m->cells[i].runs[k];
			fprintf(f, "%u,%u,%d,%d", i, x->rep, x->ok, x->exit_code);
			bench_csv_num(f, x->ops_per_s);
			bench_csv_num(f, x->wall_s);
			fputc(',', f);
			csv_text(f, x->ok ? "" : x->why);
			for (int k = 0; k < BENCH_RATES; k++)
				bench_csv_num(f, bench_sched_rate(x->sched, (enum bench_rate)k));
			bench_csv_num(f, x->sched[BENCH_SCHED_LOOP_CPU]);
			fputc('\n', f);
		}
	return fclose(f) ? -errno : 0;
}

static int micro_csv(const char *dir, const struct bench_micro *mi)
{
	char path[4096], b[40];
	FILE *f = open_in(dir, "micro.csv", path, sizeof(path));
	if (!f)
		return -errno;
	fprintf(f, "name,median,runs\n");
	for (int k = 0; k < BENCH_MICRO_KINDS; k++) {
		fprintf(f, "%s", bench_micro_names[k]);
		bench_csv_num(f, mi->median[k]);
		fputc(',', f);
		for (unsigned r2 = 0; r2 < mi->reps; r2++)
			fprintf(f, "%s%s", r2 ? ";" : "", bench_exact(mi->raw[k][r2], b, sizeof(b)));
		fputc('\n', f);
	}
	return fclose(f) ? -errno : 0;
}

/* A file that cannot be written stops the ones after it: the exit status says so. */
int bench_report_csv(const char *dir, const struct bench_matrix *m, const struct bench_micro *mi)
{
	int r = results_csv(dir, m);
	if (!r)
		r = runs_csv(dir, m);
	if (r || !mi->ran)
		return r;
	return micro_csv(dir, mi);
}
