/*
 * vcpu/kvm_stats.c: the binary-stats reader on synthetic stats files (memfd)
 * laid out as the KVM API documents them, malformed ones included, and on a
 * real vCPU where /dev/kvm exists.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "vcpu/kvm_stats.h"

#define NAME_SIZE 48

struct stat_spec {
	const char *name;
	uint32_t offset; /* in the data block */
	uint16_t size;
	uint64_t value;
};

/* header | id | descriptors | data, as KVM lays it out (the order is not
 * fixed by the API: the offsets in the header say where each part is). */
static int make_file(const struct stat_spec *s, unsigned n, uint32_t name_size, size_t truncate_to)
{
	int fd = memfd_create("stats", 0);
	if (fd < 0)
		return -1;
	size_t one = sizeof(struct kvm_stats_desc) + name_size;
	struct kvm_stats_header h = { .name_size = name_size, .num_desc = n, .id_offset = sizeof(h) };
	h.desc_offset = h.id_offset + name_size;
	h.data_offset = h.desc_offset + (uint32_t)(one * n);
	size_t len = h.data_offset + 8 * 64;
	uint8_t *buf = calloc(1, len);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + h.id_offset, "kvm-1234/vcpu_0", 15);
	for (unsigned i = 0; i < n; i++) {
		struct kvm_stats_desc *d = (void *)(buf + h.desc_offset + i * one);
		d->size = s[i].size;
		d->offset = s[i].offset;
		strncpy(d->name, s[i].name, name_size);
		memcpy(buf + h.data_offset + s[i].offset, &s[i].value, 8);
	}
	if (truncate_to && truncate_to < len)
		len = truncate_to;
	if (write(fd, buf, len) != (ssize_t)len) {
		close(fd);
		fd = -1;
	}
	free(buf);
	return fd;
}

static void test_synthetic(void)
{
	const struct stat_spec ok[] = {
		{ "halt_successful_poll", 0, 1, 7 }, { "halt_exits", 8, 1, 41 }, { "blocking", 16, 1, 1 },
		{ "halt_poll_success_hist", 24, 4, 0 }, { "halt_wakeup", 56, 1, 9 }, { "hypercalls", 64, 1, 5 },
	};
	struct kvm_vcpu_stats s;
	int fd = make_file(ok, 6, NAME_SIZE, 0);
	CHECK(fd >= 0 && kvm_stats_parse_fd(fd, &s) == 0 && s.fd == fd);
	uint64_t v = 0;
	CHECK(kvm_stats_read(&s, KVM_STAT_BLOCKING, &v) == 0 && v == 1);
	CHECK(kvm_stats_read(&s, KVM_STAT_HALT_EXITS, &v) == 0 && v == 41);
	CHECK(kvm_stats_read(&s, KVM_STAT_HALT_WAKEUP, &v) == 0 && v == 9);
	CHECK(kvm_stats_read(&s, KVM_STAT_HYPERCALLS, &v) == 0 && v == 5);
	CHECK(kvm_stats_read(&s, KVM_STAT_COUNT, &v) == -ENOENT);
	/* a value that changes is read anew each time */
	uint64_t zero = 0;
	CHECK(pwrite(fd, &zero, 8, (off_t)s.at[KVM_STAT_BLOCKING]) == 8);
	CHECK(kvm_stats_read(&s, KVM_STAT_BLOCKING, &v) == 0 && v == 0);
	kvm_stats_close(&s);
	CHECK(s.fd == -1 && kvm_stats_read(&s, KVM_STAT_BLOCKING, &v) == -ENOENT);

	/* a prefix name is not the stat ("blocking_ns" is not "blocking") */
	const struct stat_spec prefix[] = { { "blocking_ns", 0, 1, 1 }, { "halt_exits", 8, 1, 2 } };
	fd = make_file(prefix, 2, NAME_SIZE, 0);
	CHECK(kvm_stats_parse_fd(fd, &s) == -ENOENT && s.fd == -1);
	close(fd);
	/* a kernel without an optional stat: the others still read, that one is absent */
	fd = make_file(ok, 5, NAME_SIZE, 0);
	CHECK(kvm_stats_parse_fd(fd, &s) == 0 && kvm_stats_read(&s, KVM_STAT_HYPERCALLS, &v) == -ENOENT);
	kvm_stats_close(&s);
	/* a descriptor with no data items is skipped */
	const struct stat_spec empty[] = { { "blocking", 0, 0, 1 } };
	fd = make_file(empty, 1, NAME_SIZE, 0);
	CHECK(kvm_stats_parse_fd(fd, &s) == -ENOENT);
	close(fd);
	/* sizes out of bounds, and a file cut short */
	fd = make_file(ok, 5, 0, 0);
	CHECK(kvm_stats_parse_fd(fd, &s) == -EINVAL);
	close(fd);
	fd = make_file(ok, 0, NAME_SIZE, 0);
	CHECK(kvm_stats_parse_fd(fd, &s) == -EINVAL);
	close(fd);
	fd = make_file(ok, 5, NAME_SIZE, sizeof(struct kvm_stats_header) + NAME_SIZE + 20);
	CHECK(kvm_stats_parse_fd(fd, &s) == -EIO);
	close(fd);
	fd = make_file(ok, 5, NAME_SIZE, 10);
	CHECK(kvm_stats_parse_fd(fd, &s) == -EIO);
	close(fd);
	CHECK(kvm_stats_parse_fd(-1, &s) == -EBADF && s.fd == -1);
}

/* A real vCPU that never ran: not blocking, no halts. */
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
	struct kvm_vcpu_stats s;
	int r = kvm_stats_open(vcpu, &s);
	if (r == -EOPNOTSUPP) {
		SKIP("this kernel has no KVM_GET_STATS_FD");
	} else {
		CHECK(r == 0);
		uint64_t b = 99, h = 99;
		CHECK(kvm_stats_read(&s, KVM_STAT_BLOCKING, &b) == 0 && b == 0);
		CHECK(kvm_stats_read(&s, KVM_STAT_HALT_EXITS, &h) == 0 && h == 0);
		kvm_stats_close(&s);
	}
	CHECK(kvm_stats_open(-1, &s) < 0 && s.fd == -1);
	close(vcpu);
	close(vm);
	close(kvm);
}

int main(void)
{
	RUN(test_synthetic);
	RUN(test_real);
	return check_summary();
}
