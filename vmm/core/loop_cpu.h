/*
 * Where the event loop thread runs (--loop-cpu). The loop ticks the
 * co-scheduler on its timerfd and serves the devices; each wake-up on a
 * slot's CPU preempts whichever vCPU holds that slot (maybe a lock holder).
 * The choice is a pure function of what the process may use, what the
 * slots use and the option, so it is tested without threads or KVM; the
 * caller pins and reads the affinity back (run.c).
 */
#ifndef VMM_LOOP_CPU_H
#define VMM_LOOP_CPU_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

enum loop_cpu_mode {
	LOOP_CPU_VMM,    /* --sched vmm: slots tied to fixed CPUs */
	LOOP_CPU_HOST,   /* --sched host: the vCPU threads share the CPU set */
	LOOP_CPU_DOMAIN, /* --domain: the seats move among the domain's CPUs */
};

struct loop_cpu_in {
	const cpu_set_t *allowed; /* the process's affinity, before any pin */
	const cpu_set_t *slots;   /* the slots' CPUs, the host-mode set, or the domain's CPUs */
	int want;                 /* --loop-cpu: LOOP_CPU_AUTO, LOOP_CPU_NONE, or a CPU */
	enum loop_cpu_mode mode;
};

struct loop_cpu_choice {
	int cpu;       /* the CPU to pin the loop to; -1: leave it where it is */
	bool on_slot;  /* that CPU is one the vCPUs use too */
	char note[200]; /* why, in one line */
};

/* 0 with out filled; -EINVAL when --loop-cpu N names a CPU the process may
 * not use (out->note then says so: a user error). */
int loop_cpu_choose(const struct loop_cpu_in *in, struct loop_cpu_choice *out);

/* "0-3,6": the set as a CPU list (Cpus_allowed_list's form); "" when empty.
 * Truncated with "..." when it does not fit. */
const char *loop_cpu_list(const cpu_set_t *set, char *buf, size_t len);

/* The one CPU the set holds, or -1 when it holds none or several. */
int loop_cpu_sole(const cpu_set_t *set);

#endif
