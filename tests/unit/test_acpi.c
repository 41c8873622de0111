/*
 * The AML encoder (vmm/linux/aml.c) byte for byte against ACPI 6.x §20, and the
 * DSDT it writes. With VMM_TEST_DSDT_OUT=FILE the whole DSDT table is also
 * written there, for tests/integration/test_acpi.py to disassemble and
 * evaluate with ACPICA (the interpreter Linux itself uses).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/pci_bus.h"
#include "tests/unit/check.h"
#include "vmm/linux/acpi.h"
#include "vmm/linux/aml.h"

static uint8_t buf[8192];

#define EXPECT(a, ...)                                                                   \
	do {                                                                             \
		static const uint8_t want_[] = { __VA_ARGS__ };                          \
		CHECK((a)->len == sizeof(want_) && !memcmp((a)->buf, want_, sizeof(want_))); \
		if ((a)->len != sizeof(want_) || memcmp((a)->buf, want_, sizeof(want_))) \
			dump(a);                                                         \
	} while (0)

static void dump(const struct aml *a)
{
	fprintf(stderr, "  got %zu bytes:", a->len);
	for (size_t i = 0; i < a->len && i < 48; i++)
		fprintf(stderr, " %02x", a->buf[i]);
	fprintf(stderr, "\n");
}

static void test_pkglength(void)
{
	uint8_t o[4];
	CHECK(aml_pkglength(0, o) == 1 && o[0] == 1);
	CHECK(aml_pkglength(62, o) == 1 && o[0] == 63);
	/* 63 + 2 = 65 = 0x41: lead byte 01 00 0001, then 0x04 */
	CHECK(aml_pkglength(63, o) == 2 && o[0] == 0x41 && o[1] == 0x04);
	CHECK(aml_pkglength(4093, o) == 2 && o[0] == 0x4f && o[1] == 0xff);
	CHECK(aml_pkglength(4094, o) == 3 && o[0] == 0x81 && o[1] == 0x00 && o[2] == 0x01); /* 4097 */
	CHECK(aml_pkglength((1u << 20) - 4, o) == 3);
	CHECK(aml_pkglength((1u << 20) - 3, o) == 4 && o[0] == 0xc1);
	CHECK(aml_pkglength((1u << 28) - 5, o) == 4);
	CHECK(aml_pkglength((1u << 28) - 4, o) == 0);
}

static void test_names_and_data(void)
{
	struct aml a;
	aml_init(&a, buf, sizeof(buf));
	aml_namestring(&a, "_HID");
	EXPECT(&a, '_', 'H', 'I', 'D');
	aml_init(&a, buf, sizeof(buf));
	aml_namestring(&a, "\\_SB_.PCI");
	EXPECT(&a, 0x5c, 0x2e, '_', 'S', 'B', '_', 'P', 'C', 'I', '_');
	aml_init(&a, buf, sizeof(buf));
	aml_namestring(&a, "^^A.B2.C");
	EXPECT(&a, 0x5e, 0x5e, 0x2f, 3, 'A', '_', '_', '_', 'B', '2', '_', '_', 'C', '_', '_', '_');
	aml_init(&a, buf, sizeof(buf));
	aml_namestring(&a, "\\");
	EXPECT(&a, 0x5c, 0x00);
	static const char *const bad[] = { "1ABC", "ABCDE", "pci0", "A..B", "A.", ".A", "A-B" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		aml_init(&a, buf, sizeof(buf));
		aml_namestring(&a, bad[i]);
		CHECK(a.bad_name);
	}

	aml_init(&a, buf, sizeof(buf));
	aml_integer(&a, 0);
	aml_integer(&a, 1);
	aml_integer(&a, 0xff);
	aml_integer(&a, 0x100);
	aml_integer(&a, 0x10000);
	aml_integer(&a, 0x100000000ull);
	EXPECT(&a, 0x00, 0x01, 0x0a, 0xff, 0x0b, 0x00, 0x01, 0x0c, 0x00, 0x00, 0x01, 0x00, 0x0e, 0, 0, 0, 0, 1, 0,
	       0, 0);
	aml_init(&a, buf, sizeof(buf));
	aml_eisaid(&a, "PNP0A03");
	EXPECT(&a, 0x0c, 0x41, 0xd0, 0x0a, 0x03);
	aml_init(&a, buf, sizeof(buf));
	aml_eisaid(&a, "PNP0a03");
	CHECK(a.bad_name);
	/* IRQNoFlags(){4}: tag 0x22, the IRQ mask; none above 15 */
	aml_init(&a, buf, sizeof(buf));
	aml_res_irq(&a, 4);
	aml_res_irq(&a, 15);
	aml_res_irq(&a, 16);
	EXPECT(&a, 0x22, 0x10, 0x00, 0x22, 0x00, 0x80, 0x22, 0x00, 0x00);
	aml_init(&a, buf, sizeof(buf));
	aml_string(&a, "ok");
	EXPECT(&a, 0x0d, 'o', 'k', 0);

	/* Name (_S5, Package () { 5, 0 }), as iasl writes it */
	aml_init(&a, buf, sizeof(buf));
	aml_name(&a, "_S5_");
	size_t p = aml_package(&a, 2);
	aml_integer(&a, 5);
	aml_integer(&a, 0);
	aml_end(&a, p);
	EXPECT(&a, 0x08, '_', 'S', '5', '_', 0x12, 0x05, 0x02, 0x0a, 0x05, 0x00);

	/* Device (\_SB.DEV) {}: ExtOp DeviceOp PkgLength NameString */
	aml_init(&a, buf, sizeof(buf));
	aml_end(&a, aml_device(&a, "\\_SB_.DEV_"));
	EXPECT(&a, 0x5b, 0x82, 0x0b, 0x5c, 0x2e, '_', 'S', 'B', '_', 'D', 'E', 'V', '_');
	aml_init(&a, buf, sizeof(buf));
	aml_buffer(&a, (const uint8_t[]){ 0x79, 0x00 }, 2);
	EXPECT(&a, 0x11, 0x05, 0x0a, 0x02, 0x79, 0x00); /* the length counts itself */
}

