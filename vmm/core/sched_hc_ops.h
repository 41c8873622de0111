/*
 * The wait/kick/yield_to/spin hypercalls onto the co-scheduler (struct
 * hc_vm.sched_ops with hc_vm.sched a struct sched). Apart from the rest of
 * the glue so that the hypercall unit test and fuzzer drive the real
 * scheduler without a VM.
 */
#ifndef VMM_CORE_SCHED_HC_OPS_H
#define VMM_CORE_SCHED_HC_OPS_H

#include "hypercalls/hypercalls.h"

extern const struct hc_sched_ops sched_glue_hc_ops;

#endif
