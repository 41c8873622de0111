/*
 * Linux workloads in `vmm bench`: each run boots --kernel with the workload
 * initramfs --initrd (tests/linux/mkworkload.py), whose /init runs one
 * workload to a fixed amount of work (the same at every overcommit: the
 * tasks are --linux-threads, not the vCPUs), prints
 *   VMM-WORK-RESULT work=W ops=N seconds=S cpus=C steal_ms=MS rc=R
 * on the serial console and powers off. ops/s = N / S, timed by the guest's
 * own clock (kvmclock: wall time, also while a vCPU waits for a CPU), so
 * boot and power-off are not in the figure and both VMMs are timed alike.
 *
 * A BENCH_VM cell boots it under `vmm run -k`; a BENCH_QEMU cell under
 * `qemu-system-x86_64 -accel kvm -cpu host` with the same kernel,
 * initramfs, command line, vCPUs and memory, confined to the same CPUs
 * `vmm run --pcpus M` takes (the first M this process may use), as
 * `taskset` would: what users of a stock VMM run today.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vmm/bench/exec/exec.h"
#include "vmm/bench/matrix/matrix.h"

#define LINUX_MEM "1024M"

static void cmdline(const struct bench_opts *o, const struct bench_cell *c, char *buf, size_t len)
{
	int n = snprintf(buf, len, "console=ttyS0 reboot=k panic=-1 quiet vmm.work=%s vmm.threads=%u", c->workload,
			 o->linux_threads);
	if (o->linux_size && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " vmm.size=%u", o->linux_size);
}

/* "key=value" of the result line, as a number; NaN when absent. */
static double field(const char *line, const char *key)
{
	size_t k = strlen(key);
	for (const char *p = line; (p = strstr(p, key)); p += k)
		if ((p == line || p[-1] == ' ') && p[k] == '=') {
			char *end;
			double v = strtod(p + k + 1, &end);
			return end != p + k + 1 && (*end == ' ' || *end == '\0' || *end == '\r' || *end == '\n') ? v : NAN;
		}
	return NAN;
}

int bench_linux_result(const char *console, double *ops_per_s, double *steal_ms, char *why, size_t len)
{
	const char *line = NULL;
	for (const char *p = console; (p = strstr(p, "VMM-WORK-RESULT ")); p++)
		line = p;
	*ops_per_s = *steal_ms = NAN;
	if (!line) {
		snprintf(why, len, "the guest printed no VMM-WORK-RESULT");
		return -EINVAL;
	}
	char one[256];
	snprintf(one, sizeof(one), "%.*s", (int)strcspn(line, "\r\n"), line);
	double ops = field(one, "ops"), secs = field(one, "seconds"), rc = field(one, "rc");
	if (rc != 0) {
		snprintf(why, len, "the workload failed: %.70s", one + 16);
		return -EINVAL;
	}
	if (!(ops > 0) || !(secs > 0) || !isfinite(ops) || !isfinite(secs)) {
		snprintf(why, len, "no ops or seconds in: %.60s", one + 16);
		return -EINVAL;
	}
	*ops_per_s = ops / secs;
	*steal_ms = field(one, "steal_ms");
	return 0;
}

/* The first n CPUs this process may use: where vmm run --pcpus n puts its slots. */
static int first_cpus(unsigned n, cpu_set_t *set)
{
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
		return -errno;
	CPU_ZERO(set);
	for (int c = 0; c < CPU_SETSIZE && n; c++)
		if (CPU_ISSET(c, &allowed)) {
			CPU_SET(c, set);
			n--;
		}
	return n ? -EINVAL : 0;
}

/* QEMU, confined to cpus, found on PATH; stdout and stderr to errpath. pid or -errno. */
static int spawn_qemu(const char *const *argv, const cpu_set_t *cpus, const char *errpath)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY), err = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (in >= 0)
			dup2(in, STDIN_FILENO);
		if (err >= 0) {
			dup2(err, STDOUT_FILENO);
			dup2(err, STDERR_FILENO);
		}
		if (sched_setaffinity(0, sizeof(*cpus), cpus) < 0) {
			fprintf(stderr, "sched_setaffinity: %s\n", strerror(errno));
			_exit(127);
		}
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	size_t r;
	while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			char *more = realloc(buf, 2 * cap + 1);
			if (!more) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = more;
			cap *= 2;
		}
	}
	fclose(f);
	if (buf)
		buf[n] = '\0';
	return buf;
}

/* A failure's reason from path: its last line that is not indented (a
 * fault report's register dump is; its "vCPU n faulted: ..." line is not). */
