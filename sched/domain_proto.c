/*
 * The domain's wire format (sched/domain_proto.h). One validator serves
 * both directions: the decoder runs it on what arrived, and every encoder
 * runs it on what it built, so nothing we send is something a peer would
 * refuse. Every message has exactly one encoding (unused fields and the
 * bytes after a string's NUL are zero), which makes "decode then encode
 * gives the same bytes" a property the fuzz target can hold us to.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <string.h>

#include "sched/domain_core.h"
#include "sched/domain_proto.h"
#include "sched/policy.h"

#define HDR sizeof(struct dom_msg_hdr)

/* No padding anywhere: a padding byte would be a second encoding. */
_Static_assert(sizeof(struct dom_msg_hdr) == 16, "hdr padded");
_Static_assert(sizeof(struct dom_msg_join) == HDR + 16 + 2 * DOM_NAME_MAX, "join padded");
_Static_assert(sizeof(struct dom_msg_join_ok) == HDR + 16 + 24 + 4 * DOM_SLOTS_MAX,
	       "join_ok padded");
_Static_assert(sizeof(struct dom_msg_status) == HDR + 8, "status padded");
_Static_assert(sizeof(struct dom_msg_status_reply) == HDR, "status_reply padded");
_Static_assert(sizeof(struct dom_msg_set) == HDR + 16 + DOM_NAME_MAX, "set padded");
_Static_assert(sizeof(struct dom_msg_ok) == HDR + 8, "ok padded");
_Static_assert(sizeof(struct dom_msg_error) == HDR + 8 + 160, "error padded");
_Static_assert(sizeof(union dom_msg) <= DOM_MSG_MAX, "DOM_MSG_MAX too small");

static const size_t fixed_len[DOM_MSG_TYPE_END] = {
	[DOM_MSG_JOIN] = sizeof(struct dom_msg_join),
	[DOM_MSG_JOIN_OK] = sizeof(struct dom_msg_join_ok),
	[DOM_MSG_LEAVE] = sizeof(struct dom_msg_hdr),
	[DOM_MSG_STATUS] = sizeof(struct dom_msg_status),
	[DOM_MSG_SET] = sizeof(struct dom_msg_set),
	[DOM_MSG_OK] = sizeof(struct dom_msg_ok),
	[DOM_MSG_ERROR] = sizeof(struct dom_msg_error),
};

static bool printable(char c)
{
	return c >= 0x20 && c <= 0x7e;
}

/* NUL within the field, printable before it, zero after it. */
static bool field_ok(const char *f, size_t n, bool may_be_empty)
{
	size_t i = 0;
	while (i < n && f[i])
		if (!printable(f[i++]))
			return false;
	if (i == n || (i == 0 && !may_be_empty))
		return false;
	for (; i < n; i++)
		if (f[i])
			return false;
	return true;
}

static bool policy_ok(const char *f)
{
	return field_ok(f, DOM_NAME_MAX, false) && sched_policy_find(f);
}

static bool all_zero(const char *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (f[i])
			return false;
	return true;
}

static bool weight_ok(uint32_t w)
{
	return w >= DOM_WEIGHT_MIN && w <= DOM_WEIGHT_MAX;
}

static const char *check_join(const struct dom_msg_join *m)
{
	if (m->nseats < 1 || m->nseats > DOM_VCPUS_MAX)
		return "join: nseats out of 1..DOM_VCPUS_MAX";
	if (m->nvcpus < m->nseats || m->nvcpus > DOM_VCPUS_MAX)
		return "join: nvcpus out of nseats..DOM_VCPUS_MAX";
	if (!weight_ok(m->weight))
		return "join: weight out of range";
	if (m->flags & ~DOM_JOIN_GANG)
		return "join: unknown flags";
	if (!policy_ok(m->policy))
		return "join: policy is not a known policy name";
	if (!field_ok(m->vm_name, DOM_NAME_MAX, true))
		return "join: vm_name not printable, NUL-terminated and zero-padded";
	return NULL;
}

static const char *check_join_ok(const struct dom_msg_join_ok *m)
{
	if (m->member > INT32_MAX) /* set names it as an int32_t */
		return "join_ok: member id out of range";
	if (m->nslots < 1 || m->nslots > DOM_SLOTS_MAX)
		return "join_ok: nslots out of 1..DOM_SLOTS_MAX";
	if (m->nseats < 1 || m->nseats > DOM_VCPUS_MAX)
		return "join_ok: nseats out of 1..DOM_VCPUS_MAX";
	if (m->reserved)
		return "join_ok: reserved is not 0";
	if (!m->slice_ns || !m->grace_ns)
		return "join_ok: zero slice or grace";
	for (uint32_t i = 0; i < DOM_SLOTS_MAX; i++) {
		int32_t c = m->slot_cpu[i];
		if (i < m->nslots ? c < -1 || c >= CPU_SETSIZE : c != -1)
			return "join_ok: slot_cpu out of range (or an unused one not -1)";
	}
	return NULL;
}

