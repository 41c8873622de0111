#include "vmm/host/fd_limit.h"

#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>

const char *fd_limit_note(int e, char *buf, size_t len)
{
	struct rlimit rl;
	if (!len)
		return buf;
	buf[0] = '\0';
	if ((e == EMFILE || e == -EMFILE) && getrlimit(RLIMIT_NOFILE, &rl) == 0)
		snprintf(buf, len, "; RLIMIT_NOFILE (ulimit -n) is %llu, too few for this run",
			 (unsigned long long)rl.rlim_cur);
	return buf;
}
