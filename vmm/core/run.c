#include "vmm/core/run.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "vmm/errors.h"
#include "vmm/host/event_loop.h"
#include "vmm/host/fd_limit.h"
#include "vmm/boot/fdt_build.h"
#include "vmm/linux/linux_console.h"
#include "vmm/spin/ple_perf.h"
#include "vmm/sandbox/seccomp_filters.h"
#include "vmm/core/dev_poller.h"
#include "vmm/core/sched_hc_ops.h"
#include "vmm/core/vm_linux.h"

#define TRACE_MAX_EVENTS (8u << 20)

const struct vm *run_vm_of(const struct run *r, unsigned g, unsigned *idx)
{
	*idx = g % r->cfg->ncpus;
	return &r->vms[g / r->cfg->ncpus];
}

static void on_deadlock(void *ctx)
{
	struct run *r = ctx;
	run_request_stop(&r->ctl, VM_STOP_DEADLOCK, -1, -1, 0);
}

static int create_sched(struct run *r, struct vm_error *err)
{
	const struct vm_config *cfg = r->cfg;
	bool host = cfg->sched_mode == SCHED_MODE_HOST;
	r->nslots = r->in->nslots; /* --pcpus was checked by vm_inputs_prepare */
	r->cpus = r->in->cpus;
	r->domain = r->in->domain; /* joined by vm_inputs_prepare */
	r->dom = r->in->dom;

	int *vm_of = calloc(r->nvcpus, sizeof(*vm_of));
	if (!vm_of)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -ENOMEM, "out of memory");
	for (unsigned g = 0; g < r->nvcpus; g++)
		vm_of[g] = (int)(g / cfg->ncpus);
	unsigned sources = 0;
	if (cfg->spin_detect & SPIN_DETECT_PLE)
		sources |= SCHED_SPIN_PLE;
	if (cfg->spin_detect & SPIN_DETECT_HINT)
		sources |= SCHED_SPIN_HINT;
	if (cfg->spin_detect & SPIN_DETECT_YIELD)
		sources |= SCHED_SPIN_YIELD;
	/*
	 * Host mode keeps the scheduler only for PV wait/kick: a slot per vCPU,
	 * nothing pinned, nobody preempted; the host kernel decides who runs.
	 */
	struct sched_params p = {
		.nvcpus = (int)r->nvcpus,
		.npcpus = host ? (int)r->nvcpus : (int)r->nslots,
		.host_cpu = host || cfg->domain ? NULL : r->in->slot_cpu,
		/* a member's slots are the seats the agent grants (member_link.h) */
		.slots_offline = cfg->domain != NULL,
		.slice_ns = (uint64_t)cfg->slice_us * 1000,
		.wake_slice_ns = (uint64_t)cfg->wake_slice_us * 1000,
		.ple_window_ns = (uint64_t)cfg->ple_window_us * 1000,
		.policy = host ? "none" : cfg->policy,
		.spin_sources = host ? 0 : sources,
		.defer = !host && cfg->safe_point,
		.guest_slice = !host && cfg->safe_point && cfg->guest_slice,
		.defer_max_ns = (uint64_t)cfg->defer_us * 1000,
		.nvms = (int)r->nvms,
		.vm_of = vm_of,
		.seed = 0x5eed,
		/* Linux halts inside KVM_RUN (in-kernel irqchip): parking */
		.halt_check_ns = !host && cfg->kernel_path ? (uint64_t)cfg->halt_check_us * 1000 : 0,
	};
	if (cfg->trace_path) {
		r->trace = trace_create(TRACE_MAX_EVENTS);
		if (!r->trace) {
			free(vm_of);
			return vm_error_set(err, VMM_EXIT_HOST_ERROR, -ENOMEM, "out of memory");
		}
		p.trace = trace_sched_event;
		p.trace_ctx = r->trace;
	}
	const char *why = NULL;
	errno = 0;
	r->sched = sched_create(&p, &why);
	int e = errno; /* a refused eventfd or allocation is the host's, not the user's */
	free(vm_of);
	if (!r->sched && (e == EMFILE || e == ENFILE || e == ENOMEM))
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -e, "scheduler: %s: %s", why ? why : "cannot be created",
				    strerror(e));
	if (!r->sched)
		return vm_error_set(err, VMM_EXIT_USAGE, -EINVAL, "scheduler: %s", why ? why : "bad parameters");
	sched_set_deadlock_cb(r->sched, on_deadlock, r);
	return 0;
}

