/*
 * From lists of values to cells. Besides what was asked for, every matrix
 * gets what its headline figure needs, so no comparison ever mixes runs
 * from different invocations: the --sched host baseline, the 1x reference
 * (one VM of M vCPUs on M slots) of every policy, and the native-threads
 * bound, and for a Linux workload QEMU -accel kvm where asked (policy qemu).
 * Dimensions that cannot matter are collapsed rather than measured twice:
 * the spin threshold for locks that never wait, the lock for workloads that
 * take none, both for a Linux guest (it has its own locks and thresholds),
 * and more VMs than one for a Linux guest (it runs alone).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/bench/matrix/matrix.h"
#include "vmm/cli/parse.h"


const char *const bench_kind_names[BENCH_KINDS] = { "vm", "native", "qemu" };

static bool lock_waits(const char *lock)
{
	return !strncmp(lock, "pv", 2);
}

static int find(const struct bench_matrix *m, const struct bench_cell *p)
{
	for (unsigned i = 0; i < m->n; i++) {
		const struct bench_cell *c = &m->cells[i];
		if (c->kind == p->kind && !strcmp(c->workload, p->workload) && !strcmp(c->lock, p->lock) &&
		    !strcmp(c->policy, p->policy) && c->spin_threshold == p->spin_threshold &&
		    c->slice_us == p->slice_us && c->defer_us == p->defer_us &&
		    c->guest_slice_off == p->guest_slice_off && bench_loop_same(&c->loop, &p->loop) &&
		    c->wake_slice_us == p->wake_slice_us && c->vms == p->vms && c->vcpus == p->vcpus &&
		    c->mode == p->mode)
			return (int)i;
	}
	return -1;
}

static int add(struct bench_matrix *m, const struct bench_cell *proto, bool auto_added)
{
	int i = find(m, proto);
	if (i >= 0) {
		/* Asked for explicitly after being added as a reference. */
		m->cells[i].auto_added &= auto_added;
		return i;
	}
	if (m->n == BENCH_MAX_CELLS)
		return -E2BIG;
	struct bench_cell *c = &m->cells[m->n];
	*c = *proto;
	c->id = m->n;
	c->auto_added = auto_added;
	c->ref = c->native_ref = c->one_vm_ref = c->process_ref = c->host_procs_ref = c->qemu_ref = -1;
	c->overcommit = (double)(c->vms * c->vcpus) / c->pcpus;
	return (int)m->n++;
}

/* The policies in matrix order: the host baseline always, and first. */
static unsigned policies(const struct bench_opts *o, const char **out)
{
	unsigned n = 0;
	out[n++] = BENCH_POLICY_HOST;
	for (unsigned i = 0; i < o->policies.n; i++)
		if (strcmp(o->policies.v[i], BENCH_POLICY_HOST))
			out[n++] = o->policies.v[i];
	return n;
}

/* Which rows a K-VM cell of this policy gets: --sched host has no domain,
 * a co-scheduler policy no host-scheduled processes. */
static bool mode_applies(const struct bench_opts *o, const char *policy, enum bench_mode mode)
{
	bool host = !strcmp(policy, BENCH_POLICY_HOST);
	if (mode == BENCH_MODE_DOMAIN && host)
		return false;
	if (mode == BENCH_MODE_HOST_PROCS && !host)
		return false;
	return o->modes[mode];
}

/* proto at K VMs: a cell per mode (one when K is 1), each with its 1x ref. */
static int add_modes(const struct bench_opts *o, struct bench_matrix *m, struct bench_cell *proto,
		     int ref)
{
	for (int mode = 0; mode < BENCH_MODES; mode++) {
		if (proto->vms == 1 ? mode != BENCH_MODE_PROCESS : !mode_applies(o, proto->policy, mode))
			continue;
		proto->mode = (enum bench_mode)mode;
		int i = add(m, proto, false);
		if (i < 0)
			return i;
		m->cells[i].ref = ref;
	}
	proto->mode = BENCH_MODE_PROCESS;
	return 0;
}

/*
 * K > 1 cells' comparisons: 1 VM of the same size on the same slots (added
 * when not asked for: the honest denominator of the sum), and the same K VMs
 * as one process and as host-scheduled processes.
 */
