/*
 * The domain's cgroups (confine.h). Layout, in each hierarchy used:
 *
 *   <the agent's cgroup>/vmm-domain@NAME@AGENTPID/      cpuset: where members may run
 *   <the agent's cgroup>/vmm-domain@NAME@AGENTPID/pid-P/  one member: its weight
 *
 * ('@' is not allowed in domain names, so a name never matches another's
 * prefix.) v2 needs the cpu and cpuset controllers enabled in the agent's
 * cgroup, which the kernel allows only where no process lives in it (the
 * root excepted): if enabling them is refused for that reason, the agent
 * moves itself into a leaf of its own (vmm-agent@NAME@AGENTPID) and tries
 * again, as a delegated service (systemd's Delegate=yes) has to.
 */
#include "vmm/domain/confine.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { H_V2, H_CPUSET, H_CPU, H_N };

struct hier {
	bool found;
	char base[PATH_MAX]; /* the agent's own cgroup in it */
};

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, strlen(text));
	int rc = n < 0 ? -errno : (size_t)n == strlen(text) ? 0 : -EIO;
	close(fd);
	return rc;
}

/* The file's first line, without its newline; -errno. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char *got = fgets(buf, (int)len, f);
	fclose(f);
	if (!got)
		return -EIO;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int join_path(char *out, size_t len, const char *a, const char *b)
{
	int n = snprintf(out, len, "%s/%s", a, b);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Whether the comma- or space-separated list has tok as a whole word. */
static bool has_word(const char *list, const char *tok)
{
	size_t n = strlen(tok);
	for (const char *p = list; (p = strstr(p, tok)); p += n)
		if ((p == list || p[-1] == ',' || p[-1] == ' ') && (p[n] == '\0' || p[n] == ',' || p[n] == ' '))
			return true;
	return false;
}

/* This process's path in the hierarchy /proc/self/cgroup names by ctrl
 * (NULL: the v2 line, "0::"). */
static int own_path(const char *ctrl, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -errno;
	char line[PATH_MAX + 128];
	int rc = -ENOENT;
	while (rc && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c1 = *c2 = '\0';
		bool match = ctrl ? has_word(c1 + 1, ctrl) : (!strcmp(line, "0") && !c1[1]);
		if (match)
			rc = snprintf(out, len, "%s", c2 + 1) < (int)len ? 0 : -ENAMETOOLONG;
	}
	fclose(f);
	return rc;
}

/* The mounts of the v2 hierarchy and of the v1 cpuset and cpu ones, each
 * with the agent's own cgroup in it. */
static void find_hierarchies(struct hier h[H_N])
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return;
	char line[3 * PATH_MAX];
	while (fgets(line, sizeof(line), f)) {
		char root[PATH_MAX], point[PATH_MAX], fstype[64], opts[512];
		const char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2 ||
		    sscanf(dash + 3, "%63s %*s %511s", fstype, opts) != 2)
			continue;
		int k = -1;
		const char *ctrl = NULL;
		if (!strcmp(fstype, "cgroup2"))
			k = H_V2;
		else if (!strcmp(fstype, "cgroup") && has_word(opts, "cpuset"))
			k = H_CPUSET, ctrl = "cpuset";
		else if (!strcmp(fstype, "cgroup") && has_word(opts, "cpu"))
			k = H_CPU, ctrl = "cpu";
		if (k < 0 || h[k].found)
			continue;
		char path[PATH_MAX];
		if (own_path(ctrl, path, sizeof(path)))
			continue;
		/* a mount of a subtree (a container's): the path below its root */
		size_t rl = strlen(root);
		const char *rel = path;
		if (strcmp(root, "/") && !strncmp(path, root, rl) && (path[rl] == '/' || !path[rl]))
			rel = path + rl;
		int n = snprintf(h[k].base, sizeof(h[k].base), "%s%s", point, strcmp(rel, "/") ? rel : "");
		h[k].found = n > 0 && (size_t)n < sizeof(h[k].base);
	}
	fclose(f);
}

/* Dead agents' cgroups of this domain name that nobody lives in any
 * more (an agent that died leaves its members' cgroups: they go here once
 * those members have ended or moved to a new agent). */
