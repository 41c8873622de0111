/*
 * Minimal ACPI tables for Linux guests, the SMP description the kernel
 * understands (Debian's cloud kernel is built without CONFIG_X86_MPPARSE, so
 * an MP table would be ignored): RSDP -> XSDT -> FADT (hardware-reduced,
 * with a sleep control register for power-off) -> DSDT (only \_S5), and a
 * MADT with one local APIC per vCPU and the in-kernel IOAPIC.
 */
#ifndef VMM_ACPI_H
#define VMM_ACPI_H

#include <stddef.h>
#include <stdint.h>

#define ACPI_IOAPIC_GPA 0xfec00000u
#define ACPI_LAPIC_GPA 0xfee00000u
/* The FADT's sleep control/status register (an I/O port, byte wide). A write
 * of SLP_EN (0x20) with SLP_TYP 5 (the \_S5 value) powers the guest off. */
#define ACPI_SLEEP_PORT 0x3c0
#define ACPI_SLP_EN 0x20
#define ACPI_SLP_TYP_S5 5

/* Writes the tables at gpa (16-byte aligned) in mem; returns the bytes used,
 * or 0 if they do not fit in room. *rsdp gets the RSDP's address (== gpa). */
size_t acpi_build(uint8_t *mem, uint64_t gpa, size_t room, unsigned ncpus, uint64_t *rsdp);

#endif
