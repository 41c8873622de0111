/*
 * The few PC ports a Linux guest needs besides the UART and what KVM emulates
 * in the kernel (PIC, PIT, IOAPIC, local APICs):
 *  - the keyboard controller's command port 0x64: writing 0xFE pulses the
 *    CPU reset line (how Linux reboots with reboot=k, and its default
 *    fallback); status reads 0 (no data, input buffer empty); port 0x60 reads 0;
 *  - a CMOS/RTC stub at 0x70/0x71 that reads 0 (never "update in progress");
 *  - the ACPI sleep control register, which the FADT (vmm/linux/acpi.c)
 *    names: SLP_EN with SLP_TYP 5 (the \_S5 value) is the guest's power-off.
 */
#ifndef VMM_DEVICES_PC_LEGACY_H
#define VMM_DEVICES_PC_LEGACY_H

#include <stdbool.h>
#include <stdint.h>

#define PC_KBC_DATA 0x60
#define PC_KBC_CMD 0x64
#define PC_KBC_RESET 0xfe
#define PC_CMOS_BASE 0x70
/* The FADT's sleep control/status register (an I/O port, byte wide). */
#define ACPI_SLEEP_PORT 0x3c0
#define ACPI_SLP_EN 0x20
#define ACPI_SLP_TYP_S5 5

enum pc_power_event { PC_POWER_RESET = 1, PC_POWER_OFF = 2 };

struct pc_legacy {
	void (*power)(void *opaque, unsigned vcpu, enum pc_power_event ev);
	void *opaque;
};

/* io_bus handlers: kbc at 0x64 and kbc_data at 0x60 (len 1 each; 0x61 is
 * the in-kernel PIT's), cmos at 0x70 (len 2), sleep at the ACPI port (len 1). */
int pc_kbc_data_io(void *dev, unsigned vcpu, uint64_t offset, uint8_t *data, unsigned len, bool is_write);
int pc_kbc_io(void *dev, unsigned vcpu, uint64_t offset, uint8_t *data, unsigned len, bool is_write);
int pc_cmos_io(void *dev, unsigned vcpu, uint64_t offset, uint8_t *data, unsigned len, bool is_write);
int pc_acpi_sleep_io(void *dev, unsigned vcpu, uint64_t offset, uint8_t *data, unsigned len, bool is_write);

#endif