static void remove_stale(const char *base, const char *name, const char *mine)
{
	char pre[2][64];
	snprintf(pre[0], sizeof(pre[0]), "vmm-domain@%s@", name);
	snprintf(pre[1], sizeof(pre[1]), "vmm-agent@%s@", name);
	DIR *d = opendir(base);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, pre[0], strlen(pre[0])) && strncmp(e->d_name, pre[1], strlen(pre[1])))
			continue;
		char dir[PATH_MAX];
		if (join_path(dir, sizeof(dir), base, e->d_name) || !strcmp(e->d_name, mine))
			continue;
		/* another live agent of this name (in another domain directory) keeps its own */
		long apid = strtol(strrchr(e->d_name, '@') + 1, NULL, 10);
		if (apid > 0 && (kill((pid_t)apid, 0) == 0 || errno == EPERM))
			continue;
		DIR *sub = opendir(dir);
		struct dirent *s;
		while (sub && (s = readdir(sub))) {
			char child[PATH_MAX];
			if (!strncmp(s->d_name, "pid-", 4) && !join_path(child, sizeof(child), dir, s->d_name))
				rmdir(child); /* EBUSY: a member still runs in it */
		}
		if (sub)
			closedir(sub);
		rmdir(dir);
	}
	closedir(d);
}

static int fail(struct dom_confine *c, int rc, const char *what, const char *path)
{
	int n = snprintf(c->why, sizeof(c->why), "%s %s: %s", what, path, strerror(-rc));
	if (n >= (int)sizeof(c->why)) /* a long path: its end is the part that says most */
		snprintf(c->why, sizeof(c->why), "%s ...%s: %s", what, path + strlen(path) - 120, strerror(-rc));
	return rc;
}

/* Enables cpu and cpuset for dir's children (v2). */
static int enable_controllers(const char *dir)
{
	char p[PATH_MAX], have[256];
	if (join_path(p, sizeof(p), dir, "cgroup.subtree_control"))
		return -ENAMETOOLONG;
	if (!read_line(p, have, sizeof(have)) && has_word(have, "cpu") && has_word(have, "cpuset"))
		return 0;
	return write_file(p, "+cpu +cpuset");
}

static int move_pid(const char *dir, pid_t pid)
{
	char p[PATH_MAX], num[24];
	if (join_path(p, sizeof(p), dir, "cgroup.procs"))
		return -ENAMETOOLONG;
	snprintf(num, sizeof(num), "%d", (int)pid);
	return write_file(p, num);
}

