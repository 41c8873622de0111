#include "devices/debug_exit.h"

#include <string.h>

#include "lib/bytes.h"

int debug_exit_io(void *dev, unsigned vcpu, uint64_t offset, uint8_t *data, unsigned len, bool is_write)
{
	struct debug_exit *d = dev;
	(void)offset;
	if (!is_write) {
		memset(data, 0xff, len); /* reads as an empty bus */
		return 0;
	}
	d->on_exit(d->opaque, vcpu, (uint32_t)get_le(data, len < 4 ? len : 4));
	return 0;
}
