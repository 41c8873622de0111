/*
 * --loop-cpu as a bench dimension: the values a cell can have and their
 * names, shared by the options, the cell keys, the tables and the files.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/bench/matrix/matrix.h"

const char *bench_loop_name(const struct bench_loop *l, char *buf, size_t len)
{
	if (l->kind == BENCH_LOOP_CPU)
		snprintf(buf, len, "%u", l->cpu);
	else
		snprintf(buf, len, "%s", l->kind == BENCH_LOOP_NONE ? "none" : "auto");
	return buf;
}

bool bench_loop_same(const struct bench_loop *a, const struct bench_loop *b)
{
	return a->kind == b->kind && (a->kind != BENCH_LOOP_CPU || a->cpu == b->cpu);
}

int bench_loop_parse(const char *s, struct bench_loop *out)
{
	*out = (struct bench_loop){ BENCH_LOOP_AUTO, 0 };
	if (!strcmp(s, "auto"))
		return 0;
	if (!strcmp(s, "none")) {
		out->kind = BENCH_LOOP_NONE;
		return 0;
	}
	/* digits only: no sign, no blanks, no hex, so one CPU has one name */
	if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 4)
		return -EINVAL;
	unsigned long v = strtoul(s, NULL, 10);
	if (v > BENCH_LOOP_CPU_MAX)
		return -EINVAL;
	out->kind = BENCH_LOOP_CPU;
	out->cpu = (unsigned)v;
	return 0;
}
