/*
 * What every table and file of the report shares: a cell's label and the
 * policy column's width, a number in a table, in a CSV and in results.json.
 * One file below the writers, so none of them calls another for these.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/report/report.h"

/* K processes are marked, one process is not. */
const char *bench_cell_label(const struct bench_cell *c, char *buf, size_t len)
{
	static const char *const suffix[BENCH_MODES] = { "", "@dom", "@procs" };
	int n = snprintf(buf, len, "%s%s", c->policy, suffix[c->mode]);
	/* A slice, deferral bound, guest-slice setting, loop placement or wake
	 * slice other than vmm run's: "none/s3ms/d100us/gsoff/loopnone/w500us". */
	if (n > 0 && (size_t)n < len && c->slice_us != BENCH_SLICE_US_DEFAULT)
		n += snprintf(buf + n, len - (size_t)n, "/s%gms", c->slice_us / 1000.0);
	if (n > 0 && (size_t)n < len && c->defer_us != BENCH_DEFER_US_DEFAULT)
		n += snprintf(buf + n, len - (size_t)n, "/d%uus", c->defer_us);
	if (n > 0 && (size_t)n < len && c->guest_slice_off)
		n += snprintf(buf + n, len - (size_t)n, "/gsoff");
	char l[16];
	if (n > 0 && (size_t)n < len && c->loop.kind != BENCH_LOOP_AUTO)
		n += snprintf(buf + n, len - (size_t)n, "/loop%s", bench_loop_name(&c->loop, l, sizeof(l)));
	if (n > 0 && (size_t)n < len && c->wake_slice_us != BENCH_WAKE_SLICE_US_DEFAULT)
		snprintf(buf + n, len - (size_t)n, "/w%uus", c->wake_slice_us);
	return buf;
}

int bench_label_width(const struct bench_matrix *m, bool (*show)(const struct bench_cell *c), int min)
{
	char pl[BENCH_LABEL_MAX];
	int w = min;
	for (unsigned i = 0; i < m->n; i++) {
		if (show && !show(&m->cells[i]))
			continue;
		int n = (int)strlen(bench_cell_label(&m->cells[i], pl, sizeof(pl)));
		if (n > w)
			w = n;
	}
	return w;
}

const char *bench_fmt(double v, const char *f, char *buf, size_t len)
{
	if (isfinite(v))
		snprintf(buf, len, f, v);
	else
		snprintf(buf, len, "-");
	return buf;
}

/* The shortest text that reads back as the same double: the CSV and the
 * JSON (17 digits, for the merge) then hold equal values. */
const char *bench_exact(double v, char *buf, size_t len)
{
	for (int digits = 10; digits < 17; digits++) {
		snprintf(buf, len, "%.*g", digits, v);
		if (strtod(buf, NULL) == v)
			return buf;
	}
	snprintf(buf, len, "%.17g", v);
	return buf;
}

void bench_csv_num(FILE *f, double v)
{
	char b[40];
	if (isfinite(v))
		fprintf(f, ",%s", bench_exact(v, b, sizeof(b)));
	else
		fputs(",", f);
}

/* Whole values print as integers, as the old writer's %g did (1, not 1.0);
 * NaN (unknown) is null. */
struct json_t *bench_json_number(double v)
{
	if (!isfinite(v))
		return json_null();
	if (v == floor(v) && fabs(v) < 9007199254740992.0)
		return json_integer((json_int_t)v);
	return json_real(v);
}
