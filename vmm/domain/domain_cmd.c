/*
 * `vmm domain ...`. User errors are one line and exit 2; a domain that is
 * not running is exit 2 too (the name was wrong or the agent is not up);
 * the host refusing something is exit 6.
 */
#include "vmm/domain/domain_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/domain_core.h"
#include "sched/policy.h"
#include "vmm/domain/agent.h"
#include "vmm/domain/client.h"
#include "vmm/domain/confine.h"
#include "vmm/domain/dir_trust.h"
#include "vmm/domain/paths.h"
#include "vmm/errors.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vmm domain start NAME (--pcpus N | --cpus LIST) [--slice-us N] [--grace-us N]\n"
		"                        [--group GROUP] [--max-members N] [--uid-conns N] [--confine auto|cgroup|self]\n"
		"       vmm domain status NAME [--json]\n"
		"       vmm domain set NAME VM [--weight N] [--yield POLICY]   (VM: member id, or pid:PID)\n"
		"       vmm domain stop NAME\n"
		"A domain shares its CPUs among `vmm run --domain NAME` processes (sched/DOMAIN.md).\n"
		"start serves in the foreground until SIGINT/SIGTERM; files under $%s, else\n"
		"/run/vmm/domain (root) or $XDG_RUNTIME_DIR/vmm/domain, else /tmp/vmm-UID/domain,\n"
		"each directory on the way owned by root or the user (SECURITY.md). set: the\n"
		"domain's owner or root only; --uid-conns: connections any other uid may hold (32).\n",
		DOM_DIR_ENV);
}

static int user_error(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "vmm: domain: ");
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, "\n");
	return VMM_EXIT_USAGE;
}

