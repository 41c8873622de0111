#include "devices/debug_exit.h"

#include <string.h>

int debug_exit_io(void *dev, unsigned vcpu, uint64_t offset, uint8_t *data, unsigned len, bool is_write)
{
	struct debug_exit *d = dev;
	(void)offset;
	if (!is_write) {
		memset(data, 0xff, len); /* reads as an empty bus */
		return 0;
	}
	uint32_t v = 0;
	memcpy(&v, data, len < 4 ? len : 4);
	d->on_exit(d->opaque, vcpu, v);
	return 0;
}