/* seccomp: each vCPU thread installs its filter on itself (vcpu.c) */
static int vcpu_sandbox(struct vcpu *v)
{
	return seccomp_enter_vcpu(v->fd, v->id);
}

static void wire_vcpus(struct run *r)
{
	bool host = r->cfg->sched_mode == SCHED_MODE_HOST;
	for (unsigned k = 0; k < r->nvms; k++) {
		struct vm *vm = &r->vms[k];
		int base = (int)(k * r->cfg->ncpus);
		vm->env.sched = r->sched;
		vm->env.sched_base = base;
		vm->env.own_tick = r->sched && r->cfg->own_tick;
		vm->hc.sched_ops = r->sched ? &sched_glue_hc_ops : NULL;
		vm->hc.sched = r->sched;
		vm->hc.sched_base = base;
		vm->hc.pv_features = fdt_pv_features(r->cfg);
		vm->hc.host_yield = host;
		vm->env.sandbox = r->cfg->no_seccomp ? NULL : vcpu_sandbox;
		for (unsigned i = 0; i < r->cfg->ncpus; i++) {
			struct sched_glue *g = &r->glue[base + (int)i];
			*g = (struct sched_glue){ .vm = vm, .vcpu = i, .base = base };
			sched_set_vcpu(r->sched, base + (int)i, &sched_glue_ops, g);
			int e = vm->vcpus[i].stats_err;
			if (vm->linux_guest && !host && r->cfg->halt_check_us && e && !r->halt_note[0])
				snprintf(r->halt_note, sizeof(r->halt_note),
					 "no KVM binary stats (%s): a halted vCPU keeps its slot until its slice ends",
					 e == -ENOENT ? "no `blocking` stat" : strerror(-e));
		}
	}
	if (r->halt_note[0])
		fprintf(stderr, "vmm: --halt-check-us: %s\n", r->halt_note);
	else if (r->cfg->kernel_path && !host)
		r->halt_check_us = r->cfg->halt_check_us;
}

int run_create(struct run *r, const struct vm_config *cfg, const struct vm_inputs *in, struct kvm_host *kvm,
	       struct vm_error *err)
{
	memset(r, 0, sizeof(*r));
	r->cfg = cfg;
	r->in = in;
	r->kvm = kvm;
	r->nvms = cfg->vms;
	r->nvcpus = cfg->vms * cfg->ncpus;
	r->loop_pin.cpu = -1; /* until run_guests pins it and reads it back */
	snprintf(r->loop_pin.note, sizeof(r->loop_pin.note), "the event loop did not start");
	atomic_init(&r->ctl.stop_vm, -1);
	atomic_init(&r->ctl.stop_vcpu, -1);
	r->ctl.wake_fd = eventfd(0, EFD_CLOEXEC);
	if (r->ctl.wake_fd < 0)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -errno, "eventfd: %s", strerror(errno));
	if ((cfg->spin_detect & SPIN_DETECT_PLE) && cfg->sched_mode == SCHED_MODE_VMM) {
		if (cfg->ple_tracepoint || ple_host_support(r->ple_note, sizeof(r->ple_note)) == 0) {
			r->ple_note[0] = '\0';
			r->ple_on = true;
		} else {
			/* Said at start, not only in the report: the user asked for it. */
			fprintf(stderr, "vmm: --spin-detect ple: %s; pause-loop detection is off\n", r->ple_note);
		}
	}

	r->vms = calloc(r->nvms, sizeof(*r->vms));
	r->glue = calloc(r->nvcpus, sizeof(*r->glue));
	if (!r->vms || !r->glue)
		return vm_error_set(err, VMM_EXIT_HOST_ERROR, -ENOMEM, "out of memory");
	int rc = create_sched(r, err);
	if (rc)
		return rc;
	for (unsigned k = 0; k < r->nvms; k++) {
		rc = vm_create(&r->vms[k], k, kvm, cfg, in, &r->ctl, err);
		r->vms_created = k + 1;
		if (rc)
			return rc;
	}
	wire_vcpus(r);
	return 0;
}

