#include "devices/uart8250.h"

#include <errno.h>
#include <string.h>

enum { RBR_THR = 0, IER = 1, IIR_FCR = 2, LCR = 3, MCR = 4, LSR = 5, MSR = 6, SCR = 7 };
#define LCR_DLAB 0x80
#define LSR_DR 0x01
#define LSR_OE 0x02
#define LSR_THRE 0x20
#define LSR_TEMT 0x40
#define IIR_NO_INT 0x01
#define IIR_FIFO 0xc0
#define MCR_OUT2 0x08
#define MCR_LOOP 0x10
#define IER_RDI 0x01
#define IER_THRI 0x02
#define IIR_THRI 0x02
#define IIR_RDI 0x04
/* In loopback, MCR's outputs appear on MSR's inputs (DSR/CTS/RI/DCD). */
#define MSR_DCD 0x80
#define MSR_RI 0x40
#define MSR_DSR 0x20
#define MSR_CTS 0x10

void uart8250_init(struct uart8250 *u, void (*out)(void *, const char *, unsigned), void *opaque)
{
	memset(u, 0, sizeof(*u));
	pthread_mutex_init(&u->lock, NULL);
	u->iir = IIR_NO_INT;
	u->lsr = LSR_THRE | LSR_TEMT;
	u->msr = MSR_DCD | MSR_DSR | MSR_CTS;
	u->out = out;
	u->opaque = opaque;
}

void uart8250_destroy(struct uart8250 *u)
{
	pthread_mutex_destroy(&u->lock);
}

static uint8_t loopback_msr(uint8_t mcr)
{
	return (uint8_t)(((mcr & 0x01) << 5) | ((mcr & 0x02) << 3) | ((mcr & 0x04) << 4) |
			 ((mcr & 0x08) << 4));
}

/* Recomputes IIR and LSR.DR from the state, and drives the interrupt line. */
static void update_irq(struct uart8250 *u)
{
	if (u->rx_count)
		u->lsr |= LSR_DR;
	else
		u->lsr &= (uint8_t)~LSR_DR;
	if ((u->ier & IER_RDI) && u->rx_count)
		u->iir = IIR_RDI;
	else if ((u->ier & IER_THRI) && u->thri_pending)
		u->iir = IIR_THRI;
	else
		u->iir = IIR_NO_INT;
	int level = !(u->iir & IIR_NO_INT) && (u->mcr & MCR_OUT2);
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

unsigned uart8250_input(struct uart8250 *u, const uint8_t *buf, unsigned len)
{
	unsigned n = 0;
	pthread_mutex_lock(&u->lock);
	for (; n < len && u->rx_count < UART_RX_SIZE; n++) {
		u->rx[(u->rx_head + u->rx_count) % UART_RX_SIZE] = buf[n];
		u->rx_count++;
	}
	u->rx_bytes += n;
	if (n < len) {
		u->rx_dropped += len - n;
		u->lsr |= LSR_OE;
	}
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
		v = (uint8_t)(u->iir | ((u->fcr & 1) ? IIR_FIFO : 0));
		if (u->iir == IIR_THRI)
			u->thri_pending = false; /* reading IIR acknowledges a THRE interrupt */
		return v;
	case LCR: return u->lcr;
	case MCR: return u->mcr;
	case LSR:
		v = u->lsr;
		u->lsr &= (uint8_t)~LSR_OE; /* overrun clears on read */
		return v;
	case MSR: return (u->mcr & MCR_LOOP) ? loopback_msr(u->mcr) : u->msr;
	default: return u->scr;
	}
}

static void uart_write(struct uart8250 *u, unsigned reg, uint8_t v)
{
	switch (reg) {
	case RBR_THR:
		if (u->lcr & LCR_DLAB) {
			u->dll = v;
		} else if (!(u->mcr & MCR_LOOP)) {
			char c = (char)v;
			u->tx_bytes++;
			if (u->out)
				u->out(u->opaque, &c, 1);
			u->thri_pending = true; /* sent at once: the THR is empty again */
		}
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
	case IIR_FCR:
		u->fcr = v;
		if (v & 0x02) { /* clear the receive FIFO */
			u->rx_head = u->rx_count = 0;
		}
		break;
	case LCR: u->lcr = v; break;
	case MCR: u->mcr = v & 0x1f; break;
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
