/*
 * The reports' JSON, built as a jansson tree and dumped once, so that what
 * we write is what a strict parser reads back (vmm/report/README.md says
 * why jansson). It keeps the text the old hand-rolled writer produced:
 * two-space indent, "key": value, keys in the order they were set,
 * non-finite reals as null, reals as "%.10g", and u64 values above
 * INT64_MAX as exact integers (jansson's integers are signed 64-bit).
 *
 * Errors are sticky: a failed allocation marks the builder and later calls
 * on a NULL parent do nothing, so the report code reads like the document
 * and checks once, in json_out_write.
 */
#ifndef VMM_JSON_OUT_H
#define VMM_JSON_OUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct json_out {
	json_t *root;
	int err; /* the first -errno */
};

/*
 * Once, first thing in main: seeds jansson's hash tables. Left to itself,
 * jansson seeds them at the first object it makes by opening /dev/urandom,
 * and by then the thread that writes the report runs under a seccomp filter
 * that forbids openat (it killed every `vmm run --json`).
 */
void json_out_init(void);
/* The top-level object; NULL (and o->err set) if it could not be made. */
json_t *json_out_begin(struct json_out *o);
/* A new object or array under parent: by key in an object, appended (key NULL) to an array. */
json_t *json_out_obj(struct json_out *o, json_t *parent, const char *key);
json_t *json_out_arr(struct json_out *o, json_t *parent, const char *key);
void json_out_str(struct json_out *o, json_t *parent, const char *key, const char *v);
void json_out_u64(struct json_out *o, json_t *parent, const char *key, uint64_t v);
void json_out_i64(struct json_out *o, json_t *parent, const char *key, int64_t v);
void json_out_f64(struct json_out *o, json_t *parent, const char *key, double v);
void json_out_bool(struct json_out *o, json_t *parent, const char *key, bool v);
void json_out_null(struct json_out *o, json_t *parent, const char *key);
/* Dumps the tree and a newline to f, and frees it: 0 or the first -errno (f's own errors are the caller's). */
int json_out_write(struct json_out *o, FILE *f);

#endif
