#include "vmm/linux/aml.h"

#include <string.h>

#include "lib/bytes.h"

enum {
	ZERO_OP = 0x00, ONE_OP = 0x01, NAME_OP = 0x08, BYTE_PREFIX = 0x0a, WORD_PREFIX = 0x0b,
	DWORD_PREFIX = 0x0c, STRING_PREFIX = 0x0d, QWORD_PREFIX = 0x0e, SCOPE_OP = 0x10,
	BUFFER_OP = 0x11, PACKAGE_OP = 0x12, EXT_OP = 0x5b, DEVICE_OP = 0x82,
	ROOT_CHAR = 0x5c, PARENT_CHAR = 0x5e, DUAL_NAME = 0x2e, MULTI_NAME = 0x2f,
};

#define PKG_RESERVE 4 /* the longest PkgLength; trimmed in aml_end */

void aml_init(struct aml *a, uint8_t *buf, size_t cap)
{
	*a = (struct aml){ .buf = buf, .cap = cap };
}

static void aml_bytes(struct aml *a, const void *p, size_t n)
{
	if (a->overflow || n > a->cap - a->len) {
		a->overflow = true;
		return;
	}
	memcpy(a->buf + a->len, p, n);
	a->len += n;
}

static void aml_byte(struct aml *a, uint8_t b)
{
	aml_bytes(a, &b, 1);
}

static void le(struct aml *a, uint64_t v, unsigned n)
{
	uint8_t b[8];
	put_le(b, v, n);
	aml_bytes(a, b, n);
}

static bool seg_char(char c, bool first)
{
	return c == '_' || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
}

void aml_namestring(struct aml *a, const char *p)
{
	if (*p == '\\') {
		aml_byte(a, ROOT_CHAR);
		p++;
	}
	while (*p == '^') {
		aml_byte(a, PARENT_CHAR);
		p++;
	}
	char segs[255][4];
	unsigned n = 0;
	while (*p) {
		if (n == 255) {
			a->bad_name = true;
			return;
		}
		unsigned k = 0;
		while (*p && *p != '.') {
			if (k == 4 || !seg_char(*p, k == 0)) {
				a->bad_name = true;
				return;
			}
			segs[n][k++] = *p++;
		}
		if (!k) {
			a->bad_name = true;
			return;
		}
		while (k < 4)
			segs[n][k++] = '_';
		n++;
		if (*p == '.' && !*++p) {
			a->bad_name = true;
			return;
		}
	}
	if (n == 0)
		aml_byte(a, 0); /* NullName */
	else if (n == 2)
		aml_byte(a, DUAL_NAME);
	else if (n > 2) {
		aml_byte(a, MULTI_NAME);
		aml_byte(a, (uint8_t)n);
	}
	aml_bytes(a, segs, 4 * (size_t)n);
}

void aml_integer(struct aml *a, uint64_t v)
{
	if (v == 0)
		aml_byte(a, ZERO_OP);
	else if (v == 1)
		aml_byte(a, ONE_OP);
	else if (v <= 0xff) {
		aml_byte(a, BYTE_PREFIX);
		le(a, v, 1);
	} else if (v <= 0xffff) {
		aml_byte(a, WORD_PREFIX);
		le(a, v, 2);
	} else if (v <= 0xffffffffull) {
		aml_byte(a, DWORD_PREFIX);
		le(a, v, 4);
	} else {
		aml_byte(a, QWORD_PREFIX);
		le(a, v, 8);
	}
}

