#ifndef VMM_FILE_H
#define VMM_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Reads a whole regular file of at most max bytes; returns 0 or -errno (-EFBIG if larger). */
int read_whole_file(const char *path, size_t max, uint8_t **buf, size_t *len);

#endif
