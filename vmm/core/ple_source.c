#include "vmm/core/ple_source.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/core/run.h"

static void on_ple(void *arg, int res)
{
	struct ple_source *p = arg;
	p->armed = false;
	if (res < 0)
		return; /* the fd went away or the loop is closing */
	int n = ple_watch_drain(&p->w);
	if (n > 0) {
		p->events += (uint64_t)n;
		sched_vcpu_spin_seen(p->r->sched, p->g, SCHED_SPIN_PLE);
	}
	if (atomic_load(&p->r->ctl.stop) == VM_STOP_NONE && evloop_poll(p->loop, &p->ev, ple_watch_fd(&p->w)) == 0)
		p->armed = true;
}

int ple_sources_start(struct run *r, struct evloop *loop, char *why, unsigned len)
{
	const char *tp = r->cfg->ple_tracepoint ? r->cfg->ple_tracepoint : "kvm:kvm_exit";
	const char *filter = r->cfg->ple_tracepoint ? NULL : ple_exit_filter();
	r->ple = calloc(r->nvcpus, sizeof(*r->ple));
	if (!r->ple)
		return -ENOMEM;
	for (unsigned g = 0; g < r->nvcpus; g++) {
		unsigned i;
		struct vm *vm = (struct vm *)run_vm_of(r, g, &i);
		struct ple_source *p = &r->ple[g];
		*p = (struct ple_source){ .loop = loop, .r = r, .g = (int)g };
		p->w.fd = -1;
		int tid = vcpu_wait_tid(&vm->vcpus[i]);
		int rc = tid < 0 ? tid : ple_watch_open(&p->w, tid, tp, filter);
		if (rc < 0) {
			snprintf(why, len, "cannot watch %s on vCPU %u: %s", tp, g, strerror(-rc));
			ple_sources_stop(r);
			return rc;
		}
		p->ev = (struct ev){ .cb = on_ple, .arg = p };
		if (evloop_poll(loop, &p->ev, ple_watch_fd(&p->w)) == 0)
			p->armed = true;
	}
	return 0;
}

void ple_sources_stop(struct run *r)
{
	if (!r->ple)
		return;
	for (unsigned g = 0; g < r->nvcpus; g++) {
		r->ple_events += r->ple[g].events;
		ple_watch_close(&r->ple[g].w);
	}
	free(r->ple);
	r->ple = NULL;
}
