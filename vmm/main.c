/* vmm: the command line. Only this file exits the process. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json_out.h"
#include "vcpu/vcpu.h"
#include "vmm/bench/bench.h"
#include "vmm/cli/cli.h"
#include "vmm/errors.h"
#include "vmm/host/kvm.h"
#include "vmm/core/prepare.h"
#include "vmm/report/report.h"
#include "vmm/core/run.h"
#include "vmm/domain/domain_cmd.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: vmm <command> [options]\n"
		"  run        boot a guest (default: the bundled lock benchmark)\n"
		"  bench      run a benchmark matrix (`vmm bench --help`)\n"
		"  domain     share CPUs among vmm processes (`vmm domain --help`)\n"
		"  version    print the version\n"
		"  help       this text; `vmm run --help` for run's options\n");
}

/* Each line of msg as its own "vmm: " line. */
static void print_lines(FILE *out, const char *msg)
{
	for (const char *p = msg; *p;) {
		size_t n = strcspn(p, "\n");
		fprintf(out, "vmm: %.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
}

static void trace_vcpu_name(void *ctx, int g, char *buf, unsigned len)
{
	const struct run *r = ctx;
	unsigned i;
	const struct vm *vm = run_vm_of(r, (unsigned)g, &i);
	snprintf(buf, len, "vm%u/vcpu%u", vm->id, i);
}

static int write_trace(const struct run *r)
{
	int slots = r->cfg->sched_mode == SCHED_MODE_HOST ? (int)r->nvcpus : (int)r->nslots;
	return trace_write(r->trace, r->cfg->trace_path, (int)r->nvcpus, slots, trace_vcpu_name, (void *)r);
}

/*
 * --json and --trace after the report: a file that cannot be written turns a
 * successful run into a host error, but does not hide a guest's own failure.
 */
static int write_run_files(const struct vm_config *cfg, struct run *run,
			   const struct run_summary *sum, int status)
{
	int r;
	if (cfg->json_path) {
		r = report_write_json(cfg->json_path, run, sum);
		if (r) {
			fprintf(stderr, "vmm: --json %s: %s\n", cfg->json_path, strerror(-r));
			if (status == VMM_EXIT_OK)
				status = VMM_EXIT_HOST_ERROR;
		}
	}
	if (cfg->trace_path) {
		r = write_trace(run);
		if (r) {
			fprintf(stderr, "vmm: --trace %s: %s\n", cfg->trace_path, strerror(-r));
			if (status == VMM_EXIT_OK)
				status = VMM_EXIT_HOST_ERROR;
		}
	}
	return status;
}

/* Runs the guests to the end, then the report; returns the exit status. */
static int execute_and_report(const struct vm_config *cfg, struct run *run)
{
	int status = run_execute(run);
	struct run_summary sum;
	if (report_summarize(run, status, &sum) < 0) {
		fprintf(stderr, "vmm: out of memory for the report\n");
		status = VMM_EXIT_HOST_ERROR;
	} else {
		fflush(stdout);
		report_print(stdout, run, &sum);
		report_print_fault(stderr, run, &sum);
		status = write_run_files(cfg, run, &sum, status);
	}
	report_summary_free(&sum);
	return status;
}

/*
 * Options, then every user error before KVM: exit 2 also where there is no
 * KVM. Returns the exit status when cmd_run is to stop, or -EAGAIN with *inp
 * set to go on.
 */
static int parse_and_prepare(int argc, char **argv, struct vm_config *cfg, struct vm_inputs **inp)
{
	char err[256];
	vm_config_defaults(cfg);
	int r = cli_parse_run(argc, argv, cfg, err, sizeof(err));
	if (r == CLI_HELP) {
		cli_print_run_usage(stdout);
		return VMM_EXIT_OK;
	}
	if (r < 0) {
		fprintf(stderr, "vmm: %s\n", err);
		return VMM_EXIT_USAGE;
	}
	struct vm_inputs *in = malloc(sizeof(*in));
	struct vm_error verr = { 0 };
	if (!in) {
		fprintf(stderr, "vmm: out of memory\n");
		return VMM_EXIT_HOST_ERROR;
	}
	if (vm_inputs_prepare(in, cfg, &verr) < 0) {
		fprintf(stderr, "vmm: %s\n", verr.msg);
		vm_inputs_free(in);
		free(in);
		return verr.status;
	}
	*inp = in;
	return -EAGAIN;
}

/* The host side: signals for kicking vCPUs, then /dev/kvm. 0 or the exit status. */
static int open_host(const struct vm_config *cfg, struct kvm_host *kvm)
{
	int r = vcpu_signals_init();
	if (r) {
		fprintf(stderr, "vmm: signals: %s\n", strerror(-r));
		return VMM_EXIT_HOST_ERROR;
	}
	char kerr[1024];
	if (kvm_host_open(kvm, cfg->kvm_device, kerr, sizeof(kerr)) < 0) {
		print_lines(stderr, kerr);
		return VMM_EXIT_HOST_ERROR;
	}
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	struct vm_config cfg;
	struct vm_inputs *in = NULL;
	int status = parse_and_prepare(argc, argv, &cfg, &in);
	if (status != -EAGAIN)
		return status;
	struct kvm_host kvm;
	status = open_host(&cfg, &kvm);
	if (status) {
		vm_inputs_free(in);
		free(in);
		return status;
	}
	struct run run;
	struct vm_error verr = { 0 };
	if (run_create(&run, &cfg, in, &kvm, &verr) < 0) {
		fprintf(stderr, "vmm: %s\n", verr.msg);
		status = verr.status;
	} else {
		status = execute_and_report(&cfg, &run);
	}
	run_destroy(&run);
	kvm_host_close(&kvm);
	vm_inputs_free(in);
	free(in);
	return status;
}

int main(int argc, char **argv)
{
	json_out_init(); /* before any thread or seccomp filter: lib/json_out.h */
	if (argc < 2) {
		usage(stderr);
		return VMM_EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "bench"))
		return bench_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "domain"))
		return domain_cmd_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("vmm %s (hypercall ABI %u)\n", VMM_VERSION, VMM_ABI_VERSION);
		return VMM_EXIT_OK;
	}
	if (!strcmp(cmd, "help") || !strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		usage(stdout);
		return VMM_EXIT_OK;
	}
	fprintf(stderr, "vmm: unknown command '%s' (try vmm help)\n", cmd);
	return VMM_EXIT_USAGE;
}
