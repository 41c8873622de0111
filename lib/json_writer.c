#include "lib/json_writer.h"

#include <math.h>

void json_begin(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->first[0] = true;
}

static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void item(struct json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
	if (j->depth) {
		fputc('\n', j->f);
		for (int i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
	if (key) {
		put_string(j->f, key);
		fputs(": ", j->f);
	}
}

static void open_(struct json *j, const char *key, char c)
{
	item(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
}

static void close_(struct json *j, char c)
{
	bool empty = j->first[j->depth];
	if (j->depth)
		j->depth--;
	if (!empty) {
		fputc('\n', j->f);
		for (int i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
	fputc(c, j->f);
}

void json_obj(struct json *j, const char *key) { open_(j, key, '{'); }
void json_arr(struct json *j, const char *key) { open_(j, key, '['); }
void json_end_obj(struct json *j) { close_(j, '}'); }
void json_end_arr(struct json *j) { close_(j, ']'); }

void json_str(struct json *j, const char *key, const char *v)
{
	item(j, key);
	put_string(j->f, v ? v : "");
}

void json_u64(struct json *j, const char *key, uint64_t v)
{
	item(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void json_i64(struct json *j, const char *key, int64_t v)
{
	item(j, key);
	fprintf(j->f, "%lld", (long long)v);
}

void json_f64(struct json *j, const char *key, double v)
{
	item(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.10g", v);
	else
		fputs("null", j->f); /* JSON has no NaN or infinity */
}

void json_bool(struct json *j, const char *key, bool v)
{
	item(j, key);
	fputs(v ? "true" : "false", j->f);
}

void json_finish(struct json *j)
{
	fputc('\n', j->f);
}
