/* The ELF loader refuses every malformed image with a reason, and loads good ones exactly. */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "vmm/boot/elf_loader.h"

extern const uint8_t vmm_firmware_start[], vmm_firmware_end[];

#define LIMIT (64ull << 20)

struct img {
	Elf64_Ehdr eh;
	Elf64_Phdr ph[2];
	uint8_t code[64];
};

/* A minimal valid image: one RX segment at 1 MiB with 64 bytes and 4 KiB of BSS. */
static void make_good(struct img *m)
{
	memset(m, 0, sizeof(*m));
	memcpy(m->eh.e_ident, ELFMAG, SELFMAG);
	m->eh.e_ident[EI_CLASS] = ELFCLASS64;
	m->eh.e_ident[EI_DATA] = ELFDATA2LSB;
	m->eh.e_ident[EI_VERSION] = EV_CURRENT;
	m->eh.e_type = ET_EXEC;
	m->eh.e_machine = EM_X86_64;
	m->eh.e_version = EV_CURRENT;
	m->eh.e_entry = 0x100010;
	m->eh.e_phoff = offsetof(struct img, ph);
	m->eh.e_phentsize = sizeof(Elf64_Phdr);
	m->eh.e_phnum = 1;
	m->eh.e_ehsize = sizeof(Elf64_Ehdr);
	m->ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X,
				 .p_offset = offsetof(struct img, code), .p_vaddr = 0x100000,
				 .p_paddr = 0x100000, .p_filesz = 64, .p_memsz = 4096 + 64 };
	for (unsigned i = 0; i < sizeof(m->code); i++)
		m->code[i] = (uint8_t)(i + 1);
}

static int check(const struct img *m, size_t size, char *err)
{
	struct elf_image out;
	err[0] = '\0';
	return elf_validate((const uint8_t *)m, size, LIMIT, &out, err, 200);
}

static void test_good_loads(void)
{
	struct img m;
	struct elf_image out;
	char err[200];
	make_good(&m);
	CHECK_EQ(elf_validate((uint8_t *)&m, sizeof(m), LIMIT, &out, err, sizeof(err)), 0);
	CHECK_EQ(out.entry, 0x100010);
	CHECK_EQ(out.lowest, 0x100000);
	CHECK_EQ(out.highest, 0x100000 + 4096 + 64);
	uint8_t *mem = malloc(2 << 20);
	memset(mem, 0xaa, 2 << 20);
	elf_copy_segments((uint8_t *)&m, mem);
	CHECK(!memcmp(mem + 0x100000, m.code, 64));
	CHECK(mem[0x100000 + 64] == 0 && mem[0x100000 + 4096 + 63] == 0); /* BSS zeroed */
	CHECK(mem[0x100000 + 4096 + 64] == 0xaa);                         /* and no further */
	free(mem);
}

