#include "lib/json_out.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/*
 * jansson's integers are signed: a u64 above INT64_MAX (a register, a
 * guest's report) goes in as a string holding a NUL and this tag, which no
 * C string we are given can contain, and json_out_write puts the digits
 * back in its place.
 */
#define BIG_TAG "\\u0000u64:"

static void fail(struct json_out *o, int err)
{
	if (!o->err)
		o->err = err;
}

/* Bytes that are not UTF-8 (a path, a guest's text) become '?': jansson writes only valid UTF-8. */
static json_t *string_or_ascii(const char *s)
{
	json_t *v = json_string(s);
	if (v)
		return v;
	char *copy = strdup(s);
	if (!copy)
		return NULL;
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	v = json_string(copy);
	free(copy);
	return v;
}

/* Puts v under parent (by key, or appended); v's reference stays the caller's. 0 or -1. */
static int attach(json_t *parent, const char *key, json_t *v)
{
	if (!key)
		return json_array_append(parent, v);
	if (!json_object_set(parent, key, v))
		return 0;
	json_t *k = string_or_ascii(key); /* the key was not UTF-8 */
	int r = k ? json_object_set(parent, json_string_value(k), v) : -1;
	json_decref(k);
	return r;
}

/* Takes v's reference; returns v (still owned by parent) or NULL. */
static json_t *add(struct json_out *o, json_t *parent, const char *key, json_t *v)
{
	if (!v) {
		fail(o, -ENOMEM);
		return NULL;
	}
	if (!parent || attach(parent, key, v)) {
		fail(o, -ENOMEM); /* a parent that failed already said so */
		json_decref(v);
		return NULL;
	}
	json_decref(v);
	return v;
}

void json_out_init(void)
{
	uint32_t seed = 0;
	/* getrandom opens nothing; 0 (it failed) lets jansson read /dev/urandom now, still before any filter */
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
		seed = 0;
	json_object_seed(seed);
}

json_t *json_out_begin(struct json_out *o)
{
	o->err = 0;
	o->root = json_object();
	if (!o->root)
		fail(o, -ENOMEM);
	return o->root;
}

json_t *json_out_obj(struct json_out *o, json_t *parent, const char *key)
{
	return add(o, parent, key, json_object());
}

json_t *json_out_arr(struct json_out *o, json_t *parent, const char *key)
{
	return add(o, parent, key, json_array());
}

void json_out_str(struct json_out *o, json_t *parent, const char *key, const char *v)
{
	add(o, parent, key, string_or_ascii(v ? v : ""));
}

void json_out_u64(struct json_out *o, json_t *parent, const char *key, uint64_t v)
{
	if (v <= INT64_MAX) {
		add(o, parent, key, json_integer((json_int_t)v));
		return;
	}
	char tagged[32];
	int n = snprintf(tagged, sizeof(tagged), "%cu64:%" PRIu64, '\0', v);
	add(o, parent, key, json_stringn(tagged, (size_t)n));
}

void json_out_i64(struct json_out *o, json_t *parent, const char *key, int64_t v)
{
	add(o, parent, key, json_integer(v));
}

/*
 * JSON has no NaN or infinity: null, as before. A real that "%.10g" writes
 * without a point or exponent was an integer in the old text, and stays one
 * (jansson would add ".0"); any other is a real dumped with precision 10.
 */
void json_out_f64(struct json_out *o, json_t *parent, const char *key, double v)
{
	if (!isfinite(v)) {
		add(o, parent, key, json_null());
		return;
	}
	char t[40];
	snprintf(t, sizeof(t), "%.10g", v);
	if (t[strspn(t, "-0123456789")] == '\0')
		add(o, parent, key, json_integer(strtoll(t, NULL, 10)));
	else
		add(o, parent, key, json_real(v));
}

void json_out_bool(struct json_out *o, json_t *parent, const char *key, bool v)
{
	add(o, parent, key, json_boolean(v));
}

void json_out_null(struct json_out *o, json_t *parent, const char *key)
{
	add(o, parent, key, json_null());
}

static void json_out_discard(struct json_out *o)
{
	json_decref(o->root);
	o->root = NULL;
}

int json_out_write(struct json_out *o, FILE *f)
{
	char *text = o->err || !o->root ? NULL : json_dumps(o->root, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	json_out_discard(o);
	if (!text)
		return o->err ? o->err : -ENOMEM;
	/* the tagged u64 strings become their digits again */
	const char *p = text, *tag;
	while ((tag = strstr(p, "\"" BIG_TAG))) {
		fwrite(p, 1, (size_t)(tag - p), f);
		const char *digits = tag + 1 + strlen(BIG_TAG);
		size_t n = strspn(digits, "0123456789");
		fwrite(digits, 1, n, f);
		p = digits + n + (digits[n] == '"');
	}
	fputs(p, f);
	fputc('\n', f);
	free(text);
	return 0;
}
