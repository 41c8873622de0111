/*
 * The Linux boot-protocol loader (vmm/linux/boot_linux.c) and the ACPI tables
 * (vmm/linux/acpi.c), without /dev/kvm: synthetic setup headers with every field
 * wrong in turn, and, when VMM_TEST_BZIMAGE names a real kernel
 * (tests/linux/fetch_kernel.sh caches Debian's under build/linux), that
 * kernel and thousands of corrupted copies of it: each is either accepted
 * and loaded inside guest memory, or refused with a message; never a crash
 * (run under ASan by `make sanitize`).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bytes.h"
#include "tests/unit/check.h"
#include "vmm/linux/acpi.h"
#include "vmm/linux/boot_linux.h"
#include "vmm/host/file.h"

#define MEM (256ull << 20)
#define RAM_END (MEM - (2ull << 20))


/* A well-formed image: 4 setup sectors + 1 boot sector, then a 64 KiB "kernel". */
/* The test's RAM as the loader takes it. */
static const struct guest_mem *flat(uint8_t *mem)
{
	static struct guest_mem g;
	guest_mem_init_flat(&g, mem, MEM);
	return &g;
}

static uint8_t *synth(size_t *len)
{
	size_t setup = 5 * 512, kernel = 64 << 10;
	uint8_t *p = calloc(1, setup + kernel);
	p[0x1f1] = 4;
	put_le32(p + 0x1f4, (uint32_t)(kernel / 16));
	put_le16(p + 0x1fe, 0xaa55);
	p[0x200] = 0xeb;
	p[0x201] = 0x6a; /* header ends at 0x26c */
	memcpy(p + 0x202, "HdrS", 4);
	put_le16(p + 0x206, 0x020f);
	put_le16(p + 0x20e, 0x300); /* version string at 0x500 */
	strcpy((char *)p + 0x500, "6.99.0-synthetic");
	p[0x211] = 0x01;              /* LOADED_HIGH */
	put_le32(p + 0x22c, 0x7fffffff);    /* initrd_addr_max */
	put_le32(p + 0x230, 0x200000);      /* kernel_alignment */
	p[0x234] = 1;                 /* relocatable */
	p[0x235] = 21;                /* min_alignment */
	put_le16(p + 0x236, 0x3);           /* XLF_KERNEL_64 | CAN_BE_LOADED_ABOVE_4G */
	put_le32(p + 0x238, 2047);          /* cmdline_size */
	put_le64(p + 0x258, 0x1000000);     /* pref_address */
	put_le32(p + 0x260, 4 << 20);       /* init_size */
	for (size_t i = 0; i < kernel; i++)
		p[setup + i] = (uint8_t)(i * 7);
	*len = setup + kernel;
	return p;
}

static int parse(const uint8_t *p, size_t len, struct bzimage *bz)
{
	char why[256] = "";
	int r = bzimage_parse(p, len, bz, why, sizeof(why));
	CHECK(r == 0 || why[0]); /* a refusal always says why */
	return r;
}

