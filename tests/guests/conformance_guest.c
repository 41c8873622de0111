/*
 * conformance_guest: checks, on every vCPU, what hypercalls/ABI.md §4 and §7
 * say a guest may rely on: each call's answers (results, error codes, their
 * order), the register contract, kick and wait semantics (pending kicks,
 * at most one, self-kicks, timeouts), feature negotiation (§4.3: nothing of
 * an offered PV_GUEST_SLICE before the ack, its fields at once after), and
 * the shared page (the values the VMM writes, what it clears and when, that
 * it leaves the guest's fields alone). Written from the document: its own device-tree walk and its own
 * shared-page layout (the §7 table), nothing from the VMM's headers.
 *
 * A failed check does not stop the guest: it counts it and goes on. Each
 * vCPU reports:
 *   checks       every check made (fixed ones plus those in loops)
 *   fixed        the fixed checks made: FIXED_CHECKS when all of them ran
 *   violations   failed checks; first_bad: the line of the first one
 *   bad_calls    calls it made that must answer an error (the report's
 *                hypercall_errors must be their sum: a timeout is no error)
 *   safe_yields  yield_to(-1) made because preempt_pending was set
 *   asked_again  of those, how many found a newer request on return
 *   steal_ns     the last steal_ns it read from its page
 * and exits 0; any status but 0 means the guest could not run its checks.
 *
 * Phases: private checks; a barrier; pairs (0,1), (2,3), ... check that a
 * partner's kick is pending in kick_pending, then ping-pong a token; a last
 * barrier. Every spin loop is a safe point (§7). Runs at CPL 0: short.
 */
#include "guest_hc.h"

typedef uint8_t u8;
typedef uint32_t u32;
typedef int32_t s32;
typedef uint64_t u64;
typedef int64_t s64;

#define ABI_VERSION 2
#define MAX_CPUS 64
#define ROUNDS 100
#define FIXED_CHECKS 55

/* §4 error numbers */
#define ESRCH 3
#define EFAULT 14
#define EINVAL 22
#define ENOSYS 38
#define ETIMEDOUT 110

#define HC_ACK_FEATURES 8 /* §4.3 */

/* §4.2 */
#define PV_WAIT_KICK (1u << 0)
#define PV_YIELD (1u << 1)
#define PV_SPIN_EXIT (1u << 2)
#define PV_SAFE_POINT (1u << 4)
#define PV_PREEMPTED (1u << 5)
#define PV_GUEST_SLICE (1u << 6)

/* §7, offsets as in the table */
struct page {
	u32 abi_version;     /* 0 */
	u32 vcpu_id;         /* 4 */
	u32 preempted;       /* 8 */
	u32 preempt_pending; /* 12 */
	u64 spinning_since;  /* 16 */
	u32 in_critical;     /* 24 */
	s32 waiting_for;     /* 28 */
	u32 kick_pending;    /* 32 */
	u32 reserved0;       /* 36 */
	u64 steal_ns;        /* 40 */
	u64 slice_tsc;       /* 48 */
	u32 slice_seq;       /* 56 */
	u32 contended;       /* 60 */
	u32 guest_slice;     /* 64: ours; this guest never opts in */
	u32 reserved1;       /* 68 */
	u8 reserved[4096 - 72];
};
_Static_assert(sizeof(struct page) == 4096, "one page");

#define LD(x) __atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)

/* ---- the device tree (§3) ---- */

struct dt {
	u32 ncpus, abi, features, found;
	u64 hc_base, shared;
	u32 rsv_addr_cells, rsv_size_cells;
};

static u32 be32(const u8 *p)
{
	return ((u32)p[0] << 24) | ((u32)p[1] << 16) | ((u32)p[2] << 8) | p[3];
}

static int streq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

static int prefix(const char *s, const char *p)
{
	while (*p && *s == *p)
		s++, p++;
	return !*p;
}

