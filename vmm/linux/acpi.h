/*
 * Minimal ACPI tables for Linux guests, the SMP description the kernel
 * understands (Debian's cloud kernel is built without CONFIG_X86_MPPARSE, so
 * an MP table would be ignored): RSDP -> XSDT -> FADT (hardware-reduced,
 * with a sleep control register for power-off) -> DSDT, and a MADT with one
 * local APIC per vCPU and the in-kernel IOAPIC. The DSDT holds \_S5 and the
 * PCI root bridge \_SB.PCI0 (PNP0A03): bus 0, the config ports, the I/O
 * ranges and the MMIO window as _CRS, and the INTx routing as _PRT (GSIs
 * from pci_intx_gsi), so a stock kernel finds PCI devices through ACPI
 * without `pci=noacpi`.
 */
#ifndef VMM_ACPI_H
#define VMM_ACPI_H

#include <stddef.h>
#include <stdint.h>

#define ACPI_IOAPIC_GPA 0xfec00000u
#define ACPI_LAPIC_GPA 0xfee00000u
/* The FADT's sleep register is the device's (devices/pc_legacy.h). */
#include "devices/pc_legacy.h"

/* The PCI host bridge's memory window, below 4 GiB. */
struct acpi_pci {
	uint32_t mmio_base, mmio_size;
};

/* The MADT's local APIC IDs are one byte (xAPIC). */
#define ACPI_MAX_CPUS 255

/* Writes the tables at gpa (16-byte aligned) in mem; returns the bytes used,
 * or 0 if they do not fit in room. *rsdp gets the RSDP's address (== gpa). */
size_t acpi_build(uint8_t *mem, uint64_t gpa, size_t room, unsigned ncpus, const struct acpi_pci *pci,
		  uint64_t *rsdp);
/* The DSDT's AML body (no table header) into buf; its length, or 0 if cap is
 * too small. Exposed for tests (tests/unit/test_acpi.c runs it through ACPICA). */
size_t acpi_dsdt_aml(uint8_t *buf, size_t cap, const struct acpi_pci *pci);

#endif
