/*
 * Bounded waits on the disk path (issue 31 item 7): a drain (a virtio reset's
 * cancel and wait, or the one at close) ends after its bound, and a reset
 * that leaves I/O in flight never lets the driver read status 0 while that
 * I/O may still write guest memory. The ring's file is a pipe whose reads
 * wait (VMM_TEST_BLK_RING_FD), and the test hooks make the cancel fail:
 *  - no free SQE for it (VMM_TEST_BLK_CANCEL=nosqe);
 *  - submitted, but it stops nothing (=miss): the completion never comes;
 *  - the wait refused (io_uring_enter EPERM from a seccomp filter on the
 *    resetting thread, as a vCPU's filter would);
 * with the bound shortened (VMM_TEST_BLK_DRAIN_MS), the same code path. The
 * mechanism is asserted (status, counters, the host-error call, the wait
 * returning at or after its deadline), not a precise time.
 */
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "devices/blk_backend_uring.h"
#include "virtio_test_driver.h"

#define HDR_GPA 0xa000
#define STATUS_GPA 0xc000
#define ALL_FEATURES (~0ull)
#define SHORT_MS 200 /* the shortened drain bound */
#define SLACK_MS 3000 /* a wait past its bound by more than this did not stop at it */

static uint64_t ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void make_image(char *path)
{
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK_EQ(ftruncate(fd, 1 << 20), 0);
	close(fd);
}

/* The hooks for the next open: the ring reads pipe p[0]; cancel "nosqe", "miss" or NULL; bound ms (0: default). */
static void hooks(int p0, const char *cancel, unsigned ms)
{
	char num[16];
	snprintf(num, sizeof(num), "%d", p0);
	setenv("VMM_TEST_BLK_RING_FD", num, 1);
	if (cancel)
		setenv("VMM_TEST_BLK_CANCEL", cancel, 1);
	if (ms) {
		snprintf(num, sizeof(num), "%u", ms);
		setenv("VMM_TEST_BLK_DRAIN_MS", num, 1);
	}
}

static void no_hooks(void)
{
	unsetenv("VMM_TEST_BLK_RING_FD");
	unsetenv("VMM_TEST_BLK_CANCEL");
	unsetenv("VMM_TEST_BLK_DRAIN_MS");
}

/* ---- the backend alone ---- */

static int done_calls, done_res;

static void record(struct blk_io *io, int res)
{
	(void)io;
	done_calls++;
	done_res = res;
}

static void feed(int fd, unsigned n)
{
	uint8_t junk[512];
	memset(junk, 0xab, sizeof(junk));
	CHECK_EQ(write(fd, junk, n), (ssize_t)n);
}

/* Runs completions for up to 2 s until nothing is in flight. */
static void reap_all(struct blk_backend *b)
{
	for (int i = 0; i < 200 && b->inflight; i++) {
		usleep(10000);
		blk_backend_reap(b);
	}
}

static void backend_drain_bounded(void)
{
	char img[] = "/tmp/vmm-test-blkbound-XXXXXX";
	make_image(img);
	int p[2];
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	struct blk_backend b;
	char err[256];
	hooks(p[0], "nosqe", 0);
	CHECK_EQ(blk_backend_open(&b, img, false, 16, err, sizeof(err)), 0);
	no_hooks();
	CHECK_EQ(b.drain_wait_ms, BLK_DRAIN_WAIT_MS); /* the named bound, unless a test shortens it */
	b.drain_wait_ms = SHORT_MS;

	static uint8_t buf[512];
	struct iovec iov = { buf, sizeof(buf) };
	struct blk_io io = { .op = BLK_OP_READ, .iov = &iov, .niov = 1, .done = record };
	done_calls = 0;
	CHECK_EQ(blk_backend_queue(&b, &io), 0);
	CHECK_EQ(blk_backend_submit(&b), 0);
	uint64_t t0 = ms_now();
	CHECK_EQ(blk_backend_cancel_all(&b), -ETIMEDOUT);
	uint64_t took = ms_now() - t0;
	CHECK(took >= SHORT_MS && took < SHORT_MS + SLACK_MS);
	CHECK_EQ(b.inflight, 1);
	CHECK(b.draining); /* the late completion is not resubmitted */
	CHECK_EQ(b.cancel_unsent, 1);
	CHECK_EQ(b.drain_timeouts, 1);
	CHECK_EQ(b.cancels, 0);
	CHECK_EQ(done_calls, 0);

	/* Half the read arrives: while draining it is not sent round again for the rest. */
	feed(p[1], 256);
	reap_all(&b);
	CHECK_EQ(done_calls, 1);
	CHECK_EQ(done_res, -ECANCELED);
	CHECK_EQ(b.inflight, 0);
	CHECK(!b.draining);
	CHECK_EQ(b.resubmits, 0);

	/* Close with a read in flight and no SQE for the cancel: bounded too, and said. */
	CHECK_EQ(blk_backend_queue(&b, &io), 0);
	CHECK_EQ(blk_backend_submit(&b), 0);
	t0 = ms_now();
	CHECK_EQ(blk_backend_close(&b), -ETIMEDOUT);
	took = ms_now() - t0;
	CHECK(took >= SHORT_MS && took < SHORT_MS + SLACK_MS);
	CHECK_EQ(b.drain_timeouts, 2);
	CHECK_EQ(b.fd, -1);
	close(p[0]);
	close(p[1]);
	unlink(img);
}

