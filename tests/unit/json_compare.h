/*
 * Compares two JSON documents the way a reader of the report sees them: the
 * same keys in the same order, the same JSON types, strings equal, numbers
 * equal to 1e-9 relative. Integers are compared by their text as well
 * (json_number_kinds): jansson reads integers above INT64_MAX only as reals
 * (JSON_DECODE_INT_AS_REAL), and a report's registers are such integers.
 */
#ifndef VMM_TESTS_JSON_COMPARE_H
#define VMM_TESTS_JSON_COMPARE_H

#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Number of differences; where gets the first one's path ("a.b.3"). */
static int json_compare_at(const json_t *a, const json_t *b, const char *path, char *where, size_t n)
{
	int diffs = 0;
	char sub[512];
	if (json_typeof(a) != json_typeof(b)) {
		diffs = 1;
	} else if (json_is_object(a)) {
		if (json_object_size(a) != json_object_size(b))
			diffs++;
		void *ia = json_object_iter((json_t *)a), *ib = json_object_iter((json_t *)b);
		for (; ia && ib; ia = json_object_iter_next((json_t *)a, ia), ib = json_object_iter_next((json_t *)b, ib)) {
			const char *ka = json_object_iter_key(ia), *kb = json_object_iter_key(ib);
			snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", ka);
			if (strcmp(ka, kb)) {
				if (!diffs++ && where)
					snprintf(where, n, "%s", sub);
				where = NULL;
				continue;
			}
			int d = json_compare_at(json_object_iter_value(ia), json_object_iter_value(ib), sub, where, n);
			if (d && diffs == 0)
				where = NULL;
			diffs += d;
		}
		if ((ia || ib) && !diffs++ && where)
			snprintf(where, n, "%s", *path ? path : "(top)");
		return diffs;
	} else if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b)) {
			diffs = 1;
		} else {
			for (size_t i = 0; i < json_array_size(a); i++) {
				snprintf(sub, sizeof(sub), "%s%s%zu", path, *path ? "." : "", i);
				int d = json_compare_at(json_array_get(a, i), json_array_get(b, i), sub, where, n);
				if (d && diffs == 0)
					where = NULL;
				diffs += d;
			}
			return diffs;
		}
	} else if (json_is_string(a)) {
		diffs = json_string_length(a) != json_string_length(b) ||
			memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
	} else if (json_is_number(a)) {
		double x = json_number_value(a), y = json_number_value(b);
		diffs = !(x == y || fabs(x - y) <= 1e-9 * fmax(fabs(x), fabs(y)));
	}
	if (diffs && where)
		snprintf(where, n, "%s", *path ? path : "(top)");
	return diffs;
}

static inline int json_compare(const json_t *a, const json_t *b, char *where, size_t n)
{
	if (where && n)
		where[0] = '\0';
	return json_compare_at(a, b, "", where, n);
}

/*
 * The numbers of a JSON text in document order, each as "i:DIGITS" (an
 * integer, exact) or "r" (a real): two texts with the same keys in the same
 * order must give the same list. Returns how many, at most max.
 */
static inline unsigned json_number_kinds(const char *t, char (*out)[32], unsigned max)
{
	unsigned k = 0;
	while (*t) {
		if (*t == '"') {
			for (t++; *t && *t != '"'; t++)
				if (*t == '\\' && t[1])
					t++;
			if (*t)
				t++;
			continue;
		}
		if (*t == '-' || (*t >= '0' && *t <= '9')) {
			size_t len = strspn(t, "-+0123456789.eE");
			bool real = strcspn(t, ".eE") < len;
			if (k < max)
				snprintf(out[k], sizeof(out[k]), real ? "r" : "i:%.*s", (int)len, t);
			k++;
			t += len;
			continue;
		}
		t++;
	}
	return k;
}


/* tests/unit/data/NAME, found from this binary's place in build/tests/unit/. */
static inline void json_test_data_path(char *out, size_t n, const char *name)
{
	char exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[len > 0 ? len : 0] = '\0';
	for (int up = 0; up < 4; up++) {
		char *slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
	}
	if (snprintf(out, n, "%s/tests/unit/data/%s", exe, name) >= (int)n)
		out[0] = '\0'; /* too long: the open fails and says so */
}

/* A whole file (< 1 MiB), NUL-terminated; NULL if it cannot be read. */
static inline char *json_test_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = calloc(1, 1 << 20);
	size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
	(void)n;
	fclose(f);
	return buf;
}

#endif