static const char *check_status(const struct dom_msg_status *m)
{
	if (m->flags & ~DOM_STATUS_JSON)
		return "status: unknown flags";
	if (m->reserved)
		return "status: reserved is not 0";
	return NULL;
}

static const char *check_set(const struct dom_msg_set *m)
{
	if (m->member < -1)
		return "set: member below -1";
	if (m->member == -1 ? m->pid <= 0 : m->pid != 0)
		return "set: pid must be > 0 with member -1, else 0";
	if (!m->what || (m->what & ~(DOM_SET_WEIGHT | DOM_SET_POLICY)))
		return "set: what is empty or has unknown bits";
	if ((m->what & DOM_SET_WEIGHT) ? !weight_ok(m->weight) : m->weight != 0)
		return "set: weight out of range (or set without DOM_SET_WEIGHT)";
	if ((m->what & DOM_SET_POLICY) ? !policy_ok(m->policy)
				       : !all_zero(m->policy, DOM_NAME_MAX))
		return "set: policy unknown (or set without DOM_SET_POLICY)";
	return NULL;
}

static const char *check_error(const struct dom_msg_error *m)
{
	if (m->code >= 0 || m->code < -4095)
		return "error: code is not a negative errno";
	if (m->reserved)
		return "error: reserved is not 0";
	if (!field_ok(m->why, sizeof(m->why), false))
		return "error: why empty, not printable, not NUL-terminated or not zero-padded";
	return NULL;
}

/* A fixed message of its type's exact length (an encoder's struct or the
 * decoder's aligned copy): its fields. */
static const char *check_fields(const void *m)
{
	switch (((const struct dom_msg_hdr *)m)->type) {
	case DOM_MSG_JOIN:
		return check_join(m);
	case DOM_MSG_JOIN_OK:
		return check_join_ok(m);
	case DOM_MSG_STATUS:
		return check_status(m);
	case DOM_MSG_SET:
		return check_set(m);
	case DOM_MSG_ERROR:
		return check_error(m);
	default: /* LEAVE, OK: nothing beyond the header */
		return NULL;
	}
}

/* Status text may span lines; no other control byte, so a client can print
 * what an agent sent without it driving the terminal. */
static const char *check_text(const char *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!printable(t[i]) && t[i] != '\n' && t[i] != '\t')
			return t[i] ? "status_reply: text has a control byte"
				    : "status_reply: NUL inside the text";
	return t[n] ? "status_reply: text not NUL-terminated" : NULL;
}

static void hdr_put(struct dom_msg_hdr *h, enum dom_msg_type type, size_t len)
{
	*h = (struct dom_msg_hdr){ .magic = DOM_PROTO_MAGIC, .version = DOM_PROTO_VERSION,
				   .type = (uint16_t)type, .len = (uint32_t)len };
}

/* Refuses what does not fit rather than cutting it (a cut policy or VM name
 * would name something else). */
static int name_put(char *dst, size_t n, const char *s)
{
	if (!s)
		return -EINVAL;
	size_t l = strnlen(s, n);
	if (l == n)
		return -ENAMETOOLONG;
	memset(dst, 0, n);
	memcpy(dst, s, l);
	return 0;
}

static int finish(const void *m)
{
	return check_fields(m) ? -EINVAL : (int)fixed_len[((const struct dom_msg_hdr *)m)->type];
}

int dom_proto_join(struct dom_msg_join *m, uint32_t nseats, uint32_t nvcpus,
		   uint32_t weight, uint32_t flags, const char *policy, const char *vm_name)
{
	memset(m, 0, sizeof(*m));
	hdr_put(&m->h, DOM_MSG_JOIN, sizeof(*m));
	m->nseats = nseats, m->nvcpus = nvcpus, m->weight = weight, m->flags = flags;
	int r = name_put(m->policy, sizeof(m->policy), policy);
	if (r == 0)
		r = name_put(m->vm_name, sizeof(m->vm_name), vm_name);
	return r < 0 ? r : finish(m);
}

int dom_proto_leave(struct dom_msg_hdr *m)
{
	hdr_put(m, DOM_MSG_LEAVE, sizeof(*m));
	return (int)sizeof(*m);
}

int dom_proto_status(struct dom_msg_status *m, uint32_t flags)
{
	memset(m, 0, sizeof(*m));
	hdr_put(&m->h, DOM_MSG_STATUS, sizeof(*m));
	m->flags = flags;
	return finish(m);
}

