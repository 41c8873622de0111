/* Pause-loop exits seen from userspace through a per-thread perf tracepoint event. */
#include "vmm/spin/ple_perf.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Data pages of the ring (a power of two); records are 8-byte headers, so ~1000 fit. */
#define PLE_RING_DATA_PAGES 2

/* First line of a small sysfs file, newline stripped; -errno if unreadable. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char *ok = fgets(buf, (int)len, f);
	fclose(f);
	if (!ok)
		return -EIO;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* A numeric module parameter; -1 when the module or parameter is absent. */
static long module_param(const char *module, const char *param)
{
	char path[128], buf[64];
	snprintf(path, sizeof(path), "/sys/module/%s/parameters/%s", module, param);
	if (read_line(path, buf, sizeof(buf)) < 0)
		return -1;
	return strtol(buf, NULL, 0);
}

static int module_loaded(const char *module)
{
	char path[128];
	snprintf(path, sizeof(path), "/sys/module/%s", module);
	return access(path, F_OK) == 0;
}

/* Names of loaded kvm_* modules (the vendor backend), for the user's message. */
static void kvm_backends(char *out, size_t len)
{
	out[0] = '\0';
	DIR *d = opendir("/sys/module");
	if (!d)
		return;
	struct dirent *e;
	size_t used = 0;
	while ((e = readdir(d)) && used + 1 < len) {
		if (strncmp(e->d_name, "kvm_", 4) != 0)
			continue;
		int n = snprintf(out + used, len - used, "%s%s", used ? "," : "", e->d_name);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	closedir(d);
}

/*
 * tracefs is often unmounted in containers and minimal hosts; mounting it on
 * its standard mountpoint is what systemd does at boot and changes nothing else.
 */
static void try_mount_tracefs(void)
{
	if (access("/sys/kernel/tracing/events", F_OK) == 0)
		return;
	(void)mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL); /* failure shows as ENOENT */
}

long ple_tracepoint_id(const char *tracepoint)
{
	static const char *const roots[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};
	char sys[64], path[256], buf[32];
	const char *colon = strchr(tracepoint, ':');
	if (!colon || (size_t)(colon - tracepoint) >= sizeof(sys) || strchr(colon + 1, '/') ||
	    strchr(tracepoint, '/'))
		return -EINVAL;
	memcpy(sys, tracepoint, (size_t)(colon - tracepoint));
	sys[colon - tracepoint] = '\0';

	for (int attempt = 0; attempt < 2; attempt++) {
		for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
			snprintf(path, sizeof(path), "%s/events/%s/%s/id", roots[i], sys, colon + 1);
			if (read_line(path, buf, sizeof(buf)) == 0)
				return strtol(buf, NULL, 10);
		}
		if (attempt == 0)
			try_mount_tracefs();
	}
	return -ENOENT;
}

int ple_support_decide(const struct ple_host_facts *f, char *why, size_t len)
{
	if (f->kvm_intel) {
		/* kvm_intel zeroes ple_gap itself when the CPU lacks PLE. */
		if (f->ple_gap <= 0 || f->ple_window <= 0) {
			snprintf(why, len, "kvm_intel has pause-loop exiting off (ple_gap=%ld, ple_window=%ld)",
				 f->ple_gap, f->ple_window);
			return -ENOTSUP;
		}
	} else if (f->kvm_amd) {
		/* kvm_amd zeroes it when CPUID lacks the pause filter (QEMU's TCG never offers it) */
		if (f->pause_filter_count <= 0) {
			snprintf(why, len, "kvm_amd has the pause filter off (pause_filter_count=%ld)",
				 f->pause_filter_count);
			return -ENOTSUP;
		}
	} else {
		if (f->backends[0])
			snprintf(why, len, "KVM backend %s has no pause-loop exiting (only kvm_intel/kvm_amd do)",
				 f->backends);
		else if (f->kvm)
			snprintf(why, len, "no KVM vendor module (kvm_intel/kvm_amd) loaded: no pause-loop exiting");
		else
			snprintf(why, len, "KVM is not loaded: no pause-loop exiting");
		return -ENOTSUP;
	}
	if (f->kvm_exit_id < 0) {
		snprintf(why, len, "pause-loop exiting is on, but tracepoint kvm:kvm_exit is not available (%s)",
			 strerror((int)-f->kvm_exit_id));
		return -ENOTSUP;
	}
	snprintf(why, len, "pause-loop exiting is on (%s)", f->kvm_intel ? "kvm_intel" : "kvm_amd");
	return 0;
}