void run_destroy(struct run *r)
{
	for (unsigned k = 0; k < r->vms_created; k++)
		vm_destroy(&r->vms[k]);
	dlink_stop(r->domain); /* before the scheduler it calls; vm_inputs_free destroys it */
	if (r->sched)
		sched_destroy(r->sched);
	trace_destroy(r->trace);
	if (r->json_out)
		fclose(r->json_out);
	free(r->vms);
	free(r->glue);
	linux_pv_counts_free(r);
	if (r->ctl.wake_fd > 0)
		close(r->ctl.wake_fd);
	memset(r, 0, sizeof(*r));
}

/* ---- the event loop ---- */

struct loop_ctx {
	struct run *r;
	struct evloop loop;
	struct ev wake_ev, timeout_ev, signal_ev, timer_ev;
	uint64_t wake_buf, timer_buf;
	struct signalfd_siginfo sig_buf;
	int sig_fd;
	bool stopping, done;
	/* Linux guests: the terminal is the guest's serial console (linux_console.c) */
	struct ev stdin_ev;
	struct console_escape esc;
	bool console_on;
};

static void kick_all(struct run *r)
{
	for (unsigned k = 0; k < r->vms_created; k++)
		for (unsigned i = 0; i < r->vms[k].nvcpus_created; i++)
			vcpu_kick(&r->vms[k].vcpus[i]);
}

/*
 * The scheduler's timerfd is due (sched.h: whichever thread moves the
 * deadline sets it, so this runs only when a deadline has come).
 */
static void on_timer(void *arg, int res)
{
	struct loop_ctx *c = arg;
	(void)res;
	if (c->stopping)
		return;
	sched_tick(c->r->sched, sched_now_ns());
	evloop_read(&c->loop, &c->timer_ev, sched_timer_fd(c->r->sched), &c->timer_buf,
		    sizeof(c->timer_buf));
}

static void on_wake(void *arg, int res)
{
	struct loop_ctx *c = arg;
	struct run *r = c->r;
	(void)res;
	if (atomic_load(&r->ctl.stop) != VM_STOP_NONE && !c->stopping) {
		c->stopping = true;
		sched_stop(r->sched); /* vCPUs waiting for a slot or a kick leave too */
		kick_all(r);
	}
	if (atomic_load(&r->ctl.ended) == r->nvcpus)
		c->done = true;
	else
		evloop_read(&c->loop, &c->wake_ev, r->ctl.wake_fd, &c->wake_buf, sizeof(c->wake_buf));
}

static void on_timeout(void *arg, int res)
{
	struct loop_ctx *c = arg;
	if (res == -ETIME)
		run_request_stop(&c->r->ctl, VM_STOP_TIMEOUT, -1, -1, 0);
}

static void on_signal(void *arg, int res)
{
	struct loop_ctx *c = arg;
	if (res == (int)sizeof(c->sig_buf)) {
		c->r->ctl.stop_signal = (int)c->sig_buf.ssi_signo;
		run_request_stop(&c->r->ctl, VM_STOP_SIGNAL, -1, -1, 0);
	}
	evloop_read(&c->loop, &c->signal_ev, c->sig_fd, &c->sig_buf, sizeof(c->sig_buf));
}

static int outcome(const struct run *r)
{
	switch (atomic_load(&r->ctl.stop)) {
	case VM_STOP_FAULT: return VMM_EXIT_GUEST_FAULT;
	case VM_STOP_TIMEOUT: return VMM_EXIT_TIMEOUT;
	case VM_STOP_DEADLOCK: return VMM_EXIT_DEADLOCK;
	case VM_STOP_HOST_ERROR: return VMM_EXIT_HOST_ERROR;
	case VM_STOP_SIGNAL: return 128 + r->ctl.stop_signal;
	case VM_STOP_GUEST_EXIT:
		return atomic_load(&r->ctl.guest_status) ? VMM_EXIT_GUEST_FAIL : VMM_EXIT_OK;
	default: return VMM_EXIT_OK;
	}
}

