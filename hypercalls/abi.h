/*
 * The guest <-> VMM hypercall ABI, shared by the VMM and any guest written
 * against hypercalls/ABI.md. Freestanding: only fixed-width types, so the
 * bundled firmware includes it unchanged.
 */
#ifndef VMM_HYPERCALLS_ABI_H
#define VMM_HYPERCALLS_ABI_H

#include <stdint.h>

#define VMM_ABI_VERSION 2u

/*
 * A hypercall is one 8-byte MMIO read from VMM_HC_BASE + 8 * nr.
 * Arguments: RDI, RSI, RDX, RCX. Result: the value read (64-bit, signed;
 * negative values are -errno). Works from CPL0 and CPL3 alike.
 */
#define VMM_HC_BASE 0xd0000000ull
#define VMM_HC_SIZE 0x1000ull

/*
 * A page of MMIO right after the hypercall window where reads return 0 and
 * writes are dropped, with no work in the VMM: a guest times a bare exit
 * there, the reference a hypercall's cost is measured against.
 */
#define VMM_NULL_MMIO_BASE (VMM_HC_BASE + VMM_HC_SIZE)
#define VMM_NULL_MMIO_SIZE 0x1000ull

enum vmm_hc_nr {
	VMM_HC_VERSION = 0,       /* () -> VMM_ABI_VERSION */
	VMM_HC_CONSOLE_WRITE = 1, /* (gpa, len) -> bytes written */
	VMM_HC_REPORT = 2,        /* (key_gpa, value) -> 0 */
	VMM_HC_EXIT = 3,          /* (status) -> does not return */
	/* version 2: the co-scheduler's calls (ABI.md section 4) */
	VMM_HC_WAIT = 4,     /* (gpa, expected u32, timeout_ns) -> 0 kicked, 1 value differs */
	VMM_HC_KICK = 5,     /* (vcpu) -> 0 */
	VMM_HC_YIELD_TO = 6, /* (vcpu or -1) -> 0 once running again */
	VMM_HC_SPIN = 7,     /* (vcpu waited for or -1) -> 0 once running again */
	/* feature negotiation (ABI.md 4.3): this vCPU accepts VMM_PV_* bits */
	VMM_HC_ACK_FEATURES = 8, /* (bits, each in pv-features) -> the vCPU's accepted set */
	VMM_HC_COUNT = 9,
};

/* Error codes returned in the guest (Linux errno values, negated). */
#define VMM_EPERM 1
#define VMM_ESRCH 3
#define VMM_EFAULT 14
#define VMM_EINVAL 22
#define VMM_ENOSYS 38
#define VMM_ETIMEDOUT 110

/*
 * /vmm/pv-features (u32): what this VMM serves to this guest. A guest uses a
 * paravirtual path only when its bit is set, and falls back to plain spinning
 * otherwise, the way Linux reads KVM's CPUID leaf 0x40000001.
 */
#define VMM_PV_WAIT_KICK (1u << 0)  /* wait/kick: PV spinlocks (--pv-spinlock on) */
#define VMM_PV_YIELD (1u << 1)      /* yield_to */
#define VMM_PV_SPIN_EXIT (1u << 2)  /* spin: leave a spin loop by hypercall (--spin-detect yield) */
#define VMM_PV_SPIN_HINT (1u << 3)  /* spinning_since is read (--spin-detect hint) */
#define VMM_PV_SAFE_POINT (1u << 4) /* preempt_pending is set (safe-point preemption) */
#define VMM_PV_PREEMPTED (1u << 5)  /* preempted is maintained (co-scheduler on) */
#define VMM_PV_GUEST_SLICE (1u << 6) /* slice_tsc/slice_seq/contended: the guest may end its own slices */

/*
 * The features added after version 2 fixed the shared page: their fields
 * were reserved (0) then, so the VMM writes them, and honours the guest's
 * own, only for a vCPU that acknowledged the bit (VMM_HC_ACK_FEATURES). A
 * guest written before the bit existed acknowledges nothing and keeps the
 * page as version 2 first defined it.
 */
#define VMM_PV_NEED_ACK VMM_PV_GUEST_SLICE

#define VMM_REPORT_KEY_MAX 31 /* bytes, not counting the NUL */
#define VMM_CONSOLE_WRITE_MAX 4096

/* isa-debug-exit style port: a 32-bit OUT of v ends the whole VM, status v. */
#define VMM_DEBUG_EXIT_PORT 0xf4

/*
 * One 4 KiB page per vCPU, at /vmm/shared-pages + 4096 * vcpu (device tree).
 * Both sides use plain aligned loads/stores and atomics; every field is
 * naturally aligned so a single access is never torn.
 */
struct vmm_shared_page {
	uint32_t abi_version;     /* VMM writes VMM_ABI_VERSION at start */
	uint32_t vcpu_id;         /* VMM */
	uint32_t preempted;       /* VMM: 1 while the vCPU is descheduled */
	uint32_t preempt_pending; /* VMM: please yield at your next safe point: 0, or
				     the request's number (new for each request) */
	uint64_t spinning_since;  /* guest: TSC when it began spinning, 0 = not */
	uint32_t in_critical;     /* guest: >0 while holding or queued for a lock */
	int32_t waiting_for;      /* guest: vCPU it waits on, -1 = unknown */
	uint32_t kick_pending;    /* VMM: a kick arrived that no wait consumed */
	uint32_t reserved0;
	uint64_t steal_ns;        /* VMM: time runnable but not running */
	/* VMM_PV_GUEST_SLICE, once acknowledged (ABI.md 4.3, 7); 0 before: */
	uint64_t slice_tsc;       /* VMM: length of the slice that slice_seq starts, in TSC ticks */
	uint32_t slice_seq;       /* VMM: a new number (never 0) at each slice start, after slice_tsc */
	uint32_t contended;       /* VMM: 1 while another vCPU waits for a physical CPU */
	uint32_t guest_slice;     /* guest: 1 = I end my slices myself */
	uint32_t reserved1;
	uint8_t reserved[4096 - 72];
};

_Static_assert(sizeof(struct vmm_shared_page) == 4096, "shared page is one page");

#endif
