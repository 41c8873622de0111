#include "devices/uart8250.h"

#include <errno.h>
#include <string.h>

enum { RBR_THR = 0, IER = 1, IIR_FCR = 2, LCR = 3, MCR = 4, LSR = 5, MSR = 6, SCR = 7 };
#define LCR_DLAB 0x80
#define LSR_DR 0x01
#define LSR_OE 0x02
#define LSR_THRE 0x20
#define LSR_TEMT 0x40
#define IER_RDI 0x01  /* received data available (and character timeout) */
#define IER_THRI 0x02 /* transmitter holding register empty */
#define IER_RLSI 0x04 /* receiver line status: an error bit in LSR */
#define IER_MSI 0x08  /* modem status: a delta bit in MSR */
/* IIR interrupt ids, highest priority first (16550A data sheet, table 4). */
#define IIR_RLSI 0x06
#define IIR_RDI 0x04
#define IIR_RX_TIMEOUT 0x0c
#define IIR_THRI 0x02
#define IIR_MSI 0x00
#define IIR_NO_INT 0x01
#define IIR_FIFO 0xc0
#define FCR_ENABLE 0x01
#define FCR_CLEAR_RX 0x02
#define FCR_KEPT 0xc9 /* enable, DMA mode, receive trigger level */
#define MCR_OUT2 0x08
#define MCR_LOOP 0x10
#define MSR_DCTS 0x01
#define MSR_DDSR 0x02
#define MSR_TERI 0x04
#define MSR_DDCD 0x08
#define MSR_DELTAS 0x0f
#define MSR_CTS 0x10
#define MSR_DSR 0x20
#define MSR_RI 0x40
#define MSR_DCD 0x80
/* Off loopback the modem inputs read as a connected terminal. */
#define MSR_WIRED (MSR_DCD | MSR_DSR | MSR_CTS)

void uart8250_init(struct uart8250 *u, void (*out)(void *, const char *, unsigned), void *opaque)
{
	memset(u, 0, sizeof(*u));
	pthread_mutex_init(&u->lock, NULL);
	u->iir = IIR_NO_INT;
	u->msr = MSR_WIRED;
	u->out = out;
	u->opaque = opaque;
}

void uart8250_destroy(struct uart8250 *u)
{
	pthread_mutex_destroy(&u->lock);
}

/* In loopback, MCR's outputs drive MSR's inputs: DTR->DSR, RTS->CTS, OUT1->RI, OUT2->DCD. */
static uint8_t modem_inputs(uint8_t mcr)
{
	if (!(mcr & MCR_LOOP))
		return MSR_WIRED;
	return (uint8_t)(((mcr & 0x01) << 5) | ((mcr & 0x02) << 3) | ((mcr & 0x04) << 4) |
			 ((mcr & 0x08) << 4));
}

/* A change of the modem inputs latches MSR's delta bits (RI: its trailing edge only). */
static void modem_inputs_changed(struct uart8250 *u)
{
	uint8_t was = u->msr & 0xf0, now = modem_inputs(u->mcr), diff = was ^ now;
	uint8_t delta = u->msr & MSR_DELTAS;
	if (diff & MSR_CTS)
		delta |= MSR_DCTS;
	if (diff & MSR_DSR)
		delta |= MSR_DDSR;
	if (diff & MSR_DCD)
		delta |= MSR_DDCD;
	if ((was & MSR_RI) && !(now & MSR_RI))
		delta |= MSR_TERI;
	u->msr = now | delta;
}

static unsigned rx_trigger(const struct uart8250 *u)
{
	static const unsigned level[4] = { 1, 4, 8, 14 };
	return (u->fcr & FCR_ENABLE) ? level[u->fcr >> 6] : 1;
}

/* The pending interrupt of highest priority, as IIR reports it. */
static uint8_t pending_interrupt(const struct uart8250 *u)
{
	if ((u->ier & IER_RLSI) && u->lsr_errors)
		return IIR_RLSI;
	if ((u->ier & IER_RDI) && u->rx_count)
		return u->rx_count >= rx_trigger(u) ? IIR_RDI : IIR_RX_TIMEOUT;
	if ((u->ier & IER_THRI) && u->thri_pending)
		return IIR_THRI;
	if ((u->ier & IER_MSI) && (u->msr & MSR_DELTAS))
		return IIR_MSI;
	return IIR_NO_INT;
}

/* Recomputes IIR from the state, and drives the interrupt line. */
static void update_irq(struct uart8250 *u)
{
	u->iir = pending_interrupt(u);
	int level = !(u->iir & IIR_NO_INT) && (u->mcr & (MCR_OUT2 | MCR_LOOP)) == MCR_OUT2;
	if (u->irq && level != u->irq_level) {
		u->irq_level = level;
		u->irq(u->irq_opaque, level);
	}
}

