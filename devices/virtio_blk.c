#include "devices/virtio_blk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "devices/blk_backend_uring.h"
#include "devices/virtio_pci.h"
#include "lib/bytes.h"

#define SECTOR 512u
#define SEG_MAX (VIRTIO_BLK_QUEUE_SIZE - 2) /* a chain is header + data + status */
#define PCI_CLASS_STORAGE_OTHER 0x018000

struct virtio_blk_pci {
	struct virtio_pci vp; /* vp.lock guards everything here */
	struct pci_bus *bus;
	struct guest_mem mem;
	struct blk_backend be;
	bool read_only;
	uint64_t capacity; /* sectors */
	uint8_t config[VIRTIO_BLK_CFG_LEN];
	char id[VIRTIO_BLK_ID_BYTES];
	uint64_t generation; /* bumped by every reset: late completions of older requests are dropped */
	unsigned in_flight;
	void (*host_error)(void *ctx, const char *what); /* virtio_blk_pci_on_host_error */
	void *host_error_ctx;
	bool host_failed; /* host_error was called: once is enough, the run ends */
	struct vq_buf scratch[VIRTIO_BLK_QUEUE_SIZE];
	struct virtio_blk_stats st;
};

struct blk_req {
	struct blk_io io;
	struct virtio_blk_pci *blk;
	uint64_t generation;
	uint16_t head;
	uint8_t *status;
	uint32_t used_len; /* bytes written into the guest on success, status byte included */
	struct iovec iov[];
};

/* ---- completing requests (vp.lock held) ---- */

static void finish(struct virtio_blk_pci *b, uint16_t head, uint8_t *status, uint8_t s, uint32_t used_len)
{
	struct virtq *q = &b->vp.vq[0];
	if (status) {
		*status = s;
		b->st.ok += s == VIRTIO_BLK_S_OK;
		b->st.ioerr += s == VIRTIO_BLK_S_IOERR;
		b->st.unsupp += s == VIRTIO_BLK_S_UNSUPP;
	} else {
		used_len = 0;
		b->st.no_status++;
	}
	vq_push(q, head, used_len);
}

static void io_done(struct blk_io *io, int res)
{
	struct blk_req *r = (struct blk_req *)io;
	struct virtio_blk_pci *b = r->blk;
	b->in_flight--;
	if (r->generation == b->generation && b->vp.vq[0].ready) {
		bool ok = res == 0;
		finish(b, r->head, r->status, ok ? VIRTIO_BLK_S_OK : VIRTIO_BLK_S_IOERR, ok ? r->used_len : 1);
	}
	free(r);
}

/* ---- building requests ---- */

static uint64_t total(const struct vq_buf *v, unsigned from, unsigned to)
{
	uint64_t t = 0;
	for (unsigned i = from; i < to; i++)
		t += v[i].len;
	return t;
}

/* len bytes of bufs[from, to) starting skip bytes in, as iovecs; returns their count. */
static unsigned make_iov(const struct vq_buf *v, unsigned from, unsigned to, uint64_t skip, uint64_t len,
			 struct iovec *iov)
{
	unsigned n = 0;
	for (unsigned i = from; i < to && len; i++) {
		uint64_t l = v[i].len;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		uint64_t take = l - skip < len ? l - skip : len;
		iov[n++] = (struct iovec){ v[i].host + skip, take };
		len -= take;
		skip = 0;
	}
	return n;
}

static void gather(const struct vq_buf *v, unsigned n, void *dst, size_t len)
{
	uint8_t *d = dst;
	for (unsigned i = 0; i < n && len; i++) {
		size_t take = v[i].len < len ? v[i].len : len;
		memcpy(d, v[i].host, take);
		d += take;
		len -= take;
	}
}

static bool in_range(const struct virtio_blk_pci *b, uint64_t sector, uint64_t bytes)
{
	return bytes % SECTOR == 0 && sector <= b->capacity && bytes / SECTOR <= b->capacity - sector;
}

/* Returns true when an I/O was queued on the backend. */
/* GET_ID is answered at once: the serial, cut to what the driver's buffers hold. */
static void get_id(struct virtio_blk_pci *b, const struct vq_chain *c, uint64_t wlen,
		   uint8_t *status)
{
	const struct vq_buf *v = b->scratch;
	uint8_t id[VIRTIO_BLK_ID_BYTES];
	memcpy(id, b->id, sizeof(id));
	size_t n = wlen < sizeof(id) ? wlen : sizeof(id);
	struct iovec iov[VIRTIO_BLK_QUEUE_SIZE];
	unsigned k = make_iov(v, c->nread, c->n, 0, n, iov);
	const uint8_t *src = id;
	for (unsigned i = 0; i < k; i++) {
		memcpy(iov[i].iov_base, src, iov[i].iov_len);
		src += iov[i].iov_len;
	}
	finish(b, c->head, status, VIRTIO_BLK_S_OK, (uint32_t)n + 1);
}

