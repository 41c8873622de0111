/*
 * virtio-blk when the host side goes wrong (issue 15), against the fake guest
 * of virtio_test_driver.h and the real io_uring backend:
 *  - a reset with a read in flight on a backend whose reads block (the
 *    ring's registered file is a pipe: the test hook VMM_TEST_BLK_RING_FD,
 *    so this binary links the hooked objects): after the reset no byte
 *    reaches the guest's buffers, even once the read could finish;
 *  - io_uring_enter refused (a seccomp filter on the kicking thread): the
 *    request fails with IOERR at once, nothing is written later, and the
 *    device works again afterwards;
 *  - the image truncated, made read-only underneath (a loop device set
 *    read-only), and on a full filesystem (a small tmpfs): that request gets
 *    IOERR, the device keeps serving, and every acknowledged write is in the
 *    file.
 */
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/loop.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "virtio_test_driver.h"

#define HDR_GPA 0xa000
#define STATUS_GPA 0xc000
#define DISK_SECTORS 2048 /* 1 MiB image */
#define ALL_FEATURES (~0ull)

static void make_image(const char *path, unsigned sectors)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	uint8_t *buf = malloc((size_t)sectors * 512);
	for (unsigned s = 0; s < sectors; s++)
		memset(buf + (size_t)s * 512, (int)(s & 0xff), 512); /* each sector filled with its number's low byte */
	CHECK_EQ(pwrite(fd, buf, (size_t)sectors * 512, 0), (ssize_t)sectors * 512);
	free(buf);
	close(fd);
}

static int file_byte(const char *path, uint64_t off)
{
	uint8_t c;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : pread(fd, &c, 1, (off_t)off);
	if (fd >= 0)
		close(fd);
	return n == 1 ? c : -1;
}

static int setup(struct vdrv *d, const char *path)
{
	char err[256];
	vd_bus_init(d);
	int r = virtio_blk_pci_create(&d->bus, path, false, &d->gm, 11, vd_irq, d, &d->blk, err, sizeof(err), NULL);
	if (r) {
		fprintf(stderr, "%s\n", err);
		d->blk = NULL;
		return r;
	}
	CHECK_EQ(vd_probe(d), 0);
	CHECK_EQ(vd_start(d, ALL_FEATURES, 64), 0);
	return 0;
}

/* Head 0: header, one data descriptor of len bytes at DATA_GPA, status. Kicks without waiting. */
static void put_request(struct vdrv *d, uint32_t type, uint64_t sector, uint32_t len)
{
	struct virtio_blk_req_hdr h = { type, 0, sector };
	memcpy(d->ram + HDR_GPA, &h, sizeof(h));
	d->ram[STATUS_GPA] = 0xee;
	uint16_t wr = type == VIRTIO_BLK_T_IN ? VIRTQ_DESC_F_WRITE : 0;
	vd_set_desc(d, 0, HDR_GPA, sizeof(h), VIRTQ_DESC_F_NEXT, 1);
	vd_set_desc(d, 1, DATA_GPA, len, VIRTQ_DESC_F_NEXT | wr, 2);
	vd_set_desc(d, 2, STATUS_GPA, 1, VIRTQ_DESC_F_WRITE, 0);
	vd_kick_head(d, 0);
}

/* One request to the end: its status byte (0xee when it never completed). */
static uint8_t request(struct vdrv *d, uint32_t type, uint64_t sector, uint32_t len)
{
	put_request(d, type, sector, len);
	if (vd_wait_all(d))
		return 0xee;
	CHECK_EQ(vd_next_used(d).id, 0);
	return d->ram[STATUS_GPA];
}

/* ---- reset: nothing in flight writes guest memory once status reads 0 ---- */

/*
 * A reset that never returns (a kernel that cannot cancel the pipe read)
 * would hang the test: after 5 s this feeds the pipe, so it fails instead.
 */
struct watchdog {
	int fd;
	atomic_int done;
};

static void *feed_late(void *arg)
{
	struct watchdog *w = arg;
	for (int i = 0; i < 500 && !atomic_load(&w->done); i++)
		usleep(10000);
	if (!atomic_load(&w->done)) {
		static const uint8_t late[512];
		fprintf(stderr, "reset still waiting after 5 s: feeding the pipe\n");
		if (write(w->fd, late, sizeof(late)) < 0)
			perror("watchdog write");
	}
	return NULL;
}

