#include "vmm/linux/acpi.h"

#include <string.h>

#include "devices/pci_bus.h"
#include "devices/uart8250.h"
#include "lib/bytes.h"
#include "vmm/linux/aml.h"

#define HDR_LEN 36
#define FADT_LEN 276 /* ACPI 6.x FADT, with the sleep control/status registers */
#define FADT_HW_REDUCED_ACPI (1u << 20)
#define FADT_BOOT_NO_VGA (1u << 2)
#define FADT_BOOT_NO_CMOS_RTC (1u << 5)

static uint8_t checksum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;
	while (n--)
		s = (uint8_t)(s + *p++);
	return (uint8_t)-s;
}

/* The common table header; the checksum is filled once the table is complete. */
static void header(uint8_t *t, const char sig[4], uint32_t len, uint8_t rev)
{
	memcpy(t, sig, 4);
	put_le32(t + 4, len);
	t[8] = rev;
	memcpy(t + 10, "VMMVMM", 6);   /* OEM ID */
	memcpy(t + 16, "VMMLINUX", 8); /* OEM table ID */
	put_le32(t + 24, 1);              /* OEM revision */
	memcpy(t + 28, "VMM ", 4);     /* creator ID */
	put_le32(t + 32, 1);
}

static void seal(uint8_t *t)
{
	uint32_t len = get_le32(t + 4);
	t[9] = 0;
	t[9] = checksum(t, len);
}

/* A Generic Address Structure for a byte-wide I/O port. */
static void gas_io8(uint8_t *g, uint16_t port)
{
	g[0] = 1; /* system I/O */
	g[1] = 8; /* bit width */
	g[2] = 0;
	g[3] = 1; /* byte access */
	put_le64(g + 4, port);
}

/* COM1 as an ACPI device, with its ports and ISA IRQ. A hardware-reduced
 * Linux has no legacy PIC, so its IRQ numbers 0-15 are not GSIs 0-15: the
 * 8250 driver's built-in COM1 asks for Linux IRQ 4, which nothing maps, its
 * request_irq fails and the port cannot be opened, so user space (/init's
 * /dev/console) writes nothing while printk's polled console still works.
 * Described here, 8250_pnp takes the port over with the IRQ mapped through
 * the IOAPIC (QEMU's microvm describes its COM1 the same way). */
static void dsdt_com1(struct aml *a)
{
	size_t dev = aml_device(a, "COM1");
	aml_name(a, "_HID");
	aml_eisaid(a, "PNP0501"); /* 16550A-compatible */
	aml_name(a, "_UID");
	aml_integer(a, 1);
	uint8_t res[32];
	struct aml r;
	aml_init(&r, res, sizeof(res));
	aml_res_io(&r, UART_COM1_BASE, UART_NREGS);
	aml_res_irq(&r, UART_COM1_IRQ);
	aml_res_end(&r);
	aml_name(a, "_CRS");
	aml_buffer(a, res, r.overflow ? 0 : r.len);
	if (r.overflow)
		a->overflow = true;
	aml_end(a, dev);
}

size_t acpi_dsdt_aml(uint8_t *buf, size_t cap, const struct acpi_pci *pci)
{
	struct aml a;
	aml_init(&a, buf, cap);
	/* Name (_S5, Package () { 5, 0 }): SLP_TYP for the sleep control register */
	aml_name(&a, "_S5_");
	size_t pkg = aml_package(&a, 2);
	aml_integer(&a, ACPI_SLP_TYP_S5);
	aml_integer(&a, 0);
	aml_end(&a, pkg);

	size_t sb = aml_scope(&a, "\\_SB_");
	size_t dev = aml_device(&a, "PCI0");
	aml_name(&a, "_HID");
	aml_eisaid(&a, "PNP0A03");
	aml_name(&a, "_UID");
	aml_integer(&a, 0);
	aml_name(&a, "_SEG");
	aml_integer(&a, 0);
	aml_name(&a, "_BBN");
	aml_integer(&a, 0);

	/* What the bridge decodes: bus 0, its own config ports, all other I/O
	 * ports (the legacy devices' too, as on a PC), the MMIO window. */
	uint8_t res[128];
	struct aml r;
	aml_init(&r, res, sizeof(res));
	aml_res_word_bus(&r, 0, 0);
	aml_res_io(&r, PCI_CONFIG_ADDR_PORT, 8);
	aml_res_word_io(&r, 0x0000, PCI_CONFIG_ADDR_PORT - 1);
	aml_res_word_io(&r, PCI_CONFIG_DATA_PORT + 4, 0xffff);
	aml_res_dword_mem(&r, pci->mmio_base, pci->mmio_base + (pci->mmio_size - 1));
	aml_res_end(&r);
	if (r.overflow)
		return 0;
	aml_name(&a, "_CRS");
	aml_buffer(&a, res, r.len);

	/* Package { address (slot << 16 | 0xFFFF: any function), pin, 0, GSI } */
	aml_name(&a, "_PRT");
	size_t prt = aml_package(&a, (PCI_MAX_SLOTS - 1) * 4);
	for (unsigned slot = 1; slot < PCI_MAX_SLOTS; slot++)
		for (unsigned pin = 0; pin < 4; pin++) {
			size_t e = aml_package(&a, 4);
			aml_integer(&a, (uint64_t)slot << 16 | 0xffff);
			aml_integer(&a, pin);
			aml_integer(&a, 0); /* no link device: the last field is a GSI */
			aml_integer(&a, pci_intx_gsi(slot, pin));
			aml_end(&a, e);
		}
	aml_end(&a, prt);
	aml_end(&a, dev);
	dsdt_com1(&a);
	aml_end(&a, sb);
	return a.overflow || a.bad_name ? 0 : a.len;
}

