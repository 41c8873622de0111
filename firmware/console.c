/*
 * A tiny printf. Also runs at CPL0 (fault.c), where every instruction may
 * be emulated: keep it simple, and the build forbids SSE (firmware.mk).
 */
#include <stdbool.h>
#include <stdint.h>

#include "firmware/console.h"
#include "firmware/hypercall.h"

struct out {
	char *buf;
	size_t size, len;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void put_str(struct out *o, const char *s)
{
	if (!s)
		s = "(null)";
	while (*s)
		put(o, *s++);
}

static void put_num(struct out *o, uint64_t v, unsigned base, bool neg)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (neg)
		put(o, '-');
	while (n)
		put(o, tmp[--n]);
}

size_t fw_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = { buf, size, 0 };

	for (; *fmt; fmt++) {
		int longs = 0;

		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		fmt++;
		while (*fmt == 'l' || *fmt == 'z') {
			longs += *fmt == 'z' ? 2 : 1;
			fmt++;
		}
		switch (*fmt) {
		case 'd':
		case 'i': {
			int64_t v = longs ? va_arg(ap, long) : va_arg(ap, int);

			put_num(&o, v < 0 ? -(uint64_t)v : (uint64_t)v, 10, v < 0);
			break;
		}
		case 'u':
		case 'x': {
			uint64_t v = longs ? va_arg(ap, unsigned long) : va_arg(ap, unsigned int);

			put_num(&o, v, *fmt == 'x' ? 16 : 10, false);
			break;
		}
		case 'p':
			put_str(&o, "0x");
			put_num(&o, (uintptr_t)va_arg(ap, void *), 16, false);
			break;
		case 's':
			put_str(&o, va_arg(ap, const char *));
			break;
		case 'c':
			put(&o, (char)va_arg(ap, int));
			break;
		case '%':
			put(&o, '%');
			break;
		case '\0':
			fmt--; /* a lone '%' at the end */
			break;
		default:
			put(&o, '%');
			put(&o, *fmt);
			break;
		}
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return o.len < size ? o.len : (size ? size - 1 : 0);
}

size_t fw_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	n = fw_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

void fw_puts(const char *s, size_t len)
{
	fw_hc(VMM_HC_CONSOLE_WRITE, (uintptr_t)s, len, 0, 0);
}

void fw_printf(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	n = fw_vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fw_puts(buf, n);
}
