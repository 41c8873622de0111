/*
 * Out of file descriptors (EMFILE) is the host's limit, not a bug: the
 * error line names RLIMIT_NOFILE and its value, so the user knows to raise
 * `ulimit -n` rather than hunt for a leak.
 */
#ifndef VMM_FD_LIMIT_H
#define VMM_FD_LIMIT_H

#include <stddef.h>

/* "; RLIMIT_NOFILE (ulimit -n) is N" into buf when e is -EMFILE or EMFILE, else ""; buf. */
const char *fd_limit_note(int e, char *buf, size_t len);

#endif
