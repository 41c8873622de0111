/* `vmm run`'s argv into a validated struct vm_config, driven by the option
 * table (options.c): getopt_long's arrays, the defaults and each value's
 * checks come from its rows; what spans several options is checked here. */
#include "vmm/cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/cli/options.h"
#include "vmm/cli/parse.h"

/* Unless told, a guest gets its duration plus a margin for boot and report. */
#define TIMEOUT_AUTO UINT64_MAX
#define TIMEOUT_MARGIN_MS 30000
/* getopt_long's value for a row without a short name: past every char. */
#define LONG_ONLY_BASE 256

/* The table's defaults are arguments like any other; test_cli_table checks
 * that each one parses, so a failure here cannot happen. */
void vm_config_defaults(struct vm_config *cfg)
{
	char err[256];
	memset(cfg, 0, sizeof(*cfg));
	for (unsigned i = 0; i < cli_run_nopts; i++)
		if (cli_run_opts[i].def)
			(void)cli_opt_apply(&cli_run_opts[i], cli_run_opts[i].def, cfg, err, sizeof(err));
	cfg->timeout_ms = TIMEOUT_AUTO;
	cfg->weight = 100; /* DOM_WEIGHT_DEFAULT; weight_set says whether it was given */
	cfg->slice_floor = true; /* a member's; slice_floor_set says whether it was given */
}

static void store(struct vm_config *cfg, const struct cli_opt *o, uint64_t v)
{
	uint32_t v32 = (uint32_t)v;
	memcpy((char *)cfg + o->off, o->size == sizeof(v32) ? (void *)&v32 : (void *)&v, o->size);
}

