/*
 * The 8250/16550A UART as Linux's 8250 driver (drivers/tty/serial/8250/
 * 8250_port.c) uses it: autoconfig's IER, loopback and FIFO probes,
 * size_fifo's loopback count, serial8250_do_startup's THRE re-assert test,
 * and the interrupt handler's IIR -> LSR -> RBR/MSR/THR sequence.
 */
#include <string.h>

#include "check.h"
#include "devices/uart8250.h"

enum { RBR = 0, THR = 0, DLL = 0, IER = 1, DLM = 1, IIR = 2, FCR = 2, LCR = 3, MCR = 4, LSR = 5, MSR = 6, SCR = 7 };

static char sent[512];
static unsigned sent_len;
static int line = -1, line_changes;

static void sink(void *opaque, const char *buf, unsigned len)
{
	(void)opaque;
	if (sent_len + len <= sizeof(sent))
		memcpy(sent + sent_len, buf, len);
	sent_len += len;
}

static void irq(void *opaque, int level)
{
	(void)opaque;
	line = level;
	line_changes++;
}

static struct uart8250 u;

static void fresh(void)
{
	uart8250_init(&u, sink, NULL);
	uart8250_set_irq(&u, irq, NULL);
	sent_len = 0;
	line = 0;
	line_changes = 0;
}

static uint8_t in(unsigned reg)
{
	uint8_t v = 0xee;
	CHECK_EQ(uart8250_io(&u, 0, reg, &v, 1, false), 0);
	return v;
}

static void out(unsigned reg, uint8_t v)
{
	CHECK_EQ(uart8250_io(&u, 0, reg, &v, 1, true), 0);
}

static void feed(const char *s)
{
	unsigned n = (unsigned)strlen(s);
	CHECK_EQ(uart8250_input(&u, (const uint8_t *)s, n), n);
}

/* autoconfig: IER holds the four enable bits only; scratch holds a byte. */
static void test_probe_registers(void)
{
	fresh();
	out(IER, 0);
	CHECK_EQ(in(IER) & 0x0f, 0);
	out(IER, 0x0f);
	CHECK_EQ(in(IER) & 0x0f, 0x0f);
	out(IER, 0xff);
	CHECK_EQ(in(IER), 0x0f); /* no Xscale UUE bit (b6): not mistaken for one */
	out(IER, 0);
	out(SCR, 0x5a);
	CHECK_EQ(in(SCR), 0x5a);
	out(SCR, 0xa5);
	CHECK_EQ(in(SCR), 0xa5);
	CHECK_EQ(in(IIR), 0x01); /* FIFO off, nothing pending */
	out(FCR, 0x01);
	CHECK_EQ(in(IIR) >> 6, 3); /* FIFO on: a 16550A */
	CHECK_EQ(in(IIR) & 0x20, 0); /* no 64-byte FIFO bit: not a 16750 */
	out(FCR, 0x00);
	CHECK_EQ(in(IIR) >> 6, 0);
	uart8250_destroy(&u);
}

/* DLAB: offsets 0 and 1 reach the divisor latch; THR and IER keep their values. */
static void test_divisor_latch(void)
{
	fresh();
	out(IER, 0x05);
	out(LCR, 0x83);
	out(DLL, 0x0c);
	out(DLM, 0x00);
	CHECK_EQ(in(DLL), 0x0c);
	CHECK_EQ(in(DLM), 0x00);
	CHECK_EQ(sent_len, 0); /* a divisor write is not a byte sent */
	CHECK_EQ(in(LCR), 0x83);
	out(LCR, 0x03);
	CHECK_EQ(in(IER), 0x05);
	out(THR, 'a');
	CHECK_EQ(sent_len, 1);
	out(LCR, 0x80);
	CHECK_EQ(in(DLL), 0x0c); /* the byte sent did not touch the latch */
	uart8250_destroy(&u);
}

/* LSR: THRE and TEMT (the transmitter is empty) always; DR while bytes wait; OE once per overrun. */
static void test_line_status(void)
{
	fresh();
	CHECK_EQ(in(LSR), 0x60);
	out(THR, 'h');
	CHECK_EQ(in(LSR) & 0x60, 0x60);
	CHECK(sent_len == 1 && sent[0] == 'h');
	CHECK_EQ(u.tx_bytes, 1);
	feed("ab");
	CHECK_EQ(in(LSR), 0x61);
	CHECK_EQ(in(RBR), 'a');
	CHECK_EQ(in(LSR), 0x61);
	CHECK_EQ(in(RBR), 'b');
	CHECK_EQ(in(LSR), 0x60);
	uint8_t full[UART_RX_SIZE + 3];
	memset(full, 'z', sizeof(full));
	CHECK_EQ(uart8250_input(&u, full, sizeof(full)), UART_RX_SIZE);
	CHECK_EQ(u.rx_dropped, 3);
	CHECK_EQ(in(LSR), 0x63); /* DR and OE */
	CHECK_EQ(in(LSR), 0x61); /* OE cleared by the read */
	uart8250_destroy(&u);
}

