/*
 * The seccomp tables (vmm/sandbox/filter_*.c) against the filters built
 * from them. Each kind's filter is built for a set of run-time contexts,
 * exported as BPF (never loaded: this process stays free) and run by a
 * small classic-BPF interpreter here; its verdict for every system call
 * number, with argument values taken from around every value the rows
 * name, must equal what this file's own reading of the rows says. So the
 * filter allows every row and nothing else. The rows themselves: a
 * non-empty one-line reason, a name libseccomp knows, no row twice, no
 * syscall both unconditional and argument-checked in one kind.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "vcpu/vcpu.h"
#include "vmm/sandbox/seccomp_table.h"

#define MAX_INSNS 4096 /* BPF_MAXINSNS: the kernel refuses a longer filter */
#define MAX_NR 1024    /* past every x86-64 system call number */

static const struct seccomp_kind *const kinds[] = { &seccomp_kind_vcpu, &seccomp_kind_loop, &seccomp_kind_domain };
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* ---- a classic BPF interpreter, for seccomp programs ---- */

struct prog {
	struct sock_filter *insn;
	unsigned n;
};

/* The action (SECCOMP_RET_ALLOW, _TRAP, ...), or 0xffffffff for a malformed program. */
static uint32_t bpf_run(const struct prog *p, const struct seccomp_data *d)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };
	for (unsigned pc = 0; pc < p->n; pc++) {
		const struct sock_filter *f = &p->insn[pc];
		uint32_t k = f->k, src = BPF_SRC(f->code) == BPF_X ? x : k;
		switch (BPF_CLASS(f->code)) {
		case BPF_LD:
			if (f->code == (BPF_LD | BPF_W | BPF_ABS) && k % 4 == 0 && k + 4 <= sizeof(*d))
				memcpy(&a, (const char *)d + k, 4);
			else if (f->code == (BPF_LD | BPF_IMM))
				a = k;
			else if (f->code == (BPF_LD | BPF_MEM) && k < BPF_MEMWORDS)
				a = mem[k];
			else
				return 0xffffffff;
			break;
		case BPF_LDX:
			if (f->code == (BPF_LDX | BPF_IMM))
				x = k;
			else if (f->code == (BPF_LDX | BPF_MEM) && k < BPF_MEMWORDS)
				x = mem[k];
			else
				return 0xffffffff;
			break;
		case BPF_ST:
		case BPF_STX:
			if (k >= BPF_MEMWORDS)
				return 0xffffffff;
			mem[k] = BPF_CLASS(f->code) == BPF_ST ? a : x;
			break;
		case BPF_ALU:
			switch (BPF_OP(f->code)) {
			case BPF_ADD: a += src; break;
			case BPF_SUB: a -= src; break;
			case BPF_AND: a &= src; break;
			case BPF_OR: a |= src; break;
			case BPF_XOR: a ^= src; break;
			case BPF_LSH: a = src < 32 ? a << src : 0; break;
			case BPF_RSH: a = src < 32 ? a >> src : 0; break;
			case BPF_NEG: a = -a; break;
			default: return 0xffffffff;
			}
			break;
		case BPF_JMP: {
			bool t;
			switch (BPF_OP(f->code)) {
			case BPF_JA: pc += k; continue;
			case BPF_JEQ: t = a == src; break;
			case BPF_JGT: t = a > src; break;
			case BPF_JGE: t = a >= src; break;
			case BPF_JSET: t = (a & src) != 0; break;
			default: return 0xffffffff;
			}
			pc += t ? f->jt : f->jf;
			break;
		}
		case BPF_RET:
			return (BPF_RVAL(f->code) == BPF_A ? a : k) & SECCOMP_RET_ACTION_FULL;
		case BPF_MISC:
			if (BPF_MISCOP(f->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		default:
			return 0xffffffff;
		}
	}
	return 0xffffffff; /* fell off the end */
}

/* kind's filter for rt as BPF, through a memfd; rc from seccomp_filter_new. */
static int export(const struct seccomp_kind *kind, const struct seccomp_rt *rt, struct prog *p)
{
	scmp_filter_ctx ctx;
	int rc = seccomp_filter_new(kind, rt, &ctx);
	if (rc < 0)
		return rc;
	int fd = memfd_create("bpf", 0);
	CHECK(fd >= 0);
	CHECK_EQ(seccomp_export_bpf(ctx, fd), 0);
	seccomp_release(ctx);
	off_t len = lseek(fd, 0, SEEK_END);
	p->n = (unsigned)(len / (off_t)sizeof(struct sock_filter));
	p->insn = malloc((size_t)len + 1);
	CHECK(p->insn && pread(fd, p->insn, (size_t)len, 0) == len);
	close(fd);
	return 0;
}

/* ---- the rows, read by the test itself ---- */

static bool in_list(const struct seccomp_fd_list *l, uint64_t v)
{
	for (unsigned i = 0; i < l->n; i++)
		if (l->fd[i] >= 0 && (uint64_t)(uint32_t)l->fd[i] == v)
			return true;
	return false;
}

static bool cmp_holds(const struct seccomp_cmp *c, const struct seccomp_rt *rt, const uint64_t *args, bool *absent)
{
	uint64_t arg = args[c->arg];
	if (c->src == SRC_CONST) {
		if (c->op == SCMP_CMP_MASKED_EQ)
			return (arg & c->a) == c->b;
		return c->op == SCMP_CMP_EQ && arg == c->a;
	}
	const struct seccomp_fd_list *l = seccomp_rt_list(rt, c->src);
	if (l)
		return c->op == SCMP_CMP_EQ && in_list(l, arg);
	int64_t v = seccomp_rt_value(rt, c->src);
	if (v < 0)
		*absent = true;
	return c->op == SCMP_CMP_EQ && arg == (c->w32 ? (uint32_t)v : (uint64_t)v);
}

static bool row_allows(const struct seccomp_row *r, const struct seccomp_rt *rt, int nr, const uint64_t *args)
{
	if (seccomp_syscall_resolve_name(r->syscall) != nr)
		return false;
	bool absent = false, all = true;
	for (unsigned i = 0; i < SECCOMP_MAX_CMP && r->cmp[i].op; i++)
		all &= cmp_holds(&r->cmp[i], rt, args, &absent);
	return all && !absent;
}

static bool table_allows(const struct seccomp_kind *k, const struct seccomp_rt *rt, int nr, const uint64_t *args)
{
	for (unsigned t = 0; t < k->ntables; t++)
		for (unsigned i = 0; i < k->tables[t]->n; i++)
			if (row_allows(&k->tables[t]->rows[i], rt, nr, args))
				return true;
	return false;
}

/* ---- the argument values worth trying ---- */

#define MAX_VALS 32768

struct vals {
	uint64_t v[MAX_VALS];
	unsigned n;
};

/* duplicates only cost time; a full set is a test bug, said once */
static void add(struct vals *s, uint64_t v)
{
	if (s->n < MAX_VALS)
		s->v[s->n++] = v;
	else
		CHECK(!"MAX_VALS large enough");
}

/* v, its neighbours, and v with the high half set (a 32-bit compare must not ignore it) */
static void add_around(struct vals *s, uint64_t v)
{
	add(s, v);
	add(s, v + 1);
	add(s, v - 1);
	add(s, v | (1ull << 32));
	add(s, v ^ 0xffffffff00000000ull);
}

static void values_for(const struct seccomp_kind *k, const struct seccomp_rt *rt, int nr, unsigned arg,
		       struct vals *s)
{
	s->n = 0;
	add(s, 0);
	add(s, 0xffffffffull);
	add(s, ~0ull);
	for (unsigned t = 0; t < k->ntables; t++)
		for (unsigned i = 0; i < k->tables[t]->n; i++) {
			const struct seccomp_row *r = &k->tables[t]->rows[i];
			if (seccomp_syscall_resolve_name(r->syscall) != nr)
				continue;
			for (unsigned j = 0; j < SECCOMP_MAX_CMP && r->cmp[j].op; j++) {
				const struct seccomp_cmp *c = &r->cmp[j];
				if (c->arg != arg)
					continue;
				const struct seccomp_fd_list *l = seccomp_rt_list(rt, c->src);
				if (c->src == SRC_CONST) {
					add_around(s, c->a);
					add_around(s, c->b);
					add(s, c->b | c->a);
					add(s, c->b | ~c->a);
				} else if (l) {
					for (unsigned e = 0; e < l->n; e++)
						add_around(s, (uint64_t)(int64_t)l->fd[e]);
				} else {
					add_around(s, (uint64_t)seccomp_rt_value(rt, c->src));
				}
			}
		}
}

/* ---- the diff ---- */

static unsigned mismatches;

static void verdict(const struct seccomp_kind *k, const struct seccomp_rt *rt, const struct prog *p,
		    struct seccomp_data *d, const char *label)
{
	uint64_t args[6]; /* __u64 is not uint64_t: copied, not cast */
	for (unsigned i = 0; i < 6; i++)
		args[i] = d->args[i];
	bool want = table_allows(k, rt, d->nr, args);
	uint32_t got = bpf_run(p, d);
	if (got == (want ? SECCOMP_RET_ALLOW : SECCOMP_RET_TRAP))
		return;
	if (++mismatches <= 10)
		fprintf(stderr, "FAIL %s/%s: nr %d args %llx %llx %llx: filter %#x, rows say %s\n", label, k->name,
			d->nr, (unsigned long long)d->args[0], (unsigned long long)d->args[1],
			(unsigned long long)d->args[2], got, want ? "allow" : "trap");
}

/* Every nr, every combination of the worth-trying values of args 0..2. */
static void diff_kind(const struct seccomp_kind *k, const struct seccomp_rt *rt, const char *label)
{
	struct prog p;
	if (export(k, rt, &p) < 0) {
		CHECK(!"filter built");
		return;
	}
	CHECK(p.n > 0 && p.n <= MAX_INSNS);
	static struct vals v0, v1, v2;
	unsigned before = mismatches;
	for (int nr = 0; nr < MAX_NR; nr++) {
		values_for(k, rt, nr, 0, &v0);
		values_for(k, rt, nr, 1, &v1);
		values_for(k, rt, nr, 2, &v2);
		struct seccomp_data d = { .nr = nr, .arch = AUDIT_ARCH_X86_64 };
		for (unsigned a = 0; a < v0.n; a++)
			for (unsigned b = 0; b < v1.n; b++)
				for (unsigned c = 0; c < v2.n; c++) {
					d.args[0] = v0.v[a];
					d.args[1] = v1.v[b];
					d.args[2] = v2.v[c];
					d.args[3] = d.args[4] = d.args[5] = 0x5a5a;
					verdict(k, rt, &p, &d, label);
				}
	}
	CHECK_EQ(mismatches - before, 0);

	/* another ABI's call is never allowed, even one that is by number */
	struct seccomp_data x32 = { .nr = 0x40000000 | 1, .arch = AUDIT_ARCH_X86_64, .args = { 1 } };
	struct seccomp_data i386 = { .nr = 4, .arch = AUDIT_ARCH_I386, .args = { 1 } };
	CHECK_EQ(bpf_run(&p, &x32), SECCOMP_RET_TRAP);
	CHECK_EQ(bpf_run(&p, &i386), SECCOMP_RET_TRAP);
	free(p.insn);
}

/* Every row that is in this run, with arguments that satisfy it: allowed. */
static void each_row_allowed(const struct seccomp_kind *k, const struct seccomp_rt *rt, unsigned *rows)
{
	struct prog p;
	if (export(k, rt, &p) < 0)
		return;
	for (unsigned t = 0; t < k->ntables; t++)
		for (unsigned i = 0; i < k->tables[t]->n; i++) {
			const struct seccomp_row *r = &k->tables[t]->rows[i];
			struct seccomp_data d = { .nr = seccomp_syscall_resolve_name(r->syscall),
						  .arch = AUDIT_ARCH_X86_64 };
			bool absent = false;
			for (unsigned j = 0; j < SECCOMP_MAX_CMP && r->cmp[j].op; j++) {
				const struct seccomp_cmp *c = &r->cmp[j];
				const struct seccomp_fd_list *l = seccomp_rt_list(rt, c->src);
				int64_t v = seccomp_rt_value(rt, c->src);
				for (unsigned e = 0; l && e < l->n; e++)
					v = l->fd[e] >= 0 ? l->fd[e] : v; /* any fd of the list: its last */
				if (c->src == SRC_CONST)
					d.args[c->arg] = c->op == SCMP_CMP_MASKED_EQ ? c->b : c->a;
				else if (v < 0)
					absent = true; /* not in this run, or an empty list */
				else
					d.args[c->arg] = (uint32_t)v;
			}
			if (absent)
				continue;
			(*rows)++;
			CHECK_EQ(bpf_run(&p, &d), SECCOMP_RET_ALLOW);
		}
	free(p.insn);
}

/* ---- the rows on their own ---- */

static bool same_cmps(const struct seccomp_row *a, const struct seccomp_row *b)
{
	for (unsigned i = 0; i < SECCOMP_MAX_CMP; i++) {
		const struct seccomp_cmp *x = &a->cmp[i], *y = &b->cmp[i];
		if (x->op != y->op || (x->op && (x->arg != y->arg || x->w32 != y->w32 || x->src != y->src ||
						 x->a != y->a || x->b != y->b)))
			return false;
	}
	return true;
}

static void check_rows(const struct seccomp_kind *k, unsigned *nrows)
{
	const struct seccomp_row *all[256];
	unsigned n = 0;
	for (unsigned t = 0; t < k->ntables; t++)
		for (unsigned i = 0; i < k->tables[t]->n && n < 256; i++)
			all[n++] = &k->tables[t]->rows[i];
	*nrows = n;
	for (unsigned i = 0; i < n; i++) {
		const struct seccomp_row *r = all[i];
		CHECK(r->reason && r->reason[0] && !strchr(r->reason, '\n'));
		CHECK(seccomp_syscall_resolve_name(r->syscall) != __NR_SCMP_ERROR);
		unsigned lists = 0, ncmp = 0;
		for (; ncmp < SECCOMP_MAX_CMP && r->cmp[ncmp].op; ncmp++) {
			const struct seccomp_cmp *c = &r->cmp[ncmp];
			lists += seccomp_rt_list(&(struct seccomp_rt){ 0 }, c->src) != NULL;
			CHECK(c->arg <= 5 && c->src < SRC_COUNT);
			CHECK(c->op == SCMP_CMP_EQ || c->op == SCMP_CMP_MASKED_EQ);
		}
		CHECK(lists <= 1);
		for (unsigned j = 0; j < i; j++) {
			if (strcmp(all[j]->syscall, r->syscall))
				continue;
			/* a row twice, or an argument check that an unconditional row makes moot */
			bool dup = same_cmps(all[j], r) || !all[j]->cmp[0].op || !r->cmp[0].op;
			if (dup)
				fprintf(stderr, "FAIL %s: %s twice (\"%s\", \"%s\")\n", k->name, r->syscall, all[j]->reason,
					r->reason);
			CHECK(!dup);
		}
	}
}

/* A malformed row is refused, never built into something else. */
static void bad_rows(void)
{
	static const struct seccomp_row typo[] = { SC_ALLOW("wirte", "a typo") };
	static const struct seccomp_row noreason[] = { SC_ALLOW("write", "") };
	static const struct seccomp_row twolists[] = { SC_ALLOW("read", "two lists", SC_EQ_RT(0, SRC_READ_FDS),
								SC_EQ_RT(1, SRC_PREAD_FDS)) };
	SECCOMP_TABLE(t1, "typo", typo);
	SECCOMP_TABLE(t2, "noreason", noreason);
	SECCOMP_TABLE(t3, "twolists", twolists);
	const struct seccomp_table *const tables[] = { &t1, &t2, &t3 };
	struct seccomp_rt rt = { .vcpu_fd = -1 };
	for (unsigned i = 0; i < 3; i++) {
		const struct seccomp_kind k = { "bad", &tables[i], 1 };
		scmp_filter_ctx ctx;
		CHECK_EQ(seccomp_filter_new(&k, &rt, &ctx), -EINVAL);
	}
}

/* ---- run-time contexts ---- */

static const int vcpu_write[] = { 5, 6 }, loop_write[] = { 5, 6, 9, 10 }, ple[] = { 20, 21, 22, 23 },
		 stats[] = { 30, 32, 34, 36 };

static struct seccomp_rt base_rt(void)
{
	return (struct seccomp_rt){ .pid = getpid(), .kick_signal = VCPU_KICK_SIGNAL, .vcpu_fd = 7, .loop_uring = 8,
				    .vm_fd = -1, .blk_uring = -1, .blk_event = -1, .console = -1, .domain_sock = 9,
				    .write = { loop_write, 4 }, .read = { ple, 4 }, .pread = { stats, 4 } };
}

/* Past SECCOMP_FD_EXACT_RULES fds: still exactly those fds (issue 15: it used to widen to fd >= lowest). */
static void long_fd_lists(void)
{
	static int contiguous[4096], scattered[300], holes[1000], too_many[SECCOMP_MAX_FD_RULES + 1];
	for (unsigned i = 0; i < 4096; i++)
		contiguous[i] = 1000 + (int)i;
	for (unsigned i = 0; i < 300; i++)
		scattered[i] = 7000 + 3 * (int)i;
	for (unsigned i = 0; i < 1000; i++)
		holes[i] = 9001 + (int)i + (i % 97 == 0 ? 5000 : 0); /* unaligned runs, a few strays, duplicates below */
	holes[10] = holes[11];
	for (unsigned i = 0; i <= SECCOMP_MAX_FD_RULES; i++)
		too_many[i] = 20000 + 2 * (int)i;

	struct seccomp_rt rt = base_rt();
	rt.read = (struct seccomp_fd_list){ contiguous, 4096 };
	rt.pread = (struct seccomp_fd_list){ scattered, 300 };
	diff_kind(&seccomp_kind_loop, &rt, "4096 contiguous read, 300 scattered pread fds");
	rt.read = (struct seccomp_fd_list){ holes, 1000 };
	diff_kind(&seccomp_kind_loop, &rt, "1000 read fds in runs with holes");

	/* the most a list may need: SECCOMP_MAX_FD_RULES single fds, twice, still fits the kernel's limit */
	rt.read = (struct seccomp_fd_list){ too_many, SECCOMP_MAX_FD_RULES };
	rt.pread = (struct seccomp_fd_list){ too_many, SECCOMP_MAX_FD_RULES };
	diff_kind(&seccomp_kind_loop, &rt, "two lists at the limit");

	/* one more, and it is an error, not a wider rule */
	rt.read = (struct seccomp_fd_list){ too_many, SECCOMP_MAX_FD_RULES + 1 };
	scmp_filter_ctx ctx;
	CHECK_EQ(seccomp_filter_new(&seccomp_kind_loop, &rt, &ctx), -E2BIG);
}

int main(void)
{
	unsigned rows[NKINDS];
	for (unsigned i = 0; i < NKINDS; i++)
		check_rows(kinds[i], &rows[i]);
	printf("rows: vcpu %u, loop %u, domain %u\n", rows[0], rows[1], rows[2]);
	bad_rows();

	struct seccomp_rt plain = base_rt(), linux_disk = base_rt(), linux_nodisk = base_rt(), bare = base_rt();
	linux_disk.vm_fd = linux_nodisk.vm_fd = 4;
	linux_disk.blk_uring = 11;
	linux_disk.blk_event = 12;
	linux_disk.console = linux_nodisk.console = STDIN_FILENO;
	bare.loop_uring = -1;
	bare.read.n = bare.pread.n = 0;
	const struct {
		const char *label;
		struct seccomp_rt *rt;
	} runs[] = { { "bundled guest", &plain },
		     { "Linux guest with a disk", &linux_disk },
		     { "Linux guest, no disk", &linux_nodisk },
		     { "no ring, no PLE, no stats", &bare } };
	for (unsigned r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		unsigned checked = 0, before = mismatches;
		for (unsigned i = 0; i < NKINDS; i++) {
			struct seccomp_rt rt = *runs[r].rt;
			if (kinds[i] == &seccomp_kind_vcpu || kinds[i] == &seccomp_kind_domain)
				rt.write = (struct seccomp_fd_list){ vcpu_write, 2 };
			diff_kind(kinds[i], &rt, runs[r].label);
			each_row_allowed(kinds[i], &rt, &checked);
		}
		printf("%s: %u rows present; %s\n", runs[r].label, checked,
		       mismatches == before ? "the filters allow them and nothing else" : "MISMATCHES (above)");
	}
	long_fd_lists();
	return check_summary();
}
