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

#include "vmm/bench/exec/exec.h"

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
