/*
 * The host terminal as a Linux guest's serial console: raw while the guest
 * runs (no echo, no line editing, no signals from keys: Ctrl-C goes to the
 * guest), restored on every way out (the run's end, exit(), a fatal signal;
 * SIGINT/SIGTERM already end the run through its event loop). Typed bytes go
 * to the UART; Ctrl-a x quits, Ctrl-a Ctrl-a sends one Ctrl-a (as lkvm).
 */
#ifndef VMM_LINUX_CONSOLE_H
#define VMM_LINUX_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONSOLE_ESCAPE 0x01 /* Ctrl-a */

/* Raw mode on stdin if it is a terminal; true if it was changed. */
bool console_raw_enter(void);
/* Restores the saved mode (async-signal-safe; idempotent). */
void console_raw_leave(void);

struct console_escape {
	bool pending; /* Ctrl-a seen, its partner not yet */
};

/* Filters typed bytes: out gets what the guest should see (at most 2*n
 * bytes); returns its length; *quit becomes true at Ctrl-a x. */
size_t console_filter(struct console_escape *e, const uint8_t *in, size_t n, uint8_t *out, bool *quit);

#endif
