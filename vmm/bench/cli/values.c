/*
 * The values `vmm bench` options take: comma lists of names, numbers,
 * on/off, loop placements and VM modes, each checked as vmm run checks the
 * single value, with one line naming the option when it is not one.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/bench/cli/values.h"
#include "vmm/bench/matrix/matrix.h"
#include "vmm/cli/parse.h"
#include "vmm/cli/workloads.h"

/* Splits a comma list in a copy that lives as long as the process: in a
 * static pool, so the options need no freeing (and leak checkers agree). */
int bench_cli_split(const char *opt, const char *arg, struct bench_strs *out, char *err, size_t errlen)
{
	static char pool[16384];
	static size_t used;
	size_t len = strlen(arg) + 1;
	if (len > sizeof(pool) - used)
		return parse_fail(err, errlen, "%s: lists too long", opt);
	char *copy = memcpy(pool + used, arg, len), *save = NULL;
	used += len;
	out->n = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (out->n == BENCH_MAX_LIST)
			return parse_fail(err, errlen, "%s: at most %d values", opt, BENCH_MAX_LIST);
		out->v[out->n++] = t;
	}
	if (!out->n)
		return parse_fail(err, errlen, "%s: empty list", opt);
	return 0;
}

/* A copy of a path option that lives as long as the process (merge parses
 * argv it built in its own buffers); NULL when the pool is full. */
const char *bench_cli_kept(const char *arg)
{
	static char pool[3 * 4096];
	static size_t used;
	size_t len = strlen(arg) + 1;
	if (len > sizeof(pool) - used)
		return NULL;
	used += len;
	return memcpy(pool + used - len, arg, len);
}

/* host_ok: the policies, where the baselines host and qemu are names too. */
int bench_cli_names(const char *opt, const char *arg, const char *const *known, bool host_ok,
		 struct bench_strs *out, char *err, size_t errlen)
{
	int r = bench_cli_split(opt, arg, out, err, errlen);
	for (unsigned i = 0; !r && i < out->n; i++) {
		if (vmm_name_in(known, out->v[i]) ||
		    (host_ok && (!strcmp(out->v[i], BENCH_POLICY_HOST) || !strcmp(out->v[i], BENCH_POLICY_QEMU))))
			continue;
		char list[256];
		return parse_fail(err, errlen, "%s: unknown '%s' (known: %s%s)", opt, out->v[i],
			    host_ok ? "host, qemu, " : "", vmm_name_list(known, list, sizeof(list)));
	}
	return r;
}

/* A list whose items become out's, one each: their count set with the split. */
static int split_counted(const char *opt, const char *arg, struct bench_strs *s, unsigned *n, char *err, size_t errlen)
{
	int r = bench_cli_split(opt, arg, s, err, errlen);
	if (!r)
		*n = s->n;
	return r;
}

/* Positive numbers (or 0 too, with zero); whole numbers only unless fractions is set. */
int bench_cli_numbers(const char *opt, const char *arg, double max, bool fractions, bool zero,
		   struct bench_nums *out, char *err, size_t errlen)
{
	struct bench_strs s;
	int r = split_counted(opt, arg, &s, &out->n, err, errlen);
	for (unsigned i = 0; !r && i < s.n; i++) {
		char *end;
		errno = 0;
		double v = strtod(s.v[i], &end);
		/* "4k" for spin thresholds, as the seeds write them. */
		if (!fractions && (*end == 'k' || *end == 'K') && end[1] == '\0') {
			v *= 1024;
			end++;
		}
		if (end == s.v[i] || *end || errno || !(v > 0 || (zero && v == 0)) || v > max ||
		    (!fractions && v != floor(v)))
			return parse_fail(err, errlen, "%s: '%s' is not a %s from %s to %.0f", opt, s.v[i],
				    fractions ? "number" : "whole number", fractions ? "above 0" : zero ? "0" : "1",
				    max);
		out->v[i] = v;
	}
	return r;
}

/* Whole numbers in vmm run's own range for the option, each once. */
int bench_cli_numbers_from(const char *opt, const char *arg, double min, double max,
			struct bench_nums *out, char *err, size_t errlen)
{
	int r = bench_cli_numbers(opt, arg, max, false, min == 0, out, err, errlen);
	for (unsigned i = 0; !r && i < out->n; i++) {
		if (out->v[i] < min)
			return parse_fail(err, errlen, "%s: '%g' is not a whole number from %.0f to %.0f", opt,
					  out->v[i], min, max);
		for (unsigned k = 0; k < i; k++)
			if (out->v[k] == out->v[i])
				return parse_fail(err, errlen, "%s: '%g' given twice", opt, out->v[i]);
	}
	return r;
}

/* on,off for --guest-slice, each once. */
int bench_cli_on_off(const char *opt, const char *arg, struct bench_onoff *out, char *err, size_t errlen)
{
	struct bench_strs s;
	int r = bench_cli_split(opt, arg, &s, err, errlen);
	if (r)
		return r;
	if (s.n > 2)
		return parse_fail(err, errlen, "%s: at most on and off, once each", opt);
	out->n = s.n;
	for (unsigned i = 0; i < s.n; i++) {
		if (strcmp(s.v[i], "on") && strcmp(s.v[i], "off"))
			return parse_fail(err, errlen, "%s: unknown '%s' (known: on, off)", opt, s.v[i]);
		out->off[i] = !strcmp(s.v[i], "off");
		if (i && out->off[0] == out->off[i])
			return parse_fail(err, errlen, "%s: '%s' given twice", opt, s.v[i]);
	}
	return 0;
}

/* auto, none and CPU numbers for --loop-cpu, each once. */
int bench_cli_loop_cpus(const char *opt, const char *arg, struct bench_loops *out, char *err, size_t errlen)
{
	struct bench_strs s;
	int r = split_counted(opt, arg, &s, &out->n, err, errlen);
	for (unsigned i = 0; !r && i < s.n; i++) {
		if (bench_loop_parse(s.v[i], &out->v[i]))
			return parse_fail(err, errlen, "%s: '%s' is neither auto, none nor a CPU number (0 to %d)",
					  opt, s.v[i], BENCH_LOOP_CPU_MAX);
		for (unsigned k = 0; k < i; k++)
			if (bench_loop_same(&out->v[k], &out->v[i]))
				return parse_fail(err, errlen, "%s: '%s' given twice", opt, s.v[i]);
	}
	return r;
}

int bench_cli_vm_modes(const char *arg, struct bench_opts *o, char *err, size_t errlen)
{
	struct bench_strs s;
	int r = bench_cli_split("--vm-mode", arg, &s, err, errlen);
	if (r)
		return r;
	for (int m = 0; m < BENCH_MODES; m++)
		o->modes[m] = false;
	for (unsigned i = 0; i < s.n; i++) {
		int m = 0;
		while (m < BENCH_MODES && strcmp(s.v[i], bench_mode_names[m]))
			m++;
		if (m == BENCH_MODES)
			return parse_fail(err, errlen, "--vm-mode: unknown '%s' (known: domain, process, host-procs)",
					  s.v[i]);
		o->modes[m] = true;
	}
	return 0;
}

int bench_cli_whole(const char *opt, const char *arg, uint64_t min, uint64_t max, uint64_t *out,
		 char *err, size_t errlen)
{
	if (parse_u64(arg, min, max, out))
		return parse_fail(err, errlen, "%s: '%s' is not a whole number from %llu to %llu", opt, arg,
			    (unsigned long long)min, (unsigned long long)max);
	return 0;
}