/* A close whose cancel works ends the pipe read at once: no wait for its bound. */
static void backend_close_cancels(void)
{
	char img[] = "/tmp/vmm-test-blkbound-XXXXXX";
	make_image(img);
	int p[2];
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	struct blk_backend b;
	char err[256];
	hooks(p[0], NULL, 0);
	CHECK_EQ(blk_backend_open(&b, img, false, 16, err, sizeof(err)), 0);
	no_hooks();
	static uint8_t buf[512];
	struct iovec iov = { buf, sizeof(buf) };
	struct blk_io io = { .op = BLK_OP_READ, .iov = &iov, .niov = 1, .done = record };
	done_calls = 0;
	CHECK_EQ(blk_backend_queue(&b, &io), 0);
	CHECK_EQ(blk_backend_submit(&b), 0);
	uint64_t t0 = ms_now();
	CHECK_EQ(blk_backend_close(&b), 0); /* was: a wait for ever on the pipe */
	CHECK(ms_now() - t0 < BLK_DRAIN_WAIT_MS);
	CHECK_EQ(done_calls, 1);
	CHECK_EQ(done_res, -ECANCELED);
	CHECK_EQ(b.cancels, 1);
	CHECK_EQ(b.drain_timeouts, 0);
	close(p[0]);
	close(p[1]);
	unlink(img);
}

/* ---- the device: what the driver reads ---- */

struct host_errors {
	unsigned calls;
	char what[200];
};

static void on_host_error(void *ctx, const char *what)
{
	struct host_errors *h = ctx;
	h->calls++;
	snprintf(h->what, sizeof(h->what), "%s", what);
}

/* A started device on a pipe-backed ring with one read in flight into DATA_GPA. */
static void start_with_read(struct vdrv *d, const char *img, struct host_errors *h)
{
	char err[256];
	vd_bus_init(d);
	CHECK_EQ(virtio_blk_pci_create(&d->bus, img, false, &d->gm, 11, vd_irq, d, &d->blk, err, sizeof(err), NULL), 0);
	no_hooks();
	memset(h, 0, sizeof(*h));
	virtio_blk_pci_on_host_error(d->blk, on_host_error, h);
	CHECK_EQ(vd_probe(d), 0);
	CHECK_EQ(vd_start(d, ALL_FEATURES, 64), 0);
	struct virtio_blk_req_hdr hdr = { VIRTIO_BLK_T_IN, 0, 5 };
	memcpy(d->ram + HDR_GPA, &hdr, sizeof(hdr));
	d->ram[STATUS_GPA] = 0xee;
	vd_set_desc(d, 0, HDR_GPA, sizeof(hdr), VIRTQ_DESC_F_NEXT, 1);
	vd_set_desc(d, 1, DATA_GPA, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 2);
	vd_set_desc(d, 2, STATUS_GPA, 1, VIRTQ_DESC_F_WRITE, 0);
	vd_kick_head(d, 0);
	CHECK_EQ(virtio_blk_pci_stats(d->blk).in_flight, 1);
}

static uint8_t status(struct vdrv *d)
{
	return (uint8_t)cc_rd(d, VIRTIO_PCI_COMMON_STATUS, 1);
}

/* The reset is held: status NEEDS_RESET, the driver cannot start the device, nothing used. */
static void check_held(struct vdrv *d)
{
	CHECK_EQ(status(d), VIRTIO_STATUS_NEEDS_RESET);
	cc_wr(d, VIRTIO_PCI_COMMON_STATUS, VIRTIO_STATUS_ACKNOWLEDGE, 1);
	CHECK_EQ(status(d), VIRTIO_STATUS_NEEDS_RESET);
	CHECK_EQ(virtio_blk_pci_stats(d->blk).in_flight, 1);
	CHECK_EQ(vd_used_idx(d), 0);
}

/* The read finally comes back: status 0 at the next read after it, its used entry dropped. */
static void release(struct vdrv *d, int wfd)
{
	feed(wfd, 512);
	/* The status read itself reaps it (reset_poll): no completion is run here. */
	for (int i = 0; i < 200 && status(d) != 0; i++)
		usleep(10000);
	CHECK_EQ(status(d), 0);
	CHECK_EQ(virtio_blk_pci_stats(d->blk).in_flight, 0);
	CHECK_EQ(vd_used_idx(d), 0);
	/* The device works again. */
	CHECK_EQ(vd_start(d, ALL_FEATURES, 64), 0);
}

/* One reset by the driver, its time in ms. */
static uint64_t reset_ms(struct vdrv *d)
{
	uint64_t t0 = ms_now();
	cc_wr(d, VIRTIO_PCI_COMMON_STATUS, 0, 1);
	return ms_now() - t0;
}

