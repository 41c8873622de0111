/* Finds lock kinds by name among those registered (linker.ld .fw_locks). */
#include <string.h>

#include "firmware/console.h"
#include "firmware/lock.h"

extern const struct lock_ops *const __fw_locks_start[], *const __fw_locks_end[];

const struct lock_ops *fw_lock_find(const char *name)
{
	for (const struct lock_ops *const *p = __fw_locks_start; p < __fw_locks_end; p++)
		if (!strcmp((*p)->name, name))
			return *p;
	return NULL;
}

const char *fw_lock_names(char *buf, unsigned len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (const struct lock_ops *const *p = __fw_locks_start; p < __fw_locks_end; p++)
		n += fw_snprintf(buf + n, len - n, "%s%s", n ? ", " : "", (*p)->name);
	return buf;
}
