/* libFuzzer: `vmm run`'s option parser (vmm/cli/cli.c) on argv made from the
 * input split at NUL bytes, and the value parsers (vmm/cli/parse.c) on the whole
 * input as one string. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/cli/cli.h"
#include "vmm/cli/parse.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';

	uint64_t v;
	(void)parse_size(buf, &v);
	(void)parse_time_ms(buf, &v);
	(void)parse_u64(buf, 1, 4096, &v);

	char *argv[MAX_ARGS + 2];
	int argc = 0;
	argv[argc++] = "run";
	for (size_t at = 0; at <= size && argc < MAX_ARGS; at += strlen(buf + at) + 1)
		argv[argc++] = buf + at;
	argv[argc] = NULL;
	struct vm_config cfg;
	char err[256];
	vm_config_defaults(&cfg);
	(void)cli_parse_run(argc, argv, &cfg, err, sizeof(err));
	free(buf);
	return 0;
}
