#include "vmm/core/prepare.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm/linux/acpi.h"
#include "vmm/errors.h"
#include "vmm/host/file.h"
#include "vmm/core/sched_glue.h"
#include "vmm/core/vm.h"

#define IMAGE_MAX (256u << 20)
#define KERNEL_MAX (256u << 20)
#define INITRD_MAX (1u << 30)

extern const uint8_t vmm_firmware_start[], vmm_firmware_end[];

static int prepare_slots(struct vm_inputs *in, const struct vm_config *cfg, struct vm_error *err)
{
	int n = sched_glue_host_cpus(cfg->pcpus, in->slot_cpu, VM_INPUTS_MAX_SLOTS, &in->cpus);
	if (n == -ERANGE)
		return vm_error_set(err, VMM_EXIT_USAGE, -EINVAL, "--pcpus: %u CPUs asked for, this process may use only %d",
			    cfg->pcpus, CPU_COUNT(&in->cpus));
	if (n <= 0 || sched_getaffinity(0, sizeof(in->allowed), &in->allowed) < 0)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, n < 0 ? n : -ENODEV, "cannot read this process's CPU affinity");
	in->nslots = (unsigned)n;
	return 0;
}

/* --loop-cpu against the CPUs the vCPUs use: for a domain member, once
 * after the join (the domain's CPUs) and once before it, so that a CPU this
 * process may not use is refused before joining. */
static int prepare_loop_cpu(struct vm_inputs *in, const struct vm_config *cfg, struct vm_error *err)
{
	struct loop_cpu_in q = { .allowed = &in->allowed, .slots = &in->cpus, .want = cfg->loop_cpu,
				 .mode = cfg->domain ? LOOP_CPU_DOMAIN
					 : cfg->sched_mode == SCHED_MODE_HOST ? LOOP_CPU_HOST : LOOP_CPU_VMM };
	if (loop_cpu_choose(&q, &in->loop))
		return vm_error_set(err, VMM_EXIT_USAGE, -EINVAL, "%s", in->loop.note);
	return 0;
}

static int prepare_elf(struct vm_inputs *in, const struct vm_config *cfg, struct vm_error *err)
{
	const char *name = cfg->firmware_path ? cfg->firmware_path : "bundled firmware";
	char why[200];
	in->image = vmm_firmware_start;
	in->image_len = (size_t)(vmm_firmware_end - vmm_firmware_start);
	if (cfg->firmware_path) {
		int r = read_whole_file(cfg->firmware_path, IMAGE_MAX, &in->image_buf, &in->image_len);
		if (r)
			return vm_error_set(err, VMM_EXIT_USAGE, r, "--firmware %s: %s", cfg->firmware_path,
				    r == -EFBIG ? "larger than 256 MiB" : strerror(-r));
		in->image = in->image_buf;
	}
	int r = elf_validate(in->image, in->image_len, in->layout.reserved_base, &in->elf, why, sizeof(why));
	if (r == -EFBIG)
		return vm_error_set(err, VMM_EXIT_USAGE, r, "%s: %s; give the guest more memory with -m", name, why);
	if (r)
		return vm_error_set(err, VMM_EXIT_USAGE, r, "%s: %s", name, why);
	return 0;
}

static int prepare_linux(struct vm_inputs *in, const struct vm_config *cfg, struct vm_error *err)
{
	char why[256];
	int r = read_whole_file(cfg->kernel_path, KERNEL_MAX, &in->kernel, &in->kernel_len);
	if (r)
		return vm_error_set(err, VMM_EXIT_USAGE, r, "--kernel %s: %s", cfg->kernel_path,
			    r == -EFBIG ? "larger than 256 MiB" : strerror(-r));
	r = bzimage_parse(in->kernel, in->kernel_len, &in->bz, why, sizeof(why));
	if (r)
		return vm_error_set(err, VMM_EXIT_USAGE, r, "--kernel %s: %s", cfg->kernel_path, why);
	if (cfg->initrd_path) {
		r = read_whole_file(cfg->initrd_path, INITRD_MAX, &in->initrd, &in->initrd_len);
		if (r)
			return vm_error_set(err, VMM_EXIT_USAGE, r, "--initrd %s: %s", cfg->initrd_path,
				    r == -EFBIG ? "larger than 1 GiB" : strerror(-r));
	}
	if (cfg->ncpus > ACPI_MAX_CPUS)
		return vm_error_set(err, VMM_EXIT_USAGE, -EINVAL, "--cpus: %u vCPUs do not fit the ACPI tables (at most %u)",
			    cfg->ncpus, ACPI_MAX_CPUS);
	/* The placement vm_linux_load will repeat on guest memory: it fits, or -m is too small. */
	struct linux_load_req req = { .mem_size = cfg->mem_bytes, .ram_end = in->layout.reserved_base,
				      .cmdline = cfg->cmdline, .initrd_len = in->initrd_len };
	struct linux_load_out out;
	r = linux_place(&in->bz, &req, &out, why, sizeof(why));
	if (r)
		return vm_error_set(err, VMM_EXIT_USAGE, r, "--kernel %s: %s", cfg->kernel_path, why);
	return 0;
}

