/*
 * The domain's wire format (sched/domain_proto.h): every type round-trips,
 * and each field, one step either side of its bounds, is refused with
 * -EPROTO and a reason. Every decode reads from a heap copy of exactly the
 * packet's length (odd address included), so the sanitized build catches a
 * read past len, and a refused decode must leave *out as it was.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sched/domain_core.h"
#include "sched/domain_proto.h"
#include "sched/policy.h"
#include "tests/unit/check.h"

#define HDR sizeof(struct dom_msg_hdr)

static union dom_msg out;
static const char *text, *why;

/* Decode len bytes of p from an exact-size heap copy at an odd address,
 * kept until the next decode (text points into it). */
static int dec(const void *p, size_t len)
{
	static unsigned char *b;
	free(b);
	b = malloc(len + 1);
	memcpy(b + 1, p, len);
	memset(&out, 0x5a, sizeof(out));
	text = why = NULL;
	return dom_proto_decode(b + 1, len, &out, &text, &why);
}

static bool out_untouched(void)
{
	const unsigned char *o = (const unsigned char *)&out;
	for (size_t i = 0; i < sizeof(out); i++)
		if (o[i] != 0x5a)
			return false;
	return true;
}

/* Refused as a protocol error, with a reason, nothing written out. */
static bool refused(const void *p, size_t len)
{
	int r = dec(p, len);
	return r == -EPROTO && why && *why && out_untouched() && !text;
}

/* The message with n bytes at off replaced: accepted as its type, or refused. */
static void try_bytes(const void *msg, size_t len, size_t off, const void *val, size_t n,
		      bool ok, int line)
{
	unsigned char b[DOM_MSG_MAX];
	memcpy(b, msg, len);
	memcpy(b + off, val, n);
	struct dom_msg_hdr h;
	memcpy(&h, msg, HDR);
	int r = dec(b, len);
	bool good = ok ? r == h.type && !why && !memcmp(&out, b, len)
		       : r == -EPROTO && why && *why && out_untouched();
	if (!good)
		fprintf(stderr, "  (try at line %d: r=%d why=%s)\n", line, r, why ? why : "-");
	CHECK(good);
}

static void try32(const void *msg, size_t len, size_t off, uint32_t v, bool ok, int line)
{
	try_bytes(msg, len, off, &v, 4, ok, line);
}

static void try64(const void *msg, size_t len, size_t off, uint64_t v, bool ok, int line)
{
	try_bytes(msg, len, off, &v, 8, ok, line);
}

#define OFF(m, f) offsetof(__typeof__(m), f)
#define T32(m, f, v, ok) try32(&(m), sizeof(m), OFF(m, f), (uint32_t)(v), ok, __LINE__)
#define T64(m, f, v, ok) try64(&(m), sizeof(m), OFF(m, f), (uint64_t)(v), ok, __LINE__)
/* A string field set to s (n bytes, the rest of the field zero). */
#define TSTR(m, f, s, n, ok)                                                       \
	do {                                                                       \
		char f_[sizeof((m).f)] = { 0 };                                    \
		memcpy(f_, s, n);                                                  \
		try_bytes(&(m), sizeof(m), OFF(m, f), f_, sizeof(f_), ok, __LINE__); \
	} while (0)

/* Every string field's shared rules, on field f of message m. */
#define STRING_RULES(m, f, may_be_empty)                                    \
	do {                                                                \
		char full_[sizeof((m).f)];                                  \
		memset(full_, 'a', sizeof(full_));                          \
		TSTR(m, f, full_, sizeof(full_), false); /* no NUL */       \
		TSTR(m, f, "", 0, may_be_empty);                            \
		TSTR(m, f, "a\x1f", 2, false);                              \
		TSTR(m, f, "a\x7f", 2, false);                              \
		TSTR(m, f, "a\x80", 2, false);                              \
		TSTR(m, f, "a\n", 2, false);                                \
		TSTR(m, f, "a\0b", 3, false); /* garbage after the NUL */  \
	} while (0)

