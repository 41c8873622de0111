/*
 * The x86 Linux boot protocol (Documentation/arch/x86/boot.rst), 64-bit
 * direct entry as Firecracker does it: no BIOS, no real-mode setup code.
 * The VMM checks every setup_header field it relies on, copies the
 * protected-mode kernel to its load address, and writes the zero page
 * (struct boot_params) with the command line, the initrd and an e820 map.
 *
 * Pure code over a guest-memory buffer: unit-tested without /dev/kvm, on
 * synthetic headers, real kernels and corrupted copies (tests/unit/test_bzimage.c).
 */
#ifndef VMM_BOOT_LINUX_H
#define VMM_BOOT_LINUX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/guest_mem.h"

/* What the setup_header says, once validated. */
struct bzimage {
	uint16_t version;        /* boot protocol, 0x020c = 2.12 */
	uint32_t setup_size;     /* (setup_sects + 1) * 512: where the protected-mode kernel starts */
	uint32_t kernel_size;    /* syssize * 16 */
	uint32_t hdr_end;        /* setup_header ends here: 0x202 + byte at 0x201 */
	uint8_t loadflags;
	uint16_t xloadflags;
	bool relocatable;
	uint32_t kernel_alignment;
	uint64_t pref_address;
	uint32_t init_size;
	uint32_t cmdline_size;   /* longest command line, without its NUL */
	uint32_t initrd_addr_max;/* highest byte address the initrd may occupy */
	char kernel_version[64]; /* the string at kernel_version + 0x200, if any */
};

/* 0, or -EINVAL with why saying which field is wrong. Never reads past len. */
int bzimage_parse(const uint8_t *img, size_t len, struct bzimage *bz, char *why, size_t whylen);

/* Fixed low-memory places of the Linux direct entry (all below 640 KiB). */
#define LINUX_GDT_GPA 0x500ull
#define LINUX_ZERO_PAGE_GPA 0x7000ull
#define LINUX_PT_GPA 0x9000ull       /* PML4, PDPT, 4 PDs: identity map of 0..4 GiB */
#define LINUX_CMDLINE_GPA 0x20000ull
#define LINUX_CMDLINE_MAX 0x10000ull
#define LINUX_EBDA_GPA 0x9fc00ull    /* from here to 1 MiB: reserved in e820 */
#define LINUX_ACPI_GPA 0xe0000ull    /* RSDP and tables, inside the legacy BIOS scan area */
#define LINUX_HIGH_MEM 0x100000ull

#define LINUX_BOOT_CS 0x10 /* __BOOT_CS: the 64-bit boot protocol's selectors */
#define LINUX_BOOT_DS 0x18
#define LINUX_BOOT_TSS 0x20

#define E820_RAM 1
#define E820_RESERVED 2
#define E820_ACPI 3
#define E820_MAX 128

struct e820_entry {
	uint64_t addr, size;
	uint32_t type;
};

struct linux_load_req {
	uint64_t mem_size;   /* guest RAM, from GPA 0 */
	uint64_t ram_end;    /* first byte Linux must not use (the VMM's own pages above) */
	const char *cmdline;
	const uint8_t *initrd;
	size_t initrd_len;
	uint64_t acpi_rsdp;  /* 0: none */
	uint64_t acpi_end;   /* end of the ACPI tables (reserved in e820) */
};

struct linux_load_out {
	uint64_t load_addr, entry, zero_page;
	uint64_t initrd_gpa, initrd_size;
	uint64_t kernel_end; /* load_addr + init_size */
	struct e820_entry e820[8];
	unsigned ne820;
};

/* Where the kernel and initrd go, without touching guest memory: the checks
 * linux_load makes, done before a VM exists so that a kernel or initrd too
 * big for -m is a usage error on every machine. 0, or as linux_load. */
int linux_place(const struct bzimage *bz, const struct linux_load_req *req, struct linux_load_out *out,
		char *why, size_t whylen);

/* Copies the kernel, initrd and command line into mem and writes the zero
 * page. 0, or -EINVAL / -EFBIG (does not fit: say "give it more memory")
 * with why filled. */
int linux_load(const struct guest_mem *gm, const uint8_t *img, size_t len, const struct bzimage *bz,
	       const struct linux_load_req *req, struct linux_load_out *out, char *why, size_t whylen);

/* The identity page tables and the GDT (null, null, __BOOT_CS, __BOOT_DS,
 * TSS), by vcpu/x86/boot_tables.c. 0, or -EFAULT outside gm. */
int linux_write_entry_tables(const struct guest_mem *gm);

#endif
