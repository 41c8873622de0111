#include "vmm/domain/dir_trust.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int dom_uid_trusted(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

static int fail(char *why, size_t len, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *why, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return rc;
}

/* The rule for one directory on the way, by its fstat. */
static int trusted(const struct stat *st, const char *where, char *why, size_t len)
{
	if (!dom_uid_trusted(st->st_uid))
		return fail(why, len, -EPERM, "%s is owned by uid %u, not by root or uid %u", where, (unsigned)st->st_uid,
			    (unsigned)geteuid());
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
		return fail(why, len, -EPERM, "%s is writable by its group or others (mode %04o)", where,
			    (unsigned)(st->st_mode & 07777));
	return 0;
}

/* One step down from fd to the component name; the new fd or -errno. */
static int step(int fd, const char *name, const char *where, int mode, bool last, char *why, size_t len)
{
	struct stat st;
	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT || mode < 0)
			return fail(why, len, -errno, "%s: %s", where, strerror(errno));
		if (mkdirat(fd, name, last ? (mode_t)mode : 0755) < 0 && errno != EEXIST)
			return fail(why, len, -errno, "cannot create %s: %s", where, strerror(errno));
		if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return fail(why, len, -errno, "cannot look at %s: %s", where, strerror(errno));
	}
	int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
	if (S_ISLNK(st.st_mode)) {
		if (st.st_uid != 0)
			return fail(why, len, -EPERM, "%s is a symbolic link owned by uid %u (only root's are followed)", where,
				    (unsigned)st.st_uid);
	} else {
		flags |= O_NOFOLLOW; /* nothing may swap it for a link between the look and the open */
	}
	int nfd = openat(fd, name, flags);
	if (nfd < 0)
		return fail(why, len, -errno, "cannot open %s: %s", where, strerror(errno));
	int rc = fstat(nfd, &st) < 0 ? -errno : 0;
	if (!rc && last && mode >= 0 && st.st_uid == geteuid() && (st.st_mode & 07777) != (mode_t)mode) {
		rc = fchmod(nfd, (mode_t)mode) < 0 ? -errno : 0;
		if (!rc)
			rc = fstat(nfd, &st) < 0 ? -errno : 0;
	}
	if (rc) {
		snprintf(why, len, "cannot set up %s: %s", where, strerror(-rc));
	} else {
		rc = trusted(&st, where, why, len);
	}
	if (rc) {
		close(nfd);
		return rc;
	}
	return nfd;
}

long dom_pid_file_read(int dirfd)
{
	char buf[32] = "";
	int fd = dirfd < 0 ? -1 : openat(dirfd, "agent.pid", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	long pid = strtol(buf, NULL, 10);
	return pid > 0 ? pid : 0;
}

int dom_dir_open(const char *path, int create_mode, uid_t *owner, char *why, size_t len)
{
	char buf[4096];
	if (path[0] != '/' || strlen(path) >= sizeof(buf)) {
		snprintf(why, len, "the domain directory '%s' is not an absolute path", path);
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", path);
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return fail(why, len, -errno, "cannot open /: %s", strerror(errno));
	struct stat st;
	int rc = fstat(fd, &st) < 0 ? -errno : trusted(&st, "/", why, len);
	char *p = buf + 1;
	while (!rc && *p) {
		char *end = strchr(p, '/');
		if (end)
			*end = '\0';
		bool last = !end || !end[1 + strspn(end + 1, "/")];
		if (!strcmp(p, "..")) {
			snprintf(why, len, "the domain directory '%s' has a '..' in it", path);
			rc = -EINVAL;
			break;
		}
		if (*p && strcmp(p, ".")) {
			int nfd = step(fd, p, buf, create_mode, last, why, len);
			if (nfd < 0) {
				rc = nfd;
				break;
			}
			close(fd);
			fd = nfd;
		}
		if (!end)
			break;
		*end = '/';
		p = end + 1;
	}
	if (!rc && fstat(fd, &st) < 0)
		rc = -errno;
	if (rc) {
		close(fd);
		return rc;
	}
	*owner = st.st_uid;
	return fd;
}