static void reset_without_sqe_is_held(void)
{
	char img[] = "/tmp/vmm-test-blkbound-XXXXXX";
	make_image(img);
	int p[2];
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	struct vdrv d;
	struct host_errors h;
	hooks(p[0], "nosqe", SHORT_MS);
	start_with_read(&d, img, &h);
	uint64_t took = reset_ms(&d);
	CHECK(took >= SHORT_MS && took < SHORT_MS + SLACK_MS);
	check_held(&d);
	check_held(&d); /* every read polls; still out, still held */
	struct virtio_blk_stats s = virtio_blk_pci_stats(d.blk);
	CHECK_EQ(s.reset_errors, 1);
	CHECK_EQ(s.reset_timeouts, 1);
	CHECK_EQ(s.reset_cancel_unsent, 1);
	CHECK_EQ(s.reset_cancels, 0);
	CHECK_EQ(s.resets_held, 1);
	CHECK_EQ(h.calls, 1);
	CHECK(strstr(h.what, "1 request still in flight after 200 ms (its cancel could not be submitted)") != NULL);
	if (h.calls)
		printf("host error: %s\n", h.what);
	release(&d, p[1]);
	CHECK_EQ(h.calls, 1);
	vd_bus_fini(&d);
	close(p[0]);
	close(p[1]);
	unlink(img);
}

static void reset_cancel_that_stops_nothing_is_held(void)
{
	char img[] = "/tmp/vmm-test-blkbound-XXXXXX";
	make_image(img);
	int p[2];
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	struct vdrv d;
	struct host_errors h;
	hooks(p[0], "miss", SHORT_MS);
	start_with_read(&d, img, &h);
	uint64_t took = reset_ms(&d);
	CHECK(took >= SHORT_MS && took < SHORT_MS + SLACK_MS);
	check_held(&d);
	struct virtio_blk_stats s = virtio_blk_pci_stats(d.blk);
	CHECK_EQ(s.reset_cancels, 1); /* submitted */
	CHECK_EQ(s.reset_cancel_unsent, 0);
	CHECK_EQ(s.reset_timeouts, 1);
	CHECK(strstr(h.what, "1 request still in flight after 200 ms") != NULL);
	/* The driver resets again: another bounded try, still held, the run told once. */
	took = reset_ms(&d);
	CHECK(took >= SHORT_MS && took < SHORT_MS + SLACK_MS);
	check_held(&d);
	s = virtio_blk_pci_stats(d.blk);
	CHECK_EQ(s.reset_errors, 2);
	CHECK_EQ(s.reset_timeouts, 2);
	CHECK_EQ(s.resets_held, 2);
	CHECK_EQ(h.calls, 1);
	release(&d, p[1]);
	vd_bus_fini(&d);
	close(p[0]);
	close(p[1]);
	unlink(img);
}

/* A vCPU thread whose io_uring_enter fails (EPERM from its own seccomp filter) resets the device. */
static void *refused_reset(void *arg)
{
	struct vdrv *d = arg;
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_enter, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return (void *)-1;
	cc_wr(d, VIRTIO_PCI_COMMON_STATUS, 0, 1);
	return NULL;
}

static void reset_wait_refused_is_held(void)
{
	char img[] = "/tmp/vmm-test-blkbound-XXXXXX";
	make_image(img);
	int p[2];
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	struct vdrv d;
	struct host_errors h;
	hooks(p[0], NULL, 0); /* the real cancel and the real bound */
	start_with_read(&d, img, &h);
	pthread_t t;
	void *rc = (void *)-1;
	uint64_t t0 = ms_now();
	pthread_create(&t, NULL, refused_reset, &d);
	pthread_join(t, &rc);
	CHECK(rc == NULL);
	CHECK(ms_now() - t0 < BLK_DRAIN_WAIT_MS); /* the wait failed at once; it did not run to its bound */
	check_held(&d);
	struct virtio_blk_stats s = virtio_blk_pci_stats(d.blk);
	CHECK_EQ(s.reset_errors, 1);
	CHECK_EQ(s.reset_timeouts, 0);
	CHECK_EQ(s.reset_cancel_unsent, 1); /* the cancel was refused with the submit */
	CHECK_EQ(h.calls, 1);
	CHECK(strstr(h.what, "cannot wait for 1 request in flight: io_uring_enter: Operation not permitted") != NULL);
	/* A reset from a thread io_uring serves: its cancel stops the read, status 0 at once. */
	cc_wr(&d, VIRTIO_PCI_COMMON_STATUS, 0, 1);
	CHECK_EQ(status(&d), 0);
	s = virtio_blk_pci_stats(d.blk);
	CHECK_EQ(s.in_flight, 0);
	CHECK_EQ(s.reset_errors, 1);
	CHECK_EQ(vd_used_idx(&d), 0);
	CHECK_EQ(vd_start(&d, ALL_FEATURES, 64), 0);
	vd_bus_fini(&d);
	close(p[0]);
	close(p[1]);
	unlink(img);
}

int main(void)
{
	RUN(backend_drain_bounded);
	RUN(backend_close_cancels);
	RUN(reset_without_sqe_is_held);
	RUN(reset_cancel_that_stops_nothing_is_held);
	RUN(reset_wait_refused_is_held);
	return check_summary();
}