/*
 * Hands a checked request to the backend; io_done completes it later. True
 * when it is in flight, false when it was completed here with an error.
 */
static bool submit(struct virtio_blk_pci *b, const struct vq_chain *c, enum blk_op op,
		   uint64_t sector, uint64_t bytes, uint8_t *status)
{
	const struct vq_buf *v = b->scratch;
	struct blk_req *r = malloc(sizeof(*r) + sizeof(struct iovec) * c->n);
	if (!r) {
		finish(b, c->head, status, VIRTIO_BLK_S_IOERR, 1);
		return false;
	}
	unsigned niov = 0;
	if (op == BLK_OP_READ)
		niov = make_iov(v, c->nread, c->n, 0, bytes, r->iov);
	else if (op == BLK_OP_WRITE)
		niov = make_iov(v, 0, c->nread, sizeof(struct virtio_blk_req_hdr), bytes, r->iov);
	*r = (struct blk_req){
		.io = { .op = op, .iov = r->iov, .niov = niov, .offset = sector * SECTOR,
			.dsync = op == BLK_OP_WRITE && !(b->vp.drv_features & (1ull << VIRTIO_BLK_F_FLUSH)),
			.done = io_done },
		.blk = b, .generation = b->generation, .head = c->head, .status = status,
		.used_len = (uint32_t)((op == BLK_OP_READ ? bytes : 0) + 1),
	};
	if (blk_backend_queue(&b->be, &r->io)) {
		free(r);
		finish(b, c->head, status, VIRTIO_BLK_S_IOERR, 1);
		return false;
	}
	b->in_flight++;
	return true;
}

static bool handle(struct virtio_blk_pci *b, const struct vq_chain *c)
{
	const struct vq_buf *v = b->scratch;
	uint8_t *status = vq_chain_status_byte(c);
	b->st.requests++;
	if (c->err) {
		b->st.bad_chains++;
		finish(b, c->head, status, VIRTIO_BLK_S_IOERR, 1);
		return false;
	}
	if (!status) {
		b->st.bad_chains++;
		finish(b, c->head, NULL, 0, 0);
		return false;
	}
	/* Device-readable: header, then OUT data. Device-writable: IN data or ID, then the status byte. */
	uint64_t rlen = total(v, 0, c->nread), wlen = total(v, c->nread, c->n) - 1;
	/* Zeroed: gather() fills it whenever rlen >= sizeof(h), but a compiler
	 * that does not follow that (gcc -O1) would see a read of garbage. */
	struct virtio_blk_req_hdr h = { 0 };
	if (rlen < sizeof(h)) {
		b->st.bad_chains++;
		finish(b, c->head, status, VIRTIO_BLK_S_IOERR, 1);
		return false;
	}
	gather(v, c->nread, &h, sizeof(h));

	enum blk_op op;
	uint64_t bytes = 0;
	switch (h.type) {
	case VIRTIO_BLK_T_IN: op = BLK_OP_READ; bytes = wlen; break;
	case VIRTIO_BLK_T_OUT: op = BLK_OP_WRITE; bytes = rlen - sizeof(h); break;
	case VIRTIO_BLK_T_FLUSH: op = BLK_OP_FLUSH; break;
	case VIRTIO_BLK_T_GET_ID:
		get_id(b, c, wlen, status);
		return false;
	default:
		finish(b, c->head, status, VIRTIO_BLK_S_UNSUPP, 1);
		return false;
	}
	if ((op == BLK_OP_WRITE && b->read_only) || (op != BLK_OP_FLUSH && !in_range(b, h.sector, bytes))) {
		finish(b, c->head, status, VIRTIO_BLK_S_IOERR, 1);
		return false;
	}
	if (op != BLK_OP_FLUSH && bytes == 0) { /* nothing to move */
		finish(b, c->head, status, VIRTIO_BLK_S_OK, 1);
		return false;
	}
	return submit(b, c, op, h.sector, bytes, status);
}

