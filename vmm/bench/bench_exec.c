/*
 * Every measured run is a child process: a guest that faults, hangs or
 * crashes the VMM takes only its own cell down, and each run starts from a
 * fresh process (no allocator or thread state carried between cells). The
 * parent polls with a deadline instead of trusting the child's own
 * --timeout, because a wedged child is exactly the case to survive.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vmm/bench/bench.h"
#include "vmm/bench/bench_shard.h"

#define ARGS_MAX 48

uint64_t bench_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int bench_exec_wait(int pid, uint64_t deadline)
{
	int st;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
			return -1;
		if (bench_now_ms() >= deadline) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			return -1;
		}
		struct timespec ts = { 0, 2 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

/* The last non-empty line of a small file, for a one-line failure reason. */
static void last_line(const char *path, char *buf, size_t len)
{
	char text[4096];
	buf[0] = '\0';
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char line[512];
	text[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0])
			snprintf(text, sizeof(text), "%s", line);
	}
	fclose(f);
	snprintf(buf, len, "%s", text);
}

int bench_exec_spawn(const char *exe, const char *const *argv, const char *outpath, const char *errpath)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* never the terminal: a Linux guest's console would take it over */
		int in = open("/dev/null", O_RDONLY);
		int out = outpath ? open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0600) : open("/dev/null", O_WRONLY);
		int err = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (in >= 0)
			dup2(in, STDIN_FILENO);
		if (out >= 0)
			dup2(out, STDOUT_FILENO);
		if (err >= 0)
			dup2(err, STDERR_FILENO);
		execv(exe, (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", exe, strerror(errno));
		_exit(127);
	}
	return pid;
}

int bench_exec_run(const char *exe, const char *const *args, const char *json,
		   unsigned timeout_ms, char *errbuf, size_t errlen)
{
	const char *argv[ARGS_MAX + 6];
	unsigned n = 0;
	char errpath[4096];
	snprintf(errpath, sizeof(errpath), "%s.stderr", json);
	argv[n++] = exe;
	argv[n++] = "run";
	for (unsigned i = 0; args[i] && n < ARGS_MAX; i++)
		argv[n++] = args[i];
	argv[n++] = "--json";
	argv[n++] = json;
	argv[n++] = "-q";
	argv[n] = NULL;
	unlink(json);
	int pid = bench_exec_spawn(exe, argv, NULL, errpath);
	if (pid < 0) {
		snprintf(errbuf, errlen, "fork: %s", strerror(-pid));
		return -1;
	}
	int st = bench_exec_wait(pid, bench_now_ms() + timeout_ms);
	last_line(errpath, errbuf, errlen);
	if (st == -1)
		snprintf(errbuf, errlen, "killed after %u ms", timeout_ms);
	unlink(errpath);
	return st;
}

int bench_exec_fork(int (*fn)(void *arg, int fd), void *arg, unsigned timeout_ms, void *buf,
		    size_t len)
{
	int p[2];
	if (pipe(p) < 0)
		return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		_exit(fn(arg, p[1]));
	}
	close(p[1]);
	int st = bench_exec_wait(pid, bench_now_ms() + timeout_ms);
	size_t got = 0;
	ssize_t r;
	/* The child has exited (or was killed): the pipe is at EOF. */
	while (got < len && (r = read(p[0], (char *)buf + got, len - got)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		got += (size_t)r;
	}
	close(p[0]);
	if (st == 0 && got != len)
		st = -1;
	return st;
}

unsigned bench_cell_timeout_ms(const struct bench_cell *c, const struct bench_opts *o)
{
	if (bench_linux_workload(c->workload))
		return o->linux_timeout_s * 1000u;
	unsigned t = o->duration_ms * 3 + 10000 + 1000 * c->vms;
	return c->mode == BENCH_MODE_PROCESS ? t : t + bench_start_margin_ms(o, c);
}

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
