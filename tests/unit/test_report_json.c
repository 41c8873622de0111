/*
 * The `vmm run --json` report, written for a fixed run (no KVM: the structs
 * are filled by hand), against tests/unit/data/report_golden.json, which the
 * old hand-rolled writer (lib/json_writer) wrote for the same run: the move
 * to jansson must keep every key, its order, its JSON type, and its value.
 * `test_report_json --write-golden FILE` writes the report for that run.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "tests/unit/json_compare.h"
#include "vmm/config.h"
#include "vmm/core/run.h"
#include "vmm/errors.h"
#include "vmm/report/report.h"

#define NCPUS 2
/* integers above INT64_MAX (registers) are read as reals; their text is compared too */
#define LOAD_FLAGS (JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL)
#define MAX_NUMBERS 400

struct fixture {
	struct vm_config cfg;
	struct vm vm;
	struct vcpu vcpus[NCPUS];
	struct hc_vcpu_reports reports[NCPUS];
	struct run r;
	struct run_summary s;
	struct vm_summary vm_sum[1];
	struct sched_vcpu_stats st[NCPUS];
};

static void fill_stats(struct sched_vcpu_stats *st, uint64_t base)
{
	memset(st, 0, sizeof(*st));
	st->ns_running = base + 1;
	st->ns_runnable = base + 2;
	st->ns_waiting = base + 3;
	st->ns_idle = base + 4;
	st->preemptions = base + 5;
	st->spin_events = base + 6;
	st->yields_given = base + 7;
	st->yields_received = base + 8;
	st->waits = base + 9;
	st->kicks_sent = base + 10;
	st->kicks_received = base + 11;
	st->deferrals = base + 12;
	st->deferrals_hard = base + 13;
	st->kernel_halts = base + 14;
	st->unslotted_wakes = base + 15;
	st->spins_queued_kept = base + 16;
	st->sticky_grants = base + 17;
	st->slot_moves = base + 18;
	st->guest_slice_yields = base + 19;
	st->guest_slice_declined = base + 20;
	st->wake_cut_slices = base + 21;
	st->floor_spin_ends = base + 22;
	st->lock_drains = base + 23;
	st->lease_ends = base + 24;
	sched_hist_add(&st->kick_latency, 1500);
	sched_hist_add(&st->kick_latency, 90000);
}

/* A finished two-vCPU run of a "Linux" guest with odd strings, NaN and huge numbers. */
static struct fixture *fixture_new(void)
{
	struct fixture *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	struct vm_config *cfg = &x->cfg;
	vm_config_defaults(cfg);
	cfg->ncpus = NCPUS;
	cfg->vms = 1;
	cfg->mem_bytes = 1ull << 40;
	cfg->kernel_path = "/boot/vmlinuz \"quoted\" back\\slash";
	cfg->initrd_path = "/tmp/initrd\tand tab";
	cfg->cmdline = "console=ttyS0 line\nbreak ctl\x01\x1f end/slash";
	cfg->disk_path = "/var/disk.img";
	cfg->disk_read_only = true;
	/* every field the report shows is set here, so that new defaults do not break the golden */
	cfg->firmware_path = NULL;
	cfg->workload = "counter";
	cfg->lock = "ticket";
	cfg->cs_cycles = UINT32_MAX;
	cfg->work_cycles = 10000;
	cfg->spin_threshold = 4096;
	cfg->duration_ms = 2000;
	cfg->sched_mode = SCHED_MODE_VMM;
	cfg->policy = "pv";
	cfg->slice_us = 6000;
	cfg->ple_window_us = 50;
	cfg->defer_us = 200;
	cfg->pv_spinlock = true;
	cfg->pv_shootdown = true;
	cfg->no_seccomp = false;
	cfg->ple_tracepoint = NULL;
	cfg->timeout_ms = UINT64_MAX; /* above INT64_MAX */
	cfg->spin_detect = SPIN_DETECT_PLE | SPIN_DETECT_YIELD;
	cfg->start_at_ns = 123456789012345ull;
	cfg->safe_point = true;

