#include "vmm/linux/linux_console.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

static struct termios saved;
static volatile sig_atomic_t raw_on;

void console_raw_leave(void)
{
	if (raw_on) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
		raw_on = 0;
	}
}

static void on_fatal(int sig)
{
	console_raw_leave();
	signal(sig, SIG_DFL);
	raise(sig);
}

bool console_raw_enter(void)
{
	static bool hooked;
	if (raw_on || !isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved) < 0)
		return false;
	if (!hooked) {
		hooked = true;
		atexit(console_raw_leave);
		static const int fatal[] = { SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGSYS };
		for (unsigned i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
			struct sigaction old;
			/* only where nobody (e.g. the seccomp SIGSYS reporter) handles it already */
			if (sigaction(fatal[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
				signal(fatal[i], on_fatal);
		}
	}
	struct termios t = saved;
	t.c_iflag &= (tcflag_t)~(ICRNL | IXON | INLCR | IGNCR);
	t.c_lflag &= (tcflag_t)~(ICANON | ECHO | ISIG | IEXTEN);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) < 0)
		return false;
	raw_on = 1;
	return true;
}

size_t console_filter(struct console_escape *e, const uint8_t *in, size_t n, uint8_t *out, bool *quit)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = in[i];
		if (e->pending) {
			e->pending = false;
			if (c == 'x' || c == 'X') {
				*quit = true;
				return o;
			}
			if (c != CONSOLE_ESCAPE)
				out[o++] = CONSOLE_ESCAPE;
			out[o++] = c;
		} else if (c == CONSOLE_ESCAPE) {
			e->pending = true;
		} else {
			out[o++] = c;
		}
	}
	return o;
}
