/*
 * abi_guest — a test guest written from hypercalls/ABI.md alone.
 *
 * Every vCPU: walk the device tree for /vmm/num-cpus and /vmm/hypercall-base,
 * check the `version` hypercall answers 1 or later, report "vcpu_seen" = index + 100
 * and "ops" = (index + 1) * 10, then exit(0). vCPU 0 also writes a line with
 * console_write, reports "ncpus", and makes three deliberately bad calls,
 * reporting the negated results as "bad_nr" (38), "bad_buf" (14) and
 * "bad_key" (22).
 *
 * A failed check ends the VM with a non-zero exit status (vmm exits 1):
 *   2 bad device tree, 3 /vmm property missing, 4 version < 1,
 *   5 vCPU index >= num-cpus, 6 a good report failed, 7 console_write short,
 *   101 (abi_entry.S) index beyond the guest's stacks.
 * Before exiting with a failure, the guest reports the cause where it can.
 *
 * Runs at CPL 0, where instructions are costly: the code is kept short.
 */
#include <stddef.h>
#include <stdint.h>

typedef uint8_t u8;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t s64;

/* ABI.md §4 */
#define HC_BASE_V1	0xd0000000ull
#define HC_VERSION	0
#define HC_CONSOLE_WRITE 1
#define HC_REPORT	2
#define HC_EXIT		3
#define HC_BAD_NR	99

/* Device tree (ABI.md §3; flattened device tree format v17). */
#define FDT_MAGIC	0xd00dfeedu
#define FDT_BEGIN_NODE	1u
#define FDT_END_NODE	2u
#define FDT_PROP	3u
#define FDT_NOP		4u
#define FDT_END		9u
#define FDT_MAX_SIZE	0x10000u

typedef u32 u32_unaligned __attribute__((aligned(1), may_alias));

static inline u32 be32(const u8 *p)
{
	return __builtin_bswap32(*(const u32_unaligned *)p);
}

static inline u64 be64(const u8 *p)
{
	return ((u64)be32(p) << 32) | be32(p + 4);
}

static int streq(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

/* One hypercall: one 8-byte load from base + 8 * nr, arguments in RDI, RSI.
 * The "memory" clobber: the VMM reads our buffers. */
static inline s64 hc(u64 base, u64 nr, u64 a0, u64 a1)
{
	s64 r;
	__asm__ volatile("movq (%1), %0"
			 : "=a"(r)
			 : "r"(base + 8 * nr), "D"(a0), "S"(a1)
			 : "memory");
	return r;
}

static __attribute__((noreturn)) void hc_exit(u64 base, u32 status)
{
	hc(base, HC_EXIT, status, 0);
	for (;;)
		__asm__ volatile("hlt");
}

struct vmm_props {
	u64 hc_base;
	u32 ncpus;
	u32 found;		/* bit 0: num-cpus, bit 1: hypercall-base */
};

/* Walk the structure block for the properties of the top-level node "vmm".
 * Returns 0, or a positive code naming what was wrong with the blob. */
static int fdt_scan(const u8 *fdt, struct vmm_props *out)
{
	if (be32(fdt) != FDT_MAGIC)
		return 1;
	u32 total = be32(fdt + 4);
	u32 off_struct = be32(fdt + 8);
	u32 off_strings = be32(fdt + 12);
	u32 version = be32(fdt + 20);
	u32 size_strings = be32(fdt + 32);
	u32 size_struct = be32(fdt + 36);
	if (total > FDT_MAX_SIZE || version < 17)
		return 2;
	if (off_struct > total || size_struct > total - off_struct ||
	    off_strings > total || size_strings > total - off_strings)
		return 3;

	const u8 *p = fdt + off_struct, *end = p + size_struct;
	const char *strings = (const char *)fdt + off_strings;
	u32 depth = 0, in_vmm = 0;

	while (p + 4 <= end) {
		u32 tok = be32(p);
		p += 4;
		switch (tok) {
		case FDT_BEGIN_NODE: {
			const char *name = (const char *)p;
			u32 n = 0;
			while (p + n < end && p[n])
				n++;
			depth++;
			if (depth == 2 && streq(name, "vmm"))
				in_vmm = 1;
			p += (n + 1 + 3) & ~3u;
			break;
		}
		case FDT_END_NODE:
			if (depth == 2)
				in_vmm = 0;
			if (depth-- == 0)
				return 4;
			break;
		case FDT_PROP: {
			if (p + 8 > end)
				return 5;
			u32 len = be32(p), nameoff = be32(p + 4);
			const u8 *val = p + 8;
			if (len > (u32)(end - val) || nameoff >= size_strings)
				return 5;
			if (in_vmm && depth == 2) {
				const char *name = strings + nameoff;
				if (len == 4 && streq(name, "num-cpus")) {
					out->ncpus = be32(val);
					out->found |= 1;
				} else if (len == 8 && streq(name, "hypercall-base")) {
					out->hc_base = be64(val);
					out->found |= 2;
				}
				if (out->found == 3)
					return 0;
			}
			p = val + ((len + 3) & ~3u);
			break;
		}
		case FDT_NOP:
			break;
		case FDT_END:
			return 0;
		default:
			return 6;
		}
	}
	return 0;
}

static const char hello[] = "abi_guest: hello from the ABI document\n";

__attribute__((noreturn)) void guest_main(const u8 *fdt, u64 idx);

__attribute__((noreturn)) void guest_main(const u8 *fdt, u64 idx)
{
	struct vmm_props vp = { 0, 0, 0 };
	int bad = fdt_scan(fdt, &vp);
	u64 base = (vp.found & 2) ? vp.hc_base : HC_BASE_V1;

	if (bad) {
		hc(base, HC_REPORT, (u64)"fdt_error", (u64)bad);
		hc_exit(base, 2);
	}
	if (vp.found != 3) {
		hc(base, HC_REPORT, (u64)"fdt_missing", 3 & ~vp.found);
		hc_exit(base, 3);
	}

	s64 v = hc(base, HC_VERSION, 0, 0);
	if (v < 1) { /* later versions only add to version 1 */
		hc(base, HC_REPORT, (u64)"bad_version", (u64)v);
		hc_exit(base, 4);
	}
	if (idx >= vp.ncpus) {
		hc(base, HC_REPORT, (u64)"bad_index", idx);
		hc_exit(base, 5);
	}

	if (idx == 0) {
		s64 n = hc(base, HC_CONSOLE_WRITE, (u64)hello, sizeof(hello) - 1);
		if (n != (s64)(sizeof(hello) - 1)) {
			hc(base, HC_REPORT, (u64)"console_short", (u64)n);
			hc_exit(base, 7);
		}
	}

	s64 r = 0;
	r |= hc(base, HC_REPORT, (u64)"vcpu_seen", idx + 100);
	r |= hc(base, HC_REPORT, (u64)"ops", (idx + 1) * 10);
	if (idx == 0) {
		r |= hc(base, HC_REPORT, (u64)"ncpus", vp.ncpus);
		s64 e1 = hc(base, HC_BAD_NR, 0, 0);
		s64 e2 = hc(base, HC_CONSOLE_WRITE, 0x7fff00000000ull, 16);
		s64 e3 = hc(base, HC_REPORT, (u64)"", 1);
		r |= hc(base, HC_REPORT, (u64)"bad_nr", (u64)-e1);
		r |= hc(base, HC_REPORT, (u64)"bad_buf", (u64)-e2);
		r |= hc(base, HC_REPORT, (u64)"bad_key", (u64)-e3);
	}
	if (r)
		hc_exit(base, 6);
	hc_exit(base, 0);
}
