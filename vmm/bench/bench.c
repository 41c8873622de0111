/*
 * `vmm bench`: options -> matrix -> repetitions (every cell once per pass,
 * so the host's slow periods are shared) -> statistics -> table, CSV,
 * JSON, plots. Nothing here measures anything itself; see bench.h for the layers.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "vmm/bench/bench.h"
#include "vmm/bench/cli/cli.h"
#include "vmm/bench/exec/exec.h"
#include "vmm/bench/fleet/fleet.h"
#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/matrix/shard.h"
#include "vmm/bench/report/report.h"
#include "vmm/bench/stats/stats.h"
#include "vmm/errors.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void bench_machine_probe(struct bench_machine *mc)
{
	memset(mc, 0, sizeof(*mc));
	mc->nproc = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
	snprintf(mc->cpu, sizeof(mc->cpu), "unknown");
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (!strncmp(line, "model name", 10) && colon) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(mc->cpu, sizeof(mc->cpu), "%s", colon + 2);
			break;
		}
	}
	if (f)
		fclose(f);
	struct utsname u;
	if (!uname(&u))
		snprintf(mc->kernel, sizeof(mc->kernel), "%s %s", u.sysname, u.release);
	/* Which KVM serves /dev/kvm matters as much as the CPU (HOST.md). */
	const char *mods[] = { "kvm_pvm", "kvm_intel", "kvm_amd" };
	snprintf(mc->kvm, sizeof(mc->kvm), "unknown");
	for (unsigned i = 0; i < 3; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/sys/module/%s", mods[i]);
		if (!access(path, F_OK)) {
			snprintf(mc->kvm, sizeof(mc->kvm), "%s", mods[i]);
			break;
		}
	}
	/* Nested results are another machine: they must never merge with bare metal's. */
	const char *nested = getenv("VMM_NESTED");
	if (nested && nested[0]) {
		char k[sizeof(mc->kvm)];
		snprintf(k, sizeof(k), "%s", mc->kvm);
		snprintf(mc->kvm, sizeof(mc->kvm), "%.20s (nested: %.30s)", k, nested);
	}
}

static void progress(bool tty, unsigned done, unsigned total, unsigned rep, unsigned reps,
		     const struct bench_cell *c, double t0)
{
	if (!tty)
		return;
	double el = now_s() - t0, eta = done ? el / done * (total - done) : 0;
	char what[96];
	if (c)
		snprintf(what, sizeof(what), "%s %s %s %ux%u", c->workload, c->lock, c->policy, c->vms,
			 c->vcpus);
	else
		snprintf(what, sizeof(what), "microbenchmarks");
	fprintf(stderr, "\r\033[Kbench: rep %u/%u, run %u/%u, %s, %.0fs left", rep + 1, reps,
		done + 1, total, what, eta);
	fflush(stderr);
}

static void rm_tmpdir(const char *dir)
{
	/* Children remove their own files; only the directories are left. */
	char dom[4096];
	snprintf(dom, sizeof(dom), "%s/dom", dir);
	rmdir(dom);
	rmdir(dir);
}

/*
 * Every repetition runs every cell once, in an order that changes per pass,
 * so a slow period on the host is spread over all cells instead of one. A
 * shard runs its share of that same order (matrix/shard.c).
 */
static void run_units(const struct bench_opts *o, struct bench_matrix *m, const char *tmpdir,
		      struct bench_micro *mi, const struct bench_unit *u, unsigned n)
{
	bool tty = isatty(STDERR_FILENO);
	double t0 = now_s();
	for (unsigned k = 0; k < BENCH_MICRO_KINDS; k++)
		for (unsigned r = 0; r < BENCH_MAX_REPS; r++)
			mi->raw[k][r] = NAN;
	for (unsigned i = 0; i < n; i++) {
		struct bench_cell *c = u[i].cell == BENCH_UNIT_MICRO ? NULL : &m->cells[u[i].cell];
		progress(tty, i, n, u[i].rep, o->reps, c, t0);
		if (c)
			bench_run_cell(o, c, tmpdir, u[i].rep, &c->runs[c->nruns++]);
		else
			bench_micro_rep(o, tmpdir, u[i].rep, mi);
	}
	/* A shard's micro reps are some of all: the others stay unknown (NaN). */
	if (mi->ran)
		mi->reps = o->reps;
	if (tty)
		fprintf(stderr, "\r\033[K");
}

