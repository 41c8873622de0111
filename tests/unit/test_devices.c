/* The 8250 UART register file and the port bus a device hangs on. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "devices/debug_exit.h"
#include "devices/io_bus.h"
#include "devices/uart8250.h"

static char out[64];
static unsigned out_len;

static void sink(void *opaque, const char *buf, unsigned len)
{
	(void)opaque;
	memcpy(out + out_len, buf, len);
	out_len += len;
}

static uint8_t rd(struct io_bus *b, uint16_t port)
{
	uint8_t v = 0;
	CHECK_EQ(io_bus_access(b, 0, port, &v, 1, false), 0);
	return v;
}

static void wr(struct io_bus *b, uint16_t port, uint8_t v)
{
	CHECK_EQ(io_bus_access(b, 0, port, &v, 1, true), 0);
}

static uint32_t exit_status = 0xdead;
static void on_exit_port(void *opaque, unsigned vcpu, uint32_t status)
{
	(void)opaque;
	(void)vcpu;
	exit_status = status;
}

static struct io_bus bus;
static struct uart8250 u;

/* Ranges on the port bus: no overlap, adjacent is fine, never empty. */
static void test_bus_ranges(void)
{
	CHECK_EQ(io_bus_register(&bus, 0x3f8, 8, uart8250_io, &u, "uart"), 0);
	CHECK_EQ(io_bus_register(&bus, 0x3fc, 8, uart8250_io, &u, "overlap"), -EEXIST);
	CHECK_EQ(io_bus_register(&bus, 0x3f0, 8, uart8250_io, &u, "below"), 0); /* adjacent is fine */
	CHECK_EQ(io_bus_register(&bus, 0, 0, uart8250_io, &u, "empty"), -EINVAL);
}

/* The UART reached through the bus (tests/unit/test_uart8250.c tests it in full). */
static void test_uart_on_the_bus(void)
{

	const char *msg = "hi\n";
	for (const char *p = msg; *p; p++) {
		CHECK(rd(&bus, 0x3fd) & 0x20); /* THRE: always ready to send */
		wr(&bus, 0x3f8, (uint8_t)*p);
	}
	CHECK(out_len == 3 && !memcmp(out, "hi\n", 3));
	CHECK_EQ(u.tx_bytes, 3);

	wr(&bus, 0x3ff, 0x5a); /* scratch register, used by Linux's probe */
	CHECK_EQ(rd(&bus, 0x3ff), 0x5a);
	wr(&bus, 0x3fb, 0x80); /* DLAB: the divisor latch, not THR/IER */
	wr(&bus, 0x3f8, 0x01);
	wr(&bus, 0x3f9, 0x02);
	CHECK_EQ(rd(&bus, 0x3f8), 0x01);
	CHECK_EQ(rd(&bus, 0x3f9), 0x02);
	CHECK_EQ(out_len, 3); /* divisor writes are not output */
	wr(&bus, 0x3fb, 0x03);
	CHECK_EQ(rd(&bus, 0x3fb), 0x03);
	CHECK_EQ(rd(&bus, 0x3fa) & 0x0f, 0x01); /* IIR: no interrupt pending */
	wr(&bus, 0x3fa, 0x01);                  /* FIFO on: IIR says 16550A */
	CHECK_EQ(rd(&bus, 0x3fa) & 0xc0, 0xc0);
	wr(&bus, 0x3fc, 0x10 | 0x0a); /* loopback: MCR outputs appear on MSR */
	CHECK_EQ(rd(&bus, 0x3fe) & 0xf0, 0x90);
	wr(&bus, 0x3f8, 'x'); /* looped back, not transmitted */
	CHECK_EQ(out_len, 3);
	CHECK_EQ(rd(&bus, 0x3fd) & 0x01, 0x01); /* LSR.DR: it came back */
	CHECK_EQ(rd(&bus, 0x3f8), 'x');
	uint16_t wide = 0;
	CHECK_EQ(io_bus_access(&bus, 0, 0x3f8, (uint8_t *)&wide, 2, false), -EINVAL);
	CHECK_EQ(io_bus_access(&bus, 0, 0x3ff, (uint8_t *)&wide, 2, false), -ENOENT); /* crosses the end */
	CHECK_EQ(io_bus_access(&bus, 0, 0x80, (uint8_t *)&wide, 1, false), -ENOENT);
}

/* The guest-exit port takes 1- and 4-byte writes. */
static void test_debug_exit(void)
{
	struct debug_exit d = { on_exit_port, NULL };
	CHECK_EQ(io_bus_register(&bus, 0xf4, 4, debug_exit_io, &d, "debug-exit"), 0);
	uint32_t v = 7;
	CHECK_EQ(io_bus_access(&bus, 0, 0xf4, (uint8_t *)&v, 4, true), 0);
	CHECK_EQ(exit_status, 7);
	uint8_t b = 3;
	CHECK_EQ(io_bus_access(&bus, 0, 0xf4, &b, 1, true), 0);
	CHECK_EQ(exit_status, 3);
}

int main(void)
{
	uart8250_init(&u, sink, NULL);
	RUN(test_bus_ranges);
	RUN(test_uart_on_the_bus);
	RUN(test_debug_exit);
	uart8250_destroy(&u);
	return check_summary();
}
