/*
 * The scheduling domain's wire format (sched/DOMAIN.md): the messages on
 * the agent's control socket (SOCK_SEQPACKET, one message per packet).
 * Pure: no sockets, no fds; encode into a buffer, decode and validate a
 * buffer. Every packet the agent receives comes from an untrusted process,
 * so dom_proto_decode checks the exact length for the type, the magic and
 * version, every field's range, and that every string is NUL-terminated,
 * printable and (for policies) a known name; anything else is refused with
 * a reason, and nothing of it is used.
 *
 * Hot paths never use these messages: after JOIN the member and the agent
 * talk through shared words (vmm/domain/shm.h).
 */
#ifndef VMM_SCHED_DOMAIN_PROTO_H
#define VMM_SCHED_DOMAIN_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define DOM_PROTO_MAGIC 0x444d4d56u /* "VMMD" little-endian */
#define DOM_PROTO_VERSION 1
#define DOM_NAME_MAX 32    /* domain, VM and policy names, NUL included */
#define DOM_MSG_MAX 4096   /* the largest fixed message */
#define DOM_TEXT_MAX 60000 /* STATUS_REPLY text, NUL excluded */
#define DOM_SLOTS_MAX 256

enum dom_msg_type {
	DOM_MSG_JOIN = 1,     /* member -> agent */
	DOM_MSG_JOIN_OK,      /* agent -> member, with 3 fds: req, grant, doorbell */
	DOM_MSG_LEAVE,        /* member -> agent (EOF means the same) */
	DOM_MSG_STATUS,       /* client -> agent */
	DOM_MSG_STATUS_REPLY, /* agent -> client: text, variable length */
	DOM_MSG_SET,          /* client -> agent: change a member live */
	DOM_MSG_OK,           /* agent -> client: SET took effect (in the books) */
	DOM_MSG_ERROR,        /* agent -> anyone: refused, with why */
	DOM_MSG_TYPE_END,
};

struct dom_msg_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t len; /* the whole packet, header included */
	uint32_t reserved; /* 0 */
};

struct dom_msg_join {
	struct dom_msg_hdr h;
	uint32_t nseats;  /* slots it may hold at once: 1..DOM_VCPUS_MAX */
	uint32_t nvcpus;  /* its VM's vCPUs (for status): nseats..DOM_VCPUS_MAX */
	uint32_t weight;  /* DOM_WEIGHT_MIN..DOM_WEIGHT_MAX */
	uint32_t flags;   /* DOM_JOIN_GANG or 0 */
	char policy[DOM_NAME_MAX]; /* a sched_policy_find name */
	char vm_name[DOM_NAME_MAX]; /* printable, may be "" */
};

/* Its seats are granted together across the domain (its --yield is gang). */
#define DOM_JOIN_GANG 1u

struct dom_msg_join_ok {
	struct dom_msg_hdr h;
	uint32_t member;   /* the id status and set use: 0..INT32_MAX */
	uint32_t nslots;   /* the domain's P */
	uint32_t nseats;   /* as asked */
	uint32_t reserved;
	uint64_t epoch;    /* the agent's start; changes when it restarts */
	uint64_t slice_ns, grace_ns; /* both > 0 */
	int32_t slot_cpu[DOM_SLOTS_MAX]; /* host CPU of each slot, [nslots] */
};

struct dom_msg_status {
	struct dom_msg_hdr h;
	uint32_t flags; /* DOM_STATUS_JSON */
	uint32_t reserved;
};
#define DOM_STATUS_JSON 1u

struct dom_msg_status_reply { /* variable length: len = header + text + NUL */
	struct dom_msg_hdr h;
	char text[]; /* NUL-terminated, at most DOM_TEXT_MAX bytes before it:
		      * printable ASCII, '\n' and '\t' */
};

struct dom_msg_set {
	struct dom_msg_hdr h;
	int32_t member;   /* a member id, or -1: pid names it */
	int32_t pid;      /* when member is -1 */
	uint32_t what;    /* DOM_SET_WEIGHT | DOM_SET_POLICY, at least one */
	uint32_t weight;  /* when DOM_SET_WEIGHT */
	char policy[DOM_NAME_MAX]; /* when DOM_SET_POLICY */
};
#define DOM_SET_WEIGHT 1u
#define DOM_SET_POLICY 2u

struct dom_msg_ok {
	struct dom_msg_hdr h;
	uint64_t at_ns;   /* the agent's CLOCK_MONOTONIC when it took effect */
};

struct dom_msg_error {
	struct dom_msg_hdr h;
	int32_t code;     /* a negative errno: -4095..-1 */
	uint32_t reserved;
	char why[160];    /* NUL-terminated, printable, not empty */
};

/* Any decoded message; which member is valid depends on hdr.type. */
union dom_msg {
	struct dom_msg_hdr h;
	struct dom_msg_join join;
	struct dom_msg_join_ok join_ok;
	struct dom_msg_status status;
	struct dom_msg_set set;
	struct dom_msg_ok ok;
	struct dom_msg_error error;
	struct dom_msg_hdr leave;
};

/*
 * Encoders fill a whole message (header included) and return its length.
 * Strings longer than the field are refused (-ENAMETOOLONG) rather than cut;
 * any other value dom_proto_decode would refuse is refused (-EINVAL), so
 * nothing sent is something a peer refuses. Unused bytes are zero: one
 * message has one encoding. dom_proto_set stores 0 for pid unless member is
 * -1 and for weight/policy unless `what` names them (policy may be NULL).
 */
int dom_proto_join(struct dom_msg_join *m, uint32_t nseats, uint32_t nvcpus,
		   uint32_t weight, uint32_t flags, const char *policy, const char *vm_name);
int dom_proto_leave(struct dom_msg_hdr *m);
int dom_proto_status(struct dom_msg_status *m, uint32_t flags);
int dom_proto_set(struct dom_msg_set *m, int32_t member, int32_t pid, uint32_t what,
		  uint32_t weight, const char *policy);
int dom_proto_ok(struct dom_msg_ok *m, uint64_t at_ns);
int dom_proto_error(struct dom_msg_error *m, int code, const char *why);
/* nslots 1..DOM_SLOTS_MAX; the unused slot_cpu entries are -1. */
int dom_proto_join_ok(struct dom_msg_join_ok *m, uint32_t member, uint32_t nslots,
		      uint32_t nseats, uint64_t epoch, uint64_t slice_ns,
		      uint64_t grace_ns, const int *slot_cpu);
/* Into buf of cap bytes: header + text + NUL; -EMSGSIZE if it does not fit
 * or the text is longer than DOM_TEXT_MAX. */
int dom_proto_status_reply(void *buf, size_t cap, const char *text);

/*
 * Decode and validate one received packet of len bytes. Returns its type
 * (> 0) with the fixed part copied into *out, or a negative errno with *why
 * set to a static reason (-EPROTO: bad magic, version, type, length or
 * field; -EINVAL: buf or out NULL); *out is written only on success. For
 * STATUS_REPLY, *text points into buf (validated: NUL at the end, nothing
 * after it) and only out->h is written; text may be NULL for other types.
 */
int dom_proto_decode(const void *buf, size_t len, union dom_msg *out,
		     const char **text, const char **why);

#endif