static int link_multi_vm(struct bench_matrix *m)
{
	unsigned n = m->n;
	for (unsigned i = 0; i < n; i++) {
		struct bench_cell *c = &m->cells[i];
		if (c->kind != BENCH_VM || c->vms < 2)
			continue;
		struct bench_cell p = *c;
		p.vms = 1;
		p.mode = BENCH_MODE_PROCESS;
		int one = add(m, &p, true);
		if (one < 0)
			return one;
		c = &m->cells[i];
		if (m->cells[one].ref < 0)
			m->cells[one].ref = c->ref;
		c->one_vm_ref = one;
		if (c->mode != BENCH_MODE_DOMAIN)
			continue;
		p = *c;
		p.mode = BENCH_MODE_PROCESS;
		c->process_ref = find(m, &p);
		p.policy = BENCH_POLICY_HOST;
		p.mode = BENCH_MODE_HOST_PROCS;
		p.slice_us = BENCH_SLICE_US_DEFAULT; /* the host takes neither */
		p.defer_us = BENCH_DEFER_US_DEFAULT;
		p.guest_slice_off = false;
		p.loop = (struct bench_loop){ BENCH_LOOP_AUTO, 0 };
		p.wake_slice_us = BENCH_WAKE_SLICE_US_DEFAULT;
		c->host_procs_ref = find(m, &p);
	}
	return 0;
}

static int add_vm_cells(const struct bench_opts *o, struct bench_matrix *m, char *err, size_t errlen)
{
	const char *pol[BENCH_MAX_LIST + 1];
	unsigned np = policies(o, pol);
	for (unsigned w = 0; w < o->workloads.n; w++) {
		const char *wl = o->workloads.v[w];
		bool lx = bench_linux_workload(wl);
		unsigned nlocks = strcmp(wl, "lockbench") ? 1 : o->locks.n;
		for (unsigned l = 0; l < nlocks; l++) {
			const char *lock = lx ? "-" : o->locks.v[l];
			unsigned nthr = lx ? 1 : lock_waits(lock) || strcmp(wl, "lockbench") ? o->thresholds.n : 1;
			for (unsigned t = 0; t < nthr; t++)
				for (unsigned p = 0; p < np; p++) {
					bool qemu = !strcmp(pol[p], BENCH_POLICY_QEMU);
					if (qemu && !lx)
						continue; /* QEMU boots Linux, not the bundled guest */
					/* --sched host (and QEMU) has neither a slice, a deferral bound,
					 * guest-timed nor wake-cut slices, and its loop runs with the
					 * vCPU threads under auto and none */
					bool host = !strcmp(pol[p], BENCH_POLICY_HOST) || qemu;
					unsigned ng = o->guest_slices.n, nd = o->defers.n, nl = o->loops.n;
					unsigned nw = o->wake_slices.n;
					for (unsigned sd = 0; sd < (host ? 1 : o->slices.n * nd * ng * nl * nw); sd++) {
					struct bench_cell proto = {
						.kind = qemu ? BENCH_QEMU : BENCH_VM, .workload = wl, .lock = lock,
						.policy = pol[p],
						.spin_threshold = (uint32_t)o->thresholds.v[t],
						.slice_us = host ? BENCH_SLICE_US_DEFAULT
								 : (uint32_t)o->slices.v[sd / (nd * ng * nl * nw)],
						.defer_us = host ? BENCH_DEFER_US_DEFAULT
								 : (uint32_t)o->defers.v[sd / (ng * nl * nw) % nd],
						.guest_slice_off = !host && o->guest_slices.off[sd / (nl * nw) % ng],
						.loop = host ? (struct bench_loop){ BENCH_LOOP_AUTO, 0 }
							     : o->loops.v[sd / nw % nl],
						.wake_slice_us = host ? BENCH_WAKE_SLICE_US_DEFAULT
								      : (uint32_t)o->wake_slices.v[sd % nw],
						.vms = 1, .vcpus = o->pcpus, .pcpus = o->pcpus,
					};
					/* gang keeps its own slice ends (sched/core_gslice.c): its
					 * cells with guest-timed slices off would run the same again */
					if (proto.guest_slice_off && !strcmp(pol[p], "gang") && ng > 1)
						continue;
					int ref = add(m, &proto, true);
					if (ref < 0)
						return parse_fail(err, errlen, "the matrix has more than %d cells", BENCH_MAX_CELLS);
					for (unsigned k = 0; k < o->vms.n; k++)
						for (unsigned x = 0; x < o->overcommit.n && !(lx && o->vms.v[k] != 1); x++) {
							double v = o->overcommit.v[x] * o->pcpus;
							proto.vms = (unsigned)o->vms.v[k];
							proto.vcpus = (unsigned)llround(v);
							if (fabs(v - proto.vcpus) > 1e-9 || proto.vcpus == 0)
								return parse_fail(err, errlen,
									    "--overcommit %g on %u pcpus is not a whole number of vCPUs",
									    o->overcommit.v[x], o->pcpus);
							if (add_modes(o, m, &proto, ref))
								return parse_fail(err, errlen, "the matrix has more than %d cells",
									    BENCH_MAX_CELLS);
						}
					m->cells[ref].ref = ref;
					}
				}
		}
	}
	return 0;
}

