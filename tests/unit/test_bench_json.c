/*
 * The bench's report reader (vmm/bench/exec/json.c, jansson underneath):
 * a real report (the golden one test_report_json checks) reads the numbers
 * that were written, and hostile documents, the kind a foreign shard could
 * hold, are refused with -EINVAL without a crash (run it under valgrind or
 * the ASan build: build-san/tests/unit/test_bench_json).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "tests/unit/json_compare.h"
#include "vmm/bench/exec/exec.h"

static bool near(double a, double b)
{
	return a == b || fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

/* The values test_report_json's fixture put into the report. */
static void test_reads_report(void)
{
	char path[PATH_MAX + 64];
	json_test_data_path(path, sizeof(path), "report_golden.json");
	struct bench_json j;
	double v;
	bool b;
	CHECK_EQ(bench_json_load(path, &j), 0);
	CHECK(bench_json_num(&j, "ops_per_s", &v) == 0 && near(v, 5000000.5));
	CHECK(bench_json_num(&j, "ops_total", &v) == 0 && near(v, 10000001));
	CHECK(bench_json_bool(&j, "mutual_exclusion_ok", &b) == 0 && !b);
	CHECK(bench_json_num(&j, "start_ns", &v) == 0 && near(v, 1e12));
	CHECK(bench_json_num(&j, "start_wait_ns", &v) == 0 && v == 0);
	CHECK(bench_json_num(&j, "config.sched.pcpus", &v) == 0 && v == 2);
	CHECK(bench_json_num(&j, "config.timeout_ms", &v) == 0 && near(v, (double)UINT64_MAX));
	CHECK(bench_json_num(&j, "vcpus.1.regs.rip", &v) == 0 && near(v, (double)0xffffffff81234567ull));
	CHECK(bench_json_num(&j, "vcpus.0.reports.ops", &v) == 0 && v == 5000000);
	CHECK(bench_json_num(&j, "vcpus.1.sched.kick_latency_ns.p99", &v) == 0 && v == 90000);
	CHECK(bench_json_num(&j, "vms.0.elapsed_ns", &v) == 0 && v == 0);
	CHECK_EQ(bench_json_num(&j, "vms.0.ops_per_s", &v), -EINVAL); /* null: NaN was written */
	CHECK_EQ(bench_json_num(&j, "status", &v), -EINVAL);            /* a string */
	CHECK_EQ(bench_json_bool(&j, "ops_per_s", &b), -EINVAL);
	CHECK_EQ(bench_json_num(&j, "domain.grants", &v), -ENOENT);
	CHECK_EQ(bench_json_num(&j, "vcpus.2.id", &v), -ENOENT);
	CHECK_EQ(bench_json_num(&j, "vcpus.x.id", &v), -ENOENT);
	CHECK_EQ(bench_json_num(&j, "vcpus", &v), -EINVAL);
	bench_json_free(&j);
	CHECK(j.root == NULL);
	bench_json_free(&j); /* twice is harmless */
}

/* A key may hold dots (a guest's report keys may); the path still finds it. */
static void test_dotted_keys(void)
{
	struct bench_json j;
	double v;
	CHECK_EQ(bench_json_parse("{\"r\": {\"hc.ps\": 7, \"hc\": {\"x\": 1}}, \"a.b\": {\"c\": [3, 4]}}", &j), 0);
	CHECK(bench_json_num(&j, "r.hc.ps", &v) == 0 && v == 7);
	CHECK(bench_json_num(&j, "r.hc.x", &v) == 0 && v == 1);
	CHECK(bench_json_num(&j, "a.b.c.1", &v) == 0 && v == 4);
	CHECK_EQ(bench_json_num(&j, "a.b.c.2", &v), -ENOENT);
	CHECK_EQ(bench_json_num(&j, "", &v), -EINVAL); /* the top object itself */
	bench_json_free(&j);
}

static char *deep(unsigned n, char open, char close)
{
	char *s = malloc(2 * n + 16);
	size_t k = 0;
	s[k++] = '{';
	memcpy(s + k, "\"a\":", 4);
	k += 4;
	for (unsigned i = 0; i < n; i++)
		s[k++] = open;
	for (unsigned i = 0; i < n; i++)
		s[k++] = close;
	s[k++] = '}';
	s[k] = '\0';
	return s;
}