/* From the domain link's thread: the report lists each live change. */
static void on_policy_change(void *ctx, const char *name)
{
	struct run *r = ctx;
	unsigned n = atomic_load(&r->npolicy_changes);
	if (n >= sizeof(r->policy_change) / sizeof(r->policy_change[0]))
		return;
	r->policy_change[n].at_ns = monotonic_ns();
	snprintf(r->policy_change[n].policy, sizeof(r->policy_change[n].policy), "%s", name);
	atomic_store(&r->npolicy_changes, n + 1);
	fprintf(stderr, "vmm: domain %s: yield policy now %s\n", r->cfg->domain, name);
}

/* seccomp: the domain link thread's own filter, installed by that thread */
static int domain_sandbox(void *ctx, int sock)
{
	(void)ctx;
	return seccomp_enter_domain(sock);
}

static void on_weight_change(void *ctx, uint32_t weight)
{
	struct run *r = ctx;
	unsigned n = atomic_load(&r->nweight_changes);
	if (n >= sizeof(r->weight_change) / sizeof(r->weight_change[0]))
		return;
	r->weight_change[n].at_ns = monotonic_ns();
	r->weight_change[n].weight = weight;
	atomic_store(&r->nweight_changes, n + 1);
	fprintf(stderr, "vmm: domain %s: weight now %u\n", r->cfg->domain, weight);
}

static int start_vcpus(struct run *r)
{
	/* --sched host: the threads inherit this mask, the host kernel does the rest. */
	if (r->cfg->sched_mode == SCHED_MODE_HOST && sched_setaffinity(0, sizeof(r->cpus), &r->cpus) < 0)
		return -errno;
	if (r->domain) {
		struct dlink_hooks h = { .on_policy = on_policy_change, .on_weight = on_weight_change,
					 .sandbox = r->cfg->no_seccomp ? NULL : domain_sandbox, .ctx = r };
		int rc = dlink_start(r->domain, r->sched, &h);
		if (rc) {
			fprintf(stderr, "vmm: domain %s: the link thread cannot start: %s\n", r->cfg->domain, strerror(-rc));
			run_request_stop(&r->ctl, VM_STOP_HOST_ERROR, -1, -1, 0);
			atomic_fetch_add(&r->ctl.ended, r->nvcpus); /* no vCPU thread started */
			return rc;
		}
	}
	sched_start(r->sched);
	for (unsigned k = 0; k < r->nvms; k++)
		for (unsigned i = 0; i < r->cfg->ncpus; i++) {
			int rc = vcpu_start(&r->vms[k].vcpus[i]);
			if (rc) {
				char note[80];
				fprintf(stderr, "vmm: cannot start vCPU %u of VM %u: %s%s\n", i, k, strerror(-rc),
					fd_limit_note(rc, note, sizeof(note)));
				run_request_stop(&r->ctl, VM_STOP_FAULT, (int)k, (int)i, 0);
				/* threads never started count as ended */
				atomic_fetch_add(&r->ctl.ended, r->nvcpus - (k * r->cfg->ncpus + i));
				return rc;
			}
		}
	return 0;
}

/* ---- seccomp (vmm/sandbox/seccomp_filters.h) ---- */

/* The report's files are opened now: the event loop's filter forbids open(2). */
static void open_outputs(struct run *r)
{
	if (r->cfg->json_path && !r->json_out && !r->json_out_err) {
		r->json_out = fopen(r->cfg->json_path, "w");
		if (!r->json_out)
			r->json_out_err = -errno;
	}
	if (r->cfg->trace_path)
		trace_open_output(r->trace, r->cfg->trace_path);
}

