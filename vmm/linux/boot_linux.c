#include "vmm/linux/boot_linux.h"

#include <errno.h>
#include <string.h>

#include "lib/bytes.h"
#include "lib/errmsg.h"
#include "vcpu/x86/boot_tables.h"

/* setup_header offsets in the image and in the zero page (boot.rst). */
#define HDR_START 0x1f1
#define OFF_SETUP_SECTS 0x1f1
#define OFF_SYSSIZE 0x1f4
#define OFF_VID_MODE 0x1fa
#define OFF_BOOT_FLAG 0x1fe
#define OFF_JUMP 0x200
#define OFF_HEADER 0x202
#define OFF_VERSION 0x206
#define OFF_KERNEL_VERSION 0x20e
#define OFF_TYPE_OF_LOADER 0x210
#define OFF_LOADFLAGS 0x211
#define OFF_CODE32_START 0x214
#define OFF_RAMDISK_IMAGE 0x218
#define OFF_RAMDISK_SIZE 0x21c
#define OFF_HEAP_END_PTR 0x224
#define OFF_CMD_LINE_PTR 0x228
#define OFF_INITRD_ADDR_MAX 0x22c
#define OFF_KERNEL_ALIGNMENT 0x230
#define OFF_RELOCATABLE 0x234
#define OFF_MIN_ALIGNMENT 0x235
#define OFF_XLOADFLAGS 0x236
#define OFF_CMDLINE_SIZE 0x238
#define OFF_PAYLOAD_OFFSET 0x248
#define OFF_PAYLOAD_LENGTH 0x24c
#define OFF_PREF_ADDRESS 0x258
#define OFF_INIT_SIZE 0x260
#define HDR_MIN_END_2_12 0x264 /* init_size is the last field version 2.12 needs */
#define HDR_MAX_END 0x290      /* struct boot_params has room for the header up to here */

/* Zero-page fields outside setup_header. */
#define BP_ACPI_RSDP_ADDR 0x070
#define BP_EXT_RAMDISK_IMAGE 0x0c0
#define BP_EXT_RAMDISK_SIZE 0x0c4
#define BP_EXT_CMD_LINE_PTR 0x0c8
#define BP_E820_ENTRIES 0x1e8
#define BP_E820_TABLE 0x2d0

#define LOADED_HIGH 0x01
#define CAN_USE_HEAP 0x80
#define XLF_KERNEL_64 0x01
#define XLF_CAN_BE_LOADED_ABOVE_4G 0x02

/* every refusal here is a bad image or request: -EINVAL */
#define bad(why, whylen, ...) errmsg(why, whylen, -EINVAL, __VA_ARGS__)

/* The boot sector and setup header: is this a bzImage, and of a protocol we boot? */
static int bz_check_header(const uint8_t *img, size_t len, struct bzimage *bz, char *why, size_t whylen)
{
	if (len < 1024)
		return bad(why, whylen, "not a bzImage: %zu bytes is too short for a boot sector and setup header", len);
	if (get_le16(img + OFF_BOOT_FLAG) != 0xaa55)
		return bad(why, whylen, "not a bzImage: boot flag at 0x1fe is 0x%04x, not 0xaa55",
			   get_le16(img + OFF_BOOT_FLAG));
	if (memcmp(img + OFF_HEADER, "HdrS", 4))
		return bad(why, whylen, "not a bzImage: no \"HdrS\" magic at 0x202 (a pre-2.00 kernel, or not a kernel)");
	bz->version = get_le16(img + OFF_VERSION);
	if (bz->version < 0x020c)
		return bad(why, whylen, "boot protocol %u.%02u is too old: the 64-bit entry needs 2.12 or later",
			   bz->version >> 8, bz->version & 0xff);
	if (img[OFF_JUMP] != 0xeb)
		return bad(why, whylen, "setup header: no short jump at 0x200 (byte 0x%02x)", img[OFF_JUMP]);
	bz->hdr_end = 0x202u + img[OFF_JUMP + 1];
	if (bz->hdr_end < HDR_MIN_END_2_12 || bz->hdr_end > HDR_MAX_END)
		return bad(why, whylen, "setup header: its length (ends at 0x%x) does not fit protocol 2.12+ (0x%x..0x%x)",
			   bz->hdr_end, HDR_MIN_END_2_12, HDR_MAX_END);
	return 0;
}

