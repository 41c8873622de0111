/*
 * virtio-blk end to end against a fake guest: a driver that finds the device
 * through PCI config space, negotiates, sets up the queue through BAR 0, and
 * puts requests on the ring; the io_uring backend serves them from a temp
 * file. Data integrity, flush, read-only, GET_ID, malformed chains, reset,
 * and a fuzz loop of garbage descriptors.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "virtio_test_driver.h"

#define HDR_GPA 0xa000
#define STATUS_GPA 0xc000
#define DISK_SECTORS 2048 /* 1 MiB image */
#define F(b) (1ull << (b))
#define ALL_FEATURES (~0ull)

static char img_path[] = "/tmp/vmm-test-blk-XXXXXX";

static void make_image(void)
{
	int fd = mkstemp(img_path);
	CHECK(fd >= 0);
	uint8_t *buf = malloc(DISK_SECTORS * 512);
	for (unsigned i = 0; i < DISK_SECTORS * 512; i++)
		buf[i] = (uint8_t)(i / 512); /* each sector filled with its number's low byte */
	CHECK_EQ(pwrite(fd, buf, DISK_SECTORS * 512, 0), DISK_SECTORS * 512);
	free(buf);
	close(fd);
}

static void file_read(uint64_t off, void *buf, size_t len)
{
	int fd = open(img_path, O_RDONLY);
	CHECK_EQ(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static void setup(struct vdrv *d, bool ro, uint64_t want)
{
	char err[256];
	vd_bus_init(d);
	CHECK_EQ(virtio_blk_pci_create(&d->bus, img_path, ro, &d->gm, 11, vd_irq, d, &d->blk, err, sizeof(err), NULL), 0);
	CHECK_EQ(vd_probe(d), 0);
	CHECK_EQ(vd_start(d, want, 64), 0);
}

/*
 * One request with head 0: header, data split in `split`-byte descriptors, a
 * 1-byte status. Returns the status byte (0xee if untouched), checks used.len.
 */
static uint8_t request(struct vdrv *d, uint32_t type, uint64_t sector, uint64_t data_gpa, uint32_t len,
		       uint32_t split)
{
	struct virtio_blk_req_hdr h = { type, 0, sector };
	memcpy(d->ram + HDR_GPA, &h, sizeof(h));
	d->ram[STATUS_GPA] = 0xee;
	bool dev_writes = type == VIRTIO_BLK_T_IN || type == VIRTIO_BLK_T_GET_ID;
	unsigned n = 0;
	vd_set_desc(d, n, HDR_GPA, sizeof(h), VIRTQ_DESC_F_NEXT, (uint16_t)(n + 1));
	n++;
	for (uint32_t off = 0; off < len; off += split, n++) {
		uint32_t l = len - off < split ? len - off : split;
		vd_set_desc(d, n, data_gpa + off, l, VIRTQ_DESC_F_NEXT | (dev_writes ? VIRTQ_DESC_F_WRITE : 0),
			    (uint16_t)(n + 1));
	}
	vd_set_desc(d, n, STATUS_GPA, 1, VIRTQ_DESC_F_WRITE, 0);
	vd_kick_head(d, 0);
	CHECK_EQ(vd_wait_all(d), 0);
	struct virtq_used_elem e = vd_next_used(d);
	CHECK_EQ(e.id, 0);
	uint8_t s = d->ram[STATUS_GPA];
	if (s == VIRTIO_BLK_S_OK)
		CHECK_EQ(e.len, (type == VIRTIO_BLK_T_IN ? len : type == VIRTIO_BLK_T_GET_ID ? (len < 20 ? len : 20) : 0) + 1);
	return s;
}

static void test_config_and_features(void)
{
	struct vdrv d;
	setup(&d, false, ALL_FEATURES);
	uint64_t f = vd_device_features(&d);
	CHECK(f & F(VIRTIO_F_VERSION_1));
	CHECK(f & F(VIRTIO_BLK_F_FLUSH));
	CHECK(f & F(VIRTIO_BLK_F_SEG_MAX));
	CHECK(f & F(VIRTIO_BLK_F_BLK_SIZE));
	CHECK(f & F(VIRTIO_RING_F_INDIRECT_DESC));
	CHECK(!(f & F(VIRTIO_BLK_F_RO)));
	CHECK_EQ(mm_rd(&d, d.device + VIRTIO_BLK_CFG_CAPACITY, 4), DISK_SECTORS);
	CHECK_EQ(mm_rd(&d, d.device + VIRTIO_BLK_CFG_CAPACITY + 4, 4), 0);
	CHECK_EQ(mm_rd(&d, d.device + VIRTIO_BLK_CFG_CAPACITY, 8), DISK_SECTORS);
	CHECK_EQ(mm_rd(&d, d.device + VIRTIO_BLK_CFG_SEG_MAX, 4), 254);
	CHECK_EQ(mm_rd(&d, d.device + VIRTIO_BLK_CFG_BLK_SIZE, 4), 512);
	CHECK_EQ(cc_rd(&d, VIRTIO_PCI_COMMON_NUMQ, 2), 1);
	CHECK_EQ(cc_rd(&d, VIRTIO_PCI_COMMON_Q_NOFF, 2), 0);
	CHECK_EQ(cc_rd(&d, VIRTIO_PCI_COMMON_MSIX, 2), VIRTIO_MSI_NO_VECTOR);
	CHECK_EQ(cc_rd(&d, VIRTIO_PCI_COMMON_Q_DESCLO, 8), DESC_GPA);
	CHECK_EQ(cc_rd(&d, VIRTIO_PCI_COMMON_Q_SIZE, 2), 64);
	CHECK_EQ(virtio_blk_pci_capacity(d.blk), DISK_SECTORS);

	/* A feature we never offered makes FEATURES_OK fail; so does a pre-virtio-1 driver. */
	cc_wr(&d, VIRTIO_PCI_COMMON_STATUS, 0, 1);
	cc_wr(&d, VIRTIO_PCI_COMMON_STATUS, 3, 1);
	cc_wr(&d, VIRTIO_PCI_COMMON_GFSELECT, 0, 4);
	cc_wr(&d, VIRTIO_PCI_COMMON_GF, 1u << 7, 4);
	cc_wr(&d, VIRTIO_PCI_COMMON_GFSELECT, 1, 4);
	cc_wr(&d, VIRTIO_PCI_COMMON_GF, 1, 4);
	cc_wr(&d, VIRTIO_PCI_COMMON_STATUS, 3 | VIRTIO_STATUS_FEATURES_OK, 1);
	CHECK(!(cc_rd(&d, VIRTIO_PCI_COMMON_STATUS, 1) & VIRTIO_STATUS_FEATURES_OK));
	CHECK_EQ(vd_start(&d, F(VIRTIO_BLK_F_FLUSH), 64), -1); /* no VERSION_1 */
	/* A queue size that is not a power of two is refused. */
	CHECK_EQ(vd_start(&d, ALL_FEATURES, 64), 0);
	cc_wr(&d, VIRTIO_PCI_COMMON_STATUS, 0, 1);
	vd_bus_fini(&d);

	/* Errors opening the image are one clear line. */
	char err[256] = "";
	struct vdrv e;
	vd_bus_init(&e);
	CHECK(virtio_blk_pci_create(&e.bus, "/nonexistent/disk.img", false, &e.gm, 11, vd_irq, &e, &e.blk, err,
				    sizeof(err), NULL) < 0);
	CHECK(strstr(err, "/nonexistent/disk.img: No such file") != NULL);
	CHECK(virtio_blk_pci_create(&e.bus, "/tmp", false, &e.gm, 11, vd_irq, &e, &e.blk, err, sizeof(err), NULL) < 0);
	CHECK(strstr(err, "/tmp") != NULL);
	e.blk = NULL;
	vd_bus_fini(&e);
}

static void test_write_read_back(void)
{
	struct vdrv d;
	setup(&d, false, ALL_FEATURES);
	uint8_t *data = d.ram + DATA_GPA;
	/* 8 sectors at sector 100, in odd-sized descriptors that cut sectors in two. */
	for (unsigned i = 0; i < 4096; i++)
		data[i] = (uint8_t)(i * 7 + 3);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_OUT, 100, DATA_GPA, 4096, 1000), VIRTIO_BLK_S_OK);
	uint8_t file[4096];
	file_read(100 * 512, file, sizeof(file));
	CHECK(memcmp(file, data, 4096) == 0);
	memset(d.ram + DATA_GPA + 0x10000, 0, 4096);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_IN, 100, DATA_GPA + 0x10000, 4096, 333), VIRTIO_BLK_S_OK);
	CHECK(memcmp(d.ram + DATA_GPA + 0x10000, data, 4096) == 0);
	/* Untouched neighbours. */
	CHECK_EQ(request(&d, VIRTIO_BLK_T_IN, 99, DATA_GPA + 0x20000, 512, 512), VIRTIO_BLK_S_OK);
	CHECK_EQ(d.ram[DATA_GPA + 0x20000], 99);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_IN, 108, DATA_GPA + 0x20000, 512, 512), VIRTIO_BLK_S_OK);
	CHECK_EQ(d.ram[DATA_GPA + 0x20000 + 511], 108);
	/* The last sector is reachable, one past it is not; neither are partial sectors. */
	CHECK_EQ(request(&d, VIRTIO_BLK_T_IN, DISK_SECTORS - 1, DATA_GPA, 512, 512), VIRTIO_BLK_S_OK);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_IN, DISK_SECTORS - 1, DATA_GPA, 1024, 512), VIRTIO_BLK_S_IOERR);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_IN, DISK_SECTORS, DATA_GPA, 512, 512), VIRTIO_BLK_S_IOERR);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_IN, ~0ull, DATA_GPA, 512, 512), VIRTIO_BLK_S_IOERR);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_IN, ~0ull / 512, DATA_GPA, 512, 512), VIRTIO_BLK_S_IOERR);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_OUT, 0, DATA_GPA, 500, 500), VIRTIO_BLK_S_IOERR);
	CHECK_EQ(request(&d, 77, 0, DATA_GPA, 512, 512), VIRTIO_BLK_S_UNSUPP);

	/* Header, data and status all in one... no: header+data readable in one descriptor, status apart. */
	struct virtio_blk_req_hdr h = { VIRTIO_BLK_T_OUT, 0, 7 };
	memcpy(d.ram + DATA_GPA + 0x30000, &h, 16);
	memset(d.ram + DATA_GPA + 0x30000 + 16, 0x5a, 512);
	vd_set_desc(&d, 5, DATA_GPA + 0x30000, 16 + 512, VIRTQ_DESC_F_NEXT, 6);
	vd_set_desc(&d, 6, STATUS_GPA, 1, VIRTQ_DESC_F_WRITE, 0);
	d.ram[STATUS_GPA] = 0xee;
	vd_kick_head(&d, 5);
	CHECK_EQ(vd_wait_all(&d), 0);
	CHECK_EQ(vd_next_used(&d).id, 5);
	CHECK_EQ(d.ram[STATUS_GPA], VIRTIO_BLK_S_OK);
	file_read(7 * 512, file, 512);
	CHECK(file[0] == 0x5a && file[511] == 0x5a);
	/* IN data and status in one writable descriptor (any layout is allowed). */
	h = (struct virtio_blk_req_hdr){ VIRTIO_BLK_T_IN, 0, 7 };
	memcpy(d.ram + HDR_GPA, &h, 16);
	memset(d.ram + DATA_GPA, 0, 513);
	d.ram[DATA_GPA + 512] = 0xee;
	vd_set_desc(&d, 8, HDR_GPA, 16, VIRTQ_DESC_F_NEXT, 9);
	vd_set_desc(&d, 9, DATA_GPA, 513, VIRTQ_DESC_F_WRITE, 0);
	vd_kick_head(&d, 8);
	CHECK_EQ(vd_wait_all(&d), 0);
	struct virtq_used_elem e = vd_next_used(&d);
	CHECK_EQ(e.id, 8);
	CHECK_EQ(e.len, 513);
	CHECK_EQ(d.ram[DATA_GPA + 512], VIRTIO_BLK_S_OK);
	CHECK(d.ram[DATA_GPA] == 0x5a && d.ram[DATA_GPA + 511] == 0x5a);
	vd_bus_fini(&d);
}