static int sandbox_prepare(struct run *r)
{
	/* the domain's doorbell: rung by whichever thread runs the scheduler */
	int fds[] = { r->ctl.wake_fd, r->domain ? r->dom.doorbell : -1 };
	/* a Linux guest runs alone (cli.c): its one VM's devices */
	const struct vm *vm = &r->vms[0];
	struct seccomp_guest g = { .vm_fd = vm->fd, .blk_uring = vm_linux_blk_uring_fd(vm),
				   .blk_event = -1, .console = true };
	for (unsigned i = 0; i < vm->npollers; i++)
		g.blk_event = vm->pollers[i].fd; /* virtio-blk's, the only poller (vm_linux.c) */
	int rc = r->cfg->no_seccomp ? 0 : seccomp_prepare(fds, 2, sched_timer_fd(r->sched),
								 vm->linux_guest ? &g : NULL);
	if (rc)
		fprintf(stderr, "vmm: seccomp: %s\n", strerror(-rc));
	return rc;
}

/* After every thread and PLE watch is started: the main thread's filter. */
static int sandbox_loop(struct run *r, struct loop_ctx *c)
{
	if (r->cfg->no_seccomp)
		return 0;
	int wfd[] = { r->ctl.wake_fd, r->json_out ? fileno(r->json_out) : -1, trace_output_fd(r->trace),
		      r->domain ? r->dom.doorbell : -1 };
	int *rfd = calloc(2 * r->nvcpus, sizeof(int));
	unsigned nr = 0;
	for (unsigned g = 0; rfd && r->ple && g < r->nvcpus; g++)
		rfd[nr++] = r->ple[g].w.fd;
	if (rfd)
		nr += linux_pv_counts_fds(r, rfd + nr);
	int *sfd = calloc(r->nvcpus, sizeof(int));
	unsigned ns = 0;
	for (unsigned g = 0; sfd && g < r->nvcpus; g++) {
		unsigned i;
		const struct vm *vm = run_vm_of(r, g, &i);
		if (vm->vcpus[i].stats.fd >= 0)
			sfd[ns++] = vm->vcpus[i].stats.fd;
	}
	struct seccomp_fds f = { .write = wfd, .nwrite = 4, .read = rfd, .nread = nr, .pread = sfd,
				 .npread = ns, .uring = c->loop.ring.ring_fd };
	int rc = rfd && sfd ? seccomp_enter_loop(&f) : -ENOMEM;
	free(rfd);
	free(sfd);
	if (rc)
		fprintf(stderr, "vmm: seccomp: cannot install the event loop's filter: %s\n", strerror(-rc));
	return rc;
}

/* ---- Linux guests: typed bytes into the UART (vmm/linux/linux_console.h) ---- */

static void on_stdin(void *arg, int res)
{
	struct loop_ctx *c = arg;
	struct run *r = c->r;
	uint8_t in[64], out[128];
	ssize_t n = res > 0 ? read(STDIN_FILENO, in, sizeof(in)) : 0;
	if (n <= 0 || (res & (POLLERR | POLLNVAL))) {
		c->console_on = false; /* end of input: the guest keeps running */
		return;
	}
	bool quit = false;
	size_t o = console_filter(&c->esc, in, (size_t)n, out, &quit);
	if (o)
		uart8250_input(&r->vms[0].uart, out, (unsigned)o);
	if (quit) {
		r->ctl.stop_signal = SIGINT; /* Ctrl-a x: like an interrupt, status 130 */
		fprintf(stderr, "\r\nvmm: Ctrl-a x: stopping the guest\n");
		run_request_stop(&r->ctl, VM_STOP_SIGNAL, -1, -1, 0);
		return;
	}
	if (!c->stopping)
		evloop_poll(&c->loop, &c->stdin_ev, STDIN_FILENO);
}

static void console_start(struct loop_ctx *c)
{
	if (!c->r->vms[0].linux_guest)
		return;
	console_raw_enter();
	c->stdin_ev = (struct ev){ .cb = on_stdin, .arg = c };
	c->console_on = evloop_poll(&c->loop, &c->stdin_ev, STDIN_FILENO) == 0;
}