/* The properties of /vmm and /reserved-memory; cpu@N names counted in hex. */
static void dt_scan(const u8 *fdt, struct dt *d, u32 *cpu_names_ok)
{
	const u8 *p = fdt + be32(fdt + 8), *end = p + be32(fdt + 36);
	const char *strings = (const char *)fdt + be32(fdt + 12);
	u32 depth = 0, node = 0; /* 1: /vmm, 2: /reserved-memory, 3: /cpus */
	u32 ncpu_nodes = 0;
	while (p + 4 <= end) {
		u32 tok = be32(p);
		p += 4;
		if (tok == 1) { /* BEGIN_NODE */
			const char *name = (const char *)p;
			u32 n = 0;
			while (name[n])
				n++;
			depth++;
			if (depth == 2)
				node = streq(name, "vmm") ? 1 : streq(name, "reserved-memory") ? 2 :
				       streq(name, "cpus") ? 3 : 0;
			if (depth == 3 && node == 3 && prefix(name, "cpu@")) {
				/* the unit address, in hex, is the vCPU's index */
				u32 v = 0;
				for (const char *c = name + 4; *c; c++)
					v = v * 16 + (u32)(*c >= 'a' ? *c - 'a' + 10 : *c - '0');
				ncpu_nodes += v == ncpu_nodes;
			}
			p += (n + 4) & ~3u;
		} else if (tok == 2) { /* END_NODE */
			if (depth-- == 2)
				node = 0;
		} else if (tok == 3) { /* PROP */
			u32 len = be32(p);
			const char *name = strings + be32(p + 4);
			const u8 *v = p + 8;
			if (depth == 2 && node == 1) {
				if (streq(name, "num-cpus"))
					d->ncpus = be32(v), d->found |= 1;
				else if (streq(name, "abi-version"))
					d->abi = be32(v), d->found |= 2;
				else if (streq(name, "pv-features"))
					d->features = be32(v), d->found |= 4;
				else if (streq(name, "hypercall-base"))
					d->hc_base = ((u64)be32(v) << 32) | be32(v + 4), d->found |= 8;
				else if (streq(name, "shared-pages"))
					d->shared = ((u64)be32(v) << 32) | be32(v + 4), d->found |= 16;
			} else if (depth == 2 && node == 2) {
				if (streq(name, "#address-cells"))
					d->rsv_addr_cells = be32(v);
				else if (streq(name, "#size-cells"))
					d->rsv_size_cells = be32(v);
			}
			p = v + ((len + 3) & ~3u);
		} else if (tok == 9) { /* END */
			break;
		}
	}
	*cpu_names_ok = ncpu_nodes;
}

/* ---- checks ---- */

static struct page *pages;
static struct dt dt;

/* one per vCPU, in this vCPU's own stack frame through `me` */
struct me {
	u64 idx;
	struct page *sp;
	u64 checks, fixed, violations, first_bad, bad_calls, safe_yields, asked_again, last_steal;
	u32 acked; /* §4.3: what ack_features last answered */
	int in_loop;
};

static void check_at(struct me *m, int ok, int line)
{
	m->checks++;
	if (!m->in_loop)
		m->fixed++;
	if (!ok) {
		m->violations++;
		if (!m->first_bad)
			m->first_bad = (u64)line;
	}
}
#define CHECK(m, cond) check_at((m), (cond), __LINE__)

/* A call that must answer -err; counted for the report's hypercall_errors. */
#define CHECK_ERR(m, call, err)                                   \
	do {                                                      \
		(m)->bad_calls++;                                 \
		CHECK((m), (call) == -(s64)(err));                \
	} while (0)

/* What holds whenever this vCPU runs (§7): it is not preempted, steal_ns
 * never goes back. */
static void running_checks(struct me *m)
{
	int loop = m->in_loop;
	m->in_loop = 1;
	if (dt.features & PV_PREEMPTED)
		CHECK(m, LD(m->sp->preempted) == 0);
	u64 st = LD(m->sp->steal_ns);
	CHECK(m, st >= m->last_steal);
	m->last_steal = st;
	/* Once acknowledged, a running vCPU's slice has a number and contended
	 * is a flag; before, the three fields are the reserved bytes they were
	 * (§4.3). Our own field is ours (a guest that does not opt in keeps 0
	 * slice ends the old way, through preempt_pending). */
	if (m->acked & PV_GUEST_SLICE)
		CHECK(m, LD(m->sp->slice_seq) != 0 && LD(m->sp->contended) <= 1);
	else
		CHECK(m, LD(m->sp->slice_seq) == 0 && LD(m->sp->contended) == 0 && LD(m->sp->slice_tsc) == 0);
	CHECK(m, LD(m->sp->guest_slice) == 0 && LD(m->sp->reserved1) == 0);
	m->in_loop = loop;
}

/* A safe point (§7): yield if asked; the request answered is gone on
 * return (a newer one, with another number, may be there already). */
