/*
 * The shared segments between the domain agent and one member
 * (sched/DOMAIN.md, "Shared memory"). Each member gets two memfds of its
 * own and never sees another member's:
 *
 *   req    written by the member, mapped read-only by the agent
 *   grant  written by the agent; the member's mapping is read-only and the
 *          memfd is sealed F_SEAL_FUTURE_WRITE after the agent mapped it,
 *          so no writable mapping, mprotect or write(2) can be made later
 *
 * Both are sealed against shrinking and growing and then F_SEAL_SEAL, so
 * neither side can make the other's loads fault. Every word that is read by
 * the other side sits on its own 64-byte line. Everything read from a
 * segment is untrusted by the reader: loaded once (atomic), decoded,
 * checked.
 *
 * Words (one per seat j, 0..nseats-1: a seat is one slot the member may hold;
 * the member's own co-scheduler decides which vCPU runs on it):
 *   grant[j] = gen << 11 | flags << 9 | (slot + 1); 0 = no slot
 *   req[j]   = gen << 2 | want: the gen of the last grant j gave back, and
 *              whether j wants a slot now
 *   probe_ack[j] (the req word's line, byte 4): the last probe a vCPU on
 *              seat j answered at a scheduling point (member_probe.c)
 */
#ifndef VMM_DOMAIN_SHM_H
#define VMM_DOMAIN_SHM_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/domain_proto.h"

/* "MSH2": probes answered per seat (was "MSHM": one probe_ack per member,
 * written by the link thread); a member of the other layout is refused at
 * its attach, not reclaimed at every probe */
#define DOM_SHM_MAGIC 0x3248534du
#define DOM_SHM_LINE 64

/* grant word */
#define DOM_GRANT_REVOKE 1u    /* give this slot back */
#define DOM_GRANT_RECLAIMED 2u /* taken back at the hard deadline */
#define DOM_GEN_MASK 0x1fffffu /* 21 bits; wraps, compared for equality */

static inline uint32_t dom_grant_word(uint32_t gen, unsigned flags, int slot)
{
	return (gen & DOM_GEN_MASK) << 11 | (flags & 3u) << 9 | (uint32_t)(slot + 1);
}
static inline int dom_grant_slot(uint32_t w) { return (int)(w & 0x1ffu) - 1; }
static inline unsigned dom_grant_flags(uint32_t w) { return (w >> 9) & 3u; }
static inline uint32_t dom_grant_gen(uint32_t w) { return w >> 11; }

/* req word */
enum dom_want { DOM_WANT_NONE = 0, DOM_WANT_SLOT = 1, DOM_WANT_DONE = 2 };
static inline uint32_t dom_req_word(uint32_t gen, enum dom_want want)
{
	return (gen & DOM_GEN_MASK) << 2 | (uint32_t)want;
}
static inline uint32_t dom_req_gen(uint32_t w) { return (w >> 2) & DOM_GEN_MASK; }
/* -1 for a value no member should write */
static inline int dom_req_want(uint32_t w) { return (w & 3u) == 3u ? -1 : (int)(w & 3u); }

/* grant segment, line 0: written once by the agent before it is shared */
struct dom_grant_hdr {
	uint32_t magic, nseats, nvcpus, reserved;
	uint64_t epoch;
};
/* grant segment, line 1: changes */
struct dom_grant_live {
	uint32_t a2m;        /* bumped (then FUTEX_WAKE) after a probe, a change
				of `waiting` that matters to this member, or of
				its policy or weight; the member's link thread
				waits on it (grant words have the bells) */
	uint32_t beat;       /* bumped at every agent tick: a hung agent stops it */
	uint32_t policy_gen; /* bumped when `vmm domain set --yield` changes ... */
	char policy[32];     /* ... this (NUL-terminated name) */
	uint32_t weight;     /* the member's weight in the books (changed live by
				`vmm domain set --weight`: the member's report says when) */
	uint32_t waiting;    /* 1: some seat of the domain waits for a slot (the
				member gives idle seats back at once); 0: it may
				keep them (a PV wait and its kick then need no
				round trip through the agent) */
	uint32_t probe;      /* bumped when a slice of this member's is renewed
				while another member waits: a vCPU on each probed
				seat copies it to that seat's probe_ack at a
				scheduling point within the grace, or the slot is
				reclaimed (a stopped or hung member's is) */
};
/* grant segment, lines 2..17: one bell word per domain slot, 16 to a line
 * (agent-written, like every grant line): bumped and FUTEX_WAKEd after a
 * change to any of this member's grant words that names that slot. The
 * member's thread for that slot, which may run on the slot's CPU, waits on
 * it: a grant wakes it on the CPU the releaser just left. */