/* The loop's own events: vCPU wake-ups, the scheduler's, and SIGINT/SIGTERM. */
static void arm_loop_events(struct loop_ctx *c)
{
	struct run *r = c->r;
	c->wake_ev = (struct ev){ .cb = on_wake, .arg = c };
	c->timeout_ev = (struct ev){ .cb = on_timeout, .arg = c };
	c->signal_ev = (struct ev){ .cb = on_signal, .arg = c };
	c->timer_ev = (struct ev){ .cb = on_timer, .arg = c };
	evloop_read(&c->loop, &c->wake_ev, r->ctl.wake_fd, &c->wake_buf, sizeof(c->wake_buf));
	evloop_read(&c->loop, &c->timer_ev, sched_timer_fd(r->sched), &c->timer_buf,
		    sizeof(c->timer_buf));
	if (c->sig_fd >= 0)
		evloop_read(&c->loop, &c->signal_ev, c->sig_fd, &c->sig_buf, sizeof(c->sig_buf));
}

/*
 * The devices' fds (virtio-blk completions and the like); pollers[] is the
 * caller's, as it must live until the loop ends. One that cannot be polled
 * stops the run as a host error (dev_poller.h).
 */
static void arm_pollers(struct loop_ctx *c, struct dev_poller *pollers, unsigned max)
{
	struct run *r = c->r;
	unsigned npollers = 0;
	for (unsigned k = 0; k < r->nvms; k++)
		for (unsigned i = 0; i < r->vms[k].npollers && npollers < max; i++)
			dev_poller_arm(&pollers[npollers++], &c->loop, &r->vms[k].pollers[i], &r->ctl);
}

/* vCPU threads, the tick, and for Linux guests the console and PLE sources. */
static void start_guests(struct loop_ctx *c)
{
	struct run *r = c->r;
	if (start_vcpus(r))
		return;
	console_start(c); /* Linux guests */
	if (linux_pv_counts_start(r) < 0)
		fprintf(stderr, "vmm: out of memory for the PV counters; the report has none\n");
	char why[200];
	if (r->ple_on && ple_sources_start(r, &c->loop, why, sizeof(why)) < 0) {
		fprintf(stderr, "vmm: --spin-detect ple: %s; pause-loop detection is off\n", why);
		snprintf(r->ple_note, sizeof(r->ple_note), "%s", why);
	}
}

/*
 * Until a stop is requested; a broken loop (io_uring_enter failed, or a
 * request could not be queued: evloop_error) stops the guests instead of
 * hanging them, and is a host error. -errno then, else 0.
 */
static int run_loop(struct loop_ctx *c)
{
	struct run *r = c->r;
	while (!c->done) {
		int rc = evloop_run_once(&c->loop);
		if (rc < 0) {
			if (evloop_error(&c->loop))
				fprintf(stderr, "vmm: event loop: a request could not be queued%s: %s\n",
					rc == -EBUSY ? " (io_uring SQ full)" : "", strerror(-rc));
			else
				fprintf(stderr, "vmm: event loop: io_uring_enter: %s\n", strerror(-rc));
			run_request_stop(&r->ctl, VM_STOP_HOST_ERROR, -1, -1, 0);
			sched_stop(r->sched);
			kick_all(r);
			return rc;
		}
	}
	return 0;
}

/* Every vCPU thread has ended before the clock stops and the loop goes. */
static void finish_run(struct loop_ctx *c)
{
	struct run *r = c->r;
	for (unsigned k = 0; k < r->nvms; k++) {
		for (unsigned i = 0; i < r->cfg->ncpus; i++)
			vcpu_join(&r->vms[k].vcpus[i]);
	}
	r->end_ns = monotonic_ns();
	for (unsigned k = 0; k < r->nvms; k++)
		r->vms[k].end_ns = r->end_ns;
	console_raw_leave(); /* Linux guests: the terminal as it was */
	linux_pv_counts_finish(r);
	evloop_fini(&c->loop);
	ple_sources_stop(r);
}