/*
 * Opened as the device will open it, then closed: virtio-blk opens its own
 * fd when the VM is built. A file swapped in between is still refused
 * there, only after KVM was opened.
 */
static int prepare_disk(const struct vm_config *cfg, struct vm_error *err)
{
	const char *path = cfg->disk_path;
	int fd = open(path, (cfg->disk_read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (fd < 0)
		return vm_error_set(err, VMM_EXIT_USAGE, -errno, "--disk: %s: %s", path, strerror(errno));
	struct stat st;
	int r = 0;
	if (fstat(fd, &st) < 0)
		r = vm_error_set(err, VMM_EXIT_USAGE, -errno, "--disk: %s: %s", path, strerror(errno));
	else if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		r = vm_error_set(err, VMM_EXIT_USAGE, -EINVAL, "--disk: %s: not a regular file or block device", path);
	close(fd);
	return r;
}

/* --domain: joined last, once everything else is known good, and before
 * KVM: a domain that is not running is the user's to fix. The seats are
 * this run's slots, on the domain's CPUs. */
static int prepare_domain(struct vm_inputs *in, const struct vm_config *cfg, struct vm_error *err)
{
	struct dlink_params p = { .domain = cfg->domain, .nvcpus = (int)cfg->ncpus, .weight = cfg->weight,
				  .policy = cfg->policy, .vm_name = cfg->vm_name ? cfg->vm_name : "",
				  .slice_floor = cfg->slice_floor };
	char why[300];
	int rc = dlink_join(&in->domain, &p, &in->dom, why, sizeof(why));
	if (rc)
		return vm_error_set(err, rc == -ENOENT || rc == -EACCES || rc == -EINVAL || rc == -ENAMETOOLONG
					 ? VMM_EXIT_USAGE : VMM_EXIT_HOST_ERROR,
				    rc, "%s", why);
	in->nslots = (unsigned)in->dom.nseats;
	in->cpus = in->dom.cpus;
	/* an agent that confines its members put this process into the
	 * domain's cpuset: the CPUs it may use are fewer now */
	if (sched_getaffinity(0, sizeof(in->allowed), &in->allowed) < 0)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -errno, "cannot read this process's CPU affinity");
	for (unsigned s = 0; s < in->nslots; s++)
		in->slot_cpu[s] = -1; /* each grant says where */
	return 0;
}

int vm_inputs_prepare(struct vm_inputs *in, const struct vm_config *cfg, struct vm_error *err)
{
	memset(in, 0, sizeof(*in));
	int r = prepare_slots(in, cfg, err);
	if (!r)
		r = prepare_loop_cpu(in, cfg, err);
	if (r)
		return r;
	if (layout_compute(cfg->mem_bytes, cfg->ncpus, &in->layout))
		return vm_error_set(err, VMM_EXIT_USAGE, -EINVAL, "--mem: %lluM is not enough for %u vCPUs",
			    (unsigned long long)(cfg->mem_bytes >> 20), cfg->ncpus);
	r = cfg->kernel_path ? prepare_linux(in, cfg, err) : prepare_elf(in, cfg, err);
	if (!r && cfg->disk_path)
		r = prepare_disk(cfg, err);
	if (!r && cfg->domain)
		r = prepare_domain(in, cfg, err);
	if (!r && cfg->domain)
		r = prepare_loop_cpu(in, cfg, err);
	return r;
}

void vm_inputs_free(struct vm_inputs *in)
{
	dlink_destroy(in->domain);
	free(in->image_buf);
	free(in->kernel);
	free(in->initrd);
	memset(in, 0, sizeof(*in));
}
