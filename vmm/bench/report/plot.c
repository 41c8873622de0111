/*
 * Plots by gnuplot, not by hand: we write the data and a script beside the
 * SVG (so anyone can restyle and re-run `gnuplot overcommit.gp`), then run
 * gnuplot. overcommit.svg: efficiency vs overcommit, a panel per lock and
 * a line per policy, the native threads dashed. threshold.svg (when the
 * matrix sweeps spin thresholds): throughput vs threshold, a line per
 * policy and VM count.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/report/report.h"

extern char **environ;

#define MAX_PANELS 16
#define MAX_SERIES 32

struct panel {
	const char *workload, *lock;
	uint32_t thr; /* overcommit plot: the threshold shown */
};

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static unsigned panels(const struct bench_matrix *m, struct panel *p)
{
	unsigned n = 0;
	for (unsigned i = 0; i < m->n; i++) {
		const struct bench_cell *c = &m->cells[i];
		bool seen = false;
		for (unsigned k = 0; k < n; k++)
			seen |= !strcmp(p[k].workload, c->workload) && !strcmp(p[k].lock, c->lock);
		if (!seen && c->kind == BENCH_VM && n < MAX_PANELS)
			p[n++] = (struct panel){ c->workload, c->lock, c->spin_threshold };
	}
	return n;
}

static void layout(FILE *gp, unsigned n, const char *svg, const char *title)
{
	unsigned cols = n < 3 ? n : 3, rows = (n + cols - 1) / cols;
	fprintf(gp, "set terminal svg size %u,%u dynamic enhanced font 'sans,11' background rgb 'white'\n",
		cols > 1 ? 440 * cols : 640, 360 * rows + 40);
	fprintf(gp, "set output '%s'\n", svg);
	fprintf(gp, "set multiplot layout %u,%u title '%s'\n", rows, cols, title);
	fprintf(gp, "set grid\nset key bottom left font ',9'\n");
}

/* Cells of one panel and one series, in x order, as one data block. */
static bool block(FILE *dat, const struct bench_matrix *m, const struct panel *p,
		  const struct bench_cell *s, bool by_thr, unsigned *idx)
{
	double xs[BENCH_MAX_CELLS];
	unsigned n = 0;
	for (unsigned i = 0; i < m->n; i++) {
		const struct bench_cell *c = &m->cells[i];
		/* K processes are in the tables, not the plots: one line per policy */
		if (c->kind != s->kind || strcmp(c->workload, p->workload) || strcmp(c->lock, p->lock) ||
		    strcmp(c->policy, s->policy) || c->failed || c->mode != BENCH_MODE_PROCESS ||
		    c->slice_us != s->slice_us || c->defer_us != s->defer_us ||
		    c->guest_slice_off != s->guest_slice_off || !bench_loop_same(&c->loop, &s->loop) ||
		    c->wake_slice_us != s->wake_slice_us)
			continue;
		if (by_thr ? c->vms != s->vms || c->vcpus != s->vcpus : c->spin_threshold != s->spin_threshold)
			continue;
		double x = by_thr ? c->spin_threshold : c->overcommit;
		double y = by_thr ? c->median : c->eff;
		bool dup = false;
		for (unsigned k = 0; k < n; k++)
			dup |= xs[k] == x; /* several VM counts at one overcommit: the first */
		if (dup || !(y > 0))
			continue;
		if (!n)
			fprintf(dat, "# %s\n", c->policy);
		xs[n++] = x;
		fprintf(dat, "%.10g %.10g\n", x, y);
	}
	if (!n)
		return false;
	fprintf(dat, "\n\n");
	(*idx)++;
	return true;
}

/*
 * One plotted line per series: is cell i the first of its series? A series
 * is workload, lock, policy and kind; with per_size, also VMs and vCPUs.
 */
