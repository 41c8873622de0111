#include "vmm/core/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

struct trace_rec {
	uint64_t t;
	int32_t v, arg;
	uint32_t ev;
};

struct trace {
	struct trace_rec *r;
	uint64_t n, cap, max, dropped;
	FILE *out;   /* opened by trace_open_output, before the seccomp filter */
	int out_err; /* its -errno */
};

struct trace *trace_create(uint64_t max_events)
{
	struct trace *t = calloc(1, sizeof(*t));
	if (t)
		t->max = max_events;
	return t;
}

void trace_destroy(struct trace *t)
{
	if (t) {
		free(t->r);
		if (t->out)
			fclose(t->out);
	}
	free(t);
}

void trace_open_output(struct trace *t, const char *path)
{
	if (!t || t->out || t->out_err)
		return;
	t->out = fopen(path, "w");
	if (!t->out)
		t->out_err = -errno;
}

int trace_output_fd(const struct trace *t)
{
	return t && t->out ? fileno(t->out) : -1;
}


void trace_sched_event(void *ctx, enum sched_trace_ev ev, int v, int arg, uint64_t now_ns)
{
	struct trace *t = ctx;
	if (t->n == t->cap) {
		uint64_t cap = t->cap ? t->cap * 2 : 4096;
		if (cap > t->max)
			cap = t->max;
		struct trace_rec *r = cap > t->cap ? realloc(t->r, cap * sizeof(*r)) : NULL;
		if (!r) {
			t->dropped++; /* a bounded trace: say how much is missing */
			return;
		}
		t->r = r;
		t->cap = cap;
	}
	t->r[t->n++] = (struct trace_rec){ now_ns, v, arg, (uint32_t)ev };
}

enum { PID_VCPUS = 1, PID_SLOTS = 2 };

static const char *state_of(uint32_t ev)
{
	switch (ev) {
	case SCHED_TR_GRANT: return "running";
	case SCHED_TR_RUNNABLE: return "runnable";
	case SCHED_TR_WAITING: return "waiting";
	case SCHED_TR_IDLE: return "idle";
	case SCHED_TR_DONE: return "done";
	default: return NULL;
	}
}

static const char *instant_of(uint32_t ev)
{
	switch (ev) {
	case SCHED_TR_PREEMPT: return "preempt";
	case SCHED_TR_DEFER: return "preempt deferred";
	case SCHED_TR_DEFER_HARD: return "deferral hit its deadline";
	case SCHED_TR_KICK: return "kicked";
	case SCHED_TR_YIELD: return "yield";
	case SCHED_TR_SPIN: return "spinning";
	case SCHED_TR_DEADLOCK: return "guest deadlock";
	case SCHED_TR_SLOT_ON: return "slot online";
	case SCHED_TR_SLOT_OFF: return "slot offline";
	case SCHED_TR_POLICY: return "policy changed";
	case SCHED_TR_SLICE_GUEST: return "slice ended by the guest";
	case SCHED_TR_SLICE_CUT: return "slice cut for a wake-up";
	case SCHED_TR_SLICE_FLOOR: return "slice floor (another domain member waits)";
	default: return NULL;
	}
}

struct span {
	const char *state;
	uint64_t since;
	int slot;
};

static void comma(FILE *f, int *first)
{
	fputs(*first ? "\n" : ",\n", f);
	*first = 0;
}

static void complete(FILE *f, int *first, int pid, int tid, const char *name, uint64_t t0,
		     uint64_t from, uint64_t to)
{
	comma(f, first);
	fprintf(f, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"ts\":%.3f,\"dur\":%.3f}", pid, tid,
		name, (double)(from - t0) / 1e3, (double)(to - from) / 1e3);
}

/* Ends v's current span (and its slot span) at `at`. */
static void close_span(FILE *f, int *first, struct span *s, int v, const char *vname, uint64_t t0,
		       uint64_t at)
{
	if (!s->state)
		return;
	complete(f, first, PID_VCPUS, v, s->state, t0, s->since, at);
	if (s->slot >= 0)
		complete(f, first, PID_SLOTS, s->slot, vname, t0, s->since, at);
	s->state = NULL;
	s->slot = -1;
}

int trace_write(const struct trace *t, const char *path, int nvcpus, int nslots,
		void (*vcpu_name)(void *ctx, int v, char *buf, unsigned len), void *ctx)
{
	if (t->out_err)
		return t->out_err;
	FILE *f = t->out ? t->out : fopen(path, "w");
	if (!f)
		return -errno;
	struct span *sp = calloc((size_t)nvcpus, sizeof(*sp));
	char (*names)[32] = calloc((size_t)nvcpus, sizeof(*names));
	if (!sp || !names) {
		if (f != t->out)
			fclose(f);
		free(sp);
		free(names);
		return -ENOMEM;
	}
	uint64_t t0 = t->n ? t->r[0].t : 0, tend = t->n ? t->r[t->n - 1].t : 0;
	int first = 1;
	errno = 0;
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
	comma(f, &first);
	fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":\"vCPUs\"}}", PID_VCPUS);
	comma(f, &first);
	fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":\"pCPU slots\"}}", PID_SLOTS);
	for (int v = 0; v < nvcpus; v++) {
		vcpu_name(ctx, v, names[v], sizeof(names[v]));
		sp[v].slot = -1;
		comma(f, &first);
		fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":\"%s\"}}",
			PID_VCPUS, v, names[v]);
	}
	for (int s = 0; s < nslots; s++) {
		comma(f, &first);
		fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":\"slot %d\"}}",
			PID_SLOTS, s, s);
	}
	for (uint64_t i = 0; i < t->n; i++) {
		const struct trace_rec *r = &t->r[i];
		const char *st = state_of(r->ev), *in = instant_of(r->ev);
		if (st && r->v >= 0 && r->v < nvcpus) {
			close_span(f, &first, &sp[r->v], r->v, names[r->v], t0, r->t);
			sp[r->v] = (struct span){ st, r->t, r->ev == SCHED_TR_GRANT ? r->arg : -1 };
		} else if (in) {
			comma(f, &first);
			fprintf(f, "{\"ph\":\"i\",\"s\":\"%c\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"ts\":%.3f,\"args\":{\"other\":%d}}",
				r->v >= 0 ? 't' : 'g', PID_VCPUS, r->v >= 0 ? r->v : 0, in,
				(double)(r->t - t0) / 1e3, r->arg);
		}
	}
	for (int v = 0; v < nvcpus; v++)
		close_span(f, &first, &sp[v], v, names[v], t0, tend);
	/* t0 on CLOCK_MONOTONIC: traces of several processes (a domain's
	 * members) line up on one time axis */
	fprintf(f, "\n],\"otherData\":{\"events\":%llu,\"dropped\":%llu,\"t0_monotonic_ns\":%llu}}\n",
		(unsigned long long)t->n, (unsigned long long)t->dropped, (unsigned long long)t0);
	free(sp);
	free(names);
	/* a write that failed midway set errno (ENOSPC on a full disk): name that, not EIO */
	int r = ferror(f) ? (errno ? -errno : -EIO) : 0;
	/* a pre-opened file is closed by trace_destroy */
	if ((f == t->out ? fflush(f) : fclose(f)) && !r)
		r = -errno;
	return r;
}