int ple_host_support(char *why, size_t len)
{
	struct ple_host_facts f = {
		.kvm = module_loaded("kvm"),
		.kvm_intel = module_loaded("kvm_intel"),
		.kvm_amd = module_loaded("kvm_amd"),
		.ple_gap = module_param("kvm_intel", "ple_gap"),
		.ple_window = module_param("kvm_intel", "ple_window"),
		.pause_filter_count = module_param("kvm_amd", "pause_filter_count"),
	};
	kvm_backends(f.backends, sizeof(f.backends));
	f.kvm_exit_id = f.kvm_intel || f.kvm_amd ? ple_tracepoint_id("kvm:kvm_exit") : -ENOENT;
	return ple_support_decide(&f, why, len);
}

const char *ple_exit_filter(void)
{
	if (module_loaded("kvm_intel"))
		return "exit_reason == 40"; /* EXIT_REASON_PAUSE_INSTRUCTION */
	if (module_loaded("kvm_amd"))
		return "exit_reason == 119"; /* SVM_EXIT_PAUSE, 0x77 */
	return NULL;
}

int perf_tracepoint_open(pid_t tid, const char *tracepoint, const char *filter, unsigned wakeup_events)
{
	long id = ple_tracepoint_id(tracepoint);
	if (id < 0)
		return (int)id;
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.config = (uint64_t)id;
	if (wakeup_events) {
		attr.sample_period = 1;
		attr.sample_type = 0;
		attr.wakeup_events = wakeup_events;
	}
	int fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (filter && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int ple_watch_open(struct ple_watch *w, pid_t tid, const char *tracepoint, const char *filter)
{
	return ple_watch_open_n(w, tid, tracepoint, filter, 1);
}

int ple_watch_open_n(struct ple_watch *w, pid_t tid, const char *tracepoint, const char *filter,
		     unsigned wakeup_events)
{
	w->fd = -1;
	w->ring = NULL;
	w->ring_len = 0;
	w->tid = tid;
	w->drained = 0;

	/* Every event becomes a header-only record: the ring exists only for wakeups. */
	int fd = perf_tracepoint_open(tid, tracepoint, filter, wakeup_events ? wakeup_events : 1);
	if (fd < 0)
		return fd;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = page * (1 + PLE_RING_DATA_PAGES);
	void *ring = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED) {
		int err = -errno;
		close(fd);
		return err;
	}
	w->fd = fd;
	w->ring = ring;
	w->ring_len = len;
	return 0;
}

int ple_watch_fd(const struct ple_watch *w)
{
	return w->fd;
}

uint64_t ple_watch_count(struct ple_watch *w)
{
	uint64_t value = 0;
	if (w->fd < 0 || read(w->fd, &value, sizeof(value)) != (ssize_t)sizeof(value))
		return 0;
	return value;
}

int ple_watch_drain(struct ple_watch *w)
{
	if (!w->ring)
		return 0;
	/*
	 * The ring only carries wakeups: once it fills, the kernel drops records
	 * and reports the loss late (with the next record that fits), so the
	 * number comes from the counter, which never misses an event.
	 */
	struct perf_event_mmap_page *meta = w->ring;
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	/* Release: the kernel may reuse the space once we say we are done with it. */
	__atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
	uint64_t now = ple_watch_count(w);
	uint64_t fresh = now - w->drained;
	w->drained = now;
	return fresh > INT32_MAX ? INT32_MAX : (int)fresh;
}

void ple_watch_close(struct ple_watch *w)
{
	if (w->ring)
		munmap(w->ring, w->ring_len);
	if (w->fd >= 0)
		close(w->fd);
	w->ring = NULL;
	w->ring_len = 0;
	w->fd = -1;
}