/* FCR: bit 1 empties the receive FIFO; switching the FIFO on or off empties it too. */
static void test_fifo_control(void)
{
	fresh();
	out(FCR, 0x01);
	feed("abc");
	out(FCR, 0x01 | 0x02);
	CHECK_EQ(in(LSR) & 0x01, 0);
	feed("abc");
	out(FCR, 0x00);
	CHECK_EQ(in(LSR) & 0x01, 0);
	feed("abc");
	out(FCR, 0x02); /* bits other than enable are ignored while it is 0 */
	CHECK_EQ(in(LSR) & 0x01, 1);
	CHECK_EQ(in(IIR) >> 6, 0);
	out(FCR, 0x01);
	CHECK_EQ(in(LSR) & 0x01, 0);
	/* what was received is read back in order */
	feed("xyz");
	CHECK_EQ(in(RBR), 'x');
	CHECK_EQ(in(RBR), 'y');
	CHECK_EQ(in(RBR), 'z');
	CHECK_EQ(in(LSR) & 0x01, 0);
	uart8250_destroy(&u);
}

/* Receive interrupts: data at the trigger level (FCR bits 7:6 = 1, 4, 8, 14 bytes) is
 * "data available" (0x04); fewer bytes are a character timeout (0x0c); both end when
 * the FIFO is read empty. */
static void test_rx_interrupts(void)
{
	fresh();
	out(MCR, 0x0b); /* DTR, RTS, OUT2: the line reaches the PIC */
	out(IER, 0x01);
	CHECK_EQ(in(IIR), 0x01);
	CHECK_EQ(line, 0);
	feed("q");
	CHECK_EQ(in(IIR), 0x04); /* FIFO off: one byte is the trigger */
	CHECK_EQ(line, 1);
	CHECK_EQ(in(RBR), 'q');
	CHECK_EQ(in(IIR), 0x01);
	CHECK_EQ(line, 0);
	out(FCR, 0x01 | 0x80); /* trigger at 8 bytes, what Linux sets for a 16550A */
	feed("1234567");
	CHECK_EQ(in(IIR), 0xcc);
	feed("8");
	CHECK_EQ(in(IIR), 0xc4);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(in(RBR), '1' + i);
	CHECK_EQ(in(IIR), 0xc1);
	CHECK_EQ(line, 0);
	out(FCR, 0x01 | 0xc0);
	feed("12345678901234");
	CHECK_EQ(in(IIR), 0xc4);
	out(FCR, 0x01 | 0x02 | 0x40);
	feed("abcd");
	CHECK_EQ(in(IIR), 0xc4);
	/* OUT2 gates the line, not IIR */
	out(MCR, 0x03);
	CHECK_EQ(line, 0);
	CHECK_EQ(in(IIR), 0xc4);
	out(MCR, 0x0b);
	CHECK_EQ(line, 1);
	out(IER, 0);
	CHECK_EQ(line, 0);
	CHECK_EQ(in(IIR), 0xc1);
	uart8250_destroy(&u);
}

/* THRE: enabling ETBEI with the THR empty interrupts; reading IIR acknowledges it;
 * IER 0 then ETBEI again re-asserts it (serial8250_do_startup's UART_BUG_THRE test);
 * every byte written raises it again, which the driver's tx loop relies on. */
static void test_thre_interrupt(void)
{
	fresh();
	out(MCR, 0x08);
	out(IER, 0x02);
	CHECK_EQ(line, 1);
	CHECK_EQ(in(IIR), 0x02);
	CHECK_EQ(line, 0);
	CHECK_EQ(in(IIR), 0x01); /* acknowledged by the first read */
	out(IER, 0);
	out(IER, 0x02);
	CHECK_EQ(in(IIR), 0x02);
	CHECK_EQ(in(IIR), 0x01);
	out(THR, 'a');
	CHECK_EQ(line, 1);
	CHECK_EQ(in(IIR), 0x02);
	CHECK_EQ(line, 0);
	out(IER, 0x02); /* enabled already: no new interrupt */
	CHECK_EQ(in(IIR), 0x01);
	/* autoconfig_irq: IER 0x0f, reads of LSR, RBR, IIR, MSR, then a byte sent interrupts */
	out(IER, 0x0f);
	in(LSR);
	in(RBR);
	in(IIR);
	in(MSR);
	CHECK_EQ(line, 0);
	out(THR, 0xff);
	CHECK_EQ(line, 1);
	uart8250_destroy(&u);
}

/* IIR priority: line status > received data > THRE > modem status; each cleared by
 * its own action (LSR read, RBR read, IIR read or THR write, MSR read). */
