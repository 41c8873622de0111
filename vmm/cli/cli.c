#include "vmm/cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sched/policy.h"
#include "vcpu/x86/cpuid_kvm.h"
#include "vmm/cli/parse.h"
#include "vmm/cli/workloads.h"

/* Large enough for any real guest, small enough to catch typos like -m 4T. */
#define MEM_MIN (4ull << 20)
#define MEM_MAX (3ull << 30) /* RAM lies below the hypercall window (layout.h) */
/* Unless told, a guest gets its duration plus a margin for boot and report. */
#define TIMEOUT_AUTO UINT64_MAX
#define TIMEOUT_MARGIN_MS 30000

void vm_config_defaults(struct vm_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->ncpus = 2;
	cfg->mem_bytes = 128ull << 20;
	cfg->workload = "lockbench";
	cfg->lock = "ticket";
	cfg->cs_cycles = 1000;   /* ~0.5 µs at 2 GHz */
	cfg->work_cycles = 10000; /* ~5 µs */
	cfg->spin_threshold = 4096;
	cfg->duration_ms = 2000;
	cfg->timeout_ms = TIMEOUT_AUTO;
	cfg->sched_mode = SCHED_MODE_VMM;
	cfg->vms = 1;
	cfg->policy = "pv";
	cfg->spin_detect = SPIN_DETECT_YIELD; /* hint polling costs a CPU share when slots = CPUs */
	cfg->slice_us = 6000; /* CFS's default latency target; see README */
	cfg->ple_window_us = 50;
	cfg->defer_us = 200;
	cfg->halt_check_us = 1000; /* a 1000 Hz guest tick */
	cfg->safe_point = true;
	cfg->pv_spinlock = true;
	cfg->pv_shootdown = true;
	cfg->cpuid_mask = CPUID_MASK_AUTO;
}

void cli_print_run_usage(FILE *out)
{
	char w[128], l[128], p[128];
	fprintf(out,
		"usage: vmm run [options]\n"
		"  -c, --cpus N            vCPUs (default 2)\n"
		"  -m, --mem SIZE          guest RAM: MiB, or with K/M/G suffix (default 128M)\n"
		"      --firmware FILE     boot this x86-64 ELF instead of the bundled guest\n"
		"      --workload NAME     %s (default lockbench)\n"
		"      --lock KIND         %s (default ticket)\n"
		"      --cs-cycles N       TSC cycles inside the critical section (default 1000)\n"
		"      --work-cycles N     TSC cycles of private work per acquisition (default 10000)\n"
		"      --spin-threshold N  spins before a PV lock waits (default 4096)\n"
		"      --duration T        measured run time: 2, 2s, 500ms (default 2s)\n"
		"      --timeout T         stop a guest that runs longer, 0 = never (default duration + 30s)\n"
		"      --json FILE         also write the report as JSON\n"
		"  -q, --quiet             do not echo the guest console\n"
		"co-scheduler:\n"
		"      --sched vmm|host    vmm: our co-scheduler; host: threads left to the host kernel on\n"
		"                          the --pcpus CPUs, what other VMMs do (default vmm)\n"
		"      --pcpus M           physical CPU slots (default: every CPU this process may use)\n"
		"      --vms K             K copies of the guest under one scheduler (default 1)\n"
		"      --yield POLICY      %s (default pv)\n"
		"      --spin-detect LIST  comma list of ple, hint, yield, or none (default yield)\n"
		"      --slice-us N        time slice (default 6000)\n"
		"      --ple-window-us N   how long a spin lasts before it counts (default 50)\n"
		"      --safe-point on|off defer preemption while the guest is in a lock region (default on)\n"
		"      --defer-us N        hard bound on such a deferral (default 200)\n"
		"      --pv-spinlock on|off offer wait/kick to the guest (default on)\n"
		"      --pv-shootdown on|off PV variant of the shootdown workload (default on)\n"
		"      --trace FILE        scheduling timeline as Chrome trace-event JSON (Perfetto)\n"
		"      --ple-tracepoint TP with --spin-detect ple: count TP (e.g. kvm:kvm_userspace_exit) as\n"
		"                          pause-loop exits, to exercise the path on hosts without PLE\n"
		"      --kvm-device PATH   the KVM device (default $VMM_KVM_DEVICE, else /dev/kvm)\n"
		"security:\n"
		"      --no-seccomp        no per-thread seccomp filters (debugging; the report says so)\n"
		"Linux guests (no firmware; 64-bit boot protocol, ACPI, in-kernel irqchip):\n"
		"  -k, --kernel FILE       boot this bzImage (x86 boot protocol 2.12+)\n"
		"  -i, --initrd FILE       initial ramdisk\n"
		"  -p, --params TEXT       kernel command line (default \"console=ttyS0\")\n"
		"  -d, --disk FILE[,ro]    virtio-blk disk on virtio-pci (io_uring backend); ,ro = read-only\n"
		"      --halt-check-us N   with --sched vmm: how often to look for vCPUs halted in the host\n"
		"                          kernel, whose slots are then given away; 0 = never (default 1000)\n"
		"      --cpuid-mask LIST   hide CPU features: cx16, xsave, avx, x2apic, tsc-deadline, kvm,\n"
		"                          none, auto (default auto: cx16,xsave on kvm_pvm hosts, else none)\n"
		"                          The console is raw while the guest runs; Ctrl-a x quits (status 130).\n"
		"                          A guest reboot or power-off ends the run with status 0.\n"
		"  -h, --help              this text\n",
		vmm_name_list(vmm_workload_names, w, sizeof(w)),
		vmm_name_list(vmm_lock_names, l, sizeof(l)),
		vmm_name_list(sched_policy_names(), p, sizeof(p)));
}


