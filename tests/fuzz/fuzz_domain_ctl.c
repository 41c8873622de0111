/* libFuzzer: the agent's control socket as its clients use it: STATUS and
 * SET (vmm/domain/agent_status.c, agent_guard.c) on an agent with two real
 * members (segments, doorbells, a ring), sent by the owner, root, another
 * uid or a member's own process. The input is a list of requests, each
 * either raw bytes through the decoder (what a rogue sends) or a SET built
 * from fuzzed fields (so the guard and the books are reached). After each:
 * exactly one answer, well formed and of the kind asked for; another uid's
 * SET and a member raising its own weight are refused with the books
 * unchanged; an accepted SET is in the books; the core's invariants hold. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sched/domain_core.h"
#include "sched/domain_proto.h"
#include "sched/policy.h"
#include "vmm/domain/agent_guard.h"
#include "vmm/domain/agent_int.h"

#define NMEM 2
#define OTHER_UID 65534

static void must(bool cond)
{
	if (!cond)
		abort();
}

struct rig {
	struct agent a;
	struct dom_agent_opts o;
	int peer[NMEM + 1]; /* the far ends: members 0..1, then the client */
};

/* The agent's own in-memory start (agent_books_init), then what its loop
 * would hold: a confinement that does nothing and a ring; no socket. */
static void rig_init(struct rig *r)
{
	memset(r, 0, sizeof(*r));
	r->o = (struct dom_agent_opts){ .name = "fuzz", .nslots = 2, .slot_cpu = { 0, 1 }, .gid = -1, .max_members = 4 };
	char why[200];
	must(agent_books_init(&r->a, &r->o, why, sizeof(why)) == 0);
	static FILE *quiet; /* the agent's event lines, thousands an input second: not the fuzzer's log */
	if (!quiet)
		quiet = fopen("/dev/null", "w");
	r->a.log = quiet;
	must(dom_confine_init(&r->a.confine, DOM_CONFINE_SELF, "fuzz", NULL) == 0);
	must(io_uring_queue_init(64, &r->a.ring, 0) == 0);
}

/* Takes one packet from a far end, closing any fds it carried. */
static ssize_t take(int fd, void *buf, size_t cap)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b) };
	ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT);
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); n >= 0 && cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++)
				close(((int *)CMSG_DATA(cm))[i]);
	return n;
}