	struct vm *vm = &x->vm;
	vm->cfg = cfg;
	vm->id = 0;
	vm->fd = -1;
	vm->tsc_hz = 2994000000ull;
	vm->hc.pv_features = 7;
	atomic_store(&vm->hc.errors, 3);
	vm->hc.reports = x->reports;
	vm->vcpus = x->vcpus;
	vm->nvcpus_created = NCPUS;
	vm->layout.shared_gpa = 0;
	vm->mem = calloc(NCPUS, 4096);
	if (!vm->mem) {
		free(x);
		return NULL;
	}
	for (unsigned i = 0; i < NCPUS; i++) {
		struct vcpu *v = &x->vcpus[i];
		v->end = i ? VCPU_FAULTED : VCPU_EXITED;
		v->exit_status = i ? 0xdeadbeefu : 0;
		v->exits = (struct vcpu_exit_counts){ .total = 100 + i, .hypercall = 50, .io = 20, .mmio = 10,
						      .hlt = 5, .intr = 4, .other = 11 + i };
		v->steal_ns = 777 + i;
		v->int3_emulated = i;
		v->fwait_emulated = 2 * i;
		vm_shared_page(vm, i)->steal_ns = 888 + i;
		fill_stats(&x->st[i], 1000 * (i + 1));
		struct hc_vcpu_reports *rep = &x->reports[i];
		rep->n = 3;
		snprintf(rep->e[0].key, sizeof(rep->e[0].key), "ops");
		rep->e[0].value = 5000000 + i;
		snprintf(rep->e[1].key, sizeof(rep->e[1].key), "counter");
		rep->e[1].value = (uint64_t)INT64_MAX + 1; /* just above int64 */
		snprintf(rep->e[2].key, sizeof(rep->e[2].key), "odd\"key\\%u", i);
		rep->e[2].value = 0;
	}
	/* vCPU 1 faulted: its text and registers go into the report */
	snprintf(x->vcpus[1].fault, sizeof(x->vcpus[1].fault), "#PF at \"0xffffffff81000000\"\n(read)");
	x->vcpus[1].regs_valid = true;
	x->vcpus[1].regs.rip = 0xffffffff81234567ull;
	x->vcpus[1].regs.rsp = 0xffffc90000013f00ull;
	x->vcpus[1].regs.rflags = 0x246;
	x->vcpus[1].regs.rax = UINT64_MAX;
	x->vcpus[1].sregs.cr0 = 0x80050033;
	x->vcpus[1].sregs.cr2 = 0;
	x->vcpus[1].sregs.cr3 = 0x1000;
	x->vcpus[1].sregs.cr4 = 0x3606f0;
	x->vcpus[1].sregs.cs.selector = 0x10;

	struct run *r = &x->r;
	r->cfg = cfg;
	r->vms = vm;
	r->nvms = 1;
	r->vms_created = 1;
	r->nvcpus = NCPUS;
	r->nslots = 2;
	r->ctl.wake_fd = -1;
	atomic_store(&r->ctl.guest_status, 0xdeadbeefu);
	snprintf(r->ple_note, sizeof(r->ple_note), "no \"PLE\" here\\");
	r->ple_on = true;
	r->ple_events = 42;
	r->halt_check_us = 1000;
	snprintf(r->halt_note, sizeof(r->halt_note), "halts: \x02 not parked");
	r->start_ns = 1000000000000ull;
	r->end_ns = 1000000000000ull + 2500000000ull;
	r->start_late_ns = 12345;
	r->start_wait_ns = 0;
	r->loop_pin.cpu = 2;
	snprintf(r->loop_pin.cpus, sizeof(r->loop_pin.cpus), "2");
	snprintf(r->loop_pin.note, sizeof(r->loop_pin.note), "auto: the first CPU \"outside\" the slots' CPUs (0-1)");

	struct run_summary *s = &x->s;
	s->status = VMM_EXIT_GUEST_FAULT;
	s->all = (struct vm_summary){ .ops_total = 10000001, .ops_vcpus = 2, .elapsed_ns = 2000000000,
				      .ops_per_s = 5000000.5, .have_counter = true, .counter = 10000001,
				      .mutual_exclusion_ok = false, .run_ns_total = 1500000000, .run_vcpus = 2,
				      .running_fraction = 0.375 };
	x->vm_sum[0] = (struct vm_summary){ .ops_total = 0, .ops_vcpus = 1, .elapsed_ns = 0, .ops_per_s = NAN };
	s->vm = x->vm_sum;
	s->exits = (struct vcpu_exit_counts){ .total = 201, .hypercall = 100, .io = 40, .mmio = 20, .hlt = 10,
					      .intr = 8, .other = 23 };
	s->st = x->st;
	fill_stats(&s->st_all, 1ull << 62);
	s->loop = (struct sched_loop_stats){ .ticks = 3001, .ticks_early = 2, .timer_sets = 4500, .own_ticks = 2900, .own_timer_sets = 5800 };
	return x;
}

static void fixture_free(struct fixture *x)
{
	if (!x)
		return;
	free(x->vm.mem);
	free(x);
}

static int write_report(const char *path)
{
	struct fixture *x = fixture_new();
	if (!x)
		return -ENOMEM;
	int rc = report_write_json(path, &x->r, &x->s);
	fixture_free(x);
	return rc;
}

