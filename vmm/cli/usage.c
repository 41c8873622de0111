/* `vmm run --help`, written from the option table (options.c). */
#include "vmm/cli/cli.h"

#include <string.h>

#include "vmm/cli/options.h"
#include "vmm/cli/workloads.h"

/* Where the help text starts; longer option names push it one space right. */
#define HELP_COL 26

/* Text with '\n's: the first line goes on, the others start at HELP_COL. */
static void print_lines(FILE *out, const char *text, bool first_continues)
{
	for (bool first = true; *text; first = false) {
		size_t n = strcspn(text, "\n");
		if (!first || !first_continues)
			fprintf(out, "\n%*s", HELP_COL, "");
		fprintf(out, "%.*s", (int)n, text);
		text += n + (text[n] == '\n');
	}
}

static void print_row(FILE *out, const struct cli_opt *o)
{
	char left[64], names[256];
	snprintf(left, sizeof(left), "  %s%c%s--%s%s%s", o->short_name ? "-" : " ",
		 o->short_name ? o->short_name : ' ', o->short_name ? ", " : "  ", o->name,
		 o->metavar ? " " : "", o->metavar ? o->metavar : "");
	fprintf(out, "%-*s ", HELP_COL - 1, left);
	print_lines(out, o->help, true);
	if (o->choices)
		fprintf(out, " %s", vmm_name_list(o->choices(), names, sizeof(names)));
	if (o->def_help || o->def)
		fprintf(out, " (default %s)", o->def_help ? o->def_help : o->def);
	if (o->note)
		print_lines(out, o->note, false);
	fputc('\n', out);
}

void cli_print_run_usage(FILE *out)
{
	fprintf(out, "usage: vmm run [options]\n");
	for (unsigned i = 0; i < cli_run_nopts; i++) {
		if (cli_run_opts[i].section)
			fprintf(out, "%s:\n", cli_run_opts[i].section);
		print_row(out, &cli_run_opts[i]);
	}
}