void aml_string(struct aml *a, const char *s)
{
	aml_byte(a, STRING_PREFIX);
	aml_bytes(a, s, strlen(s) + 1);
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

void aml_eisaid(struct aml *a, const char *id)
{
	/* three letters in 5 bits each, then four hex digits, stored big-endian */
	if (strlen(id) != 7) {
		a->bad_name = true;
		return;
	}
	uint32_t v = 0;
	for (int i = 0; i < 3; i++) {
		if (id[i] < 'A' || id[i] > 'Z') {
			a->bad_name = true;
			return;
		}
		v = v << 5 | (uint32_t)(id[i] - 0x40);
	}
	for (int i = 3; i < 7; i++) {
		int h = hexval(id[i]);
		if (h < 0) {
			a->bad_name = true;
			return;
		}
		v = v << 4 | (uint32_t)h;
	}
	aml_byte(a, DWORD_PREFIX);
	uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
	aml_bytes(a, b, 4);
}

void aml_name(struct aml *a, const char *path)
{
	aml_byte(a, NAME_OP);
	aml_namestring(a, path);
}

size_t aml_pkglength(size_t body, uint8_t out[4])
{
	/* The length counts its own bytes: one byte holds up to 63 in all;
	 * longer ones put the low nibble in the lead byte, then whole bytes. */
	for (size_t n = 1; n <= 4; n++) {
		size_t total = body + n;
		size_t max = n == 1 ? 0x3f : ((size_t)1 << (4 + 8 * (n - 1))) - 1;
		if (total > max)
			continue;
		if (n == 1) {
			out[0] = (uint8_t)total;
		} else {
			out[0] = (uint8_t)((n - 1) << 6 | (total & 0xf));
			for (size_t i = 1; i < n; i++)
				out[i] = (uint8_t)(total >> (4 + 8 * (i - 1)));
		}
		return n;
	}
	return 0;
}

static size_t open_pkg(struct aml *a)
{
	size_t at = a->len;
	static const uint8_t zero[PKG_RESERVE];
	aml_bytes(a, zero, PKG_RESERVE);
	return at;
}

void aml_end(struct aml *a, size_t at)
{
	if (a->overflow || at + PKG_RESERVE > a->len)
		return;
	size_t body = a->len - at - PKG_RESERVE;
	uint8_t pl[4];
	size_t n = aml_pkglength(body, pl);
	if (!n) {
		a->overflow = true;
		return;
	}
	memmove(a->buf + at + n, a->buf + at + PKG_RESERVE, body);
	memcpy(a->buf + at, pl, n);
	a->len = at + n + body;
}

size_t aml_scope(struct aml *a, const char *path)
{
	aml_byte(a, SCOPE_OP);
	size_t at = open_pkg(a);
	aml_namestring(a, path);
	return at;
}

size_t aml_device(struct aml *a, const char *path)
{
	aml_byte(a, EXT_OP);
	aml_byte(a, DEVICE_OP);
	size_t at = open_pkg(a);
	aml_namestring(a, path);
	return at;
}

size_t aml_package(struct aml *a, uint8_t nelems)
{
	aml_byte(a, PACKAGE_OP);
	size_t at = open_pkg(a);
	aml_byte(a, nelems);
	return at;
}

void aml_buffer(struct aml *a, const uint8_t *p, size_t n)
{
	aml_byte(a, BUFFER_OP);
	size_t at = open_pkg(a);
	aml_integer(a, n);
	aml_bytes(a, p, n);
	aml_end(a, at);
}

/* ---- resource descriptors (ACPI 6.x §6.4) ---- */

enum { RES_IRQ_NOFLAGS = 0x22, RES_IO = 0x47, RES_END = 0x79, RES_DWORD_ADDR = 0x87, RES_WORD_ADDR = 0x88 };
enum { SPACE_MEM = 0, SPACE_IO = 1, SPACE_BUS = 2 };
/* general flags: a producer (a bridge's window), fixed min and max, positive decode */
#define ADDR_WINDOW_FLAGS 0x0c

static void word_addr(struct aml *a, uint8_t space, uint8_t type_flags, uint16_t min, uint16_t max)
{
	aml_byte(a, RES_WORD_ADDR);
	le(a, 13, 2);
	aml_byte(a, space);
	aml_byte(a, ADDR_WINDOW_FLAGS);
	aml_byte(a, type_flags);
	le(a, 0, 2);       /* granularity */
	le(a, min, 2);
	le(a, max, 2);
	le(a, 0, 2);       /* translation */
	le(a, (uint32_t)max - min + 1, 2);
}

void aml_res_word_bus(struct aml *a, uint16_t min, uint16_t max)
{
	word_addr(a, SPACE_BUS, 0, min, max);
}

void aml_res_word_io(struct aml *a, uint16_t min, uint16_t max)
{
	word_addr(a, SPACE_IO, 3 /* ISA and non-ISA ranges */, min, max);
}

void aml_res_io(struct aml *a, uint16_t port, uint8_t len)
{
	aml_byte(a, RES_IO);
	aml_byte(a, 1);    /* 16-bit decode */
	le(a, port, 2);    /* min */
	le(a, port, 2);    /* max */
	aml_byte(a, 1);    /* alignment */
	aml_byte(a, len);
}

void aml_res_irq(struct aml *a, unsigned irq)
{
	aml_byte(a, RES_IRQ_NOFLAGS); /* small item, 2 bytes: no flags byte means edge, active high */
	le(a, irq < 16 ? 1u << irq : 0, 2);
}

void aml_res_dword_mem(struct aml *a, uint32_t min, uint32_t max)
{
	aml_byte(a, RES_DWORD_ADDR);
	le(a, 23, 2);
	aml_byte(a, SPACE_MEM);
	aml_byte(a, ADDR_WINDOW_FLAGS);
	aml_byte(a, 1);    /* read-write, non-cacheable */
	le(a, 0, 4);       /* granularity */
	le(a, min, 4);
	le(a, max, 4);
	le(a, 0, 4);       /* translation */
	le(a, (uint64_t)max - min + 1, 4);
}

void aml_res_end(struct aml *a)
{
	aml_byte(a, RES_END);
	aml_byte(a, 0);    /* checksum 0: "assume it is right" */
}
