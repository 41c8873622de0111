#include "vcpu/kvm_stats.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define MAX_DESCS 4096
#define MAX_NAME 1024

static const char *const names[KVM_STAT_COUNT] = {
	[KVM_STAT_BLOCKING] = "blocking",
	[KVM_STAT_HALT_EXITS] = "halt_exits",
	[KVM_STAT_HALT_WAKEUP] = "halt_wakeup",
	[KVM_STAT_HYPERCALLS] = "hypercalls",
};

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

int kvm_stats_parse_fd(int fd, struct kvm_vcpu_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	struct kvm_stats_header h;
	int r = pread_all(fd, &h, sizeof(h), 0);
	if (r)
		return r;
	/* Sizes come from the kernel, but a bound keeps a bad file from
	 * turning into a huge allocation. */
	if (h.num_desc == 0 || h.num_desc > MAX_DESCS || h.name_size == 0 || h.name_size > MAX_NAME)
		return -EINVAL;
	size_t one = sizeof(struct kvm_stats_desc) + h.name_size;
	uint8_t *d = malloc(one * h.num_desc);
	if (!d)
		return -ENOMEM;
	r = pread_all(fd, d, one * h.num_desc, h.desc_offset);
	for (uint32_t i = 0; !r && i < h.num_desc; i++) {
		const struct kvm_stats_desc *e = (const void *)(d + i * one);
		if (e->size < 1)
			continue;
		size_t nlen = strnlen(e->name, h.name_size);
		for (int k = 0; k < KVM_STAT_COUNT; k++)
			if (nlen == strlen(names[k]) && !memcmp(e->name, names[k], nlen))
				s->at[k] = (uint64_t)h.data_offset + e->offset;
	}
	free(d);
	if (r)
		return r;
	if (!s->at[KVM_STAT_BLOCKING])
		return -ENOENT;
	s->fd = fd;
	return 0;
}

int kvm_stats_open(int vcpu_fd, struct kvm_vcpu_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	int fd = ioctl(vcpu_fd, KVM_GET_STATS_FD, NULL);
	if (fd < 0)
		return errno == ENOTTY || errno == EINVAL ? -EOPNOTSUPP : -errno;
	int r = kvm_stats_parse_fd(fd, s);
	if (r)
		close(fd);
	return r;
}

int kvm_stats_read(const struct kvm_vcpu_stats *s, enum kvm_stat_id id, uint64_t *val)
{
	if (s->fd < 0 || (unsigned)id >= KVM_STAT_COUNT || !s->at[id])
		return -ENOENT;
	return pread_all(s->fd, val, sizeof(*val), s->at[id]);
}

void kvm_stats_close(struct kvm_vcpu_stats *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}
