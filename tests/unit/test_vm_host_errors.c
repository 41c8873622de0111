/*
 * KVM ioctls whose result used to be ignored (issue 15), made to fail
 * without KVM: a VM whose fd is not a KVM VM fd, so the host refuses them.
 *   KVM_IRQ_LINE: the device's interrupt would be lost; the run must end as
 *   a host error (stop reason VM_STOP_HOST_ERROR: exit 6), said once.
 *   KVM_SET_TSS_ADDR: creating a Linux guest's devices fails on it, named,
 *   exit status 6, before any later ioctl.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "vmm/core/vm.h"
#include "vmm/core/vm_linux.h"
#include "vmm/errors.h"

static void fake_vm(struct vm *vm, struct run_ctl *ctl, int fd)
{
	memset(ctl, 0, sizeof(*ctl));
	ctl->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	atomic_init(&ctl->stop_vm, -1);
	atomic_init(&ctl->stop_vcpu, -1);
	memset(vm, 0, sizeof(*vm));
	vm->ctl = ctl;
	vm->fd = fd;
}

static void irq_line_refused_ends_the_run(int fd, int err)
{
	struct vm vm;
	struct run_ctl ctl;
	fake_vm(&vm, &ctl, fd);
	CHECK_EQ(atomic_load(&ctl.stop), VM_STOP_NONE);
	CHECK_EQ(vm_irq_line(&vm, 4, 1), -err);
	CHECK_EQ(atomic_load(&ctl.stop), VM_STOP_HOST_ERROR);
	CHECK(atomic_load(&vm.irq_line_failed));
	uint64_t woken = 0;
	CHECK_EQ(read(ctl.wake_fd, &woken, sizeof(woken)), (long)sizeof(woken)); /* the loop was told */
	CHECK(woken >= 1);
	CHECK_EQ(vm_irq_line(&vm, 4, 0), -err); /* still refused, still the first reason */
	CHECK_EQ(atomic_load(&ctl.stop), VM_STOP_HOST_ERROR);
	close(ctl.wake_fd);
}

static void tss_refused_is_named(void)
{
	struct vm vm;
	struct run_ctl ctl;
	fake_vm(&vm, &ctl, -1);
	vm.linux_guest = calloc(1, sizeof(*vm.linux_guest));
	vm.linux_guest->vm = &vm;
	struct vm_error err = { 0 };
	CHECK_EQ(vm_linux_devices(&vm, &err), -EBADF);
	CHECK_EQ(err.status, VMM_EXIT_HOST_ERROR);
	CHECK(strncmp(err.msg, "KVM_SET_TSS_ADDR: ", 18) == 0);
	if (strncmp(err.msg, "KVM_SET_TSS_ADDR: ", 18))
		printf("got: %s\n", err.msg);
	free(vm.linux_guest);
	close(ctl.wake_fd);
}

int main(void)
{
	irq_line_refused_ends_the_run(-1, EBADF);
	int notkvm = eventfd(0, EFD_CLOEXEC); /* an fd, but not a VM's: KVM_IRQ_LINE is ENOTTY */
	irq_line_refused_ends_the_run(notkvm, ENOTTY);
	close(notkvm);
	tss_refused_is_named();
	return check_summary();
}