static void test_bad_images(void)
{
	struct img m;
	char err[200];

	make_good(&m);
	CHECK_EQ(check(&m, 3, err), -ENOEXEC);
	CHECK(strstr(err, "not an ELF"));
	CHECK_EQ(check(&m, 40, err), -ENOEXEC);
	CHECK(strstr(err, "truncated"));
	m.eh.e_ident[1] = 'X';
	CHECK_EQ(check(&m, sizeof(m), err), -ENOEXEC);

	make_good(&m);
	m.eh.e_ident[EI_CLASS] = ELFCLASS32;
	CHECK_EQ(check(&m, sizeof(m), err), -ENOEXEC);
	CHECK(strstr(err, "64-bit"));

	make_good(&m);
	m.eh.e_machine = EM_AARCH64;
	CHECK_EQ(check(&m, sizeof(m), err), -ENOEXEC);
	CHECK(strstr(err, "x86-64"));

	make_good(&m);
	m.eh.e_type = ET_DYN;
	CHECK_EQ(check(&m, sizeof(m), err), -ENOEXEC);

	make_good(&m);
	m.eh.e_phnum = 0;
	CHECK_EQ(check(&m, sizeof(m), err), -ENOEXEC);

	make_good(&m);
	m.eh.e_phentsize = 32;
	CHECK_EQ(check(&m, sizeof(m), err), -ENOEXEC);

	make_good(&m);
	m.eh.e_phoff = 0xffffffffffffff00ull; /* offset arithmetic must not wrap */
	CHECK_EQ(check(&m, sizeof(m), err), -ENOEXEC);

	make_good(&m); /* the file ends before the segment's bytes */
	CHECK_EQ(check(&m, offsetof(struct img, code) + 10, err), -ENOEXEC);
	CHECK(strstr(err, "past end of file"));

	make_good(&m);
	m.ph[0].p_offset = 0xfffffffffffffff0ull;
	CHECK_EQ(check(&m, sizeof(m), err), -ENOEXEC);

	make_good(&m);
	m.ph[0].p_filesz = m.ph[0].p_memsz + 1;
	CHECK_EQ(check(&m, sizeof(m), err), -ENOEXEC);

	make_good(&m); /* segment beyond guest memory */
	m.ph[0].p_paddr = LIMIT - 100;
	m.eh.e_entry = LIMIT - 90;
	CHECK_EQ(check(&m, sizeof(m), err), -EFBIG);
	CHECK(strstr(err, "outside guest memory"));

	make_good(&m); /* address + size wraps around */
	m.ph[0].p_paddr = 0xfffffffffffff000ull;
	CHECK_EQ(check(&m, sizeof(m), err), -EFBIG);

	make_good(&m);
	m.eh.e_entry = 0x900000;
	CHECK_EQ(check(&m, sizeof(m), err), -ENOEXEC);
	CHECK(strstr(err, "entry point"));

	make_good(&m); /* entry in a non-executable segment */
	m.ph[0].p_flags = PF_R | PF_W;
	CHECK_EQ(check(&m, sizeof(m), err), -ENOEXEC);

	make_good(&m);
	m.ph[0].p_type = PT_NOTE;
	CHECK_EQ(check(&m, sizeof(m), err), -ENOEXEC);
	CHECK(strstr(err, "no loadable"));

	make_good(&m); /* two segments overlapping */
	m.eh.e_phnum = 2;
	m.ph[1] = m.ph[0];
	m.ph[1].p_paddr += 100;
	CHECK_EQ(check(&m, sizeof(m), err), -ENOEXEC);
	CHECK(strstr(err, "overlap"));
}

/* Random corruption of a good image: never a crash, and what passes is in bounds. */
static void test_corruption(void)
{
	struct img m;
	char err[200];
	unsigned seed = 12345, accepted = 0, rejected = 0;
	for (int i = 0; i < 20000; i++) {
		make_good(&m);
		uint8_t *b = (uint8_t *)&m;
		for (int k = 0; k < 1 + (i % 4); k++)
			b[rand_r(&seed) % sizeof(m)] = (uint8_t)rand_r(&seed);
		struct elf_image out;
		size_t size = sizeof(m) - (size_t)(rand_r(&seed) % 8 == 0 ? rand_r(&seed) % sizeof(m) : 0);
		if (elf_validate(b, size, LIMIT, &out, err, sizeof(err)) == 0) {
			accepted++;
			if (out.highest > LIMIT || out.entry < out.lowest || out.entry >= out.highest)
				CHECK(!"accepted image out of bounds");
		} else {
			rejected++;
		}
	}
	CHECK(accepted > 0 && rejected > 0);
}

static void test_bundled_firmware(void)
{
	struct elf_image out;
	char err[200];
	CHECK_EQ(elf_validate(vmm_firmware_start, (size_t)(vmm_firmware_end - vmm_firmware_start),
			      LIMIT, &out, err, sizeof(err)), 0);
	CHECK(out.lowest >= 0x100000);
}

int main(void)
{
	RUN(test_good_loads);
	RUN(test_bad_images);
	RUN(test_corruption);
	RUN(test_bundled_firmware);
	return check_summary();
}
