"""The guest-timed microbenchmark workloads `vmm bench` uses, checked for
their mechanism (which path each switch and wake took, in the report's
counters), never for speed: that is BENCHMARKS.md's business.

- spswitch: 2 vCPUs on 1 slot, safe points on; every slice end must be
  answered by the guest at a lock boundary (yield_to(-1)), whether it times
  the slice itself (guest-timed slices) or the VMM asks, and each timed
  sample pairs a resume with the other vCPU's stamp taken inside a lock call.
- kicklat: 2 vCPUs on 2 slots; every kick either wakes the sleeper from a
  wait (a timed sample) or finds it not yet asleep (early), nothing else."""
import math

import harness
from harness import need_kvm, vmm


def _positive(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def _spswitch(guest_slice):
    # In the nested KVM a vCPU reaches its next lock boundary in ms, not us
    # (QEMU runs the inner host's CPUs in turns): slice and bound scaled.
    slice_us, defer_us, duration = (10000, 5000, "1s") if harness.nested() else (1000, 200, "300ms")
    r = vmm("-c", "2", "--pcpus", "1", "--yield", "none", "--spin-detect", "none", "--slice-us",
            str(slice_us), "--defer-us", str(defer_us), "--safe-point", "on", "--guest-slice", guest_slice,
            "--workload", "spswitch", "--duration", duration, "-q", timeout=300)
    assert r.rc == 0, r
    st = r.report["sched"]
    reps = [v["reports"] for v in r.report["vcpus"]]
    # the only forced exits are the hard deadlines (start-up, the end)...
    assert st["preemptions"] == st["deferrals_hard"], st
    # ...and both vCPUs left by themselves, at lock boundaries
    assert all(x["pv_yields"] > 0 and x["ops"] > 0 for x in reps), reps
    last = [x for x in reps if "switches_total" in x]
    assert len(last) == 1, reps  # the last vCPU to finish sums both
    total = last[0]["switches_total"]
    assert total == sum(x["switches"] for x in reps) and total > 0, reps
    assert _positive(last[0]["switch_ns"]) and _positive(last[0]["switch_mean_ns"]), last
    # a resume finds no stamp only when the other vCPU was forced out between
    # lock calls or ended its window
    assert sum(x["unpaired"] for x in reps) <= st["deferrals_hard"] + 2, (reps, st)
    # each timed switch was a yield the VMM saw
    assert total <= sum(x["pv_yields"] for x in reps), reps
    return st


@harness.nested_stage
def test_spswitch_switches_at_safe_points_not_forced_exits():
    """Both safe-point paths: the guest timing its own slice (the default),
    and the VMM's request in preempt_pending at each slice end."""
    need_kvm()
    st = _spswitch("on")
    # the guest ended its slices; requests only before its opt-in was read
    assert st["guest_slice_yields"] > 0 and st["deferrals"] <= 4 + st["guest_slice_declined"], st
    assert st["deferrals_hard"] * 5 <= st["guest_slice_yields"], st
    st = _spswitch("off")
    # every slice end became a request in the shared page, answered in time
    assert st["guest_slice_yields"] == 0 and st["deferrals"] > 0, st
    assert st["deferrals_hard"] * 5 <= st["deferrals"], st


def test_spswitch_without_safe_points_times_nothing():
    """The control: with safe points off the same loop is preempted by force
    (no request, no yield), so no switch is timed and none is claimed."""
    need_kvm()
    slice_us, duration = (10000, "1s") if harness.nested() else (1000, "300ms")
    r = vmm("-c", "2", "--pcpus", "1", "--yield", "none", "--spin-detect", "none", "--slice-us",
            str(slice_us), "--safe-point", "off", "--workload", "spswitch", "--duration", duration,
            "-q", timeout=300)
    assert r.rc == 0, r
    st = r.report["sched"]
    assert st["deferrals"] == 0 and st["preemptions"] > 0, st
    reps = [v["reports"] for v in r.report["vcpus"]]
    assert all(x["pv_yields"] == 0 and x["switches"] == 0 for x in reps), reps
    assert [x.get("switches_total") for x in reps if "switches_total" in x] == [0], reps


@harness.nested_stage
def test_kicklat_times_kicks_of_sleeping_vcpus():
    need_kvm()
    r = vmm("-c", "2", "--pcpus", "2", "--workload", "kicklat", "--duration", "1s", "-q",
            timeout=300)
    assert r.rc == 0, r
    k, s = (v["reports"] for v in r.report["vcpus"])
    # every kick vCPU 0 sent either woke vCPU 1 from its wait or found it early
    assert k["ops"] > 0 and k["pv_kicks"] == k["ops"], k
    assert s["ops"] + s["early"] == k["ops"], (k, s)
    assert 0 < s["kicks_timed"] <= s["ops"] and s["pv_kicks"] == 0, s
    assert s["pv_waits"] >= s["ops"] + s["early"], s
    assert _positive(s["kick_ns"]) and _positive(s["kick_mean_ns"]), s
    # the VMM saw the same kicks wake sleepers (its own, VMM-side latency)
    st = r.report["sched"]
    assert st["kick_latency_ns"]["count"] > 0 and st["kicks_sent"] >= s["ops"], st
