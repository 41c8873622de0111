/*
 * The end-of-run report: a table for people on stdout, the same data as JSON
 * for scripts (--json FILE). Field names are documented in README.md.
 */
#ifndef VMM_REPORT_H
#define VMM_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vmm/vm.h"

struct run_summary {
	int status; /* the process exit status */
	uint64_t ops_total;
	unsigned ops_vcpus;  /* vCPUs that reported "ops" */
	uint64_t elapsed_ns; /* longest measured window a vCPU reported */
	double ops_per_s;
	bool have_counter;
	uint64_t counter;
	bool mutual_exclusion_ok;
	struct vcpu_exit_counts exits;
};

void report_summarize(const struct vm *vm, int status, struct run_summary *s);
const char *report_status_name(int status);
void report_print(FILE *out, const struct vm *vm, const struct run_summary *s);
/* Guest faults and timeouts: which vCPU, what happened, its registers (stderr). */
void report_print_fault(FILE *out, const struct vm *vm, const struct run_summary *s);
int report_write_json(const char *path, const struct vm *vm, const struct run_summary *s);

#endif