static int make_dir(const char *dir)
{
	return mkdir(dir, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

static int setup_v2(struct dom_confine *c, const char *base, const char *leaf, const char *name)
{
	char p[PATH_MAX];
	if (join_path(p, sizeof(p), base, "cgroup.controllers"))
		return fail(c, -ENAMETOOLONG, "path", base);
	char have[256];
	int rc = read_line(p, have, sizeof(have));
	if (rc)
		return fail(c, rc, "cannot read", p);
	if (!has_word(have, "cpu") || !has_word(have, "cpuset"))
		return fail(c, -EOPNOTSUPP, "no cpu and cpuset controllers in", base);
	rc = enable_controllers(base);
	if (rc == -EBUSY) { /* processes live here: the agent moves into a leaf */
		char me[PATH_MAX], agent_leaf[96];
		snprintf(agent_leaf, sizeof(agent_leaf), "vmm-agent@%s@%d", name, (int)getpid());
		if (join_path(me, sizeof(me), base, agent_leaf) || make_dir(me) || move_pid(me, getpid()))
			return fail(c, rc, "cannot enable cpu and cpuset in", base);
		rc = enable_controllers(base);
		if (rc) { /* others live there too: back where it was */
			move_pid(base, getpid());
			rmdir(me);
		}
	}
	if (rc)
		return fail(c, rc, "cannot enable cpu and cpuset in", base);
	if (join_path(c->dir[0], sizeof(c->dir[0]), base, leaf))
		return fail(c, -ENAMETOOLONG, "path", base);
	rc = make_dir(c->dir[0]);
	if (rc)
		return fail(c, rc, "cannot create", c->dir[0]);
	c->ndirs = 1;
	if (join_path(p, sizeof(p), c->dir[0], "cpuset.cpus"))
		return fail(c, -ENAMETOOLONG, "path", c->dir[0]);
	rc = write_file(p, c->cpus);
	if (!rc)
		rc = enable_controllers(c->dir[0]);
	return rc ? fail(c, rc, "cannot set up", c->dir[0]) : 0;
}

/* v1 cpusets start empty: a new one takes its parent's memory nodes. */
static int cpuset_v1_fill(const char *parent, const char *dir, const char *cpus)
{
	char p[PATH_MAX], mems[256];
	if (join_path(p, sizeof(p), parent, "cpuset.mems"))
		return -ENAMETOOLONG;
	int rc = read_line(p, mems, sizeof(mems));
	if (!rc && !join_path(p, sizeof(p), dir, "cpuset.mems"))
		rc = write_file(p, mems);
	if (!rc && !join_path(p, sizeof(p), dir, "cpuset.cpus"))
		rc = write_file(p, cpus);
	return rc;
}

static int setup_v1(struct dom_confine *c, const struct hier h[H_N], const char *leaf)
{
	const int which[2] = { H_CPUSET, H_CPU };
	for (int i = 0; i < 2; i++) {
		if (join_path(c->dir[i], sizeof(c->dir[i]), h[which[i]].base, leaf))
			return fail(c, -ENAMETOOLONG, "path", h[which[i]].base);
		int rc = make_dir(c->dir[i]);
		if (rc)
			return fail(c, rc, "cannot create", c->dir[i]);
		c->ndirs = i + 1;
	}
	int rc = cpuset_v1_fill(h[H_CPUSET].base, c->dir[0], c->cpus);
	return rc ? fail(c, rc, "cannot set up", c->dir[0]) : 0;
}

static void cpus_text(char *out, size_t len, const cpu_set_t *cpus)
{
	size_t at = 0;
	out[0] = '\0';
	for (int cpu = 0; cpu < CPU_SETSIZE && at < len; cpu++)
		if (CPU_ISSET(cpu, cpus))
			at += (size_t)snprintf(out + at, len - at, "%s%d", at ? "," : "", cpu);
}

int dom_confine_init(struct dom_confine *c, enum dom_confine_want want, const char *name, const cpu_set_t *cpus)
{
	memset(c, 0, sizeof(*c));
	if (want == DOM_CONFINE_SELF) {
		snprintf(c->why, sizeof(c->why), "--confine self");
		return 0;
	}
	cpus_text(c->cpus, sizeof(c->cpus), cpus);
	snprintf(c->name, sizeof(c->name), "%s", name);
	struct hier h[H_N];
	memset(h, 0, sizeof(h));
	find_hierarchies(h);
	char leaf[96];
	snprintf(leaf, sizeof(leaf), "vmm-domain@%s@%d", name, (int)getpid());
	int rc = -ENOENT;
	if (h[H_V2].found) {
		remove_stale(h[H_V2].base, name, leaf);
		rc = setup_v2(c, h[H_V2].base, leaf, name);
		if (!rc)
			c->version = 2;
	}
	if (rc && h[H_CPUSET].found && h[H_CPU].found) {
		char v2why[sizeof(c->why)];
		snprintf(v2why, sizeof(v2why), "%s", c->why);
		dom_confine_fini(c);
		memset(c->dir, 0, sizeof(c->dir));
		c->ndirs = 0;
		remove_stale(h[H_CPUSET].base, name, leaf);
		remove_stale(h[H_CPU].base, name, leaf);
		rc = setup_v1(c, h, leaf);
		if (!rc)
			c->version = 1;
		else if (v2why[0]) { /* both said why: keep both */
			char v1why[sizeof(c->why)];
			snprintf(v1why, sizeof(v1why), "%s", c->why);
			snprintf(c->why, sizeof(c->why), "v2: %.100s; v1: %.120s", v2why, v1why);
		}
	}
	if (rc && !c->why[0])
		snprintf(c->why, sizeof(c->why), "no cgroup hierarchy with the cpu and cpuset controllers");
	if (rc) {
		dom_confine_fini(c);
		c->ndirs = 0;
		c->version = 0;
		return want == DOM_CONFINE_CGROUP ? rc : 0;
	}
	return 0;
}

static int member_dir(const struct dom_confine *c, int i, pid_t pid, char *out, size_t len)
{
	char leaf[32];
	snprintf(leaf, sizeof(leaf), "pid-%d", (int)pid);
	return join_path(out, len, c->dir[i], leaf);
}

/* cgroup v1's cpu.shares for a v2 weight (100 -> 1024, the default). */
static unsigned long v1_shares(unsigned weight)
{
	unsigned long s = (unsigned long)weight * 1024ul / 100ul;
	return s < 2 ? 2 : s;
}

int dom_confine_weight(struct dom_confine *c, pid_t pid, unsigned weight)
{
	if (!c->version)
		return 0;
	char dir[PATH_MAX], p[PATH_MAX], num[24];
	int i = c->version == 2 ? 0 : 1;
	if (member_dir(c, i, pid, dir, sizeof(dir)) ||
	    join_path(p, sizeof(p), dir, c->version == 2 ? "cpu.weight" : "cpu.shares"))
		return -ENAMETOOLONG;
	snprintf(num, sizeof(num), "%lu", c->version == 2 ? (unsigned long)weight : v1_shares(weight));
	return write_file(p, num);
}

int dom_confine_member(struct dom_confine *c, pid_t pid, unsigned weight)
{
	if (!c->version)
		return 0;
	int rc = 0;
	for (int i = 0; i < c->ndirs && !rc; i++) {
		char dir[PATH_MAX];
		rc = member_dir(c, i, pid, dir, sizeof(dir));
		if (!rc)
			rc = make_dir(dir);
		if (!rc && c->version == 1 && i == 0)
			rc = cpuset_v1_fill(c->dir[0], dir, c->cpus);
	}
	if (!rc)
		rc = dom_confine_weight(c, pid, weight);
	for (int i = 0; i < c->ndirs && !rc; i++) {
		char dir[PATH_MAX];
		rc = member_dir(c, i, pid, dir, sizeof(dir));
		if (!rc)
			rc = move_pid(dir, pid);
	}
	if (rc) {
		dom_confine_release(c, pid);
		return rc;
	}
	/* a member that came from a dead agent of this name left its old
	 * cgroup empty just now */
	for (int i = 0; i < c->ndirs; i++) {
		char base[PATH_MAX];
		snprintf(base, sizeof(base), "%s", c->dir[i]);
		char *slash = strrchr(base, '/');
		if (slash) {
			*slash = '\0';
			remove_stale(base, c->name, slash + 1);
		}
	}
	return 0;
}

/* true: gone (or never there) in every hierarchy */
static bool remove_member(const struct dom_confine *c, pid_t pid)
{
	bool gone = true;
	for (int i = 0; i < c->ndirs; i++) {
		char dir[PATH_MAX];
		if (!member_dir(c, i, pid, dir, sizeof(dir)) && rmdir(dir) < 0 && errno != ENOENT)
			gone = false;
	}
	return gone;
}

void dom_confine_release(struct dom_confine *c, pid_t pid)
{
	if (!c->version || remove_member(c, pid))
		return;
	for (int i = 0; i < c->npending; i++)
		if (c->pending[i] == pid)
			return;
	if (c->npending < DOM_CONFINE_PENDING)
		c->pending[c->npending++] = pid;
	/* else: left for the next agent's remove_stale */
}

bool dom_confine_sweep(struct dom_confine *c)
{
	int k = 0;
	for (int i = 0; i < c->npending; i++)
		if (!remove_member(c, c->pending[i]))
			c->pending[k++] = c->pending[i];
	c->npending = k;
	return k > 0;
}

void dom_confine_fini(struct dom_confine *c)
{
	dom_confine_sweep(c);
	for (int i = 0; i < c->ndirs; i++)
		if (c->dir[i][0])
			rmdir(c->dir[i]); /* EBUSY while members it left behind run */
	/* the agent's own leaf (v2) goes with the next agent's remove_stale */
}

const char *dom_confine_describe(const struct dom_confine *c, char *buf, size_t len)
{
	if (c->version == 2)
		snprintf(buf, len, "cgroup v2 %s", c->dir[0]);
	else if (c->version == 1)
		snprintf(buf, len, "cgroup v1 %s, %s", c->dir[0], c->dir[1]);
	else if (c->why[0])
		snprintf(buf, len, "self (not enforced: %s)", c->why);
	else
		snprintf(buf, len, "self (not enforced)");
	return buf;
}
