/*
 * Reads the JSON report a child `vmm run --json` wrote, flattened to
 * "path.to.key" -> scalar so the bench can ask for "ops_per_s" or
 * "vcpus.0.reports.hc_ps" by name. A real (small) parser rather than a
 * text search: fields may be added to the report in any order or depth
 * (README: later versions only add fields) and the bench must not break.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/bench/bench.h"
#include "vmm/host/file.h"

#define PATH_MAX_LEN 256
#define DEPTH_MAX 32

struct parser {
	const char *p;
	struct bench_json *j;
	char path[PATH_MAX_LEN];
	int depth;
};

static void ws(struct parser *s)
{
	while (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t')
		s->p++;
}

static int add(struct parser *s, const char *val, size_t len)
{
	struct bench_json *j = s->j;
	if (j->n == j->cap) {
		unsigned cap = j->cap ? j->cap * 2 : 64;
		char **k = realloc(j->key, cap * sizeof(*k));
		if (!k)
			return -ENOMEM;
		j->key = k;
		char **v = realloc(j->val, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		j->val = v;
		j->cap = cap;
	}
	j->key[j->n] = strdup(s->path);
	j->val[j->n] = strndup(val, len);
	if (!j->key[j->n] || !j->val[j->n]) {
		free(j->key[j->n]);
		free(j->val[j->n]);
		return -ENOMEM;
	}
	j->n++;
	return 0;
}

/* A string's raw contents (escapes kept as written: we only compare keys
 * that are plain ASCII); start and len point into the text. */
static int string(struct parser *s, const char **start, size_t *len)
{
	if (*s->p != '"')
		return -EINVAL;
	const char *b = ++s->p;
	while (*s->p && *s->p != '"') {
		if (*s->p == '\\' && s->p[1])
			s->p++;
		s->p++;
	}
	if (*s->p != '"')
		return -EINVAL;
	*start = b;
	*len = (size_t)(s->p - b);
	s->p++;
	return 0;
}

static int value(struct parser *s);

/* Appends ".name" (or "name" at the top) to the path; returns the old length. */
static int push(struct parser *s, const char *name, size_t len, size_t *old)
{
	size_t n = strlen(s->path);
	*old = n;
	if (n + len + 2 >= sizeof(s->path))
		return -E2BIG;
	if (n)
		s->path[n++] = '.';
	memcpy(s->path + n, name, len);
	s->path[n + len] = '\0';
	return 0;
}

static int container(struct parser *s, bool is_obj)
{
	char close = is_obj ? '}' : ']';
	if (++s->depth > DEPTH_MAX)
		return -E2BIG;
	s->p++;
	ws(s);
	for (unsigned idx = 0; *s->p != close; idx++) {
		const char *name;
		size_t len, old;
		char num[16];
		int r;
		if (idx) {
			if (*s->p != ',')
				return -EINVAL;
			s->p++;
			ws(s);
		}
		if (is_obj) {
			if ((r = string(s, &name, &len)))
				return r;
			ws(s);
			if (*s->p != ':')
				return -EINVAL;
			s->p++;
		} else {
			len = (size_t)snprintf(num, sizeof(num), "%u", idx);
			name = num;
		}
		if ((r = push(s, name, len, &old)) || (r = value(s)))
			return r;
		s->path[old] = '\0';
		ws(s);
	}
	s->p++;
	s->depth--;
	return 0;
}

static int value(struct parser *s)
{
	ws(s);
	const char *b = s->p, *str;
	size_t len;
	int r;
	switch (*s->p) {
	case '{':
		return container(s, true);
	case '[':
		return container(s, false);
	case '"':
		if ((r = string(s, &str, &len)))
			return r;
		return add(s, str, len);
	case '\0':
		return -EINVAL;
	default:
		while (*s->p && !strchr(",}] \n\r\t", *s->p))
			s->p++;
		if (s->p == b)
			return -EINVAL;
		return add(s, b, (size_t)(s->p - b));
	}
}

int bench_json_parse(const char *text, struct bench_json *j)
{
	struct parser s = { .p = text, .j = j };
	memset(j, 0, sizeof(*j));
	int r = value(&s);
	if (!r) {
		ws(&s);
		if (*s.p)
			r = -EINVAL;
	}
	if (r)
		bench_json_free(j);
	return r;
}

int bench_json_load(const char *path, struct bench_json *j)
{
	uint8_t *buf;
	size_t len;
	memset(j, 0, sizeof(*j));
	int r = read_whole_file(path, 64u << 20, &buf, &len);
	if (r)
		return r;
	char *text = malloc(len + 1);
	if (!text) {
		free(buf);
		return -ENOMEM;
	}
	memcpy(text, buf, len);
	text[len] = '\0';
	free(buf);
	r = bench_json_parse(text, j);
	free(text);
	return r;
}

void bench_json_free(struct bench_json *j)
{
	for (unsigned i = 0; i < j->n; i++) {
		free(j->key[i]);
		free(j->val[i]);
	}
	free(j->key);
	free(j->val);
	memset(j, 0, sizeof(*j));
}

static const char *get(const struct bench_json *j, const char *key)
{
	for (unsigned i = 0; i < j->n; i++)
		if (!strcmp(j->key[i], key))
			return j->val[i];
	return NULL;
}

int bench_json_num(const struct bench_json *j, const char *key, double *out)
{
	const char *v = get(j, key);
	if (!v)
		return -ENOENT;
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (end == v || *end || errno)
		return -EINVAL;
	*out = d;
	return 0;
}

int bench_json_bool(const struct bench_json *j, const char *key, bool *out)
{
	const char *v = get(j, key);
	if (!v)
		return -ENOENT;
	if (strcmp(v, "true") && strcmp(v, "false"))
		return -EINVAL;
	*out = !strcmp(v, "true");
	return 0;
}
