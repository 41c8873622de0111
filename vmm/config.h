/* What a `vmm run` was asked to do, validated before any VM exists. */
#ifndef VMM_CONFIG_H
#define VMM_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#define VMM_VERSION "0.1.0"
/* --kvm-device, else $VMM_KVM_DEVICE, else this */
#define VMM_KVM_DEVICE_DEFAULT "/dev/kvm"
#define VMM_KVM_DEVICE_ENV "VMM_KVM_DEVICE"

enum sched_mode {
	SCHED_MODE_VMM,  /* the co-scheduler decides who runs on which slot */
	SCHED_MODE_HOST, /* vCPU threads left to the host kernel, confined to M CPUs */
};

/* --spin-detect sources, as a bit mask. */
#define SPIN_DETECT_PLE (1u << 0)
#define SPIN_DETECT_HINT (1u << 1)
#define SPIN_DETECT_YIELD (1u << 2)

/* --loop-cpu: a host CPU number, or one of these */
#define LOOP_CPU_AUTO (-1) /* a CPU no slot uses, if this process may use one */
#define LOOP_CPU_NONE (-2) /* never pinned */

struct vm_config {
	unsigned int ncpus;
	uint64_t mem_bytes;
	const char *firmware_path; /* NULL: the bundled guest */
	const char *workload;
	const char *lock;
	uint32_t cs_cycles;
	uint32_t work_cycles;
	uint32_t spin_threshold;
	uint32_t duration_ms;
	uint64_t timeout_ms; /* 0: none */
	const char *json_path;
	bool quiet; /* no guest console echo */

	/* the co-scheduler */
	enum sched_mode sched_mode;
	unsigned pcpus; /* slots; 0: every CPU this process may use */
	unsigned vms;   /* copies of the guest under one scheduler */
	const char *policy;
	unsigned spin_detect;
	uint32_t slice_us, ple_window_us, defer_us;
	uint32_t wake_slice_us; /* slices while a woken vCPU queues; 0: never shorter */
	uint32_t halt_check_us; /* Linux guests: how often to look for in-kernel halts; 0: never */
	bool safe_point;
	bool guest_slice; /* --guest-slice: offer VMM_PV_GUEST_SLICE with safe points */
	bool own_tick;    /* --own-tick: a slot's deadlines on its holder's own timer */
	bool pv_spinlock;
	bool pv_shootdown;
	const char *trace_path;
	int loop_cpu; /* --loop-cpu: LOOP_CPU_AUTO, LOOP_CPU_NONE or a host CPU */
	/* --domain: one VM of a scheduling domain (vmm/domain/member_link.h) */
	const char *domain;
	uint32_t weight;
	bool weight_set;
	bool slice_floor; /* --slice-floor: sched_set_slice_floor while another member waits */
	bool slice_floor_set; /* ... said on the command line */
	const char *vm_name;
	uint64_t start_at_ns; /* --start-at: CLOCK_MONOTONIC instant the vCPUs start; 0: at once */
	bool no_seccomp; /* --no-seccomp: no per-thread seccomp filters (debugging) */
	const char *ple_tracepoint; /* testing: count this tracepoint as PLE exits */
	const char *kvm_device; /* the KVM device node */

	/* Linux guests (vmm/core/vm_linux.c): -k boots a bzImage instead of the firmware */
	const char *kernel_path;
	const char *initrd_path;
	const char *cmdline;
	const char *disk_path;
	bool disk_read_only;       /* -d FILE,ro */
	char disk_path_buf[4096];  /* disk_path without its ",ro" */
	unsigned cpuid_mask;  /* CPUID_MASK_* (vcpu/x86/cpuid_kvm.h); CPUID_MASK_AUTO: from the host */
};

void vm_config_defaults(struct vm_config *cfg);

#endif
