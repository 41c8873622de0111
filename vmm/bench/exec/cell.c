/*
 * One repetition of one cell: a made-up result (--test-synthetic), host
 * threads, a Linux guest, K processes, or one `vmm run` child, each in a
 * child process (child.c says why).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vmm/bench/exec/exec.h"
#include "vmm/bench/matrix/matrix.h"

#define ARGS_MAX 48

struct native_job {
	const struct bench_opts *o;
	const struct bench_cell *c;
};

static int native_child(void *arg, int fd)
{
	const struct native_job *job = arg;
	double ops;
	int r = bench_native_run(job->c->lock, job->c->vcpus, job->c->pcpus, job->o->duration_ms,
				 job->o->cs_cycles, job->o->work_cycles, job->c->spin_threshold, &ops);
	if (r)
		return 1;
	return write(fd, &ops, sizeof(ops)) == sizeof(ops) ? 0 : 1;
}

static void run_native(const struct bench_opts *o, const struct bench_cell *c, struct bench_run *out)
{
	struct native_job job = { o, c };
	double ops = NAN;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	out->exit_code = bench_exec_fork(native_child, &job, bench_cell_timeout_ms(c, o), &ops,
					 sizeof(ops));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	out->wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	out->ops_per_s = ops;
	out->ok = out->exit_code == 0 && isfinite(ops) && ops >= 0;
	if (!out->ok)
		snprintf(out->why, sizeof(out->why), out->exit_code == -1 ? "timed out" : "native run failed");
}

/* Room for K VMs' own figures; false when out of memory (the run fails). */
static bool alloc_vms(const struct bench_cell *c, struct bench_run *out)
{
	out->start_spread_ms = out->max_late_ms = NAN;
	if (c->kind != BENCH_VM || c->vms < 2)
		return true;
	out->vm_ops = malloc(c->vms * sizeof(*out->vm_ops));
	out->vm_start_ns = calloc(c->vms, sizeof(*out->vm_start_ns));
	if (!out->vm_ops || !out->vm_start_ns) {
		snprintf(out->why, sizeof(out->why), "out of memory");
		return false;
	}
	for (unsigned k = 0; k < c->vms; k++)
		out->vm_ops[k] = NAN;
	return true;
}

void bench_run_cell(const struct bench_opts *o, const struct bench_cell *c, const char *tmpdir,
		    unsigned rep, struct bench_run *out)
{
	memset(out, 0, sizeof(*out));
	out->ops_per_s = NAN;
	out->rep = rep;
	bench_sched_clear(out->sched);
	if (!alloc_vms(c, out))
		return;
	if (o->test_synthetic) {
		bench_synth_run(o, c, rep, out);
		return;
	}
	if (c->kind == BENCH_NATIVE) {
		run_native(o, c, out);
		return;
	}
	if (bench_linux_workload(c->workload)) {
		bench_linux_run(o, c, tmpdir, out);
		return;
	}
	if (c->mode != BENCH_MODE_PROCESS) {
		bench_run_procs(o, c, tmpdir, rep, out);
		return;
	}
	char buf[16][32], json[4096];
	const char *args[ARGS_MAX];
	unsigned timeout = bench_cell_timeout_ms(c, o);
	bench_run_args(o, c, args, buf);
	snprintf(json, sizeof(json), "%s/cell%u.json", tmpdir, c->id);

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	out->exit_code = bench_exec_run(o->exe, args, json, timeout, out->why, sizeof(out->why));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	out->wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (out->exit_code != 0) {
		if (!out->why[0])
			snprintf(out->why, sizeof(out->why), "exit %d", out->exit_code);
		unlink(json);
		return;
	}
	struct bench_json j;
	bench_read_report(json, out, out->vm_ops, c->vms > 1 ? c->vms : 0, &j);
	if (j.root)
		bench_sched_add(&j, out->sched);
	bench_json_free(&j);
	unlink(json);
}
