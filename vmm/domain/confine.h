/*
 * Kernel-enforced confinement of domain members (sched/DOMAIN.md, "Faults"):
 * the agent puts each member's process into a cgroup of its own, under one
 * for the domain, whose cpuset is the domain's CPUs and whose CPU weight is
 * the member's weight. A member that ignores revokes then still cannot run
 * outside those CPUs (sched_setaffinity is bounded by the cpuset), and the
 * host's fair scheduler gives it no more than its weighted share of them
 * while it cheats. The cpuset is the domain's CPUs and the CPUs the agent
 * itself may use outside them: the members' event loops and link threads
 * run there (`--loop-cpu auto`), off the vCPUs' CPUs; start the agent
 * under `taskset` to choose them. Members confine themselves too (each grant pins
 * the vCPU thread); this is what holds when one does not.
 *
 * cgroup v2 (cpu and cpuset controllers) or v1 (the cpuset and cpu
 * hierarchies); where neither can be written (not root, no delegation)
 * the domain runs "self" and says why. The member cgroups outlive the
 * agent: members it leaves behind stay confined to the domain's CPUs.
 */
#ifndef VMM_DOMAIN_CONFINE_H
#define VMM_DOMAIN_CONFINE_H

#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/types.h>

enum dom_confine_want {
	DOM_CONFINE_AUTO,   /* cgroups where they can be set up, else self (and why) */
	DOM_CONFINE_CGROUP, /* cgroups, or the agent does not start */
	DOM_CONFINE_SELF,   /* no cgroups: members pin themselves (`vmm domain start`'s default) */
};

#define DOM_CONFINE_DIRS 2 /* v1: the cpuset and the cpu hierarchy; v2: one */
#define DOM_CONFINE_PENDING 64

struct dom_confine {
	int version;                            /* 0: self; 1 or 2: cgroup v1 / v2 */
	int ndirs;
	char dir[DOM_CONFINE_DIRS][PATH_MAX];   /* the domain's cgroup in each hierarchy */
	char name[32];                          /* the domain's */
	char cpus[512];                         /* where members may run, as cpuset.cpus lists them */
	char why[256];                          /* self: why not cgroups */
	pid_t pending[DOM_CONFINE_PENDING];     /* members' cgroups still to remove */
	int npending;
};

/*
 * Sets up the domain's cgroup (named after the domain and this agent's
 * pid; earlier agents' empty ones for this name are removed). With AUTO a
 * failure leaves version 0 and why filled, and returns 0; with CGROUP it
 * returns the -errno. cpus: where members may run.
 */
int dom_confine_init(struct dom_confine *c, enum dom_confine_want want, const char *name, const cpu_set_t *cpus);
/* Moves a joining member (its whole process) into a cgroup of its own with
 * its weight (1..10000, cgroup v2's cpu.weight scale). -errno: not moved. */
int dom_confine_member(struct dom_confine *c, pid_t pid, unsigned weight);
int dom_confine_weight(struct dom_confine *c, pid_t pid, unsigned weight);
/* The member left: its cgroup goes once its process has ended (retried by
 * dom_confine_sweep while the process still exits). */
void dom_confine_release(struct dom_confine *c, pid_t pid);
/* Retries what dom_confine_release could not remove yet; true while some
 * remain. */
bool dom_confine_sweep(struct dom_confine *c);
/* The agent stops: its empty cgroups go (members still running keep theirs). */
void dom_confine_fini(struct dom_confine *c);
/* "cgroup v2 /sys/fs/cgroup/..." or "self (not enforced: why)". */
const char *dom_confine_describe(const struct dom_confine *c, char *buf, size_t len);

#endif
