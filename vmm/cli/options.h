/*
 * The options of `vmm run` as data: one row per option. The parser
 * (cli.c), `vmm run --help` (usage.c) and the defaults of struct vm_config
 * all come from this one table, so an option cannot be parsed without being
 * documented, nor documented with a default it does not have.
 */
#ifndef VMM_CLI_OPTIONS_H
#define VMM_CLI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "vmm/config.h"

enum cli_kind {
	CLI_OPT_U32,    /* a whole number in [min, max] */
	CLI_OPT_SIZE,   /* bytes (parse_size) in [min, max]; only guest RAM is one */
	CLI_OPT_TIME,   /* milliseconds (parse_time_ms) in [min, max] */
	CLI_OPT_ON_OFF, /* on/off, 1/0, yes/no into a bool */
	CLI_OPT_STRING, /* the argument itself, kept as a pointer into argv */
	CLI_OPT_FLAG,   /* no argument: sets a bool */
	CLI_OPT_FN,     /* the row's own parse function */
	CLI_OPT_HELP,   /* no argument: asks for the usage text */
};

/* Only a Linux guest takes it: refused without --kernel. */
#define CLI_NEEDS_KERNEL (1u << 0)

/* The most rows the getopt arrays built from the table can hold. */
#define CLI_MAX_OPTS 64

struct cli_opt {
	const char *name;   /* the long name, without "--" */
	char short_name;    /* 0: none */
	const char *metavar; /* the argument in --help; NULL: takes none */
	enum cli_kind kind;
	uint64_t min, max;  /* CLI_OPT_U32, CLI_OPT_SIZE, CLI_OPT_TIME */
	size_t off, size;   /* the vm_config field (CLI_OPT_FN rows store themselves) */
	int (*parse)(const char *arg, struct vm_config *cfg, char *err, size_t errlen);
	const char *def;      /* the default, as an argument that vm_config_defaults parses */
	const char *def_help; /* what --help says the default is, where def cannot say it */
	const char *help;     /* one or more lines ('\n'); the choices and default follow */
	const char *const *(*choices)(void); /* names listed after the help */
	const char *example;  /* CLI_OPT_SIZE, CLI_OPT_TIME: shown in the error message */
	const char *section;  /* a heading --help prints before this row */
	const char *note;     /* lines --help prints after this row */
	unsigned flags;       /* CLI_NEEDS_KERNEL */
};

extern const struct cli_opt cli_run_opts[];
extern const unsigned cli_run_nopts;

/* One row's argument into cfg: 0, or -EINVAL with one line naming the
 * option in err. */
int cli_opt_apply(const struct cli_opt *o, const char *arg, struct vm_config *cfg, char *err,
		  size_t errlen);

#endif