/* Setup code and kernel both within the file, as setup_sects and syssize say. */
static int bz_check_sizes(const uint8_t *img, size_t len, struct bzimage *bz, char *why, size_t whylen)
{
	unsigned sects = img[OFF_SETUP_SECTS] ? img[OFF_SETUP_SECTS] : 4;
	bz->setup_size = (sects + 1) * 512u;
	if (bz->setup_size > len || bz->setup_size < bz->hdr_end)
		return bad(why, whylen, "setup_sects %u: the setup code (%u bytes) does not fit the %zu-byte file",
			   sects, bz->setup_size, len);
	uint32_t syssize = get_le32(img + OFF_SYSSIZE);
	if (syssize == 0 || syssize > (UINT32_MAX >> 4))
		return bad(why, whylen, "syssize %u is not a kernel size", syssize);
	bz->kernel_size = syssize * 16;
	if (bz->kernel_size > len - bz->setup_size)
		return bad(why, whylen, "truncated: syssize says %u bytes of kernel after setup, the file has %zu",
			   bz->kernel_size, len - bz->setup_size);
	return 0;
}

/* Where it may be loaded: above 1 MiB, with a 64-bit entry, aligned as it asks. */
static int bz_check_placement(const uint8_t *img, struct bzimage *bz, char *why, size_t whylen)
{
	bz->loadflags = img[OFF_LOADFLAGS];
	if (!(bz->loadflags & LOADED_HIGH))
		return bad(why, whylen, "loadflags 0x%02x: not a bzImage (LOADED_HIGH clear: a zImage for 0x10000)",
			   bz->loadflags);
	bz->xloadflags = get_le16(img + OFF_XLOADFLAGS);
	if (!(bz->xloadflags & XLF_KERNEL_64))
		return bad(why, whylen, "xloadflags 0x%04x: no 64-bit entry point (XLF_KERNEL_64 clear; a 32-bit kernel?)",
			   bz->xloadflags);
	bz->relocatable = img[OFF_RELOCATABLE] != 0;
	bz->kernel_alignment = get_le32(img + OFF_KERNEL_ALIGNMENT);
	if (!is_pow2(bz->kernel_alignment) || bz->kernel_alignment < 4096 || bz->kernel_alignment > (1u << 30))
		return bad(why, whylen, "kernel_alignment 0x%x is not a power of two from 4 KiB to 1 GiB",
			   bz->kernel_alignment);
	unsigned min_align = img[OFF_MIN_ALIGNMENT];
	/* min_align is the image's byte: bound it before shifting (UBSan found 2^217) */
	if (min_align < 12 || min_align > 30 || (1ull << min_align) > bz->kernel_alignment)
		return bad(why, whylen, "min_alignment 2^%u does not fit kernel_alignment 0x%x", min_align,
			   bz->kernel_alignment);
	bz->pref_address = get_le64(img + OFF_PREF_ADDRESS);
	if (bz->pref_address < LINUX_HIGH_MEM || bz->pref_address >= (1ull << 32) ||
	    (bz->pref_address & 0xfff))
		return bad(why, whylen, "pref_address 0x%llx is not a page-aligned address from 1 MiB to 4 GiB",
			   (unsigned long long)bz->pref_address);
	return 0;
}

/* The limits the loader must respect: memory to reserve, command line, initrd. */
static int bz_check_limits(const uint8_t *img, struct bzimage *bz, char *why, size_t whylen)
{
	bz->init_size = get_le32(img + OFF_INIT_SIZE);
	if (bz->init_size < bz->kernel_size)
		return bad(why, whylen, "init_size 0x%x is smaller than the kernel itself (0x%x bytes)",
			   bz->init_size, bz->kernel_size);
	bz->cmdline_size = get_le32(img + OFF_CMDLINE_SIZE);
	if (bz->cmdline_size < 16)
		return bad(why, whylen, "cmdline_size %u is not a command-line limit", bz->cmdline_size);
	bz->initrd_addr_max = get_le32(img + OFF_INITRD_ADDR_MAX);
	if (bz->initrd_addr_max < LINUX_HIGH_MEM)
		return bad(why, whylen, "initrd_addr_max 0x%x is below 1 MiB", bz->initrd_addr_max);
	uint32_t poff = get_le32(img + OFF_PAYLOAD_OFFSET), plen = get_le32(img + OFF_PAYLOAD_LENGTH);
	if (plen && ((uint64_t)poff + plen > bz->kernel_size))
		return bad(why, whylen, "payload (0x%x bytes at 0x%x) lies outside the 0x%x-byte kernel", plen, poff,
			   bz->kernel_size);
	return 0;
}

