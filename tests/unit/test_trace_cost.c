/*
 * What jansson would cost the Chrome trace writer (vmm/core/trace.c), which
 * can hold millions of events: the same timeline written by trace_write
 * (hand-rolled fprintf) and by jansson, both as one tree dumped at the end
 * and as one small tree per event. By default a small trace, whose three
 * documents must be the same JSON (that is the test); the times and their
 * ratio are printed, never asserted. `test_trace_cost --events 1000000`
 * is the measurement vmm/report/README.md quotes.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "tests/unit/json_compare.h"
#include "vmm/core/trace.h"

#define NVCPUS 8
#define NSLOTS 4
#define T0 1000000000ull
#define STEP_NS 250 /* ts in microseconds is then exact in both writers */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Event i of the synthetic run: vCPUs take turns running and waiting for a slot, with a kick now and then. */
static void event(uint64_t i, enum sched_trace_ev *ev, int *v, int *arg)
{
	*v = (int)(i % NVCPUS);
	if (i % 16 == 15) {
		*ev = SCHED_TR_KICK;
		*arg = (*v + 1) % NVCPUS;
	} else if ((i / NVCPUS) % 2) {
		*ev = SCHED_TR_RUNNABLE;
		*arg = -1;
	} else {
		*ev = SCHED_TR_GRANT;
		*arg = *v % NSLOTS;
	}
}

static void name_vcpu(void *ctx, int v, char *buf, unsigned len)
{
	(void)ctx;
	snprintf(buf, len, "vm0/vcpu%d", v);
}

/* The same document through jansson: emit() gets each event object (its reference). */
struct jw {
	json_t *events; /* one tree: the array; else NULL and events stream to f */
	FILE *f;
	bool first;
};

static void emit(struct jw *w, json_t *e)
{
	if (w->events) {
		json_array_append_new(w->events, e);
		return;
	}
	fputs(w->first ? "\n" : ",\n", w->f);
	w->first = false;
	json_dumpf(e, w->f, JSON_COMPACT);
	json_decref(e);
}

static json_t *meta(int pid, int tid, const char *what, const char *name)
{
	json_t *e = json_pack("{s:s,s:i}", "ph", "M", "pid", pid);
	if (tid >= 0)
		json_object_set_new(e, "tid", json_integer(tid));
	json_object_set_new(e, "name", json_string(what));
	json_object_set_new(e, "args", json_pack("{s:s}", "name", name));
	return e;
}

static json_t *span_event(int pid, int tid, const char *name, uint64_t from, uint64_t to)
{
	return json_pack("{s:s,s:i,s:i,s:s,s:f,s:f}", "ph", "X", "pid", pid, "tid", tid, "name", name, "ts",
			 (double)(from - T0) / 1e3, "dur", (double)(to - from) / 1e3);
}

struct span {
	const char *state;
	uint64_t since;
	int slot;
};

static void close_span(struct jw *w, struct span *s, int v, const char *vname, uint64_t at)
{
	if (!s->state)
		return;
	emit(w, span_event(1, v, s->state, s->since, at));
	if (s->slot >= 0)
		emit(w, span_event(2, s->slot, vname, s->since, at));
	s->state = NULL;
	s->slot = -1;
}