static void test_indirect_and_many_in_flight(void)
{
	struct vdrv d;
	setup(&d, false, ALL_FEATURES);
	/* 16 requests at once, each through an indirect table: write sector 200+i with byte i+1. */
	for (unsigned i = 0; i < 16; i++) {
		uint64_t t = INDIRECT_GPA + i * 64, hdr = HDR_GPA + i * 16, buf = DATA_GPA + i * 512;
		struct virtio_blk_req_hdr h = { VIRTIO_BLK_T_OUT, 0, 200 + i };
		memcpy(d.ram + hdr, &h, 16);
		memset(d.ram + buf, (int)(i + 1), 512);
		struct virtq_desc tab[3] = {
			{ hdr, 16, VIRTQ_DESC_F_NEXT, 1 },
			{ buf, 512, VIRTQ_DESC_F_NEXT, 2 },
			{ STATUS_GPA + i, 1, VIRTQ_DESC_F_WRITE, 0 },
		};
		memcpy(d.ram + t, tab, sizeof(tab));
		d.ram[STATUS_GPA + i] = 0xee;
		vd_set_desc(&d, i, t, sizeof(tab), VIRTQ_DESC_F_INDIRECT, 0);
		vd_avail(&d)[2 + d.avail_idx % d.qsize] = (uint16_t)i;
		d.avail_idx++;
	}
	__atomic_store_n(&vd_avail(&d)[1], d.avail_idx, __ATOMIC_RELEASE);
	mm_wr(&d, d.notify, 0, 2);
	CHECK_EQ(vd_wait_all(&d), 0);
	unsigned seen = 0;
	for (unsigned i = 0; i < 16; i++) {
		struct virtq_used_elem e = vd_next_used(&d);
		CHECK(e.id < 16);
		seen |= 1u << (e.id & 15);
		CHECK_EQ(d.ram[STATUS_GPA + i], VIRTIO_BLK_S_OK);
	}
	CHECK_EQ(seen, 0xffff);
	uint8_t file[512];
	for (unsigned i = 0; i < 16; i++) {
		file_read((200 + i) * 512, file, 512);
		CHECK(file[0] == i + 1 && file[511] == i + 1);
	}
	/* Read them back in one request, 16 sectors through an indirect table of 18. */
	struct virtio_blk_req_hdr h = { VIRTIO_BLK_T_IN, 0, 200 };
	memcpy(d.ram + HDR_GPA, &h, 16);
	struct virtq_desc tab[18];
	tab[0] = (struct virtq_desc){ HDR_GPA, 16, VIRTQ_DESC_F_NEXT, 1 };
	for (unsigned i = 0; i < 16; i++)
		tab[1 + i] = (struct virtq_desc){ DATA_GPA + 0x40000 + (15 - i) * 512, 512,
						 VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, (uint16_t)(2 + i) };
	tab[17] = (struct virtq_desc){ STATUS_GPA, 1, VIRTQ_DESC_F_WRITE, 0 };
	memcpy(d.ram + INDIRECT_GPA, tab, sizeof(tab));
	vd_set_desc(&d, 3, INDIRECT_GPA, sizeof(tab), VIRTQ_DESC_F_INDIRECT, 0);
	vd_kick_head(&d, 3);
	CHECK_EQ(vd_wait_all(&d), 0);
	CHECK_EQ(vd_next_used(&d).len, 16 * 512 + 1);
	CHECK_EQ(d.ram[STATUS_GPA], VIRTIO_BLK_S_OK);
	for (unsigned i = 0; i < 16; i++)
		CHECK_EQ(d.ram[DATA_GPA + 0x40000 + (15 - i) * 512 + 100], i + 1);
	vd_bus_fini(&d);
}

