/*
 * A domain's directory, reached only through directories that nobody but
 * root and this process's user can change. Whoever can rename a directory
 * on the way, or write into the domain's own, can put their own agent's
 * socket where members dial, or aim the agent's pid file and mode changes
 * at a file of ours (SECURITY.md, "Who may do what").
 */
#ifndef VMM_DOMAIN_DIR_TRUST_H
#define VMM_DOMAIN_DIR_TRUST_H

#include <stddef.h>
#include <sys/types.h>

/* The mode the agent gives its domain's directory: the group may enter and
 * connect (the socket is 0660) but not write, so no one but the agent's user
 * can swap the socket or the pid file. */
#define DOM_DIR_MODE 0750

/*
 * Opens path as a directory fd (O_RDONLY|O_DIRECTORY|O_CLOEXEC), walking
 * it from / one component at a time: each must be a directory owned by
 * root or by geteuid(), not writable by group or others unless sticky
 * (/tmp); a symbolic link is followed only when root owns it (/var/run).
 * create_mode >= 0: missing components are made (0755, the last one
 * create_mode), and the last one, when ours, is given create_mode first.
 * *owner: the last directory's owner. -ENOENT (a component is missing),
 * -EPERM (one is not trusted), -errno; why names the directory and the
 * reason.
 */
int dom_dir_open(const char *path, int create_mode, uid_t *owner, char *why, size_t len);

/* The pid agent.pid in dirfd names (read without following a link), or 0
 * when there is none or it says nothing. */
long dom_pid_file_read(int dirfd);

/* Whether an agent running as uid may be trusted by this process: root, or
 * this process's own user. */
int dom_uid_trusted(uid_t uid);

#endif
