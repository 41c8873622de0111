/* Option and value parsing: every malformed input is refused with a message. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "vmm/cli/cli.h"
#include "vmm/cli/parse.h"

static int run_cli(struct vm_config *cfg, char *err, const char *const *args)
{
	char *argv[32];
	int argc = 0;
	argv[argc++] = "run";
	for (; *args; args++)
		argv[argc++] = (char *)*args;
	argv[argc] = NULL;
	vm_config_defaults(cfg);
	err[0] = '\0';
	return cli_parse_run(argc, argv, cfg, err, 256);
}

#define ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })

static void test_sizes(void)
{
	uint64_t v;
	CHECK(parse_size("512", &v) == 0 && v == 512ull << 20);
	CHECK(parse_size("64K", &v) == 0 && v == 64ull << 10);
	CHECK(parse_size("128m", &v) == 0 && v == 128ull << 20);
	CHECK(parse_size("2G", &v) == 0 && v == 2ull << 30);
	CHECK(parse_size("1GiB", &v) == 0 && v == 1ull << 30);
	CHECK(parse_size("1GB", &v) == 0 && v == 1ull << 30);
	CHECK_EQ(parse_size("", &v), -EINVAL);
	CHECK_EQ(parse_size("-1M", &v), -EINVAL);
	CHECK_EQ(parse_size(" 1M", &v), -EINVAL);
	CHECK_EQ(parse_size("12Q", &v), -EINVAL);
	CHECK_EQ(parse_size("1MX", &v), -EINVAL);
	CHECK_EQ(parse_size("abc", &v), -EINVAL);
	CHECK_EQ(parse_size("99999999999999999999", &v), -ERANGE);
	CHECK_EQ(parse_size("17179869184T", &v), -ERANGE);
}

static void test_times(void)
{
	uint64_t ms;
	CHECK(parse_time_ms("2", &ms) == 0 && ms == 2000);
	CHECK(parse_time_ms("1.5s", &ms) == 0 && ms == 1500);
	CHECK(parse_time_ms("250ms", &ms) == 0 && ms == 250);
	CHECK(parse_time_ms("0", &ms) == 0 && ms == 0);
	CHECK_EQ(parse_time_ms("-1", &ms), -EINVAL);
	CHECK_EQ(parse_time_ms("2h", &ms), -EINVAL);
	CHECK_EQ(parse_time_ms("xyz", &ms), -EINVAL);
	CHECK_EQ(parse_time_ms("1e30", &ms), -ERANGE);
}

static void test_u64(void)
{
	uint64_t v;
	CHECK(parse_u64("7", 1, 10, &v) == 0 && v == 7);
	CHECK_EQ(parse_u64("0", 1, 10, &v), -ERANGE);
	CHECK_EQ(parse_u64("11", 1, 10, &v), -ERANGE);
	CHECK_EQ(parse_u64("3x", 1, 10, &v), -EINVAL);
	CHECK_EQ(parse_u64("", 1, 10, &v), -EINVAL);
}

static void test_cli(void)
{
	struct vm_config cfg;
	char err[256];

	CHECK_EQ(run_cli(&cfg, err, ARGS("-c", "4", "-m", "256", "--lock", "tas", "--duration", "500ms")), CLI_OK);
	CHECK_EQ(cfg.ncpus, 4);
	CHECK_EQ(cfg.mem_bytes, 256ull << 20);
	CHECK(!strcmp(cfg.lock, "tas"));
	CHECK_EQ(cfg.duration_ms, 500);
	CHECK(cfg.timeout_ms > cfg.duration_ms); /* automatic timeout */

	CHECK_EQ(run_cli(&cfg, err, ARGS("--cpus=8", "--mem=1G", "--json", "/tmp/x.json", "--timeout", "0")), CLI_OK);
	CHECK_EQ(cfg.ncpus, 8);
	CHECK_EQ(cfg.timeout_ms, 0);
	CHECK(!strcmp(cfg.json_path, "/tmp/x.json"));

	CHECK_EQ(run_cli(&cfg, err, ARGS("-m", "5000K")), CLI_OK);
	CHECK_EQ(cfg.mem_bytes, 6ull << 20); /* rounded up to 2 MiB */

	CHECK_EQ(run_cli(&cfg, err, ARGS("--help")), CLI_HELP);

	CHECK_EQ(run_cli(&cfg, err, ARGS("-c", "0")), -EINVAL);
	CHECK(strstr(err, "--cpus") != NULL);
	CHECK_EQ(run_cli(&cfg, err, ARGS("-m", "lots")), -EINVAL);
	CHECK(strstr(err, "--mem") != NULL);
	CHECK_EQ(run_cli(&cfg, err, ARGS("-m", "1K")), -EINVAL);
	CHECK_EQ(run_cli(&cfg, err, ARGS("--workload", "ebizzy")), -EINVAL);
	CHECK(strstr(err, "unknown workload 'ebizzy'") && strstr(err, "lockbench"));
	CHECK_EQ(run_cli(&cfg, err, ARGS("--lock", "rwlock")), -EINVAL);
	CHECK(strstr(err, "unknown lock kind") != NULL);
	CHECK_EQ(run_cli(&cfg, err, ARGS("--frobnicate")), -EINVAL);
	CHECK(strstr(err, "--frobnicate") != NULL);
	CHECK_EQ(run_cli(&cfg, err, ARGS("-c")), -EINVAL);
	CHECK(strstr(err, "needs a value") != NULL);
	CHECK_EQ(run_cli(&cfg, err, ARGS("extra")), -EINVAL);
	CHECK_EQ(run_cli(&cfg, err, ARGS("--duration", "5s", "--timeout", "2s")), -EINVAL);
	CHECK(strstr(err, "--timeout") != NULL);
	CHECK_EQ(run_cli(&cfg, err, ARGS("--duration", "0")), -EINVAL);
	CHECK_EQ(run_cli(&cfg, err, ARGS("--cs-cycles", "-5")), -EINVAL);
	/* every message is one line */
	CHECK(strchr(err, '\n') == NULL);
}

int main(void)
{
	RUN(test_sizes);
	RUN(test_times);
	RUN(test_u64);
	RUN(test_cli);
	return check_summary();
}
