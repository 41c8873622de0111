/*
 * lib/guest_mem.h: the one guest-address check that devices, hypercalls and
 * steal time share, so its rules are tested here once: the end of memory,
 * len 0, sums that would wrap, and ranges that straddle regions.
 */
#include <stdint.h>

#include "check.h"
#include "lib/guest_mem.h"

#define RAM 8192u

int main(void)
{
	static uint8_t ram[3 * RAM];
	struct guest_mem gm;
	guest_mem_init_flat(&gm, ram, RAM);

	/* the end of memory: the last byte is in, one more is out */
	CHECK(guest_mem_ptr(&gm, 0, RAM) == ram);
	CHECK(guest_mem_ptr(&gm, RAM - 1, 1) == ram + RAM - 1);
	CHECK(guest_mem_ptr(&gm, RAM - 1, 2) == NULL);
	CHECK(guest_mem_ptr(&gm, 0, RAM + 1) == NULL);
	CHECK(guest_mem_ptr(&gm, RAM, 1) == NULL);
	CHECK(guest_mem_ptr(&gm, RAM + 4096, 4) == NULL);

	/* len 0: an empty range is fine where the guest has memory, not past it */
	CHECK(guest_mem_ptr(&gm, 0, 0) == ram);
	CHECK(guest_mem_ptr(&gm, RAM - 1, 0) == ram + RAM - 1);
	CHECK(guest_mem_ptr(&gm, RAM, 0) == NULL);
	CHECK(guest_mem_ptr(&gm, UINT64_MAX, 0) == NULL);

	/* gpa + len would wrap past 2^64: refused, never a small sum */
	CHECK(guest_mem_ptr(&gm, UINT64_MAX, 2) == NULL);
	CHECK(guest_mem_ptr(&gm, UINT64_MAX - 63, 64) == NULL);
	CHECK(guest_mem_ptr(&gm, 16, UINT64_MAX) == NULL);
	CHECK(guest_mem_ptr(&gm, 16, UINT64_MAX - 15) == NULL);
	CHECK(guest_mem_ptr(&gm, 1, UINT64_MAX) == NULL);

	/* regions: a range must lie wholly in one; the gap and a region's end are outside */
	struct guest_mem two = { 2, { { 0, 4096, ram }, { 1ull << 32, 4096, ram + RAM } } };
	CHECK(guest_mem_ptr(&two, 10, 10) == ram + 10);
	CHECK(guest_mem_ptr(&two, (1ull << 32) + 10, 10) == ram + RAM + 10);
	CHECK(guest_mem_ptr(&two, (1ull << 32) + 4095, 1) == ram + RAM + 4095);
	CHECK(guest_mem_ptr(&two, (1ull << 32) + 4095, 2) == NULL);
	CHECK(guest_mem_ptr(&two, 4000, 200) == NULL);
	CHECK(guest_mem_ptr(&two, 4096, 0) == NULL);
	CHECK(guest_mem_ptr(&two, 8192, 1) == NULL);
	CHECK(guest_mem_ptr(&two, (1ull << 32) - 1, 2) == NULL);
	CHECK(guest_mem_ptr(&two, (1ull << 32) - 1, 0) == NULL);

	/* no regions: nothing is guest memory */
	struct guest_mem none = { 0 };
	CHECK(guest_mem_ptr(&none, 0, 0) == NULL);
	return check_summary();
}