static void test_interrupt_priority(void)
{
	fresh();
	out(MCR, 0x08);
	out(FCR, 0x01);
	uint8_t big[UART_RX_SIZE + 1];
	memset(big, 'o', sizeof(big));
	uart8250_input(&u, big, sizeof(big)); /* a full FIFO and an overrun */
	out(MCR, 0x18);                        /* loopback: the modem inputs change, MSR deltas */
	out(MCR, 0x08);
	out(IER, 0x0f);
	CHECK_EQ(in(IIR) & 0x0f, 0x06);
	CHECK_EQ(in(IIR) & 0x0f, 0x06); /* IIR reads do not clear a line status interrupt */
	CHECK_EQ(in(LSR) & 0x03, 0x03);
	CHECK_EQ(in(IIR) & 0x0f, 0x04);
	out(FCR, 0x01 | 0x02);
	CHECK_EQ(in(IIR) & 0x0f, 0x02);
	CHECK_EQ(in(IIR) & 0x0f, 0x00); /* the THRE read acknowledged it: modem status next */
	CHECK_EQ(line, 1);
	uint8_t msr = in(MSR);
	CHECK_EQ(msr & 0x0f, 0x03); /* DCTS, DDSR: CTS and DSR went away and back; OUT2 kept DCD */
	CHECK_EQ(msr & 0xf0, 0xb0);
	CHECK_EQ(in(IIR) & 0x0f, 0x01);
	CHECK_EQ(line, 0);
	CHECK_EQ(in(MSR), 0xb0); /* deltas cleared by the read */
	uart8250_destroy(&u);
}

/* Loopback (MCR bit 4): bytes written come back in RBR and are not sent; MSR's inputs
 * mirror DTR->DSR, RTS->CTS, OUT1->RI, OUT2->DCD; the interrupt line stays low. */
static void test_loopback(void)
{
	fresh();
	out(MCR, 0x10 | 0x0a); /* autoconfig's LOOP test: RTS and OUT2 */
	CHECK_EQ(in(MSR) & 0xf0, 0x90);
	out(MCR, 0x10 | 0x05);
	CHECK_EQ(in(MSR) & 0xf0, 0x60);
	out(MCR, 0x10);
	CHECK_EQ(in(MSR), 0x06); /* DSR fell (DDSR), RI fell (TERI, its trailing edge) */
	out(MCR, 0x10 | 0x04);
	CHECK_EQ(in(MSR), 0x40); /* RI rose: no delta for a leading edge */
	out(MCR, 0x10);
	CHECK_EQ(in(MSR), 0x04);
	out(MCR, 0x10 | 0x08);
	CHECK_EQ(in(MSR), 0x88);
	const char *msg = "loop";
	for (const char *p = msg; *p; p++)
		out(THR, (uint8_t)*p);
	CHECK_EQ(sent_len, 0);
	CHECK_EQ(u.tx_bytes, 0);
	CHECK_EQ(in(LSR), 0x61);
	for (const char *p = msg; *p; p++)
		CHECK_EQ(in(RBR), *p);
	CHECK_EQ(in(LSR), 0x60);
	/* size_fifo: 256 bytes written in loopback, counted back while DR */
	out(FCR, 0x07);
	for (unsigned i = 0; i < 256; i++)
		out(THR, (uint8_t)i);
	unsigned count = 0;
	while ((in(LSR) & 0x01) && count < 1000)
		CHECK_EQ(in(RBR), count++ & 0xff);
	CHECK_EQ(count, UART_RX_SIZE);
	/* a byte past a full FIFO is an overrun */
	for (unsigned i = 0; i < UART_RX_SIZE + 1; i++)
		out(THR, 'f');
	CHECK_EQ(in(LSR) & 0x03, 0x03);
	/* interrupts are reported in IIR, but OUT2 does not reach the line */
	out(IER, 0x03);
	CHECK_EQ(in(IIR) & 0x0f, 0x04);
	CHECK_EQ(line, 0);
	CHECK_EQ(line_changes, 0);
	out(MCR, 0x08); /* loopback off: now the line rises */
	CHECK_EQ(line, 1);
	out(THR, '!');
	CHECK(sent_len == 1 && sent[0] == '!');
	uart8250_destroy(&u);
}

/* Bad accesses: only 1-byte accesses to the eight registers. */
static void test_bad_access(void)
{
	fresh();
	uint8_t v[2] = { 0 };
	CHECK(uart8250_io(&u, 0, 0, v, 2, false) < 0);
	CHECK(uart8250_io(&u, 0, 8, v, 1, false) < 0);
	out(LSR, 0); /* read-only: ignored */
	out(MSR, 0xff);
	CHECK_EQ(in(LSR), 0x60);
	CHECK_EQ(in(MSR), 0xb0);
	uart8250_destroy(&u);
}

int main(void)
{
	RUN(test_probe_registers);
	RUN(test_divisor_latch);
	RUN(test_line_status);
	RUN(test_fifo_control);
	RUN(test_rx_interrupts);
	RUN(test_thre_interrupt);
	RUN(test_interrupt_priority);
	RUN(test_loopback);
	RUN(test_bad_access);
	return check_summary();
}
