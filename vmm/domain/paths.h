/*
 * Where a domain's files live, and how to reach its agent: one directory
 * per domain holding the agent's control socket and its pid file. Access to a domain is access to that
 * directory (SECURITY.md): mode 0750, the agent's user and --group, reached
 * only through directories root or the user own (dir_trust.h).
 */
#ifndef VMM_DOMAIN_PATHS_H
#define VMM_DOMAIN_PATHS_H

#include <stddef.h>

#define DOM_DIR_ENV "VMM_DOMAIN_DIR" /* overrides the base directory */
/* Every send to and receive from the agent gives up after this: a healthy
 * agent answers in microseconds; one stopped or wedged must not hang a
 * member's start or an admin's command. */
#define DOM_DIAL_TIMEOUT_S 5

/* 0, or -EINVAL with why filled: 1..31 of [A-Za-z0-9_.-], not starting with '.' */
int dom_name_check(const char *name, char *why, size_t len);
/* base/NAME[/leaf], the base $VMM_DOMAIN_DIR, else /run/vmm/domain as
 * root, else $XDG_RUNTIME_DIR/vmm/domain, else /tmp/vmm-UID/domain; -ENAMETOOLONG past len or past a socket address's limit */
int dom_path(const char *name, const char *leaf, char *buf, size_t len);
/* A connection to domain NAME's agent (send and receive time out after
 * DOM_DIAL_TIMEOUT_S:
 * a hung agent cannot hang its caller), once its directory passed
 * dom_dir_open and its listener is root or this user (SO_PEERCRED). The fd,
 * or -ENOENT (no agent there), -EACCES (the domain's permissions), -EPERM
 * (a directory or agent not trusted), -errno; why says it. */
int dom_dial(const char *domain, char *why, size_t len);
/* The same without the directory walk, for a sandboxed thread that may not
 * open files: the listener's uid is still checked. */
int dom_redial(const char *domain, char *why, size_t len);

#endif