static void test_flush_and_write_through(void)
{
	struct vdrv d;
	setup(&d, false, ALL_FEATURES);
	struct virtio_blk_stats s0 = virtio_blk_pci_stats(d.blk);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_OUT, 3, DATA_GPA, 512, 512), VIRTIO_BLK_S_OK);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_FLUSH, 0, 0, 0, 512), VIRTIO_BLK_S_OK);
	struct virtio_blk_stats s1 = virtio_blk_pci_stats(d.blk);
	CHECK_EQ(s1.flushes - s0.flushes, 1);    /* the FLUSH reached fsync */
	CHECK_EQ(s1.dsync_writes - s0.dsync_writes, 0); /* write-back cache: plain writes */
	/* A driver without FLUSH gets write-through: every write is RWF_DSYNC. */
	CHECK_EQ(vd_start(&d, ~F(VIRTIO_BLK_F_FLUSH), 64), 0);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_OUT, 3, DATA_GPA, 512, 512), VIRTIO_BLK_S_OK);
	struct virtio_blk_stats s2 = virtio_blk_pci_stats(d.blk);
	CHECK_EQ(s2.dsync_writes - s1.dsync_writes, 1);
	vd_bus_fini(&d);
}

static void test_read_only(void)
{
	struct vdrv d;
	setup(&d, true, ALL_FEATURES);
	CHECK(vd_device_features(&d) & F(VIRTIO_BLK_F_RO));
	memset(d.ram + DATA_GPA, 0xab, 512);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_OUT, 50, DATA_GPA, 512, 512), VIRTIO_BLK_S_IOERR);
	uint8_t file[512];
	file_read(50 * 512, file, 512);
	CHECK_EQ(file[0], 50);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_IN, 50, DATA_GPA, 512, 512), VIRTIO_BLK_S_OK);
	CHECK_EQ(d.ram[DATA_GPA + 5], 50);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_FLUSH, 0, 0, 0, 512), VIRTIO_BLK_S_OK);
	CHECK_EQ(virtio_blk_pci_stats(d.blk).writes, 0);
	vd_bus_fini(&d);
}

