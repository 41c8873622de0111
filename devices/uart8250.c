#include "devices/uart8250.h"

#include <errno.h>
#include <string.h>

enum { RBR_THR = 0, IER = 1, IIR_FCR = 2, LCR = 3, MCR = 4, LSR = 5, MSR = 6, SCR = 7 };
#define LCR_DLAB 0x80
#define LSR_THRE 0x20
#define LSR_TEMT 0x40
#define IIR_NO_INT 0x01
#define IIR_FIFO 0xc0
#define MCR_LOOP 0x10
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

static uint8_t uart_read(struct uart8250 *u, unsigned reg)
{
	switch (reg) {
	case RBR_THR: return (u->lcr & LCR_DLAB) ? u->dll : 0; /* no input yet */
	case IER: return (u->lcr & LCR_DLAB) ? u->dlm : u->ier;
	case IIR_FCR: return (uint8_t)(u->iir | ((u->fcr & 1) ? IIR_FIFO : 0));
	case LCR: return u->lcr;
	case MCR: return u->mcr;
	case LSR: return u->lsr;
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
		}
		break;
	case IER:
		if (u->lcr & LCR_DLAB)
			u->dlm = v;
		else
			u->ier = v & 0x0f;
		break;
	case IIR_FCR: u->fcr = v; break;
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
	pthread_mutex_unlock(&u->lock);
	return 0;
}