static void safe_point(struct me *m)
{
	u32 req = LD(m->sp->preempt_pending);
	if (!(dt.features & PV_SAFE_POINT) || !req || LD(m->sp->in_critical))
		return;
	int loop = m->in_loop;
	m->in_loop = 1;
	CHECK(m, hc4(HC_YIELD_TO, ~0ull, 0, 0, 0) == 0);
	u32 now = LD(m->sp->preempt_pending);
	CHECK(m, now != req);
	m->asked_again += now != 0;
	m->safe_yields++;
	m->in_loop = loop;
	running_checks(m);
}

static void pause(void)
{
	__asm__ volatile("pause" ::: "memory");
}

static u32 arrived[4];

static void barrier(struct me *m, int k)
{
	__atomic_fetch_add(&arrived[k], 1, __ATOMIC_SEQ_CST);
	while (LD(arrived[k]) < dt.ncpus) {
		safe_point(m);
		pause();
	}
}

/* The load's destination is the only register a hypercall changes (§4). */
static int registers_preserved(void)
{
	u64 di = 0x1111, si = 0x2222, dx = 0x3333, cx = 0x4444, r8 = 0x5555, r11 = 0x6666, bx = 0x7777;
	s64 r;
	__asm__ volatile("mov %[r8v], %%r8\n\tmov %[r11v], %%r11\n\t"
			 "movq (%[a]), %%rax\n\t"
			 "mov %%r8, %[r8v]\n\tmov %%r11, %[r11v]"
			 : "=a"(r), "+D"(di), "+S"(si), "+d"(dx), "+c"(cx), [r8v] "+m"(r8), [r11v] "+m"(r11),
			   "+b"(bx)
			 : [a] "r"(HC_BASE + 8 * HC_VERSION)
			 : "r8", "r11", "memory");
	return r == ABI_VERSION && di == 0x1111 && si == 0x2222 && dx == 0x3333 && cx == 0x4444 &&
	       r8 == 0x5555 && r11 == 0x6666 && bx == 0x7777;
}

static volatile u32 word = 5;   /* waited on; never changes */
static char line[] = "conformance_guest: checking ABI.md 4 and 7\n";

