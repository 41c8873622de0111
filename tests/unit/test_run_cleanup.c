/*
 * run_execute's early returns (issue 15): every path out releases what it
 * took, the SIGINT/SIGTERM signalfd and their block, even when the host
 * refuses the event loop's ring. Driven in-process, no KVM: a run with one
 * empty VM and a real scheduler, and RLIMIT_NOFILE set so that exactly the
 * signalfd (or nothing at all) still fits.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "vmm/config.h"
#include "vmm/core/run.h"
#include "vmm/errors.h"

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ".", "..", and the directory's own fd */
}

/* The number the next new fd gets. */
static int lowest_free_fd(void)
{
	int fd = dup(0);
	if (fd >= 0)
		close(fd);
	return fd;
}

static bool blocked(int sig)
{
	sigset_t cur;
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	return sigismember(&cur, sig) == 1;
}

/* fds_left: how many new fds the host lets run_execute open (0: not even the signalfd). */
static void early_return(unsigned fds_left)
{
	struct vm_config cfg;
	vm_config_defaults(&cfg);
	cfg.no_seccomp = true;
	cfg.ncpus = 1;
	cfg.vms = 1;
	struct sched_params p = { .nvcpus = 1, .npcpus = 1, .policy = "none", .slice_ns = 1000000 };
	const char *why = NULL;
	struct vm vm;
	memset(&vm, 0, sizeof(vm));
	vm.fd = -1;
	struct run r = { .cfg = &cfg, .vms = &vm, .nvms = 1, .nvcpus = 1 };
	r.ctl.wake_fd = -1;
	r.sched = sched_create(&p, &why);
	CHECK(r.sched != NULL);
	if (!r.sched)
		return;

	int before = count_fds();
	struct rlimit old;
	getrlimit(RLIMIT_NOFILE, &old);
	struct rlimit low = { .rlim_cur = (rlim_t)lowest_free_fd() + fds_left, .rlim_max = old.rlim_max };
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
	CHECK(!blocked(SIGINT) && !blocked(SIGTERM));
	int status = run_execute(&r);
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);

	CHECK_EQ(status, VMM_EXIT_HOST_ERROR);
	CHECK_EQ(count_fds(), before); /* no signalfd left behind */
	CHECK(!blocked(SIGINT));
	CHECK(!blocked(SIGTERM));
	sched_destroy(r.sched);
}

int main(void)
{
	early_return(1); /* the signalfd fits, the io_uring ring does not */
	early_return(0); /* not even the signalfd */
	return check_summary();
}