static void test_get_id(void)
{
	struct vdrv d;
	setup(&d, false, ALL_FEATURES);
	memset(d.ram + DATA_GPA, 0xff, 64);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_GET_ID, 0, DATA_GPA, 20, 20), VIRTIO_BLK_S_OK);
	struct stat st;
	stat(img_path, &st);
	char want[21] = { 0 };
	snprintf(want, sizeof(want), "vmm-%llx", (unsigned long long)st.st_ino);
	CHECK(memcmp(d.ram + DATA_GPA, want, 20) == 0);
	CHECK_EQ(d.ram[DATA_GPA + 20], 0xff);
	/* A short buffer gets what fits. */
	memset(d.ram + DATA_GPA, 0xff, 64);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_GET_ID, 0, DATA_GPA, 6, 4), VIRTIO_BLK_S_OK);
	CHECK(memcmp(d.ram + DATA_GPA, want, 6) == 0);
	CHECK_EQ(d.ram[DATA_GPA + 6], 0xff);
	vd_bus_fini(&d);
}

/* ---- malformed chains: each fails alone; the next good request works ---- */

static int good_request_works(struct vdrv *d)
{
	memset(d->ram + DATA_GPA + 0x50000, 0, 512);
	uint8_t s = request(d, VIRTIO_BLK_T_IN, 9, DATA_GPA + 0x50000, 512, 512);
	return s == VIRTIO_BLK_S_OK && d->ram[DATA_GPA + 0x50000 + 17] == 9 ? 0 : -1;
}

/* Kicks head; returns the used length and the status byte at STATUS_GPA. */
static uint32_t bad_request(struct vdrv *d, uint16_t head, uint8_t *status)
{
	d->ram[STATUS_GPA] = 0xee;
	vd_kick_head(d, head);
	CHECK_EQ(vd_wait_all(d), 0);
	struct virtq_used_elem e = vd_next_used(d);
	CHECK_EQ(e.id, head);
	*status = d->ram[STATUS_GPA];
	return e.len;
}

static void hdr(struct vdrv *d, uint32_t type)
{
	struct virtio_blk_req_hdr h = { type, 0, 1 };
	memcpy(d->ram + HDR_GPA, &h, 16);
}

