/*
 * A domain member's link thread and its slot threads (one per domain slot;
 * vmm/domain/member_link.c), from their first instruction to their end:
 * they wait on the agent's word (a slot thread: its slot's bell) and their
 * own, bring seats online and offline through the co-scheduler (which pins
 * and kicks vCPU threads), ring the agent's doorbell; the link thread also
 * looks whether the agent's socket closed, and says LEAVE on it at the
 * end. When the agent is gone it looks for a new one every second and
 * joins it: a new socket put on the old one's number, the new segments
 * checked and mapped, the new doorbell put on the old one's number (the
 * filters name those numbers). The slot threads share the link's filter:
 * one kind per thread role would drop only the rejoin rows from theirs.
 */
#include <fcntl.h>
#include <sys/socket.h>

#include "vmm/sandbox/seccomp_table.h"

static const struct seccomp_row rows[] = {
	SC_ALLOW("futex_waitv", "waits on the agent's a2m word (a slot thread: its slot's bell) and the link's own word at once"),
	SC_ALLOW("poll", "is the agent still there: its socket, without waiting", SC_EQ(1, 1), SC_EQ(2, 0)),
	SC_ALLOW("sendto", "JOIN and LEAVE: the agent's socket only", SC_EQ_RT(0, SRC_DOMAIN_SOCK)),
	SC_ALLOW("recvmsg", "a new agent's JOIN_OK and its fds: the agent's socket only", SC_EQ_RT(0, SRC_DOMAIN_SOCK)),
	SC_ALLOW("socket", "a new agent: only a unix seqpacket socket", SC_EQ(0, AF_UNIX),
	  SC_EQ(1, SOCK_SEQPACKET | SOCK_CLOEXEC), SC_EQ(2, 0)),
	SC_ALLOW("connect", "a new agent: to the domain's socket"),
	SC_ALLOW("setsockopt", "a new agent: send and receive timeouts, so a hung one cannot hang the link"),
	SC_ALLOW("getsockopt", "a new agent: who listens (root or this user, else not joined)", SC_EQ(1, SOL_SOCKET),
	  SC_EQ(2, SO_PEERCRED)),
	SC_ALLOW("dup3", "a new agent: its socket and doorbell onto the old numbers", SC_EQ(2, O_CLOEXEC)),
	SC_ALLOW("geteuid", "a new agent: where the domain's files are"),
	SC_ALLOW("fstat", "a new agent's segments: their sizes"),
	SC_ALLOW("newfstatat", "a new agent's segments: their sizes (glibc's fstat)"),
	SC_ALLOW("fcntl", "a new agent's segments: their seals", SC_EQ(1, F_GET_SEALS)),
	SC_ALLOW("close", "a new agent: fds taken over or refused"),
};

SECCOMP_TABLE(seccomp_rows_domain, "domain", rows);

static const struct seccomp_table *const tables[] = { &seccomp_rows_common, &seccomp_rows_domain };
const struct seccomp_kind seccomp_kind_domain = { "domain", tables, sizeof(tables) / sizeof(tables[0]) };
