/* Parsers for command-line values; each returns 0 or -EINVAL/-ERANGE. */
#ifndef VMM_PARSE_H
#define VMM_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "512" (MiB, as lkvm), "64K", "128M", "2G", "1GiB". */
int parse_size(const char *s, uint64_t *out);
/* Decimal integer within [min, max]. */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* "2" or "2s" (seconds), "1.5s", "250ms"; result in milliseconds. */
int parse_time_ms(const char *s, uint64_t *out_ms);

/* "on"/"1"/"yes" or "off"/"0"/"no". */
int parse_on_off(const char *s, bool *out);

/* Writes one line describing a bad value into err; returns -EINVAL. */
int parse_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