static void test_malformed_chains(void)
{
	struct vdrv d;
	setup(&d, false, ALL_FEATURES);
	uint8_t st;
	struct virtio_blk_stats s0 = virtio_blk_pci_stats(d.blk);
	hdr(&d, VIRTIO_BLK_T_IN);

#define BAD(expect_len, expect_status)                                          \
	do {                                                                     \
		CHECK_EQ(bad_request(&d, 10, &st), (expect_len));                \
		CHECK_EQ(st, (expect_status));                                   \
		CHECK_EQ(good_request_works(&d), 0);                             \
	} while (0)

	/* A loop: 10 -> 11 -> 10. */
	vd_set_desc(&d, 10, HDR_GPA, 16, VIRTQ_DESC_F_NEXT, 11);
	vd_set_desc(&d, 11, DATA_GPA, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 10);
	BAD(0, 0xee);
	/* A self-loop on the status descriptor. */
	vd_set_desc(&d, 11, STATUS_GPA, 1, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 11);
	BAD(0, 0xee);
	/* next past the queue. */
	vd_set_desc(&d, 11, DATA_GPA, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 64);
	BAD(0, 0xee);
	vd_set_desc(&d, 11, DATA_GPA, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 0xffff);
	BAD(0, 0xee);
	/* A data buffer past the end of RAM, a reachable status: IOERR. */
	vd_set_desc(&d, 11, RAM_SIZE - 256, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 12);
	vd_set_desc(&d, 12, STATUS_GPA, 1, VIRTQ_DESC_F_WRITE, 0);
	BAD(1, VIRTIO_BLK_S_IOERR);
	/* address + len overflowing 64 bits. */
	vd_set_desc(&d, 11, ~0ull - 100, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 12);
	BAD(1, VIRTIO_BLK_S_IOERR);
	vd_set_desc(&d, 11, 1ull << 63, 0xffffffffu, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 12);
	BAD(1, VIRTIO_BLK_S_IOERR);
	/* The header outside RAM. */
	vd_set_desc(&d, 10, RAM_SIZE, 16, VIRTQ_DESC_F_NEXT, 11);
	vd_set_desc(&d, 11, DATA_GPA, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 12);
	BAD(1, VIRTIO_BLK_S_IOERR);
	/* The status byte outside RAM, or not writable, or empty: nothing to write, used len 0. */
	vd_set_desc(&d, 10, HDR_GPA, 16, VIRTQ_DESC_F_NEXT, 11);
	vd_set_desc(&d, 12, RAM_SIZE + 5, 1, VIRTQ_DESC_F_WRITE, 0);
	BAD(0, 0xee);
	vd_set_desc(&d, 12, STATUS_GPA, 1, 0, 0);
	BAD(0, 0xee);
	vd_set_desc(&d, 12, STATUS_GPA, 0, VIRTQ_DESC_F_WRITE, 0);
	BAD(0, 0xee);
	/* Readable after writable. */
	vd_set_desc(&d, 11, DATA_GPA, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 12);
	vd_set_desc(&d, 12, DATA_GPA, 512, VIRTQ_DESC_F_NEXT, 13);
	vd_set_desc(&d, 13, STATUS_GPA, 1, VIRTQ_DESC_F_WRITE, 0);
	BAD(1, VIRTIO_BLK_S_IOERR);
	/* A header shorter than 16 bytes. */
	vd_set_desc(&d, 10, HDR_GPA, 8, VIRTQ_DESC_F_NEXT, 11);
	vd_set_desc(&d, 11, STATUS_GPA, 1, VIRTQ_DESC_F_WRITE, 0);
	BAD(1, VIRTIO_BLK_S_IOERR);
	/* A chain of all 64 descriptors is fine; the walk just never goes past 64. */
	for (unsigned i = 0; i < 64; i++)
		vd_set_desc(&d, i, DATA_GPA, 0, VIRTQ_DESC_F_NEXT, (uint16_t)((i + 1) % 64));
	vd_set_desc(&d, 10, HDR_GPA, 16, VIRTQ_DESC_F_NEXT, 11);
	vd_set_desc(&d, 9, STATUS_GPA, 1, VIRTQ_DESC_F_WRITE, 0);
	hdr(&d, VIRTIO_BLK_T_FLUSH);
	CHECK_EQ(bad_request(&d, 10, &st), 1);
	CHECK_EQ(st, VIRTIO_BLK_S_OK);
	vd_set_desc(&d, 9, STATUS_GPA, 1, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 10);
	BAD(0, 0xee); /* 65 long: a loop */
	hdr(&d, VIRTIO_BLK_T_IN);

	/* Indirect tables. */
	struct virtq_desc tab[4] = {
		{ HDR_GPA, 16, VIRTQ_DESC_F_NEXT, 1 },
		{ DATA_GPA, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 2 },
		{ STATUS_GPA, 1, VIRTQ_DESC_F_WRITE, 0 },
		{ 0, 0, 0, 0 },
	};
	memcpy(d.ram + INDIRECT_GPA, tab, sizeof(tab));
	vd_set_desc(&d, 10, INDIRECT_GPA, 48, VIRTQ_DESC_F_INDIRECT, 0);
	CHECK_EQ(bad_request(&d, 10, &st), 513); /* the good one first */
	CHECK_EQ(st, VIRTIO_BLK_S_OK);
	vd_set_desc(&d, 10, INDIRECT_GPA, 40, VIRTQ_DESC_F_INDIRECT, 0); /* not a multiple of 16 */
	BAD(0, 0xee);
	vd_set_desc(&d, 10, INDIRECT_GPA, 0, VIRTQ_DESC_F_INDIRECT, 0); /* empty */
	BAD(0, 0xee);
	vd_set_desc(&d, 10, INDIRECT_GPA, 16 * 65, VIRTQ_DESC_F_INDIRECT, 0); /* longer than the queue */
	BAD(0, 0xee);
	vd_set_desc(&d, 10, RAM_SIZE - 16, 48, VIRTQ_DESC_F_INDIRECT, 0); /* table past RAM */
	BAD(0, 0xee);
	vd_set_desc(&d, 10, ~0ull - 15, 48, VIRTQ_DESC_F_INDIRECT, 0); /* table address overflows */
	BAD(0, 0xee);
	vd_set_desc(&d, 10, INDIRECT_GPA, 48, VIRTQ_DESC_F_INDIRECT | VIRTQ_DESC_F_NEXT, 11); /* with NEXT */
	BAD(0, 0xee);
	/* Not at the head of the chain. */
	vd_set_desc(&d, 9, HDR_GPA, 16, VIRTQ_DESC_F_NEXT, 10);
	vd_set_desc(&d, 10, INDIRECT_GPA, 48, VIRTQ_DESC_F_INDIRECT, 0);
	CHECK_EQ(bad_request(&d, 9, &st), 0);
	CHECK_EQ(good_request_works(&d), 0);
	/* Nested. */
	struct virtq_desc nested = { INDIRECT_GPA, 48, VIRTQ_DESC_F_INDIRECT, 0 };
	memcpy(d.ram + INDIRECT_GPA + 0x100, &nested, 16);
	vd_set_desc(&d, 10, INDIRECT_GPA + 0x100, 16, VIRTQ_DESC_F_INDIRECT, 0);
	BAD(0, 0xee);
	/* A loop inside the table, an index past it. */
	tab[2].flags |= VIRTQ_DESC_F_NEXT;
	tab[2].next = 0;
	memcpy(d.ram + INDIRECT_GPA, tab, sizeof(tab));
	vd_set_desc(&d, 10, INDIRECT_GPA, 48, VIRTQ_DESC_F_INDIRECT, 0);
	BAD(0, 0xee);
	tab[2].next = 3; /* inside our buffer, but past the 3-entry table */
	memcpy(d.ram + INDIRECT_GPA, tab, sizeof(tab));
	BAD(0, 0xee);

	/* A head index past the queue (the avail ring entry itself). */
	CHECK_EQ(bad_request(&d, 64, &st), 0);
	CHECK_EQ(good_request_works(&d), 0);
	CHECK_EQ(bad_request(&d, 0xffff, &st), 0);
	CHECK_EQ(good_request_works(&d), 0);

	struct virtio_blk_stats s1 = virtio_blk_pci_stats(d.blk);
	CHECK(s1.bad_chains - s0.bad_chains >= 25);
	CHECK_EQ(s1.needs_reset, 0);
	CHECK(!(cc_rd(&d, VIRTIO_PCI_COMMON_STATUS, 1) & VIRTIO_STATUS_NEEDS_RESET));
#undef BAD
	vd_bus_fini(&d);
}

