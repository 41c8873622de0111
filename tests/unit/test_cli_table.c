/* `vmm run`'s option table (vmm/cli/options.c), row by row: every row is
 * documented, --help shows it, its default parses, and its range holds at
 * both ends. A new row is checked without a new test. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "vmm/cli/cli.h"
#include "vmm/cli/options.h"

/* argv = "run", then the NULL-terminated args; cfg from the defaults. */
static int parse(struct vm_config *cfg, char *err, const char *const *args)
{
	char *argv[16];
	int argc = 0;
	argv[argc++] = "run";
	for (; *args && argc < 15; args++)
		argv[argc++] = (char *)*args;
	argv[argc] = NULL;
	vm_config_defaults(cfg);
	err[0] = '\0';
	return cli_parse_run(argc, argv, cfg, err, 256);
}

static uint64_t field(const struct vm_config *cfg, const struct cli_opt *o)
{
	uint32_t v32;
	uint64_t v64;
	if (o->size == sizeof(v32)) {
		memcpy(&v32, (const char *)cfg + o->off, sizeof(v32));
		return v32;
	}
	memcpy(&v64, (const char *)cfg + o->off, sizeof(v64));
	return v64;
}

static void test_rows(void)
{
	for (unsigned i = 0; i < cli_run_nopts; i++) {
		const struct cli_opt *o = &cli_run_opts[i];
		CHECK(o->name && o->name[0] && o->name[0] != '-');
		CHECK(o->help && o->help[0]);
		/* an option takes a value exactly when --help names one */
		bool no_value = o->kind == CLI_OPT_FLAG || o->kind == CLI_OPT_HELP;
		CHECK(no_value == (o->metavar == NULL));
		CHECK(o->kind != CLI_OPT_FN || o->parse);
		CHECK(o->kind == CLI_OPT_FN || o->kind == CLI_OPT_HELP || o->size);
		bool ranged = o->kind == CLI_OPT_U32 || o->kind == CLI_OPT_SIZE || o->kind == CLI_OPT_TIME;
		CHECK(!ranged || o->min <= o->max);
		CHECK(!(o->kind == CLI_OPT_SIZE || o->kind == CLI_OPT_TIME) || o->example);
		for (unsigned j = 0; j < i; j++) {
			CHECK(strcmp(o->name, cli_run_opts[j].name) != 0);
			CHECK(!o->short_name || o->short_name != cli_run_opts[j].short_name);
		}
	}
}

/* Each default is an argument the row's own parser takes. */
static void test_defaults(void)
{
	struct vm_config cfg;
	char err[256];
	for (unsigned i = 0; i < cli_run_nopts; i++) {
		const struct cli_opt *o = &cli_run_opts[i];
		if (!o->def)
			continue;
		vm_config_defaults(&cfg);
		int r = cli_opt_apply(o, o->def, &cfg, err, sizeof(err));
		CHECK_EQ(r, 0);
		if (r)
			fprintf(stderr, "--%s: default '%s': %s\n", o->name, o->def, err);
	}
	/* what the rows' defaults add up to */
	vm_config_defaults(&cfg);
	CHECK_EQ(cfg.ncpus, 2);
	CHECK_EQ(cfg.mem_bytes, 128ull << 20);
	CHECK(!strcmp(cfg.workload, "lockbench") && !strcmp(cfg.lock, "ticket") && !strcmp(cfg.policy, "pv"));
	CHECK(cfg.cs_cycles == 1000 && cfg.work_cycles == 10000 && cfg.spin_threshold == 4096);
	CHECK_EQ(cfg.duration_ms, 2000);
	CHECK(cfg.sched_mode == SCHED_MODE_VMM && cfg.vms == 1 && cfg.pcpus == 0);
	CHECK_EQ(cfg.spin_detect, SPIN_DETECT_YIELD);
	CHECK(cfg.slice_us == 6000 && cfg.ple_window_us == 50 && cfg.defer_us == 200 && cfg.halt_check_us == 1000);
	CHECK(cfg.safe_point && cfg.pv_spinlock && cfg.pv_shootdown && !cfg.quiet && !cfg.no_seccomp);
	CHECK(!cfg.kernel_path && !cfg.cmdline && !cfg.kvm_device && !cfg.firmware_path);
}

static bool line_has(const char *text, const char *what)
{
	for (const char *p = text; (p = strstr(p, what)); p++) {
		char after = p[strlen(what)];
		if (after == ' ' || after == '\n')
			return true;
	}
	return false;
}

static void test_help(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	CHECK(f != NULL);
	if (!f)
		return;
	cli_print_run_usage(f);
	fclose(f);
	for (unsigned i = 0; i < cli_run_nopts; i++) {
		const struct cli_opt *o = &cli_run_opts[i];
		char want[96];
		if (o->short_name)
			snprintf(want, sizeof(want), "-%c, --%s", o->short_name, o->name);
		else
			snprintf(want, sizeof(want), "--%s", o->name);
		CHECK(line_has(text, want));
		if (!line_has(text, want))
			fprintf(stderr, "--help lacks '%s'\n", want);
		if (o->def || o->def_help) {
			snprintf(want, sizeof(want), "(default %s)", o->def_help ? o->def_help : o->def);
			CHECK(strstr(text, want) != NULL);
		}
	}
	free(text);
}

/* The argument that means v for this row: sizes in K (the bounds are whole
 * KiB), times in ms. */
static void arg_for(const struct cli_opt *o, uint64_t v, char *buf, size_t len)
{
	if (o->kind == CLI_OPT_SIZE)
		snprintf(buf, len, "%lluK", (unsigned long long)(v / 1024));
	else if (o->kind == CLI_OPT_TIME)
		snprintf(buf, len, "%llums", (unsigned long long)v);
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
}

