#include "devices/pc_legacy.h"

#include <string.h>


int pc_kbc_io(void *dev, unsigned vcpu, uint64_t offset, uint8_t *data, unsigned len, bool is_write)
{
	struct pc_legacy *p = dev;
	if (!is_write) {
		memset(data, 0, len); /* no byte waiting, input buffer empty */
		return 0;
	}
	(void)offset;
	if (data[0] == PC_KBC_RESET && p->power)
		p->power(p->opaque, vcpu, PC_POWER_RESET);
	return 0;
}

int pc_kbc_data_io(void *dev, unsigned vcpu, uint64_t offset, uint8_t *data, unsigned len, bool is_write)
{
	(void)dev, (void)vcpu, (void)offset;
	if (!is_write)
		memset(data, 0, len);
	return 0;
}

/* Every CMOS register reads 0, so the index the guest selects at 0x70 needs
 * no keeping: writes to either port are dropped. */
int pc_cmos_io(void *dev, unsigned vcpu, uint64_t offset, uint8_t *data, unsigned len, bool is_write)
{
	(void)dev, (void)vcpu, (void)offset;
	if (!is_write)
		memset(data, 0, len);
	return 0;
}

int pc_acpi_sleep_io(void *dev, unsigned vcpu, uint64_t offset, uint8_t *data, unsigned len, bool is_write)
{
	struct pc_legacy *p = dev;
	(void)offset;
	if (!is_write) {
		memset(data, 0, len); /* sleep status: never "woken" */
		return 0;
	}
	uint8_t v = data[0];
	if ((v & ACPI_SLP_EN) && ((v >> 2) & 7) == ACPI_SLP_TYP_S5 && p->power)
		p->power(p->opaque, vcpu, PC_POWER_OFF);
	return 0;
}