static void test_reset_stops_reads(void)
{
	char path[] = "/tmp/vmm-test-blkf-XXXXXX";
	close(mkstemp(path));
	make_image(path, DISK_SECTORS);
	/* A backend whose reads wait: the ring's one file is an empty pipe, not the image. */
	int p[2];
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	char num[16];
	snprintf(num, sizeof(num), "%d", p[0]);
	setenv("VMM_TEST_BLK_RING_FD", num, 1);
	struct vdrv d;
	CHECK_EQ(setup(&d, path), 0);
	unsetenv("VMM_TEST_BLK_RING_FD");

	memset(d.ram + DATA_GPA, 0, 512);
	put_request(&d, VIRTIO_BLK_T_IN, 5, 512);
	CHECK_EQ(virtio_blk_pci_stats(d.blk).in_flight, 1);

	struct watchdog w = { .fd = p[1] };
	pthread_t wt;
	pthread_create(&wt, NULL, feed_late, &w);
	cc_wr(&d, VIRTIO_PCI_COMMON_STATUS, 0, 1); /* reset */
	atomic_store(&w.done, 1);
	pthread_join(wt, NULL);
	CHECK_EQ(cc_rd(&d, VIRTIO_PCI_COMMON_STATUS, 1), 0);
	struct virtio_blk_stats s = virtio_blk_pci_stats(d.blk);
	CHECK_EQ(s.in_flight, 0);      /* cancelled before status read 0 */
	CHECK_EQ(s.reset_cancels, 1);
	CHECK_EQ(s.reset_errors, 0);

	/* The driver reuses the buffer; then the data the read waited for arrives. */
	memset(d.ram + DATA_GPA, 0x77, 512);
	uint8_t junk[512];
	memset(junk, 0xab, sizeof(junk));
	CHECK_EQ(write(p[1], junk, sizeof(junk)), 512);
	usleep(50000);
	virtio_blk_pci_process_completions(d.blk);
	unsigned changed = 0;
	for (unsigned i = 0; i < 512; i++)
		changed += d.ram[DATA_GPA + i] != 0x77;
	CHECK_EQ(changed, 0);
	CHECK_EQ(vd_used_idx(&d), 0);
	int left = 0;
	CHECK_EQ(ioctl(p[0], FIONREAD, &left), 0);
	CHECK_EQ(left, 512); /* nobody read the pipe */

	/* The reset device works again (a read of the pipe's 512 bytes). */
	CHECK_EQ(vd_start(&d, ALL_FEATURES, 64), 0);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_IN, 5, 512), VIRTIO_BLK_S_OK);
	CHECK_EQ(d.ram[DATA_GPA + 100], 0xab);
	vd_bus_fini(&d);
	close(p[0]);
	close(p[1]);
	unlink(path);
}

/* ---- io_uring_enter refused: the request fails now, not silently later ---- */

struct kick_arg {
	struct vdrv *d;
	int filter_rc;
};

/* A vCPU thread whose io_uring_enter fails (EPERM from its own seccomp filter). */
static void *refused_kick(void *arg)
{
	struct kick_arg *a = arg;
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_enter, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	a->filter_rc = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
	if (!a->filter_rc)
		put_request(a->d, VIRTIO_BLK_T_OUT, 40, 512);
	return NULL;
}

static void test_submit_refused(void)
{
	char path[] = "/tmp/vmm-test-blkf-XXXXXX";
	close(mkstemp(path));
	make_image(path, DISK_SECTORS);
	struct vdrv d;
	CHECK_EQ(setup(&d, path), 0);
	memset(d.ram + DATA_GPA, 0x5a, 512);
	struct kick_arg a = { &d, -1 };
	pthread_t t;
	pthread_create(&t, NULL, refused_kick, &a);
	pthread_join(t, NULL);
	CHECK_EQ(a.filter_rc, 0);
	/* Completed by the kick itself, with an error, before any completion ran. */
	CHECK_EQ(vd_used_idx(&d), 1);
	CHECK_EQ(d.ram[STATUS_GPA], VIRTIO_BLK_S_IOERR);
	struct virtio_blk_stats s = virtio_blk_pci_stats(d.blk);
	CHECK_EQ(s.submit_errors, 1);
	CHECK_EQ(s.ioerr, 1);
	CHECK_EQ(s.in_flight, 0);
	CHECK_EQ(vd_next_used(&d).id, 0);
	/* The refused write never happens later: the next request's submission does not carry it. */
	CHECK_EQ(request(&d, VIRTIO_BLK_T_IN, 41, 512), VIRTIO_BLK_S_OK);
	CHECK_EQ(d.ram[DATA_GPA], 41);
	usleep(20000);
	virtio_blk_pci_process_completions(d.blk);
	CHECK_EQ(vd_used_idx(&d), 2);
	CHECK_EQ(file_byte(path, 40 * 512), 40);
	vd_bus_fini(&d);
	unlink(path);
}