/* Fields `what` does not name are stored as 0, whatever was passed. */
int dom_proto_set(struct dom_msg_set *m, int32_t member, int32_t pid, uint32_t what,
		  uint32_t weight, const char *policy)
{
	memset(m, 0, sizeof(*m));
	hdr_put(&m->h, DOM_MSG_SET, sizeof(*m));
	m->member = member, m->what = what;
	m->pid = member == -1 ? pid : 0;
	m->weight = (what & DOM_SET_WEIGHT) ? weight : 0;
	if (what & DOM_SET_POLICY) {
		int r = name_put(m->policy, sizeof(m->policy), policy);
		if (r < 0)
			return r;
	}
	return finish(m);
}

int dom_proto_ok(struct dom_msg_ok *m, uint64_t at_ns)
{
	memset(m, 0, sizeof(*m));
	hdr_put(&m->h, DOM_MSG_OK, sizeof(*m));
	m->at_ns = at_ns;
	return (int)sizeof(*m);
}

int dom_proto_error(struct dom_msg_error *m, int code, const char *why)
{
	memset(m, 0, sizeof(*m));
	hdr_put(&m->h, DOM_MSG_ERROR, sizeof(*m));
	m->code = code;
	int r = name_put(m->why, sizeof(m->why), why);
	return r < 0 ? r : finish(m);
}

int dom_proto_join_ok(struct dom_msg_join_ok *m, uint32_t member, uint32_t nslots,
		      uint32_t nseats, uint64_t epoch, uint64_t slice_ns,
		      uint64_t grace_ns, const int *slot_cpu)
{
	if (!slot_cpu || nslots < 1 || nslots > DOM_SLOTS_MAX)
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	hdr_put(&m->h, DOM_MSG_JOIN_OK, sizeof(*m));
	m->member = member, m->nslots = nslots, m->nseats = nseats;
	m->epoch = epoch, m->slice_ns = slice_ns, m->grace_ns = grace_ns;
	for (uint32_t i = 0; i < DOM_SLOTS_MAX; i++)
		m->slot_cpu[i] = i < nslots ? slot_cpu[i] : -1;
	return finish(m);
}

int dom_proto_status_reply(void *buf, size_t cap, const char *text)
{
	if (!text)
		return -EINVAL;
	size_t n = strnlen(text, DOM_TEXT_MAX + 1);
	if (n > DOM_TEXT_MAX || cap < HDR + n + 1)
		return -EMSGSIZE;
	if (check_text(text, n))
		return -EINVAL;
	struct dom_msg_hdr h;
	hdr_put(&h, DOM_MSG_STATUS_REPLY, HDR + n + 1);
	memcpy(buf, &h, HDR);
	memcpy((char *)buf + HDR, text, n + 1);
	return (int)(HDR + n + 1);
}

static int refuse(const char **why, const char *reason)
{
	*why = reason;
	return -EPROTO;
}

int dom_proto_decode(const void *buf, size_t len, union dom_msg *out,
		     const char **text, const char **why)
{
	const char *unused;
	if (!why)
		why = &unused;
	*why = NULL;
	if (text)
		*text = NULL;
	if (!buf || !out) {
		*why = "no buffer";
		return -EINVAL;
	}
	struct dom_msg_hdr h;
	if (len < HDR)
		return refuse(why, "shorter than a header");
	memcpy(&h, buf, HDR); /* buf may be unaligned */
	if (h.magic != DOM_PROTO_MAGIC)
		return refuse(why, "bad magic");
	if (h.version != DOM_PROTO_VERSION)
		return refuse(why, "unsupported version");
	if (h.reserved)
		return refuse(why, "header reserved is not 0");
	if (h.type < DOM_MSG_JOIN || h.type >= DOM_MSG_TYPE_END)
		return refuse(why, "unknown message type");
	if (h.len != len)
		return refuse(why, "header len is not the packet's length");

	if (h.type == DOM_MSG_STATUS_REPLY) {
		if (len < HDR + 1 || len > HDR + DOM_TEXT_MAX + 1)
			return refuse(why, "status_reply: length out of range");
		const char *t = (const char *)buf + HDR, *bad = check_text(t, len - HDR - 1);
		if (bad)
			return refuse(why, bad);
		out->h = h;
		if (text)
			*text = t;
		return h.type;
	}

	if (len != fixed_len[h.type])
		return refuse(why, "wrong length for the message type");
	union dom_msg m;
	memset(&m, 0, sizeof(m));
	memcpy(&m, buf, len);
	const char *bad = check_fields(&m);
	if (bad)
		return refuse(why, bad);
	memcpy(out, &m, len);
	return h.type;
}
