/*
 * The end-of-run report: a table for people on stdout, the same data as JSON
 * for scripts (--json FILE). Field names are documented in README.md.
 */
#ifndef VMM_REPORT_H
#define VMM_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sched/sched.h"
#include "sched/types.h"
#include "vmm/core/run.h"

struct vm_summary {
	uint64_t ops_total;
	unsigned ops_vcpus;  /* vCPUs that reported "ops" */
	uint64_t elapsed_ns; /* longest measured window a vCPU reported */
	double ops_per_s;
	/* The guest's own running time ("run_ns": its window less the gaps it
	 * saw in its TSC), summed; the fraction is of run_vcpus x elapsed_ns. */
	uint64_t run_ns_total;
	unsigned run_vcpus; /* vCPUs that reported "run_ns" */
	double running_fraction;
	bool have_counter;
	uint64_t counter;
	bool mutual_exclusion_ok;
};

struct run_summary {
	int status; /* the process exit status */
	struct vm_summary all; /* every VM together: ops summed, windows maxed */
	struct vm_summary *vm; /* [nvms] */
	struct vcpu_exit_counts exits;
	struct sched_vcpu_stats *st; /* [nvcpus] */
	struct sched_vcpu_stats st_all;
	struct sched_loop_stats loop; /* the event loop's wake-ups for the scheduler */
};

int report_summarize(const struct run *r, int status, struct run_summary *s);
void report_summary_free(struct run_summary *s);
const char *report_status_name(int status);
void report_print(FILE *out, const struct run *r, const struct run_summary *s);
/* Guest faults, timeouts, deadlocks: which vCPU, what happened, its registers. */
void report_print_fault(FILE *out, const struct run *r, const struct run_summary *s);
int report_write_json(const char *path, const struct run *r, const struct run_summary *s);

#endif