static void test_matches_golden(void)
{
	char golden[PATH_MAX + 64];
	json_test_data_path(golden, sizeof(golden), "report_golden.json");
	char out[] = "/tmp/test_report_json.XXXXXX";
	int fd = mkstemp(out);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	close(fd);
	CHECK_EQ(write_report(out), 0);

	json_error_t e;
	json_t *old = json_load_file(golden, LOAD_FLAGS, &e);
	if (!old)
		fprintf(stderr, "%s:%d: %s\n", golden, e.line, e.text);
	json_t *now = json_load_file(out, LOAD_FLAGS, &e);
	if (!now)
		fprintf(stderr, "%s:%d: %s\n", out, e.line, e.text);
	CHECK(old && now);
	if (old && now) {
		/* the version numbers are the build's, not the writer's */
		json_object_set_new(old, "vmm_version", json_string(VMM_VERSION));
		json_object_set_new(old, "abi_version", json_real(VMM_ABI_VERSION));
		char where[512] = "";
		int diffs = json_compare(old, now, where, sizeof(where));
		if (diffs)
			fprintf(stderr, "first difference at %s\n", where);
		CHECK_EQ(diffs, 0);
		/* the comparison itself can fail: a changed value is seen */
		json_t *bent = json_deep_copy(now);
		json_object_set_new(json_object_get(bent, "config"), "cpus", json_integer(3));
		CHECK(json_compare(old, bent, where, sizeof(where)) > 0);
		CHECK(strstr(where, "config.cpus") != NULL);
		json_decref(bent);
		/* every number has the same kind, and every integer the same digits */
		char *ta = json_test_slurp(golden), *tb = json_test_slurp(out);
		CHECK(ta && tb);
		if (ta && tb) {
			static char ka[MAX_NUMBERS][32], kb[MAX_NUMBERS][32];
			unsigned na = json_number_kinds(ta, ka, MAX_NUMBERS), nb = json_number_kinds(tb, kb, MAX_NUMBERS);
			CHECK(na > 100 && na <= MAX_NUMBERS);
			CHECK_EQ(na, nb);
			unsigned same = 0;
			for (unsigned i = 0; i < na && i < nb && i < MAX_NUMBERS; i++) {
				/* number 0 is abi_version: its kind, not its value */
				if (!strcmp(ka[i], kb[i]) || (i == 0 && !strncmp(ka[i], kb[i], 2)))
					same++;
				else
					fprintf(stderr, "number %u: %s, now %s\n", i, ka[i], kb[i]);
			}
			CHECK_EQ(same, na);
			/* the text ends in a newline, as before */
			CHECK(tb[0] && tb[strlen(tb) - 1] == '\n');
		}
		free(ta);
		free(tb);
	}
	json_decref(old);
	json_decref(now);
	unlink(out);
}

static void set_report(struct hc_vcpu_reports *rep, const char *key, uint64_t value)
{
	snprintf(rep->e[rep->n].key, sizeof(rep->e[rep->n].key), "%s", key);
	rep->e[rep->n++].value = value;
}

/* The run-level running time is summed from the guests' "run_ns" reports,
 * over only the vCPUs that sent one, against the longest window. */
static void test_summary_running_time(void)
{
	struct fixture *x = fixture_new();
	CHECK(x != NULL);
	if (!x)
		return;
	struct run_summary s;
	x->reports[0].n = x->reports[1].n = 0;
	CHECK_EQ(report_summarize(&x->r, 0, &s), 0);
	CHECK_EQ(s.all.run_vcpus, 0);
	CHECK(s.all.running_fraction == 0.0);
	report_summary_free(&s);

	set_report(&x->reports[0], "elapsed_ns", 400000000);
	set_report(&x->reports[0], "run_ns", 100000000);
	set_report(&x->reports[1], "elapsed_ns", 300000000);
	set_report(&x->reports[1], "run_ns", 60000000);
	CHECK_EQ(report_summarize(&x->r, 0, &s), 0);
	CHECK_EQ(s.vm[0].run_ns_total, 160000000);
	CHECK_EQ(s.vm[0].run_vcpus, 2);
	CHECK_EQ(s.all.run_ns_total, 160000000);
	CHECK_EQ(s.all.run_vcpus, 2);
	/* 160 ms of 2 x 400 ms (the longest window) */
	CHECK(fabs(s.all.running_fraction - 0.2) < 1e-12);
	CHECK(fabs(s.vm[0].running_fraction - 0.2) < 1e-12);
	report_summary_free(&s);

	/* a vCPU without the key does not count as one that never ran */
	x->reports[1].n = 1;
	CHECK_EQ(report_summarize(&x->r, 0, &s), 0);
	CHECK_EQ(s.all.run_vcpus, 1);
	CHECK(fabs(s.all.running_fraction - 0.25) < 1e-12);
	report_summary_free(&s);
	fixture_free(x);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write-golden")) {
		int rc = write_report(argv[2]);
		if (rc)
			fprintf(stderr, "test_report_json: %s: %s\n", argv[2], strerror(-rc));
		return rc ? 1 : 0;
	}
	RUN(test_matches_golden);
	RUN(test_summary_running_time);
	return check_summary();
}
