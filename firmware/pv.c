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

void fw_pv_report(const struct fw_cpu *self)
{
	if (!self->pv)
		return;
	fw_report("pv_spins", self->stats.spins);
	fw_report("pv_waits", self->stats.waits);
	fw_report("pv_kicks", self->stats.kicks);
	fw_report("pv_yields", self->stats.yields);
}
