/*
 * A vCPU's binary statistics (KVM_GET_STATS_FD): the descriptors are read
 * once, by name, and a value afterwards is one pread of 8 bytes. Used to see
 * what happens inside KVM_RUN that never reaches userspace, e.g. a halt
 * with the in-kernel irqchip (`blocking`), for the co-scheduler.
 */
#ifndef VMM_VCPU_KVM_STATS_H
#define VMM_VCPU_KVM_STATS_H

#include <stdbool.h>
#include <stdint.h>

enum kvm_stat_id {
	KVM_STAT_BLOCKING,   /* 1 while the vCPU sleeps in the kernel (halted) */
	KVM_STAT_HALT_EXITS, /* guest HLTs */
	KVM_STAT_HALT_WAKEUP, /* halts ended by a wake-up (an interrupt, a PV kick) */
	KVM_STAT_HYPERCALLS,  /* VMCALLs KVM served: PV kicks, PV IPIs, PV yields */
	KVM_STAT_COUNT,
};

struct kvm_vcpu_stats {
	int fd;                           /* -1: not open */
	uint64_t at[KVM_STAT_COUNT];      /* file offset of each value; 0: absent */
};

/* 0, or -errno (-EOPNOTSUPP: the kernel has no binary stats; -ENOENT: no
 * `blocking`). s->fd is -1 on failure. */
int kvm_stats_open(int vcpu_fd, struct kvm_vcpu_stats *s);
/* The stats file itself, for tests (vcpu_fd unused): same contract. */
int kvm_stats_parse_fd(int stats_fd, struct kvm_vcpu_stats *s);
/* 0 and *val, or -errno (-ENOENT: this kernel lacks that stat). */
int kvm_stats_read(const struct kvm_vcpu_stats *s, enum kvm_stat_id id, uint64_t *val);
void kvm_stats_close(struct kvm_vcpu_stats *s);

#endif
