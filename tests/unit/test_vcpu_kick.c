/*
 * vcpu_kick from another thread while vcpu_start is still starting later
 * vCPUs (issue 15): what the scheduler does when vCPU 0 grants a slot to a
 * vCPU whose thread the main thread is creating right now. The kick must see
 * either "not started" or a fully written thread handle, never a torn one;
 * built with TSan (make tsan-build, TSAN_UNITS) this reports the data race
 * that plain bool/pthread_t accesses have. The vCPUs here have no KVM fd:
 * each thread starts, fails its first ioctl, says it ended, and returns.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "tests/unit/check.h"
#include "vcpu/vcpu.h"

#define NVCPUS 4
#define ROUNDS 50

struct round {
	struct vcpu v[NVCPUS];
	struct vcpu_env env;
	atomic_int stop, ended, started_all;
	atomic_long kicks;
};

static void on_ended(void *opaque, struct vcpu *v)
{
	struct round *r = opaque;
	(void)v;
	atomic_fetch_add(&r->ended, 1);
}

/* Kicks every vCPU, started or not, until all have started and ended (at least once over all). */
static void *kicker(void *arg)
{
	struct round *r = arg;
	do {
		for (int i = 0; i < NVCPUS; i++)
			vcpu_kick(&r->v[i]);
		atomic_fetch_add(&r->kicks, 1);
	} while (!atomic_load(&r->started_all) || atomic_load(&r->ended) < NVCPUS);
	return NULL;
}

static void one_round(void)
{
	static struct round r;
	memset(&r, 0, sizeof(r));
	r.env = (struct vcpu_env){ .vm_fd = -1, .stop = &r.stop, .ended = on_ended, .opaque = &r };
	for (unsigned i = 0; i < NVCPUS; i++) {
		r.v[i].id = i;
		r.v[i].fd = -1;
		r.v[i].stats.fd = -1;
		r.v[i].env = &r.env;
	}
	pthread_t k;
	CHECK_EQ(pthread_create(&k, NULL, kicker, &r), 0);
	for (unsigned i = 0; i < NVCPUS; i++)
		CHECK_EQ(vcpu_start(&r.v[i]), 0);
	atomic_store(&r.started_all, 1);
	pthread_join(k, NULL);
	for (unsigned i = 0; i < NVCPUS; i++) {
		vcpu_join(&r.v[i]);
		CHECK_EQ(r.v[i].end, VCPU_HOST_FAILED); /* no KVM fd: KVM_SET_SIGNAL_MASK fails, the host's doing */
	}
	CHECK_EQ(atomic_load(&r.ended), NVCPUS);
}

int main(void)
{
	CHECK_EQ(vcpu_signals_init(), 0); /* the kick signal has its handler and is blocked */
	for (int i = 0; i < ROUNDS; i++)
		one_round();
	return check_summary();
}
