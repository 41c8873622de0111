/*
 * An 8250/16550A UART at the PC's COM1 (0x3f8), as Linux's 8250 driver
 * probes and drives it: scratch register, divisor latch, IER/IIR with the
 * 16550A's interrupt priorities, LSR, MSR with its delta bits, the FIFO
 * control register with receive trigger levels, and loopback (MCR bit 4),
 * where transmitted bytes come back in the receive FIFO and MCR's outputs
 * appear on MSR's inputs.
 *
 * Where it differs from the chip, on purpose: the transmitter is instant
 * (THRE and TEMT are always set, and writing THR re-raises the THRE
 * interrupt at once, as a real one does when the byte moves to the shift
 * register); the receive FIFO holds UART_RX_SIZE bytes in both FIFO and
 * 16450 modes, so console input is not lost before the guest reads it; with
 * no wire there are no character times, so bytes below the trigger level
 * raise the character-timeout interrupt at once.
 */
#ifndef VMM_DEVICES_UART8250_H
#define VMM_DEVICES_UART8250_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define UART_COM1_BASE 0x3f8
#define UART_NREGS 8
#define UART_RX_SIZE 256
#define UART_COM1_IRQ 4

struct uart8250 {
	pthread_mutex_t lock;
	uint8_t ier, iir, lcr, mcr, scr, fcr;
	uint8_t lsr_errors; /* LSR's sticky error bits (OE), cleared by reading LSR */
	uint8_t msr;        /* MSR: the modem inputs (high nibble) and their deltas */
	uint8_t dll, dlm;
	void (*out)(void *opaque, const char *buf, unsigned len);
	void *opaque;
	uint64_t tx_bytes;
	/* Linux guests: input and the interrupt line (uart8250_set_irq). */
	uint8_t rx[UART_RX_SIZE];
	unsigned rx_head, rx_count;
	bool thri_pending; /* THR empty interrupt not yet acknowledged by an IIR read */
	void (*irq)(void *opaque, int level);
	void *irq_opaque;
	int irq_level;
	uint64_t rx_bytes, rx_dropped; /* console input: taken, lost to a full FIFO */
};

void uart8250_init(struct uart8250 *u, void (*out)(void *, const char *, unsigned), void *opaque);
void uart8250_destroy(struct uart8250 *u);
/* The interrupt line: irq(opaque, level) whenever the UART's interrupt
 * output changes (IIR says an interrupt is pending, gated by MCR OUT2; in
 * loopback OUT2 is looped to DCD, so the line stays low). */
void uart8250_set_irq(struct uart8250 *u, void (*irq)(void *opaque, int level), void *opaque);
/* Bytes typed at the console into the receive FIFO; returns how many fit. */
unsigned uart8250_input(struct uart8250 *u, const uint8_t *buf, unsigned len);
/* io_bus handler; offset is the register number 0..7. */
int uart8250_io(void *dev, unsigned vcpu, uint64_t offset, uint8_t *data, unsigned len, bool is_write);

#endif
