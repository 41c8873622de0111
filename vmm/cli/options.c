/* The rows of `vmm run`'s option table (options.h) and the parsers of the
 * options that are more than a number, a switch or a path. */
#include "vmm/cli/options.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched/domain_core.h"
#include "sched/policy.h"
#include "vcpu/x86/cpuid_kvm.h"
#include "vmm/cli/parse.h"
#include "vmm/cli/workloads.h"

#define FIELD(f) .off = offsetof(struct vm_config, f), .size = sizeof(((struct vm_config *)0)->f)

static int parse_workload(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	char names[128];
	if (!vmm_name_in(vmm_workload_names, arg))
		return parse_fail(err, errlen, "--workload: unknown workload '%s' (known: %s)", arg,
				  vmm_name_list(vmm_workload_names, names, sizeof(names)));
	cfg->workload = arg;
	return 0;
}

static int parse_lock(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	char names[128];
	if (!vmm_name_in(vmm_lock_names, arg))
		return parse_fail(err, errlen, "--lock: unknown lock kind '%s' (known: %s)", arg,
				  vmm_name_list(vmm_lock_names, names, sizeof(names)));
	cfg->lock = arg;
	return 0;
}

static int parse_policy(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	char names[128];
	if (!sched_policy_find(arg))
		return parse_fail(err, errlen, "--yield: unknown policy '%s' (known: %s)", arg,
				  vmm_name_list(sched_policy_names(), names, sizeof(names)));
	cfg->policy = arg;
	return 0;
}

/* On by default; said explicitly, "on" needs --domain (cli.c). */
static int parse_slice_floor(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	if (parse_on_off(arg, &cfg->slice_floor))
		return parse_fail(err, errlen, "--slice-floor: '%s' is neither on nor off", arg);
	cfg->slice_floor_set = true;
	return 0;
}

static int parse_weight(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);
	if (!*arg || *end || arg[0] == '-' || v < DOM_WEIGHT_MIN || v > DOM_WEIGHT_MAX)
		return parse_fail(err, errlen, "--weight: '%s' is not a whole number from %d to %d", arg, DOM_WEIGHT_MIN,
				  DOM_WEIGHT_MAX);
	cfg->weight = (uint32_t)v;
	cfg->weight_set = true;
	return 0;
}

/* Absolute, so K processes started at different moments share one instant;
 * more than 10 minutes ahead is a mistake (a relative value, another clock). */
static int parse_start_at(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	uint64_t v;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (parse_u64(arg, 1, UINT64_MAX, &v))
		return parse_fail(err, errlen, "--start-at: '%s' is not CLOCK_MONOTONIC nanoseconds", arg);
	if (v > now + 600ull * 1000000000ull)
		return parse_fail(err, errlen, "--start-at: %s is more than 10 minutes from now (%llu)", arg,
				  (unsigned long long)now);
	cfg->start_at_ns = v;
	return 0;
}

static int parse_sched(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	if (!strcmp(arg, "vmm"))
		cfg->sched_mode = SCHED_MODE_VMM;
	else if (!strcmp(arg, "host"))
		cfg->sched_mode = SCHED_MODE_HOST;
	else
		return parse_fail(err, errlen, "--sched: '%s' is neither vmm nor host", arg);
	return 0;
}

/* Whether the process may use CPU N is checked with the slots
 * (vm_inputs_prepare), where the affinity is read. */
static int parse_loop_cpu(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	uint64_t v;
	if (!strcmp(arg, "auto"))
		cfg->loop_cpu = LOOP_CPU_AUTO;
	else if (!strcmp(arg, "none"))
		cfg->loop_cpu = LOOP_CPU_NONE;
	else if (!parse_u64(arg, 0, CPU_SETSIZE - 1, &v))
		cfg->loop_cpu = (int)v;
	else
		return parse_fail(err, errlen, "--loop-cpu: '%s' is neither auto, none nor a CPU number (0 to %d)", arg,
				  CPU_SETSIZE - 1);
	return 0;
}

static int parse_spin_detect(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
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
			return parse_fail(err, errlen,
					  "--spin-detect: unknown source '%s' (known: ple, hint, yield, none)", t);
	}
	cfg->spin_detect = mask;
	return 0;
}

static int parse_tracepoint(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	if (!strchr(arg, ':'))
		return parse_fail(err, errlen, "--ple-tracepoint: '%s' is not subsystem:event (e.g. kvm:kvm_exit)",
				  arg);
	cfg->ple_tracepoint = arg;
	return 0;
}

