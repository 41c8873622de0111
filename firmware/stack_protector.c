/*
 * libfdt.a is built with -fstack-protector: its functions read the canary
 * from %fs:0x28 (the glibc TCB slot). entry.S points the FS base at fw_tls
 * on every vCPU. The canary is a constant: this catches bugs, it is not a
 * security boundary.
 */
#include <stdint.h>

#include "firmware/console.h"
#include "firmware/fw.h"
#include "firmware/hypercall.h"

#define FW_CANARY 0x2f8a5d3c6e1b9074ull

struct fw_tls {
	uint64_t reserved[5];
	uint64_t stack_guard; /* %fs:0x28 */
};

_Static_assert(__builtin_offsetof(struct fw_tls, stack_guard) == 0x28, "glibc TCB layout");

const struct fw_tls fw_tls __attribute__((aligned(64))) = { .stack_guard = FW_CANARY };
/* The non-TLS variant (-mstack-protector-guard=global), should one appear. */
const uint64_t __stack_chk_guard = FW_CANARY;

__attribute__((noreturn)) void __stack_chk_fail(void);
void __stack_chk_fail(void)
{
	fw_printf("firmware: stack smashing detected (caller %p)\n", __builtin_return_address(0));
	fw_exit(FW_EXIT_BUG);
}
