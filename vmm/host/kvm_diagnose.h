/*
 * Why the KVM device cannot be used, in words a user can act on. Reads only
 * what it is given: the device path, a /sys root and a /proc root, so a unit
 * test (tests/unit/test_kvm_diagnose.c) fakes every case in a temporary
 * directory, and `vmm run --kvm-device PATH` shows each message on any host.
 */
#ifndef VMM_KVM_DIAGNOSE_H
#define VMM_KVM_DIAGNOSE_H

#include <stdbool.h>
#include <stddef.h>

enum kvm_diag_cause {
	KVM_DIAG_USABLE,      /* it opens read-write and speaks our API version */
	KVM_DIAG_NO_NODE,     /* KVM serves a device on this host, but not at this path */
	KVM_DIAG_UNBOUND,     /* no device: the kvm module is loaded, no backend serves it */
	KVM_DIAG_NO_VIRT,     /* no device: the CPU shows no vmx/svm flag */
	KVM_DIAG_NO_MODULE,   /* no device: the kvm module is not loaded */
	KVM_DIAG_PERMISSION,
	KVM_DIAG_NOT_KVM,     /* it opens, but is no KVM device (a file, /dev/null) */
	KVM_DIAG_API_VERSION,
	KVM_DIAG_OPEN_ERROR,  /* any other reason open failed */
};

struct kvm_diag {
	enum kvm_diag_cause cause;
	int err;              /* errno of the open or KVM_GET_API_VERSION that failed */
	int api_version;      /* what KVM_GET_API_VERSION answered */
	bool kvm_module;      /* <sys>/module/kvm exists */
	char backend[16];     /* a loaded backend module: kvm_intel, kvm_amd, kvm_pvm; or "" */
	char misc_dev[16];    /* "10 232" when <sys>/class/misc/kvm says KVM registered its device */
	char virt_flag[4];    /* "vmx", "svm", or "" (the first flags line of <proc>/cpuinfo) */
};

/*
 * Opens dev read-write and asks its API version, and where that fails looks
 * at sys_root (e.g. "/sys") and proc_root (e.g. "/proc") for the reason.
 * Fills d; when msg is not NULL, writes kvm_diag_message into it.
 */
enum kvm_diag_cause kvm_diagnose(const char *dev, const char *sys_root, const char *proc_root, struct kvm_diag *d,
				 char *msg, size_t msglen);

/* One or two lines, '\n' between them and none at the end: the cause and the next step. */
void kvm_diag_message(const struct kvm_diag *d, const char *dev, char *msg, size_t msglen);

#endif
