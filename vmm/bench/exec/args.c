/*
 * What a `vmm run` child is told and what it says back: its command line
 * for a cell (the common options, the co-scheduler's), its timeout, and
 * its report read into a struct bench_run. Shared by one process
 * (cell.c), K processes (procs.c) and a Linux guest (linux.c).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vmm/bench/exec/exec.h"
#include "vmm/bench/matrix/matrix.h"

unsigned bench_cell_timeout_ms(const struct bench_cell *c, const struct bench_opts *o)
{
	if (bench_linux_workload(c->workload))
		return o->linux_timeout_s * 1000u;
	unsigned t = o->duration_ms * 3 + 10000 + 1000 * c->vms;
	return c->mode == BENCH_MODE_PROCESS ? t : t + bench_start_margin_ms(o, c);
}

unsigned bench_run_args(const struct bench_opts *o, const struct bench_cell *c, const char **args,
			char (*buf)[32])
{
	unsigned n = 0, b = 0;
#define NUM(fmt, v) (snprintf(buf[b], sizeof(buf[b]), fmt, v), buf[b++])
	args[n++] = "-c";
	args[n++] = NUM("%u", c->vcpus);
	/* A domain member is one VM on the domain's slots; so is each host process. */
	if (c->mode == BENCH_MODE_PROCESS) {
		args[n++] = "--vms";
		args[n++] = NUM("%u", c->vms);
	}
	if (c->mode != BENCH_MODE_DOMAIN) {
		args[n++] = "--pcpus";
		args[n++] = NUM("%u", c->pcpus);
	}
	const char *fixed[] = { "--workload", c->workload, "--lock", c->lock };
	for (unsigned i = 0; i < 4; i++)
		args[n++] = fixed[i];
	args[n++] = "--spin-threshold";
	args[n++] = NUM("%u", c->spin_threshold);
	args[n++] = "--duration";
	args[n++] = NUM("%ums", o->duration_ms);
	args[n++] = "--timeout";
	args[n++] = NUM("%ums", bench_cell_timeout_ms(c, o) - 5000);
	args[n++] = "--cs-cycles";
	args[n++] = NUM("%u", o->cs_cycles);
	args[n++] = "--work-cycles";
	args[n++] = NUM("%u", o->work_cycles);
	n = bench_sched_args(c, args, n, buf, &b);
	/* The PV shootdown is a policy of its own in the gang experiment. */
	args[n++] = "--pv-shootdown";
	args[n++] = !strcmp(c->policy, "pv") ? "on" : "off";
#undef NUM
	if ((int)c->id == o->test_fail_cell) {
		args[n++] = "--lock";
		args[n++] = "no-such-lock";
	}
	args[n] = NULL;
	return n;
}

unsigned bench_sched_args(const struct bench_cell *c, const char **args, unsigned n, char (*buf)[32],
			  unsigned *bp)
{
	unsigned b = *bp;
	bool host = !strcmp(c->policy, BENCH_POLICY_HOST);
#define NUM(fmt, v) (snprintf(buf[b], sizeof(buf[b]), fmt, v), buf[b++])
	args[n++] = host ? "--sched" : "--yield";
	args[n++] = host ? "host" : c->policy;
	/* Only where given: a default cell's command line stays what it was. */
	if (!host && c->slice_us != BENCH_SLICE_US_DEFAULT) {
		args[n++] = "--slice-us";
		args[n++] = NUM("%u", c->slice_us);
	}
	if (!host && c->defer_us != BENCH_DEFER_US_DEFAULT) {
		args[n++] = "--defer-us";
		args[n++] = NUM("%u", c->defer_us);
	}
	if (!host && c->guest_slice_off) {
		args[n++] = "--guest-slice";
		args[n++] = "off";
	}
	if (!host && c->loop.kind != BENCH_LOOP_AUTO) {
		args[n++] = "--loop-cpu";
		args[n++] = c->loop.kind == BENCH_LOOP_NONE ? "none" : NUM("%u", c->loop.cpu);
	}
	if (!host && c->wake_slice_us != BENCH_WAKE_SLICE_US_DEFAULT) {
		args[n++] = "--wake-slice-us";
		args[n++] = NUM("%u", c->wake_slice_us);
	}
#undef NUM
	*bp = b;
	return n;
}

int bench_read_report(const char *json, struct bench_run *out, double *vm_ops, unsigned nvms,
		      struct bench_json *keep)
{
	struct bench_json j;
	int r = bench_json_load(json, &j);
	if (keep)
		memset(keep, 0, sizeof(*keep));
	if (r) {
		snprintf(out->why, sizeof(out->why), "no readable JSON report: %s", strerror(-r));
		return r;
	}
	bool mx = true;
	int rm = bench_json_bool(&j, "mutual_exclusion_ok", &mx);
	out->ok = false;
	if (bench_json_num(&j, "ops_per_s", &out->ops_per_s) || !isfinite(out->ops_per_s)) {
		out->ops_per_s = NAN;
		snprintf(out->why, sizeof(out->why), "report has no ops_per_s");
	} else if (rm == 0 && !mx) {
		snprintf(out->why, sizeof(out->why), "mutual exclusion violated");
	} else {
		out->ok = true;
	}
	for (unsigned k = 0; vm_ops && k < nvms; k++) {
		char key[48];
		snprintf(key, sizeof(key), "vms.%u.ops_per_s", k);
		if (bench_json_num(&j, key, &vm_ops[k]) || !isfinite(vm_ops[k]))
			vm_ops[k] = NAN;
	}
	if (keep)
		*keep = j;
	else
		bench_json_free(&j);
	return out->ok ? 0 : -EINVAL;
}
