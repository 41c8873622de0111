/*
 * v2layout_guest: a guest written from hypercalls/ABI.md version 2 as it
 * first stood (commit 2b6112e), before PV_GUEST_SLICE and feature
 * negotiation: its shared page ends at steal_ns (offset 40) and every byte
 * from 48 on, and 36 to 39, is reserved, "0". It acknowledges nothing, so
 * ABI.md 4.3 promises it that page for the whole run, whatever the VMM's
 * options. (Issue 31 item 6: such a guest failed its reserved-bytes check
 * on -c 2 once the VMM wrote slice_tsc, slice_seq and contended for all.)
 *
 * Every vCPU, for WINDOW_MS of its TSC, takes a shared lock the way that
 * document's PV features allow (spin, then spin or yield_to the holder;
 * preempt_pending answered at safe points; kick a neighbour and wait with
 * a timeout), so slices start and end, vCPUs queue and wake. Between
 * rounds it checks every reserved byte of its own page; the first non-zero
 * one ends the run at once: a console line naming the vCPU, the offset and
 * the value, the keys bad_offset and bad_value, and exit status 1.
 *
 * Each vCPU reports rounds, scans (full reserved-byte checks), spins,
 * yields, kicks, waits, safe_yields; status 2: the device tree was unusable.
 * Runs at CPL 0 (its loops are bounded by time, not by count).
 */
#include "guest_hc.h"

typedef uint8_t u8;
typedef uint32_t u32;
typedef int32_t s32;
typedef uint64_t u64;
typedef int64_t s64;

#define MAX_CPUS 64
#define WINDOW_MS 200
#define SPIN_LIMIT 256  /* pauses before a spinner asks the VMM for help */
#define KICK_EVERY 8    /* rounds between a kick to the neighbour and a wait */
#define WAIT_NS 500000  /* a wait's timeout: no deadlock if no kick comes */

/* ABI.md 4.2 as version 2 first had it */
#define PV_WAIT_KICK (1u << 0)
#define PV_YIELD (1u << 1)
#define PV_SPIN_EXIT (1u << 2)
#define PV_SAFE_POINT (1u << 4)

/* ABI.md 7, the first version 2 table */
struct page {
	u32 abi_version;     /* 0 */
	u32 vcpu_id;         /* 4 */
	u32 preempted;       /* 8 */
	u32 preempt_pending; /* 12 */
	u64 spinning_since;  /* 16 */
	u32 in_critical;     /* 24 */
	s32 waiting_for;     /* 28 */
	u32 kick_pending;    /* 32 */
	u32 reserved0;       /* 36: 0 */
	u64 steal_ns;        /* 40 */
	u64 reserved[506];   /* 48 to 4095: 0 */
};
_Static_assert(sizeof(struct page) == 4096, "one page");

#define LD(x) __atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)

struct cfg {
	u32 ncpus, features, found;
	u64 shared, tsc_hz;
};

static u32 be32(const u8 *p)
{
	return ((u32)p[0] << 24) | ((u32)p[1] << 16) | ((u32)p[2] << 8) | p[3];
}