static void test_hostile_text(void)
{
	static const char *const bad[] = {
		"",
		"   ",
		"{\"a\": 1",                        /* truncated */
		"{\"a\": 1,",                       /* truncated */
		"{\"a\": \"unterminated",           /* truncated */
		"{\"a\": 1} x",                     /* trailing text */
		"{\"a\": 1}{\"a\": 2}",             /* two documents */
		"{\"a\": 1, \"a\": 2}",             /* duplicate key */
		"{\"b\": {\"x\": 1, \"x\": 1}}",    /* duplicate key, deeper */
		"{\"a\": \"x\\u0000y\"}",           /* NUL in a string */
		"{\"a\\u0000\": 1}",                /* NUL in a key */
		"{\"a\": 1e999}",                   /* out of a double's range */
		"{\"a\": -1e999}",
		"{\"a\": 123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890"
		"1234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890"
		"1234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890"
		"12345678901234567890}",            /* 310 digits: past DBL_MAX */
		"{\"a\": NaN}",
		"{\"a\": Infinity}",
		"{\"a\": 01}",                      /* leading zero */
		"{\"a\": .5}",
		"{\"a\": 0x10}",
		"{'a': 1}",
		"{a: 1}",
		"{\"a\": 1,}",                      /* trailing comma */
		"{\"a\": [1, 2,]}",
		"{\"a\": tru}",
		"{\"a\": \"\\ud800\"}",             /* lone surrogate */
		"{\"a\": \"\xff\xfe\"}",            /* not UTF-8 */
		"{\"a\": \"tab\there\"}",           /* raw control character */
		"{\"a\": 1} // comment",
		"[1, 2]",                           /* not an object at the top */
		"1",
		"\"s\"",
		"null",
		"true",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct bench_json j = { 0 };
		int r = bench_json_parse(bad[i], &j);
		if (r != -EINVAL)
			fprintf(stderr, "accepted or wrong error (%d): %s\n", r, bad[i]);
		CHECK_EQ(r, -EINVAL);
		CHECK(j.root == NULL);
		bench_json_free(&j);
	}
	/* nesting: a little is fine, past jansson's limit (2048) refused, far past it no stack overflow */
	char *ok = deep(100, '[', ']'), *too = deep(5000, '[', ']'), *far = deep(1000000, '{', '}');
	struct bench_json j;
	CHECK_EQ(bench_json_parse(ok, &j), 0);
	bench_json_free(&j);
	CHECK_EQ(bench_json_parse(too, &j), -EINVAL);
	CHECK_EQ(bench_json_parse(far, &j), -EINVAL);
	free(ok);
	free(too);
	free(far);
	/* a big integer that is still a double: read, not refused (registers are u64) */
	double v;
	CHECK_EQ(bench_json_parse("{\"a\": 99999999999999999999999}", &j), 0);
	CHECK(bench_json_num(&j, "a", &v) == 0 && near(v, 1e23));
	bench_json_free(&j);
}

static int write_file(const char *path, const void *buf, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -errno;
	size_t w = fwrite(buf, 1, n, f);
	return fclose(f) || w != n ? -EIO : 0;
}

/* Files: a NUL byte ends nothing (the text after it is still read, and refused). */
static void test_hostile_files(void)
{
	char path[] = "/tmp/test_bench_json.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	close(fd);
	struct bench_json j;
	double v;
	static const char nul_inside[] = "{\"a\": 1}\0garbage";
	CHECK_EQ(write_file(path, nul_inside, sizeof(nul_inside) - 1), 0);
	CHECK_EQ(bench_json_load(path, &j), -EINVAL);
	static const char nul_in_string[] = "{\"a\": \"x\0y\"}";
	CHECK_EQ(write_file(path, nul_in_string, sizeof(nul_in_string) - 1), 0);
	CHECK_EQ(bench_json_load(path, &j), -EINVAL);
	CHECK_EQ(write_file(path, "", 0), 0);
	CHECK_EQ(bench_json_load(path, &j), -EINVAL);
	static const char good[] = "{\"a\": {\"b\": [0.25]}}\n";
	CHECK_EQ(write_file(path, good, sizeof(good) - 1), 0);
	CHECK_EQ(bench_json_load(path, &j), 0);
	CHECK(bench_json_num(&j, "a.b.0", &v) == 0 && v == 0.25);
	bench_json_free(&j);
	unlink(path);
	CHECK_EQ(bench_json_load(path, &j), -ENOENT);
	CHECK(j.root == NULL);
}

int main(void)
{
	RUN(test_reads_report);
	RUN(test_dotted_keys);
	RUN(test_hostile_text);
	RUN(test_hostile_files);
	return check_summary();
}