static void test_synthetic_ok(uint8_t *mem)
{
	size_t len;
	uint8_t *p = synth(&len);
	struct bzimage bz;
	CHECK_EQ(parse(p, len, &bz), 0);
	CHECK_EQ(bz.version, 0x020f);
	CHECK_EQ(bz.setup_size, 5 * 512);
	CHECK_EQ(bz.kernel_size, 64 << 10);
	CHECK(!strcmp(bz.kernel_version, "6.99.0-synthetic"));

	static const uint8_t initrd[5000] = { 1, 2, 3 };
	struct linux_load_req req = { .mem_size = MEM, .ram_end = RAM_END, .cmdline = "console=ttyS0 quiet",
				      .initrd = initrd, .initrd_len = sizeof(initrd), .acpi_rsdp = 0xe0000 };
	struct linux_load_out out;
	char why[256];
	CHECK_EQ(linux_load(flat(mem), p, len, &bz, &req, &out, why, sizeof(why)), 0);
	CHECK_EQ(out.load_addr, 0x1000000);
	CHECK_EQ(out.entry, 0x1000200);
	CHECK(!memcmp(mem + out.load_addr, p + bz.setup_size, bz.kernel_size));
	const uint8_t *zp = mem + LINUX_ZERO_PAGE_GPA;
	CHECK(!memcmp(zp + 0x202, "HdrS", 4));
	CHECK_EQ(zp[0x210], 0xff);                       /* type_of_loader */
	CHECK_EQ(get_le32(zp + 0x228), LINUX_CMDLINE_GPA);
	CHECK(!strcmp((char *)mem + LINUX_CMDLINE_GPA, "console=ttyS0 quiet"));
	CHECK_EQ(get_le32(zp + 0x218), out.initrd_gpa);
	CHECK_EQ(get_le32(zp + 0x21c), sizeof(initrd));
	CHECK_EQ(out.initrd_gpa & 0xfff, 0);
	CHECK(out.initrd_gpa + sizeof(initrd) <= RAM_END);
	CHECK(out.initrd_gpa >= out.kernel_end);
	CHECK_EQ(mem[out.initrd_gpa + 2], 3);
	CHECK_EQ(get_le64(zp + 0x70), 0xe0000);                /* acpi_rsdp_addr */
	/* e820: low RAM, legacy hole, RAM from 1 MiB, the VMM's pages */
	CHECK_EQ(zp[0x1e8], 4);
	CHECK_EQ(get_le64(zp + 0x2d0), 0);
	CHECK_EQ(get_le32(zp + 0x2d0 + 16), E820_RAM);
	CHECK_EQ(get_le32(zp + 0x2d0 + 20 + 16), E820_RESERVED);
	CHECK_EQ(get_le64(zp + 0x2d0 + 40), 0x100000);
	CHECK_EQ(get_le64(zp + 0x2d0 + 40) + get_le64(zp + 0x2d0 + 48), RAM_END);
	CHECK_EQ(get_le32(zp + 0x2d0 + 60 + 16), E820_RESERVED);
	/* entries never overlap and are sorted */
	for (unsigned i = 1; i < out.ne820; i++)
		CHECK(out.e820[i].addr >= out.e820[i - 1].addr + out.e820[i - 1].size);

	/* too long a command line, too small a guest, too big an initrd */
	char longcl[3000];
	memset(longcl, 'x', sizeof(longcl) - 1);
	longcl[sizeof(longcl) - 1] = 0;
	req.cmdline = longcl;
	CHECK_EQ(linux_load(flat(mem), p, len, &bz, &req, &out, why, sizeof(why)), -EINVAL);
	req.cmdline = "";
	req.ram_end = 18 << 20;
	CHECK_EQ(linux_load(flat(mem), p, len, &bz, &req, &out, why, sizeof(why)), -EFBIG);
	req.ram_end = RAM_END;
	req.initrd_len = RAM_END - 0x1000000;
	CHECK_EQ(linux_load(flat(mem), p, len, &bz, &req, &out, why, sizeof(why)), -EFBIG);
	free(p);
}

