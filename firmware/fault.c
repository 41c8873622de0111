/*
 * CPU exceptions, from any vCPU at CPL0 or CPL3: say what happened in one
 * console line and a few report keys, then end the vCPU with status
 * FW_EXIT_FAULT + vector. Runs at CPL0, possibly emulated: a fatal path,
 * so a few thousand instructions do not matter, but no SSE (firmware.mk).
 */
#include <stdint.h>

#include "firmware/console.h"
#include "firmware/fw.h"
#include "firmware/hypercall.h"

/* What fault_entry.S and the CPU leave on the kernel stack. */
struct fw_fault_frame {
	uint64_t vector;
	uint64_t error; /* 0 where the CPU pushes none */
	uint64_t rip, cs, rflags, rsp, ss;
};

extern char fw_kstacks[];

static const char *const vector_names[FW_NUM_FAULT_VECTORS] = {
	"#DE", "#DB", "NMI", "#BP", "#OF", "#BR", "#UD", "#NM",
	"#DF", "coprocessor overrun", "#TS", "#NP", "#SS", "#GP", "#PF", "vector 15",
	"#MF", "#AC", "#MC", "#XM", "#VE", "#CP", "vector 22", "vector 23",
	"vector 24", "vector 25", "vector 26", "vector 27", "#HV", "#VC", "#SX", "vector 31",
};

__attribute__((noreturn)) void fw_fault(const struct fw_fault_frame *f);
void fw_fault(const struct fw_fault_frame *f)
{
	uint64_t cr2, vcpu;
	uint64_t off = (uintptr_t)f - (uintptr_t)fw_kstacks;
	uint32_t vec = f->vector % FW_NUM_FAULT_VECTORS;

	__asm__ volatile("mov %%cr2, %0" : "=r"(cr2));
	/* The kernel stack in use says which vCPU this is. */
	vcpu = off < (uint64_t)FW_MAX_CPUS * FW_KSTACK_SIZE ? off >> FW_KSTACK_SHIFT : ~0ull;

	fw_printf("firmware: vCPU %ld: CPU exception %u (%s) at CPL%lu: error 0x%lx, "
		  "rip 0x%lx, rsp 0x%lx, rflags 0x%lx, cr2 0x%lx\n",
		  (long)vcpu, vec, vector_names[vec], f->cs & 3, f->error, f->rip, f->rsp,
		  f->rflags, cr2);
	fw_report("fault_vcpu", vcpu);
	fw_report("fault_vector", vec);
	fw_report("fault_error", f->error);
	fw_report("fault_rip", f->rip);
	fw_report("fault_cr2", cr2);
	fw_hc(VMM_HC_EXIT, FW_EXIT_FAULT + vec, 0, 0, 0);
	for (;;)
		__asm__ volatile("hlt");
}