#define DOM_SHM_BELL_LINES (DOM_SLOTS_MAX * 4 / DOM_SHM_LINE)
/* req segment, line 0: acknowledgements, display only. (Probes are
 * answered per seat: dom_shm_probe_ack.) */
struct dom_req_hdr {
	uint32_t policy_ack;  /* the policy_gen the member has put in force */
	uint32_t reserved;    /* 0 (was the member's one probe_ack) */
	uint64_t policy_at_ns; /* when (the member's CLOCK_MONOTONIC) */
};
/* req segment, after the seat words: per vCPU, for `vmm domain status` */
struct dom_req_vcpu {
	uint32_t state;      /* enum sched_vstate as the member says */
	uint32_t reserved;
	uint64_t ns_running; /* slot time of this vCPU so far */
};

struct dom_shm {
	int nseats, nvcpus;
	int req_fd, grant_fd;      /* -1 once closed (dom_shm_close_fds) */
	void *req, *grant;         /* the mappings */
	uint64_t req_size, grant_size;
	bool agent;                /* which side mapped it */
};

/* Sizes of both segments for a member (whole pages). */
void dom_shm_sizes(int nseats, int nvcpus, uint64_t *req_size, uint64_t *grant_size);

/*
 * Agent side: create both memfds, size and seal them, map req read-only and
 * grant read-write, write the grant header, then seal grant against future
 * writes and every segment with F_SEAL_SEAL. The fds are to be sent to the
 * member (SCM_RIGHTS) and then closed (dom_shm_close_fds). 0 or -errno.
 */
int dom_shm_create(struct dom_shm *s, int nseats, int nvcpus, uint64_t epoch);
/*
 * Member side: check both fds are memfds of exactly the expected sizes with
 * the expected seals (grant: FUTURE_WRITE; both: SHRINK, GROW, SEAL), the
 * grant header's magic, nseats, nvcpus and epoch; map req read-write and
 * grant read-only. Takes ownership of the fds (closes them after mapping,
 * on success and failure alike). 0 or -errno (-EPROTO: not what was agreed).
 */
int dom_shm_attach(struct dom_shm *s, int req_fd, int grant_fd, int nseats,
		   int nvcpus, uint64_t epoch);
void dom_shm_close_fds(struct dom_shm *s);
void dom_shm_destroy(struct dom_shm *s); /* unmaps, closes what is open */

/* Word addresses (each on its own line, bells excepted); NULL for a seat or vCPU out of range. */
uint32_t *dom_shm_grant(const struct dom_shm *s, int seat);
uint32_t *dom_shm_req(const struct dom_shm *s, int seat);
/* Seat's probe answer, on its req word's line; NULL out of range. The
 * agent decides on it only as far as dom_core_alive_seat accepts it (a
 * value never sent is refused and counted as a bad word). */
uint32_t *dom_shm_probe_ack(const struct dom_shm *s, int seat);
struct dom_grant_hdr *dom_shm_grant_hdr(const struct dom_shm *s);
struct dom_grant_live *dom_shm_live(const struct dom_shm *s);
/* Seat's lease: the slice end of the grant in force (agent's
 * CLOCK_MONOTONIC ns), on the grant word's line; NULL out of range. */
uint64_t *dom_shm_grant_until(const struct dom_shm *s, int seat);
/* Domain slot's bell; NULL out of 0..DOM_SLOTS_MAX-1. */
uint32_t *dom_shm_slot_bell(const struct dom_shm *s, int slot);
struct dom_req_hdr *dom_shm_req_hdr(const struct dom_shm *s);
struct dom_req_vcpu *dom_shm_req_vcpu(const struct dom_shm *s, int v);

/* Cross-process futex on a shared (not private) word. wait: 0, -EAGAIN
 * (value differed), -ETIMEDOUT, -EINTR. timeout_ns 0 = forever (else
 * relative). wake: how many it woke, or -errno. */
int dom_futex_wait(const uint32_t *word, uint32_t val, uint64_t timeout_ns);
int dom_futex_wake(uint32_t *word);

#endif