static int parse_kvm_device(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	if (!*arg)
		return parse_fail(err, errlen, "--kvm-device: needs a path (e.g. /dev/kvm)");
	cfg->kvm_device = arg;
	return 0;
}

/* kvmtool's form: -d FILE or -d FILE,ro */
static int parse_disk(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	size_t n = strlen(arg);
	bool ro = n > 3 && !strcmp(arg + n - 3, ",ro");
	size_t len = n - (ro ? 3 : 0);
	if (len >= sizeof(cfg->disk_path_buf))
		return parse_fail(err, errlen, "--disk: path too long");
	memcpy(cfg->disk_path_buf, arg, len);
	cfg->disk_path_buf[len] = '\0';
	cfg->disk_path = cfg->disk_path_buf;
	cfg->disk_read_only = ro;
	return 0;
}

static int parse_cpuid_mask(const char *arg, struct vm_config *cfg, char *err, size_t errlen)
{
	return x86_cpuid_mask_parse(arg, &cfg->cpuid_mask, err, errlen);
}

static const char *const *workload_names(void)
{
	return vmm_workload_names;
}

static const char *const *lock_names(void)
{
	return vmm_lock_names;
}

/* In --help order. */
const struct cli_opt cli_run_opts[] = {
	{ .name = "cpus", .short_name = 'c', .metavar = "N", .kind = CLI_OPT_U32, .min = 1, .max = 4096,
	  FIELD(ncpus), .def = "2", .help = "vCPUs" },
	/* 4M..3G: enough for any real guest, small enough to catch typos like
	 * -m 4T; RAM lies below the hypercall window (vmm/boot/layout.h) */
	{ .name = "mem", .short_name = 'm', .metavar = "SIZE", .kind = CLI_OPT_SIZE, .min = 4ull << 20,
	  .max = 3ull << 30, FIELD(mem_bytes), .def = "128M", .example = "256, 128M, 1G",
	  .help = "guest RAM: MiB, or with K/M/G suffix" },
	{ .name = "firmware", .metavar = "FILE", .kind = CLI_OPT_STRING, FIELD(firmware_path),
	  .help = "boot this x86-64 ELF instead of the bundled guest" },
	{ .name = "workload", .metavar = "NAME", .kind = CLI_OPT_FN, .parse = parse_workload, .def = "lockbench",
	  .help = "guest workload:", .choices = workload_names },
	{ .name = "lock", .metavar = "KIND", .kind = CLI_OPT_FN, .parse = parse_lock, .def = "ticket",
	  .help = "lock kind:", .choices = lock_names },
	/* ~0.5 µs at 2 GHz */
	{ .name = "cs-cycles", .metavar = "N", .kind = CLI_OPT_U32, .min = 0, .max = 1000000000,
	  FIELD(cs_cycles), .def = "1000", .help = "TSC cycles inside the critical section" },
	/* ~5 µs */
	{ .name = "work-cycles", .metavar = "N", .kind = CLI_OPT_U32, .min = 0, .max = 1000000000,
	  FIELD(work_cycles), .def = "10000", .help = "TSC cycles of private work per acquisition" },
	{ .name = "spin-threshold", .metavar = "N", .kind = CLI_OPT_U32, .min = 1, .max = 1u << 30,
	  FIELD(spin_threshold), .def = "4096", .help = "spins before a PV lock waits" },
	{ .name = "duration", .metavar = "T", .kind = CLI_OPT_TIME, .min = 1, .max = 3600000, FIELD(duration_ms),
	  .def = "2s", .example = "2s, 500ms", .help = "measured run time: 2, 2s, 500ms" },
	/* No default here: unless told, a guest gets its duration plus a
	 * margin for boot and report (cli.c), a Linux guest no limit. */
	{ .name = "timeout", .metavar = "T", .kind = CLI_OPT_TIME, .min = 0, .max = UINT64_MAX, FIELD(timeout_ms),
	  .def_help = "2 x duration + 30s", .example = "60s, 0 for none",
	  .help = "stop a guest that runs longer, 0 = never" },
	{ .name = "json", .metavar = "FILE", .kind = CLI_OPT_STRING, FIELD(json_path),
	  .help = "also write the report as JSON" },
	{ .name = "quiet", .short_name = 'q', .kind = CLI_OPT_FLAG, FIELD(quiet), .help = "do not echo the guest console" },

	{ .name = "sched", .metavar = "vmm|host", .kind = CLI_OPT_FN, .parse = parse_sched, .def = "vmm",
	  .section = "co-scheduler",
	  .help = "vmm: our co-scheduler; host: threads left to the host kernel on\n"
		  "the --pcpus CPUs, what other VMMs do" },
	/* 0 (memset) stands for every CPU: no argument can say it */
	{ .name = "pcpus", .metavar = "M", .kind = CLI_OPT_U32, .min = 1, .max = 4096, FIELD(pcpus),
	  .def_help = "every CPU this process may use", .help = "physical CPU slots" },
	{ .name = "loop-cpu", .metavar = "auto|none|N", .kind = CLI_OPT_FN, .parse = parse_loop_cpu, .def = "auto",
	  .help = "where the event loop thread (the scheduler's tick, the devices) runs:\n"
		  "auto: a CPU no slot uses if this process may use one, else unpinned;\n"
		  "none: unpinned; N: host CPU N (a slot's CPU too: it then shares it)" },
	{ .name = "vms", .metavar = "K", .kind = CLI_OPT_U32, .min = 1, .max = 64, FIELD(vms), .def = "1",
	  .help = "K copies of the guest under one scheduler" },
	{ .name = "yield", .metavar = "POLICY", .kind = CLI_OPT_FN, .parse = parse_policy, .def = "pv",
	  .help = "yield policy:", .choices = sched_policy_names },
	/* yield: hint polling costs a CPU share when slots = CPUs */
	{ .name = "spin-detect", .metavar = "LIST", .kind = CLI_OPT_FN, .parse = parse_spin_detect, .def = "yield",
	  .help = "comma list of ple, hint, yield, or none" },
	/* CFS's default latency target; see README */
	{ .name = "slice-us", .metavar = "N", .kind = CLI_OPT_U32, .min = 50, .max = 10000000, FIELD(slice_us),
	  .def = "6000", .help = "time slice" },
	/* a wake-up waits a fraction of a slice (sched/README.md) */
	{ .name = "wake-slice-us", .metavar = "N", .kind = CLI_OPT_U32, .min = 0, .max = 10000000,
	  FIELD(wake_slice_us), .def = "1000", .help = "slice length while a woken vCPU queues, 0 = as --slice-us" },
	{ .name = "ple-window-us", .metavar = "N", .kind = CLI_OPT_U32, .min = 5, .max = 1000000,
	  FIELD(ple_window_us), .def = "50", .help = "how long a spin lasts before it counts" },
	{ .name = "safe-point", .metavar = "on|off", .kind = CLI_OPT_ON_OFF, FIELD(safe_point), .def = "on",
	  .help = "defer preemption while the guest is in a lock region" },
	{ .name = "guest-slice", .metavar = "on|off", .kind = CLI_OPT_ON_OFF, FIELD(guest_slice), .def = "on",
	  .help = "with safe points: let the guest end its own slices (no timer wake-up per slice)" },
	{ .name = "own-tick", .metavar = "on|off", .kind = CLI_OPT_ON_OFF, FIELD(own_tick), .def = "off",
	  .help = "end a slot's slice on its vCPU thread's own timer, not the event loop's\n"
		  "(no loop wake-up, no cross-CPU signal per forced switch; sched/README.md)" },
	{ .name = "defer-us", .metavar = "N", .kind = CLI_OPT_U32, .min = 1, .max = 1000000, FIELD(defer_us),
	  .def = "200", .help = "hard bound on such a deferral" },
	{ .name = "pv-spinlock", .metavar = "on|off", .kind = CLI_OPT_ON_OFF, FIELD(pv_spinlock), .def = "on",
	  .help = "offer wait/kick to the guest" },
	{ .name = "pv-shootdown", .metavar = "on|off", .kind = CLI_OPT_ON_OFF, FIELD(pv_shootdown), .def = "on",
	  .help = "PV variant of the shootdown workload" },
	{ .name = "domain", .metavar = "NAME", .kind = CLI_OPT_STRING, FIELD(domain),
	  .help = "join scheduling domain NAME: share its CPUs with the other\n"
		  "vmm processes in it (vmm domain start NAME --pcpus N)" },
	{ .name = "weight", .metavar = "N", .kind = CLI_OPT_FN, .parse = parse_weight, .def_help = "100",
	  .help = "with --domain: this VM's share of the domain (cpu.weight)" },
	{ .name = "slice-floor", .metavar = "on|off", .kind = CLI_OPT_FN, .parse = parse_slice_floor, .def_help = "on",
	  .help = "with --domain: while another member waits, slices last the domain's\n"
		  "slice + grace, so its revoke is a seat's one switch (sched/DOMAIN.md)" },
	{ .name = "name", .metavar = "NAME", .kind = CLI_OPT_STRING, FIELD(vm_name),
	  .help = "with --domain: this VM's name in `vmm domain status`" },
	{ .name = "start-at", .metavar = "NS", .kind = CLI_OPT_FN, .parse = parse_start_at, .def_help = "at once",
	  .help = "start the vCPUs at this CLOCK_MONOTONIC instant (ns), so several\n"
		  "vmm processes (scripts, vmm bench) measure one window; late: reported" },
	{ .name = "trace", .metavar = "FILE", .kind = CLI_OPT_STRING, FIELD(trace_path),
	  .help = "scheduling timeline as Chrome trace-event JSON (Perfetto)" },
	{ .name = "ple-tracepoint", .metavar = "TP", .kind = CLI_OPT_FN, .parse = parse_tracepoint,
	  .help = "with --spin-detect ple: count TP (e.g. kvm:kvm_userspace_exit) as\n"
		  "pause-loop exits, to exercise the path on hosts without PLE" },
	/* resolved after parsing (cli.c): the environment reaches the `vmm
	 * run`s that scripts and `vmm bench` start */
	{ .name = "kvm-device", .metavar = "PATH", .kind = CLI_OPT_FN, .parse = parse_kvm_device,
	  .def_help = "$" VMM_KVM_DEVICE_ENV ", else " VMM_KVM_DEVICE_DEFAULT, .help = "the KVM device" },

	{ .name = "no-seccomp", .kind = CLI_OPT_FLAG, FIELD(no_seccomp), .section = "security",
	  .help = "no per-thread seccomp filters (debugging; the report says so)" },

	{ .name = "kernel", .short_name = 'k', .metavar = "FILE", .kind = CLI_OPT_STRING, FIELD(kernel_path),
	  .section = "Linux guests (no firmware; 64-bit boot protocol, ACPI, in-kernel irqchip)",
	  .help = "boot this bzImage (x86 boot protocol 2.12+)" },
	{ .name = "initrd", .short_name = 'i', .metavar = "FILE", .kind = CLI_OPT_STRING, FIELD(initrd_path),
	  .flags = CLI_NEEDS_KERNEL, .help = "initial ramdisk" },
	/* the default is set with --kernel (cli.c): given without one, it is an error */
	{ .name = "params", .short_name = 'p', .metavar = "TEXT", .kind = CLI_OPT_STRING, FIELD(cmdline),
	  .flags = CLI_NEEDS_KERNEL, .def_help = "\"console=ttyS0\"", .help = "kernel command line" },
	{ .name = "disk", .short_name = 'd', .metavar = "FILE[,ro]", .kind = CLI_OPT_FN, .parse = parse_disk,
	  .flags = CLI_NEEDS_KERNEL,
	  .help = "virtio-blk disk on virtio-pci (io_uring backend); ,ro = read-only" },
	/* a 1000 Hz guest tick */
	{ .name = "halt-check-us", .metavar = "N", .kind = CLI_OPT_U32, .min = 0, .max = 1000000,
	  FIELD(halt_check_us), .def = "1000", .flags = CLI_NEEDS_KERNEL,
	  .help = "with --sched vmm: how often to look for vCPUs halted in the host\n"
		  "kernel, whose slots are then given away; 0 = never" },
	{ .name = "cpuid-mask", .metavar = "LIST", .kind = CLI_OPT_FN, .parse = parse_cpuid_mask, .def = "auto",
	  .def_help = "auto: cx16,xsave on kvm_pvm hosts, else none",
	  .help = "hide CPU features: cx16, xsave, avx, x2apic, tsc-deadline, kvm,\nnone, auto",
	  .note = "The console is raw while the guest runs; Ctrl-a x quits (status 130).\n"
		  "A guest reboot or power-off ends the run with status 0." },

	{ .name = "help", .short_name = 'h', .kind = CLI_OPT_HELP, .help = "this text" },
};

const unsigned cli_run_nopts = sizeof(cli_run_opts) / sizeof(cli_run_opts[0]);

_Static_assert(sizeof(cli_run_opts) / sizeof(cli_run_opts[0]) <= CLI_MAX_OPTS,
	       "raise CLI_MAX_OPTS: the getopt arrays are built from the table");
