#include "firmware/console.h"
#include "firmware/pv.h"

static const char *const pv_bit_names[] = {
	"wait-kick", "yield", "spin-exit", "spin-hint", "safe-point", "preempted", "guest-slice",
};

const char *fw_pv_names(uint32_t features, char *buf, unsigned len)
{
	size_t n = fw_snprintf(buf, len, "0x%x (", features);
	unsigned listed = 0;

	for (unsigned b = 0; b < 32; b++) {
		if (!(features & (1u << b)))
			continue;
		if (b < sizeof(pv_bit_names) / sizeof(pv_bit_names[0]))
			n += fw_snprintf(buf + n, len - n, "%s%s", listed ? "," : "", pv_bit_names[b]);
		else
			n += fw_snprintf(buf + n, len - n, "%sbit%u", listed ? "," : "", b);
		listed++;
	}
	fw_snprintf(buf + n, len - n, "%s)", listed ? "" : "none");
	return buf;
}

/*
 * Guest-timed slices' fields wait for our ack (ABI.md 4.3). guest_slice is
 * set first, so the VMM learns it with the ack and this first slice is
 * already ours to time. A VMM from before negotiation answers -ENOSYS and
 * writes the fields anyway; a refusal (never expected: we ack only what is
 * offered) leaves the feature off.
 */
void fw_pv_negotiate(struct fw_cpu *self)
{
	if (!(self->pv & VMM_PV_GUEST_SLICE))
		return;
	self->sp->guest_slice = 1;
	int64_t r = fw_hc(VMM_HC_ACK_FEATURES, VMM_PV_GUEST_SLICE, 0, 0, 0);
	if (r == -VMM_ENOSYS || (r >= 0 && (r & VMM_PV_GUEST_SLICE)))
		return;
	self->sp->guest_slice = 0;
	self->pv &= ~VMM_PV_GUEST_SLICE;
}

void fw_pv_report(const struct fw_cpu *self)
{
	if (!self->pv)
		return;
	fw_report("pv_spins", self->stats.spins);
	fw_report("pv_waits", self->stats.waits);
	fw_report("pv_kicks", self->stats.kicks);
	fw_report("pv_yields", self->stats.yields);
}
