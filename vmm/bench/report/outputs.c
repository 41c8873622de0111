/*
 * What a full run writes and says after its runs: every file (a failure to
 * write one fails the exit status, the others are still tried) and the
 * closing lines. `vmm bench merge` (fleet/) ends the same way, so this is
 * in report/, below both, not in bench.c above them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "vmm/bench/report/report.h"
#include "vmm/errors.h"

int bench_mkdir_p(const char *dir)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", dir);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * The files after the table: a failure to write one makes the exit status a
 * failure (the run's numbers are lost), but the others are still tried.
 */
int bench_write_outputs(const struct bench_opts *o, struct bench_matrix *m,
			const struct bench_micro *mi, const struct bench_machine *mc,
			const struct bench_shard_meta *meta, int status)
{
	char path[4096], err[256];
	int r;
	if ((r = bench_report_csv(o->out_dir, m, mi))) {
		fprintf(stderr, "vmm bench: writing CSV into %s: %s\n", o->out_dir, strerror(-r));
		status = VMM_EXIT_GUEST_FAIL;
	}
	if ((r = bench_derived_csv(o->out_dir, m))) {
		fprintf(stderr, "vmm bench: writing slice_fit.csv, loss.csv into %s: %s\n", o->out_dir,
			strerror(-r));
		status = VMM_EXIT_GUEST_FAIL;
	}
	snprintf(path, sizeof(path), "%s/results.json", o->out_dir);
	if ((r = bench_report_json(path, o, m, mi, mc, meta))) {
		fprintf(stderr, "vmm bench: %s: %s\n", path, strerror(-r));
		status = VMM_EXIT_GUEST_FAIL;
	}
	if (o->plot && bench_plot(o->out_dir, m, err, sizeof(err))) {
		fprintf(stderr, "vmm bench: %s\n", err);
		status = VMM_EXIT_GUEST_FAIL;
	}
	return status;
}

/* A shard's cells that had no unit here did not fail: another shard runs them. */
bool bench_cell_counts_failed(const struct bench_cell *c)
{
	return c->failed && (c->nruns || c->missing);
}

/* The last lines say what failed, so a long run's outcome is not scrolled off. */
void bench_print_summary(const struct bench_opts *o, const struct bench_matrix *m,
			  const struct bench_micro *mi)
{
	unsigned nfail = 0;
	for (unsigned i = 0; i < m->n; i++)
		nfail += bench_cell_counts_failed(&m->cells[i]);
	if (nfail)
		fprintf(stderr, "vmm bench: %u of %u cells FAILED\n", nfail, m->n);
	if (mi->failures)
		fprintf(stderr, "vmm bench: warning: %u microbenchmark runs failed; first: %s\n",
			mi->failures, mi->why);
	printf("results in %s/ (results.csv, runs.csv, micro.csv, slice_fit.csv, loss.csv, results.json%s)\n", o->out_dir,
	       o->plot ? ", *.svg" : "");
}
