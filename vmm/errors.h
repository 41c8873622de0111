/* Exit statuses of `vmm`, one per kind of outcome, so scripts can tell them apart. */
#ifndef VMM_ERRORS_H
#define VMM_ERRORS_H

enum vmm_exit_status {
	VMM_EXIT_OK = 0,           /* the guest finished and reported success */
	VMM_EXIT_GUEST_FAIL = 1,   /* the guest exited with a non-zero status */
	VMM_EXIT_USAGE = 2,        /* bad command line or input file */
	VMM_EXIT_GUEST_FAULT = 3,  /* triple fault, emulation failure, bad exit */
	VMM_EXIT_TIMEOUT = 4,      /* the guest ran past --timeout */
	VMM_EXIT_DEADLOCK = 5,     /* every vCPU waits and nothing can wake them */
	VMM_EXIT_HOST_ERROR = 6,   /* the host refused something (KVM, memory) */
	VMM_EXIT_SECCOMP = 7,      /* a thread made a system call its seccomp filter forbids */
};

#endif