/* The printable version string, if any; informational only, so never an error. */
static void bz_read_version(const uint8_t *img, struct bzimage *bz)
{
	uint16_t kv = get_le16(img + OFF_KERNEL_VERSION);
	if (kv && (size_t)kv + 0x200 < bz->setup_size) {
		size_t at = (size_t)kv + 0x200, n = 0;
		while (at + n < bz->setup_size && n + 1 < sizeof(bz->kernel_version) && img[at + n] > 0x20 &&
		       img[at + n] < 0x7f)
			n++;
		memcpy(bz->kernel_version, img + at, n);
		bz->kernel_version[n] = '\0';
	}
}

int bzimage_parse(const uint8_t *img, size_t len, struct bzimage *bz, char *why, size_t whylen)
{
	memset(bz, 0, sizeof(*bz));
	int r = bz_check_header(img, len, bz, why, whylen);
	if (!r)
		r = bz_check_sizes(img, len, bz, why, whylen);
	if (!r)
		r = bz_check_placement(img, bz, why, whylen);
	if (!r)
		r = bz_check_limits(img, bz, why, whylen);
	if (r)
		return r;
	bz_read_version(img, bz);
	return 0;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static void add_e820(struct linux_load_out *o, uint64_t addr, uint64_t end, uint32_t type)
{
	if (end > addr && o->ne820 < sizeof(o->e820) / sizeof(o->e820[0]))
		o->e820[o->ne820++] = (struct e820_entry){ addr, end - addr, type };
}

int linux_place(const struct bzimage *bz, const struct linux_load_req *req, struct linux_load_out *out,
		char *why, size_t whylen)
{
	memset(out, 0, sizeof(*out));
	if (req->ram_end > req->mem_size || req->ram_end < 16 * LINUX_HIGH_MEM)
		return bad(why, whylen, "guest RAM (%llu MiB usable) is too small for Linux",
			   (unsigned long long)(req->ram_end >> 20));

	/* Where the protected-mode kernel goes: pref_address, aligned if relocatable. */
	uint64_t load = bz->pref_address;
	if (bz->relocatable)
		load = align_up(load, bz->kernel_alignment);
	uint64_t kend = load + bz->init_size;
	if (kend > req->ram_end) {
		bad(why, whylen, "the kernel needs RAM up to %llu MiB (load address 0x%llx + init_size 0x%x); give the guest more memory with -m",
		    (unsigned long long)(kend >> 20) + 1, (unsigned long long)load, bz->init_size);
		return -EFBIG;
	}

	/* The command line. */
	size_t clen = req->cmdline ? strlen(req->cmdline) : 0;
	if (clen > bz->cmdline_size || clen >= LINUX_CMDLINE_MAX)
		return bad(why, whylen, "the command line is %zu bytes; this kernel takes at most %u", clen,
			   bz->cmdline_size < LINUX_CMDLINE_MAX - 1 ? bz->cmdline_size : (unsigned)LINUX_CMDLINE_MAX - 1);

	/* The initrd: as high as the kernel allows, page aligned, above the kernel. */
	if (req->initrd_len) {
		uint64_t top = req->ram_end;
		if ((uint64_t)bz->initrd_addr_max + 1 < top)
			top = (uint64_t)bz->initrd_addr_max + 1;
		if (req->initrd_len > top || ((top - req->initrd_len) & ~0xfffull) < kend) {
			bad(why, whylen, "the %zu-byte initrd does not fit between the kernel's end (0x%llx) and 0x%llx; give the guest more memory with -m",
			    req->initrd_len, (unsigned long long)kend, (unsigned long long)top);
			return -EFBIG;
		}
		out->initrd_gpa = (top - req->initrd_len) & ~0xfffull;
		out->initrd_size = req->initrd_len;
	}
	out->load_addr = load;
	out->entry = load + 0x200; /* startup_64 */
	out->zero_page = LINUX_ZERO_PAGE_GPA;
	out->kernel_end = kend;
	return 0;
}

/* n bytes at gpa through gm (src NULL: zeros): the one way this file
 * writes guest memory, so a placement bug is -EFAULT, not a stray write. */
static int put(const struct guest_mem *gm, uint64_t gpa, const void *src, size_t n)
{
	uint8_t *d = guest_mem_ptr(gm, gpa, n);
	if (!d)
		return -EFAULT;
	if (src)
		memcpy(d, src, n);
	else
		memset(d, 0, n);
	return 0;
}

int linux_load(const struct guest_mem *gm, const uint8_t *img, size_t len, const struct bzimage *bz,
	       const struct linux_load_req *req, struct linux_load_out *out, char *why, size_t whylen)
{
	(void)len; /* bzimage_parse checked that setup + kernel lie inside it */
	int r = linux_place(bz, req, out, why, whylen);
	if (r)
		return r;
	uint64_t load = out->load_addr;
	size_t clen = req->cmdline ? strlen(req->cmdline) : 0;
	if (req->initrd_len)
		r = put(gm, out->initrd_gpa, req->initrd, req->initrd_len);
	if (!r)
		r = put(gm, load, img + bz->setup_size, bz->kernel_size);
	if (!r)
		r = put(gm, LINUX_CMDLINE_GPA, NULL, clen + 1);
	if (!r && clen)
		r = put(gm, LINUX_CMDLINE_GPA, req->cmdline, clen);

	/* The zero page: the image's setup_header, then what the loader fills in. */
	uint8_t *zp = guest_mem_ptr(gm, LINUX_ZERO_PAGE_GPA, 4096);
	if (r || !zp)
		return errmsg(why, whylen, -EFBIG, "the kernel, initrd and command line do not fit in guest memory (0x%llx bytes)",
			      (unsigned long long)req->mem_size);
	memset(zp, 0, 4096);
	memcpy(zp + HDR_START, img + HDR_START, bz->hdr_end - HDR_START);
	put_le16(zp + OFF_VID_MODE, 0xffff); /* "normal" */
	zp[OFF_TYPE_OF_LOADER] = 0xff;       /* undefined boot loader */
	zp[OFF_LOADFLAGS] = (uint8_t)((bz->loadflags | CAN_USE_HEAP) & ~0x20); /* KEEP_SEGMENTS off (unused in 64-bit) */
	put_le16(zp + OFF_HEAP_END_PTR, 0xfe00);
	put_le32(zp + OFF_CODE32_START, (uint32_t)load);
	put_le32(zp + OFF_CMD_LINE_PTR, (uint32_t)LINUX_CMDLINE_GPA);
	put_le32(zp + BP_EXT_CMD_LINE_PTR, 0);
	put_le32(zp + OFF_RAMDISK_IMAGE, (uint32_t)out->initrd_gpa);
	put_le32(zp + OFF_RAMDISK_SIZE, (uint32_t)out->initrd_size);
	put_le32(zp + BP_EXT_RAMDISK_IMAGE, (uint32_t)(out->initrd_gpa >> 32));
	put_le32(zp + BP_EXT_RAMDISK_SIZE, (uint32_t)(out->initrd_size >> 32));
	if (bz->version >= 0x020e && req->acpi_rsdp)
		put_le64(zp + BP_ACPI_RSDP_ADDR, req->acpi_rsdp);

	/* e820: low RAM, the legacy hole (EBDA, VGA, BIOS area with our ACPI
	 * tables), RAM from 1 MiB, and the VMM's own pages at the top. */
	add_e820(out, 0, LINUX_EBDA_GPA, E820_RAM);
	add_e820(out, LINUX_EBDA_GPA, LINUX_HIGH_MEM, E820_RESERVED);
	add_e820(out, LINUX_HIGH_MEM, req->ram_end, E820_RAM);
	add_e820(out, req->ram_end, req->mem_size, E820_RESERVED);
	zp[BP_E820_ENTRIES] = (uint8_t)out->ne820;
	for (unsigned i = 0; i < out->ne820; i++) {
		uint8_t *e = zp + BP_E820_TABLE + i * 20;
		put_le64(e + 0, out->e820[i].addr);
		put_le64(e + 8, out->e820[i].size);
		put_le32(e + 16, out->e820[i].type);
	}
	return 0;
}

int linux_write_entry_tables(const struct guest_mem *gm)
{
	struct x86_boot_tables t = {
		.pt_gpa = LINUX_PT_GPA, .gdt_gpa = LINUX_GDT_GPA, .gdt_bytes = LINUX_BOOT_TSS + 16, .ndesc = 3,
		.desc = {
			{ LINUX_BOOT_CS, 0, 0xfffff, 0xa09b },  /* G, L, P, code r/x */
			{ LINUX_BOOT_DS, 0, 0xfffff, 0xc093 },  /* G, D/B, P, data r/w */
			{ LINUX_BOOT_TSS, 0, 0xfffff, 0x808b }, /* busy TSS, as Firecracker */
		},
	};
	return x86_boot_tables_write(gm, &t);
}
