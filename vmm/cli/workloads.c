#include "vmm/cli/workloads.h"

#include <stdio.h>
#include <string.h>

const char *const vmm_workload_names[] = { "lockbench", "shootdown", "barrier", "hcbench",
					    "preempt", "spswitch", "kicklat", NULL };
const char *const vmm_lock_names[] = { "ticket", "tas", "pvticket", "mcs", "pvmcs", NULL };

bool vmm_name_in(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (!strcmp(*list, name))
			return true;
	return false;
}

const char *vmm_name_list(const char *const *list, char *buf, unsigned len)
{
	unsigned used = 0;
	buf[0] = '\0';
	for (; *list && used < len; list++) {
		int n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", *list);
		if (n < 0)
			break;
		used += (unsigned)n;
	}
	return buf;
}
