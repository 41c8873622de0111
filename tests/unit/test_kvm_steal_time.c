/*
 * vcpu/kvm_steal_time.c: the record's updates on fake guest memory (bounds,
 * the version protocol, the preempted bits), and reading the registered
 * address back from a real vCPU where /dev/kvm exists.
 */
#include <asm/kvm_para.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "vcpu/kvm_steal_time.h"

static uint8_t mem[8192] __attribute__((aligned(64)));
static struct guest_mem gm = { 1, { { 0, sizeof(mem), mem } } };

static void test_record(void)
{
	struct kvm_steal_time *st = (void *)(mem + 4096);
	memset(mem, 0, sizeof(mem));
	st->version = 4;
	st->steal = 100;
	CHECK(kvm_steal_time_add(&gm, 4096, 50));
	CHECK_EQ(st->steal, 150);
	CHECK_EQ(st->version, 6); /* odd while changing, even and newer after */
	st->version = 7;          /* KVM left it odd? we still end even and newer */
	CHECK(kvm_steal_time_add(&gm, 4096, 1));
	CHECK_EQ(st->version, 8);
	st->preempted = KVM_VCPU_FLUSH_TLB; /* the guest's bit stays */
	CHECK(kvm_steal_time_mark_preempted(&gm, 4096));
	CHECK_EQ(st->preempted, KVM_VCPU_FLUSH_TLB | KVM_VCPU_PREEMPTED);
	/* a record outside RAM, or not 64-byte aligned, is never touched */
	uint8_t before[sizeof(mem)];
	memcpy(before, mem, sizeof(mem));
	CHECK(!kvm_steal_time_add(&gm, sizeof(mem) - 32, 1));
	CHECK(!kvm_steal_time_add(&gm, sizeof(mem), 1));
	CHECK(!kvm_steal_time_add(&gm, UINT64_MAX - 63, 1));
	CHECK(!kvm_steal_time_mark_preempted(&gm, 4096 + 8));
	CHECK(!kvm_steal_time_mark_preempted(&gm, 1ull << 40));
	CHECK(!memcmp(before, mem, sizeof(mem)));
	CHECK(kvm_steal_time_add(&gm, sizeof(mem) - 64, 1)); /* the last slot fits */
}

static void test_real(void)
{
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		SKIP("no /dev/kvm for the real-vCPU part");
		return;
	}
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	int vcpu = vm >= 0 ? ioctl(vm, KVM_CREATE_VCPU, 0) : -1;
	CHECK(vcpu >= 0);
	uint64_t gpa = 1;
	CHECK_EQ(kvm_steal_time_gpa(vcpu, &gpa), -ENOENT); /* nothing registered yet */
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e;
	} m = { .hdr.nmsrs = 1, .e = { .index = MSR_KVM_STEAL_TIME, .data = 0x12340 | 1 } };
	if (ioctl(vcpu, KVM_SET_MSRS, &m) == 1) {
		CHECK_EQ(kvm_steal_time_gpa(vcpu, &gpa), 0);
		CHECK_EQ(gpa, 0x12340);
	} else {
		SKIP("this KVM refuses MSR_KVM_STEAL_TIME");
	}
	CHECK(kvm_steal_time_gpa(-1, &gpa) < 0);
	close(vcpu);
	close(vm);
	close(kvm);
}

int main(void)
{
	RUN(test_record);
	RUN(test_real);
	return check_summary();
}
