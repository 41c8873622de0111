/*
 * The disk backend's own io_uring (devices/blk_backend_uring.c), on this
 * host's real io_uring (issue 15: IORING_REGISTER_RESTRICTIONS): a request
 * forged into its SQ (shared memory) with another opcode, on a plain fd, or
 * on a slot other than the image's completes with -EACCES (-EBADF) and does
 * nothing; no register operation is left; the backend's own reads, writes,
 * flushes and the reset's cancel still work through it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "devices/blk_backend_uring.h"
#include "tests/unit/check.h"

#define IMG_BYTES 65536

static int make_file(char *path, uint8_t fill)
{
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	uint8_t buf[IMG_BYTES];
	memset(buf, fill, sizeof(buf));
	CHECK_EQ(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	return fd;
}

static int byte_at(int fd, off_t off)
{
	uint8_t c;
	return pread(fd, &c, 1, off) == 1 ? c : -1;
}

/* One raw SQE straight into the backend's ring; its completion's res. */
static int submit_raw(struct blk_backend *b, uint8_t opcode, uint8_t flags, int fd, const void *addr, unsigned len,
		      uint64_t off)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
	if (!sqe)
		return -ENOSPC;
	io_uring_prep_rw(opcode, sqe, fd, addr, len, off);
	sqe->flags = flags;
	io_uring_sqe_set_data(sqe, NULL);
	int rc = io_uring_submit_and_wait(&b->ring, 1);
	if (rc < 0)
		return rc;
	struct io_uring_cqe *cqe;
	rc = io_uring_peek_cqe(&b->ring, &cqe);
	if (rc < 0)
		return rc;
	int res = cqe->res;
	io_uring_cqe_seen(&b->ring, cqe);
	return res;
}

static int reg(struct blk_backend *b, unsigned op, const void *arg, unsigned n)
{
	return syscall(__NR_io_uring_register, b->ring.ring_fd, op, arg, n) < 0 ? -errno : 0;
}

static void forged_requests_refused(void)
{
	char img[] = "/tmp/vmm-test-blkring-XXXXXX", other[] = "/tmp/vmm-test-blkring-XXXXXX";
	close(make_file(img, 0x11));
	int ofd = make_file(other, 0x22);
	struct blk_backend b;
	char err[256];
	CHECK_EQ(blk_backend_open(&b, img, false, 16, err, sizeof(err)), 0);
	uint8_t buf[512];
	memset(buf, 0x99, sizeof(buf));
	struct iovec iov = { buf, sizeof(buf) };

	/* opcodes the backend never submits: refused, even on the image's slot */
	CHECK_EQ(submit_raw(&b, IORING_OP_OPENAT, 0, AT_FDCWD, "/etc/passwd", 0, 0), -EACCES);
	CHECK_EQ(submit_raw(&b, IORING_OP_OPENAT, IOSQE_FIXED_FILE, AT_FDCWD, "/etc/passwd", 0, 0), -EACCES);
	CHECK_EQ(submit_raw(&b, IORING_OP_WRITE, IOSQE_FIXED_FILE, 0, buf, sizeof(buf), 0), -EACCES);
	CHECK_EQ(submit_raw(&b, IORING_OP_READ, IOSQE_FIXED_FILE, 0, buf, sizeof(buf), 0), -EACCES);
	CHECK_EQ(submit_raw(&b, IORING_OP_NOP, IOSQE_FIXED_FILE, -1, NULL, 0, 0), -EACCES);
	CHECK_EQ(submit_raw(&b, IORING_OP_WRITE, 0, ofd, buf, sizeof(buf), 0), -EACCES);
	/* the backend's own opcodes on a plain fd, not the registered image: refused */
	CHECK_EQ(submit_raw(&b, IORING_OP_READV, 0, ofd, &iov, 1, 0), -EACCES);
	CHECK_EQ(submit_raw(&b, IORING_OP_WRITEV, 0, ofd, &iov, 1, 0), -EACCES);
	CHECK_EQ(submit_raw(&b, IORING_OP_FSYNC, 0, ofd, NULL, 0, 0), -EACCES);
	/* and the table holds the image only */
	CHECK_EQ(submit_raw(&b, IORING_OP_READV, IOSQE_FIXED_FILE, 1, &iov, 1, 0), -EBADF);
	/* none of that happened: the buffer is as it was, both files too */
	CHECK_EQ(buf[0], 0x99);
	CHECK_EQ(buf[511], 0x99);
	int ifd = open(img, O_RDONLY | O_CLOEXEC);
	CHECK_EQ(byte_at(ifd, 0), 0x11);
	CHECK_EQ(byte_at(ofd, 0), 0x22);

	/* no register operation is left: the file table cannot be swapped or grown */
	int fds[2] = { ofd, ofd };
	struct io_uring_files_update up = { .offset = 0, .fds = (uint64_t)(uintptr_t)fds };
	CHECK_EQ(reg(&b, IORING_REGISTER_FILES_UPDATE, &up, 1), -EACCES);
	CHECK_EQ(reg(&b, IORING_UNREGISTER_FILES, NULL, 0), -EACCES);
	CHECK_EQ(reg(&b, IORING_REGISTER_FILES, fds, 2), -EACCES);
	CHECK_EQ(reg(&b, IORING_UNREGISTER_EVENTFD, NULL, 0), -EACCES);
	struct io_uring_restriction none = { .opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = IORING_OP_OPENAT };
	CHECK_EQ(reg(&b, IORING_REGISTER_RESTRICTIONS, &none, 1), -EACCES);
	CHECK_EQ(submit_raw(&b, IORING_OP_OPENAT, 0, AT_FDCWD, "/etc/passwd", 0, 0), -EACCES);

	/* the reset's cancel, as the backend sends it, is accepted (nothing to cancel) */
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b.ring);
	io_uring_prep_cancel_fd(sqe, 0, IORING_ASYNC_CANCEL_ALL | IORING_ASYNC_CANCEL_FD_FIXED);
	sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data(sqe, NULL);
	CHECK_EQ(io_uring_submit_and_wait(&b.ring, 1), 1);
	struct io_uring_cqe *cqe;
	CHECK_EQ(io_uring_peek_cqe(&b.ring, &cqe), 0);
	CHECK(cqe->res == 0 || cqe->res == -ENOENT);
	io_uring_cqe_seen(&b.ring, cqe);
	blk_backend_close(&b);
	close(ifd);
	close(ofd);
	unlink(img);
	unlink(other);
}