/*
 * Options, matrix and output directory. Returns the exit status when bench_main
 * is to stop here (--help, a usage error, reported here), or -EAGAIN to go on.
 */
static int setup(int argc, char **argv, struct bench_opts *o, struct bench_matrix *m)
{
	char err[256];
	bench_opts_defaults(o);
	int r = bench_parse(argc, argv, o, err, sizeof(err));
	if (r == BENCH_HELP) {
		bench_print_usage(stdout);
		return VMM_EXIT_OK;
	}
	if (r) {
		fprintf(stderr, "vmm bench: %s\n", err);
		return VMM_EXIT_USAGE;
	}
	if (bench_matrix_build(o, m, err, sizeof(err))) {
		fprintf(stderr, "vmm bench: %s\n", err);
		return VMM_EXIT_USAGE;
	}
	if (o->cells) {
		/* Checked before anything is listed, made or run. */
		bool *sel = calloc(m->n + 1, sizeof(*sel)), micro;
		snprintf(err, sizeof(err), "out of memory");
		r = sel ? bench_cells_parse(o->cells, m->n, sel, &micro, err, sizeof(err)) : -ENOMEM;
		free(sel);
		if (r) {
			fprintf(stderr, "vmm bench: %s\n", err);
			bench_matrix_free(m);
			return VMM_EXIT_USAGE;
		}
	}
	if (o->list_cells) {
		bench_list_cells(stdout, o, m);
		bench_matrix_free(m);
		return VMM_EXIT_OK;
	}
	if ((r = bench_mkdir_p(o->out_dir))) {
		fprintf(stderr, "vmm bench: --out %s: %s\n", o->out_dir, strerror(-r));
		bench_matrix_free(m);
		return VMM_EXIT_USAGE;
	}
	return -EAGAIN;
}

static int run_and_report(const struct bench_opts *o, struct bench_matrix *m,
			  const struct bench_unit *units, unsigned nunits, const char *tmpdir)
{
	struct bench_machine mc;
	bench_machine_probe(&mc);
	struct bench_micro mi;
	memset(&mi, 0, sizeof(mi));
	run_units(o, m, tmpdir, &mi, units, nunits);
	rm_tmpdir(tmpdir);

	bench_stats_matrix(m);
	bool failed = false;
	for (unsigned i = 0; i < m->n; i++)
		failed |= bench_cell_counts_failed(&m->cells[i]);
	if (mi.ran)
		bench_micro_finish(&mi);
	bench_report_table(stdout, o, m, &mi, &mc);
	fflush(stdout);

	struct bench_shard_meta meta = {
		.index = o->shard_count ? o->shard_index : o->cells ? 0 : 1,
		.count = o->shard_count ? o->shard_count : o->cells ? 0 : 1,
		.units = units, .nunits = nunits,
		.margin_learned_ms = bench_start_margin_learned_ms(),
	};
	bench_fingerprint(o, m, meta.matrix);
	int status = bench_write_outputs(o, m, &mi, &mc, &meta,
					 failed ? VMM_EXIT_GUEST_FAIL : VMM_EXIT_OK);
	bench_print_summary(o, m, &mi);
	return status;
}

int bench_main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "merge"))
		return bench_merge_main(argc - 1, argv + 1, false);
	if (argc > 1 && !strcmp(argv[1], "tables"))
		return bench_merge_main(argc - 1, argv + 1, true);
	struct bench_opts o;
	struct bench_matrix m;
	char err[256];
	int status = setup(argc, argv, &o, &m);
	if (status != -EAGAIN)
		return status;
	struct bench_unit *units;
	unsigned nunits;
	if (bench_units_select(&o, &m, &units, &nunits, err, sizeof(err))) {
		fprintf(stderr, "vmm bench: %s\n", err);
		bench_matrix_free(&m);
		return VMM_EXIT_USAGE;
	}
	char tmpdir[] = "/tmp/vmm-bench.XXXXXX";
	if (!mkdtemp(tmpdir)) {
		fprintf(stderr, "vmm bench: temporary directory: %s\n", strerror(errno));
		free(units);
		bench_matrix_free(&m);
		return VMM_EXIT_HOST_ERROR;
	}
	status = run_and_report(&o, &m, units, nunits, tmpdir);
	free(units);
	bench_matrix_free(&m);
	return status;
}
