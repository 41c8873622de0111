/*
 * Firmware-wide limits and the x86 layout shared by entry.S, x86_tables.S
 * and the C code. Only preprocessor definitions above the __ASSEMBLER__
 * guard, so the assembly files can include it.
 */
#ifndef FW_FW_H
#define FW_FW_H

#define FW_MAX_CPUS 256
#define FW_KSTACK_SHIFT 12 /* 4 KiB: only the fault handler runs on it */
#define FW_USTACK_SHIFT 14 /* 16 KiB: libfdt and the workloads */
#define FW_KSTACK_SIZE (1 << FW_KSTACK_SHIFT)
#define FW_USTACK_SIZE (1 << FW_USTACK_SHIFT)

/* GDT selectors; user data sits below user code as SYSRET expects, should
 * a later firmware use it. */
#define FW_SEL_KCODE 0x08
#define FW_SEL_KDATA 0x10
#define FW_SEL_UDATA 0x18
#define FW_SEL_UCODE 0x20
#define FW_SEL_TSS0 0x28 /* vCPU i's 16-byte TSS descriptor at 0x28 + 16*i */
#define FW_RPL3 3

#define FW_TSS_STRIDE 128 /* one struct fw_tss per vCPU; see linker.ld */
#define FW_TSS_RSP0 4
#define FW_TSS_IOMAP 102
#define FW_TSS_LIMIT 103 /* hardware TSS is 104 bytes */

#define FW_FAULT_STUB_SIZE 16 /* linker.ld relies on this stride */
#define FW_NUM_FAULT_VECTORS 32

/* Exit statuses (VMM_HC_EXIT) the firmware uses. */
#define FW_EXIT_OK 0
#define FW_EXIT_CONFIG 1   /* bad device tree or unsupported configuration */
#define FW_EXIT_VERIFY 2   /* a workload's self-check failed */
#define FW_EXIT_BUG 3      /* firmware internal error (stack smashing, ...) */
#define FW_EXIT_FAULT 0x80 /* + vector: CPU exception */

#define FW_MSR_FS_BASE 0xc0000100

#endif
