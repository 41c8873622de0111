/*
 * The parsers' way to fail: one call that writes the reason into the
 * caller's buffer and returns the error code, so each check reads
 * `return errmsg(why, whylen, -EINVAL, "...", ...);`. The message is what
 * the user sees (exit status 2), so printf checks every format.
 */
#ifndef VMM_LIB_ERRMSG_H
#define VMM_LIB_ERRMSG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static inline int errmsg(char *buf, size_t len, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static inline int errmsg(char *buf, size_t len, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return code;
}

#endif