/* ---- ring-level errors, reset, interrupts ---- */

static void test_ring_errors_and_reset(void)
{
	struct vdrv d;
	setup(&d, false, ALL_FEATURES);
	/* Interrupts: a completion raises INTx and sets ISR bit 0; reading the ISR lowers it. */
	unsigned raises = d.irq_raises;
	CHECK_EQ(good_request_works(&d), 0);
	CHECK_EQ(d.irq_raises, raises + 1);
	CHECK_EQ(d.irq_level, 1);
	CHECK_EQ(cfg_rd(&d, d.slot, PCI_STATUS, 2) & PCI_STATUS_INTERRUPT, PCI_STATUS_INTERRUPT);
	CHECK_EQ(vd_isr(&d), 1);
	CHECK_EQ(d.irq_level, 0);
	CHECK_EQ(vd_isr(&d), 0);
	/* The driver may ask for no interrupts. */
	vd_avail(&d)[0] = VIRTQ_AVAIL_F_NO_INTERRUPT;
	CHECK_EQ(good_request_works(&d), 0);
	CHECK_EQ(d.irq_raises, raises + 1);
	vd_avail(&d)[0] = 0;
	/* INTx disabled in the command register holds the line low until it is enabled again. */
	cfg_wr(&d, d.slot, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_INTX_DISABLE, 2);
	CHECK_EQ(good_request_works(&d), 0);
	CHECK_EQ(d.irq_level, 0);
	cfg_wr(&d, d.slot, PCI_COMMAND, PCI_COMMAND_MEMORY, 2);
	CHECK_EQ(d.irq_level, 1);
	CHECK_EQ(vd_isr(&d), 1);

	/* An available index more than a queue ahead: DEVICE_NEEDS_RESET and a config interrupt. */
	__atomic_store_n(&vd_avail(&d)[1], (uint16_t)(d.avail_idx + 65), __ATOMIC_RELEASE);
	mm_wr(&d, d.notify, 0, 2);
	CHECK(cc_rd(&d, VIRTIO_PCI_COMMON_STATUS, 1) & VIRTIO_STATUS_NEEDS_RESET);
	CHECK_EQ(vd_isr(&d), 2);
	CHECK_EQ(virtio_blk_pci_stats(d.blk).needs_reset, 1);
	/* Kicks are ignored until a reset; the reset brings it back. */
	mm_wr(&d, d.notify, 0, 2);
	CHECK_EQ(vd_start(&d, ALL_FEATURES, 64), 0);
	CHECK(!(cc_rd(&d, VIRTIO_PCI_COMMON_STATUS, 1) & VIRTIO_STATUS_NEEDS_RESET));
	CHECK_EQ(good_request_works(&d), 0);

	/* Rings outside guest memory, or misaligned, are refused at enable. */
	cc_wr(&d, VIRTIO_PCI_COMMON_STATUS, 0, 1);
	cc_wr(&d, VIRTIO_PCI_COMMON_STATUS, 3, 1);
	cc_wr(&d, VIRTIO_PCI_COMMON_GF, 0, 4);
	cc_wr(&d, VIRTIO_PCI_COMMON_GFSELECT, 1, 4);
	cc_wr(&d, VIRTIO_PCI_COMMON_GF, 1, 4);
	cc_wr(&d, VIRTIO_PCI_COMMON_STATUS, 3 | VIRTIO_STATUS_FEATURES_OK, 1);
	cc_wr(&d, VIRTIO_PCI_COMMON_Q_DESCLO, RAM_SIZE - 512, 8);
	cc_wr(&d, VIRTIO_PCI_COMMON_Q_ENABLE, 1, 2);
	CHECK_EQ(cc_rd(&d, VIRTIO_PCI_COMMON_Q_ENABLE, 2), 0);
	CHECK(cc_rd(&d, VIRTIO_PCI_COMMON_STATUS, 1) & VIRTIO_STATUS_NEEDS_RESET);
	cc_wr(&d, VIRTIO_PCI_COMMON_STATUS, 0, 1);
	cc_wr(&d, VIRTIO_PCI_COMMON_Q_SIZE, 48, 2); /* not a power of two */
	cc_wr(&d, VIRTIO_PCI_COMMON_Q_DESCLO, DESC_GPA, 8);
	cc_wr(&d, VIRTIO_PCI_COMMON_Q_AVAILLO, AVAIL_GPA, 8);
	cc_wr(&d, VIRTIO_PCI_COMMON_Q_USEDLO, USED_GPA + 2, 8); /* and misaligned */
	cc_wr(&d, VIRTIO_PCI_COMMON_Q_ENABLE, 1, 2);
	CHECK_EQ(cc_rd(&d, VIRTIO_PCI_COMMON_Q_ENABLE, 2), 0);
	/* Queue 1 does not exist: its size reads 0 and it cannot be enabled. */
	cc_wr(&d, VIRTIO_PCI_COMMON_STATUS, 0, 1);
	cc_wr(&d, VIRTIO_PCI_COMMON_Q_SELECT, 1, 2);
	CHECK_EQ(cc_rd(&d, VIRTIO_PCI_COMMON_Q_SIZE, 2), 0);
	cc_wr(&d, VIRTIO_PCI_COMMON_Q_ENABLE, 1, 2);
	CHECK_EQ(cc_rd(&d, VIRTIO_PCI_COMMON_Q_ENABLE, 2), 0);

	/*
	 * A reset while a read is in flight: the reset itself waits for it (so
	 * nothing is in flight once it returns), and its completion must not
	 * touch the new rings. (test_virtio_blk_faults: a read that waits.)
	 */
	CHECK_EQ(vd_start(&d, ALL_FEATURES, 64), 0);
	hdr(&d, VIRTIO_BLK_T_IN);
	vd_set_desc(&d, 0, HDR_GPA, 16, VIRTQ_DESC_F_NEXT, 1);
	vd_set_desc(&d, 1, DATA_GPA, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 2);
	vd_set_desc(&d, 2, STATUS_GPA, 1, VIRTQ_DESC_F_WRITE, 0);
	vd_kick_head(&d, 0);
	CHECK_EQ(virtio_blk_pci_stats(d.blk).in_flight, 1);
	CHECK_EQ(vd_start(&d, ALL_FEATURES, 64), 0);
	CHECK_EQ(virtio_blk_pci_stats(d.blk).in_flight, 0);
	usleep(20000);
	virtio_blk_pci_process_completions(d.blk);
	CHECK_EQ(vd_used_idx(&d), 0);
	CHECK_EQ(virtio_blk_pci_stats(d.blk).in_flight, 0);
	CHECK_EQ(good_request_works(&d), 0);
	vd_bus_fini(&d);
}

