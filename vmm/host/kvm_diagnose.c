#include "vmm/host/kvm_diagnose.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* The modules that make the kvm module serve guests. */
static const char *const backends[] = { "kvm_intel", "kvm_amd", "kvm_pvm" };

static const char nested_hint[] =
	"without KVM, `tests/nested/run -- build/vmm run ...` runs vmm inside QEMU (nested KVM) on any machine";

static bool exists(const char *root, const char *rel)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return access(path, F_OK) == 0;
}

static void read_misc_dev(const char *sys_root, char *out, size_t len)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/class/misc/kvm/dev", sys_root);
	out[0] = '\0';
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = '\0';
	char *colon = strchr(out, ':'); /* "10:232" -> "10 232", as mknod takes it */
	if (colon)
		*colon = ' ';
	fclose(f);
}

/* vmx or svm from the first "flags" line: every CPU of a host shows the same. */
static void read_virt_flag(const char *proc_root, char *out, size_t len)
{
	char path[4096], line[8192];
	snprintf(path, sizeof(path), "%s/cpuinfo", proc_root);
	out[0] = '\0';
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (strncmp(line, "flags", 5) || !colon)
			continue;
		for (char *save = NULL, *t = strtok_r(colon + 1, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save))
			if (!strcmp(t, "vmx") || !strcmp(t, "svm")) {
				snprintf(out, len, "%s", t);
				break;
			}
		break;
	}
	fclose(f);
}

/* The node is missing or has no driver: what the host says about KVM. */
static enum kvm_diag_cause why_no_device(const char *sys_root, const char *proc_root, struct kvm_diag *d)
{
	d->kvm_module = exists(sys_root, "module/kvm");
	for (unsigned i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		char rel[64];
		snprintf(rel, sizeof(rel), "module/%s", backends[i]);
		if (exists(sys_root, rel)) {
			snprintf(d->backend, sizeof(d->backend), "%s", backends[i]);
			break;
		}
	}
	read_misc_dev(sys_root, d->misc_dev, sizeof(d->misc_dev));
	read_virt_flag(proc_root, d->virt_flag, sizeof(d->virt_flag));
	if (d->misc_dev[0])
		return KVM_DIAG_NO_NODE;
	/* kvm_pvm needs no vmx/svm, so a loaded backend is asked first. */
	if (d->backend[0])
		return KVM_DIAG_UNBOUND;
	if (!d->virt_flag[0])
		return KVM_DIAG_NO_VIRT;
	return d->kvm_module ? KVM_DIAG_UNBOUND : KVM_DIAG_NO_MODULE;
}

enum kvm_diag_cause kvm_diagnose(const char *dev, const char *sys_root, const char *proc_root, struct kvm_diag *d,
				 char *msg, size_t msglen)
{
	memset(d, 0, sizeof(*d));
	int fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		d->err = errno;
		if (d->err == ENOENT || d->err == ENODEV || d->err == ENXIO)
			d->cause = why_no_device(sys_root, proc_root, d);
		else if (d->err == EACCES || d->err == EPERM)
			d->cause = KVM_DIAG_PERMISSION;
		else if (d->err == EISDIR)
			d->cause = KVM_DIAG_NOT_KVM;
		else
			d->cause = KVM_DIAG_OPEN_ERROR;
		/* A node that exists but has no driver, where KVM does serve one, is not KVM's node. */
		if (d->cause == KVM_DIAG_NO_NODE && d->err != ENOENT)
			d->cause = KVM_DIAG_NOT_KVM;
	} else {
		d->api_version = ioctl(fd, KVM_GET_API_VERSION, 0);
		if (d->api_version < 0) {
			d->err = errno;
			d->cause = KVM_DIAG_NOT_KVM;
		} else {
			d->cause = d->api_version == KVM_API_VERSION ? KVM_DIAG_USABLE : KVM_DIAG_API_VERSION;
		}
		close(fd);
	}
	if (msg)
		kvm_diag_message(d, dev, msg, msglen);
	return d->cause;
}

void kvm_diag_message(const struct kvm_diag *d, const char *dev, char *msg, size_t msglen)
{
	const char *missing = d->err == ENOENT ? "does not exist" : "has no driver behind it";
	switch (d->cause) {
	case KVM_DIAG_USABLE:
		snprintf(msg, msglen, "%s is a usable KVM device (API version %d)", dev, d->api_version);
		break;
	case KVM_DIAG_NO_NODE:
		snprintf(msg, msglen,
			 "%s does not exist, but KVM serves a device on this host (major, minor %s in /sys/class/misc/kvm)\n"
			 "point --kvm-device or VMM_KVM_DEVICE at its node (usually /dev/kvm), or create one: mknod %s c %s",
			 dev, d->misc_dev, dev, d->misc_dev);
		break;
	case KVM_DIAG_UNBOUND:
		if (d->backend[0])
			snprintf(msg, msglen,
				 "%s %s: %s is loaded but serves no KVM device (it did not bind on this host); "
				 "`dmesg | grep -i kvm` says why\n%s", dev, missing, d->backend, nested_hint);
		else
			snprintf(msg, msglen,
				 "%s %s: the kvm module is loaded but no backend (kvm_intel, kvm_amd, kvm_pvm) is bound to it; "
				 "`dmesg | grep -i kvm` says why\n%s", dev, missing, nested_hint);
		break;
	case KVM_DIAG_NO_VIRT:
		snprintf(msg, msglen,
			 "%s %s: this CPU has no vmx or svm flag in /proc/cpuinfo, so KVM cannot run here; "
			 "in a virtual machine, turn on nested virtualization in its hypervisor\n%s",
			 dev, missing, nested_hint);
		break;
	case KVM_DIAG_NO_MODULE:
		snprintf(msg, msglen, "%s %s: the kvm module is not loaded; load it with `sudo modprobe %s`\n%s", dev,
			 missing, !strcmp(d->virt_flag, "svm") ? "kvm_amd" : "kvm_intel", nested_hint);
		break;
	case KVM_DIAG_PERMISSION:
		snprintf(msg, msglen,
			 "%s: permission denied: this user may not open it read-write\n"
			 "add the user to the kvm group (`sudo usermod -aG kvm $USER`, then log in again); "
			 "`ls -l %s` shows the node's group and mode", dev, dev);
		break;
	case KVM_DIAG_NOT_KVM:
		snprintf(msg, msglen, "%s is not a KVM device (%s: %s); point --kvm-device or VMM_KVM_DEVICE at /dev/kvm",
			 dev, d->api_version < 0 ? "KVM_GET_API_VERSION" : "open", strerror(d->err));
		break;
	case KVM_DIAG_API_VERSION:
		snprintf(msg, msglen, "%s speaks KVM API version %d, vmm needs version %d: this kernel's KVM is not one vmm can use",
			 dev, d->api_version, KVM_API_VERSION);
		break;
	case KVM_DIAG_OPEN_ERROR:
		snprintf(msg, msglen, "cannot open %s: %s", dev, strerror(d->err));
		break;
	}
}
