#include "vmm/report.h"

#include <errno.h>
#include <string.h>

#include "vcpu/x86_regs_dump.h"
#include "vmm/errors.h"
#include "vmm/json_writer.h"

const char *report_status_name(int status)
{
	switch (status) {
	case VMM_EXIT_OK: return "ok";
	case VMM_EXIT_GUEST_FAIL: return "guest_failed";
	case VMM_EXIT_GUEST_FAULT: return "guest_fault";
	case VMM_EXIT_TIMEOUT: return "timeout";
	case VMM_EXIT_DEADLOCK: return "guest_deadlock";
	case VMM_EXIT_HOST_ERROR: return "host_error";
	default: return status > 128 ? "signal" : "error";
	}
}

static void add_exits(struct vcpu_exit_counts *t, const struct vcpu_exit_counts *e)
{
	t->total += e->total;
	t->io += e->io;
	t->mmio += e->mmio;
	t->hypercall += e->hypercall;
	t->hlt += e->hlt;
	t->intr += e->intr;
	t->other += e->other;
}

void report_summarize(const struct vm *vm, int status, struct run_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->status = status;
	for (unsigned i = 0; i < vm->cfg->ncpus; i++) {
		uint64_t v;
		if (hc_report_get(&vm->hc, i, "ops", &v)) {
			s->ops_total += v;
			s->ops_vcpus++;
		}
		if (hc_report_get(&vm->hc, i, "elapsed_ns", &v) && v > s->elapsed_ns)
			s->elapsed_ns = v;
		if (hc_report_get(&vm->hc, i, "counter", &v)) {
			s->have_counter = true;
			s->counter = v;
		}
		add_exits(&s->exits, &vm->vcpus[i].exits);
	}
	if (s->elapsed_ns)
		s->ops_per_s = (double)s->ops_total * 1e9 / (double)s->elapsed_ns;
	s->mutual_exclusion_ok = s->have_counter && s->counter == s->ops_total;
}

static const char *image_name(const struct vm *vm)
{
	return vm->cfg->firmware_path ? vm->cfg->firmware_path : "bundled";
}

void report_print(FILE *out, const struct vm *vm, const struct run_summary *s)
{
	const struct vm_config *cfg = vm->cfg;
	if (cfg->firmware_path)
		fprintf(out, "\n== vmm %s: guest %s, %u vCPU%s, %lluM ==\n", VMM_VERSION, cfg->firmware_path,
			cfg->ncpus, cfg->ncpus == 1 ? "" : "s", (unsigned long long)(cfg->mem_bytes >> 20));
	else
		fprintf(out, "\n== vmm %s: %s, lock %s, %u vCPU%s, %lluM ==\n", VMM_VERSION, cfg->workload,
			cfg->lock, cfg->ncpus, cfg->ncpus == 1 ? "" : "s", (unsigned long long)(cfg->mem_bytes >> 20));
	fprintf(out, "status     %s (exit %d, guest status %u), wall %.3f s\n", report_status_name(s->status),
		s->status, atomic_load(&vm->guest_status), (double)(vm->end_ns - vm->start_ns) / 1e9);
	if (s->ops_vcpus) {
		fprintf(out, "ops/s      %.0f  (%llu ops in %.3f s)\n", s->ops_per_s,
			(unsigned long long)s->ops_total, (double)s->elapsed_ns / 1e9);
		if (s->have_counter)
			fprintf(out, "counter    %llu: mutual exclusion %s\n", (unsigned long long)s->counter,
				s->mutual_exclusion_ok ? "holds" : "VIOLATED");
	}
	fprintf(out, "\n%-5s %-8s %6s %12s %8s %8s %8s %8s %6s %8s\n", "vcpu", "state", "status", "ops",
		"exits", "hcall", "io", "mmio", "hlt", "signal");
	for (unsigned i = 0; i < cfg->ncpus; i++) {
		const struct vcpu *v = &vm->vcpus[i];
		uint64_t ops = 0;
		bool has = hc_report_get(&vm->hc, i, "ops", &ops);
		char opsbuf[24];
		snprintf(opsbuf, sizeof(opsbuf), has ? "%llu" : "-", (unsigned long long)ops);
		fprintf(out, "%-5u %-8s %6u %12s %8llu %8llu %8llu %8llu %6llu %8llu\n", i, vcpu_end_name(v->end),
			v->exit_status, opsbuf, (unsigned long long)v->exits.total,
			(unsigned long long)v->exits.hypercall, (unsigned long long)v->exits.io,
			(unsigned long long)v->exits.mmio, (unsigned long long)v->exits.hlt,
			(unsigned long long)v->exits.intr);
	}
	fprintf(out, "%-5s %-8s %6s %12llu %8llu %8llu %8llu %8llu %6llu %8llu\n", "all", "", "",
		(unsigned long long)s->ops_total, (unsigned long long)s->exits.total,
		(unsigned long long)s->exits.hypercall, (unsigned long long)s->exits.io,
		(unsigned long long)s->exits.mmio, (unsigned long long)s->exits.hlt,
		(unsigned long long)s->exits.intr);
	uint64_t errs = atomic_load(&vm->hc.errors);
	if (errs)
		fprintf(out, "hypercall errors: %llu (bad calls answered with an error code)\n",
			(unsigned long long)errs);
}

