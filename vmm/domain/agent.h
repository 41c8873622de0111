/*
 * The domain agent (`vmm domain start`): one process per scheduling domain,
 * the only holder of the decision state (sched/domain_core.h) and the only
 * writer of grants. See sched/DOMAIN.md.
 */
#ifndef VMM_DOMAIN_AGENT_H
#define VMM_DOMAIN_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "sched/domain_proto.h"

struct dom_agent_opts {
	const char *name;
	int nslots;                    /* P */
	int slot_cpu[DOM_SLOTS_MAX];   /* host CPU of each slot */
	uint64_t slice_ns, grace_ns;   /* 0: the core's defaults */
	int gid;                       /* group given access; -1: the agent's own */
	int max_members;               /* 0: 256 */
	int confine;                   /* enum dom_confine_want (confine.h) */
	int uid_conns;                 /* 0: GUARD_UID_CONNS_DEFAULT */
};

/*
 * Creates the domain's directory and socket, prints one line on stdout once
 * members can join, and serves until SIGINT or SIGTERM (0). -errno with why
 * filled when it cannot start (e.g. -EEXIST: an agent of that name runs).
 */
int dom_agent_run(const struct dom_agent_opts *o, char *why, size_t len);

#endif
