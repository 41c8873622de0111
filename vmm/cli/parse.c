#include "vmm/cli/parse.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* strtoull accepts "-1" and leading spaces; a size never has either. */
static int parse_digits(const char *s, uint64_t *out, char **end)
{
	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	uint64_t v;
	int r = parse_digits(s, &v, &end);
	if (r)
		return r;
	if (*end)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_size(const char *s, uint64_t *out)
{
	char *end;
	uint64_t v;
	int r = parse_digits(s, &v, &end);
	if (r)
		return r;
	unsigned shift;
	switch (toupper((unsigned char)*end)) {
	case '\0': shift = 20; break;
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	case 'T': shift = 40; end++; break;
	default: return -EINVAL;
	}
	if (*end && strcasecmp(end, "iB") && strcasecmp(end, "B"))
		return -EINVAL;
	if (v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

int parse_time_ms(const char *s, uint64_t *out_ms)
{
	if (!s || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
		return -EINVAL;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -EINVAL;
	double scale;
	if (!*end || !strcmp(end, "s"))
		scale = 1000.0;
	else if (!strcmp(end, "ms"))
		scale = 1.0;
	else if (!strcmp(end, "m") || !strcmp(end, "min"))
		scale = 60000.0;
	else
		return -EINVAL;
	double ms = v * scale;
	if (ms > 1e15)
		return -ERANGE;
	*out_ms = (uint64_t)(ms + 0.5);
	return 0;
}

int parse_on_off(const char *s, bool *out)
{
	if (!strcmp(s, "on") || !strcmp(s, "1") || !strcmp(s, "yes"))
		*out = true;
	else if (!strcmp(s, "off") || !strcmp(s, "0") || !strcmp(s, "no"))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

int parse_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}
