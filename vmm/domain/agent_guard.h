/*
 * The agent's guard against its clients (agent_guard.c): who may change
 * what, and how much of the agent any one client may take.
 */
#ifndef VMM_DOMAIN_AGENT_GUARD_H
#define VMM_DOMAIN_AGENT_GUARD_H

#include "vmm/domain/agent_int.h"

/* Connections a uid other than root and the agent's own may hold at once,
 * joined or not, unless `vmm domain start --uid-conns N` says otherwise. */
#define GUARD_UID_CONNS_DEFAULT 32

/* A new connection from uid: 0, or -EUSERS when that uid holds its bound. */
int agent_guard_accept(struct agent *a, uid_t uid);
/* JOIN on connection c asking for weight: 0, or -EPERM with why. */
int agent_guard_join(const struct agent *a, int c, uint32_t weight, char *why, size_t len);
/* SET on connection c of member m (-1: none such): 0, or -EPERM with why. */
int agent_guard_set(const struct agent *a, int c, int m, const struct dom_msg_set *s, char *why, size_t len);
/* After member m's doorbell (rings counted by its eventfd, rewrites the
 * req words that changed): NULL, or why it is to be ejected. */
const char *agent_guard_bell(struct agent *a, int m, uint64_t rings, uint64_t rewrites, uint64_t now);
/* NULL, or why member m is to be ejected for its words that fit nothing. */
const char *agent_guard_words(struct agent *a, int m);
/* When a connection opened then is closed unless it has joined. */
uint64_t agent_guard_join_by(uint64_t opened_ns);
/* Closes connections that did not join in time; the next such deadline. */
uint64_t agent_guard_tick(struct agent *a, uint64_t now);

#endif
