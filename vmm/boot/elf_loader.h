/*
 * Loading a guest ELF (bundled firmware or --firmware FILE). Every header
 * field the loader relies on is checked before a byte is copied: the image is
 * untrusted input.
 */
#ifndef VMM_ELF_LOADER_H
#define VMM_ELF_LOADER_H

#include <stddef.h>
#include <stdint.h>

#define ELF_MAX_PHDRS 64

struct elf_image {
	uint64_t entry;
	uint64_t lowest, highest; /* guest-physical span of all PT_LOAD segments */
	unsigned nload;
};

/*
 * Checks that img is a 64-bit little-endian x86-64 executable whose PT_LOAD
 * segments lie within [0, limit) and whose entry is inside an executable one.
 * Returns 0 or -ENOEXEC / -EFBIG with one line in err.
 */
int elf_validate(const uint8_t *img, size_t size, uint64_t limit, struct elf_image *out, char *err,
		 size_t errlen);
/* Copies a validated image into guest memory, zeroing each segment's BSS. */
void elf_copy_segments(const uint8_t *img, uint8_t *mem);

#endif