/* One native cell per lock and distinct thread count the VM cells use. */
static int add_native_cells(const struct bench_opts *o, struct bench_matrix *m)
{
	unsigned nvm = m->n;
	for (unsigned i = 0; i < nvm; i++) {
		struct bench_cell *c = &m->cells[i];
		if (strcmp(c->workload, "lockbench") || !bench_native_has_lock(c->lock))
			continue;
		/* The threshold of the first such cell: natives are a bound, not a sweep. */
		struct bench_cell proto = {
			.kind = BENCH_NATIVE, .workload = "lockbench", .lock = c->lock,
			.policy = BENCH_POLICY_NATIVE, .spin_threshold = (uint32_t)o->thresholds.v[0],
			.slice_us = BENCH_SLICE_US_DEFAULT, .defer_us = BENCH_DEFER_US_DEFAULT,
			.wake_slice_us = BENCH_WAKE_SLICE_US_DEFAULT,
			.vms = 1, .vcpus = c->vms * c->vcpus, .pcpus = c->pcpus,
		};
		proto.vcpus = o->pcpus;
		int bound = add(m, &proto, true);
		proto.vcpus = c->vms * c->vcpus;
		int n = add(m, &proto, true);
		if (bound < 0 || n < 0)
			return -E2BIG;
		m->cells[bound].ref = bound;
		m->cells[n].ref = bound;
		m->cells[n].native_ref = bound;
		m->cells[bound].native_ref = bound;
		c->native_ref = bound;
	}
	return 0;
}

/* A cell at 1x: one VM, a vCPU per slot, so no vCPU ever waits for one. */
static bool one_x(const struct bench_cell *c)
{
	return c->kind != BENCH_NATIVE && c->vms == 1 && c->vcpus == c->pcpus &&
	       c->mode == BENCH_MODE_PROCESS;
}

/*
 * The pooled 1x denominator. At 1x every policy runs the same (there is
 * never a second vCPU to give a slot to), and so does every slice length,
 * deferral bound, guest-slice setting and wake slice (nobody queues, so
 * nobody yields and no woken vCPU waits for a slice to be cut),
 * so the efficiency of any VM cell divides by the median of all those 1x
 * runs of its workload, lock and threshold: 5 reps of each policy pool to
 * many runs, and no policy looks better for a lucky 1x. A native cell
 * keeps its own bound.
 *
 * The loop's placement is the exception: at 1x it does not run the same
 * (with a CPU outside the slots, auto moves the loop there and none leaves
 * it among the vCPUs), so each --loop-cpu value pools only its own 1x
 * runs: a cell's efficiency says how its placement scales from its own 1x,
 * and the medians side by side say which placement is faster. The
 * --sched host cells are auto's, as they were before the dimension.
 *
 * QEMU is another VMM (its own devices, timers, exits): its cells pool only
 * QEMU's 1x, so each VMM's efficiency says how it scales from its own 1x,
 * and vs_qemu compares the two at the same overcommit.
 */