static struct dom_msg_join join;
static struct dom_msg_join_ok jok;
static struct dom_msg_status st;
static struct dom_msg_set set;
static struct dom_msg_ok okm;
static struct dom_msg_error err;
static struct dom_msg_hdr leave;
static const int cpus[4] = { 0, 3, CPU_SETSIZE - 1, -1 };

static void build_all(void)
{
	CHECK_EQ(dom_proto_join(&join, 2, 4, 300, 0, "holder", "vm-1"), sizeof(join));
	CHECK_EQ(dom_proto_join_ok(&jok, 7, 4, 2, 0x1122334455667788ull, 10000000, 5000000, cpus),
		 sizeof(jok));
	CHECK_EQ(dom_proto_status(&st, DOM_STATUS_JSON), sizeof(st));
	CHECK_EQ(dom_proto_set(&set, 3, 0, DOM_SET_WEIGHT | DOM_SET_POLICY, 50, "gang"),
		 sizeof(set));
	CHECK_EQ(dom_proto_ok(&okm, UINT64_MAX), sizeof(okm));
	CHECK_EQ(dom_proto_error(&err, -EINVAL, "weight out of range"), sizeof(err));
	CHECK_EQ(dom_proto_leave(&leave), sizeof(leave));
}

struct any {
	const void *p;
	size_t len;
	int type;
};

static struct any all[7];

static void list_all(void)
{
	build_all();
	struct any a[7] = {
		{ &join, sizeof(join), DOM_MSG_JOIN }, { &jok, sizeof(jok), DOM_MSG_JOIN_OK },
		{ &leave, sizeof(leave), DOM_MSG_LEAVE }, { &st, sizeof(st), DOM_MSG_STATUS },
		{ &set, sizeof(set), DOM_MSG_SET }, { &okm, sizeof(okm), DOM_MSG_OK },
		{ &err, sizeof(err), DOM_MSG_ERROR },
	};
	memcpy(all, a, sizeof(a));
}

static void test_round_trip(void)
{
	list_all();
	for (int i = 0; i < 7; i++) {
		CHECK_EQ(dec(all[i].p, all[i].len), all[i].type);
		CHECK(!why && !text);
		CHECK(!memcmp(&out, all[i].p, all[i].len));
		struct dom_msg_hdr h;
		memcpy(&h, all[i].p, HDR);
		CHECK_EQ(h.magic, DOM_PROTO_MAGIC);
		CHECK_EQ(h.version, DOM_PROTO_VERSION);
		CHECK_EQ(h.len, all[i].len);
		CHECK_EQ(h.reserved, 0);
	}
	/* the fields as given, and decoded back */
	CHECK(dec(&join, sizeof(join)) == DOM_MSG_JOIN && out.join.nseats == 2 &&
	      out.join.nvcpus == 4 && out.join.weight == 300 && out.join.flags == 0 &&
	      !strcmp(out.join.policy, "holder") && !strcmp(out.join.vm_name, "vm-1"));
	CHECK(dec(&jok, sizeof(jok)) == DOM_MSG_JOIN_OK && out.join_ok.member == 7 &&
	      out.join_ok.nslots == 4 && out.join_ok.nseats == 2 &&
	      out.join_ok.epoch == 0x1122334455667788ull && out.join_ok.slice_ns == 10000000 &&
	      out.join_ok.grace_ns == 5000000);
	for (int s = 0; s < DOM_SLOTS_MAX; s++)
		CHECK_EQ(out.join_ok.slot_cpu[s], s < 4 ? cpus[s] : -1);
	CHECK(dec(&st, sizeof(st)) == DOM_MSG_STATUS && out.status.flags == DOM_STATUS_JSON);
	CHECK(dec(&set, sizeof(set)) == DOM_MSG_SET && out.set.member == 3 && out.set.pid == 0 &&
	      out.set.what == 3 && out.set.weight == 50 && !strcmp(out.set.policy, "gang"));
	CHECK(dec(&okm, sizeof(okm)) == DOM_MSG_OK && out.ok.at_ns == UINT64_MAX);
	CHECK(dec(&err, sizeof(err)) == DOM_MSG_ERROR && out.error.code == -EINVAL &&
	      !strcmp(out.error.why, "weight out of range"));

	/* every policy by name, in join and in set */
	for (const char *const *n = sched_policy_names(); *n; n++) {
		struct dom_msg_join j;
		struct dom_msg_set s;
		CHECK_EQ(dom_proto_join(&j, 1, 1, 100, 0, *n, ""), sizeof(j));
		CHECK_EQ(dec(&j, sizeof(j)), DOM_MSG_JOIN);
		CHECK(!strcmp(out.join.policy, *n));
		CHECK_EQ(dom_proto_set(&s, -1, 42, DOM_SET_POLICY, 0, *n), sizeof(s));
		CHECK_EQ(dec(&s, sizeof(s)), DOM_MSG_SET);
		CHECK(!strcmp(out.set.policy, *n) && out.set.pid == 42);
	}
}

