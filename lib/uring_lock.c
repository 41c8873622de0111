#include "lib/uring_lock.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

int uring_register(struct io_uring *ring, unsigned op, const void *arg, unsigned n)
{
	long rc = syscall(__NR_io_uring_register, ring->ring_fd, op, arg, n);
	return rc < 0 ? -errno : 0;
}

int uring_lock(struct io_uring *ring, const uint8_t *ops, unsigned nops, const uint8_t *reg_ops, unsigned nreg)
{
	struct io_uring_restriction res[nops + nreg + 1];
	unsigned n = 0;
	for (unsigned i = 0; i < nops; i++)
		res[n++] = (struct io_uring_restriction){ .opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = ops[i] };
	res[n++] = (struct io_uring_restriction){ .opcode = IORING_RESTRICTION_SQE_FLAGS_REQUIRED,
						  .sqe_flags = IOSQE_FIXED_FILE };
	for (unsigned i = 0; i < nreg; i++)
		res[n++] = (struct io_uring_restriction){ .opcode = IORING_RESTRICTION_REGISTER_OP,
							  .register_op = reg_ops[i] };
	int rc = uring_register(ring, IORING_REGISTER_RESTRICTIONS, res, n);
	return rc < 0 ? rc : uring_register(ring, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
}
