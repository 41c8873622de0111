#include "vmm/domain/paths.h"

#include "vmm/domain/dir_trust.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

int dom_name_check(const char *name, char *why, size_t len)
{
	size_t n = strlen(name);
	if (n == 0 || n > 31 || name[0] == '.') {
		snprintf(why, len, "domain name '%s': 1 to 31 characters, not starting with '.'", name);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '-' || c == '.')) {
			snprintf(why, len, "domain name '%s': only letters, digits, '_', '-' and '.'", name);
			return -EINVAL;
		}
	}
	return 0;
}

static int dom_base_dir(char *buf, size_t len)
{
	const char *env = getenv(DOM_DIR_ENV);
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;
	if (env && env[0])
		n = snprintf(buf, len, "%s", env);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/run/vmm/domain");
	else if (xdg && xdg[0] == '/')
		n = snprintf(buf, len, "%s/vmm/domain", xdg);
	else
		n = snprintf(buf, len, "/tmp/vmm-%u/domain", (unsigned)geteuid());
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int dom_path(const char *name, const char *leaf, char *buf, size_t len)
{
	char base[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int rc = dom_base_dir(base, sizeof(base));
	if (rc)
		return rc;
	int n = leaf ? snprintf(buf, len, "%s/%s/%s", base, name, leaf) : snprintf(buf, len, "%s/%s", base, name);
	/* every path here may become a socket address */
	if (n < 0 || (size_t)n >= len || (size_t)n >= sizeof(base))
		return -ENAMETOOLONG;
	return 0;
}

/* The agent is whoever called listen() on the socket (SO_PEERCRED): a
 * socket in a trusted directory has a trusted listener, but a restarted
 * agent is dialled from a sandboxed thread without the directory walk. */
static int peer_check(int fd, const char *domain, char *why, size_t len)
{
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0) {
		snprintf(why, len, "domain '%s': who is the agent: %s", domain, strerror(errno));
		return -errno;
	}
	if (!dom_uid_trusted(cr.uid)) {
		snprintf(why, len, "domain '%s': the agent's socket is held by pid %d of uid %u, not by root or uid %u: not joined",
			 domain, (int)cr.pid, (unsigned)cr.uid, (unsigned)geteuid());
		return -EPERM;
	}
	return 0;
}

static int dial_path(const char *domain, const char *path, char *why, size_t len)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(why, len, "socket: %s", strerror(errno));
		return -errno;
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		if (e == ENOENT || e == ECONNREFUSED) {
			snprintf(why, len, "no domain '%s' is running (no agent at %s); start one with `vmm domain start %s --pcpus LIST`",
				 domain, path, domain);
			return -ENOENT;
		}
		if (e == EACCES || e == EPERM) {
			snprintf(why, len, "domain '%s': permission denied on %s (see SECURITY.md: the domain's group)",
				 domain, path);
			return -EACCES;
		}
		snprintf(why, len, "domain '%s': connect %s: %s", domain, path, strerror(e));
		return -e;
	}
	int rc = peer_check(fd, domain, why, len);
	if (rc) {
		close(fd);
		return rc;
	}
	/* a hung agent must not hang a join, a status or a set */
	struct timeval tv = { .tv_sec = DOM_DIAL_TIMEOUT_S };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

static int sock_path(const char *domain, char *path, size_t plen, char *why, size_t len)
{
	int rc = dom_name_check(domain, why, len);
	if (rc)
		return rc;
	if (dom_path(domain, "ctl.sock", path, plen)) {
		snprintf(why, len, "--domain %s: the socket path is too long", domain);
		return -ENAMETOOLONG;
	}
	return 0;
}

int dom_dial(const char *domain, char *why, size_t len)
{
	char path[108], dir[108];
	int rc = sock_path(domain, path, sizeof(path), why, len);
	if (rc)
		return rc;
	if (dom_path(domain, NULL, dir, sizeof(dir)))
		return -ENAMETOOLONG; /* not reached: the socket's longer path fitted */
	uid_t owner;
	char dwhy[256];
	int dfd = dom_dir_open(dir, -1, &owner, dwhy, sizeof(dwhy));
	if (dfd == -ENOENT) {
		snprintf(why, len, "no domain '%s' is running (no directory %s); start one with `vmm domain start %s --pcpus LIST`",
			 domain, dir, domain);
		return -ENOENT;
	}
	if (dfd < 0) {
		snprintf(why, len, "domain '%s': not joined: %s", domain, dwhy);
		return dfd == -EACCES ? -EACCES : -EPERM;
	}
	close(dfd);
	return dial_path(domain, path, why, len);
}

int dom_redial(const char *domain, char *why, size_t len)
{
	char path[108];
	int rc = sock_path(domain, path, sizeof(path), why, len);
	return rc ? rc : dial_path(domain, path, why, len);
}
