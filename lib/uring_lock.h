/*
 * Locking an io_uring down before its first submission
 * (IORING_REGISTER_RESTRICTIONS, Linux 5.10): the ring is created with
 * IORING_SETUP_R_DISABLED, its owner registers what it needs (files, an
 * eventfd) with uring_register, then uring_lock allows only the given
 * opcodes, only on registered files (IOSQE_FIXED_FILE required of every
 * SQE), and only the given register operations, and enables the ring. A
 * forged SQE (the rings are shared memory) outside that completes with
 * -EACCES and does nothing. Used by the event loop and the disk backend.
 */
#ifndef VMM_LIB_URING_LOCK_H
#define VMM_LIB_URING_LOCK_H

#include <liburing.h>
#include <stdint.h>

/*
 * io_uring_register(2) directly: Debian's liburing 2.3 has
 * io_uring_register_restrictions and io_uring_enable_rings in its static
 * library only, not in liburing.so's symbol map. 0 or -errno (a count that
 * some operations return is dropped).
 */
int uring_register(struct io_uring *ring, unsigned op, const void *arg, unsigned n);

/* Restricts the disabled ring to ops (on registered files) and reg_ops, then enables it; 0 or -errno. */
int uring_lock(struct io_uring *ring, const uint8_t *ops, unsigned nops, const uint8_t *reg_ops, unsigned nreg);

#endif