static bool first_of_series(const struct bench_matrix *m, unsigned i, bool per_size)
{
	const struct bench_cell *c = &m->cells[i];
	if (c->mode != BENCH_MODE_PROCESS)
		return false;
	for (unsigned j = 0; j < i; j++) {
		const struct bench_cell *d = &m->cells[j];
		if (d->mode == BENCH_MODE_PROCESS && d->kind == c->kind && !strcmp(d->workload, c->workload) && !strcmp(d->lock, c->lock) &&
		    !strcmp(d->policy, c->policy) && d->slice_us == c->slice_us && d->defer_us == c->defer_us &&
		    d->guest_slice_off == c->guest_slice_off && bench_loop_same(&d->loop, &c->loop) &&
		    d->wake_slice_us == c->wake_slice_us &&
		    (!per_size || (d->vms == c->vms && d->vcpus == c->vcpus)))
			return false;
	}
	return true;
}

/* The policy, and its slice, deferral bound, guest-slice setting, loop
 * placement and wake slice where not vmm run's defaults. */
static void series_name(const struct bench_cell *c, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s", c->policy);
	if (n > 0 && (size_t)n < len && c->slice_us != BENCH_SLICE_US_DEFAULT)
		n += snprintf(buf + n, len - (size_t)n, " %g ms", c->slice_us / 1000.0);
	if (n > 0 && (size_t)n < len && c->defer_us != BENCH_DEFER_US_DEFAULT)
		n += snprintf(buf + n, len - (size_t)n, " defer %u us", c->defer_us);
	if (n > 0 && (size_t)n < len && c->guest_slice_off)
		n += snprintf(buf + n, len - (size_t)n, " guest-slice off");
	char l[16];
	if (n > 0 && (size_t)n < len && c->loop.kind != BENCH_LOOP_AUTO)
		n += snprintf(buf + n, len - (size_t)n, " loop %s", bench_loop_name(&c->loop, l, sizeof(l)));
	if (n > 0 && (size_t)n < len && c->wake_slice_us != BENCH_WAKE_SLICE_US_DEFAULT)
		snprintf(buf + n, len - (size_t)n, " wake %u us", c->wake_slice_us);
}

/*
 * The panels of one plot: a panel per workload and lock, a line per series
 * in it. The two plots differ only in which cells start a series, what x is
 * (by_thr: the spin threshold, else the overcommit) and how a line is
 * titled, so one loop writes both.
 */
static void panel_plots(FILE *gp, FILE *dat, const char *datpath, const struct bench_matrix *m,
			const struct panel *p, unsigned np, bool by_thr)
{
	unsigned idx = 0;
	for (unsigned k = 0; k < np; k++) {
		fprintf(gp, "set title '%s, %s lock'\nplot ", p[k].workload, p[k].lock);
		unsigned nplots = 0;
		for (unsigned i = 0; i < m->n; i++) {
			const struct bench_cell *c = &m->cells[i];
			if ((by_thr && c->kind != BENCH_VM) || strcmp(c->workload, p[k].workload) ||
			    strcmp(c->lock, p[k].lock) || !first_of_series(m, i, by_thr))
				continue;
			/* Overcommit plot: VM lines at the panel's one threshold. */
			struct bench_cell s = *c;
			if (!by_thr && c->kind == BENCH_VM)
				s.spin_threshold = p[k].thr;
			unsigned at = idx;
			if (!block(dat, m, &p[k], &s, by_thr, &idx))
				continue;
			fprintf(gp, "%s'%s' index %u using 1:2 with linespoints lw 2 ", nplots++ ? ", " : "", datpath, at);
			char name[64];
			series_name(c, name, sizeof(name));
			if (by_thr)
				fprintf(gp, "title '%s, %u VM%s x %u vCPUs'", name, c->vms, c->vms > 1 ? "s" : "",
					c->vcpus);
			else
				fprintf(gp, "%stitle '%s'", c->kind == BENCH_NATIVE ? "dt 2 lc rgb 'black' " : "",
					name);
		}
		if (!nplots)
			fprintf(gp, "NaN title 'no data'");
		fputc('\n', gp);
	}
	fprintf(gp, "unset multiplot\n");
}

static void overcommit_plot(FILE *gp, FILE *dat, const char *datpath, const struct bench_matrix *m,
			    const char *svg)
{
	struct panel p[MAX_PANELS];
	unsigned np = panels(m, p);
	layout(gp, np, svg, "overcommit efficiency (ops/s at N vCPUs / pooled ops/s at M vCPUs on M slots)");
	fprintf(gp, "set logscale y\nset logscale x 2\nset xlabel 'vCPUs per physical CPU'\n"
		    "set ylabel 'efficiency'\nset format y '%%g'\n");
	panel_plots(gp, dat, datpath, m, p, np, false);
}