static bool pools_with(const struct bench_matrix *m, const struct bench_cell *c, unsigned k)
{
	const struct bench_cell *p = &m->cells[k];
	if (c->kind == BENCH_NATIVE)
		return (int)k == c->ref;
	return one_x(p) && p->kind == c->kind && p->pcpus == c->pcpus && !strcmp(p->workload, c->workload) &&
	       !strcmp(p->lock, c->lock) && p->spin_threshold == c->spin_threshold &&
	       bench_loop_same(&p->loop, &c->loop);
}

/* A Linux workload's vmm cell and QEMU's with the same vCPUs on the same CPUs. */
static void link_qemu(struct bench_matrix *m)
{
	for (unsigned i = 0; i < m->n; i++) {
		struct bench_cell *c = &m->cells[i];
		for (unsigned k = 0; c->kind == BENCH_VM && k < m->n; k++) {
			const struct bench_cell *q = &m->cells[k];
			if (q->kind == BENCH_QEMU && !strcmp(q->workload, c->workload) && q->vcpus == c->vcpus &&
			    q->pcpus == c->pcpus && q->vms == c->vms)
				c->qemu_ref = (int)k;
		}
	}
}

static int link_pools(struct bench_matrix *m)
{
	for (unsigned i = 0; i < m->n; i++) {
		struct bench_cell *c = &m->cells[i];
		unsigned n = 0;
		for (unsigned k = 0; k < m->n; k++)
			n += pools_with(m, c, k);
		if (!(c->pool = calloc(2 * (size_t)n + 1, sizeof(*c->pool))))
			return -ENOMEM;
		c->used = c->pool + n;
		for (unsigned k = 0; k < m->n; k++)
			if (pools_with(m, c, k))
				c->pool[c->npool++] = (int)k;
	}
	return 0;
}

int bench_matrix_build(const struct bench_opts *o, struct bench_matrix *m, char *err,
		       size_t errlen)
{
	m->n = 0;
	m->cells = calloc(BENCH_MAX_CELLS, sizeof(*m->cells));
	if (!m->cells)
		return parse_fail(err, errlen, "out of memory for the matrix");
	int r = add_vm_cells(o, m, err, errlen);
	if (!r && link_multi_vm(m))
		r = parse_fail(err, errlen, "the matrix has more than %d cells", BENCH_MAX_CELLS);
	if (!r && o->native && add_native_cells(o, m))
		r = parse_fail(err, errlen, "the matrix has more than %d cells", BENCH_MAX_CELLS);
	if (!r)
		link_qemu(m);
	if (!r && link_pools(m))
		r = parse_fail(err, errlen, "out of memory for the matrix");
	if (r) {
		bench_matrix_free(m);
		return r;
	}
	/* Shrink to what is used: cells are large (their raw runs inline). */
	struct bench_cell *c = realloc(m->cells, (m->n ? m->n : 1) * sizeof(*c));
	if (c)
		m->cells = c;
	return 0;
}

void bench_matrix_free(struct bench_matrix *m)
{
	for (unsigned i = 0; m->cells && i < m->n; i++) {
		struct bench_cell *c = &m->cells[i];
		for (unsigned k = 0; k < c->nruns; k++) {
			free(c->runs[k].vm_ops);
			free(c->runs[k].vm_start_ns);
		}
		free(c->vm_median);
		free(c->pool);
	}
	free(m->cells);
	m->cells = NULL;
	m->n = 0;
}

/*
 * Repetition r of every cell runs before repetition r+1 (the caller's
 * loop), so a slow period of the host lands on every cell alike rather than
 * on one. Within a repetition the order is shuffled, with a fixed seed per
 * repetition so a run is reproducible, to keep any drift (host warming up,
 * page cache) from always favouring the cells that come first.
 */
void bench_run_order(unsigned ncells, unsigned rep, unsigned *order)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (rep + 1);
	for (unsigned i = 0; i < ncells; i++)
		order[i] = i;
	if (rep == 0)
		return;
	for (unsigned i = ncells; i > 1; i--) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		unsigned j = (unsigned)(x % i);
		unsigned t = order[i - 1];
		order[i - 1] = order[j];
		order[j] = t;
	}
}