/* One encoding per message: fields `what` does not name are stored as 0. */
static void test_encoders_canonical(void)
{
	struct dom_msg_set a, b;
	CHECK_EQ(dom_proto_set(&a, 5, 0, DOM_SET_WEIGHT, 10, NULL), sizeof(a));
	CHECK_EQ(dom_proto_set(&b, 5, 99, DOM_SET_WEIGHT, 10, "holder"), sizeof(b));
	CHECK(!memcmp(&a, &b, sizeof(a)));
	CHECK_EQ(dom_proto_set(&b, 5, 0, DOM_SET_POLICY, 77, "pv"), sizeof(b));
	CHECK_EQ(b.weight, 0);
	struct dom_msg_join x, y;
	memset(&x, 0xff, sizeof(x));
	memset(&y, 0x00, sizeof(y));
	dom_proto_join(&x, 1, 2, 3, 0, "none", "v");
	dom_proto_join(&y, 1, 2, 3, 0, "none", "v");
	CHECK(!memcmp(&x, &y, sizeof(x)));
	int c[2] = { 1, 2 };
	struct dom_msg_join_ok p, q;
	memset(&p, 0xff, sizeof(p));
	memset(&q, 0x00, sizeof(q));
	dom_proto_join_ok(&p, 1, 2, 1, 3, 4, 5, c);
	dom_proto_join_ok(&q, 1, 2, 1, 3, 4, 5, c);
	CHECK(!memcmp(&p, &q, sizeof(p)));
}

