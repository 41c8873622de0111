/* Running a created VM: start the vCPUs, sleep in the event loop, collect the outcome. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "vmm/errors.h"
#include "vmm/event_loop.h"
#include "vmm/vm.h"

struct run_ctx {
	struct vm *vm;
	struct evloop loop;
	struct ev wake_ev, timeout_ev, signal_ev;
	uint64_t wake_buf;
	struct signalfd_siginfo sig_buf;
	int sig_fd;
	bool done;
};

static void kick_all(struct vm *vm)
{
	for (unsigned i = 0; i < vm->cfg->ncpus; i++)
		vcpu_kick(&vm->vcpus[i]);
}

static void on_wake(void *arg, int res)
{
	struct run_ctx *c = arg;
	(void)res;
	if (atomic_load(&c->vm->stop) != VM_STOP_NONE)
		kick_all(c->vm);
	if (atomic_load(&c->vm->ended) == c->vm->cfg->ncpus)
		c->done = true;
	else
		evloop_read(&c->loop, &c->wake_ev, c->vm->wake_fd, &c->wake_buf, sizeof(c->wake_buf));
}

static void on_timeout(void *arg, int res)
{
	struct run_ctx *c = arg;
	if (res != -ETIME)
		return; /* cancelled or moved */
	vm_request_stop(c->vm, VM_STOP_TIMEOUT, -1, 0);
}

static void on_signal(void *arg, int res)
{
	struct run_ctx *c = arg;
	if (res == (int)sizeof(c->sig_buf)) {
		c->vm->stop_signal = (int)c->sig_buf.ssi_signo;
		vm_request_stop(c->vm, VM_STOP_SIGNAL, -1, 0);
	}
	evloop_read(&c->loop, &c->signal_ev, c->sig_fd, &c->sig_buf, sizeof(c->sig_buf));
}

static int outcome(const struct vm *vm)
{
	switch (atomic_load(&vm->stop)) {
	case VM_STOP_FAULT: return VMM_EXIT_GUEST_FAULT;
	case VM_STOP_TIMEOUT: return VMM_EXIT_TIMEOUT;
	case VM_STOP_SIGNAL: return 128 + vm->stop_signal;
	case VM_STOP_GUEST_EXIT: return atomic_load(&vm->guest_status) ? VMM_EXIT_GUEST_FAIL : VMM_EXIT_OK;
	default: break;
	}
	return VMM_EXIT_OK;
}

int vm_run(struct vm *vm)
{
	struct run_ctx c = { .vm = vm, .sig_fd = -1 };
	sigset_t sigs;
	int r;

	/* SIGINT/SIGTERM become events, so a stopped guest still gets its report. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	c.sig_fd = signalfd(-1, &sigs, SFD_CLOEXEC);

	r = evloop_init(&c.loop);
	if (r < 0) {
		fprintf(stderr, "vmm: io_uring: %s\n", strerror(-r));
		return VMM_EXIT_HOST_ERROR;
	}
	c.wake_ev = (struct ev){ .cb = on_wake, .arg = &c };
	c.timeout_ev = (struct ev){ .cb = on_timeout, .arg = &c };
	c.signal_ev = (struct ev){ .cb = on_signal, .arg = &c };
	evloop_read(&c.loop, &c.wake_ev, vm->wake_fd, &c.wake_buf, sizeof(c.wake_buf));
	if (c.sig_fd >= 0)
		evloop_read(&c.loop, &c.signal_ev, c.sig_fd, &c.sig_buf, sizeof(c.sig_buf));

	vm->start_ns = monotonic_ns();
	if (vm->cfg->timeout_ms)
		evloop_timeout_at(&c.loop, &c.timeout_ev, vm->start_ns + vm->cfg->timeout_ms * 1000000ull);
	unsigned started = 0;
	for (; started < vm->cfg->ncpus; started++) {
		r = vcpu_start(&vm->vcpus[started]);
		if (r) {
			fprintf(stderr, "vmm: cannot start vCPU %u: %s\n", started, strerror(-r));
			vm_request_stop(vm, VM_STOP_FAULT, (int)started, 0);
			/* the threads never started count as ended */
			atomic_fetch_add(&vm->ended, vm->cfg->ncpus - started);
			break;
		}
	}
	while (!c.done) {
		r = evloop_run_once(&c.loop);
		if (r < 0) {
			fprintf(stderr, "vmm: event loop: %s\n", strerror(-r));
			vm_request_stop(vm, VM_STOP_FAULT, -1, 0);
			kick_all(vm);
			break;
		}
	}
	for (unsigned i = 0; i < started; i++)
		vcpu_join(&vm->vcpus[i]);
	vm->end_ns = monotonic_ns();
	evloop_fini(&c.loop);
	if (c.sig_fd >= 0)
		close(c.sig_fd);
	pthread_sigmask(SIG_UNBLOCK, &sigs, NULL);
	return outcome(vm);
}
