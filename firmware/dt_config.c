/* Reads and checks the device tree with libfdt, at CPL3 on every vCPU. */
#include <libfdt.h>
#include <stdarg.h>

#include "firmware/console.h"
#include "firmware/dt_config.h"
#include "firmware/fw.h"
#include "firmware/hypercall.h"

#define FOUR_GIB 0x100000000ull

void fw_config_error(const struct fw_config *cfg, const char *fmt, ...)
{
	char buf[200];
	va_list ap;

	if (cfg->quiet)
		return;
	va_start(ap, fmt);
	fw_vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fw_printf("firmware: error: %s\n", buf);
}

static const void *get_prop(const struct fw_config *cfg, int node, const char *path,
			    const char *name, int *len)
{
	const void *p = fdt_getprop(cfg->fdt, node, name, len);

	if (!p)
		fw_config_error(cfg, "device tree: %s: missing property \"%s\"", path, name);
	return p;
}

static int get_u32(const struct fw_config *cfg, int node, const char *path, const char *name,
		   uint32_t *out)
{
	int len;
	const void *p = get_prop(cfg, node, path, name, &len);

	if (!p)
		return -1;
	if (len != 4) {
		fw_config_error(cfg, "device tree: %s: property \"%s\" is %d bytes, expected 4",
				path, name, len);
		return -1;
	}
	*out = fdt32_ld(p);
	return 0;
}

static int get_u64(const struct fw_config *cfg, int node, const char *path, const char *name,
		   uint64_t *out)
{
	int len;
	const void *p = get_prop(cfg, node, path, name, &len);

	if (!p)
		return -1;
	if (len != 8) {
		fw_config_error(cfg, "device tree: %s: property \"%s\" is %d bytes, expected 8",
				path, name, len);
		return -1;
	}
	*out = fdt64_ld(p);
	return 0;
}

static int get_str(const struct fw_config *cfg, int node, const char *path, const char *name,
		   const char **out)
{
	int len;
	const char *p = get_prop(cfg, node, path, name, &len);

	if (!p)
		return -1;
	if (len < 2 || p[len - 1] || strnlen(p, len) != (size_t)len - 1) {
		fw_config_error(cfg, "device tree: %s: property \"%s\" is not a non-empty string",
				path, name);
		return -1;
	}
	*out = p;
	return 0;
}

static int get_node(const struct fw_config *cfg, const char *path)
{
	int node = fdt_path_offset(cfg->fdt, path);

	if (node < 0)
		fw_config_error(cfg, "device tree: no node %s (%s)", path, fdt_strerror(node));
	return node;
}

/* An optional u32: absent gives dflt; present but malformed is an error. */
static int get_u32_opt(const struct fw_config *cfg, int node, const char *path,
		       const char *name, uint32_t dflt, uint32_t *out)
{
	if (!fdt_getprop(cfg->fdt, node, name, NULL)) {
		*out = dflt;
		return 0;
	}
	return get_u32(cfg, node, path, name, out);
}

int fw_dt_workload_u32_opt(const struct fw_config *cfg, const char *prop, uint32_t dflt,
			   uint32_t *out)
{
	return get_u32_opt(cfg, cfg->workload_node, "/vmm/workload", prop, dflt, out);
}

int fw_dt_workload_u32(const struct fw_config *cfg, const char *prop, uint32_t *out)
{
	return get_u32(cfg, cfg->workload_node, "/vmm/workload", prop, out);
}

int fw_dt_workload_str(const struct fw_config *cfg, const char *prop, const char **out)
{
	return get_str(cfg, cfg->workload_node, "/vmm/workload", prop, out);
}

/* Addresses the firmware dereferences at CPL3 must lie in the identity map. */
static int check_window(const struct fw_config *cfg, const char *what, uint64_t base,
			uint64_t size)
{
	if (base & 0xfff || base >= FOUR_GIB || size > FOUR_GIB - base) {
		fw_config_error(cfg, "device tree: %s 0x%lx (+0x%lx) is not page-aligned below 4 GiB",
				what, base, size);
		return -1;
	}
	return 0;
}

int fw_config_parse(struct fw_config *cfg, const void *fdt)
{
	int err, vmm, mem, len;
	const void *reg;

	cfg->fdt = fdt;
	if ((uintptr_t)fdt >= FOUR_GIB || (uintptr_t)fdt & 7) {
		fw_config_error(cfg, "device tree address %p is not 8-aligned below 4 GiB", fdt);
		return -1;
	}
	err = fdt_check_header(fdt);
	if (err) {
		fw_config_error(cfg, "device tree at %p: %s", fdt, fdt_strerror(err));
		return -1;
	}

	vmm = get_node(cfg, "/vmm");
	if (vmm < 0 || get_u32(cfg, vmm, "/vmm", "abi-version", &cfg->abi_version) ||
	    get_u32(cfg, vmm, "/vmm", "num-cpus", &cfg->num_cpus) ||
	    get_u64(cfg, vmm, "/vmm", "tsc-hz", &cfg->tsc_hz) ||
	    get_u64(cfg, vmm, "/vmm", "hypercall-base", &cfg->hc_base) ||
	    get_u64(cfg, vmm, "/vmm", "shared-pages", &cfg->shared_pages) ||
	    get_u32(cfg, vmm, "/vmm", "vm-id", &cfg->vm_id) ||
	    /* Absent in a VMM that offers no PV service (ABI.md 4.2). */
	    get_u32_opt(cfg, vmm, "/vmm", "pv-features", 0, &cfg->pv_features))
		return -1;

	mem = get_node(cfg, "/memory@0");
	if (mem < 0 || !(reg = get_prop(cfg, mem, "/memory@0", "reg", &len)))
		return -1;
	if (len < 16) {
		fw_config_error(cfg, "device tree: /memory@0: \"reg\" is %d bytes, expected 16", len);
		return -1;
	}
	cfg->mem_base = fdt64_ld(reg);
	cfg->mem_size = fdt64_ld((const fdt64_t *)reg + 1);

	cfg->workload_node = get_node(cfg, "/vmm/workload");
	if (cfg->workload_node < 0 || fw_dt_workload_str(cfg, "name", &cfg->workload) ||
	    fw_dt_workload_u32(cfg, "duration-ms", &cfg->duration_ms))
		return -1;

	if (cfg->abi_version < VMM_ABI_VERSION) {
		fw_config_error(cfg, "VMM speaks hypercall ABI %u, the firmware needs %u",
				cfg->abi_version, VMM_ABI_VERSION);
		return -1;
	}
	if (cfg->num_cpus == 0 || cfg->num_cpus > FW_MAX_CPUS) {
		fw_config_error(cfg, "num-cpus %u is outside the firmware's range 1..%u",
				cfg->num_cpus, FW_MAX_CPUS);
		return -1;
	}
	if (cfg->tsc_hz == 0) {
		fw_config_error(cfg, "device tree: /vmm: tsc-hz is 0");
		return -1;
	}
	if (check_window(cfg, "hypercall-base", cfg->hc_base, VMM_HC_SIZE) ||
	    check_window(cfg, "shared-pages", cfg->shared_pages, 4096ull * cfg->num_cpus))
		return -1;
	return 0;
}
