/* `vmm domain status` and `vmm domain set`: one request on the agent's
 * socket, one answer. */
#ifndef VMM_DOMAIN_CLIENT_H
#define VMM_DOMAIN_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Prints the agent's status text (or JSON) to out. 0 or -errno, why filled. */
int dom_client_status(const char *domain, int json, FILE *out, char *why, size_t len);
/* member >= 0 names it, else pid. what: DOM_SET_* bits. at_ns: when the
 * agent took it (its CLOCK_MONOTONIC). */
int dom_client_set(const char *domain, int member, int pid, unsigned what, uint32_t weight, const char *policy,
		   uint64_t *at_ns, char *why, size_t len);

#endif