void uart8250_set_irq(struct uart8250 *u, void (*irq)(void *opaque, int level), void *opaque)
{
	pthread_mutex_lock(&u->lock);
	u->irq = irq;
	u->irq_opaque = opaque;
	u->irq_level = 0;
	pthread_mutex_unlock(&u->lock);
}

/* One received byte into the FIFO; a full FIFO loses it and flags an overrun. */
static bool rx_push(struct uart8250 *u, uint8_t c)
{
	if (u->rx_count == UART_RX_SIZE) {
		u->lsr_errors |= LSR_OE;
		return false;
	}
	u->rx[(u->rx_head + u->rx_count) % UART_RX_SIZE] = c;
	u->rx_count++;
	return true;
}

unsigned uart8250_input(struct uart8250 *u, const uint8_t *buf, unsigned len)
{
	unsigned n = 0;
	pthread_mutex_lock(&u->lock);
	while (n < len && rx_push(u, buf[n]))
		n++;
	u->rx_bytes += n;
	u->rx_dropped += len - n;
	update_irq(u);
	pthread_mutex_unlock(&u->lock);
	return n;
}

static uint8_t rx_pop(struct uart8250 *u)
{
	if (!u->rx_count)
		return 0;
	uint8_t c = u->rx[u->rx_head];
	u->rx_head = (u->rx_head + 1) % UART_RX_SIZE;
	u->rx_count--;
	return c;
}

static uint8_t uart_read(struct uart8250 *u, unsigned reg)
{
	uint8_t v;
	switch (reg) {
	case RBR_THR: return (u->lcr & LCR_DLAB) ? u->dll : rx_pop(u);
	case IER: return (u->lcr & LCR_DLAB) ? u->dlm : u->ier;
	case IIR_FCR:
		v = (uint8_t)(u->iir | ((u->fcr & FCR_ENABLE) ? IIR_FIFO : 0));
		if (u->iir == IIR_THRI)
			u->thri_pending = false; /* reading IIR acknowledges a THRE interrupt */
		return v;
	case LCR: return u->lcr;
	case MCR: return u->mcr;
	case LSR:
		v = (uint8_t)(LSR_THRE | LSR_TEMT | (u->rx_count ? LSR_DR : 0) | u->lsr_errors);
		u->lsr_errors = 0; /* error bits clear on read */
		return v;
	case MSR:
		v = u->msr;
		u->msr &= (uint8_t)~MSR_DELTAS; /* delta bits clear on read */
		return v;
	default: return u->scr;
	}
}

static void transmit(struct uart8250 *u, uint8_t v)
{
	if (u->mcr & MCR_LOOP) {
		rx_push(u, v); /* looped back: received, not sent */
	} else {
		char c = (char)v;
		u->tx_bytes++;
		if (u->out)
			u->out(u->opaque, &c, 1);
	}
	u->thri_pending = true; /* sent at once: the THR is empty again */
}

static void write_fcr(struct uart8250 *u, uint8_t v)
{
	/* Switching the FIFOs on or off empties them; other bits need the enable bit. */
	if (((v ^ u->fcr) & FCR_ENABLE) || (v & (FCR_ENABLE | FCR_CLEAR_RX)) == (FCR_ENABLE | FCR_CLEAR_RX))
		u->rx_head = u->rx_count = 0;
	u->fcr = (v & FCR_ENABLE) ? (uint8_t)(v & FCR_KEPT) : 0;
}

static void uart_write(struct uart8250 *u, unsigned reg, uint8_t v)
{
	switch (reg) {
	case RBR_THR:
		if (u->lcr & LCR_DLAB)
			u->dll = v;
		else
			transmit(u, v);
		break;
	case IER:
		if (u->lcr & LCR_DLAB) {
			u->dlm = v;
		} else {
			if ((v & IER_THRI) && !(u->ier & IER_THRI))
				u->thri_pending = true; /* enabling it with the THR empty interrupts */
			u->ier = v & 0x0f;
		}
		break;
	case IIR_FCR: write_fcr(u, v); break;
	case LCR: u->lcr = v; break;
	case MCR:
		u->mcr = v & 0x1f;
		modem_inputs_changed(u);
		break;
	case SCR: u->scr = v; break;
	default: break; /* LSR and MSR are read-only */
	}
}

int uart8250_io(void *dev, unsigned vcpu, uint64_t offset, uint8_t *data, unsigned len, bool is_write)
{
	struct uart8250 *u = dev;
	(void)vcpu;
	if (len != 1 || offset >= UART_NREGS)
		return -EINVAL;
	pthread_mutex_lock(&u->lock);
	if (is_write)
		uart_write(u, (unsigned)offset, data[0]);
	else
		data[0] = uart_read(u, (unsigned)offset);
	update_irq(u);
	pthread_mutex_unlock(&u->lock);
	return 0;
}