static void test_encoders_refuse(void)
{
	char n32[DOM_NAME_MAX + 1], n160[161];
	memset(n32, 'x', DOM_NAME_MAX);
	n32[DOM_NAME_MAX] = 0;
	memset(n160, 'x', 160);
	n160[160] = 0;
	struct dom_msg_join j;
	struct dom_msg_set s;
	struct dom_msg_error e;
	CHECK_EQ(dom_proto_join(&j, 1, 1, 100, 0, n32, ""), -ENAMETOOLONG);
	CHECK_EQ(dom_proto_join(&j, 1, 1, 100, 0, "none", n32), -ENAMETOOLONG);
	CHECK_EQ(dom_proto_join(&j, 1, 1, 100, 0, "none", n32 + 1), sizeof(j)); /* 31 fit */
	CHECK_EQ(dom_proto_set(&s, 0, 0, DOM_SET_POLICY, 0, n32), -ENAMETOOLONG);
	CHECK_EQ(dom_proto_error(&e, -EIO, n160), -ENAMETOOLONG);
	CHECK_EQ(dom_proto_error(&e, -EIO, n160 + 1), sizeof(e)); /* 159 fit */

	/* what a decoder would refuse is never sent */
	CHECK_EQ(dom_proto_join(&j, 0, 1, 100, 0, "none", ""), -EINVAL);
	CHECK_EQ(dom_proto_join(&j, 2, 1, 100, 0, "none", ""), -EINVAL);
	CHECK_EQ(dom_proto_join(&j, 1, 1, 0, 0, "none", ""), -EINVAL);
	CHECK_EQ(dom_proto_join(&j, 1, 1, 100, 0, "nosuch", ""), -EINVAL);
	CHECK_EQ(dom_proto_join(&j, 1, 1, 100, 0, "none", "tab\there"), -EINVAL);
	CHECK_EQ(dom_proto_join(&j, 1, 1, 100, 2, "gang", ""), -EINVAL);
	CHECK_EQ(dom_proto_join(&j, 1, 1, 100, DOM_JOIN_GANG, "gang", ""), sizeof(j));
	CHECK_EQ(j.flags, DOM_JOIN_GANG);
	CHECK_EQ(dom_proto_join(&j, 1, 1, 100, 0, NULL, ""), -EINVAL);
	CHECK_EQ(dom_proto_status(&st, 2), -EINVAL);
	CHECK_EQ(dom_proto_set(&s, -1, 0, DOM_SET_WEIGHT, 1, NULL), -EINVAL);
	CHECK_EQ(dom_proto_set(&s, 0, 0, 0, 1, NULL), -EINVAL);
	CHECK_EQ(dom_proto_set(&s, 0, 0, DOM_SET_POLICY, 0, NULL), -EINVAL);
	CHECK_EQ(dom_proto_error(&e, 0, "x"), -EINVAL);
	CHECK_EQ(dom_proto_error(&e, -EIO, ""), -EINVAL);
	struct dom_msg_join_ok k;
	int bad[1] = { CPU_SETSIZE };
	CHECK_EQ(dom_proto_join_ok(&k, 0, 1, 1, 0, 1, 1, bad), -EINVAL);
	CHECK_EQ(dom_proto_join_ok(&k, 0, 0, 1, 0, 1, 1, cpus), -EINVAL);
	CHECK_EQ(dom_proto_join_ok(&k, 0, DOM_SLOTS_MAX + 1, 1, 0, 1, 1, cpus), -EINVAL);
	CHECK_EQ(dom_proto_join_ok(&k, 0, 1, 1, 0, 0, 1, cpus), -EINVAL);
	CHECK_EQ(dom_proto_join_ok(&k, 0, 1, 1, 0, 1, 1, NULL), -EINVAL);
}

static void test_header(void)
{
	list_all();
	for (int i = 0; i < 7; i++) {
		const void *m = all[i].p;
		size_t len = all[i].len;
		try32(m, len, offsetof(struct dom_msg_hdr, magic), DOM_PROTO_MAGIC ^ 1, false, __LINE__);
		try32(m, len, offsetof(struct dom_msg_hdr, magic), DOM_PROTO_MAGIC ^ 0x80000000u,
		      false, __LINE__);
		uint16_t v;
		for (v = 0; v < 3; v++)
			try_bytes(m, len, offsetof(struct dom_msg_hdr, version), &v, 2,
				  v == DOM_PROTO_VERSION, __LINE__);
		v = 0xffff;
		try_bytes(m, len, offsetof(struct dom_msg_hdr, version), &v, 2, false, __LINE__);
		uint16_t types[] = { 0, DOM_MSG_TYPE_END, 0xffff, 0x100 | (uint16_t)all[i].type };
		for (size_t t = 0; t < 4; t++)
			try_bytes(m, len, offsetof(struct dom_msg_hdr, type), &types[t], 2, false,
				  __LINE__);
		try32(m, len, offsetof(struct dom_msg_hdr, reserved), 1, false, __LINE__);
		try32(m, len, offsetof(struct dom_msg_hdr, reserved), 0x80000000u, false, __LINE__);
		/* the len field must be the packet's length */
		try32(m, len, offsetof(struct dom_msg_hdr, len), (uint32_t)len - 1, false, __LINE__);
		try32(m, len, offsetof(struct dom_msg_hdr, len), (uint32_t)len + 1, false, __LINE__);
		try32(m, len, offsetof(struct dom_msg_hdr, len), 0, false, __LINE__);
	}
	/* shorter than a header, whatever it holds */
	for (size_t n = 0; n < HDR; n++)
		CHECK(refused(&join, n));
	CHECK_EQ(dom_proto_decode(NULL, 16, &out, NULL, &why), -EINVAL);
	CHECK_EQ(dom_proto_decode(&join, sizeof(join), NULL, NULL, &why), -EINVAL);
	/* why and text may be NULL */
	CHECK_EQ(dom_proto_decode(&join, sizeof(join), &out, NULL, NULL), DOM_MSG_JOIN);
	CHECK_EQ(dom_proto_decode(&join, 3, &out, NULL, NULL), -EPROTO);
	/* a type's layout under another type's number */
	struct dom_msg_status as_ok = st;
	as_ok.h.type = DOM_MSG_OK;
	CHECK_EQ(dec(&as_ok, sizeof(as_ok)), DOM_MSG_OK); /* same length: fine */
	as_ok.h.type = DOM_MSG_ERROR;
	CHECK(refused(&as_ok, sizeof(as_ok)));
}