/*
 * SIGINT/SIGTERM become events (a signalfd), so a stopped guest still gets
 * its report. Blocked here and released by signals_release on every path
 * out of run_execute. -errno when the signalfd cannot be made.
 */
static int signals_take(struct loop_ctx *c, sigset_t *old)
{
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, old);
	c->sig_fd = signalfd(-1, &sigs, SFD_CLOEXEC);
	return c->sig_fd < 0 ? -errno : 0;
}

static void signals_release(struct loop_ctx *c, const sigset_t *old)
{
	if (c->sig_fd >= 0)
		close(c->sig_fd);
	c->sig_fd = -1;
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

/*
 * --start-at: K processes, each created its VM in its own time, start their
 * vCPUs at one instant so their measured windows coincide. Slept here, in
 * the main thread before the loop's seccomp filter and before the clock of
 * the run starts; a missed instant starts at once and is reported. The last
 * stretch is a yielding spin: a timer wakes up to a tick late on some hosts
 * (10 ms in the nested KVM), which would misalign the windows by as much.
 */
#define START_SPIN_NS 20000000ull
static void wait_start_at(struct run *r)
{
	uint64_t at = r->cfg->start_at_ns;
	if (!at)
		return;
	uint64_t ready = monotonic_ns();
	r->start_wait_ns = at > ready ? at - ready : 0;
	if (at > START_SPIN_NS) {
		uint64_t sleep_to = at - START_SPIN_NS;
		struct timespec ts = { .tv_sec = (time_t)(sleep_to / 1000000000ull),
				       .tv_nsec = (long)(sleep_to % 1000000000ull) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	uint64_t now;
	while ((now = monotonic_ns()) < at)
		sched_yield();
	r->start_late_ns = now - at;
}

/* Arms the loop, starts the guests and runs until they end; the exit status. */
static int run_guests(struct run *r, struct loop_ctx *c)
{
	bool host_error = false;
	arm_loop_events(c);
	wait_start_at(r);
	r->start_ns = monotonic_ns();
	for (unsigned k = 0; k < r->nvms; k++)
		r->vms[k].start_ns = r->start_ns;
	if (r->cfg->timeout_ms)
		evloop_timeout_at(&c->loop, &c->timeout_ev, r->start_ns + r->cfg->timeout_ms * 1000000ull);
	struct dev_poller pollers[VM_MAX_POLLERS * 4];
	arm_pollers(c, pollers, sizeof(pollers) / sizeof(pollers[0]));
	start_guests(c);
	/* after the threads that inherit its CPU set, before the filter (sched_getaffinity) */
	loop_pin_apply(&r->in->loop, r->domain, &r->loop_pin);
	/* seccomp: from here on the main thread makes only the calls its filter allows */
	if (sandbox_loop(r, c)) {
		host_error = true;
		run_request_stop(&r->ctl, VM_STOP_FAULT, -1, -1, 0);
	}
	if (run_loop(c))
		host_error = true;
	finish_run(c);
	return host_error ? VMM_EXIT_HOST_ERROR : outcome(r);
}

int run_execute(struct run *r)
{
	struct loop_ctx c = { .r = r, .sig_fd = -1 };
	sigset_t old;
	char note[80];
	int status = VMM_EXIT_HOST_ERROR;
	int rc = signals_take(&c, &old);
	if (rc < 0) {
		fprintf(stderr, "vmm: signalfd: %s%s\n", strerror(-rc), fd_limit_note(rc, note, sizeof(note)));
		goto out;
	}
	open_outputs(r);
	if (sandbox_prepare(r))
		goto out;
	rc = evloop_init(&c.loop);
	if (rc < 0) {
		fprintf(stderr, "vmm: io_uring: %s%s%s\n", strerror(-rc), fd_limit_note(rc, note, sizeof(note)),
			rc == -EINVAL ? " (the loop's locked ring needs IORING_REGISTER_RESTRICTIONS: Linux 5.10 or later)" : "");
		goto out;
	}
	status = run_guests(r, &c);
out:
	signals_release(&c, &old);
	return status;
}
