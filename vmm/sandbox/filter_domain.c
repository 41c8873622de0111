/*
 * A domain member's link thread (vmm/domain/member_link.c), from its first
 * instruction to its end: it waits on the agent's word and its own, brings
 * seats online and offline through the co-scheduler (which pins and kicks
 * vCPU threads), rings the agent's doorbell, looks whether the agent's
 * socket closed, and says LEAVE on it at the end.
 */
#include "vmm/sandbox/seccomp_table.h"

static const struct seccomp_row rows[] = {
	SC_ALLOW("futex_waitv", "waits on the agent's a2m word and the link's own word at once"),
	SC_ALLOW("poll", "is the agent still there: its socket, without waiting", SC_EQ(1, 1), SC_EQ(2, 0)),
	SC_ALLOW("sendto", "LEAVE to the agent when the VM ends: its socket only", SC_EQ_RT(0, SRC_DOMAIN_SOCK)),
};

SECCOMP_TABLE(seccomp_rows_domain, "domain", rows);

static const struct seccomp_table *const tables[] = { &seccomp_rows_common, &seccomp_rows_domain };
const struct seccomp_kind seccomp_kind_domain = { "domain", tables, sizeof(tables) / sizeof(tables[0]) };