/* Every fixed type, cut short or extended by any amount, its len field agreeing. */
static void test_lengths(void)
{
	list_all();
	unsigned char b[DOM_MSG_MAX + 8];
	for (int i = 0; i < 7; i++) {
		for (size_t n = HDR; n <= all[i].len + 8; n++) {
			if (n == all[i].len)
				continue;
			memset(b, 0, sizeof(b));
			memcpy(b, all[i].p, n < all[i].len ? n : all[i].len);
			uint32_t l = (uint32_t)n;
			memcpy(b + offsetof(struct dom_msg_hdr, len), &l, 4);
			CHECK(refused(b, n));
		}
		/* and the len field alone disagreeing with the packet */
		CHECK(refused(all[i].p, all[i].len - 1));
		memset(b, 0, sizeof(b));
		memcpy(b, all[i].p, all[i].len);
		CHECK(refused(b, all[i].len + 1));
	}
}

static void test_join_fields(void)
{
	build_all();
	struct dom_msg_join m;
	CHECK_EQ(dom_proto_join(&m, 1, 1, 100, 0, "none", ""), sizeof(m));
	T32(m, nseats, 0, false);
	T32(m, nseats, 1, true);
	T32(m, nvcpus, DOM_VCPUS_MAX, true);
	T32(m, nvcpus, DOM_VCPUS_MAX + 1, false);
	T32(m, nvcpus, 0, false); /* below nseats */
	T32(m, nvcpus, UINT32_MAX, false);
	CHECK_EQ(dom_proto_join(&m, DOM_VCPUS_MAX, DOM_VCPUS_MAX, 100, 0, "none", ""), sizeof(m));
	T32(m, nseats, DOM_VCPUS_MAX + 1, false);
	T32(m, nseats, DOM_VCPUS_MAX - 1, true);
	T32(m, nseats, UINT32_MAX, false);
	CHECK_EQ(dom_proto_join(&m, 5, 5, 100, 0, "none", ""), sizeof(m));
	T32(m, nvcpus, 4, false);
	T32(m, nvcpus, 6, true);
	T32(m, weight, DOM_WEIGHT_MIN - 1, false);
	T32(m, weight, DOM_WEIGHT_MIN, true);
	T32(m, weight, DOM_WEIGHT_MAX, true);
	T32(m, weight, DOM_WEIGHT_MAX + 1, false);
	T32(m, flags, DOM_JOIN_GANG, true);
	T32(m, flags, DOM_JOIN_GANG << 1, false);
	T32(m, flags, DOM_JOIN_GANG | 4, false);
	T32(m, flags, 0x80000000u, false);
	TSTR(m, policy, "nosuch", 6, false);
	TSTR(m, policy, "holde", 5, false);
	TSTR(m, policy, "holder ", 7, false);
	TSTR(m, policy, "HOLDER", 6, false);
	TSTR(m, policy, "holder", 6, true);
	TSTR(m, policy, "holder\0x", 8, false);
	STRING_RULES(m, policy, false);
	char edge[DOM_NAME_MAX] = " ~";
	memset(edge + 2, 'z', DOM_NAME_MAX - 3);
	TSTR(m, vm_name, edge, DOM_NAME_MAX - 1, true); /* 31 printable, then the NUL */
	TSTR(m, vm_name, "x", 1, true);
	STRING_RULES(m, vm_name, true);
	char late[DOM_NAME_MAX] = "vm";
	late[DOM_NAME_MAX - 1] = 1; /* garbage in the field's very last byte */
	TSTR(m, vm_name, late, DOM_NAME_MAX, false);
}