/* A whole decimal number in [min, max]. */
static int number(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (!*s || *end || errno || v < min || v > max || s[0] == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

/* "0,2-3" into CPU numbers; -EINVAL on anything else, -E2BIG past max. */
static int cpu_list(const char *s, int *cpus, int max)
{
	int n = 0;
	char buf[512];
	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(tok, '-');
		unsigned long lo, hi;
		if (dash) {
			*dash = '\0';
			if (number(tok, 0, CPU_SETSIZE - 1, &lo) || number(dash + 1, 0, CPU_SETSIZE - 1, &hi) || hi < lo)
				return -EINVAL;
		} else if (number(tok, 0, CPU_SETSIZE - 1, &lo)) {
			return -EINVAL;
		} else {
			hi = lo;
		}
		for (unsigned long c = lo; c <= hi; c++) {
			for (int i = 0; i < n; i++)
				if (cpus[i] == (int)c)
					return -EINVAL;
			if (n == max)
				return -E2BIG;
			cpus[n++] = (int)c;
		}
	}
	return n ? n : -EINVAL;
}

#define START_HELP (-1) /* start_option: --help printed, exit 0 */

/* One option of `start` into o: 0, START_HELP, or an exit status. */
static int start_option(int c, struct dom_agent_opts *o, unsigned long *npcpus, const char **cpus, char **argv)
{
	unsigned long v;
	switch (c) {
	case 'p':
		return number(optarg, 1, DOM_SLOTS_MAX, npcpus)
			       ? user_error("--pcpus: '%s' is not a number of slots 1..256%s", optarg, "")
			       : 0;
	case 'c':
		*cpus = optarg;
		return 0;
	case 's':
	case 'g':
		if (number(optarg, 100, 10000000, &v))
			return user_error(c == 's' ? "--slice-us: '%s' is not a number 100..10000000%s"
						   : "--grace-us: '%s' is not a number 100..10000000%s",
					  optarg, "");
		*(c == 's' ? &o->slice_ns : &o->grace_ns) = v * 1000;
		return 0;
	case 'G': {
		struct group *g = getgrnam(optarg);
		if (!g && number(optarg, 0, 0x7fffffff, &v))
			return user_error("--group: no group '%s'%s", optarg, "");
		o->gid = g ? (int)g->gr_gid : (int)v;
		return 0;
	}
	case 'm':
	case 'u':
		if (number(optarg, 1, 4096, &v))
			return user_error(c == 'm' ? "--max-members: '%s' is not a number 1..4096%s"
						   : "--uid-conns: '%s' is not a number 1..4096%s",
					  optarg, "");
		*(c == 'm' ? &o->max_members : &o->uid_conns) = (int)v;
		return 0;
	case 'C':
		if (!strcmp(optarg, "auto"))
			o->confine = DOM_CONFINE_AUTO;
		else if (!strcmp(optarg, "cgroup"))
			o->confine = DOM_CONFINE_CGROUP;
		else if (!strcmp(optarg, "self"))
			o->confine = DOM_CONFINE_SELF;
		else
			return user_error("--confine: '%s' is not auto, cgroup or self%s", optarg, "");
		return 0;
	case 'h':
		usage(stdout);
		return START_HELP;
	default:
		return user_error("start: unknown or incomplete option '%s'%s", argv[optind - 1], " (vmm domain --help)");
	}
}

/* The slots' CPUs from --cpus LIST or the first --pcpus N this process may
 * use: 0 or an exit status. */
static int pick_slots(struct dom_agent_opts *o, const char *cpus, unsigned long npcpus)
{
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
		CPU_ZERO(&allowed);
	if (cpus) {
		int n = cpu_list(cpus, o->slot_cpu, DOM_SLOTS_MAX);
		if (n < 0)
			return user_error("--cpus: '%s' is not a list of distinct CPUs like 0,2-3%s", cpus, "");
		for (int i = 0; i < n; i++)
			if (!CPU_ISSET(o->slot_cpu[i], &allowed)) {
				char cpu[16];
				snprintf(cpu, sizeof(cpu), "%d", o->slot_cpu[i]);
				return user_error("--cpus: CPU %s is not one this process may use%s", cpu, "");
			}
		o->nslots = n;
		return 0;
	}
	for (int cpu = 0; cpu < CPU_SETSIZE && o->nslots < (int)npcpus; cpu++)
		if (CPU_ISSET(cpu, &allowed))
			o->slot_cpu[o->nslots++] = cpu;
	if (o->nslots < (int)npcpus) {
		char n[16];
		snprintf(n, sizeof(n), "%lu", npcpus);
		return user_error("--pcpus: %s CPUs asked for, this process may use fewer%s", n, "");
	}
	return 0;
}

static int cmd_start(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pcpus", required_argument, NULL, 'p' }, { "cpus", required_argument, NULL, 'c' },
		{ "slice-us", required_argument, NULL, 's' }, { "grace-us", required_argument, NULL, 'g' },
		{ "group", required_argument, NULL, 'G' }, { "max-members", required_argument, NULL, 'm' },
		{ "uid-conns", required_argument, NULL, 'u' },
		{ "confine", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	static struct dom_agent_opts o;
	/* self by default: cgroup members measured fewer agent-driven slice
	 * ends (test_weights' probes) and weigh as one group each against the
	 * rest of the host; auto and cgroup opt in (sched/DOMAIN.md) */
	o = (struct dom_agent_opts){ .gid = -1, .confine = DOM_CONFINE_SELF };
	unsigned long npcpus = 0;
	const char *cpus = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		int rc = start_option(c, &o, &npcpus, &cpus, argv);
		if (rc)
			return rc == START_HELP ? VMM_EXIT_OK : rc;
	}
	if (optind != argc - 1)
		return user_error("start: give one domain NAME%s%s", "", " (vmm domain --help)");
	o.name = argv[optind];
	char why[200];
	if (dom_name_check(o.name, why, sizeof(why)))
		return user_error("%s%s", why, "");
	if (!cpus == !npcpus)
		return user_error("start: give --pcpus N or --cpus LIST%s%s", "", "");
	int rc = pick_slots(&o, cpus, npcpus);
	if (rc)
		return rc;
	rc = dom_agent_run(&o, why, sizeof(why));
	if (rc) {
		fprintf(stderr, "vmm: domain %s: %s\n", o.name, why);
		/* an untrusted directory (-EPERM) is the host's state, not a typo: 6 */
		return rc == -EEXIST || rc == -EINVAL || rc == -ENAMETOOLONG ? VMM_EXIT_USAGE : VMM_EXIT_HOST_ERROR;
	}
	return VMM_EXIT_OK;
}

static int client_status(int rc, const char *why)
{
	if (!rc)
		return VMM_EXIT_OK;
	fprintf(stderr, "vmm: %s\n", why);
	return rc == -ENOENT || rc == -ESRCH || rc == -EINVAL || rc == -EACCES ? VMM_EXIT_USAGE : VMM_EXIT_HOST_ERROR;
}

static int cmd_status(int argc, char **argv)
{
	int json = 0;
	const char *name = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (argv[i][0] == '-')
			return user_error("status: unknown option '%s'%s", argv[i], "");
		else if (!name)
			name = argv[i];
		else
			return user_error("status: one domain NAME, not also '%s'%s", argv[i], "");
	}
	if (!name)
		return user_error("status: give a domain NAME%s%s", "", "");
	char why[300] = "";
	return client_status(dom_client_status(name, json, stdout, why, sizeof(why)), why);
}