static void private_checks(struct me *m, u32 cpu_nodes)
{
	struct page *sp = m->sp;
	u64 n = dt.ncpus;

	/* §3 as far as §4 and §7 need it */
	CHECK(m, dt.found == 31 && dt.abi >= ABI_VERSION && dt.hc_base == HC_BASE);
	CHECK(m, cpu_nodes == n); /* cpu@0 ... cpu@(n-1), hex */
	CHECK(m, dt.rsv_addr_cells == 2 && dt.rsv_size_cells == 2);

	/* §7: what the VMM wrote before we ran, and the initial values */
	CHECK(m, LD(sp->abi_version) == ABI_VERSION);
	CHECK(m, LD(sp->vcpu_id) == m->idx);
	CHECK(m, LD(sp->spinning_since) == 0 && LD(sp->in_critical) == 0);
	CHECK(m, LD(sp->waiting_for) == -1);
	CHECK(m, LD(sp->reserved0) == 0);
	u32 nz = 0;
	for (u32 i = 0; i < sizeof(sp->reserved); i += 64)
		nz |= sp->reserved[i];
	CHECK(m, nz == 0);
	running_checks(m);

	/* §4: the simple calls */
	CHECK(m, hc4(HC_VERSION, 0, 0, 0, 0) == ABI_VERSION);
	CHECK(m, registers_preserved());
	CHECK(m, hc4(HC_CONSOLE_WRITE, (u64)line, sizeof(line) - 1, 0, 0) == (s64)sizeof(line) - 1);
	CHECK(m, hc4(HC_CONSOLE_WRITE, (u64)line, 0, 0, 0) == 0); /* length 0 */
	CHECK_ERR(m, hc4(HC_CONSOLE_WRITE, (u64)line, 4097, 0, 0), EINVAL);
	CHECK_ERR(m, hc4(HC_CONSOLE_WRITE, 1ull << 40, 8, 0, 0), EFAULT);
	CHECK_ERR(m, hc4(HC_CONSOLE_WRITE, 1ull << 40, 4097, 0, 0), EINVAL); /* length first */
	CHECK(m, hc4(HC_REPORT, (u64)"probe", 1, 0, 0) == 0);
	CHECK_ERR(m, hc4(HC_REPORT, (u64)"", 1, 0, 0), EINVAL);
	CHECK_ERR(m, hc4(HC_REPORT, (u64)"bad key", 1, 0, 0), EINVAL);
	CHECK_ERR(m, hc4(HC_REPORT, 1ull << 40, 1, 0, 0), EFAULT);
	CHECK_ERR(m, hc4(9, 0, 0, 0, 0), ENOSYS); /* the first unused number */
	CHECK_ERR(m, hc4(511, 0, 0, 0, 0), ENOSYS); /* the last number in the window */
	running_checks(m);

	/* §4.3: a bit not offered refuses the whole call; acks only add, and
	 * an acknowledged PV_GUEST_SLICE's fields are there when it returns */
	CHECK_ERR(m, hc4(HC_ACK_FEATURES, dt.features | 1ull << 31, 0, 0, 0), EINVAL);
	CHECK(m, hc4(HC_ACK_FEATURES, 0, 0, 0, 0) == 0);
	CHECK(m, hc4(HC_ACK_FEATURES, dt.features, 0, 0, 0) == dt.features);
	m->acked = (u32)hc4(HC_ACK_FEATURES, 0, 0, 0, 0);
	CHECK(m, m->acked == dt.features);
	CHECK(m, LD(sp->guest_slice) == 0); /* acknowledging is not opting in */
	running_checks(m);

	/* §4.1: wait and kick (bad arguments, the order of errors) */
	if (!(dt.features & PV_WAIT_KICK)) {
		CHECK_ERR(m, hc4(HC_WAIT, (u64)&word, 5, 0, 0), ENOSYS);
		CHECK_ERR(m, hc4(HC_KICK, m->idx, 0, 0, 0), ENOSYS);
		return; /* fewer fixed checks than FIXED_CHECKS: said in the report */
	}
	CHECK_ERR(m, hc4(HC_WAIT, (u64)&word + 2, 5, 0, 0), EINVAL);
	CHECK_ERR(m, hc4(HC_WAIT, (1ull << 40) + 2, 5, 0, 0), EINVAL); /* alignment first */
	CHECK_ERR(m, hc4(HC_WAIT, 1ull << 40, 5, 0, 0), EFAULT);
	CHECK_ERR(m, hc4(HC_KICK, n, 0, 0, 0), ESRCH);
	CHECK_ERR(m, hc4(HC_KICK, ~0ull, 0, 0, 0), ESRCH); /* no "any" for kick */
	CHECK_ERR(m, hc4(HC_KICK, 0xffffffffull, 0, 0, 0), ESRCH); /* 64-bit indexes */
	CHECK(m, hc4(HC_WAIT, (u64)&word, 6, 0, 0) == 1); /* the value differs */

	/* a self-kick stays pending, in kick_pending too, until a wait takes it */
	CHECK(m, LD(sp->kick_pending) == 0);
	CHECK(m, hc4(HC_KICK, m->idx, 0, 0, 0) == 0);
	CHECK(m, LD(sp->kick_pending) == 1);
	CHECK(m, hc4(HC_WAIT, (u64)&word, 6, 0, 0) == 1); /* differs: the kick stays */
	CHECK(m, LD(sp->kick_pending) == 1);
	CHECK(m, hc4(HC_WAIT, (u64)&word, 5, 0, 0) == 0); /* at once */
	CHECK(m, LD(sp->kick_pending) == 0);
	/* at most one pending kick: two kicks, one wait at once, then a timeout */
	CHECK(m, hc4(HC_KICK, m->idx, 0, 0, 0) == 0 && hc4(HC_KICK, m->idx, 0, 0, 0) == 0);
	CHECK(m, hc4(HC_WAIT, (u64)&word, 5, 0, 0) == 0);
	CHECK(m, hc4(HC_WAIT, (u64)&word, 5, 1000000, 0) == -ETIMEDOUT); /* not a bad call */
	running_checks(m);
	CHECK(m, LD(sp->kick_pending) == 0);
}

static void yield_checks(struct me *m)
{
	u64 n = dt.ncpus;
	if (dt.features & PV_YIELD) {
		CHECK_ERR(m, hc4(HC_YIELD_TO, n, 0, 0, 0), ESRCH);
		CHECK(m, hc4(HC_YIELD_TO, (m->idx + 1) % n, 0, 0, 0) == 0);
		running_checks(m);
	} else {
		CHECK_ERR(m, hc4(HC_YIELD_TO, 0, 0, 0, 0), ENOSYS);
	}
	if (dt.features & PV_SPIN_EXIT) {
		CHECK_ERR(m, hc4(HC_SPIN, n, 0, 0, 0), ESRCH);
		CHECK(m, hc4(HC_SPIN, ~0ull, 0, 0, 0) == 0);
		running_checks(m);
	} else {
		CHECK_ERR(m, hc4(HC_SPIN, 0, 0, 0, 0), ENOSYS);
	}
}