static void test_join_ok_fields(void)
{
	build_all(); /* nslots 4: {0, 3, CPU_SETSIZE - 1, -1} */
	struct dom_msg_join_ok m = jok;
	T32(m, member, 0, true);
	T32(m, member, INT32_MAX, true);
	T32(m, member, (uint32_t)INT32_MAX + 1, false);
	T32(m, member, UINT32_MAX, false);
	T32(m, nslots, 0, false);
	T32(m, nslots, 1, false); /* entry 1 (3) is then unused, not -1 */
	T32(m, nslots, 3, true);  /* entry 3 is -1 either way */
	T32(m, nslots, DOM_SLOTS_MAX, true);
	T32(m, nslots, DOM_SLOTS_MAX + 1, false);
	T32(m, nslots, UINT32_MAX, false);
	T32(m, nseats, 0, false);
	T32(m, nseats, 1, true);
	T32(m, nseats, DOM_VCPUS_MAX, true);
	T32(m, nseats, DOM_VCPUS_MAX + 1, false);
	T32(m, reserved, 1, false);
	T64(m, epoch, 0, true);
	T64(m, epoch, UINT64_MAX, true);
	T64(m, slice_ns, 0, false);
	T64(m, slice_ns, 1, true);
	T64(m, grace_ns, 0, false);
	T64(m, grace_ns, UINT64_MAX, true);
	T32(m, slot_cpu[0], -2, false);
	T32(m, slot_cpu[0], -1, true);
	T32(m, slot_cpu[0], CPU_SETSIZE - 1, true);
	T32(m, slot_cpu[0], CPU_SETSIZE, false);
	T32(m, slot_cpu[0], INT32_MIN, false);
	T32(m, slot_cpu[3], 0, true); /* used */
	T32(m, slot_cpu[4], 0, false); /* unused: must be -1 */
	T32(m, slot_cpu[4], -2, false);
	T32(m, slot_cpu[DOM_SLOTS_MAX - 1], 0, false);
	int all_cpus[DOM_SLOTS_MAX];
	for (int i = 0; i < DOM_SLOTS_MAX; i++)
		all_cpus[i] = CPU_SETSIZE - 1 - i;
	CHECK_EQ(dom_proto_join_ok(&m, 0, DOM_SLOTS_MAX, 1, 0, 1, 1, all_cpus), sizeof(m));
	T32(m, slot_cpu[DOM_SLOTS_MAX - 1], CPU_SETSIZE, false);
	T32(m, slot_cpu[DOM_SLOTS_MAX - 1], -1, true);
	T32(m, nslots, DOM_SLOTS_MAX - 1, false);
}

static void test_status_fields(void)
{
	build_all();
	struct dom_msg_status m = st;
	T32(m, flags, 0, true);
	T32(m, flags, DOM_STATUS_JSON, true);
	T32(m, flags, DOM_STATUS_JSON << 1, false);
	T32(m, flags, 0x80000000u, false);
	T32(m, reserved, 1, false);
}

