/*
 * vmm/host/kvm_diagnose.c: each reason the KVM device cannot be used, on fake /sys
 * and /proc trees and fake device nodes in a temporary directory, gets its own
 * message naming the cause and the next step, in one or two lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "vmm/host/kvm_diagnose.h"

static char root[] = "/tmp/vmm-kvm-diag.XXXXXX";
static char sys_root[256], proc_root[256], missing[256];

static void run(const char *cmd)
{
	if (system(cmd) != 0)
		fprintf(stderr, "setup failed: %s\n", cmd);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
}

/* A fresh fake host: modules (NULL-terminated) in /sys/module, CPU flags in /proc/cpuinfo. */
static void fake_host(const char *const *modules, const char *flags, const char *misc_dev)
{
	char cmd[1024], path[512];
	snprintf(cmd, sizeof(cmd), "rm -rf %s/sys %s/proc && mkdir -p %s/sys/module %s/proc", root, root, root, root);
	run(cmd);
	for (; modules && *modules; modules++) {
		snprintf(path, sizeof(path), "%s/module/%s/parameters", sys_root, *modules);
		snprintf(cmd, sizeof(cmd), "mkdir -p %s", path);
		run(cmd);
	}
	if (misc_dev) {
		snprintf(cmd, sizeof(cmd), "mkdir -p %s/class/misc/kvm", sys_root);
		run(cmd);
		snprintf(path, sizeof(path), "%s/class/misc/kvm/dev", sys_root);
		write_file(path, misc_dev);
	}
	char text[512];
	snprintf(text, sizeof(text), "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: %s\n\n"
		 "processor\t: 1\nflags\t\t: %s\n", flags, flags);
	snprintf(path, sizeof(path), "%s/cpuinfo", proc_root);
	write_file(path, text);
}

static bool has(const char *msg, const char *word)
{
	if (strstr(msg, word))
		return true;
	fprintf(stderr, "  message lacks \"%s\": %s\n", word, msg);
	return false;
}

/* One or two lines, no empty one, no newline at the end. */
static int lines(const char *msg)
{
	if (!*msg || msg[strlen(msg) - 1] == '\n' || strstr(msg, "\n\n"))
		return -1;
	int n = 1;
	for (const char *p = msg; *p; p++)
		n += *p == '\n';
	return n;
}

static enum kvm_diag_cause diagnose(const char *dev, char *msg, size_t len)
{
	struct kvm_diag d;
	enum kvm_diag_cause c = kvm_diagnose(dev, sys_root, proc_root, &d, msg, len);
	CHECK(lines(msg) == 1 || lines(msg) == 2);
	CHECK(has(msg, dev));
	return c;
}

static void test_no_device(void)
{
	char msg[1024];
	const char *pvm[] = { "kvm", "kvm_pvm", NULL };
	fake_host(pvm, "fpu sse hypervisor", NULL);
	CHECK_EQ(diagnose(missing, msg, sizeof(msg)), KVM_DIAG_UNBOUND);
	CHECK(has(msg, "does not exist") && has(msg, "kvm_pvm is loaded") && has(msg, "dmesg | grep -i kvm"));
	CHECK(has(msg, "tests/nested/run -- build/vmm run"));
	CHECK_EQ(lines(msg), 2);

	const char *kvm_only[] = { "kvm", NULL };
	fake_host(kvm_only, "fpu vmx sse", NULL);
	CHECK_EQ(diagnose(missing, msg, sizeof(msg)), KVM_DIAG_UNBOUND);
	CHECK(has(msg, "kvm module is loaded but no backend") && has(msg, "dmesg | grep -i kvm"));
	CHECK(has(msg, "tests/nested/run"));

	fake_host(NULL, "fpu vmx sse", NULL);
	CHECK_EQ(diagnose(missing, msg, sizeof(msg)), KVM_DIAG_NO_MODULE);
	CHECK(has(msg, "kvm module is not loaded") && has(msg, "modprobe kvm_intel") && has(msg, "tests/nested/run"));
	fake_host(NULL, "fpu svm sse", NULL);
	CHECK_EQ(diagnose(missing, msg, sizeof(msg)), KVM_DIAG_NO_MODULE);
	CHECK(has(msg, "modprobe kvm_amd"));

	/* no vmx/svm: nothing to load; with or without the kvm module */
	fake_host(NULL, "fpu sse hypervisor", NULL);
	CHECK_EQ(diagnose(missing, msg, sizeof(msg)), KVM_DIAG_NO_VIRT);
	CHECK(has(msg, "no vmx or svm flag") && has(msg, "nested virtualization") && has(msg, "tests/nested/run"));
	fake_host(kvm_only, "fpu sse", NULL);
	CHECK_EQ(diagnose(missing, msg, sizeof(msg)), KVM_DIAG_NO_VIRT);
	/* a word containing "vmx" is not the flag */
	fake_host(NULL, "fpu vmx_ept sse", NULL);
	CHECK_EQ(diagnose(missing, msg, sizeof(msg)), KVM_DIAG_NO_VIRT);
	/* no /proc/cpuinfo at all reads as no flag, not a crash */
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -f %s/cpuinfo", proc_root);
	run(cmd);
	CHECK_EQ(diagnose(missing, msg, sizeof(msg)), KVM_DIAG_NO_VIRT);

	/* KVM serves a device, just not at this path */
	const char *intel[] = { "kvm", "kvm_intel", NULL };
	fake_host(intel, "fpu vmx", "10:232\n");
	CHECK_EQ(diagnose(missing, msg, sizeof(msg)), KVM_DIAG_NO_NODE);
	CHECK(has(msg, "10 232") && has(msg, "--kvm-device") && has(msg, "mknod " ) && has(msg, "c 10 232"));
}