/* ---- fuzz: garbage descriptors never crash, and the device still works after ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t fuzz_addr(void)
{
	switch (rnd() % 8) {
	case 0: return rnd();                                 /* anywhere */
	case 1: return RAM_SIZE - (rnd() % 64);               /* the edge */
	case 2: return ~0ull - (rnd() % 4096);                /* overflow */
	case 3: return HDR_GPA + 32 * (rnd() % 8);            /* headers */
	default: return DATA_GPA + rnd() % (RAM_SIZE - DATA_GPA); /* data */
	}
}

static void fuzz_fill_desc(uint8_t *table, unsigned n, unsigned qsize)
{
	for (unsigned i = 0; i < n; i++) {
		struct virtq_desc x = {
			fuzz_addr(),
			(uint32_t)(rnd() % 4 == 0 ? rnd() : rnd() % 2048),
			(uint16_t)(rnd() % 8 == 0 ? rnd() : rnd() % 8),
			(uint16_t)(rnd() % 8 == 0 ? rnd() : rnd() % (qsize + 2)),
		};
		if (rnd() % 3 == 0)
			x.flags &= (uint16_t)~VIRTQ_DESC_F_INDIRECT;
		if (rnd() % 6 == 0) { /* a plausible indirect table */
			x.addr = INDIRECT_GPA + 16 * (rnd() % 64);
			x.len = (uint32_t)(16 * (rnd() % 20));
			x.flags = VIRTQ_DESC_F_INDIRECT;
		}
		memcpy(table + 16 * i, &x, 16);
	}
}

static void test_fuzz(void)
{
	struct vdrv d;
	setup(&d, false, ALL_FEATURES);
	unsigned rounds = 3000, resets = 0;
	for (unsigned round = 0; round < rounds; round++) {
		/* Plausible headers: real types, sectors near and past the end. */
		for (unsigned i = 0; i < 8; i++) {
			static const uint32_t types[] = { 0, 1, 4, 8, 2, 0xffffffff };
			struct virtio_blk_req_hdr h = { types[rnd() % 6], 0,
							rnd() % 2 ? rnd() % (DISK_SECTORS + 4) : rnd() };
			memcpy(d.ram + HDR_GPA + 32 * i, &h, 16);
		}
		fuzz_fill_desc(d.ram + DESC_GPA, d.qsize, d.qsize);
		fuzz_fill_desc(d.ram + INDIRECT_GPA, 64 + 20, d.qsize);
		bool mutated = round % 2;
		if (mutated) {
			/* Eight well-formed requests (heads 0, 8, ...), then a few fields garbled. */
			for (unsigned i = 0; i < 8; i++) {
				struct virtio_blk_req_hdr *h = (void *)(d.ram + HDR_GPA + 32 * i);
				if (rnd() % 4)
					h->sector = rnd() % (DISK_SECTORS - 8);
				bool wr = h->type == VIRTIO_BLK_T_IN || h->type == VIRTIO_BLK_T_GET_ID;
				uint32_t len = 512 * (uint32_t)(rnd() % 8);
				unsigned b = 8 * i;
				vd_set_desc(&d, b, HDR_GPA + 32 * i, 16, VIRTQ_DESC_F_NEXT, (uint16_t)(b + 1));
				vd_set_desc(&d, b + 1, DATA_GPA + 0x1000 * (rnd() % 200), len,
					    VIRTQ_DESC_F_NEXT | (wr ? VIRTQ_DESC_F_WRITE : 0), (uint16_t)(b + 2));
				vd_set_desc(&d, b + 2, STATUS_GPA + i, 1, VIRTQ_DESC_F_WRITE, 0);
			}
			for (unsigned k = rnd() % 4; k; k--) {
				uint8_t *p = d.ram + DESC_GPA + 16 * (rnd() % 64) + rnd() % 16;
				*p ^= (uint8_t)(1u << (rnd() % 8));
			}
		}
		unsigned n = 1 + rnd() % 8;
		for (unsigned i = 0; i < n; i++) {
			uint16_t head = (uint16_t)(rnd() % 16 == 0 ? rnd() : rnd() % d.qsize);
			if (mutated)
				head = (uint16_t)(8 * (rnd() % 8));
			vd_avail(&d)[2 + d.avail_idx % d.qsize] = head;
			d.avail_idx++;
		}
		uint16_t idx = d.avail_idx;
		if (rnd() % 200 == 0)
			idx = (uint16_t)rnd(); /* a broken ring */
		__atomic_store_n(&vd_avail(&d)[1], idx, __ATOMIC_RELEASE);
		vd_avail(&d)[0] = (uint16_t)(rnd() % 2);
		mm_wr(&d, d.notify, 0, 2);
		for (int i = 0; i < 500 && virtio_blk_pci_stats(d.blk).in_flight; i++) {
			struct pollfd p = { .fd = virtio_blk_pci_event_fd(d.blk), .events = POLLIN };
			poll(&p, 1, 10);
			virtio_blk_pci_process_completions(d.blk);
		}
		CHECK_EQ(virtio_blk_pci_stats(d.blk).in_flight, 0);
		vd_isr(&d);
		if (cc_rd(&d, VIRTIO_PCI_COMMON_STATUS, 1) & VIRTIO_STATUS_NEEDS_RESET ||
		    vd_used_idx(&d) != d.avail_idx) {
			/* The ring got garbled (IN data landed on it, or the index broke): start over. */
			CHECK_EQ(vd_start(&d, ALL_FEATURES, 64), 0);
			resets++;
		}
	}
	struct virtio_blk_stats s = virtio_blk_pci_stats(d.blk);
	printf("fuzz: %u rounds, %llu requests, %llu bad chains, %llu ok, %llu ioerr, %llu unsupp, %u resets\n",
	       rounds, (unsigned long long)s.requests, (unsigned long long)s.bad_chains, (unsigned long long)s.ok,
	       (unsigned long long)s.ioerr, (unsigned long long)s.unsupp, resets);
	CHECK(s.bad_chains > 1000);
	CHECK(s.ok > 100);
	CHECK_EQ(vd_start(&d, ALL_FEATURES, 64), 0);
	for (unsigned i = 0; i < 1024; i++)
		d.ram[DATA_GPA + i] = (uint8_t)(i * 13);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_OUT, 9, DATA_GPA, 1024, 1024), VIRTIO_BLK_S_OK);
	CHECK_EQ(request(&d, VIRTIO_BLK_T_IN, 9, DATA_GPA + 0x1000, 1024, 1024), VIRTIO_BLK_S_OK);
	CHECK(memcmp(d.ram + DATA_GPA, d.ram + DATA_GPA + 0x1000, 1024) == 0);
	vd_bus_fini(&d);
}