static void test_set_fields(void)
{
	struct dom_msg_set m;
	CHECK_EQ(dom_proto_set(&m, 0, 0, DOM_SET_WEIGHT, 100, NULL), sizeof(m));
	T32(m, member, -2, false);
	T32(m, member, INT32_MIN, false);
	T32(m, member, INT32_MAX, true);
	T32(m, member, -1, false); /* and pid 0 */
	T32(m, pid, 1, false);     /* with member 0 */
	T32(m, what, 0, false);
	T32(m, what, DOM_SET_POLICY, false); /* policy field empty, weight set */
	T32(m, what, 4, false);
	T32(m, what, DOM_SET_WEIGHT | 4, false);
	T32(m, what, 0x80000000u | DOM_SET_WEIGHT, false);
	T32(m, weight, DOM_WEIGHT_MIN - 1, false);
	T32(m, weight, DOM_WEIGHT_MIN, true);
	T32(m, weight, DOM_WEIGHT_MAX, true);
	T32(m, weight, DOM_WEIGHT_MAX + 1, false);
	TSTR(m, policy, "gang", 4, false); /* without DOM_SET_POLICY */
	TSTR(m, policy, "\0\0\0x", 4, false);

	CHECK_EQ(dom_proto_set(&m, -1, 1, DOM_SET_POLICY, 0, "pv"), sizeof(m));
	T32(m, pid, 0, false);
	T32(m, pid, -1, false);
	T32(m, pid, INT32_MIN, false);
	T32(m, pid, INT32_MAX, true);
	T32(m, weight, 1, false); /* without DOM_SET_WEIGHT */
	T32(m, member, 0, false); /* pid then must be 0 */
	TSTR(m, policy, "nosuch", 6, false);
	TSTR(m, policy, "random", 6, true);
	STRING_RULES(m, policy, false);
}

static void test_error_fields(void)
{
	build_all();
	struct dom_msg_error m = err;
	T32(m, code, 0, false);
	T32(m, code, 1, false);
	T32(m, code, -1, true);
	T32(m, code, -4095, true);
	T32(m, code, -4096, false);
	T32(m, code, INT32_MIN, false);
	T32(m, code, INT32_MAX, false);
	T32(m, reserved, 1, false);
	STRING_RULES(m, why, false);
	char w[160];
	memset(w, '~', 159);
	TSTR(m, why, w, 159, true);
	w[159] = '~';
	TSTR(m, why, w, 160, false);
}

/* OK and LEAVE carry nothing to range-check: every at_ns is fine. */
static void test_ok_leave(void)
{
	struct dom_msg_ok m;
	for (uint64_t t = 0; t < 64; t++) {
		CHECK_EQ(dom_proto_ok(&m, (1ull << t) - 1), sizeof(m));
		CHECK(dec(&m, sizeof(m)) == DOM_MSG_OK && out.ok.at_ns == (1ull << t) - 1);
	}
	struct dom_msg_hdr h;
	CHECK_EQ(dom_proto_leave(&h), HDR);
	CHECK_EQ(dec(&h, HDR), DOM_MSG_LEAVE);
	CHECK(!memcmp(&out.leave, &h, HDR));
}

static char big[HDR + DOM_TEXT_MAX + 16];

/* A raw STATUS_REPLY of n bytes after the header, with its len field. */
static size_t raw_reply(const void *t, size_t n)
{
	struct dom_msg_hdr h = { DOM_PROTO_MAGIC, DOM_PROTO_VERSION, DOM_MSG_STATUS_REPLY,
				 (uint32_t)(HDR + n), 0 };
	memcpy(big, &h, HDR);
	memcpy(big + HDR, t, n);
	return HDR + n;
}