/* Pops and starts requests while the backend has room (one slot per queue entry). */
static void process_queue(struct virtio_blk_pci *b)
{
	struct virtq *q = &b->vp.vq[0];
	uint16_t used_before = q->used_idx;
	bool queued = false;
	if (!virtio_pci_queue_live(&b->vp, 0))
		return;
	while (b->in_flight < q->size) {
		struct vq_chain c;
		int r = vq_pop(q, &b->mem, &c, b->scratch, VIRTIO_BLK_QUEUE_SIZE);
		if (r == 0)
			break;
		if (r < 0) {
			virtio_pci_needs_reset(&b->vp);
			break;
		}
		queued |= handle(b, &c);
	}
	/* A refused submission has already failed its requests with IOERR (io_done); counted in stats. */
	if (queued)
		blk_backend_submit(&b->be);
	if (q->used_idx != used_before)
		virtio_pci_queue_used(&b->vp, 0);
}

/* ---- virtio device ops (vp.lock held) ---- */

static void cfg_read(void *dev, unsigned off, uint8_t *data, unsigned len)
{
	struct virtio_blk_pci *b = dev;
	memcpy(data, b->config + off, len);
}

static void notify(void *dev, unsigned q)
{
	(void)q;
	process_queue(dev);
}

/*
 * I/O of before the reset may still write guest memory: the transport holds
 * the status at NEEDS_RESET, and the run is told (a host error: the disk
 * did not give its requests back within BLK_DRAIN_WAIT_MS, or io_uring
 * could not even wait for them), once.
 */
static void reset_failed(struct virtio_blk_pci *b, int err)
{
	b->st.reset_errors++;
	if (b->host_failed || !b->host_error)
		return;
	b->host_failed = true;
	char what[160];
	if (err == -ETIMEDOUT)
		snprintf(what, sizeof(what), "reset: %u request%s still in flight after %u ms%s", b->in_flight,
			 b->in_flight == 1 ? "" : "s", b->be.drain_wait_ms,
			 b->be.cancel_unsent ? " (its cancel could not be submitted)" : "");
	else
		snprintf(what, sizeof(what), "reset: cannot wait for %u request%s in flight: io_uring_enter: %s",
			 b->in_flight, b->in_flight == 1 ? "" : "s", strerror(-err));
	b->host_error(b->host_error_ctx, what);
}

/*
 * virtio 1.2 §2.4: once the driver reads status 0 again, the device writes
 * none of its buffers. The status read takes vp.lock, held here, so it
 * waits until every request in flight is cancelled or finished (dropped:
 * an older generation), at most BLK_DRAIN_WAIT_MS; the driver may then
 * reuse that memory at once. Past the bound (or when io_uring cannot wait)
 * the status stays non-zero until reset_poll sees the last one come back.
 */
static int reset(void *dev)
{
	struct virtio_blk_pci *b = dev;
	b->generation++;
	int r = blk_backend_cancel_all(&b->be);
	if (r < 0)
		reset_failed(b, r);
	return r;
}

/* A held reset: late completions (dropped, an older generation) until none is in flight. */
static int reset_poll(void *dev)
{
	struct virtio_blk_pci *b = dev;
	blk_backend_reap(&b->be);
	return b->in_flight ? -EBUSY : 0;
}

static const struct virtio_dev_ops blk_ops = {
	.device_type = VIRTIO_ID_BLOCK,
	.pci_class = PCI_CLASS_STORAGE_OTHER,
	.num_queues = 1,
	.queue_max = VIRTIO_BLK_QUEUE_SIZE,
	.cfg_len = VIRTIO_BLK_CFG_LEN,
	.cfg_read = cfg_read,
	.notify = notify,
	.reset = reset,
	.reset_poll = reset_poll,
};

/* ---- public ---- */

void virtio_blk_pci_process_completions(struct virtio_blk_pci *b)
{
	pthread_mutex_lock(&b->vp.lock);
	struct virtq *q = &b->vp.vq[0];
	uint16_t used_before = q->used_idx;
	blk_backend_reap(&b->be);
	if (q->ready && q->used_idx != used_before)
		virtio_pci_queue_used(&b->vp, 0);
	/* Requests left on the ring while the backend was full. */
	process_queue(b);
	pthread_mutex_unlock(&b->vp.lock);
}

int virtio_blk_pci_event_fd(const struct virtio_blk_pci *b)
{
	return blk_backend_event_fd(&b->be);
}

int virtio_blk_pci_uring_fd(const struct virtio_blk_pci *b)
{
	return blk_backend_uring_fd(&b->be);
}

unsigned virtio_blk_pci_slot(const struct virtio_blk_pci *b)
{
	return b->vp.pci.slot;
}

