#include "vmm/boot/elf_loader.h"

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "lib/errmsg.h"

/* Header reads go through memcpy: the image buffer need not be aligned. */
static Elf64_Phdr phdr_at(const uint8_t *img, const Elf64_Ehdr *eh, unsigned i)
{
	Elf64_Phdr ph;
	memcpy(&ph, img + eh->e_phoff + (uint64_t)i * sizeof(ph), sizeof(ph));
	return ph;
}

int elf_validate(const uint8_t *img, size_t size, uint64_t limit, struct elf_image *out, char *err,
		 size_t errlen)
{
	Elf64_Ehdr eh;
	memset(out, 0, sizeof(*out));
	if (size < EI_NIDENT || memcmp(img, ELFMAG, SELFMAG))
		return errmsg(err, errlen, -ENOEXEC, "not an ELF file");
	if (size < sizeof(eh))
		return errmsg(err, errlen, -ENOEXEC, "truncated ELF header (%zu bytes)", size);
	memcpy(&eh, img, sizeof(eh));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return errmsg(err, errlen, -ENOEXEC, "not a 64-bit little-endian ELF");
	if (eh.e_machine != EM_X86_64)
		return errmsg(err, errlen, -ENOEXEC, "ELF machine %u is not x86-64", eh.e_machine);
	if (eh.e_type != ET_EXEC)
		return errmsg(err, errlen, -ENOEXEC, "ELF type %u is not an executable (ET_EXEC)", eh.e_type);
	if (eh.e_version != EV_CURRENT || eh.e_ident[EI_VERSION] != EV_CURRENT)
		return errmsg(err, errlen, -ENOEXEC, "unknown ELF version");
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > ELF_MAX_PHDRS)
		return errmsg(err, errlen, -ENOEXEC, "bad program header table (%u entries of %u bytes)",
			   eh.e_phnum, eh.e_phentsize);
	if (eh.e_phoff > size || (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > size - eh.e_phoff)
		return errmsg(err, errlen, -ENOEXEC, "truncated ELF: program headers past end of file");

	out->lowest = UINT64_MAX;
	bool entry_ok = false;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph = phdr_at(img, &eh, i);
		if (ph.p_type != PT_LOAD || ph.p_memsz == 0)
			continue;
		if (ph.p_filesz > ph.p_memsz)
			return errmsg(err, errlen, -ENOEXEC, "segment %u: file size exceeds memory size", i);
		if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset)
			return errmsg(err, errlen, -ENOEXEC, "truncated ELF: segment %u past end of file", i);
		if (ph.p_paddr > limit || ph.p_memsz > limit - ph.p_paddr)
			return errmsg(err, errlen, -EFBIG,
				   "segment %u (0x%llx..0x%llx) lies outside guest memory (usable 0..0x%llx)", i,
				   (unsigned long long)ph.p_paddr,
				   (unsigned long long)(ph.p_paddr + ph.p_memsz),
				   (unsigned long long)limit);
		for (unsigned j = 0; j < i; j++) {
			Elf64_Phdr q = phdr_at(img, &eh, j);
			if (q.p_type == PT_LOAD && q.p_memsz && ph.p_paddr < q.p_paddr + q.p_memsz &&
			    q.p_paddr < ph.p_paddr + ph.p_memsz)
				return errmsg(err, errlen, -ENOEXEC, "segments %u and %u overlap", j, i);
		}
		/* Identity-mapped guest: the entry is checked against the physical span. */
		if ((ph.p_flags & PF_X) && eh.e_entry >= ph.p_paddr && eh.e_entry - ph.p_paddr < ph.p_memsz)
			entry_ok = true;
		if (ph.p_paddr < out->lowest)
			out->lowest = ph.p_paddr;
		if (ph.p_paddr + ph.p_memsz > out->highest)
			out->highest = ph.p_paddr + ph.p_memsz;
		out->nload++;
	}
	if (!out->nload)
		return errmsg(err, errlen, -ENOEXEC, "ELF has no loadable segment");
	if (!entry_ok)
		return errmsg(err, errlen, -ENOEXEC, "entry point 0x%llx is not inside an executable segment",
			   (unsigned long long)eh.e_entry);
	out->entry = eh.e_entry;
	return 0;
}

void elf_copy_segments(const uint8_t *img, uint8_t *mem)
{
	Elf64_Ehdr eh;
	memcpy(&eh, img, sizeof(eh));
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph = phdr_at(img, &eh, i);
		if (ph.p_type != PT_LOAD || ph.p_memsz == 0)
			continue;
		memcpy(mem + ph.p_paddr, img + ph.p_offset, ph.p_filesz);
		memset(mem + ph.p_paddr + ph.p_filesz, 0, ph.p_memsz - ph.p_filesz);
	}
}