void report_print_fault(FILE *out, const struct vm *vm, const struct run_summary *s)
{
	if (s->status != VMM_EXIT_GUEST_FAULT && s->status != VMM_EXIT_TIMEOUT)
		return;
	if (s->status == VMM_EXIT_TIMEOUT)
		fprintf(out, "vmm: guest timed out after %llu ms; vCPU states:\n",
			(unsigned long long)vm->cfg->timeout_ms);
	for (unsigned i = 0; i < vm->cfg->ncpus; i++) {
		const struct vcpu *v = &vm->vcpus[i];
		bool culprit = v->end == VCPU_FAULTED || (s->status == VMM_EXIT_TIMEOUT && v->end == VCPU_STOPPED);
		if (!culprit)
			continue;
		fprintf(out, "vmm: vCPU %u %s%s%s\n", i, vcpu_end_name(v->end), v->fault[0] ? ": " : "", v->fault);
		if (v->regs_valid)
			x86_regs_print(out, "    ", &v->regs, &v->sregs);
	}
}

static void json_config(struct json *j, const struct vm *vm)
{
	const struct vm_config *cfg = vm->cfg;
	json_obj(j, "config");
	json_u64(j, "cpus", cfg->ncpus);
	json_u64(j, "mem_bytes", cfg->mem_bytes);
	json_str(j, "firmware", image_name(vm));
	json_str(j, "workload", cfg->workload);
	json_str(j, "lock", cfg->lock);
	json_u64(j, "cs_cycles", cfg->cs_cycles);
	json_u64(j, "work_cycles", cfg->work_cycles);
	json_u64(j, "spin_threshold", cfg->spin_threshold);
	json_u64(j, "duration_ms", cfg->duration_ms);
	json_u64(j, "timeout_ms", cfg->timeout_ms);
	json_u64(j, "tsc_hz", vm->tsc_hz);
	json_end_obj(j);
}

static void json_exits(struct json *j, const struct vcpu_exit_counts *e)
{
	json_obj(j, "exits");
	json_u64(j, "total", e->total);
	json_u64(j, "hypercall", e->hypercall);
	json_u64(j, "io", e->io);
	json_u64(j, "mmio", e->mmio);
	json_u64(j, "hlt", e->hlt);
	json_u64(j, "signal", e->intr);
	json_u64(j, "other", e->other);
	json_end_obj(j);
}

static void json_regs(struct json *j, const struct vcpu *v)
{
	json_obj(j, "regs");
	json_u64(j, "rip", v->regs.rip);
	json_u64(j, "rsp", v->regs.rsp);
	json_u64(j, "rflags", v->regs.rflags);
	json_u64(j, "rax", v->regs.rax);
	json_u64(j, "rdi", v->regs.rdi);
	json_u64(j, "rsi", v->regs.rsi);
	json_u64(j, "cr0", v->sregs.cr0);
	json_u64(j, "cr2", v->sregs.cr2);
	json_u64(j, "cr3", v->sregs.cr3);
	json_u64(j, "cr4", v->sregs.cr4);
	json_u64(j, "cpl", v->sregs.cs.selector & 3);
	json_end_obj(j);
}

static void json_vcpu(struct json *j, const struct vm *vm, unsigned i)
{
	const struct vcpu *v = &vm->vcpus[i];
	const struct hc_vcpu_reports *r = &vm->hc.reports[i];
	uint64_t ops;
	json_obj(j, NULL);
	json_u64(j, "id", i);
	json_str(j, "state", vcpu_end_name(v->end));
	json_u64(j, "exit_status", v->exit_status);
	if (hc_report_get(&vm->hc, i, "ops", &ops))
		json_u64(j, "ops", ops);
	else
		json_null(j, "ops");
	json_obj(j, "reports");
	for (unsigned k = 0; k < r->n; k++)
		json_u64(j, r->e[k].key, r->e[k].value);
	json_end_obj(j);
	json_exits(j, &v->exits);
	if (v->fault[0])
		json_str(j, "fault", v->fault);
	if (v->regs_valid)
		json_regs(j, v);
	json_end_obj(j);
}

int report_write_json(const char *path, const struct vm *vm, const struct run_summary *s)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	struct json j;
	json_begin(&j, f);
	json_obj(&j, NULL);
	json_str(&j, "vmm_version", VMM_VERSION);
	json_u64(&j, "abi_version", VMM_ABI_VERSION);
	json_str(&j, "status", report_status_name(s->status));
	json_i64(&j, "exit_code", s->status);
	json_u64(&j, "guest_status", atomic_load(&vm->guest_status));
	json_config(&j, vm);
	if (s->ops_vcpus) {
		json_f64(&j, "ops_per_s", s->ops_per_s);
		json_u64(&j, "ops_total", s->ops_total);
	} else {
		json_null(&j, "ops_per_s");
		json_null(&j, "ops_total");
	}
	json_u64(&j, "elapsed_ns", s->elapsed_ns);
	json_u64(&j, "wall_ns", vm->end_ns - vm->start_ns);
	if (s->have_counter) {
		json_u64(&j, "counter", s->counter);
		json_bool(&j, "mutual_exclusion_ok", s->mutual_exclusion_ok);
	} else {
		json_null(&j, "counter");
		json_null(&j, "mutual_exclusion_ok");
	}
	json_u64(&j, "hypercall_errors", atomic_load(&vm->hc.errors));
	json_exits(&j, &s->exits);
	json_arr(&j, "vcpus");
	for (unsigned i = 0; i < vm->cfg->ncpus; i++)
		json_vcpu(&j, vm, i);
	json_end_arr(&j);
	json_end_obj(&j);
	json_finish(&j);
	int r = ferror(f) ? -EIO : 0;
	if (fclose(f) && !r)
		r = -errno;
	return r;
}
