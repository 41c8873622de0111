/*
 * Turns a thread kind's rows (seccomp_table.h) into libseccomp rules. The
 * rows are data; this is the only code that interprets them, so a row
 * means the same thing in the filter and in the test that checks it.
 */
#include "vmm/sandbox/seccomp_table.h"

#include <errno.h>
#include <stdlib.h>

int64_t seccomp_rt_value(const struct seccomp_rt *rt, enum seccomp_src src)
{
	switch (src) {
	case SRC_PID:
		return rt->pid;
	case SRC_KICK_SIGNAL:
		return rt->kick_signal;
	case SRC_VCPU_FD:
		return rt->vcpu_fd;
	case SRC_LOOP_URING:
		return rt->loop_uring;
	case SRC_VM_FD:
		return rt->vm_fd;
	case SRC_BLK_URING:
		return rt->blk_uring;
	case SRC_BLK_EVENT:
		return rt->blk_event;
	case SRC_CONSOLE:
		return rt->console;
	case SRC_DOMAIN_SOCK:
		return rt->domain_sock;
	case SRC_SCHED_TIMER:
		return rt->sched_timer;
	default:
		return -1;
	}
}

const struct seccomp_fd_list *seccomp_rt_list(const struct seccomp_rt *rt, enum seccomp_src src)
{
	switch (src) {
	case SRC_WRITE_FDS:
		return &rt->write;
	case SRC_READ_FDS:
		return &rt->read;
	case SRC_PREAD_FDS:
		return &rt->pread;
	default:
		return NULL;
	}
}

static struct scmp_arg_cmp to_cmp(const struct seccomp_cmp *c, uint64_t a, uint64_t b)
{
	/* what SCMP_CMP32 does to an int: no sign extension into the high half */
	if (c->w32)
		return (struct scmp_arg_cmp){ c->arg, c->op, (uint32_t)a, (uint32_t)b };
	return (struct scmp_arg_cmp){ c->arg, c->op, a, b };
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/*
 * The fds of a list, one rule each. A long list (all of a big guest's
 * perf or stats fds) is written as aligned blocks instead, which allow
 * exactly the same fds: fd & ~(size - 1) == base, with the high half of
 * the argument checked too, as an EQ rule does.
 */
static int add_list(scmp_filter_ctx ctx, int nr, struct scmp_arg_cmp *a, unsigned na, unsigned at,
		    const struct seccomp_fd_list *l)
{
	unsigned n = 0;
	for (unsigned i = 0; i < l->n; i++)
		n += l->fd[i] >= 0;
	if (n <= SECCOMP_FD_EXACT_RULES) {
		for (unsigned i = 0; i < l->n; i++) {
			if (l->fd[i] < 0)
				continue;
			a[at].op = SCMP_CMP_EQ;
			a[at].datum_a = (uint32_t)l->fd[i];
			a[at].datum_b = 0;
			int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, na, a);
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	uint64_t *v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	n = 0;
	for (unsigned i = 0; i < l->n; i++)
		if (l->fd[i] >= 0)
			v[n++] = (uint64_t)l->fd[i];
	qsort(v, n, sizeof(*v), cmp_u64);
	unsigned m = 0;
	for (unsigned i = 0; i < n; i++)
		if (m == 0 || v[i] != v[m - 1])
			v[m++] = v[i];
	/* first pass counts the blocks, so that a too scattered list adds nothing */
	int rc = 0;
	for (int pass = 0; pass < 2 && rc == 0; pass++) {
		unsigned rules = 0;
		for (unsigned i = 0; i < m && rc == 0; rules++) {
			uint64_t base = v[i], size = 1;
			unsigned run = 1; /* v[i..i+run) is base, base+1, ... */
			while (i + run < m && v[i + run] == base + run)
				run++;
			/* the largest aligned block at base inside the run */
			while ((base & (size * 2 - 1)) == 0 && size * 2 <= run)
				size *= 2;
			if (pass == 1) {
				a[at].op = size == 1 ? SCMP_CMP_EQ : SCMP_CMP_MASKED_EQ;
				a[at].datum_a = size == 1 ? base : ~(size - 1);
				a[at].datum_b = size == 1 ? 0 : base;
				rc = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, na, a);
			}
			i += (unsigned)size;
		}
		if (pass == 0 && rules > SECCOMP_MAX_FD_RULES)
			rc = -E2BIG;
	}
	free(v);
	return rc;
}

static int add_row(scmp_filter_ctx ctx, const struct seccomp_row *r, const struct seccomp_rt *rt)
{
	int nr = seccomp_syscall_resolve_name(r->syscall);
	if (nr == __NR_SCMP_ERROR || !r->reason || !r->reason[0])
		return -EINVAL;
	struct scmp_arg_cmp a[SECCOMP_MAX_CMP];
	const struct seccomp_fd_list *list = NULL;
	unsigned na = 0, list_at = 0;
	for (; na < SECCOMP_MAX_CMP && r->cmp[na].op; na++) {
		const struct seccomp_cmp *c = &r->cmp[na];
		if (c->arg > 5 || c->op >= _SCMP_CMP_MAX || c->src >= SRC_COUNT)
			return -EINVAL;
		if (c->src == SRC_CONST) {
			a[na] = to_cmp(c, c->a, c->b);
			continue;
		}
		const struct seccomp_fd_list *l = seccomp_rt_list(rt, c->src);
		if (l) {
			/* one list per row, compared for equality: it expands to one rule per fd */
			if (list || c->op != SCMP_CMP_EQ)
				return -EINVAL;
			list = l;
			list_at = na;
			a[na] = to_cmp(c, 0, 0);
			continue;
		}
		int64_t v = seccomp_rt_value(rt, c->src);
		if (v < 0)
			return 0; /* not in this run: the row is left out */
		a[na] = to_cmp(c, (uint64_t)v, c->b);
	}
	if (list)
		return add_list(ctx, nr, a, na, list_at, list);
	return seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, na, a);
}

/* Adds every row of kind to ctx (a filter from seccomp_init, not loaded).
 * 0, -EINVAL (a name that does not resolve, a malformed row), -E2BIG (an fd
 * list too scattered to be written exactly), or libseccomp's -errno. */
static int seccomp_build(scmp_filter_ctx ctx, const struct seccomp_kind *kind, const struct seccomp_rt *rt)
{
	for (unsigned t = 0; t < kind->ntables; t++)
		for (unsigned i = 0; i < kind->tables[t]->n; i++) {
			int rc = add_row(ctx, &kind->tables[t]->rows[i], rt);
			if (rc < 0)
				return rc;
		}
	return 0;
}

int seccomp_filter_new(const struct seccomp_kind *kind, const struct seccomp_rt *rt, scmp_filter_ctx *out)
{
	*out = NULL;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
	if (!ctx)
		return -ENOMEM;
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP);
	if (rc == 0)
		rc = seccomp_build(ctx, kind, rt);
	if (rc < 0) {
		seccomp_release(ctx);
		return rc;
	}
	*out = ctx;
	return 0;
}