static void test_not_kvm(void)
{
	char msg[1024], path[512];
	fake_host(NULL, "fpu vmx", NULL);
	snprintf(path, sizeof(path), "%s/regular", root);
	write_file(path, "not a device\n");
	CHECK_EQ(diagnose(path, msg, sizeof(msg)), KVM_DIAG_NOT_KVM);
	CHECK(has(msg, "is not a KVM device") && has(msg, "KVM_GET_API_VERSION"));
	CHECK_EQ(lines(msg), 1);

	CHECK_EQ(diagnose("/dev/null", msg, sizeof(msg)), KVM_DIAG_NOT_KVM);
	CHECK(has(msg, "is not a KVM device"));

	CHECK_EQ(diagnose(root, msg, sizeof(msg)), KVM_DIAG_NOT_KVM);
	CHECK(has(msg, "Is a directory"));
}

/* Root opens anything: the check runs as nobody in a child. */
static void test_permission(void)
{
	char path[512], msg[1024] = "";
	snprintf(path, sizeof(path), "%s/locked", root);
	write_file(path, "");
	chmod(path, 0600);
	if (geteuid() != 0) {
		chmod(path, 0);
		CHECK_EQ(diagnose(path, msg, sizeof(msg)), KVM_DIAG_PERMISSION);
	} else {
		int p[2];
		CHECK_EQ(pipe(p), 0);
		pid_t pid = fork();
		if (pid == 0) {
			close(p[0]);
			struct kvm_diag d;
			int c = -1;
			if (setgid(65534) == 0 && setuid(65534) == 0)
				c = (int)kvm_diagnose(path, sys_root, proc_root, &d, msg, sizeof(msg));
			if (write(p[1], &c, sizeof(c)) != sizeof(c) || write(p[1], msg, sizeof(msg)) != sizeof(msg))
				_exit(1);
			_exit(0);
		}
		close(p[1]);
		int c = -2;
		CHECK(read(p[0], &c, sizeof(c)) == sizeof(c) && read(p[0], msg, sizeof(msg)) == sizeof(msg));
		close(p[0]);
		int st;
		waitpid(pid, &st, 0);
		msg[sizeof(msg) - 1] = '\0';
		CHECK_EQ(c, KVM_DIAG_PERMISSION);
	}
	CHECK(has(msg, "permission denied") && has(msg, "kvm group") && has(msg, "ls -l"));
	CHECK(has(msg, path));
	CHECK_EQ(lines(msg), 2);
}

/* No real node speaks another version: the message from the facts alone. */
static void test_api_version(void)
{
	char msg[1024];
	struct kvm_diag d = { .cause = KVM_DIAG_API_VERSION, .api_version = KVM_API_VERSION - 1 };
	kvm_diag_message(&d, "/dev/kvm", msg, sizeof(msg));
	char want[64];
	snprintf(want, sizeof(want), "API version %d, vmm needs version %d", KVM_API_VERSION - 1, KVM_API_VERSION);
	CHECK(has(msg, "/dev/kvm") && has(msg, want));
	CHECK_EQ(lines(msg), 1);

	d = (struct kvm_diag){ .cause = KVM_DIAG_OPEN_ERROR, .err = EBUSY };
	kvm_diag_message(&d, "/dev/kvm", msg, sizeof(msg));
	CHECK(has(msg, "cannot open /dev/kvm") && has(msg, strerror(EBUSY)));

	/* a short buffer truncates, never overflows */
	d = (struct kvm_diag){ .cause = KVM_DIAG_UNBOUND, .err = ENOENT };
	char small[16];
	memset(small, 'x', sizeof(small));
	kvm_diag_message(&d, "/dev/kvm", small, 8);
	CHECK_EQ(strlen(small), 7);
	CHECK_EQ(small[8], 'x');
}

int main(void)
{
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(sys_root, sizeof(sys_root), "%s/sys", root);
	snprintf(proc_root, sizeof(proc_root), "%s/proc", root);
	snprintf(missing, sizeof(missing), "%s/dev/kvm", root);
	chmod(root, 0755); /* the permission check's child must reach its file */
	test_no_device();
	test_not_kvm();
	test_permission();
	test_api_version();
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	run(cmd);
	return check_summary();
}
