/*
 * --loop-cpu applied: the calling thread (the event loop: the main thread)
 * is moved to the chosen CPU, with the domain link thread, the other helper
 * that wakes on its own (every 100 ms). Call after the vCPU and link threads
 * are started (they inherit the creator's CPU set: host mode confines them
 * to theirs) and before the loop's seccomp filter, which has no
 * sched_getaffinity. What the report says is read back from the thread.
 */
#ifndef VMM_LOOP_PIN_H
#define VMM_LOOP_PIN_H

#include "vmm/core/loop_cpu.h"
#include "vmm/domain/member_link.h"

struct loop_pin {
	int cpu;        /* the one CPU the loop thread may run on, read back; -1: several */
	char cpus[64];  /* its CPU list, read back ("0-1") */
	char note[300]; /* the choice's reason, and what went wrong if the pin failed */
};

void loop_pin_apply(const struct loop_cpu_choice *c, struct dlink *link, struct loop_pin *out);

#endif