/* Pairs (2k, 2k+1): a partner's kick shows in kick_pending (§7), then a
 * token goes back and forth; every kick answers 0. */
static u32 ask[MAX_CPUS], kicked[MAX_CPUS], turn[MAX_CPUS / 2];

static void pair_checks(struct me *m)
{
	u64 me = m->idx, other = me ^ 1;
	if (other >= dt.ncpus || !(dt.features & PV_WAIT_KICK))
		return;
	struct page *sp = m->sp;
	if (!(me & 1)) {
		ST(ask[other], 1);
		while (!LD(kicked[me])) {
			safe_point(m);
			pause();
		}
		CHECK(m, LD(sp->kick_pending) == 1);
		CHECK(m, hc4(HC_WAIT, (u64)&word, 5, 0, 0) == 0); /* at once */
		CHECK(m, LD(sp->kick_pending) == 0);
	} else {
		while (!LD(ask[me])) {
			safe_point(m);
			pause();
		}
		CHECK(m, hc4(HC_KICK, other, 0, 0, 0) == 0);
		/* the partner spins, not in wait: the kick is pending, in its page */
		CHECK(m, LD(pages[other].kick_pending) == 1);
		CHECK(m, LD(sp->kick_pending) == 0);
		ST(kicked[other], 1);
	}
	/* ping-pong: waits on a word that never changes, so only kicks wake */
	u32 *t = &turn[me / 2];
	u64 bad = 0;
	m->in_loop = 1;
	for (u32 r = 0; r < ROUNDS; r++) {
		while (LD(*t) != (me & 1)) {
			s64 w = hc4(HC_WAIT, (u64)&word, 5, 0, 0);
			bad += w != 0;
			running_checks(m);
		}
		ST(*t, (u32)(other & 1));
		bad += hc4(HC_KICK, other, 0, 0, 0) != 0;
		safe_point(m);
	}
	m->in_loop = 0;
	CHECK(m, bad == 0);
}

static u32 finished;

__attribute__((noreturn)) void guest_main(const u8 *fdt, u64 idx);

__attribute__((noreturn)) void guest_main(const u8 *fdt, u64 idx)
{
	u32 cpu_nodes = 0;
	if (idx == 0) {
		dt_scan(fdt, &dt, &cpu_nodes);
		pages = (struct page *)dt.shared;
		ST(arrived[3], 1);
	} else {
		while (!LD(arrived[3]))
			pause();
		struct dt mine = { 0 };
		dt_scan(fdt, &mine, &cpu_nodes);
	}
	if (!pages || dt.ncpus > MAX_CPUS || idx >= dt.ncpus)
		hc_exit(2);
	struct me m = { .idx = idx, .sp = &pages[idx] };

	private_checks(&m, cpu_nodes);
	yield_checks(&m);
	barrier(&m, 0);
	pair_checks(&m);
	barrier(&m, 1);

	/* the VMM never wrote the guest's fields */
	CHECK(&m, LD(m.sp->spinning_since) == 0 && LD(m.sp->in_critical) == 0 && LD(m.sp->waiting_for) == -1);
	/* a kick to a vCPU that may have ended already answers 0 */
	__atomic_fetch_add(&finished, 1, __ATOMIC_SEQ_CST);
	while (LD(finished) < dt.ncpus) {
		safe_point(&m);
		pause();
	}
	if (dt.features & PV_WAIT_KICK)
		CHECK(&m, hc4(HC_KICK, (idx + 1) % dt.ncpus, 0, 0, 0) == 0);
	running_checks(&m);

	hc_report("fixed", m.fixed);
	hc_report("expected", FIXED_CHECKS);
	hc_report("checks", m.checks);
	hc_report("violations", m.violations);
	hc_report("first_bad", m.first_bad);
	hc_report("bad_calls", m.bad_calls);
	hc_report("safe_yields", m.safe_yields);
	hc_report("asked_again", m.asked_again);
	hc_report("steal_ns", m.last_steal);
	hc_exit(0);
}