static void last_line(const char *path, char *buf, size_t len)
{
	char *text = slurp(path);
	buf[0] = '\0';
	if (!text)
		return;
	for (char *line = text, *next; *line; line = next) {
		next = line + strcspn(line, "\n");
		if (*next)
			*next++ = '\0';
		line[strcspn(line, "\r")] = '\0';
		if (line[0] && line[0] != ' ' && line[0] != '\t')
			snprintf(buf, len, "%s", line);
	}
	free(text);
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

unsigned bench_linux_argv(const struct bench_opts *o, const struct bench_cell *c, const char *console,
			  const char *json, const char **argv, struct bench_linux_strs *s)
{
	unsigned n, b = 0, timeout = bench_cell_timeout_ms(c, o);
	cmdline(o, c, s->cmdline, sizeof(s->cmdline));
	snprintf(s->num[b++], sizeof(s->num[0]), "%u", c->vcpus);
	const char *vcpus = s->num[0];
	if (c->kind == BENCH_QEMU) {
		snprintf(s->serial, sizeof(s->serial), "file:%s", console);
		const char *a[] = { o->qemu, "-accel", "kvm", "-cpu", "host", "-smp", vcpus, "-m", LINUX_MEM,
				    "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot", "-serial",
				    s->serial, "-kernel", o->kernel, "-initrd", o->initrd, "-append", s->cmdline, NULL };
		memcpy(argv, a, sizeof(a));
		return sizeof(a) / sizeof(a[0]) - 1;
	}
	snprintf(s->num[b], sizeof(s->num[b]), "%us", timeout / 1000 > 5 ? timeout / 1000 - 5 : 1);
	const char *tmo = s->num[b++];
	const char *a[] = { o->exe, "run", "-k", o->kernel, "-i", o->initrd, "-p", s->cmdline, "-c", vcpus,
			    "-m", LINUX_MEM, "--timeout", tmo, "--json", json, "--pcpus" };
	memcpy(argv, a, sizeof(a));
	n = sizeof(a) / sizeof(a[0]);
	snprintf(s->num[b], sizeof(s->num[b]), "%u", c->pcpus);
	argv[n++] = s->num[b++];
	n = bench_sched_args(c, argv, n, s->num, &b);
	argv[n] = NULL;
	return n;
}

void bench_linux_run(const struct bench_opts *o, const struct bench_cell *c, const char *tmpdir,
		     struct bench_run *out)
{
	char console[4096], errpath[4096], json[4096];
	struct bench_linux_strs s;
	const char *argv[BENCH_LINUX_ARGS];
	unsigned timeout = bench_cell_timeout_ms(c, o);
	snprintf(console, sizeof(console), "%s/cell%u.console", tmpdir, c->id);
	snprintf(errpath, sizeof(errpath), "%s/cell%u.stderr", tmpdir, c->id);
	snprintf(json, sizeof(json), "%s/cell%u.json", tmpdir, c->id);
	bench_linux_argv(o, c, console, json, argv, &s);
	int pid;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (c->kind == BENCH_QEMU) {
		cpu_set_t cpus;
		int r = first_cpus(c->pcpus, &cpus);
		pid = r ? r : spawn_qemu(argv, &cpus, errpath);
	} else {
		unlink(json);
		pid = bench_exec_spawn(o->exe, argv, console, errpath);
	}
	if (pid < 0) {
		snprintf(out->why, sizeof(out->why), "cannot start %s: %s", c->kind == BENCH_QEMU ? o->qemu : "vmm run",
			 strerror(-pid));
		out->exit_code = 127;
		return;
	}
	out->exit_code = bench_exec_wait(pid, bench_now_ms() + timeout);
	out->wall_s = seconds_since(&t0);
	char *text = slurp(console);
	double steal_ms;
	int r = text ? bench_linux_result(text, &out->ops_per_s, &steal_ms, out->why, sizeof(out->why)) : -ENOENT;
	if (!text)
		snprintf(out->why, sizeof(out->why), "no console output");
	if (out->exit_code != 0) {
		/* the VMM's own word first: a fault report, QEMU's error */
		last_line(errpath, out->why, sizeof(out->why));
		if (out->exit_code == -1)
			snprintf(out->why, sizeof(out->why), "killed after %u ms", timeout);
		else if (!out->why[0])
			snprintf(out->why, sizeof(out->why), "exit %d", out->exit_code);
	}
	out->ok = out->exit_code == 0 && r == 0;
	if (!out->ok)
		out->ops_per_s = NAN;
	free(text);
	if (c->kind == BENCH_VM) {
		struct bench_json j;
		if (bench_json_load(json, &j) == 0) {
			bench_sched_add(&j, out->sched);
			bench_json_free(&j);
		}
		unlink(json);
	}
	unlink(console);
	unlink(errpath);
}