static void test_status_reply(void)
{
	static char t[DOM_TEXT_MAX + 2];
	/* empty */
	CHECK_EQ(dom_proto_status_reply(big, sizeof(big), ""), HDR + 1);
	CHECK_EQ(dec(big, HDR + 1), DOM_MSG_STATUS_REPLY);
	CHECK(text && !strcmp(text, "") && out.h.len == HDR + 1 && !why);
	/* lines and JSON */
	const char *s = "{\"members\": [\n\t{\"id\": 0, \"weight\": 100}\n]}\n";
	int n = dom_proto_status_reply(big, sizeof(big), s);
	CHECK_EQ(n, HDR + strlen(s) + 1);
	CHECK_EQ(dec(big, (size_t)n), DOM_MSG_STATUS_REPLY);
	CHECK(text && !strcmp(text, s));
	/* text points into the buffer decoded */
	text = NULL;
	CHECK_EQ(dom_proto_decode(big, (size_t)n, &out, &text, &why), DOM_MSG_STATUS_REPLY);
	CHECK(text == big + HDR);
	/* exactly DOM_TEXT_MAX */
	memset(t, 'a', DOM_TEXT_MAX);
	t[DOM_TEXT_MAX] = 0;
	CHECK_EQ(dom_proto_status_reply(big, HDR + DOM_TEXT_MAX + 1, t), HDR + DOM_TEXT_MAX + 1);
	CHECK_EQ(dec(big, HDR + DOM_TEXT_MAX + 1), DOM_MSG_STATUS_REPLY);
	CHECK(text && strlen(text) == DOM_TEXT_MAX);
	/* one short of the room it needs */
	CHECK_EQ(dom_proto_status_reply(big, HDR + DOM_TEXT_MAX, t), -EMSGSIZE);
	CHECK_EQ(dom_proto_status_reply(big, HDR, ""), -EMSGSIZE);
	CHECK_EQ(dom_proto_status_reply(big, 0, ""), -EMSGSIZE);
	/* one over */
	t[DOM_TEXT_MAX] = 'a';
	t[DOM_TEXT_MAX + 1] = 0;
	CHECK_EQ(dom_proto_status_reply(big, sizeof(big), t), -EMSGSIZE);
	CHECK(refused(big, raw_reply(t, DOM_TEXT_MAX + 2)));
	CHECK_EQ(dom_proto_status_reply(big, sizeof(big), NULL), -EINVAL);
	CHECK_EQ(dom_proto_status_reply(big, sizeof(big), "bell\a"), -EINVAL);
	CHECK_EQ(dom_proto_status_reply(big, sizeof(big), "esc\x1b[2J"), -EINVAL);
	/* raw ones */
	CHECK(refused(big, raw_reply("", 0)));            /* no NUL at all */
	CHECK(refused(big, raw_reply("abc", 3)));         /* not NUL-terminated */
	CHECK(refused(big, raw_reply("a\0bc", 5)));       /* NUL inside */
	CHECK(refused(big, raw_reply("abc\0\0", 5)));     /* something after the NUL */
	CHECK(refused(big, raw_reply("\0\0", 2)));
	CHECK(refused(big, raw_reply("a\rb", 4)));
	CHECK(refused(big, raw_reply("a\x7f", 3)));
	CHECK(refused(big, raw_reply("a\xff", 3)));
	CHECK_EQ(dec(big, raw_reply("a\tb\n", 5)), DOM_MSG_STATUS_REPLY);
	CHECK_EQ(dec(big, raw_reply(" ~", 3)), DOM_MSG_STATUS_REPLY);
	/* the header's own rules hold here too */
	size_t l = raw_reply("ok", 3);
	CHECK(refused(big, l - 1));
	big[offsetof(struct dom_msg_hdr, reserved)] = 1;
	CHECK(refused(big, l));
	l = raw_reply("ok", 3);
	big[offsetof(struct dom_msg_hdr, version)] = 2;
	CHECK(refused(big, l));
}

int main(void)
{
	RUN(test_round_trip);
	RUN(test_encoders_canonical);
	RUN(test_encoders_refuse);
	RUN(test_header);
	RUN(test_lengths);
	RUN(test_join_fields);
	RUN(test_join_ok_fields);
	RUN(test_status_fields);
	RUN(test_set_fields);
	RUN(test_error_fields);
	RUN(test_ok_leave);
	RUN(test_status_reply);
	return check_summary();
}