size_t acpi_build(uint8_t *mem, uint64_t gpa, size_t room, unsigned ncpus, const struct acpi_pci *pci,
		  uint64_t *rsdp)
{
	uint8_t dsdt_aml[4096];
	size_t aml_len = acpi_dsdt_aml(dsdt_aml, sizeof(dsdt_aml), pci);
	if (!aml_len)
		return 0;
	size_t madt_len = HDR_LEN + 8 + (size_t)ncpus * 8 + 12;
	uint64_t rsdp_at = gpa, xsdt_at = gpa + 48, fadt_at = xsdt_at + HDR_LEN + 16;
	uint64_t dsdt_at = fadt_at + FADT_LEN, madt_at = (dsdt_at + HDR_LEN + aml_len + 15) & ~15ull;
	size_t used = (size_t)(madt_at + madt_len - gpa);
	if (used > room || ncpus > ACPI_MAX_CPUS)
		return 0;
	memset(mem + gpa, 0, used);

	uint8_t *p = mem + rsdp_at;
	memcpy(p, "RSD PTR ", 8);
	memcpy(p + 9, "VMMVMM", 6);
	p[15] = 2;                     /* ACPI 2.0+: use the XSDT */
	put_le32(p + 20, 36);             /* length */
	put_le64(p + 24, xsdt_at);
	p[8] = checksum(p, 20);
	p[32] = checksum(p, 36);

	uint8_t *x = mem + xsdt_at;
	header(x, "XSDT", HDR_LEN + 16, 1);
	put_le64(x + HDR_LEN, fadt_at);
	put_le64(x + HDR_LEN + 8, madt_at);
	seal(x);

	uint8_t *f = mem + fadt_at;
	header(f, "FACP", FADT_LEN, 6);
	put_le32(f + 40, (uint32_t)dsdt_at);
	put_le16(f + 109, FADT_BOOT_NO_VGA | FADT_BOOT_NO_CMOS_RTC);
	put_le32(f + 112, FADT_HW_REDUCED_ACPI);
	f[131] = 0;                    /* FADT minor version */
	put_le64(f + 140, dsdt_at);       /* X_DSDT */
	gas_io8(f + 244, ACPI_SLEEP_PORT); /* SLEEP_CONTROL_REG */
	gas_io8(f + 256, ACPI_SLEEP_PORT); /* SLEEP_STATUS_REG: reads 0 */
	memcpy(f + 268, "VMMVMM\0\0", 8);  /* hypervisor vendor identity */
	seal(f);

	uint8_t *d = mem + dsdt_at;
	header(d, "DSDT", (uint32_t)(HDR_LEN + aml_len), 2);
	memcpy(d + HDR_LEN, dsdt_aml, aml_len);
	seal(d);

	uint8_t *m = mem + madt_at;
	header(m, "APIC", (uint32_t)madt_len, 4);
	put_le32(m + HDR_LEN, ACPI_LAPIC_GPA);
	put_le32(m + HDR_LEN + 4, 1); /* PCAT_COMPAT: the in-kernel 8259s exist */
	uint8_t *e = m + HDR_LEN + 8;
	for (unsigned i = 0; i < ncpus; i++, e += 8) {
		e[0] = 0;           /* processor local APIC */
		e[1] = 8;
		e[2] = (uint8_t)i;  /* ACPI processor UID */
		e[3] = (uint8_t)i;  /* APIC ID: what KVM gives vCPU i */
		put_le32(e + 4, 1);    /* enabled */
	}
	e[0] = 1; /* I/O APIC */
	e[1] = 12;
	e[2] = 0;              /* the ID KVM's in-kernel IOAPIC resets to */
	put_le32(e + 4, ACPI_IOAPIC_GPA);
	put_le32(e + 8, 0);       /* GSI base */
	seal(m);

	*rsdp = rsdp_at;
	return used;
}