struct done {
	int calls, res;
};

/* The backend's own requests, each one through the locked ring. */
static struct done results[16];
static struct blk_io ios[16];

static void record(struct blk_io *io, int res)
{
	struct done *d = &results[io - ios];
	d->calls++;
	d->res = res;
}

static void wait_all(struct blk_backend *b)
{
	while (b->inflight) {
		struct io_uring_cqe *cqe;
		CHECK_EQ(io_uring_wait_cqe(&b->ring, &cqe), 0);
		blk_backend_reap(b);
	}
}

static void own_requests_work(void)
{
	char img[] = "/tmp/vmm-test-blkring-XXXXXX";
	close(make_file(img, 0x11));
	struct blk_backend b;
	char err[256];
	CHECK_EQ(blk_backend_open(&b, img, false, 16, err, sizeof(err)), 0);
	static uint8_t wbuf[4096], rbuf[4096];
	memset(wbuf, 0x5c, sizeof(wbuf));
	struct iovec wiov = { wbuf, sizeof(wbuf) }, riov = { rbuf, sizeof(rbuf) }, fiov = { 0 };
	memset(results, 0, sizeof(results));
	ios[0] = (struct blk_io){ .op = BLK_OP_WRITE, .iov = &wiov, .niov = 1, .offset = 8192, .done = record };
	ios[1] = (struct blk_io){ .op = BLK_OP_FLUSH, .iov = &fiov, .niov = 0, .done = record };
	CHECK_EQ(blk_backend_queue(&b, &ios[0]), 0);
	CHECK_EQ(blk_backend_submit(&b), 0);
	wait_all(&b);
	CHECK_EQ(blk_backend_queue(&b, &ios[1]), 0);
	CHECK_EQ(blk_backend_submit(&b), 0);
	wait_all(&b);
	ios[2] = (struct blk_io){ .op = BLK_OP_READ, .iov = &riov, .niov = 1, .offset = 8192, .done = record };
	CHECK_EQ(blk_backend_queue(&b, &ios[2]), 0);
	CHECK_EQ(blk_backend_submit(&b), 0);
	wait_all(&b);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(results[i].calls, 1);
		CHECK_EQ(results[i].res, 0);
	}
	CHECK_EQ(rbuf[0], 0x5c);
	CHECK_EQ(rbuf[4095], 0x5c);

	/* the reset's cancel with reads in flight: every callback runs, none is left out */
	static uint8_t many[8][512];
	static struct iovec miov[8];
	for (int i = 0; i < 8; i++) {
		miov[i] = (struct iovec){ many[i], sizeof(many[i]) };
		ios[4 + i] = (struct blk_io){ .op = BLK_OP_READ, .iov = &miov[i], .niov = 1,
					      .offset = (uint64_t)i * 512, .done = record };
		CHECK_EQ(blk_backend_queue(&b, &ios[4 + i]), 0);
	}
	CHECK_EQ(blk_backend_submit(&b), 0);
	CHECK_EQ(blk_backend_cancel_all(&b), 0);
	CHECK_EQ(b.inflight, 0);
	for (int i = 0; i < 8; i++) {
		CHECK_EQ(results[4 + i].calls, 1);
		CHECK(results[4 + i].res == 0 || results[4 + i].res == -ECANCELED);
	}
	CHECK_EQ(b.submit_errors, 0);
	blk_backend_close(&b);
	int fd = open(img, O_RDONLY | O_CLOEXEC);
	CHECK_EQ(byte_at(fd, 8192), 0x5c);
	CHECK_EQ(byte_at(fd, 0), 0x11);
	close(fd);
	unlink(img);
}

int main(void)
{
	RUN(forged_requests_refused);
	RUN(own_requests_work);
	return check_summary();
}