enum {
	OPT_FIRMWARE = 256, OPT_WORKLOAD, OPT_LOCK, OPT_CS, OPT_WORK, OPT_SPIN,
	OPT_DURATION, OPT_TIMEOUT, OPT_JSON, OPT_SCHED, OPT_PCPUS, OPT_VMS, OPT_YIELD,
	OPT_SPIN_DETECT, OPT_SLICE, OPT_PLE_WINDOW, OPT_SAFE_POINT, OPT_DEFER, OPT_PV_SPINLOCK,
	OPT_PV_SHOOTDOWN, OPT_TRACE, OPT_PLE_TRACEPOINT, OPT_NO_SECCOMP, OPT_KVM_DEVICE,
	OPT_CPUID_MASK, OPT_HALT_CHECK, /* Linux guests */
};

static const struct option run_opts[] = {
	{ "cpus", required_argument, 0, 'c' },
	{ "mem", required_argument, 0, 'm' },
	{ "firmware", required_argument, 0, OPT_FIRMWARE },
	{ "workload", required_argument, 0, OPT_WORKLOAD },
	{ "lock", required_argument, 0, OPT_LOCK },
	{ "cs-cycles", required_argument, 0, OPT_CS },
	{ "work-cycles", required_argument, 0, OPT_WORK },
	{ "spin-threshold", required_argument, 0, OPT_SPIN },
	{ "duration", required_argument, 0, OPT_DURATION },
	{ "timeout", required_argument, 0, OPT_TIMEOUT },
	{ "json", required_argument, 0, OPT_JSON },
	{ "sched", required_argument, 0, OPT_SCHED },
	{ "pcpus", required_argument, 0, OPT_PCPUS },
	{ "vms", required_argument, 0, OPT_VMS },
	{ "yield", required_argument, 0, OPT_YIELD },
	{ "spin-detect", required_argument, 0, OPT_SPIN_DETECT },
	{ "slice-us", required_argument, 0, OPT_SLICE },
	{ "ple-window-us", required_argument, 0, OPT_PLE_WINDOW },
	{ "safe-point", required_argument, 0, OPT_SAFE_POINT },
	{ "defer-us", required_argument, 0, OPT_DEFER },
	{ "pv-spinlock", required_argument, 0, OPT_PV_SPINLOCK },
	{ "pv-shootdown", required_argument, 0, OPT_PV_SHOOTDOWN },
	{ "trace", required_argument, 0, OPT_TRACE },
	{ "ple-tracepoint", required_argument, 0, OPT_PLE_TRACEPOINT },
	{ "no-seccomp", no_argument, 0, OPT_NO_SECCOMP },
	{ "kvm-device", required_argument, 0, OPT_KVM_DEVICE },
	{ "kernel", required_argument, 0, 'k' },
	{ "initrd", required_argument, 0, 'i' },
	{ "params", required_argument, 0, 'p' },
	{ "disk", required_argument, 0, 'd' },
	{ "cpuid-mask", required_argument, 0, OPT_CPUID_MASK },
	{ "halt-check-us", required_argument, 0, OPT_HALT_CHECK },
	{ "quiet", no_argument, 0, 'q' },
	{ "help", no_argument, 0, 'h' },
	{ 0, 0, 0, 0 },
};