static int same(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

/* The /vmm properties this guest needs (ABI.md 3): a flat walk of the
 * structure block, one level of nesting under the root. */
static void read_tree(const u8 *fdt, struct cfg *c)
{
	const u8 *p = fdt + be32(fdt + 8), *end = p + be32(fdt + 36);
	const char *strings = (const char *)fdt + be32(fdt + 12);
	u32 depth = 0, in_vmm = 0;
	while (p + 4 <= end) {
		u32 tok = be32(p);
		p += 4;
		if (tok == 1) { /* FDT_BEGIN_NODE: a NUL-terminated name, padded */
			const char *name = (const char *)p;
			u32 n = 0;
			while (name[n])
				n++;
			if (++depth == 2)
				in_vmm = same(name, "vmm");
			p += (n + 4) & ~3u;
		} else if (tok == 2) { /* FDT_END_NODE */
			if (depth-- == 2)
				in_vmm = 0;
		} else if (tok == 3) { /* FDT_PROP: len, name offset, value */
			u32 len = be32(p);
			const char *name = strings + be32(p + 4);
			const u8 *v = p + 8;
			u64 v64 = len == 8 ? ((u64)be32(v) << 32) | be32(v + 4) : 0;
			if (in_vmm && depth == 2 && same(name, "num-cpus"))
				c->ncpus = be32(v), c->found |= 1;
			else if (in_vmm && depth == 2 && same(name, "pv-features"))
				c->features = be32(v), c->found |= 2;
			else if (in_vmm && depth == 2 && same(name, "shared-pages"))
				c->shared = v64, c->found |= 4;
			else if (in_vmm && depth == 2 && same(name, "tsc-hz"))
				c->tsc_hz = v64, c->found |= 8;
			p = v + ((len + 3) & ~3u);
		} else if (tok == 9) { /* FDT_END */
			break;
		}
	}
}

static u64 rdtsc(void)
{
	u32 lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((u64)hi << 32) | lo;
}

static void pause(void)
{
	__asm__ volatile("pause" ::: "memory");
}

/* ---- the check ---- */

static char *put_hex(char *o, u64 v)
{
	*o++ = '0';
	*o++ = 'x';
	int d = 60;
	while (d > 0 && !((v >> d) & 0xf))
		d -= 4;
	for (; d >= 0; d -= 4)
		*o++ = "0123456789abcdef"[(v >> d) & 0xf];
	return o;
}

static char *put_str(char *o, const char *s)
{
	while (*s)
		*o++ = *s++;
	return o;
}

static __attribute__((noreturn)) void bad_byte(u64 idx, u32 off, u32 val)
{
	static char line[160]; /* one failure ends the run: one buffer is enough */
	char *o = put_str(line, "v2layout_guest: vCPU ");
	o = put_hex(o, idx);
	o = put_str(o, ": reserved byte at offset ");
	o = put_hex(o, off);
	o = put_str(o, " is ");
	o = put_hex(o, val);
	o = put_str(o, ", not 0 (ABI.md 7, version 2 as first defined)\n");
	hc4(HC_CONSOLE_WRITE, (u64)line, (u64)(o - line), 0, 0);
	hc_report("bad_offset", off);
	hc_report("bad_value", val);
	hc_exit(1);
}

/* Every byte version 2 first reserved: 36-39, then 48-4095. */
static void check_reserved(const struct page *sp, u64 idx)
{
	const volatile u8 *b = (const volatile u8 *)sp;
	if (LD(sp->reserved0))
		for (u32 off = 36; off < 40; off++)
			if (b[off])
				bad_byte(idx, off, b[off]);
	for (u32 i = 0; i < sizeof(sp->reserved) / 8; i++) {
		if (!LD(sp->reserved[i]))
			continue;
		for (u32 off = 48 + 8 * i; off < 56 + 8 * i; off++)
			if (b[off])
				bad_byte(idx, off, b[off]);
	}
}

/* ---- the load: a test-and-set lock with the version 2 PV paths ---- */

static struct cfg cfg;
static struct page *pages;
static u32 lock_word;   /* 0 free, else holder + 1 */
static u32 wake_word;   /* waited on; never changes: only kicks and timeouts end a wait */
static u64 shared_ops;  /* bumped under the lock */
static u32 started;

struct me {
	u64 idx;
	struct page *sp;
	u64 rounds, scans, spins, yields, kicks, waits, safe_yields;
};

/* A safe point: outside any lock, answer a request to yield (ABI.md 7). */
static void safe_point(struct me *m)
{
	if (!(cfg.features & PV_SAFE_POINT) || !(cfg.features & PV_YIELD) || !LD(m->sp->preempt_pending))
		return;
	hc4(HC_YIELD_TO, ~0ull, 0, 0, 0);
	m->safe_yields++;
}

/* Spun past SPIN_LIMIT on a lock held by `holder`: let the VMM decide. */
static void ask_for_help(struct me *m, u32 holder)
{
	if (cfg.features & PV_SPIN_EXIT) {
		hc4(HC_SPIN, holder, 0, 0, 0);
		m->spins++;
	} else if (cfg.features & PV_YIELD) {
		hc4(HC_YIELD_TO, holder, 0, 0, 0);
		m->yields++;
	}
}

static void lock(struct me *m)
{
	safe_point(m);
	ST(m->sp->in_critical, 1);
	u32 n = 0, want = (u32)m->idx + 1;
	for (;;) {
		u32 seen = 0;
		if (__atomic_compare_exchange_n(&lock_word, &seen, want, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			break;
		if (!n)
			ST(m->sp->spinning_since, rdtsc() | 1);
		ST(m->sp->waiting_for, (s32)seen - 1);
		if (++n % SPIN_LIMIT == 0)
			ask_for_help(m, seen - 1);
		pause();
	}
	ST(m->sp->spinning_since, 0);
	ST(m->sp->waiting_for, -1);
}

static void unlock(struct me *m)
{
	__atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE);
	ST(m->sp->in_critical, 0);
	safe_point(m);
}

/* Kick the neighbour (its next wait returns at once, or wakes it), then
 * sleep until kicked or WAIT_NS: wakes, pending kicks and timeouts. */
static void kick_and_wait(struct me *m)
{
	if (!(cfg.features & PV_WAIT_KICK))
		return;
	hc4(HC_KICK, (m->idx + 1) % cfg.ncpus, 0, 0, 0);
	m->kicks++;
	hc4(HC_WAIT, (u64)&wake_word, LD(wake_word), WAIT_NS, 0);
	m->waits++;
}

static void run(struct me *m)
{
	u64 end = rdtsc() + cfg.tsc_hz / 1000 * WINDOW_MS;
	while (rdtsc() < end) {
		lock(m);
		shared_ops++;
		for (u32 i = 0; i < 64; i++)
			pause(); /* a critical section long enough to be preempted in */
		unlock(m);
		check_reserved(m->sp, m->idx);
		m->scans++;
		if (++m->rounds % KICK_EVERY == 0)
			kick_and_wait(m);
		if (m->rounds % (2 * KICK_EVERY) == 1 && (cfg.features & PV_YIELD)) {
			hc4(HC_YIELD_TO, (m->idx + 1) % cfg.ncpus, 0, 0, 0);
			m->yields++;
		}
	}
}

__attribute__((noreturn)) void guest_main(const u8 *fdt, u64 idx);

__attribute__((noreturn)) void guest_main(const u8 *fdt, u64 idx)
{
	if (idx == 0) {
		read_tree(fdt, &cfg);
		if (cfg.found != 15 || !cfg.ncpus || cfg.ncpus > MAX_CPUS || !cfg.tsc_hz)
			hc_exit(2);
		pages = (struct page *)cfg.shared;
		ST(started, 1);
	}
	while (!LD(started))
		pause();
	if (idx >= cfg.ncpus)
		hc_exit(2);
	struct me m = { .idx = idx, .sp = &pages[idx] };
	check_reserved(m.sp, idx);
	m.scans++;
	run(&m);
	/* everyone done before the last look: the others' ends are slice ends too */
	__atomic_fetch_add(&started, 1, __ATOMIC_SEQ_CST);
	while (LD(started) < cfg.ncpus + 1) {
		safe_point(&m);
		pause();
	}
	check_reserved(m.sp, idx);
	m.scans++;
	hc_report("rounds", m.rounds);
	hc_report("scans", m.scans);
	hc_report("spins", m.spins);
	hc_report("yields", m.yields);
	hc_report("kicks", m.kicks);
	hc_report("waits", m.waits);
	hc_report("safe_yields", m.safe_yields);
	if (idx == 0)
		hc_report("shared_ops", LD(shared_ops));
	hc_exit(0);
}
