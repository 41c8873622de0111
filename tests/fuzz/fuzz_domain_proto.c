/* libFuzzer: the domain's wire format (sched/domain_proto.c) as an
 * untrusted peer writes it: the input is one packet. It is either refused
 * (-EPROTO, a reason, *out untouched) or accepted, and then every field is
 * in range, checked here again by rules written apart from the decoder's,
 * and the encoders give back exactly the input's bytes: one encoding per
 * message, so nothing the decoder lets through can mean two things. */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched/domain_core.h"
#include "sched/domain_proto.h"
#include "sched/policy.h"

#define HDR sizeof(struct dom_msg_hdr)

static void must(bool cond)
{
	if (!cond)
		abort();
}

/* NUL inside, printable ASCII before it, zeros after it. */
static bool name(const char *f, size_t n, bool empty_ok)
{
	const char *nul = memchr(f, 0, n);
	if (!nul || (nul == f && !empty_ok))
		return false;
	for (const char *p = f; p < nul; p++)
		if (*p < ' ' || *p > '~')
			return false;
	for (const char *p = nul; p < f + n; p++)
		if (*p)
			return false;
	return true;
}

static bool policy(const char *f)
{
	return name(f, DOM_NAME_MAX, false) && sched_policy_find(f) != NULL;
}

static bool weight(uint32_t w)
{
	return w >= DOM_WEIGHT_MIN && w <= DOM_WEIGHT_MAX;
}

/* Check the accepted message's fields and encode it again into re. */
static int reencode(const union dom_msg *m, const char *text, void *re, size_t cap)
{
	switch (m->h.type) {
	case DOM_MSG_JOIN: {
		const struct dom_msg_join *j = &m->join;
		must(j->nseats >= 1 && j->nseats <= j->nvcpus && j->nvcpus <= DOM_VCPUS_MAX);
		must(weight(j->weight) && (j->flags & ~DOM_JOIN_GANG) == 0 && policy(j->policy));
		must(name(j->vm_name, DOM_NAME_MAX, true));
		return dom_proto_join(re, j->nseats, j->nvcpus, j->weight, j->flags, j->policy, j->vm_name);
	}
	case DOM_MSG_JOIN_OK: {
		const struct dom_msg_join_ok *k = &m->join_ok;
		must(k->member <= INT32_MAX && k->reserved == 0);
		must(k->nslots >= 1 && k->nslots <= DOM_SLOTS_MAX);
		must(k->nseats >= 1 && k->nseats <= DOM_VCPUS_MAX);
		must(k->slice_ns > 0 && k->grace_ns > 0);
		int cpus[DOM_SLOTS_MAX];
		for (unsigned i = 0; i < DOM_SLOTS_MAX; i++) {
			cpus[i] = k->slot_cpu[i];
			must(i < k->nslots ? cpus[i] >= -1 && cpus[i] < CPU_SETSIZE : cpus[i] == -1);
		}
		return dom_proto_join_ok(re, k->member, k->nslots, k->nseats, k->epoch,
					 k->slice_ns, k->grace_ns, cpus);
	}
	case DOM_MSG_LEAVE:
		return dom_proto_leave(re);
	case DOM_MSG_STATUS:
		must((m->status.flags | DOM_STATUS_JSON) == DOM_STATUS_JSON);
		must(m->status.reserved == 0);
		return dom_proto_status(re, m->status.flags);
	case DOM_MSG_STATUS_REPLY: {
		size_t n = strlen(text);
		must(n <= DOM_TEXT_MAX && m->h.len == HDR + n + 1);
		for (size_t i = 0; i < n; i++)
			must((text[i] >= ' ' && text[i] <= '~') || text[i] == '\n' || text[i] == '\t');
		return dom_proto_status_reply(re, cap, text);
	}
	case DOM_MSG_SET: {
		const struct dom_msg_set *s = &m->set;
		bool w = s->what & DOM_SET_WEIGHT, p = s->what & DOM_SET_POLICY;
		must(s->member >= -1 && (s->member == -1 ? s->pid > 0 : s->pid == 0));
		must((w || p) && !(s->what & ~(DOM_SET_WEIGHT | DOM_SET_POLICY)));
		must(w ? weight(s->weight) : s->weight == 0);
		must(p ? policy(s->policy) : name(s->policy, DOM_NAME_MAX, true) && !s->policy[0]);
		return dom_proto_set(re, s->member, s->pid, s->what, s->weight,
				     p ? s->policy : NULL);
	}
	case DOM_MSG_OK:
		return dom_proto_ok(re, m->ok.at_ns);
	case DOM_MSG_ERROR:
		must(m->error.code < 0 && m->error.code >= -4095 && m->error.reserved == 0);
		must(name(m->error.why, sizeof(m->error.why), false));
		return dom_proto_error(re, m->error.code, m->error.why);
	}
	abort(); /* accepted an unknown type */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static union dom_msg out;
	const char *text = NULL, *why = NULL;
	memset(&out, 0xa5, sizeof(out));
	int r = dom_proto_decode(data, size, &out, &text, &why);
	if (r < 0) {
		must(r == -EPROTO && why && *why && !text);
		const unsigned char *o = (const unsigned char *)&out;
		for (size_t i = 0; i < sizeof(out); i++)
			must(o[i] == 0xa5);
		return 0;
	}
	must(r == out.h.type && !why && out.h.len == size && size >= HDR);
	must(out.h.magic == DOM_PROTO_MAGIC && out.h.version == DOM_PROTO_VERSION);
	must(out.h.reserved == 0);
	must((r == DOM_MSG_STATUS_REPLY) == (text != NULL));
	must(!text || text == (const char *)data + HDR);

	size_t cap = HDR + DOM_TEXT_MAX + 1;
	unsigned char *re = malloc(cap);
	if (!re)
		return 0;
	memset(re, 0x5a, cap); /* an encoder that leaves a byte unwritten shows */
	int n = reencode(&out, text, re, cap);
	must(n > 0 && (size_t)n == size && !memcmp(re, data, size));
	free(re);
	return 0;
}