static int parse_u32_opt(const char *name, const char *arg, uint64_t min, uint64_t max,
			 uint32_t *out, char *err, size_t errlen)
{
	uint64_t v;
	if (parse_u64(arg, min, max, &v))
		return parse_fail(err, errlen, "%s: '%s' is not a whole number from %llu to %llu", name,
			    arg, (unsigned long long)min, (unsigned long long)max);
	*out = (uint32_t)v;
	return 0;
}

static int parse_on_off(const char *name, const char *arg, bool *out, char *err, size_t errlen)
{
	if (!strcmp(arg, "on") || !strcmp(arg, "1") || !strcmp(arg, "yes"))
		*out = true;
	else if (!strcmp(arg, "off") || !strcmp(arg, "0") || !strcmp(arg, "no"))
		*out = false;
	else
		return parse_fail(err, errlen, "%s: '%s' is neither on nor off", name, arg);
	return 0;
}

static int parse_spin_detect(const char *arg, unsigned *out, char *err, size_t errlen)
{
	char buf[64];
	unsigned mask = 0;
	if (strlen(arg) >= sizeof(buf))
		return parse_fail(err, errlen, "--spin-detect: '%s' is too long", arg);
	strcpy(buf, arg);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "ple"))
			mask |= SPIN_DETECT_PLE;
		else if (!strcmp(t, "hint"))
			mask |= SPIN_DETECT_HINT;
		else if (!strcmp(t, "yield"))
			mask |= SPIN_DETECT_YIELD;
		else if (strcmp(t, "none"))
			return parse_fail(err, errlen, "--spin-detect: unknown source '%s' (known: ple, hint, yield, none)", t);
	}
	*out = mask;
	return 0;
}

