#include "vmm/core/loop_cpu.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vmm/config.h"

const char *loop_cpu_list(const cpu_set_t *set, char *buf, size_t len)
{
	size_t used = 0;
	if (!len)
		return buf;
	buf[0] = '\0';
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, set))
			continue;
		int end = c;
		while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, set))
			end++;
		char one[32];
		int n = end == c ? snprintf(one, sizeof(one), "%s%d", used ? "," : "", c)
				 : snprintf(one, sizeof(one), "%s%d-%d", used ? "," : "", c, end);
		if (used + (size_t)n + 1 > len) {
			/* "..." after the last whole range that leaves room for it */
			while (used && used + 4 > len)
				while (used && buf[--used] != ',')
					;
			if (used + 4 <= len)
				memcpy(buf + used, "...", 4);
			else
				buf[used] = '\0';
			return buf;
		}
		memcpy(buf + used, one, (size_t)n + 1);
		used += (size_t)n;
		c = end;
	}
	return buf;
}

int loop_cpu_sole(const cpu_set_t *set)
{
	if (CPU_COUNT(set) != 1)
		return -1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, set))
			return c;
	return -1;
}

/* The first CPU the process may use that no slot (no seat) uses, or -1. */
static int first_free(const cpu_set_t *allowed, const cpu_set_t *slots)
{
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, allowed) && !CPU_ISSET(c, slots))
			return c;
	return -1;
}

__attribute__((format(printf, 4, 5)))
static int chose(struct loop_cpu_choice *out, int cpu, bool on_slot, const char *fmt, ...)
{
	va_list ap;
	out->cpu = cpu;
	out->on_slot = on_slot;
	va_start(ap, fmt);
	vsnprintf(out->note, sizeof(out->note), fmt, ap);
	va_end(ap);
	return 0;
}

int loop_cpu_choose(const struct loop_cpu_in *in, struct loop_cpu_choice *out)
{
	char list[64];
	bool dom = in->mode == LOOP_CPU_DOMAIN;
	if (in->want >= 0) {
		if (in->want >= CPU_SETSIZE || !CPU_ISSET(in->want, in->allowed)) {
			chose(out, -1, false, "--loop-cpu: CPU %d is not one this process may use (%s)", in->want,
			      loop_cpu_list(in->allowed, list, sizeof(list)));
			return -EINVAL;
		}
		bool on = CPU_ISSET(in->want, in->slots);
		const char *shared = in->mode == LOOP_CPU_HOST ? "one of the vCPU threads' CPUs"
				     : dom ? "one of the domain's CPUs: shared with whichever seat is there"
					   : "a slot's CPU: shared with the vCPU holding that slot";
		return chose(out, in->want, on, "--loop-cpu %d%s%s", in->want, on ? ", " : "", on ? shared : "");
	}
	/* host mode: the threads inherit the loop's CPU set (run.c), as in other VMMs */
	if (in->mode == LOOP_CPU_HOST)
		return chose(out, -1, false, "--sched host: with the vCPU threads, on their CPUs (%s)",
			     loop_cpu_list(in->slots, list, sizeof(list)));
	if (in->want == LOOP_CPU_NONE)
		return chose(out, -1, false, "--loop-cpu none: not pinned");
	int c = first_free(in->allowed, in->slots);
	if (c >= 0)
		return chose(out, c, false, "auto: the first CPU this process may use outside %s (%s)",
			     dom ? "the domain's CPUs" : "the slots' CPUs", loop_cpu_list(in->slots, list, sizeof(list)));
	/* Which slot's CPU would cost least is an open question (sched/README.md). */
	return chose(out, -1, false,
		     "auto: every CPU this process may use (%s) is %s; not pinned (no data yet on which would cost least)",
		     loop_cpu_list(in->allowed, list, sizeof(list)), dom ? "one of the domain's" : "a slot's");
}
