/*
 * lib/json_out (jansson) against what the hand-rolled lib/json_writer it
 * replaced in the reports wrote (tests/unit/data/json_out_golden.json): the same values give the same numbers (integers
 * digit for digit, reals to 1e-9), null for NaN and infinity, and strings a
 * strict parser reads back; what the old writer could not do (bytes that
 * are not UTF-8) becomes valid JSON.
 */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json_out.h"
#include "tests/unit/check.h"
#include "tests/unit/json_compare.h"

#define LOAD_FLAGS (JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL)

static const double reals[] = { 0.0, 1.0, 2.0, -3.0, 0.1, 5000000.5, 1e10, 12345678901.0, 1.5e-7, 2.00000000001,
				-1e300, 9999999999.0, 0.333333333333, NAN, INFINITY, -INFINITY };
static const uint64_t u64s[] = { 0, 1, 4096, INT64_MAX, (uint64_t)INT64_MAX + 1, 0xffffffff81234567ull, UINT64_MAX };
static const int64_t i64s[] = { 0, -1, INT64_MIN, INT64_MAX };
static const char *const strs[] = { "", "plain", "q\"uote", "back\\slash", "nl\nand\ttab", "\x01\x1f", "/slash",
				     "caf\xc3\xa9" };

/* What the old hand-rolled writer (lib/json_writer, now gone) wrote for
 * these values: written by it before it was removed. */
static char *old_text(void)
{
	char path[PATH_MAX];
	json_test_data_path(path, sizeof(path), "json_out_golden.json");
	return json_test_slurp(path);
}

static char *new_text(int *rc)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct json_out out, *o = &out;
	json_t *top = json_out_begin(o);
	json_t *a = json_out_arr(o, top, "reals");
	for (size_t i = 0; i < sizeof(reals) / sizeof(reals[0]); i++)
		json_out_f64(o, a, NULL, reals[i]);
	a = json_out_arr(o, top, "u64");
	for (size_t i = 0; i < sizeof(u64s) / sizeof(u64s[0]); i++)
		json_out_u64(o, a, NULL, u64s[i]);
	a = json_out_arr(o, top, "i64");
	for (size_t i = 0; i < sizeof(i64s) / sizeof(i64s[0]); i++)
		json_out_i64(o, a, NULL, i64s[i]);
	json_t *s = json_out_obj(o, top, "strings");
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		json_out_str(o, s, strs[i], strs[i]);
	json_out_obj(o, top, "empty");
	json_out_bool(o, top, "yes", true);
	*rc = json_out_write(o, f);
	fclose(f);
	return text;
}

static void test_same_as_old_writer(void)
{
	int rc = -1;
	char *a = old_text(), *b = new_text(&rc);
	CHECK_EQ(rc, 0);
	CHECK(a && b);
	if (!a || !b)
		goto out;
	json_error_t e;
	json_t *ja = json_loads(a, LOAD_FLAGS, &e), *jb = json_loads(b, LOAD_FLAGS, &e);
	CHECK(ja && jb);
	if (ja && jb) {
		char where[512];
		int d = json_compare(ja, jb, where, sizeof(where));
		if (d)
			fprintf(stderr, "first difference at %s\n%s\n%s\n", where, a, b);
		CHECK_EQ(d, 0);
		/* the non-finite reals are null */
		json_t *r = json_object_get(jb, "reals");
		CHECK(json_is_null(json_array_get(r, 13)) && json_is_null(json_array_get(r, 15)));
	}
	json_decref(ja);
	json_decref(jb);
	char ka[64][32], kb[64][32];
	unsigned na = json_number_kinds(a, ka, 64), nb = json_number_kinds(b, kb, 64);
	CHECK_EQ(na, nb);
	CHECK_EQ(na, 13 + 7 + 4); /* 16 reals less 3 nulls, 7 u64, 4 i64 */
	for (unsigned i = 0; i < na && i < nb && i < 64; i++) {
		if (strcmp(ka[i], kb[i]))
			fprintf(stderr, "number %u: %s, now %s\n", i, ka[i], kb[i]);
		CHECK(!strcmp(ka[i], kb[i]));
	}
	/* the largest u64, exactly */
	CHECK(strstr(b, "18446744073709551615") != NULL);
	CHECK(strstr(b, "u64:") == NULL);
	CHECK(b[strlen(b) - 1] == '\n');
out:
	free(a);
	free(b);
}

/* A string or key that is not UTF-8 (the old writer wrote it raw: invalid JSON) is read back. */
static void test_not_utf8(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct json_out out, *o = &out;
	json_t *top = json_out_begin(o);
	json_out_str(o, top, "path", "/tmp/\xff\xfe.img");
	json_out_u64(o, top, "k\xc3", 1);
	CHECK_EQ(json_out_write(o, f), 0);
	fclose(f);
	json_error_t e;
	json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &e);
	CHECK(j != NULL);
	CHECK(j && !strcmp(json_string_value(json_object_get(j, "path")), "/tmp/??.img"));
	CHECK(j && json_integer_value(json_object_get(j, "k?")) == 1);
	json_decref(j);
	free(text);
}

/* A failure on the way is reported once, at the write, and nothing is written. */
static void test_sticky_error(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct json_out out, *o = &out;
	json_t *top = json_out_begin(o);
	json_out_u64(o, NULL, "orphan", 1); /* as if its parent had failed */
	json_out_u64(o, top, "after", 2);
	CHECK(o->err < 0);
	CHECK(json_out_write(o, f) < 0);
	fclose(f);
	CHECK_EQ(len, 0);
	free(text);
}

/*
 * The report is written by a thread under a seccomp filter that forbids
 * opening files; jansson opens /dev/urandom at its first object unless
 * json_out_init seeded it. In a child (first test, so nothing here made an
 * object yet): init, forbid open/openat, write a document.
 */
static void test_writes_under_a_filter(void)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		json_out_init();
		scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
		if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(openat), 0) ||
		    seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(open), 0) || seccomp_load(ctx))
			_exit(2);
		FILE *f = fopen("/dev/null", "w"); /* must die: the filter is in force */
		(void)f;
		_exit(3);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS); /* the filter works */

	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		FILE *f = fopen("/dev/null", "w");
		json_out_init();
		scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
		if (!f || !ctx || seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(openat), 0) ||
		    seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(open), 0) || seccomp_load(ctx))
			_exit(2);
		struct json_out out;
		json_t *top = json_out_begin(&out);
		json_t *o = json_out_obj(&out, top, "a");
		json_out_u64(&out, o, "b", UINT64_MAX);
		json_out_f64(&out, o, "c", 0.5);
		_exit(json_out_write(&out, f) ? 4 : 0);
	}
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st))
		fprintf(stderr, "the writer died of signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	RUN(test_writes_under_a_filter);
	RUN(test_same_as_old_writer);
	RUN(test_not_utf8);
	RUN(test_sticky_error);
	return check_summary();
}