/* ---- threads: a driver and extra "vCPUs" kicking while the main thread completes ---- */

static atomic_int stop_kickers;
static void *kicker(void *arg)
{
	struct vdrv *d = arg;
	uint16_t q0 = 0;
	while (!atomic_load(&stop_kickers))
		io_bus_access(&d->mmio, 1, d->notify, (uint8_t *)&q0, 2, true); /* no CHECK: it is not thread-safe */
	return NULL;
}

static atomic_int driver_done;
static void *driver(void *arg)
{
	struct vdrv *d = arg;
	/* 2000 writes of one sector each, 32 outstanding at most; then completions are checked by main. */
	for (unsigned n = 0; n < 2000; n++) {
		while ((uint16_t)(d->avail_idx - vd_used_idx(d)) >= 32)
			sched_yield();
		unsigned slot = n % 32, base = 2 * slot;
		struct virtio_blk_req_hdr h = { VIRTIO_BLK_T_OUT, 0, 1000 + slot };
		memcpy(d->ram + HDR_GPA + 16 * slot, &h, 16);
		memset(d->ram + DATA_GPA + 512 * slot, (int)(n & 0xff), 512);
		struct virtq_desc t[3] = {
			{ HDR_GPA + 16 * slot, 16, VIRTQ_DESC_F_NEXT, 1 },
			{ DATA_GPA + 512 * slot, 512, VIRTQ_DESC_F_NEXT, 2 },
			{ STATUS_GPA + slot, 1, VIRTQ_DESC_F_WRITE, 0 },
		};
		memcpy(d->ram + INDIRECT_GPA + 64 * slot, t, sizeof(t));
		vd_set_desc(d, base, INDIRECT_GPA + 64 * slot, 48, VIRTQ_DESC_F_INDIRECT, 0);
		vd_avail(d)[2 + d->avail_idx % d->qsize] = (uint16_t)base;
		d->avail_idx++;
		__atomic_store_n(&vd_avail(d)[1], d->avail_idx, __ATOMIC_RELEASE);
		uint16_t q0 = 0;
		io_bus_access(&d->mmio, 2, d->notify, (uint8_t *)&q0, 2, true);
	}
	atomic_store(&driver_done, 1);
	return NULL;
}

static void test_threads(void)
{
	struct vdrv d;
	setup(&d, false, ALL_FEATURES);
	pthread_t k[3], drv;
	for (int i = 0; i < 3; i++)
		pthread_create(&k[i], NULL, kicker, &d);
	pthread_create(&drv, NULL, driver, &d);
	for (int i = 0; i < 20000 && !(atomic_load(&driver_done) && vd_used_idx(&d) == 2000); i++) {
		struct pollfd p = { .fd = virtio_blk_pci_event_fd(d.blk), .events = POLLIN };
		poll(&p, 1, 1);
		virtio_blk_pci_process_completions(d.blk);
	}
	pthread_join(drv, NULL);
	atomic_store(&stop_kickers, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(k[i], NULL);
	CHECK_EQ(vd_used_idx(&d), 2000);
	struct virtio_blk_stats s = virtio_blk_pci_stats(d.blk);
	CHECK_EQ(s.bad_chains, 0);
	CHECK_EQ(s.ok, 2000);
	/* Sector 1000+j last got the fill of the last write n < 2000 with n % 32 == j. */
	uint8_t buf[512];
	for (unsigned j = 0; j < 32; j++) {
		file_read((1000 + j) * 512, buf, 512);
		CHECK_EQ(buf[100], (j < 16 ? 1984 + j : 1952 + j) & 0xff);
	}
	vd_bus_fini(&d);
}

int main(void)
{
	make_image();
	RUN(test_config_and_features);
	RUN(test_write_read_back);
	RUN(test_indirect_and_many_in_flight);
	RUN(test_flush_and_write_through);
	RUN(test_read_only);
	RUN(test_get_id);
	RUN(test_malformed_chains);
	RUN(test_ring_errors_and_reset);
	RUN(test_fuzz);
	RUN(test_threads);
	unlink(img_path);
	return check_summary();
}