uint64_t virtio_blk_pci_capacity(const struct virtio_blk_pci *b)
{
	return b->capacity;
}

struct virtio_blk_stats virtio_blk_pci_stats(struct virtio_blk_pci *b)
{
	pthread_mutex_lock(&b->vp.lock);
	struct virtio_blk_stats s = b->st;
	s.reads = b->be.reads;
	s.writes = b->be.writes;
	s.flushes = b->be.flushes;
	s.dsync_writes = b->be.dsync_writes;
	s.reset_cancels = b->be.cancels;
	s.reset_cancel_unsent = b->be.cancel_unsent;
	s.reset_timeouts = b->be.drain_timeouts;
	s.resets_held = b->vp.resets_held;
	s.submit_errors = b->be.submit_errors;
	s.backend_errors = b->be.errors;
	s.interrupts = b->vp.interrupts;
	s.needs_reset = b->vp.needs_reset_events;
	s.in_flight = b->in_flight;
	pthread_mutex_unlock(&b->vp.lock);
	return s;
}

int virtio_blk_pci_create(struct pci_bus *bus, const char *path, bool read_only, const struct guest_mem *mem,
			  uint8_t irq_line, void (*irq)(void *ctx, int level), void *ctx, struct virtio_blk_pci **out,
			  char *err, size_t errlen, bool *host_fault)
{
	bool ignored;
	if (!host_fault)
		host_fault = &ignored;
	*host_fault = true;
	struct virtio_blk_pci *b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	int r = blk_backend_open(&b->be, path, read_only, VIRTIO_BLK_QUEUE_SIZE, err, errlen);
	if (r) {
		*host_fault = b->be.host_fault;
		free(b);
		return r;
	}
	b->bus = bus;
	b->mem = *mem;
	b->read_only = read_only;
	b->capacity = b->be.size / SECTOR;
	put_le(b->config + VIRTIO_BLK_CFG_CAPACITY, b->capacity, 8);
	put_le(b->config + VIRTIO_BLK_CFG_SEG_MAX, SEG_MAX, 4);
	put_le(b->config + VIRTIO_BLK_CFG_BLK_SIZE, SECTOR, 4);

	/* A serial the guest can match on (/dev/disk/by-id): this image's inode. */
	struct stat st;
	char id[VIRTIO_BLK_ID_BYTES + 1] = { 0 };
	if (fstat(b->be.fd, &st) == 0)
		snprintf(id, sizeof(id), "vmm-%llx", (unsigned long long)st.st_ino);
	else
		snprintf(id, sizeof(id), "vmm-disk");
	memcpy(b->id, id, sizeof(b->id)); /* zero-padded; no terminator when all 20 are used */

	uint64_t features = (1ull << VIRTIO_BLK_F_SEG_MAX) | (1ull << VIRTIO_BLK_F_BLK_SIZE) |
			    (1ull << VIRTIO_BLK_F_FLUSH) | (1ull << VIRTIO_RING_F_INDIRECT_DESC);
	if (read_only)
		features |= 1ull << VIRTIO_BLK_F_RO;
	r = virtio_pci_init(&b->vp, &blk_ops, b, features, &b->mem, irq_line, irq, ctx);
	if (!r) {
		r = pci_bus_add(bus, &b->vp.pci, NULL);
		if (r)
			virtio_pci_destroy(&b->vp);
	}
	if (r) {
		snprintf(err, errlen, "%s: cannot add a virtio-blk PCI device: %s", path, strerror(-r));
		blk_backend_close(&b->be);
		free(b);
		return r;
	}
	*out = b;
	return 0;
}

void virtio_blk_pci_on_host_error(struct virtio_blk_pci *b, void (*fn)(void *ctx, const char *what), void *ctx)
{
	pthread_mutex_lock(&b->vp.lock);
	b->host_error = fn;
	b->host_error_ctx = ctx;
	pthread_mutex_unlock(&b->vp.lock);
}

int virtio_blk_pci_destroy(struct virtio_blk_pci *b, unsigned *left)
{
	unsigned ignored;
	if (!left)
		left = &ignored;
	*left = 0;
	if (!b)
		return 0;
	pci_bus_remove(b->bus, &b->vp.pci);
	pthread_mutex_lock(&b->vp.lock);
	/* Runs the last callbacks, freeing their requests; bounded (BLK_DRAIN_WAIT_MS). */
	int r = blk_backend_close(&b->be);
	*left = b->in_flight;
	pthread_mutex_unlock(&b->vp.lock);
	virtio_pci_destroy(&b->vp);
	free(b);
	return r;
}
