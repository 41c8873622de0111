/* libFuzzer: the ELF loader (vmm/boot/elf_loader.c) on arbitrary images. A valid
 * image is copied into guest memory of exactly the size it claims, so ASan
 * sees any write the checks should have refused. */
#include <stdint.h>
#include <stdlib.h>

#include "vmm/boot/elf_loader.h"

#define LIMIT (4ull << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_image img;
	char err[256];
	if (elf_validate(data, size, LIMIT, &img, err, sizeof(err)) != 0)
		return 0;
	if (img.highest > LIMIT || img.lowest > img.highest || img.entry >= LIMIT)
		abort(); /* elf_validate promised [0, limit) */
	uint8_t *mem = malloc(img.highest ? img.highest : 1);
	if (!mem)
		return 0;
	elf_copy_segments(data, mem);
	free(mem);
	return 0;
}