/* Every header field the loader relies on, wrong in turn. */
static void test_synthetic_bad(void)
{
	struct { size_t off; unsigned width; uint64_t val; } bad[] = {
		{ 0x1fe, 2, 0x55aa },     /* boot flag */
		{ 0x202, 4, 0x12345678 }, /* no "HdrS" */
		{ 0x206, 2, 0x020b },     /* protocol 2.11: no 64-bit entry */
		{ 0x200, 1, 0x90 },       /* no jump */
		{ 0x201, 1, 0x10 },       /* header too short for 2.12 */
		{ 0x201, 1, 0xa0 },       /* header past the zero page's room */
		{ 0x1f1, 1, 200 },        /* setup_sects past the file */
		{ 0x1f4, 4, 0 },          /* syssize 0 */
		{ 0x1f4, 4, 0x100000 },   /* syssize past the file */
		{ 0x1f4, 4, 0xffffffff }, /* syssize overflow */
		{ 0x211, 1, 0x00 },       /* not LOADED_HIGH */
		{ 0x236, 2, 0x0002 },     /* no XLF_KERNEL_64 */
		{ 0x230, 4, 0x300000 },   /* alignment not a power of two */
		{ 0x230, 4, 0 },
		{ 0x235, 1, 30 },         /* min_alignment above kernel_alignment */
		{ 0x258, 8, 0x1000 },     /* pref_address below 1 MiB */
		{ 0x258, 8, 0x100000001ull }, /* not page aligned, above 4 GiB */
		{ 0x260, 4, 0x1000 },     /* init_size smaller than the kernel */
		{ 0x238, 4, 0 },          /* cmdline_size */
		{ 0x22c, 4, 0x1000 },     /* initrd_addr_max below 1 MiB */
		{ 0x24c, 4, 0x20000 },    /* payload past the kernel */
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len;
		uint8_t *p = synth(&len);
		memcpy(p + bad[i].off, &bad[i].val, bad[i].width);
		struct bzimage bz;
		int r = parse(p, len, &bz);
		if (r != -EINVAL)
			fprintf(stderr, "bad field %u (0x%zx) accepted\n", i, bad[i].off);
		CHECK_EQ(r, -EINVAL);
		free(p);
	}
	/* truncated files of every interesting length */
	size_t len;
	uint8_t *p = synth(&len);
	struct bzimage bz;
	for (size_t l = 0; l < len; l += (l < 2048 ? 1 : 997))
		CHECK_EQ(parse(p, l, &bz), -EINVAL);
	free(p);
}

static void test_acpi(uint8_t *mem)
{
	uint64_t rsdp = 0;
	const struct acpi_pci pci = { 0xe0000000u, 0x10000000u };
	size_t n = acpi_build(mem, LINUX_ACPI_GPA, LINUX_HIGH_MEM - LINUX_ACPI_GPA, 4, &pci, &rsdp);
	CHECK(n > 0 && rsdp == LINUX_ACPI_GPA);
	CHECK(!memcmp(mem + rsdp, "RSD PTR ", 8));
	uint8_t s = 0;
	for (int i = 0; i < 20; i++)
		s = (uint8_t)(s + mem[rsdp + i]);
	CHECK_EQ(s, 0);
	for (int i = 20; i < 36; i++)
		s = (uint8_t)(s + mem[rsdp + i]);
	CHECK_EQ(s, 0);
	uint64_t xsdt = get_le64(mem + rsdp + 24);
	CHECK(!memcmp(mem + xsdt, "XSDT", 4));
	uint32_t xl = get_le32(mem + xsdt + 4);
	int nmadt = 0, nfadt = 0;
	for (uint32_t off = 36; off < xl; off += 8) {
		uint64_t t = get_le64(mem + xsdt + off);
		uint32_t tl = get_le32(mem + t + 4);
		s = 0;
		for (uint32_t i = 0; i < tl; i++)
			s = (uint8_t)(s + mem[t + i]);
		CHECK_EQ(s, 0); /* every table's checksum */
		if (!memcmp(mem + t, "APIC", 4)) {
			nmadt++;
			unsigned lapics = 0, ioapics = 0;
			for (uint32_t e = 44; e < tl; e += mem[t + e + 1]) {
				lapics += mem[t + e] == 0;
				ioapics += mem[t + e] == 1;
				if (!mem[t + e + 1])
					break;
			}
			CHECK_EQ(lapics, 4);
			CHECK_EQ(ioapics, 1);
		}
		if (!memcmp(mem + t, "FACP", 4)) {
			nfadt++;
			uint64_t dsdt = get_le64(mem + t + 140);
			CHECK(!memcmp(mem + dsdt, "DSDT", 4));
			CHECK(memmem(mem + dsdt, get_le32(mem + dsdt + 4), "_S5_", 4) != NULL);
			CHECK(memmem(mem + dsdt, get_le32(mem + dsdt + 4), "PCI0", 4) != NULL);
		}
	}
	CHECK_EQ(nmadt, 1);
	CHECK_EQ(nfadt, 1);
	CHECK_EQ(acpi_build(mem, LINUX_ACPI_GPA, 64, 4, &pci, &rsdp), 0); /* too little room */
	CHECK_EQ(acpi_build(mem, LINUX_ACPI_GPA, 0x20000, 300, &pci, &rsdp), 0);
}