static int open_conn(struct rig *r, int c, int *peer)
{
	int sv[2];
	must(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	r->a.conn[c] = (struct agent_conn){ .fd = sv[0], .member = -1, .pid = getpid(), .uid = geteuid() };
	*peer = sv[1];
	return sv[0];
}

static void rig_members(struct rig *r, const uint8_t *w)
{
	for (int m = 0; m < NMEM; m++) {
		open_conn(r, m, &r->peer[m]);
		struct dom_msg_join j;
		must(dom_proto_join(&j, 2, 2, DOM_WEIGHT_MIN + w[m] % 200, 0, m ? "gang" : "pv", "vm") > 0);
		must(agent_join(&r->a, m, &j) == 0 && r->a.conn[m].member == m);
		char buf[DOM_MSG_MAX];
		must(take(r->peer[m], buf, sizeof(buf)) > 0);
	}
	open_conn(r, NMEM, &r->peer[NMEM]);
}

static void rig_fini(struct rig *r)
{
	struct agent *a = &r->a;
	for (int m = 0; m < a->max_members; m++)
		if (a->mem[m].conn >= 0)
			agent_leave(a, m, "done");
	for (int c = 0; c < a->max_conns; c++)
		if (a->conn[c].fd >= 0)
			close(a->conn[c].fd);
	for (int i = 0; i <= NMEM; i++)
		close(r->peer[i]);
	io_uring_queue_exit(&a->ring);
	dom_confine_fini(&a->confine);
	dom_core_destroy(a->core);
	free(a->mem);
	free(a->conn);
	free(a->dirty);
}

struct books {
	uint32_t weight[NMEM];
	char policy[NMEM][DOM_NAME_MAX];
};

static void books(const struct agent *a, struct books *b)
{
	for (int m = 0; m < NMEM; m++) {
		b->weight[m] = a->core->mem[m].weight;
		memcpy(b->policy[m], dom_shm_live((struct dom_shm *)&a->mem[m].shm)->policy, DOM_NAME_MAX);
	}
}

/* One request's bytes: raw (what a rogue writes) or a SET from fields. */
static size_t request(const uint8_t **d, size_t *n, void *out, size_t cap)
{
	if (*n < 2)
		return 0;
	uint8_t kind = (*d)[0], len = (*d)[1];
	*d += 2;
	*n -= 2;
	if (kind & 1) {
		size_t k = len < *n ? len : *n;
		k = k < cap ? k : cap;
		memcpy(out, *d, k);
		*d += k;
		*n -= k;
		return k;
	}
	if (kind & 2) {
		struct dom_msg_status st;
		int k = dom_proto_status(&st, len & 1 ? DOM_STATUS_JSON : 0);
		memcpy(out, &st, (size_t)k);
		return (size_t)k;
	}
	static const char *const pol[] = { "none", "pv", "gang", "directed", "random" };
	int32_t member = (int32_t)(len % 4) - 1;
	uint32_t what = 1 + (kind >> 2) % 3;
	uint32_t weight = DOM_WEIGHT_MIN + (uint32_t)len * 37 % DOM_WEIGHT_MAX;
	struct dom_msg_set s;
	int k = dom_proto_set(&s, member, member < 0 ? getpid() : 0, what, weight, pol[(kind >> 4) % 5]);
	if (k <= 0)
		return 0;
	memcpy(out, &s, (size_t)k);
	return (size_t)k;
}

/* The client's identity for this request: owner, root, another uid, or
 * the members' own process (both members are this process). */
static void who(struct agent *a, uint8_t sel)
{
	struct agent_conn *k = &a->conn[NMEM];
	k->uid = sel == 2 ? OTHER_UID : sel == 1 ? 0 : a->owner;
	k->pid = sel == 3 ? getpid() : 1;
}

static void check_answer(struct rig *r, int type, const union dom_msg *q, const struct books *before, uint8_t sel)
{
	struct agent *a = &r->a;
	static _Alignas(8) unsigned char buf[sizeof(struct dom_msg_hdr) + DOM_TEXT_MAX + 64];
	ssize_t n = take(r->peer[NMEM], buf, sizeof(buf));
	must(n > 0);
	must(take(r->peer[NMEM], buf + n, 16) < 0); /* one answer only */
	union dom_msg ans;
	const char *text = NULL, *why = NULL;
	int at = dom_proto_decode(buf, (size_t)n, &ans, &text, &why);
	struct books after;
	books(a, &after);
	if (type == DOM_MSG_STATUS) {
		must(at == DOM_MSG_STATUS_REPLY && text && *text);
		must(!memcmp(before, &after, sizeof(after)));
		return;
	}
	must(at == DOM_MSG_OK || at == DOM_MSG_ERROR);
	const struct dom_msg_set *s = &q->set;
	int m = s->member >= 0 ? s->member : (s->pid == getpid() ? 1 : -1); /* the last match wins */
	bool raise = m >= 0 && m < NMEM && (s->what & DOM_SET_WEIGHT) && s->weight > before->weight[m];
	if (sel == 2 || (sel == 3 && raise)) {
		must(at == DOM_MSG_ERROR && ans.error.code == -EPERM);
		must(!memcmp(before, &after, sizeof(after)));
	}
	if (at == DOM_MSG_OK && (s->what & DOM_SET_WEIGHT))
		must(m >= 0 && after.weight[m] == s->weight);
	if (at == DOM_MSG_OK && (s->what & DOM_SET_POLICY))
		must(m >= 0 && !strcmp(after.policy[m], s->policy));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	static struct rig r;
	rig_init(&r);
	rig_members(&r, data);
	data += 2;
	size -= 2;
	for (int i = 0; i < 32 && size >= 3; i++) {
		uint8_t sel = data[0] % 4;
		data++;
		size--;
		_Alignas(8) unsigned char pkt[DOM_MSG_MAX];
		size_t len = request(&data, &size, pkt, sizeof(pkt));
		union dom_msg q;
		const char *why = NULL;
		int type = dom_proto_decode(pkt, len, &q, NULL, &why);
		if (type != DOM_MSG_STATUS && type != DOM_MSG_SET)
			continue; /* on_conn refuses it before any of this */
		who(&r.a, sel);
		struct books before;
		books(&r.a, &before);
		if (type == DOM_MSG_STATUS)
			agent_status(&r.a, NMEM, q.status.flags);
		else
			agent_set(&r.a, NMEM, &q.set);
		check_answer(&r, type, &q, &before, sel);
		must(dom_core_check(r.a.core) == NULL);
	}
	rig_fini(&r);
	return 0;
}
