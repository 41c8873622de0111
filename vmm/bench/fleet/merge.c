/*
 * `vmm bench merge`: shards' results.json -> the outputs a full run of the
 * same matrix writes, through the same code (bench_stats_matrix, the
 * table, bench_write_outputs). Shards are grouped by host identity and a
 * group never mixes with another; within a group every (cell, rep) comes
 * from exactly one file. Everything is checked before anything is written,
 * and nothing depends on the order of the files named.
 *
 * `vmm bench tables` is the same read, printing the tables and targets only
 * and writing nothing: BENCHMARKS.md's tables are its output on the
 * committed bench/results/ files (make benchmarks-md), so they cannot drift
 * from their data.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/bench/exec/exec.h"
#include "vmm/bench/fleet/fleet.h"
#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/matrix/shard.h"
#include "vmm/bench/report/report.h"
#include "vmm/bench/stats/stats.h"
#include "vmm/errors.h"

struct group {
	struct bench_machine mc;
	char slug[96];
	unsigned nfiles, count;
	struct bench_shard_file **files;
	struct bench_opts o;
	struct bench_matrix m;
	struct bench_micro mi;
	struct bench_unit *all; /* the full run's order */
	unsigned nall;
	int *owner;             /* file per unit position in all; -1 none */
	struct bench_run *stage; /* cell * reps + rep */
	unsigned learned;
};

static const char *me = "vmm bench merge"; /* or "vmm bench tables": the messages' name */

static void usage(FILE *f, bool tables)
{
	if (tables) {
		fprintf(f, "usage: vmm bench tables PATH...\n"
			   "Prints the tables and targets of results.json files (a full run's, or the shards\n"
			   "of one) as the run printed them, from the recorded runs; writes nothing.\n"
			   "Exit status: 0 all there, 1 units missing or a cell failed, 2 a bad file.\n");
		return;
	}
	fprintf(f, "usage: vmm bench merge [--out DIR] [--no-plot] PATH...\n"
		   "Merges the results.json of `vmm bench --shard I/N` runs (a PATH is the file or its\n"
		   "directory) into the outputs of one run of the matrix: table, CSV, JSON, plots.\n"
		   "Results of different hosts (cpu, kvm, kernel, nproc) go to DIR/<host>/ each.\n"
		   "  --out DIR    where the results go (default bench-merged)\n"
		   "  --no-plot    no SVG plots\n"
		   "Exit status: 0 all there, 1 units missing (named on stderr) or a cell failed,\n"
		   "2 a bad, foreign or duplicated file (nothing written).\n");
}

static int cmp_group(const void *a, const void *b)
{
	return strcmp(((const struct group *)a)->slug, ((const struct group *)b)->slug);
}

/* Files grouped by host identity, groups by slug: the order named does not matter. */
static int group_files(struct bench_shard_file *f, unsigned n, struct group *g, unsigned *ng)
{
	*ng = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned k = 0;
		while (k < *ng && !bench_machine_same(&g[k].mc, &f[i].mc))
			k++;
		if (k == *ng) {
			memset(&g[k], 0, sizeof(g[k]));
			g[k].mc = f[i].mc;
			bench_identity_slug(&f[i].mc, g[k].slug, sizeof(g[k].slug));
			if (!(g[k].files = calloc(n, sizeof(*g[k].files))))
				return -ENOMEM;
			(*ng)++;
		}
		g[k].files[g[k].nfiles++] = &f[i];
	}
	qsort(g, *ng, sizeof(*g), cmp_group);
	return 0;
}

static int same_file(struct bench_shard_file *f, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = i + 1; j < n; j++)
			if (!strcmp(f[i].real, f[j].real) || (f[i].size == f[j].size && f[i].content == f[j].content)) {
				fprintf(stderr, "%s: duplicated: %s and %s are the same shard\n", me,
					f[i].path, f[j].path);
				return -EINVAL;
			}
	return 0;
}

