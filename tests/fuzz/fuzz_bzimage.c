/* libFuzzer: the bzImage loader (vmm/linux/boot_linux.c) on arbitrary images.
 * Bytes 0..6 choose the load request: guest RAM (16..79 MiB) and how much of
 * it the VMM keeps, the command line's length (a run of 'a', up to just past
 * LINUX_CMDLINE_MAX) and the initrd's (up to 1 MiB); the rest is the image.
 * Guest RAM is the top of one 80 MiB allocation made once (a fresh 80 MiB
 * per input ran at 250 inputs/s), so the end of guest memory is the end of
 * the allocation; the command line and the initrd are malloc'd at exactly
 * their sizes: ASan sees any access past them the checks should have refused. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/linux/boot_linux.h"

#define HDR 7
#define INITRD_MAX (1u << 20)
#define MEM_MAX (80ull << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HDR)
		return 0;
	uint64_t mem_size = (16ull + (data[0] & 63)) << 20;
	uint64_t ram_end = mem_size - ((uint64_t)(data[1] & 3) << 20);
	size_t clen = (size_t)(data[2] | data[3] << 8) + (data[1] & 0x80 ? 0x10000 - 0x100 : 0);
	size_t ilen = (size_t)(data[4] | data[5] << 8 | data[6] << 16) % (INITRD_MAX + 1);
	const uint8_t *img = data + HDR;
	size_t len = size - HDR;

	struct bzimage bz;
	char why[256] = "";
	if (bzimage_parse(img, len, &bz, why, sizeof(why)) != 0) {
		if (!why[0])
			abort(); /* a refusal always says why */
		return 0;
	}
	if (bz.setup_size > len || bz.kernel_size > len - bz.setup_size || bz.hdr_end > bz.setup_size ||
	    bz.init_size < bz.kernel_size || strlen(bz.kernel_version) >= sizeof(bz.kernel_version))
		abort(); /* what bzimage_parse promises linux_load */

	static uint8_t *ram;
	if (!ram && !(ram = malloc(MEM_MAX)))
		return 0;
	uint8_t *mem = ram + (MEM_MAX - mem_size);
	char *cmdline = malloc(clen + 1);
	uint8_t *initrd = ilen ? malloc(ilen) : NULL;
	if (!cmdline || (ilen && !initrd))
		goto out;
	memset(cmdline, 'a', clen);
	cmdline[clen] = '\0';
	if (ilen) {
		memset(initrd, 0x5a, ilen);
	}
	struct linux_load_req req = { .mem_size = mem_size, .ram_end = ram_end, .cmdline = cmdline,
				      .initrd = initrd, .initrd_len = ilen, .acpi_rsdp = LINUX_ACPI_GPA,
				      .acpi_end = LINUX_ACPI_GPA + 0x1000 };
	struct linux_load_out o;
	why[0] = '\0';
	struct guest_mem gm;
	guest_mem_init_flat(&gm, mem, mem_size);
	if (linux_load(&gm, img, len, &bz, &req, &o, why, sizeof(why)) == 0) {
		if (o.kernel_end > ram_end || o.load_addr < LINUX_HIGH_MEM || o.entry != o.load_addr + 0x200 ||
		    (ilen && (o.initrd_gpa < o.kernel_end || o.initrd_gpa + o.initrd_size > ram_end ||
			      o.initrd_gpa + o.initrd_size - 1 > bz.initrd_addr_max)) ||
		    o.ne820 > sizeof(o.e820) / sizeof(o.e820[0]))
			abort(); /* outside what the kernel asked for or what the VMM gave */
		if (linux_write_entry_tables(&gm))
			abort(); /* the tables' place is fixed and always inside 16 MiB */
	} else if (!why[0]) {
		abort();
	}
out:
	free(initrd);
	free(cmdline);
	return 0;
}