static bool sweeps_threshold(const struct bench_matrix *m)
{
	for (unsigned i = 0; i < m->n; i++)
		for (unsigned j = 0; j < i; j++)
			if (m->cells[i].kind == BENCH_VM && m->cells[j].kind == BENCH_VM &&
			    !strcmp(m->cells[i].lock, m->cells[j].lock) &&
			    m->cells[i].spin_threshold != m->cells[j].spin_threshold)
				return true;
	return false;
}

static void threshold_plot(FILE *gp, FILE *dat, const char *datpath, const struct bench_matrix *m,
			   const char *svg)
{
	struct panel p[MAX_PANELS];
	unsigned np = panels(m, p);
	layout(gp, np, svg, "spin-threshold sweep (median ops/s)");
	fprintf(gp, "set logscale y\nset logscale x 2\nset xlabel 'spins before a PV lock waits'\n"
		    "set ylabel 'ops/s'\nset format x '%%.0f'\nset format y '%%g'\n");
	panel_plots(gp, dat, datpath, m, p, np, true);
}

static int run_gnuplot(const char *dir, const char *script, char *err, size_t errlen)
{
	char *argv[] = { "gnuplot", (char *)script, NULL };
	pid_t pid;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	/* In the output folder: the script names its files relative to it. */
	posix_spawn_file_actions_addchdir_np(&fa, dir);
	int r = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r == ENOENT)
		return fail(err, errlen, "no plot: gnuplot not found (install gnuplot-nox, or pass --no-plot)");
	if (r)
		return fail(err, errlen, "no plot: cannot start gnuplot: %s", strerror(r));
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return fail(err, errlen, "no plot: waiting for gnuplot: %s", strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st) == 127)
		return fail(err, errlen, "no plot: gnuplot not found or crashed (install gnuplot-nox, or pass --no-plot)");
	if (WEXITSTATUS(st))
		return fail(err, errlen, "no plot: gnuplot %s failed (exit %d)", script, WEXITSTATUS(st));
	return 0;
}

static int one(const char *dir, const char *name, const struct bench_matrix *m,
	       void (*fn)(FILE *, FILE *, const char *, const struct bench_matrix *, const char *),
	       char *err, size_t errlen)
{
	char gpath[4096], dpath[4096], svg[4096];
	if (strchr(dir, '\''))
		return fail(err, errlen, "no plot: --out %s contains a quote", dir);
	char name_gp[64], name_dat[64];
	snprintf(gpath, sizeof(gpath), "%s/%s.gp", dir, name);
	snprintf(dpath, sizeof(dpath), "%s/%s.dat", dir, name);
	snprintf(svg, sizeof(svg), "%s.svg", name);
	snprintf(name_gp, sizeof(name_gp), "%s.gp", name);
	snprintf(name_dat, sizeof(name_dat), "%s.dat", name);
	FILE *gp = fopen(gpath, "w"), *dat = fopen(dpath, "w");
	if (!gp || !dat) {
		if (gp)
			fclose(gp);
		if (dat)
			fclose(dat);
		return fail(err, errlen, "no plot: cannot write %s: %s", gp ? dpath : gpath, strerror(errno));
	}
	fprintf(gp, "# made by vmm bench; run in this folder: gnuplot %s\n", name_gp);
	fn(gp, dat, name_dat, m, svg);
	bool bad = fclose(dat) | fclose(gp);
	if (bad)
		return fail(err, errlen, "no plot: cannot write %s", gpath);
	return run_gnuplot(dir, name_gp, err, errlen);
}

int bench_plot(const char *dir, const struct bench_matrix *m, char *err, size_t errlen)
{
	int r = one(dir, "overcommit", m, overcommit_plot, err, errlen);
	if (!r && sweeps_threshold(m))
		r = one(dir, "threshold", m, threshold_plot, err, errlen);
	return r;
}
