/*
 * `vmm bench`: options -> matrix -> repetitions (every cell once per pass,
 * so the host's slow periods are shared) -> statistics -> table, CSV,
 * JSON, plots. Nothing here measures anything itself; see bench.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "vmm/bench/bench.h"
#include "vmm/errors.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void bench_machine_probe(struct bench_machine *mc)
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
}

static int mkdir_p(const char *dir)
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
 * so a slow period on the host is spread over all cells instead of one.
 */
static int run_reps(const struct bench_opts *o, struct bench_matrix *m, const char *tmpdir,
		    struct bench_micro *mi)
{
	unsigned *order = calloc(m->n, sizeof(*order));
	if (!order) {
		fprintf(stderr, "vmm bench: out of memory\n");
		return -ENOMEM;
	}
	bool tty = isatty(STDERR_FILENO);
	unsigned per_rep = m->n + (o->micro ? 1 : 0), total = per_rep * o->reps, done = 0;
	double t0 = now_s();
	for (unsigned rep = 0; rep < o->reps; rep++) {
		bench_run_order(m->n, rep, order);
		for (unsigned k = 0; k < m->n; k++) {
			struct bench_cell *c = &m->cells[order[k]];
			progress(tty, done, total, rep, o->reps, c, t0);
			bench_run_cell(o, c, tmpdir, rep, &c->runs[c->nruns++]);
			done++;
		}
		if (o->micro) {
			progress(tty, done, total, rep, o->reps, NULL, t0);
			bench_micro_rep(o, tmpdir, rep, mi);
			done++;
		}
	}
	if (tty)
		fprintf(stderr, "\r\033[K");
	free(order);
	return 0;
}

/*
 * The files after the table: a failure to write one makes the exit status a
 * failure (the run's numbers are lost), but the others are still tried.
 */
static int write_outputs(const struct bench_opts *o, struct bench_matrix *m,
			 const struct bench_micro *mi, const struct bench_machine *mc, int status)
{
	char path[4096], err[256];
	int r;
	if ((r = bench_report_csv(o->out_dir, m, mi))) {
		fprintf(stderr, "vmm bench: writing CSV into %s: %s\n", o->out_dir, strerror(-r));
		status = VMM_EXIT_GUEST_FAIL;
	}
	snprintf(path, sizeof(path), "%s/results.json", o->out_dir);
	if ((r = bench_report_json(path, o, m, mi, mc))) {
		fprintf(stderr, "vmm bench: %s: %s\n", path, strerror(-r));
		status = VMM_EXIT_GUEST_FAIL;
	}
	if (o->plot && bench_plot(o->out_dir, m, err, sizeof(err))) {
		fprintf(stderr, "vmm bench: %s\n", err);
		status = VMM_EXIT_GUEST_FAIL;
	}
	return status;
}

/* The last lines say what failed, so a long run's outcome is not scrolled off. */
static void print_summary(const struct bench_opts *o, const struct bench_matrix *m,
			  const struct bench_micro *mi)
{
	unsigned nfail = 0;
	for (unsigned i = 0; i < m->n; i++)
		nfail += m->cells[i].failed;
	if (nfail)
		fprintf(stderr, "vmm bench: %u of %u cells FAILED\n", nfail, m->n);
	if (mi->failures)
		fprintf(stderr, "vmm bench: warning: %u microbenchmark runs failed; first: %s\n",
			mi->failures, mi->why);
	printf("results in %s/ (results.csv, runs.csv, micro.csv, results.json%s)\n", o->out_dir,
	       o->plot ? ", *.svg" : "");
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
	if ((r = mkdir_p(o->out_dir))) {
		fprintf(stderr, "vmm bench: --out %s: %s\n", o->out_dir, strerror(-r));
		bench_matrix_free(m);
		return VMM_EXIT_USAGE;
	}
	return -EAGAIN;
}

int bench_main(int argc, char **argv)
{
	struct bench_opts o;
	struct bench_matrix m;
	int status = setup(argc, argv, &o, &m);
	if (status != -EAGAIN)
		return status;
	char tmpdir[] = "/tmp/vmm-bench.XXXXXX";
	if (!mkdtemp(tmpdir)) {
		fprintf(stderr, "vmm bench: temporary directory: %s\n", strerror(errno));
		bench_matrix_free(&m);
		return VMM_EXIT_HOST_ERROR;
	}
	struct bench_machine mc;
	bench_machine_probe(&mc);
	struct bench_micro mi;
	memset(&mi, 0, sizeof(mi));

	if (run_reps(&o, &m, tmpdir, &mi)) {
		bench_matrix_free(&m);
		rm_tmpdir(tmpdir);
		return VMM_EXIT_HOST_ERROR;
	}
	rm_tmpdir(tmpdir);

	bool failed = bench_stats_matrix(&m);
	if (o.micro)
		bench_micro_finish(&mi);
	bench_report_table(stdout, &o, &m, &mi, &mc);
	fflush(stdout);

	status = write_outputs(&o, &m, &mi, &mc, failed ? VMM_EXIT_GUEST_FAIL : VMM_EXIT_OK);
	print_summary(&o, &m, &mi);
	bench_matrix_free(&m);
	return status;
}