static int cmd_set(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "weight", required_argument, NULL, 'w' }, { "yield", required_argument, NULL, 'y' }, { 0 },
	};
	unsigned what = 0;
	unsigned long weight = 0;
	const char *policy = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'w') {
			if (number(optarg, DOM_WEIGHT_MIN, DOM_WEIGHT_MAX, &weight))
				return user_error("--weight: '%s' is not a number 1..10000%s", optarg, "");
			what |= DOM_SET_WEIGHT;
		} else if (c == 'y') {
			if (!sched_policy_find(optarg))
				return user_error("--yield: unknown policy '%s'%s", optarg, "");
			policy = optarg;
			what |= DOM_SET_POLICY;
		} else {
			return user_error("set: unknown or incomplete option '%s'%s", argv[optind - 1], "");
		}
	}
	if (optind != argc - 2)
		return user_error("set: give a domain NAME and a VM (member id, or pid:PID)%s%s", "", "");
	if (!what)
		return user_error("set: nothing to change: give --weight N and/or --yield POLICY%s%s", "", "");
	const char *name = argv[optind], *vm = argv[optind + 1];
	unsigned long id;
	int member = -1, pid = 0;
	if (!strncmp(vm, "pid:", 4) && !number(vm + 4, 1, 0x7fffffff, &id))
		pid = (int)id;
	else if (!number(vm, 0, 0xffffff, &id))
		member = (int)id;
	else
		return user_error("set: VM '%s' is neither a member id nor pid:PID%s", vm, "");
	char why[300] = "";
	uint64_t at = 0;
	int rc = dom_client_set(name, member, pid, what, (uint32_t)weight, policy, &at, why, sizeof(why));
	if (!rc)
		printf("vmm: domain %s: %s: changed at %.6f s (agent clock)\n", name, vm, (double)at / 1e9);
	return client_status(rc, why);
}

static int cmd_stop(int argc, char **argv)
{
	if (argc != 2)
		return user_error("stop: give one domain NAME%s%s", "", "");
	char why[300], dir[108];
	if (dom_name_check(argv[1], why, sizeof(why)))
		return user_error("%s%s", why, "");
	if (dom_path(argv[1], NULL, dir, sizeof(dir)))
		return user_error("stop: the path of domain '%s' is too long%s", argv[1], "");
	/* the pid file only from a trusted directory: it names what to signal */
	uid_t owner;
	int dfd = dom_dir_open(dir, -1, &owner, why, sizeof(why));
	if (dfd == -EPERM) {
		fprintf(stderr, "vmm: domain stop: %s\n", why);
		return VMM_EXIT_HOST_ERROR;
	}
	long pid = dom_pid_file_read(dfd);
	if (dfd >= 0)
		close(dfd);
	if (pid <= 0 || kill((pid_t)pid, SIGTERM) < 0)
		return user_error("stop: no domain '%s' is running (%s/agent.pid)", argv[1], dir);
	return VMM_EXIT_OK;
}

int domain_cmd_main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? VMM_EXIT_USAGE : VMM_EXIT_OK;
	}
	const char *sub = argv[1];
	if (!strcmp(sub, "start"))
		return cmd_start(argc - 1, argv + 1);
	if (!strcmp(sub, "status"))
		return cmd_status(argc - 1, argv + 1);
	if (!strcmp(sub, "set"))
		return cmd_set(argc - 1, argv + 1);
	if (!strcmp(sub, "stop"))
		return cmd_stop(argc - 1, argv + 1);
	return user_error("unknown subcommand '%s'%s", sub, " (start, status, set, stop)");
}
