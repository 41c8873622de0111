/*
 * A multi-VM cell as K `vmm run` processes: in one scheduling domain (an
 * agent started for this run alone, so no state leaks between reps), or
 * each under the host scheduler on the same CPUs. All K are forked first
 * and told one --start-at instant, so their measured windows coincide and
 * the per-VM ops/s add up to what the M slots did in that window: summing
 * unaligned windows is what once gave "2.65x of one VM" on 2 CPUs.
 * Each child's report is kept in OUT/reports/ for whoever wants to check.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vmm/bench/exec/exec.h"
#include "vmm/bench/matrix/matrix.h"

#define PROCS_ARGS 64
#define AGENT_READY_MS 10000

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct agent {
	int pid;
	char name[64];
};

/*
 * `vmm domain start NAME --pcpus M`, ready once it printed its line (the
 * socket exists then). VMM_DOMAIN_DIR is the bench's tmpdir/dom: short,
 * since a socket path must fit in 108 bytes, which OUT may not.
 */
static int agent_start(const struct bench_opts *o, const struct bench_cell *c, unsigned rep,
		       const char *tmpdir, struct agent *a, char *why, size_t len)
{
	char pcpus[16], errpath[4096];
	snprintf(a->name, sizeof(a->name), "bench-%d-%u-%u", (int)getpid(), c->id, rep);
	snprintf(pcpus, sizeof(pcpus), "%u", c->pcpus);
	snprintf(errpath, sizeof(errpath), "%s/%s.agent.stderr", tmpdir, a->name);
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(why, len, "pipe: %s", strerror(errno));
		return -errno;
	}
	fflush(NULL);
	a->pid = fork();
	if (a->pid < 0) {
		snprintf(why, len, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (a->pid == 0) {
		int err = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(p[1], STDOUT_FILENO);
		if (err >= 0)
			dup2(err, STDERR_FILENO);
		execl(o->exe, o->exe, "domain", "start", a->name, "--pcpus", pcpus, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char line[512];
	size_t got = 0;
	uint64_t deadline = bench_now_ms() + AGENT_READY_MS;
	while (got < sizeof(line) - 1 && !memchr(line, '\n', got)) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		int64_t left = (int64_t)(deadline - bench_now_ms());
		if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
			break;
		ssize_t r = read(p[0], line + got, sizeof(line) - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(p[0]);
	line[got] = '\0';
	if (!strstr(line, "socket")) {
		kill(a->pid, SIGKILL);
		bench_exec_wait(a->pid, bench_now_ms());
		FILE *f = fopen(errpath, "r");
		char e[200] = "";
		if (f && fgets(e, sizeof(e), f))
			e[strcspn(e, "\n")] = '\0';
		if (f)
			fclose(f);
		snprintf(why, len, "domain agent did not start: %.60s", e[0] ? e : "no ready line");
		unlink(errpath);
		return -EIO;
	}
	unlink(errpath);
	return 0;
}

static void agent_stop(struct agent *a, const char *domdir)
{
	char dir[4096];
	kill(a->pid, SIGTERM);
	if (bench_exec_wait(a->pid, bench_now_ms() + 10000) == -1)
		fprintf(stderr, "vmm bench: domain agent %s did not stop on SIGTERM; killed\n", a->name);
	if (snprintf(dir, sizeof(dir), "%s/%s", domdir, a->name) < (int)sizeof(dir))
		rmdir(dir); /* the agent removed its files */
}

static void report_path(const struct bench_opts *o, const struct bench_cell *c, unsigned rep,
			unsigned k, char *buf, size_t len)
{
	snprintf(buf, len, "%s/reports/cell%u-rep%u-vm%u.json", o->out_dir, c->id, rep, k);
}

/* The K children's reports: each VM's ops/s, start instant and lateness. */
static void read_reports(const struct bench_opts *o, const struct bench_cell *c, unsigned rep,
			 struct bench_run *out)
{
	uint64_t first = UINT64_MAX, last = 0;
	double sum = 0, late = 0;
	bool ok = true;
	out->min_grants = UINT64_MAX;
	for (unsigned k = 0; k < c->vms; k++) {
		char path[4096];
		struct bench_run one = { .ops_per_s = NAN };
		struct bench_json j;
		report_path(o, c, rep, k, path, sizeof(path));
		int r = bench_read_report(path, &one, NULL, 0, &j);
		if (!j.root) { /* nothing was read */
			snprintf(out->why, sizeof(out->why), "vm%u: %.80s", k, one.why);
			ok = false;
			continue;
		}
		double start = NAN, lt = NAN, grants = NAN, wait = NAN;
		bench_json_num(&j, "start_ns", &start);
		bench_json_num(&j, "start_late_ns", &lt);
		if (!bench_json_num(&j, "start_wait_ns", &wait) && wait == 0)
			out->unready = true;
		if (c->mode == BENCH_MODE_DOMAIN && !bench_json_num(&j, "domain.grants", &grants) &&
		    grants < (double)out->min_grants)
			out->min_grants = (uint64_t)grants;
		bench_sched_add(&j, out->sched);
		bench_json_free(&j);
		if (r) {
			snprintf(out->why, sizeof(out->why), "vm%u: %.80s", k, one.why);
			ok = false;
			continue;
		}
		out->vm_ops[k] = one.ops_per_s;
		sum += one.ops_per_s;
		if (isfinite(start)) {
			out->vm_start_ns[k] = (uint64_t)start;
			first = out->vm_start_ns[k] < first ? out->vm_start_ns[k] : first;
			last = out->vm_start_ns[k] > last ? out->vm_start_ns[k] : last;
		}
		if (isfinite(lt) && lt / 1e6 > late)
			late = lt / 1e6;
	}
	if (out->min_grants == UINT64_MAX)
		out->min_grants = 0;
	out->max_late_ms = late;
	out->start_spread_ms = last >= first ? (double)(last - first) / 1e6 : NAN;
	if (ok) {
		/* Windows aligned: the sum is what the slots did in one window. */
		out->ops_per_s = sum;
		out->ok = true;
	}
}

/* The K children, all forked before any starts its vCPUs; their statuses. */
static void run_children(const struct bench_opts *o, const struct bench_cell *c, unsigned rep,
			 const char *tmpdir, const char *domain, struct bench_run *out)
{
	char buf[16][32], at[32], name[16], errpath[4096];
	const char *argv[PROCS_ARGS];
	int pids[64];
	unsigned margin = bench_start_margin_ms(o, c), timeout = bench_cell_timeout_ms(c, o);
	snprintf(at, sizeof(at), "%llu", (unsigned long long)(mono_ns() + margin * 1000000ull));
	uint64_t deadline = bench_now_ms() + timeout;
	for (unsigned k = 0; k < c->vms; k++) {
		unsigned n = 0;
		char path[4096];
		argv[n++] = o->exe;
		argv[n++] = "run";
		n += bench_run_args(o, c, argv + n, buf);
		if (domain) {
			snprintf(name, sizeof(name), "vm%u", k);
			const char *d[] = { "--domain", domain, "--name", name };
			for (unsigned i = 0; i < 4; i++)
				argv[n++] = d[i];
		}
		report_path(o, c, rep, k, path, sizeof(path));
		unlink(path);
		const char *tail[] = { "--start-at", at, "--json", path, "-q", NULL };
		for (unsigned i = 0; i < 6; i++)
			argv[n++] = tail[i];
		snprintf(errpath, sizeof(errpath), "%s/cell%u-vm%u.stderr", tmpdir, c->id, k);
		pids[k] = bench_exec_spawn(o->exe, argv, NULL, errpath);
	}
	out->exit_code = 0;
	for (unsigned k = 0; k < c->vms; k++) {
		int st = pids[k] < 0 ? -1 : bench_exec_wait(pids[k], deadline);
		snprintf(errpath, sizeof(errpath), "%s/cell%u-vm%u.stderr", tmpdir, c->id, k);
		if (st != 0 && out->exit_code == 0) {
			FILE *f = fopen(errpath, "r");
			char line[256], last[256] = "";
			while (f && fgets(line, sizeof(line), f))
				if (line[0] != '\n')
					snprintf(last, sizeof(last), "%s", line);
			if (f)
				fclose(f);
			last[strcspn(last, "\n")] = '\0';
			out->exit_code = st;
			if (st == -1)
				snprintf(out->why, sizeof(out->why), "vm%u: killed after %u ms", k, timeout);
			else
				snprintf(out->why, sizeof(out->why), "vm%u: %.80s", k, last[0] ? last : "failed");
		}
		unlink(errpath);
	}
}

void bench_run_procs(const struct bench_opts *o, const struct bench_cell *c, const char *tmpdir,
		     unsigned rep, struct bench_run *out)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/reports", o->out_dir);
	if (c->vms > 64 || (mkdir(dir, 0755) && errno != EEXIST)) {
		snprintf(out->why, sizeof(out->why), "%.40s: %.40s", dir, c->vms > 64 ? "over 64 VMs" : strerror(errno));
		out->exit_code = -1;
		return;
	}
	struct agent a = { .pid = -1 };
	char domdir[4096];
	snprintf(domdir, sizeof(domdir), "%s/dom", tmpdir);
	if (c->mode == BENCH_MODE_DOMAIN && ((mkdir(domdir, 0700) && errno != EEXIST) ||
					     setenv("VMM_DOMAIN_DIR", domdir, 1))) {
		snprintf(out->why, sizeof(out->why), "%.40s: %.40s", domdir, strerror(errno));
		out->exit_code = -1;
		return;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (c->mode == BENCH_MODE_DOMAIN &&
	    agent_start(o, c, rep, tmpdir, &a, out->why, sizeof(out->why))) {
		out->exit_code = -1;
		return;
	}
	unsigned margin = bench_start_margin_ms(o, c);
	run_children(o, c, rep, tmpdir, c->mode == BENCH_MODE_DOMAIN ? a.name : NULL, out);
	if (a.pid > 0)
		agent_stop(&a, domdir);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	out->wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (out->exit_code == 0) {
		read_reports(o, c, rep, out);
		if (out->unready)
			bench_start_margin_learn(margin, out->max_late_ms);
	}
}