/* ---- the image changes under the VMM ---- */

/* A write of 512 bytes of fill at sector; its status. */
static uint8_t write_fill(struct vdrv *d, uint64_t sector, uint8_t fill)
{
	memset(d->ram + DATA_GPA, fill, 512);
	return request(d, VIRTIO_BLK_T_OUT, sector, 512);
}

static void test_truncated_image(void)
{
	char path[] = "/tmp/vmm-test-blkf-XXXXXX";
	close(mkstemp(path));
	make_image(path, DISK_SECTORS);
	struct vdrv d;
	CHECK_EQ(setup(&d, path), 0);
	CHECK_EQ(write_fill(&d, 10, 0xa1), VIRTIO_BLK_S_OK);
	CHECK_EQ(truncate(path, DISK_SECTORS / 2 * 512), 0); /* half the disk goes while the guest runs */
	/* A read of what is gone: IOERR, counted; the guest's capacity is unchanged. */
	CHECK_EQ(request(&d, VIRTIO_BLK_T_IN, DISK_SECTORS - 8, 512), VIRTIO_BLK_S_IOERR);
	struct virtio_blk_stats s = virtio_blk_pci_stats(d.blk);
	CHECK_EQ(s.ioerr, 1);
	CHECK_EQ(s.backend_errors, 1);
	CHECK_EQ(virtio_blk_pci_capacity(d.blk), DISK_SECTORS);
	/* What is left still reads; a write past the new end lands in the file. */
	CHECK_EQ(request(&d, VIRTIO_BLK_T_IN, 10, 512), VIRTIO_BLK_S_OK);
	CHECK_EQ(d.ram[DATA_GPA + 300], 0xa1);
	CHECK_EQ(write_fill(&d, DISK_SECTORS - 8, 0xa2), VIRTIO_BLK_S_OK);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_FLUSH, 0, 0), VIRTIO_BLK_S_OK);
	vd_bus_fini(&d);
	/* Every acknowledged write is in the file. */
	CHECK_EQ(file_byte(path, 10 * 512 + 7), 0xa1);
	CHECK_EQ(file_byte(path, (DISK_SECTORS - 8) * 512ull + 7), 0xa2);
	unlink(path);
}

/* A small tmpfs at a fresh directory; false (and the reason said) where mount is not allowed. */
static bool small_tmpfs(char *dir, const char *size)
{
	if (!mkdtemp(dir))
		return false;
	char opt[64];
	snprintf(opt, sizeof(opt), "size=%s,mode=0700", size);
	if (mount("tmpfs", dir, "tmpfs", 0, opt) == 0)
		return true;
	SKIP("cannot mount a tmpfs here (%s): needs root", strerror(errno));
	rmdir(dir);
	return false;
}

static void test_full_filesystem(void)
{
	char dir[] = "/tmp/vmm-test-blkfs-XXXXXX", path[64], filler[64];
	if (!small_tmpfs(dir, "256k"))
		return;
	snprintf(path, sizeof(path), "%s/disk.img", dir);
	snprintf(filler, sizeof(filler), "%s/filler", dir);
	/* A 1 MiB sparse image on 256 KiB: its first pages hold data, the rest are holes. */
	int fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(ftruncate(fd, DISK_SECTORS * 512), 0);
	close(fd);
	struct vdrv d;
	CHECK_EQ(setup(&d, path), 0);
	CHECK_EQ(write_fill(&d, 0, 0xb1), VIRTIO_BLK_S_OK);
	/* Someone else fills the filesystem. */
	fd = open(filler, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	uint8_t junk[4096];
	memset(junk, 1, sizeof(junk));
	while (write(fd, junk, sizeof(junk)) > 0)
		;
	CHECK_EQ(errno, ENOSPC);
	close(fd);
	/* A write into a hole needs a page there is no room for: IOERR, counted. */
	CHECK_EQ(write_fill(&d, 1000, 0xb2), VIRTIO_BLK_S_IOERR);
	struct virtio_blk_stats s = virtio_blk_pci_stats(d.blk);
	CHECK_EQ(s.ioerr, 1);
	CHECK_EQ(s.backend_errors, 1);
	/* The device keeps serving: reads, and writes into space the image already has. */
	CHECK_EQ(write_fill(&d, 1, 0xb3), VIRTIO_BLK_S_OK);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_IN, 0, 512), VIRTIO_BLK_S_OK);
	CHECK_EQ(d.ram[DATA_GPA + 9], 0xb1);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_FLUSH, 0, 0), VIRTIO_BLK_S_OK);
	vd_bus_fini(&d);
	CHECK_EQ(file_byte(path, 9), 0xb1);
	CHECK_EQ(file_byte(path, 512 + 9), 0xb3);
	CHECK_EQ(file_byte(path, 1000 * 512 + 9), 0); /* the failed write left its hole */
	umount(dir);
	rmdir(dir);
}