int cli_parse_run(int argc, char **argv, struct vm_config *cfg, char *err, size_t errlen)
{
	uint64_t v;
	char names[128];
	int c, r;
	bool linux_only = false; /* an option that only a Linux guest takes */

	/* 0, not 1: glibc then also forgets a half-read option cluster ("-qc")
	 * of an earlier call, which pointed into that call's (maybe freed) argv */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:m:k:i:p:d:qh", run_opts, NULL)) != -1) {
		const char *arg = optarg;
		switch (c) {
		case 'c':
			if (parse_u32_opt("--cpus", arg, 1, 4096, &cfg->ncpus, err, errlen))
				return -EINVAL;
			break;
		case 'm':
			if (parse_size(arg, &v))
				return parse_fail(err, errlen, "--mem: '%s' is not a size (e.g. 256, 128M, 1G)", arg);
			if (v < MEM_MIN || v > MEM_MAX)
				return parse_fail(err, errlen, "--mem: %s is outside 4M..3G", arg);
			cfg->mem_bytes = (v + (2ull << 20) - 1) & ~((2ull << 20) - 1); /* KVM wants whole pages; 2M keeps huge pages */
			break;
		case OPT_FIRMWARE: cfg->firmware_path = arg; break;
		case OPT_WORKLOAD:
			if (!vmm_name_in(vmm_workload_names, arg))
				return parse_fail(err, errlen, "--workload: unknown workload '%s' (known: %s)", arg,
					    vmm_name_list(vmm_workload_names, names, sizeof(names)));
			cfg->workload = arg;
			break;
		case OPT_LOCK:
			if (!vmm_name_in(vmm_lock_names, arg))
				return parse_fail(err, errlen, "--lock: unknown lock kind '%s' (known: %s)", arg,
					    vmm_name_list(vmm_lock_names, names, sizeof(names)));
			cfg->lock = arg;
			break;
		case OPT_CS:
			r = parse_u32_opt("--cs-cycles", arg, 0, 1000000000, &cfg->cs_cycles, err, errlen);
			if (r)
				return r;
			break;
		case OPT_WORK:
			r = parse_u32_opt("--work-cycles", arg, 0, 1000000000, &cfg->work_cycles, err, errlen);
			if (r)
				return r;
			break;
		case OPT_SPIN:
			r = parse_u32_opt("--spin-threshold", arg, 1, 1u << 30, &cfg->spin_threshold, err, errlen);
			if (r)
				return r;
			break;
		case OPT_DURATION:
			if (parse_time_ms(arg, &v) || v == 0 || v > 3600000)
				return parse_fail(err, errlen, "--duration: '%s' is not a time from 1ms to 1h (e.g. 2s, 500ms)", arg);
			cfg->duration_ms = (uint32_t)v;
			break;
		case OPT_TIMEOUT:
			if (parse_time_ms(arg, &v))
				return parse_fail(err, errlen, "--timeout: '%s' is not a time (e.g. 60s, 0 for none)", arg);
			cfg->timeout_ms = v;
			break;
		case OPT_JSON: cfg->json_path = arg; break;
		case OPT_SCHED:
			if (!strcmp(arg, "vmm"))
				cfg->sched_mode = SCHED_MODE_VMM;
			else if (!strcmp(arg, "host"))
				cfg->sched_mode = SCHED_MODE_HOST;
			else
				return parse_fail(err, errlen, "--sched: '%s' is neither vmm nor host", arg);
			break;
		case OPT_PCPUS:
			r = parse_u32_opt("--pcpus", arg, 1, 4096, &cfg->pcpus, err, errlen);
			if (r)
				return r;
			break;
		case OPT_VMS:
			r = parse_u32_opt("--vms", arg, 1, 64, &cfg->vms, err, errlen);
			if (r)
				return r;
			break;
		case OPT_YIELD:
			if (!sched_policy_find(arg))
				return parse_fail(err, errlen, "--yield: unknown policy '%s' (known: %s)", arg,
					    vmm_name_list(sched_policy_names(), names, sizeof(names)));
			cfg->policy = arg;
			break;
		case OPT_SPIN_DETECT:
			r = parse_spin_detect(arg, &cfg->spin_detect, err, errlen);
			if (r)
				return r;
			break;
		case OPT_SLICE:
			r = parse_u32_opt("--slice-us", arg, 50, 10000000, &cfg->slice_us, err, errlen);
			if (r)
				return r;
			break;
		case OPT_PLE_WINDOW:
			r = parse_u32_opt("--ple-window-us", arg, 5, 1000000, &cfg->ple_window_us, err, errlen);
			if (r)
				return r;
			break;
		case OPT_DEFER:
			r = parse_u32_opt("--defer-us", arg, 1, 1000000, &cfg->defer_us, err, errlen);
			if (r)
				return r;
			break;
		case OPT_SAFE_POINT:
			if ((r = parse_on_off("--safe-point", arg, &cfg->safe_point, err, errlen)))
				return r;
			break;
		case OPT_PV_SPINLOCK:
			if ((r = parse_on_off("--pv-spinlock", arg, &cfg->pv_spinlock, err, errlen)))
				return r;
			break;
		case OPT_PV_SHOOTDOWN:
			if ((r = parse_on_off("--pv-shootdown", arg, &cfg->pv_shootdown, err, errlen)))
				return r;
			break;
		case OPT_TRACE: cfg->trace_path = arg; break;
		case OPT_PLE_TRACEPOINT:
			if (!strchr(arg, ':'))
				return parse_fail(err, errlen, "--ple-tracepoint: '%s' is not subsystem:event (e.g. kvm:kvm_exit)", arg);
			cfg->ple_tracepoint = arg;
			break;
		case OPT_NO_SECCOMP: cfg->no_seccomp = true; break;
		case OPT_KVM_DEVICE:
			if (!*arg)
				return parse_fail(err, errlen, "--kvm-device: needs a path (e.g. /dev/kvm)");
			cfg->kvm_device = arg;
			break;
		case 'k': cfg->kernel_path = arg; break;
		case 'i': cfg->initrd_path = arg; break;
		case 'p': cfg->cmdline = arg; break;
		case 'd': {
			/* kvmtool's form: -d FILE or -d FILE,ro */
			size_t n = strlen(arg);
			bool ro = n > 3 && !strcmp(arg + n - 3, ",ro");
			if (n - (ro ? 3 : 0) >= sizeof(cfg->disk_path_buf))
				return parse_fail(err, errlen, "--disk: path too long");
			memcpy(cfg->disk_path_buf, arg, n - (ro ? 3 : 0));
			cfg->disk_path_buf[n - (ro ? 3 : 0)] = '\0';
			cfg->disk_path = cfg->disk_path_buf;
			cfg->disk_read_only = ro;
			break;
		}
		case OPT_HALT_CHECK:
			linux_only = true;
			r = parse_u32_opt("--halt-check-us", arg, 0, 1000000, &cfg->halt_check_us, err, errlen);
			if (r)
				return r;
			break;
		case OPT_CPUID_MASK:
			if ((r = x86_cpuid_mask_parse(arg, &cfg->cpuid_mask, err, errlen)))
				return r;
			break;
		case 'q': cfg->quiet = true; break;
		case 'h': return CLI_HELP;
		case ':': return parse_fail(err, errlen, "option '%s' needs a value", argv[optind - 1]);
		default: return parse_fail(err, errlen, "unknown option '%s' (see vmm run --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return parse_fail(err, errlen, "unexpected argument '%s' (see vmm run --help)", argv[optind]);
	if (!cfg->kvm_device) {
		/* The environment reaches `vmm run`s that scripts and `vmm bench` start. */
		const char *env = getenv(VMM_KVM_DEVICE_ENV);
		cfg->kvm_device = env && *env ? env : VMM_KVM_DEVICE_DEFAULT;
	}
	/* Linux guests (vmm/core/vm_linux.c) */
	if (cfg->kernel_path) {
		if (cfg->firmware_path)
			return parse_fail(err, errlen, "--kernel and --firmware exclude each other");
		if (cfg->vms > 1)
			return parse_fail(err, errlen, "--vms: a Linux guest runs alone (it owns the console)");
		if (!cfg->cmdline)
			cfg->cmdline = "console=ttyS0";
		/* Safe points are a contract with our firmware's locks (the shared
		 * page); Linux never reads it, so a deferral would only delay. */
		cfg->safe_point = false;
		if (cfg->timeout_ms == TIMEOUT_AUTO)
			cfg->timeout_ms = 0; /* an OS runs until it powers off */
		return CLI_OK;
	}
	if (cfg->initrd_path || cfg->cmdline || cfg->disk_path || linux_only)
		return parse_fail(err, errlen, "--initrd, --params, --disk and --halt-check-us need --kernel");
	if (cfg->timeout_ms == TIMEOUT_AUTO)
		cfg->timeout_ms = 2ull * cfg->duration_ms + TIMEOUT_MARGIN_MS;
	else if (cfg->timeout_ms && cfg->timeout_ms <= cfg->duration_ms && !cfg->firmware_path)
		return parse_fail(err, errlen, "--timeout (%llums) must be longer than --duration (%ums)",
			    (unsigned long long)cfg->timeout_ms, cfg->duration_ms);
	return CLI_OK;
}
