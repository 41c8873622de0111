/* Console output through VMM_HC_CONSOLE_WRITE: one exit per call. */
#ifndef FW_CONSOLE_H
#define FW_CONSOLE_H

#include <stdarg.h>
#include <stddef.h>

#define FW_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* Formats %s %c %d %i %u %x %p %% with l/ll/z length modifiers into buf
 * (always NUL-terminated when size > 0); returns the length written. */
size_t fw_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
size_t fw_snprintf(char *buf, size_t size, const char *fmt, ...) FW_PRINTF(3, 4);

void fw_puts(const char *s, size_t len);
/* At most 255 bytes per call, written in one hypercall so lines from
 * different vCPUs never interleave. */
void fw_printf(const char *fmt, ...) FW_PRINTF(1, 2);

#endif