/* Nested objects whose bodies cross the one-byte PkgLength limit: every
 * inner length must still be right after the outer ones shrink. */
static void test_nesting(void)
{
	struct aml a;
	aml_init(&a, buf, sizeof(buf));
	size_t outer = aml_package(&a, 10);
	for (int i = 0; i < 10; i++) {
		size_t in = aml_package(&a, 3);
		aml_integer(&a, 0x12345678u + (unsigned)i);
		aml_integer(&a, 0x100000000ull);
		aml_integer(&a, (unsigned)i);
		aml_end(&a, in);
	}
	aml_end(&a, outer);
	CHECK(!a.overflow && a.buf[0] == 0x12);
	/* walk it: outer PkgLength (2 bytes), count, then 10 packages of 1+1+1+5+9+k */
	uint8_t o[4];
	size_t n = aml_pkglength(a.len - 1 - 2, o);
	CHECK(n == 2 && a.buf[1] == o[0] && a.buf[2] == o[1] && a.buf[3] == 10);
	size_t at = 4;
	for (int i = 0; i < 10 && at < a.len; i++) {
		size_t body = 1 + 5 + 9 + 1 + (i > 1);
		CHECK(a.buf[at] == 0x12 && a.buf[at + 1] == body + 1 && a.buf[at + 2] == 3);
		at += 2 + body;
	}
	CHECK(at == a.len);
	/* a full buffer: flagged, never written past */
	uint8_t small[6];
	aml_init(&a, small, sizeof(small));
	aml_end(&a, aml_device(&a, "ABCD"));
	CHECK(a.overflow && a.len <= sizeof(small));
}

static void test_dsdt(void)
{
	const struct acpi_pci pci = { PCI_MMIO_DEFAULT_BASE, PCI_MMIO_DEFAULT_SIZE };
	size_t n = acpi_dsdt_aml(buf, sizeof(buf), &pci);
	CHECK(n > 0 && n < 4096);
	CHECK(memmem(buf, n, "\x08_HID\x0c\x41\xd0\x0a\x03", 10) != NULL);
	CHECK(memmem(buf, n, "_PRT", 4) != NULL && memmem(buf, n, "_CRS", 4) != NULL);
	/* the window's ends, little-endian, inside the DWordMemory descriptor */
	CHECK(memmem(buf, n, "\x00\x00\x00\xe0\xff\xff\xff\xef", 8) != NULL);
	/* COM1 (PNP0501) with its ports and IRQ 4, so that a hardware-reduced
	 * Linux maps the IRQ (without it user space has no console) */
	CHECK(memmem(buf, n, "COM1", 4) != NULL);
	CHECK(memmem(buf, n, "\x08_HID\x0c\x41\xd0\x05\x01", 10) != NULL);
	CHECK(memmem(buf, n, "\x47\x01\xf8\x03\xf8\x03\x01\x08\x22\x10\x00\x79\x00", 13) != NULL);
	CHECK(acpi_dsdt_aml(buf, 100, &pci) == 0);
	/* the routing the devices use is the one described */
	CHECK(pci_intx_gsi(1, 0) == 17 && pci_intx_gsi(7, 1) == 16 && pci_intx_gsi(31, 3) == 18);
	for (unsigned s = 0; s < PCI_MAX_SLOTS; s++)
		for (unsigned p = 0; p < 4; p++)
			CHECK(pci_intx_gsi(s, p) >= 16 && pci_intx_gsi(s, p) <= 23);

	const char *out = getenv("VMM_TEST_DSDT_OUT");
	if (out) {
		/* the whole tables, as the guest sees them; the DSDT alone for ACPICA */
		static uint8_t mem[0x20000];
		uint64_t rsdp;
		size_t used = acpi_build(mem, 0, sizeof(mem), 4, &pci, &rsdp);
		CHECK(used > 0);
		uint64_t xsdt, fadt, dsdt;
		memcpy(&xsdt, mem + 24, 8);
		memcpy(&fadt, mem + xsdt + 36, 8);
		memcpy(&dsdt, mem + fadt + 140, 8);
		uint32_t len;
		memcpy(&len, mem + dsdt + 4, 4);
		FILE *f = fopen(out, "wb");
		CHECK(f && fwrite(mem + dsdt, 1, len, f) == len);
		if (f)
			fclose(f);
	}
}

int main(void)
{
	RUN(test_pkglength);
	RUN(test_names_and_data);
	RUN(test_nesting);
	RUN(test_dsdt);
	return check_summary();
}