/* "4M", "3G": the bounds in a size error, as a user writes them. */
static const char *size_text(uint64_t b, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;
	while (u < 3 && b && b % 1024 == 0) {
		b /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%llu", (unsigned long long)b);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)b, units[u]);
	return buf;
}

/* "1ms", "1h": the bounds in a time error. */
static const char *time_text(uint64_t ms, char *buf, size_t len)
{
	if (ms && ms % 3600000 == 0)
		snprintf(buf, len, "%lluh", (unsigned long long)(ms / 3600000));
	else if (ms && ms % 1000 == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(ms / 1000));
	else
		snprintf(buf, len, "%llums", (unsigned long long)ms);
	return buf;
}

static int apply_size(const struct cli_opt *o, const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	uint64_t v;
	char lo[24], hi[24];
	if (parse_size(arg, &v))
		return parse_fail(err, errlen, "--%s: '%s' is not a size (e.g. %s)", o->name, arg, o->example);
	if (v < o->min || v > o->max)
		return parse_fail(err, errlen, "--%s: %s is outside %s..%s", o->name, arg,
				  size_text(o->min, lo, sizeof(lo)), size_text(o->max, hi, sizeof(hi)));
	/* Guest RAM: KVM wants whole pages; 2M keeps huge pages. */
	store(cfg, o, (v + (2ull << 20) - 1) & ~((2ull << 20) - 1));
	return 0;
}

static int apply_time(const struct cli_opt *o, const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	uint64_t v;
	char lo[24], hi[24];
	if (!parse_time_ms(arg, &v) && v >= o->min && v <= o->max) {
		store(cfg, o, v);
		return 0;
	}
	if (o->min == 0 && o->max == UINT64_MAX)
		return parse_fail(err, errlen, "--%s: '%s' is not a time (e.g. %s)", o->name, arg, o->example);
	return parse_fail(err, errlen, "--%s: '%s' is not a time from %s to %s (e.g. %s)", o->name, arg,
			  time_text(o->min, lo, sizeof(lo)), time_text(o->max, hi, sizeof(hi)), o->example);
}

int cli_opt_apply(const struct cli_opt *o, const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	uint64_t v;
	bool b;
	switch (o->kind) {
	case CLI_OPT_U32:
		if (parse_u64(arg, o->min, o->max, &v))
			return parse_fail(err, errlen, "--%s: '%s' is not a whole number from %llu to %llu", o->name,
					  arg, (unsigned long long)o->min, (unsigned long long)o->max);
		store(cfg, o, v);
		return 0;
	case CLI_OPT_SIZE:
		return apply_size(o, arg, cfg, err, errlen);
	case CLI_OPT_TIME:
		return apply_time(o, arg, cfg, err, errlen);
	case CLI_OPT_ON_OFF:
		if (parse_on_off(arg, &b))
			return parse_fail(err, errlen, "--%s: '%s' is neither on nor off", o->name, arg);
		memcpy((char *)cfg + o->off, &b, sizeof(b));
		return 0;
	case CLI_OPT_STRING:
		memcpy((char *)cfg + o->off, &arg, sizeof(arg));
		return 0;
	case CLI_OPT_FLAG:
		b = true;
		memcpy((char *)cfg + o->off, &b, sizeof(b));
		return 0;
	case CLI_OPT_FN:
		return o->parse(arg, cfg, err, errlen);
	case CLI_OPT_HELP:
		break;
	}
	return parse_fail(err, errlen, "--%s: takes no value", o->name);
}

/* getopt_long's view of the table: a short name is its own value. */
static void getopt_arrays(struct option *lo, char *shorts)
{
	char *s = shorts;
	*s++ = ':'; /* a missing value reads ':', not '?' */
	for (unsigned i = 0; i < cli_run_nopts; i++) {
		const struct cli_opt *o = &cli_run_opts[i];
		int has_arg = o->metavar ? required_argument : no_argument;
		lo[i] = (struct option){ o->name, has_arg, NULL, o->short_name ? o->short_name : LONG_ONLY_BASE + (int)i };
		if (o->short_name) {
			*s++ = o->short_name;
			if (has_arg)
				*s++ = ':';
		}
	}
	*s = '\0';
	lo[cli_run_nopts] = (struct option){ 0 };
}

static const struct cli_opt *row_of(int c)
{
	if (c >= LONG_ONLY_BASE)
		return c - LONG_ONLY_BASE < (int)cli_run_nopts ? &cli_run_opts[c - LONG_ONLY_BASE] : NULL;
	for (unsigned i = 0; i < cli_run_nopts; i++)
		if (cli_run_opts[i].short_name && cli_run_opts[i].short_name == c)
			return &cli_run_opts[i];
	return NULL;
}

/* "--initrd, --params, --disk and --halt-check-us need --kernel" */
static int needs_kernel_fail(char *err, size_t errlen)
{
	char list[256];
	size_t used = 0;
	unsigned n = 0, total = 0;
	for (unsigned i = 0; i < cli_run_nopts; i++)
		total += !!(cli_run_opts[i].flags & CLI_NEEDS_KERNEL);
	list[0] = '\0';
	for (unsigned i = 0; i < cli_run_nopts && used < sizeof(list); i++) {
		if (!(cli_run_opts[i].flags & CLI_NEEDS_KERNEL))
			continue;
		n++;
		int w = snprintf(list + used, sizeof(list) - used, "%s--%s",
				 n == 1 ? "" : n == total ? " and " : ", ", cli_run_opts[i].name);
		used += w > 0 ? (size_t)w : 0;
	}
	return parse_fail(err, errlen, "%s need%s --kernel", list, total == 1 ? "s" : "");
}

/* What no single option can check: the guest kind decides the rest. */
static int check_combination(struct vm_config *cfg, bool kernel_only_seen, char *err, size_t errlen)
{
	if (!cfg->kvm_device) {
		/* The environment reaches `vmm run`s that scripts and `vmm bench` start. */
		const char *env = getenv(VMM_KVM_DEVICE_ENV);
		cfg->kvm_device = env && *env ? env : VMM_KVM_DEVICE_DEFAULT;
	}
	/* a scheduling domain member is one VM on the domain's CPUs, under our scheduler */
	if (cfg->domain) {
		if (cfg->vms > 1)
			return parse_fail(err, errlen, "--vms: a domain member is one VM (start one vmm per VM)");
		if (cfg->sched_mode == SCHED_MODE_HOST)
			return parse_fail(err, errlen, "--sched host: a domain member is scheduled by the domain");
		if (cfg->pcpus)
			return parse_fail(err, errlen, "--pcpus: the domain owns the CPUs (vmm domain start NAME --pcpus N)");
	} else if (cfg->weight_set || cfg->vm_name || (cfg->slice_floor_set && cfg->slice_floor)) {
		return parse_fail(err, errlen, "%s: only with --domain",
				  cfg->vm_name ? "--name" : cfg->weight_set ? "--weight" : "--slice-floor on");
	}
	/* Linux guests (vmm/linux/vm_linux.c) */
	if (cfg->kernel_path) {
		if (cfg->firmware_path)
			return parse_fail(err, errlen, "--kernel and --firmware exclude each other");
		if (cfg->vms > 1)
			return parse_fail(err, errlen, "--vms: a Linux guest runs alone (it owns the console)");
		if (!cfg->cmdline)
			cfg->cmdline = "console=ttyS0";
		/* Safe points are a contract with our firmware's locks (the shared
		 * page); Linux never reads it, so a deferral would only delay. */
		cfg->safe_point = false;
		if (cfg->timeout_ms == TIMEOUT_AUTO)
			cfg->timeout_ms = 0; /* an OS runs until it powers off */
		return CLI_OK;
	}
	if (kernel_only_seen)
		return needs_kernel_fail(err, errlen);
	if (cfg->timeout_ms == TIMEOUT_AUTO)
		cfg->timeout_ms = 2ull * cfg->duration_ms + TIMEOUT_MARGIN_MS;
	else if (cfg->timeout_ms && cfg->timeout_ms <= cfg->duration_ms && !cfg->firmware_path)
		return parse_fail(err, errlen, "--timeout (%llums) must be longer than --duration (%ums)",
				  (unsigned long long)cfg->timeout_ms, cfg->duration_ms);
	return CLI_OK;
}

int cli_parse_run(int argc, char **argv, struct vm_config *cfg, char *err, size_t errlen)
{
	struct option lo[CLI_MAX_OPTS + 1];
	char shorts[2 * CLI_MAX_OPTS + 2];
	bool kernel_only_seen = false;
	int c;

	getopt_arrays(lo, shorts);
	/* 0, not 1: glibc then also forgets a half-read option cluster ("-qc")
	 * of an earlier call, which pointed into that call's (maybe freed) argv */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		if (c == ':')
			return parse_fail(err, errlen, "option '%s' needs a value", argv[optind - 1]);
		const struct cli_opt *o = row_of(c);
		if (!o)
			return parse_fail(err, errlen, "unknown option '%s' (see vmm run --help)", argv[optind - 1]);
		if (o->kind == CLI_OPT_HELP)
			return CLI_HELP;
		int r = cli_opt_apply(o, optarg, cfg, err, errlen);
		if (r)
			return r;
		kernel_only_seen |= (o->flags & CLI_NEEDS_KERNEL) != 0;
	}
	if (optind < argc)
		return parse_fail(err, errlen, "unexpected argument '%s' (see vmm run --help)", argv[optind]);
	return check_combination(cfg, kernel_only_seen, err, errlen);
}
