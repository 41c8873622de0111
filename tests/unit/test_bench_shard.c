/*
 * The pure parts of sharding a bench matrix (vmm/bench/matrix/shard.c):
 * which shard a unit goes to, --shard and --cells parsing, the stable cell
 * keys and matrix fingerprint, and the host identity's slug.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/check.h"
#include "vmm/bench/cli/cli.h"
#include "vmm/bench/matrix/matrix.h"
#include "vmm/bench/matrix/shard.h"

static void tiny(struct bench_opts *o, struct bench_matrix *m, const char *reps)
{
	char err[256];
	char *argv[] = { "bench", "--locks", "tas", "--policies", "host,pv", "--overcommit", "1,2",
			 "--pcpus", "1", "--reps", (char *)reps, NULL };
	bench_opts_defaults(o);
	CHECK_EQ(bench_parse(11, argv, o, err, sizeof(err)), 0);
	CHECK_EQ(bench_matrix_build(o, m, err, sizeof(err)), 0);
}

static void test_shard_parse(void)
{
	unsigned i = 9, n = 9;
	CHECK_EQ(bench_shard_parse("1/4", &i, &n), 0);
	CHECK(i == 1 && n == 4);
	CHECK_EQ(bench_shard_parse("4/4", &i, &n), 0);
	CHECK(i == 4 && n == 4);
	const char *bad[] = { "0/4", "5/4", "1/0", "1", "/4", "1/", "a/4", "1/4x", "-1/4", " 1/4", "" };
	for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		CHECK_EQ(bench_shard_parse(bad[k], &i, &n), -EINVAL);
}

static void test_cells_parse(void)
{
	bool sel[8], micro;
	char err[128];
	CHECK_EQ(bench_cells_parse("0,3-5", 8, sel, &micro, err, sizeof(err)), 0);
	bool want[8] = { 1, 0, 0, 1, 1, 1, 0, 0 };
	CHECK(!memcmp(sel, want, sizeof(want)) && !micro);
	CHECK_EQ(bench_cells_parse("7,micro", 8, sel, &micro, err, sizeof(err)), 0);
	CHECK(sel[7] && !sel[0] && micro);
	const char *bad[] = { "8", "3-1", "0-8", "", ",", "1,", "a", "1-", "micros", "1,,2" };
	for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		err[0] = '\0';
		CHECK_EQ(bench_cells_parse(bad[k], 8, sel, &micro, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "--cells") != NULL);
	}
}

/* Round robin over the full run's order: every unit once, shards differ by at most one. */
static void test_assignment(void)
{
	struct bench_opts o;
	struct bench_matrix m;
	tiny(&o, &m, "3");
	struct bench_unit *all;
	unsigned nall;
	CHECK_EQ(bench_units_all(&o, &m, &all, &nall), 0);
	CHECK_EQ(nall, (m.n + 1) * 3);
	CHECK(all[m.n].cell == BENCH_UNIT_MICRO && all[m.n].rep == 0); /* micro ends each rep */
	for (unsigned n = 1; n <= 7; n++) {
		unsigned *seen = calloc(nall, sizeof(*seen)), total = 0, lo = nall, hi = 0;
		for (unsigned i = 1; i <= n; i++) {
			struct bench_unit *u;
			unsigned nu;
			o.shard_index = i;
			o.shard_count = n;
			char err[128];
			CHECK_EQ(bench_units_select(&o, &m, &u, &nu, err, sizeof(err)), 0);
			unsigned last = 0;
			for (unsigned k = 0; k < nu; k++) {
				unsigned at = 0;
				while (at < nall && (all[at].cell != u[k].cell || all[at].rep != u[k].rep))
					at++;
				CHECK(at < nall && at % n == i - 1);
				CHECK(k == 0 || at > last); /* in the full run's order */
				last = at;
				if (at < nall)
					seen[at]++;
			}
			total += nu;
			lo = nu < lo ? nu : lo;
			hi = nu > hi ? nu : hi;
			free(u);
		}
		CHECK_EQ(total, nall);
		CHECK(hi - lo <= 1);
		for (unsigned k = 0; k < nall; k++)
			CHECK_EQ(seen[k], 1);
		free(seen);
	}
	CHECK_EQ(bench_shard_of(0, 4), 1);
	CHECK_EQ(bench_shard_of(5, 4), 2);
	free(all);
	bench_matrix_free(&m);
}

static void test_fingerprint(void)
{
	struct bench_opts o, p;
	struct bench_matrix m, n;
	char a[17], b[17], c[17];
	tiny(&o, &m, "3");
	tiny(&p, &n, "3");
	bench_fingerprint(&o, &m, a);
	bench_fingerprint(&p, &n, b);
	CHECK(strlen(a) == 16 && !strcmp(a, b));
	char k1[128], k2[128];
	bench_cell_key(&m.cells[0], k1, sizeof(k1));
	bench_cell_key(&n.cells[0], k2, sizeof(k2));
	CHECK(!strcmp(k1, k2) && !strcmp(k1, "vm:lockbench:tas:host:process:1x1:p1:t4096"));
	/* What a run measures changes it; the output directory does not. */
	p.out_dir = "elsewhere";
	bench_fingerprint(&p, &n, b);
	CHECK(!strcmp(a, b));
	p.duration_ms++;
	bench_fingerprint(&p, &n, b);
	CHECK(strcmp(a, b));
	bench_matrix_free(&n);
	tiny(&p, &n, "2");
	bench_fingerprint(&p, &n, c);
	CHECK(strcmp(a, c));
	p.reps = 3;
	bench_fingerprint(&p, &n, c);
	CHECK(!strcmp(a, c));
	n.cells[1].vcpus++; /* another matrix */
	bench_fingerprint(&p, &n, c);
	CHECK(strcmp(a, c));
	bench_matrix_free(&m);
	bench_matrix_free(&n);
}

static void test_slug(void)
{
	struct bench_machine a = { .nproc = 32 }, b;
	snprintf(a.cpu, sizeof(a.cpu), "AMD EPYC 7763 64-Core Processor");
	snprintf(a.kernel, sizeof(a.kernel), "Linux 6.1.0");
	snprintf(a.kvm, sizeof(a.kvm), "kvm_amd (nested: kvm_amd-on-tcg)");
	char s1[96], s2[96];
	bench_identity_slug(&a, s1, sizeof(s1));
	CHECK(!strncmp(s1, "amd-epyc-7763-64-core-pr", 24));
	CHECK(strstr(s1, "-n32-") != NULL);
	for (const char *p = s1; *p; p++)
		CHECK((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_');
	b = a;
	CHECK(bench_machine_same(&a, &b));
	snprintf(b.kernel, sizeof(b.kernel), "Linux 6.2.0"); /* only the hash tells them apart */
	bench_identity_slug(&b, s2, sizeof(s2));
	CHECK(!bench_machine_same(&a, &b) && strcmp(s1, s2));
	bench_identity_slug(&a, s2, sizeof(s2));
	CHECK(!strcmp(s1, s2));
}

int main(void)
{
	RUN(test_shard_parse);
	RUN(test_cells_parse);
	RUN(test_assignment);
	RUN(test_fingerprint);
	RUN(test_slug);
	return check_summary();
}
