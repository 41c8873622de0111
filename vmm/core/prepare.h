/*
 * Everything `vmm run` can check without KVM, checked before /dev/kvm is
 * opened: the guest image (bundled, --firmware ELF, or -k bzImage with its
 * initrd), whether it fits -m, the disk image, --pcpus against the CPUs this
 * process may use. So a user error is exit 2 on every machine, one without
 * KVM included, and each file is read once: the VMs are built from what was
 * read here (--vms K copies share it).
 */
#ifndef VMM_PREPARE_H
#define VMM_PREPARE_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/core/loop_cpu.h"
#include "vmm/domain/member_link.h"
#include "vmm/linux/boot_linux.h"
#include "vmm/config.h"
#include "vmm/boot/elf_loader.h"
#include "vmm/boot/layout.h"

#define VM_INPUTS_MAX_SLOTS 1024

struct vm_error;

struct vm_inputs {
	struct guest_layout layout; /* the same for every VM of the run */

	/* firmware guests: the ELF, validated against layout.reserved_base */
	const uint8_t *image; /* the bundled blob, or image_buf */
	size_t image_len;
	struct elf_image elf;
	uint8_t *image_buf;   /* --firmware FILE, read */

	/* Linux guests (-k): the kernel, its header, the initrd, where they go */
	uint8_t *kernel;
	size_t kernel_len;
	struct bzimage bz;
	uint8_t *initrd;
	size_t initrd_len;

	/* the host CPUs the slots are tied to (--pcpus M of those allowed) */
	int slot_cpu[VM_INPUTS_MAX_SLOTS];
	unsigned nslots;
	cpu_set_t cpus;
	cpu_set_t allowed; /* every CPU this process may use */

	/* --loop-cpu: where the event loop goes (run.c pins it) */
	struct loop_cpu_choice loop;

	/* --domain: the link to the agent (joined here) and what it said */
	struct dlink *domain;
	struct dlink_info dom;
};

/* 0, or negative with err filled (VMM_EXIT_USAGE for anything the user can fix). */
int vm_inputs_prepare(struct vm_inputs *in, const struct vm_config *cfg, struct vm_error *err);
void vm_inputs_free(struct vm_inputs *in);

#endif
