/*
 * --trace FILE: the scheduling timeline in Chrome's trace-event JSON format
 * (Perfetto and chrome://tracing open it). Events are appended to memory by
 * the scheduler's trace hook (under its lock, so no locking here) and written
 * out after the run: tracing off costs the scheduler one branch.
 */
#ifndef VMM_TRACE_H
#define VMM_TRACE_H

#include <stdint.h>

#include "sched/types.h"

struct trace;

struct trace *trace_create(uint64_t max_events);
void trace_destroy(struct trace *t);
/* A sched_trace_fn; ctx is the struct trace. */
void trace_sched_event(void *ctx, enum sched_trace_ev ev, int v, int arg, uint64_t now_ns);
/* vcpu_name(ctx, v, buf, len) names vCPU v (e.g. "vm0/vcpu3"). Returns 0 or -errno. */
int trace_write(const struct trace *t, const char *path, int nvcpus, int nslots,
		void (*vcpu_name)(void *ctx, int v, char *buf, unsigned len), void *ctx);
/* Opens path for trace_write now, before the seccomp filter forbids open(2). */
void trace_open_output(struct trace *t, const char *path);
int trace_output_fd(const struct trace *t); /* -1: none */

#endif