/* A real kernel, and corrupted copies: accepted-and-loaded or refused, never a crash. */
static void test_real(uint8_t *mem, const char *path)
{
	uint8_t *img;
	size_t len;
	if (read_whole_file(path, 256 << 20, &img, &len)) {
		fprintf(stderr, "cannot read %s\n", path);
		CHECK(0);
		return;
	}
	struct bzimage bz;
	char why[256];
	CHECK_EQ(parse(img, len, &bz), 0);
	CHECK(bz.version >= 0x020c);
	CHECK(bz.kernel_version[0] != 0);
	printf("real kernel %s: protocol %u.%02u, setup %u, kernel %u, init_size %u, pref 0x%llx, \"%s\"\n", path,
	       bz.version >> 8, bz.version & 0xff, bz.setup_size, bz.kernel_size, bz.init_size,
	       (unsigned long long)bz.pref_address, bz.kernel_version);
	struct linux_load_req req = { .mem_size = MEM, .ram_end = RAM_END, .cmdline = "console=ttyS0" };
	struct linux_load_out out;
	CHECK_EQ(linux_load(flat(mem), img, len, &bz, &req, &out, why, sizeof(why)), 0);
	CHECK(!memcmp(mem + out.load_addr, img + bz.setup_size, bz.kernel_size));

	uint8_t *copy = malloc(len);
	unsigned accepted = 0, refused = 0;
	srand(12345);
	memcpy(copy, img, len);
	for (unsigned t = 0; t < 3000; t++) {
		/* flip bytes in the header most of the time, anywhere in the setup otherwise */
		unsigned nflip = 1 + (unsigned)rand() % 4;
		size_t flipped[4];
		for (unsigned k = 0; k < nflip; k++) {
			size_t at = (t % 4) ? 0x1f1 + (size_t)rand() % (0x270 - 0x1f1) : (size_t)rand() % bz.setup_size;
			flipped[k] = at;
			copy[at] = (uint8_t)rand();
		}
		size_t l = (t % 7 == 0) ? (size_t)rand() % len : len; /* and truncate some */
		struct bzimage b2;
		if (parse(copy, l, &b2) == 0) {
			accepted++;
			int r = (t % 16 == 0) ? linux_load(flat(mem), copy, l, &b2, &req, &out, why, sizeof(why)) : 0;
			if (t % 16)
				r = -1;
			CHECK(r == 0 || r == -EINVAL || r == -EFBIG || r == -1);
			if (r == 0)
				CHECK(out.kernel_end <= RAM_END && out.load_addr >= LINUX_HIGH_MEM);
		} else {
			refused++;
		}
		for (unsigned k = 0; k < nflip; k++)
			copy[flipped[k]] = img[flipped[k]];
	}
	printf("corrupted copies: %u accepted (harmless bytes), %u refused\n", accepted, refused);
	CHECK(refused > 0);
	free(copy);
	free(img);
}

static int access_ok_default(void)
{
	FILE *f = fopen("build/linux/vmlinuz", "rb");
	if (f)
		fclose(f);
	return f != NULL;
}

int main(void)
{
	uint8_t *mem = calloc(1, MEM);
	test_synthetic_ok(mem);
	test_synthetic_bad();
	test_acpi(mem);
	const char *real = getenv("VMM_TEST_BZIMAGE");
	if (!real && access_ok_default())
		real = "build/linux/vmlinuz";
	if (real)
		test_real(mem, real);
	else
		printf("no real kernel (VMM_TEST_BZIMAGE unset, build/linux/vmlinuz absent): tests/linux/fetch_kernel.sh fetches one\n");
	free(mem);
	return check_summary();
}
