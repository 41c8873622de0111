/*
 * The two derived tables after the main one (issue 13): the slice fit
 * (stats/fit.c) and where a lost point goes (stats/loss.c), each as a
 * table on stdout, a CSV and an array in results.json. All of it is a
 * function of the matrix's runs, so a merge writes the same bytes as a
 * full run. BENCHMARKS.md, "Choosing the slice" and "Where a lost point
 * goes", says how to read them.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/report/report.h"
#include "vmm/bench/stats/stats.h"

static const char *thr_of(const struct bench_cell *c, char *buf, size_t len)
{
	snprintf(buf, len, strncmp(c->lock, "pv", 2) ? "-" : "%u", c->spin_threshold);
	return buf;
}

static void fit_table(FILE *out, const struct bench_matrix *m, const struct bench_slice_fit *f,
		      int n)
{
	char b[8][32], sl[96];
	fprintf(out, "\nslice fit: loss = 1 - eff = a + C/slice, least squares over each slice sweep "
		"(co-scheduler cells above 1x; C = slot time per switch-equivalent)\n");
	fprintf(out, "%-10s %-9s %6s %-8s %-7s %3s %5s %6s %-3s %-4s %6s %-22s %7s %8s %6s %9s %9s %10s\n",
		"workload", "lock", "thr", "policy", "mode", "VMs", "x", "defer", "gs", "loop", "wake",
		"slices (ms)", "a", "C (us)", "R^2", "1% slice", "of sweep", "wait bound");
	for (int i = 0; i < n; i++) {
		const struct bench_cell *c = &m->cells[f[i].first];
		size_t o = 0;
		sl[0] = '\0';
		for (unsigned k = 0; k < f[i].n && o + 1 < sizeof(sl); k++)
			o += (size_t)snprintf(sl + o, sizeof(sl) - o, "%s%g", k ? "," : "",
					      f[i].slice_us[k] / 1000);
		char slice[32];
		if (f[i].slice_1pct_us == 0)
			snprintf(slice, sizeof(slice), "any");
		else
			bench_fmt(f[i].slice_1pct_us / 1000, "%.2fms", slice, sizeof(slice));
		fprintf(out, "%-10s %-9s %6s %-8s %-7s %3u %4gx %4uus %-3s %-4s %4uus %-22s %7s %8s %6s %9s %9s %10s\n",
			c->workload, c->lock, thr_of(c, b[0], sizeof(b[0])), c->policy,
			bench_mode_names[c->mode], c->vms, c->overcommit, c->defer_us,
			c->guest_slice_off ? "off" : "on", bench_loop_name(&c->loop, b[6], sizeof(b[6])),
			c->wake_slice_us, sl,
			bench_fmt(f[i].fit.a, "%.4f", b[1], 32), bench_fmt(f[i].fit.c_us, "%.1f", b[2], 32),
			bench_fmt(f[i].fit.r2, "%.3f", b[3], 32), slice,
			bench_fmt(f[i].swept_1pct_us / 1000, "%gms", b[4], 32),
			bench_fmt(f[i].wait_bound_us / 1000, "%.1fms", b[5], 32));
	}
	fprintf(out, "1%% slice = C / 0.01, the shortest slice whose switch term is at most 1 %%; of "
		"sweep = the shortest swept slice at or above it; wait bound = (vCPUs per slot - 1) x "
		"1%% slice, the longest a queued vCPU waits for its slot; gs = --guest-slice; loop = --loop-cpu; "
		"wake = --wake-slice-us (0: slices never cut)\n");
}

static void loss_table(FILE *out, const struct bench_matrix *m)
{
	char b[16][32], pol[BENCH_LABEL_MAX];
	int lw = bench_label_width(m, bench_loss_applies, 20);
	fprintf(out, "\nwhere a lost point goes (cells above 1x; run share = guest running time / "
		"(slots x window), against the pooled 1x's)\n");
	fprintf(out, "%-4s %-10s %-9s %-*s %5s %6s %6s %6s %6s %7s %7s %7s %9s %8s %9s %9s %9s %7s %5s %7s\n",
		"cell", "workload", "lock", lw, "policy", "x", "eff", "share", "1x", "ratio", "ops/rs",
		"pts:slot", "pts:ops", "switch/s", "us/sw", "loop/s", "defer/s", "gsyield/s", "cut/s", "hard", "kept");
	for (unsigned i = 0; i < m->n; i++) {
		const struct bench_cell *c = &m->cells[i];
		struct bench_loss l;
		if (bench_loss_cell(m, c, &l))
			continue;
		fprintf(out, "%-4u %-10s %-9s %-*s %4gx %6s %6s %6s %6s %7s %7s %7s %9s %8s %9s %9s %9s %7s %5s %7s\n",
			c->id, c->workload, c->lock, lw, bench_cell_label(c, pol, sizeof(pol)), c->overcommit, bench_fmt(l.eff, "%.3f", b[0], 32),
			bench_fmt(l.share, "%.3f", b[1], 32), bench_fmt(l.share_1x, "%.3f", b[2], 32),
			bench_fmt(l.share_ratio, "%.3f", b[3], 32), bench_fmt(l.ops_ratio, "%.3f", b[4], 32),
			bench_fmt(l.pts_slot * 100, "%.1f", b[5], 32), bench_fmt(l.pts_ops * 100, "%.1f", b[6], 32),
			bench_fmt(l.switches_per_s, "%.0f", b[7], 32), bench_fmt(l.lost_us_per_switch, "%.1f", b[8], 32),
			bench_fmt(l.loop_wakeups_per_s, "%.0f", b[9], 32), bench_fmt(l.deferrals_per_s, "%.0f", b[10], 32),
			bench_fmt(l.guest_slice_yields_per_s, "%.0f", b[13], 32), bench_fmt(l.wake_cuts_per_s, "%.0f", b[14], 32),
			bench_fmt(l.hard_share * 100, "%.0f%%", b[11], 32), bench_fmt(l.spins_queued_kept, "%.0f", b[12], 32));
	}
	fprintf(out, "eff = ratio x ops/rs (ops per guest-running second / 1x's); the points lost, "
		"100 x (1 - eff), = pts:slot (slot time not in the guest: switches, event loop, idle) + "
		"pts:ops (slower operations: convoys, spinning, cache); us/sw = slot time lost beyond "
		"1x per switch; gsyield/s = slice ends the guest timed and left at (--guest-slice on; off: "
		"deferrals/s are the VMM's slice ends); cut/s = slices cut short for a woken vCPU "
		"(--wake-slice-us); hard = slice ends at a safe point that the hard "
		"deadline ended; kept = spinners kept queued\n");
}

void bench_report_derived(FILE *out, const struct bench_matrix *m)
{
	struct bench_slice_fit *f;
	int n = bench_slice_fits(m, &f);
	if (n > 0)
		fit_table(out, m, f, n);
	free(f);
	bool any = false;
	for (unsigned i = 0; i < m->n; i++)
		any |= bench_loss_applies(&m->cells[i]);
	if (any)
		loss_table(out, m);
}

int bench_derived_csv(const char *dir, const struct bench_matrix *m)
{
	char path[4096];
	struct bench_slice_fit *f;
	int n = bench_slice_fits(m, &f);
	if (n < 0)
		return n;
	snprintf(path, sizeof(path), "%s/slice_fit.csv", dir);
	FILE *o = fopen(path, "w");
	if (!o) {
		free(f);
		return -errno;
	}
	fprintf(o, "first_id,workload,lock,policy,spin_threshold,mode,vms,vcpus_per_vm,overcommit,"
		   "defer_us,guest_slice,ids,slices_us,a,c_us,r2,slice_1pct_us,swept_1pct_us,wait_bound_us,"
		   "loop_cpu,wake_slice_us\n");
	for (int i = 0; i < n; i++) {
		const struct bench_cell *c = &m->cells[f[i].first];
		fprintf(o, "%d,%s,%s,%s,%u,%s,%u,%u,%g,%u,%s,", f[i].first, c->workload, c->lock, c->policy,
			c->spin_threshold, bench_mode_names[c->mode], c->vms, c->vcpus, c->overcommit,
			c->defer_us, c->guest_slice_off ? "off" : "on");
		for (unsigned k = 0; k < f[i].n; k++)
			fprintf(o, "%s%d", k ? ";" : "", f[i].ids[k]);
		fputc(',', o);
		for (unsigned k = 0; k < f[i].n; k++)
			fprintf(o, "%s%g", k ? ";" : "", f[i].slice_us[k]);
		bench_csv_num(o, f[i].fit.a);
		bench_csv_num(o, f[i].fit.c_us);
		bench_csv_num(o, f[i].fit.r2);
		bench_csv_num(o, f[i].slice_1pct_us);
		bench_csv_num(o, f[i].swept_1pct_us);
		bench_csv_num(o, f[i].wait_bound_us);
		char l[16];
		fprintf(o, ",%s,%u\n", bench_loop_name(&c->loop, l, sizeof(l)), c->wake_slice_us);
	}
	free(f);
	if (fclose(o))
		return -errno;
	snprintf(path, sizeof(path), "%s/loss.csv", dir);
	if (!(o = fopen(path, "w")))
		return -errno;
	fprintf(o, "id,efficiency,run_share,run_share_1x,share_ratio,ops_ratio,pts_slot,pts_ops,"
		   "switches_per_s,lost_us_per_switch,loop_wakeups_per_s,deferrals_per_s,hard_share,"
		   "spins_queued_kept,guest_slice_yields_per_s,wake_cuts_per_s\n");
	for (unsigned i = 0; i < m->n; i++) {
		struct bench_loss l;
		if (bench_loss_cell(m, &m->cells[i], &l))
			continue;
		fprintf(o, "%d", l.id);
		const double v[] = { l.eff, l.share, l.share_1x, l.share_ratio, l.ops_ratio, l.pts_slot,
				     l.pts_ops, l.switches_per_s, l.lost_us_per_switch, l.loop_wakeups_per_s,
				     l.deferrals_per_s, l.hard_share, l.spins_queued_kept,
				     l.guest_slice_yields_per_s, l.wake_cuts_per_s };
		for (unsigned k = 0; k < sizeof(v) / sizeof(v[0]); k++)
			bench_csv_num(o, v[k]);
		fputc('\n', o);
	}
	return fclose(o) ? -errno : 0;
}

void bench_derived_json(struct json_t *root, const struct bench_matrix *m)
{
	json_t *fits = json_array(), *loss = json_array();
	struct bench_slice_fit *f;
	int n = bench_slice_fits(m, &f);
	for (int i = 0; i < n; i++) {
		json_t *o = json_object(), *ids = json_array(), *sl = json_array();
		for (unsigned k = 0; k < f[i].n; k++) {
			json_array_append_new(ids, json_integer(f[i].ids[k]));
			json_array_append_new(sl, json_integer((json_int_t)f[i].slice_us[k]));
		}
		json_object_set_new(o, "first_id", json_integer(f[i].first));
		json_object_set_new(o, "ids", ids);
		json_object_set_new(o, "slices_us", sl);
		json_object_set_new(o, "a", bench_json_number(f[i].fit.a));
		json_object_set_new(o, "c_us", bench_json_number(f[i].fit.c_us));
		json_object_set_new(o, "r2", bench_json_number(f[i].fit.r2));
		json_object_set_new(o, "slice_1pct_us", bench_json_number(f[i].slice_1pct_us));
		json_object_set_new(o, "swept_1pct_us", bench_json_number(f[i].swept_1pct_us));
		json_object_set_new(o, "wait_bound_us", bench_json_number(f[i].wait_bound_us));
		json_array_append_new(fits, o);
	}
	free(f);
	for (unsigned i = 0; i < m->n; i++) {
		struct bench_loss l;
		if (bench_loss_cell(m, &m->cells[i], &l))
			continue;
		json_t *o = json_object();
		json_object_set_new(o, "id", json_integer(l.id));
		json_object_set_new(o, "efficiency", bench_json_number(l.eff));
		json_object_set_new(o, "run_share", bench_json_number(l.share));
		json_object_set_new(o, "run_share_1x", bench_json_number(l.share_1x));
		json_object_set_new(o, "share_ratio", bench_json_number(l.share_ratio));
		json_object_set_new(o, "ops_ratio", bench_json_number(l.ops_ratio));
		json_object_set_new(o, "pts_slot", bench_json_number(l.pts_slot));
		json_object_set_new(o, "pts_ops", bench_json_number(l.pts_ops));
		json_object_set_new(o, "switches_per_s", bench_json_number(l.switches_per_s));
		json_object_set_new(o, "lost_us_per_switch", bench_json_number(l.lost_us_per_switch));
		json_object_set_new(o, "loop_wakeups_per_s", bench_json_number(l.loop_wakeups_per_s));
		json_object_set_new(o, "deferrals_per_s", bench_json_number(l.deferrals_per_s));
		json_object_set_new(o, "hard_share", bench_json_number(l.hard_share));
		json_object_set_new(o, "spins_queued_kept", bench_json_number(l.spins_queued_kept));
		json_object_set_new(o, "guest_slice_yields_per_s", bench_json_number(l.guest_slice_yields_per_s));
		json_object_set_new(o, "wake_cuts_per_s", bench_json_number(l.wake_cuts_per_s));
		json_array_append_new(loss, o);
	}
	json_object_set_new(root, "slice_fit", fits);
	json_object_set_new(root, "loss", loss);
}
