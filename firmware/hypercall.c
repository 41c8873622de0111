#include "firmware/hypercall.h"

uint64_t fw_hc_base = VMM_HC_BASE;
/* For entry.S, which cannot include abi.h (C enums). */
const uint64_t fw_hc_exit_offset = 8 * VMM_HC_EXIT;

void fw_exit(uint32_t status)
{
	fw_hc(VMM_HC_EXIT, status, 0, 0, 0);
	/* The ABI says EXIT does not return; if a VMM lets it, make it loud. */
	for (;;)
		__builtin_trap();
}