static void expect(const struct cli_opt *o, uint64_t v, bool accepted)
{
	struct vm_config cfg;
	char err[256], arg[40], name[64];
	arg_for(o, v, arg, sizeof(arg));
	snprintf(name, sizeof(name), "--%s", o->name);
	/* a Linux-only option is tried with a kernel; the file is read later */
	const char *const linux_args[] = { "-k", "/nonexistent/bzImage", name, arg, NULL };
	const char *const args[] = { name, arg, NULL };
	int r = parse(&cfg, err, o->flags & CLI_NEEDS_KERNEL ? linux_args : args);
	if (accepted) {
		CHECK_EQ(r, CLI_OK);
		CHECK_EQ(field(&cfg, o), v);
	} else {
		/* -EINVAL is what main turns into exit status 2 */
		CHECK_EQ(r, -EINVAL);
		CHECK(strstr(err, name) != NULL && strchr(err, '\n') == NULL);
	}
	if ((r == CLI_OK) != accepted)
		fprintf(stderr, "%s %s: r=%d %s\n", name, arg, r, err);
}

static void test_ranges(void)
{
	unsigned ranged = 0;
	for (unsigned i = 0; i < cli_run_nopts; i++) {
		const struct cli_opt *o = &cli_run_opts[i];
		if (o->kind != CLI_OPT_U32 && o->kind != CLI_OPT_SIZE && o->kind != CLI_OPT_TIME)
			continue;
		ranged++;
		if (o->kind == CLI_OPT_SIZE)
			CHECK(o->min % (2u << 20) == 0 && o->max % (2u << 20) == 0); /* no rounding at the bounds */
		expect(o, o->min, true);
		/* unbounded (--timeout): a large value stands for the top, one
		 * that passes the cross-checks (longer than --duration) */
		expect(o, o->max == UINT64_MAX ? 1000000000000ull : o->max, true);
		uint64_t step = o->kind == CLI_OPT_SIZE ? 1024 : 1;
		if (o->min >= step)
			expect(o, o->min - step, false);
		if (o->max <= UINT64_MAX - step && o->max < 1000000000000ull)
			expect(o, o->max + step, false);
	}
	CHECK(ranged >= 10);
}

/* The one message that names every Linux-only option, and --kernel lifts it. */
static void test_needs_kernel(void)
{
	struct vm_config cfg;
	char err[256];
	for (unsigned i = 0; i < cli_run_nopts; i++) {
		const struct cli_opt *o = &cli_run_opts[i];
		if (!(o->flags & CLI_NEEDS_KERNEL))
			continue;
		char name[64], arg[40];
		snprintf(name, sizeof(name), "--%s", o->name);
		arg_for(o, o->min, arg, sizeof(arg));
		CHECK_EQ(parse(&cfg, err, (const char *const[]){ name, arg, NULL }), -EINVAL);
		CHECK(strstr(err, "need --kernel") && strstr(err, name));
		CHECK_EQ(parse(&cfg, err, (const char *const[]){ "-k", "k", name, arg, NULL }), CLI_OK);
	}
	parse(&cfg, err, (const char *const[]){ "-i", "x", NULL });
	CHECK(!strcmp(err, "--initrd, --params, --disk and --halt-check-us need --kernel"));
}

static void test_on_off(void)
{
	struct vm_config cfg;
	char err[256];
	for (unsigned i = 0; i < cli_run_nopts; i++) {
		const struct cli_opt *o = &cli_run_opts[i];
		if (o->kind != CLI_OPT_ON_OFF)
			continue;
		char name[64];
		bool b;
		snprintf(name, sizeof(name), "--%s", o->name);
		CHECK_EQ(parse(&cfg, err, (const char *const[]){ name, "off", NULL }), CLI_OK);
		memcpy(&b, (char *)&cfg + o->off, sizeof(b));
		CHECK(!b);
		CHECK_EQ(parse(&cfg, err, (const char *const[]){ name, "yes", NULL }), CLI_OK);
		memcpy(&b, (char *)&cfg + o->off, sizeof(b));
		CHECK(b);
		CHECK_EQ(parse(&cfg, err, (const char *const[]){ name, "maybe", NULL }), -EINVAL);
		CHECK(strstr(err, name) && strstr(err, "neither on nor off"));
	}
}

/* A member's slice floor is on unless it says off; said "on" outside a
 * domain it is a mistake, "off" is harmless. */
static void test_slice_floor(void)
{
	struct vm_config cfg;
	char err[256];
	CHECK_EQ(parse(&cfg, err, (const char *const[]){ "--domain", "x", NULL }), CLI_OK);
	CHECK(cfg.slice_floor && !cfg.slice_floor_set);
	CHECK_EQ(parse(&cfg, err, (const char *const[]){ "--domain", "x", "--slice-floor", "off", NULL }), CLI_OK);
	CHECK(!cfg.slice_floor && cfg.slice_floor_set);
	CHECK_EQ(parse(&cfg, err, (const char *const[]){ "--slice-floor", "off", NULL }), CLI_OK);
	CHECK_EQ(parse(&cfg, err, (const char *const[]){ "--slice-floor", "on", NULL }), -EINVAL);
	CHECK(!strcmp(err, "--slice-floor on: only with --domain"));
	CHECK_EQ(parse(&cfg, err, (const char *const[]){ "--domain", "x", "--slice-floor", "maybe", NULL }), -EINVAL);
	CHECK(!strcmp(err, "--slice-floor: 'maybe' is neither on nor off"));
}

int main(void)
{
	RUN(test_rows);
	RUN(test_defaults);
	RUN(test_help);
	RUN(test_ranges);
	RUN(test_needs_kernel);
	RUN(test_on_off);
	RUN(test_slice_floor);
	return check_summary();
}
