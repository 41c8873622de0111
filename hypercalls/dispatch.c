#include "hypercalls/hypercalls.h"

#include "hypercalls/features.h"
#include "hypercalls/pv_calls.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Warnings about a misbehaving guest go to stderr, but only the first few. */
#define HC_WARN_MAX 5

static const char *const hc_names[VMM_HC_COUNT] = {
	[VMM_HC_VERSION] = "version", [VMM_HC_CONSOLE_WRITE] = "console_write",
	[VMM_HC_REPORT] = "report",   [VMM_HC_EXIT] = "exit",
	[VMM_HC_WAIT] = "wait",       [VMM_HC_KICK] = "kick",
	[VMM_HC_YIELD_TO] = "yield_to", [VMM_HC_SPIN] = "spin",
	[VMM_HC_ACK_FEATURES] = "ack_features",
};

const char *hc_name(uint64_t nr)
{
	return nr < VMM_HC_COUNT ? hc_names[nr] : "unknown";
}

struct hc_result hc_bad(struct hc_vm *vm, unsigned vcpu, uint64_t nr, int err, const char *why)
{
	atomic_fetch_add(&vm->errors, 1);
	if (atomic_fetch_add(&vm->warned, 1) < HC_WARN_MAX)
		fprintf(stderr, "vmm: warning: vCPU %u: hypercall %llu (%s): %s\n", vcpu,
			(unsigned long long)nr, hc_name(nr), why);
	return (struct hc_result){ .ret = -err };
}

static bool key_char_ok(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-';
}

static struct hc_result do_report(struct hc_vm *vm, unsigned vcpu, uint64_t key_gpa, uint64_t value)
{
	char key[VMM_REPORT_KEY_MAX + 1];
	unsigned len = 0;
	for (;; len++) {
		/* the wrap test first: past 2^64 the key would go on at address 0 */
		const uint8_t *p = key_gpa + len < key_gpa ? NULL : guest_mem_ptr(&vm->mem, key_gpa + len, 1);
		if (!p)
			return hc_bad(vm, vcpu, VMM_HC_REPORT, VMM_EFAULT, "key outside guest memory");
		if (!*p)
			break;
		if (len == VMM_REPORT_KEY_MAX || !key_char_ok((char)*p))
			return hc_bad(vm, vcpu, VMM_HC_REPORT, VMM_EINVAL, "key too long or not [A-Za-z0-9_.-]");
		key[len] = (char)*p;
	}
	if (!len)
		return hc_bad(vm, vcpu, VMM_HC_REPORT, VMM_EINVAL, "empty key");
	key[len] = '\0';

	struct hc_vcpu_reports *r = &vm->reports[vcpu];
	unsigned i;
	for (i = 0; i < r->n && strcmp(r->e[i].key, key); i++)
		;
	if (i == r->n) {
		if (r->n == HC_MAX_REPORTS)
			return hc_bad(vm, vcpu, VMM_HC_REPORT, VMM_EINVAL, "too many distinct keys");
		r->n++;
		memcpy(r->e[i].key, key, len + 1);
	}
	r->e[i].value = value;
	return (struct hc_result){ 0 };
}

struct hc_result hc_dispatch(struct hc_vm *vm, unsigned vcpu, uint64_t nr, const uint64_t a[4])
{
	if (nr >= VMM_HC_COUNT)
		return hc_bad(vm, vcpu, nr, VMM_ENOSYS, "unknown hypercall number");
	atomic_fetch_add(&vm->calls[nr], 1);

	switch (nr) {
	case VMM_HC_VERSION:
		return (struct hc_result){ .ret = VMM_ABI_VERSION };
	case VMM_HC_CONSOLE_WRITE: {
		if (a[1] > VMM_CONSOLE_WRITE_MAX)
			return hc_bad(vm, vcpu, nr, VMM_EINVAL, "length over VMM_CONSOLE_WRITE_MAX");
		const uint8_t *p = guest_mem_ptr(&vm->mem, a[0], a[1]);
		if (!p)
			return hc_bad(vm, vcpu, nr, VMM_EFAULT, "buffer outside guest memory");
		if (vm->console && a[1])
			vm->console(vm->opaque, (const char *)p, (unsigned)a[1]);
		return (struct hc_result){ .ret = (int64_t)a[1] };
	}
	case VMM_HC_REPORT:
		return do_report(vm, vcpu, a[0], a[1]);
	case VMM_HC_EXIT:
		return (struct hc_result){ .exit_vcpu = true, .exit_status = (uint32_t)a[0] };
	case VMM_HC_WAIT:
		return hc_wait(vm, vcpu, a[0], a[1], a[2]);
	case VMM_HC_KICK:
		return hc_kick(vm, vcpu, a[0]);
	case VMM_HC_YIELD_TO:
	case VMM_HC_SPIN:
		return hc_yield(vm, vcpu, nr, a[0]);
	case VMM_HC_ACK_FEATURES:
		return hc_ack_features(vm, vcpu, a[0]);
	default:
		return hc_bad(vm, vcpu, nr, VMM_ENOSYS, "unknown hypercall number");
	}
}

bool hc_report_get(const struct hc_vm *vm, unsigned vcpu, const char *key, uint64_t *value)
{
	const struct hc_vcpu_reports *r = &vm->reports[vcpu];
	for (unsigned i = 0; i < r->n; i++)
		if (!strcmp(r->e[i].key, key)) {
			*value = r->e[i].value;
			return true;
		}
	return false;
}
