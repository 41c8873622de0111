/*
 * libFuzzer: the device tree, both ends.
 *  - byte 0 even: the firmware's reader (firmware/dt_config.c, compiled for
 *    the host with a two-function console shim) on an arbitrary blob, placed
 *    below 4 GiB as the firmware requires and ending at a PROT_NONE guard
 *    page, then the workload property reads every workload makes;
 *  - byte 0 odd: a configuration made from the input, written by the VMM's
 *    builder (vmm/boot/fdt_build.c) and read back by the firmware: every tree the
 *    VMM writes must parse, with the values it wrote.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "vmm/boot/fdt_build.h"
#include "vmm/boot/layout.h"
#include "vmm/cli/workloads.h"

/* ---- the firmware's console, as the reader needs it ---- */
#include "firmware/console.h"
size_t fw_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	int n = vsnprintf(buf, size, fmt, ap);
	return n < 0 ? 0 : (size_t)n;
}
void fw_printf(const char *fmt, ...)
{
	char b[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
}
#include "firmware/dt_config.c"

#define BLOB_MAX (64u << 10)

static uint8_t *low; /* BLOB_MAX bytes below 4 GiB, then a guard page */

static const void *place(const uint8_t *data, size_t size)
{
	if (!low) {
		low = mmap(NULL, BLOB_MAX + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT,
			   -1, 0);
		if (low == MAP_FAILED)
			abort();
		mprotect(low + BLOB_MAX, 4096, PROT_NONE);
	}
	size_t at = (BLOB_MAX - size) & ~(size_t)7;
	memset(low, 0, BLOB_MAX);
	memcpy(low + at, data, size);
	return low + at;
}

static void read_all(const void *fdt)
{
	struct fw_config cfg = { .quiet = false };
	if (fw_config_parse(&cfg, fdt) != 0)
		return;
	static const char *const u32s[] = { "cs-cycles", "work-cycles", "spin-threshold", "pv-shootdown",
					     "rounds", "phases", "duration-ms" };
	uint32_t v;
	const char *s;
	for (unsigned i = 0; i < sizeof(u32s) / sizeof(u32s[0]); i++) {
		(void)fw_dt_workload_u32(&cfg, u32s[i], &v);
		(void)fw_dt_workload_u32_opt(&cfg, u32s[i], 7, &v);
	}
	if (fw_dt_workload_str(&cfg, "lock", &s) == 0)
		(void)strlen(s);
}

static uint32_t u32_at(const uint8_t *d, size_t n, size_t i)
{
	uint32_t v = 0;
	for (size_t k = 0; k < 4; k++)
		v |= (uint32_t)(i + k < n ? d[i + k] : 0) << (8 * k);
	return v;
}

static void round_trip(const uint8_t *d, size_t n)
{
	struct vm_config cfg;
	vm_config_defaults(&cfg);
	unsigned nw = 0, nl = 0;
	while (vmm_workload_names[nw])
		nw++;
	while (vmm_lock_names[nl])
		nl++;
	cfg.ncpus = 1 + u32_at(d, n, 1) % FW_MAX_CPUS;
	cfg.mem_bytes = (4ull << 20) + (uint64_t)(u32_at(d, n, 5) % 1536) * (2ull << 20);
	cfg.workload = vmm_workload_names[u32_at(d, n, 9) % nw];
	cfg.lock = vmm_lock_names[u32_at(d, n, 13) % nl];
	cfg.cs_cycles = u32_at(d, n, 17);
	cfg.work_cycles = u32_at(d, n, 21);
	cfg.spin_threshold = u32_at(d, n, 25);
	cfg.duration_ms = u32_at(d, n, 29);
	uint32_t flags = u32_at(d, n, 33);
	cfg.sched_mode = flags & 1 ? SCHED_MODE_HOST : SCHED_MODE_VMM;
	cfg.pv_spinlock = flags & 2;
	cfg.pv_shootdown = flags & 4;
	cfg.safe_point = flags & 8;
	cfg.spin_detect = (flags >> 4) & 7;
	struct guest_layout layout;
	if (layout_compute(cfg.mem_bytes, cfg.ncpus, &layout))
		return;
	uint64_t tsc = 1 + ((uint64_t)u32_at(d, n, 37) << 8);
	struct fdt_guest_info info = { .cfg = &cfg, .layout = &layout, .tsc_hz = tsc,
				       .vm_id = u32_at(d, n, 41), .pv_features = fdt_pv_features(&cfg) };
	static uint8_t buf[BLOB_MAX];
	if (fdt_build(buf, sizeof(buf), &info) != 0)
		abort(); /* LAYOUT_FDT_MAX must hold every tree the VMM writes */
	const void *fdt = place(buf, fdt_totalsize(buf));
	struct fw_config fc = { .quiet = false };
	if (fw_config_parse(&fc, fdt) != 0 || fc.num_cpus != cfg.ncpus || fc.tsc_hz != tsc ||
	    fc.mem_size != cfg.mem_bytes || strcmp(fc.workload, cfg.workload) ||
	    fc.duration_ms != cfg.duration_ms || fc.pv_features != info.pv_features)
		abort(); /* the two ends disagree */
	read_all(fdt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > BLOB_MAX)
		return 0;
	if (data[0] & 1) {
		round_trip(data, size);
		return 0;
	}
	/*
	 * The firmware finds the tree in guest RAM, where at least its header
	 * and its claimed size are readable; libfdt assumes as much (it cannot
	 * know the buffer's size). Blobs shorter than that are not inputs the
	 * firmware can meet.
	 */
	data++, size--;
	if (size < FDT_V17_SIZE ||
	    ((uint32_t)data[4] << 24 | (uint32_t)data[5] << 16 | (uint32_t)data[6] << 8 | data[7]) > size)
		return 0; /* totalsize, read bytewise: data need not be aligned */
	read_all(place(data, size));
	return 0;
}