/* One matrix per group: the same fingerprint and shard count (0: --cells, any). */
static int check_matrix(struct group *g)
{
	struct bench_shard_file *a = g->files[0], *counted = a;
	for (unsigned i = 0; i < g->nfiles; i++) {
		struct bench_shard_file *b = g->files[i];
		if (strcmp(a->matrix, b->matrix)) {
			fprintf(stderr, "%s: foreign matrix: %s has matrix %s, %s has %s\n", me,
				a->path, a->matrix, b->path, b->matrix);
			return -EINVAL;
		}
		if (b->count && g->count && b->count != g->count) {
			fprintf(stderr, "%s: foreign matrix: %s is one of %u shards, %s one of %u\n", me,
				counted->path, g->count, b->path, b->count);
			return -EINVAL;
		}
		if (b->count && !g->count) {
			g->count = b->count;
			counted = b;
		}
		if (b->margin_learned_ms > g->learned)
			g->learned = b->margin_learned_ms;
	}
	char err[512], fp[17];
	if (bench_load_opts(a, &g->o, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", me, err);
		return -EINVAL;
	}
	if (bench_matrix_build(&g->o, &g->m, err, sizeof(err))) {
		fprintf(stderr, "%s: %s: config: %s\n", me, a->path, err);
		return -EINVAL;
	}
	bench_fingerprint(&g->o, &g->m, fp);
	if (strcmp(fp, a->matrix)) {
		fprintf(stderr, "%s: %s: shard.matrix: %s, but its config makes %s\n", me,
			a->path, a->matrix, fp);
		return -EINVAL;
	}
	return 0;
}

static int position(const struct group *g, int cell, unsigned rep)
{
	for (unsigned k = 0; k < g->nall; k++)
		if (g->all[k].cell == cell && g->all[k].rep == rep)
			return (int)k;
	return -1;
}

/* Every unit from one file only; then each file's runs into the stage. */
static int stage_group(struct group *g)
{
	char err[512];
	unsigned reps = g->o.reps;
	if (bench_units_all(&g->o, &g->m, &g->all, &g->nall))
		return -ENOMEM;
	g->owner = malloc((g->nall + 1) * sizeof(*g->owner));
	g->stage = calloc((size_t)g->m.n * reps + 1, sizeof(*g->stage));
	if (!g->owner || !g->stage)
		return -ENOMEM;
	for (unsigned k = 0; k < g->nall; k++)
		g->owner[k] = -1;
	for (unsigned k = 0; k < BENCH_MICRO_KINDS; k++)
		for (unsigned r = 0; r < BENCH_MAX_REPS; r++)
			g->mi.raw[k][r] = NAN;
	for (unsigned i = 0; i < g->nfiles; i++) {
		struct bench_shard_file *f = g->files[i];
		for (unsigned u = 0; u < f->nunits; u++) {
			int k = position(g, f->units[u].cell, f->units[u].rep);
			if (k < 0) {
				fprintf(stderr, "%s: %s: shard.units[%u]: [%d, %u] is not in the matrix\n", me,
					f->path, u, f->units[u].cell, f->units[u].rep);
				return -EINVAL;
			}
			if (g->owner[k] >= 0) {
				fprintf(stderr, "%s: duplicated: %s and %s both hold cell %d rep %u\n", me,
					g->files[g->owner[k]]->path, f->path, f->units[u].cell, f->units[u].rep);
				return -EINVAL;
			}
			g->owner[k] = (int)i;
		}
		if (bench_load_runs(f, &g->o, &g->m, g->stage, &g->mi, err, sizeof(err))) {
			fprintf(stderr, "%s: %s\n", me, err);
			return -EINVAL;
		}
		g->mi.failures += f->micro_failures;
	}
	return 0;
}

/* "missing: cell ID KEY reps R1,R2 (shard S)", one line per cell; true if any. */
static bool report_missing(const struct group *g, int cell, const char *what)
{
	char reps[512] = "", shards[128] = "";
	size_t o = 0, so = 0;
	unsigned seen[BENCH_MAX_REPS], nseen = 0;
	for (unsigned k = 0; k < g->nall; k++) {
		if (g->all[k].cell != cell || g->owner[k] >= 0)
			continue;
		unsigned s = bench_shard_of(k, g->count);
		o += (size_t)snprintf(reps + o, sizeof(reps) - o, "%s%u", o ? "," : "", g->all[k].rep);
		bool dup = false;
		for (unsigned i = 0; i < nseen; i++)
			dup |= seen[i] == s;
		if (!dup && nseen < BENCH_MAX_REPS) {
			seen[nseen++] = s;
			so += (size_t)snprintf(shards + so, sizeof(shards) - so, "%s%u", so ? "," : "", s);
		}
		if (o >= sizeof(reps) || so >= sizeof(shards))
			break;
	}
	if (!reps[0])
		return false;
	fprintf(stderr, "%s: missing: %s reps %s (shard%s %s)\n", me, what, reps,
		nseen > 1 ? "s" : "", shards);
	return true;
}

/* The stage into cells in global rep order, as a full run fills them. */
static bool fill(struct group *g, struct bench_unit *present, unsigned *npresent)
{
	bool missing = false;
	unsigned reps = g->o.reps;
	char key[256], what[320];
	for (unsigned i = 0; i < g->m.n; i++) {
		struct bench_cell *c = &g->m.cells[i];
		for (unsigned r = 0; r < reps; r++) {
			int k = position(g, (int)i, r);
			if (g->owner[k] < 0) {
				c->missing = true;
				continue;
			}
			c->runs[c->nruns++] = g->stage[(size_t)i * reps + r];
			memset(&g->stage[(size_t)i * reps + r], 0, sizeof(g->stage[0]));
		}
		bench_cell_key(c, key, sizeof(key));
		snprintf(what, sizeof(what), "cell %u %s", i, key);
		missing |= report_missing(g, (int)i, what);
	}
	for (unsigned k = 0; k < g->nall; k++) {
		if (g->owner[k] < 0)
			continue;
		present[(*npresent)++] = g->all[k];
		if (g->all[k].cell == BENCH_UNIT_MICRO)
			g->mi.ran = true;
	}
	if (g->o.micro)
		missing |= report_missing(g, BENCH_UNIT_MICRO, "micro");
	g->mi.reps = g->o.reps;
	return missing;
}

/* The group's runs staged, its figures worked out and its table printed:
 * whether a unit was missing; *failed, whether a cell failed. */
static bool settle(struct group *g, struct bench_unit *present, unsigned *npresent, bool *failed)
{
	bool missing = fill(g, present, npresent);
	*failed = bench_stats_matrix(&g->m);
	if (g->mi.ran)
		bench_micro_finish(&g->mi);
	bench_report_table(stdout, &g->o, &g->m, &g->mi, &g->mc);
	fflush(stdout);
	return missing;
}

/* `vmm bench tables`: the table of write_group, nothing written. */
static int print_group(struct group *g, bool several)
{
	struct bench_unit *present = calloc(g->nall + 1, sizeof(*present));
	unsigned npresent = 0;
	if (!present)
		return VMM_EXIT_HOST_ERROR;
	if (several)
		printf("host %s: %u CPUs, %s, %s, %s\n", g->slug, g->mc.nproc, g->mc.cpu, g->mc.kernel, g->mc.kvm);
	g->o.plot = false;
	bool failed, missing = settle(g, present, &npresent, &failed);
	free(present);
	return failed || missing ? VMM_EXIT_GUEST_FAIL : VMM_EXIT_OK;
}

static int write_group(struct group *g, const char *out, bool several, bool plot)
{
	char dir[4096];
	struct bench_unit *present = calloc(g->nall + 1, sizeof(*present));
	unsigned npresent = 0;
	if (!present)
		return VMM_EXIT_HOST_ERROR;
	snprintf(dir, sizeof(dir), several ? "%s/%s" : "%s", out, g->slug);
	if (several)
		printf("host %s: %u CPUs, %s, %s, %s -> %s/\n", g->slug, g->mc.nproc, g->mc.cpu,
		       g->mc.kernel, g->mc.kvm, dir);
	g->o.out_dir = dir;
	g->o.plot = plot;
	int r = bench_mkdir_p(dir);
	if (r) {
		fprintf(stderr, "%s: --out %s: %s\n", me, dir, strerror(-r));
		free(present);
		return VMM_EXIT_USAGE;
	}
	bool failed, missing = settle(g, present, &npresent, &failed);
	/* index 0: all the shards of count; a merge of it alone says the same. */
	struct bench_shard_meta meta = { .index = 0, .count = g->count, .units = present, .nunits = npresent,
					 .margin_learned_ms = g->learned };
	bench_fingerprint(&g->o, &g->m, meta.matrix);
	int status = bench_write_outputs(&g->o, &g->m, &g->mi, &g->mc, &meta,
					 failed || missing ? VMM_EXIT_GUEST_FAIL : VMM_EXIT_OK);
	bench_print_summary(&g->o, &g->m, &g->mi);
	free(present);
	return status;
}

static void free_group(struct group *g)
{
	unsigned n = g->m.n * g->o.reps;
	for (unsigned i = 0; g->stage && i < n; i++) {
		free(g->stage[i].vm_ops);
		free(g->stage[i].vm_start_ns);
	}
	free(g->stage);
	free(g->owner);
	free(g->all);
	free(g->files);
	bench_matrix_free(&g->m);
}

static int parse(int argc, char **argv, const char **out, bool *plot, bool tables)
{
	static const struct option opts[] = {
		{ "out", required_argument, 0, 'o' },
		{ "no-plot", no_argument, 0, 'P' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (c == 'o' && optarg[0] && !tables)
			*out = optarg;
		else if (c == 'P' && !tables)
			*plot = false;
		else if (c == 'h')
			return 1;
		else {
			fprintf(stderr, "%s: %s '%s' (try %s --help)\n", me,
				c == ':' ? "option needs a value:" : "bad option", argv[optind - 1], me);
			return -EINVAL;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "%s: no results given (%s PATH...)\n", me, me);
		return -EINVAL;
	}
	return 0;
}

int bench_merge_main(int argc, char **argv, bool tables)
{
	const char *out = "bench-merged";
	me = tables ? "vmm bench tables" : "vmm bench merge";
	bool plot = true;
	int r = parse(argc, argv, &out, &plot, tables);
	if (r) {
		if (r > 0)
			usage(stdout, tables);
		return r > 0 ? VMM_EXIT_OK : VMM_EXIT_USAGE;
	}
	unsigned n = (unsigned)(argc - optind), ng = 0;
	struct bench_shard_file *f = calloc(n, sizeof(*f));
	struct group *g = calloc(n, sizeof(*g));
	int status = f && g ? VMM_EXIT_OK : VMM_EXIT_HOST_ERROR;
	char err[512];
	unsigned loaded = 0;
	for (; !status && loaded < n; loaded++)
		if (bench_load_file(argv[optind + (int)loaded], &f[loaded], err, sizeof(err))) {
			fprintf(stderr, "%s: %s\n", me, err);
			status = VMM_EXIT_USAGE;
		}
	if (!status && same_file(f, n))
		status = VMM_EXIT_USAGE;
	if (!status && group_files(f, n, g, &ng))
		status = VMM_EXIT_HOST_ERROR;
	for (unsigned i = 0; !status && i < ng; i++)
		if (check_matrix(&g[i]) || stage_group(&g[i]))
			status = VMM_EXIT_USAGE;
	/* Written groups: the worst of their statuses (a missing unit is 1). */
	int worst = VMM_EXIT_OK;
	for (unsigned i = 0; !status && i < ng; i++) {
		int s = tables ? print_group(&g[i], ng > 1) : write_group(&g[i], out, ng > 1, plot);
		if (s > worst)
			worst = s;
	}
	if (!status)
		status = worst;
	for (unsigned i = 0; i < ng; i++)
		free_group(&g[i]);
	for (unsigned i = 0; i < loaded && f; i++)
		bench_load_free(&f[i]);
	free(f);
	free(g);
	return status;
}
