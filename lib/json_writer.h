/*
 * A small streaming JSON writer for the report: it tracks commas and nesting
 * so report code reads like the document it produces.
 *
 * The reports now use jansson (lib/json_out.h); what is left here serves
 * vmm/bench/bench_report.c until it moves too. It has no json_null: that
 * name is jansson's, and two definitions in one binary call the wrong one.
 */
#ifndef VMM_JSON_WRITER_H
#define VMM_JSON_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	bool first[JSON_MAX_DEPTH];
};

void json_begin(struct json *j, FILE *f);
void json_obj(struct json *j, const char *key);  /* key NULL inside arrays / at top */
void json_arr(struct json *j, const char *key);
void json_end_obj(struct json *j);
void json_end_arr(struct json *j);
void json_str(struct json *j, const char *key, const char *v);
void json_u64(struct json *j, const char *key, uint64_t v);
void json_i64(struct json *j, const char *key, int64_t v);
void json_f64(struct json *j, const char *key, double v);
void json_bool(struct json *j, const char *key, bool v);
void json_finish(struct json *j);

#endif