/* A loop device over path; its fd (and name in dev), or -1 where loop devices are not available. */
static int loop_attach(const char *path, char *dev, size_t devlen)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	int n = ctl < 0 ? -1 : ioctl(ctl, LOOP_CTL_GET_FREE);
	if (ctl >= 0)
		close(ctl);
	if (n < 0)
		return -1;
	snprintf(dev, devlen, "/dev/loop%d", n);
	int lfd = open(dev, O_RDWR | O_CLOEXEC), bfd = open(path, O_RDWR | O_CLOEXEC);
	int r = lfd < 0 || bfd < 0 ? -1 : ioctl(lfd, LOOP_SET_FD, bfd);
	if (bfd >= 0)
		close(bfd);
	if (r < 0 && lfd >= 0) {
		close(lfd);
		lfd = -1;
	}
	return lfd;
}

/*
 * Read-only underneath: a file image's filesystem cannot be remounted
 * read-only while the VMM holds the image open for writing (the kernel says
 * EBUSY), so the realistic case is a block device that turns read-only (a
 * SAN volume, `blockdev --setro`): here a loop device, BLKROSET.
 */
static void test_read_only_underneath(void)
{
	char path[] = "/tmp/vmm-test-blkf-XXXXXX", dev[32];
	close(mkstemp(path));
	make_image(path, DISK_SECTORS);
	int lfd = loop_attach(path, dev, sizeof(dev));
	if (lfd < 0) {
		SKIP("no loop device here (%s): needs root and /dev/loop-control", strerror(errno));
		unlink(path);
		return;
	}
	struct vdrv d;
	CHECK_EQ(setup(&d, dev), 0);
	CHECK_EQ(write_fill(&d, 3, 0xc1), VIRTIO_BLK_S_OK);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_FLUSH, 0, 0), VIRTIO_BLK_S_OK);
	int ro = 1;
	CHECK_EQ(ioctl(lfd, BLKROSET, &ro), 0);
	CHECK_EQ(write_fill(&d, 4, 0xc2), VIRTIO_BLK_S_IOERR);
	struct virtio_blk_stats s = virtio_blk_pci_stats(d.blk);
	CHECK_EQ(s.ioerr, 1);
	CHECK_EQ(s.backend_errors, 1);
	/* Reads go on, and see the acknowledged write. */
	CHECK_EQ(request(&d, VIRTIO_BLK_T_IN, 3, 512), VIRTIO_BLK_S_OK);
	CHECK_EQ(d.ram[DATA_GPA + 1], 0xc1);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_IN, 4, 512), VIRTIO_BLK_S_OK);
	CHECK_EQ(d.ram[DATA_GPA + 1], 4);
	vd_bus_fini(&d);
	ro = 0;
	ioctl(lfd, BLKROSET, &ro);
	ioctl(lfd, LOOP_CLR_FD, 0);
	close(lfd);
	CHECK_EQ(file_byte(path, 3 * 512 + 1), 0xc1);
	CHECK_EQ(file_byte(path, 4 * 512 + 1), 4);
	unlink(path);
}

int main(void)
{
	RUN(test_reset_stops_reads);
	RUN(test_submit_refused);
	RUN(test_truncated_image);
	RUN(test_full_filesystem);
	RUN(test_read_only_underneath);
	return check_summary();
}