static int write_jansson(const char *path, uint64_t n, bool one_tree)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	struct jw w = { .events = one_tree ? json_array() : NULL, .f = f, .first = true };
	json_t *doc = NULL;
	if (one_tree) {
		doc = json_pack("{s:s,s:o}", "displayTimeUnit", "ns", "traceEvents", w.events);
	} else {
		fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
	}
	char names[NVCPUS][32];
	struct span sp[NVCPUS];
	emit(&w, meta(1, -1, "process_name", "vCPUs"));
	emit(&w, meta(2, -1, "process_name", "pCPU slots"));
	for (int v = 0; v < NVCPUS; v++) {
		name_vcpu(NULL, v, names[v], sizeof(names[v]));
		sp[v] = (struct span){ NULL, 0, -1 };
		emit(&w, meta(1, v, "thread_name", names[v]));
	}
	for (int s = 0; s < NSLOTS; s++) {
		char name[24];
		snprintf(name, sizeof(name), "slot %d", s);
		emit(&w, meta(2, s, "thread_name", name));
	}
	for (uint64_t i = 0; i < n; i++) {
		enum sched_trace_ev ev;
		int v, arg;
		event(i, &ev, &v, &arg);
		uint64_t t = T0 + i * STEP_NS;
		if (ev == SCHED_TR_KICK) {
			emit(&w, json_pack("{s:s,s:s,s:i,s:i,s:s,s:f,s:{s:i}}", "ph", "i", "s", "t", "pid", 1, "tid", v,
					   "name", "kicked", "ts", (double)(t - T0) / 1e3, "args", "other", arg));
			continue;
		}
		close_span(&w, &sp[v], v, names[v], t);
		sp[v] = (struct span){ ev == SCHED_TR_GRANT ? "running" : "runnable", t,
				       ev == SCHED_TR_GRANT ? arg : -1 };
	}
	uint64_t tend = n ? T0 + (n - 1) * STEP_NS : 0;
	for (int v = 0; v < NVCPUS; v++)
		close_span(&w, &sp[v], v, names[v], tend);
	json_t *other = json_pack("{s:I,s:I,s:I}", "events", (json_int_t)n, "dropped", (json_int_t)0,
				  "t0_monotonic_ns", (json_int_t)(n ? T0 : 0));
	int rc;
	if (one_tree) {
		json_object_set_new(doc, "otherData", other);
		rc = json_dumpf(doc, f, JSON_COMPACT);
		fputc('\n', f);
		json_decref(doc);
	} else {
		fputs("\n],\"otherData\":", f);
		rc = json_dumpf(other, f, JSON_COMPACT);
		fputs("}\n", f);
		json_decref(other);
	}
	return fclose(f) || rc ? -1 : 0;
}

static int write_hand(const char *path, uint64_t n)
{
	struct trace *t = trace_create(n);
	if (!t)
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		enum sched_trace_ev ev;
		int v, arg;
		event(i, &ev, &v, &arg);
		trace_sched_event(t, ev, v, arg, T0 + i * STEP_NS);
	}
	int rc = trace_write(t, path, NVCPUS, NSLOTS, name_vcpu, NULL);
	trace_destroy(t);
	return rc;
}

static uint64_t nevents = 20000;

static void test_cost(void)
{
	char hand[] = "/tmp/trace_hand.XXXXXX", tree[] = "/tmp/trace_tree.XXXXXX", stream[] = "/tmp/trace_stream.XXXXXX";
	int fds[3] = { mkstemp(hand), mkstemp(tree), mkstemp(stream) };
	CHECK(fds[0] >= 0 && fds[1] >= 0 && fds[2] >= 0);
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	double t0 = now_s();
	CHECK_EQ(write_hand(hand, nevents), 0);
	double t1 = now_s();
	CHECK_EQ(write_jansson(tree, nevents, true), 0);
	double t2 = now_s();
	CHECK_EQ(write_jansson(stream, nevents, false), 0);
	double t3 = now_s();
	printf("trace of %llu events: hand-rolled %.3f s, jansson one tree %.3f s (%.2fx), jansson per event %.3f s (%.2fx)\n",
	       (unsigned long long)nevents, t1 - t0, t2 - t1, (t2 - t1) / (t1 - t0), t3 - t2, (t3 - t2) / (t1 - t0));
	/* the three are one document, or the times compare different work */
	if (nevents <= 100000) {
		json_error_t e;
		json_t *a = json_load_file(hand, JSON_REJECT_DUPLICATES, &e);
		json_t *b = json_load_file(tree, JSON_REJECT_DUPLICATES, &e);
		json_t *c = json_load_file(stream, JSON_REJECT_DUPLICATES, &e);
		CHECK(a && b && c);
		char where[512];
		if (a && b && c) {
			CHECK(json_array_size(json_object_get(a, "traceEvents")) > nevents / 2);
			int d = json_compare(a, b, where, sizeof(where));
			if (d)
				fprintf(stderr, "one tree differs at %s\n", where);
			CHECK_EQ(d, 0);
			d = json_compare(a, c, where, sizeof(where));
			if (d)
				fprintf(stderr, "per event differs at %s\n", where);
			CHECK_EQ(d, 0);
		}
		json_decref(a);
		json_decref(b);
		json_decref(c);
	}
	unlink(hand);
	unlink(tree);
	unlink(stream);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--events"))
		nevents = strtoull(argv[2], NULL, 10);
	RUN(test_cost);
	return check_summary();
}
