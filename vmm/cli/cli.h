/* Command-line parsing for `vmm run`: argv -> validated struct vm_config. */
#ifndef VMM_CLI_H
#define VMM_CLI_H

#include <stddef.h>
#include <stdio.h>
#include "vmm/config.h"

enum { CLI_OK = 0, CLI_HELP = 1 };

/*
 * Parses the options after "run". Returns CLI_OK, CLI_HELP (usage was asked
 * for), or -EINVAL with one line describing the problem in err.
 */
int cli_parse_run(int argc, char **argv, struct vm_config *cfg, char *err, size_t errlen);
void cli_print_run_usage(FILE *out);

#endif
