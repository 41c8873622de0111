/*
 * A small AML (ACPI Machine Language) encoder: enough of ACPI 6.x §20 to
 * write a DSDT with names, scopes, devices, packages, buffers and the
 * resource descriptors of a PCI host bridge and an ISA device (§6.4). Output goes to a fixed
 * buffer; running out of room sets `overflow` and the rest is dropped, so
 * callers check once at the end.
 *
 * Objects with a PkgLength (scope, device, package, buffer) are written
 * open-ended and closed with aml_end(): the length is only known then, so
 * the body is moved down over the bytes the final encoding does not need.
 */
#ifndef VMM_AML_H
#define VMM_AML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct aml {
	uint8_t *buf;
	size_t len, cap;
	bool overflow;
	bool bad_name; /* a name that is not a valid AML name path */
};

void aml_init(struct aml *a, uint8_t *buf, size_t cap);

/* "\\_SB_.PCI0", "_HID", "^FOO": segments of up to 4 characters
 * (A-Z, 0-9, _; not starting with a digit), padded with '_'. */
void aml_namestring(struct aml *a, const char *path);
/* The shortest integer encoding (ZeroOp, OneOp, Byte/Word/DWord/QWord). */
void aml_integer(struct aml *a, uint64_t v);
void aml_string(struct aml *a, const char *s);
/* A compressed EISA id ("PNP0A03") as a DWordConst; bad_name if malformed. */
void aml_eisaid(struct aml *a, const char *id);

/* Name(path, <the data object the caller writes next>) */
void aml_name(struct aml *a, const char *path);
/* The opening of each object; the return value goes to aml_end. */
size_t aml_scope(struct aml *a, const char *path);
size_t aml_device(struct aml *a, const char *path);
size_t aml_package(struct aml *a, uint8_t nelems);
void aml_end(struct aml *a, size_t open);
/* Buffer(){bytes}: a ResourceTemplate is one of these. */
void aml_buffer(struct aml *a, const uint8_t *p, size_t n);

/* Resource descriptors (append to a plain byte stream, then aml_buffer). */
void aml_res_word_bus(struct aml *a, uint16_t min, uint16_t max);
void aml_res_word_io(struct aml *a, uint16_t min, uint16_t max);
void aml_res_io(struct aml *a, uint16_t port, uint8_t len);
/* IRQNoFlags(){irq}: one ISA IRQ (0-15), edge-triggered, active high. */
void aml_res_irq(struct aml *a, unsigned irq);
void aml_res_dword_mem(struct aml *a, uint32_t min, uint32_t max);
void aml_res_end(struct aml *a);

/* The PkgLength encoding of a body of n bytes (§20.2.4): writes 1-4 bytes to
 * out and returns how many, or 0 if n is too large (>= 2^28 - 4). */
size_t aml_pkglength(size_t body, uint8_t out[4]);

#endif
