"""Feature negotiation in the guest ABI (hypercalls/ABI.md 4.3, issue 31
item 6): a guest written to the shared page as version 2 first defined it
acknowledges nothing, and every byte that layout reserved stays 0 under
every policy and every safe-point / guest-slice setting; a guest that
acknowledges PV_GUEST_SLICE (the bundled firmware) still ends its own
slices. The conformance guest (test_pv.py) checks that an acknowledging
guest finds the fields written as soon as its ack returns."""
import harness
from harness import guest, need_kvm, vmm

POLICIES = ["none", "random", "directed", "holder", "pv", "gang"]
# (--safe-point, --guest-slice): guest-timed slices need safe points, so
# the first pair is the only one that offers PV_GUEST_SLICE
SETTINGS = [("on", "on"), ("on", "off"), ("off", "on"), ("off", "off")]


def _old_layout_run(cpus, *args):
    """One run of tests/guests/v2layout_guest.c on 2 slots; it exits 1 with a
    line naming the offset and value of the first reserved byte not 0."""
    r = vmm("--firmware", guest("v2layout_guest.elf"), "-c", str(cpus), "--pcpus", "2", "--slice-us", "2000",
            "--timeout", "60s", "-q", *args, timeout=120)
    where = (cpus, args)
    # a failed check's offset and value: bad_offset, bad_value in its vCPU's reports
    bad = [v["reports"] for v in r.report["vcpus"]] if r.report else None
    assert r.rc == 0, (where, r.rc, bad, r.stdout[-2000:], r.stderr[-2000:])
    rep = r.report
    reps = [v["reports"] for v in rep["vcpus"]]
    # every vCPU ran its window and checked its page before, between rounds and after
    assert all(x["rounds"] > 0 and x["scans"] == x["rounds"] + 2 for x in reps), (where, reps)
    # its own lock kept mutual exclusion, and it made no call the ABI refuses
    assert reps[0]["shared_ops"] == sum(x["rounds"] for x in reps), (where, reps)
    assert rep["hypercall_errors"] == 0, (where, rep["hypercall_errors"])
    return rep, reps


@harness.nested_stage
def test_old_layout_guest_sees_reserved_bytes_stay_zero_everywhere():
    """2 vCPUs and 4 vCPUs on 2 slots, every --yield policy, every
    --safe-point/--guest-slice pair: no reserved byte of the first version 2
    page is ever written for a guest that acknowledged nothing."""
    need_kvm()
    for cpus in (2, 4):
        for pol in POLICIES:
            for safe, gslice in SETTINGS:
                rep, reps = _old_layout_run(cpus, "--yield", pol, "--safe-point", safe, "--guest-slice", gslice)
                assert rep["config"]["sched"]["guest_slice"] is (safe == "on" and gslice == "on"), rep["config"]
                # the PV paths ran: kicks and waits at least (PV_WAIT_KICK is on)
                assert sum(x["kicks"] for x in reps) > 0 and sum(x["waits"] for x in reps) > 0, (cpus, pol, reps)
                # nothing guest-timed without the ack, even with guest-timed slices on
                assert rep["sched"]["guest_slice_yields"] == 0, (cpus, pol, safe, gslice, rep["sched"])
                if cpus == 4:
                    # 4 on 2 slots: vCPUs queued, so `contended` had cause to be 1
                    assert sum(v["sched"]["ns_runnable"] for v in rep["vcpus"]) > 0, (pol, safe, gslice)
    # and with the host's scheduler (no co-scheduler: nothing offered beyond version 2's first bits)
    for cpus in (2, 4):
        _old_layout_run(cpus, "--sched", "host")


@harness.nested_stage
def test_firmware_acknowledges_and_still_ends_its_own_slices():
    """The counter-check: the bundled firmware acknowledges PV_GUEST_SLICE,
    so every vCPU still leaves at its own slice ends (4 vCPUs on 2 slots);
    with --guest-slice off nothing is offered and none is guest-timed."""
    need_kvm()
    duration = "2s" if harness.nested() else "500ms"
    r = vmm("-c", "4", "--pcpus", "2", "--yield", "none", "--duration", duration, "-q", timeout=300)
    assert r.rc == 0, r
    harness.check_mutual_exclusion(r.report)
    assert r.report["config"]["sched"]["guest_slice"] is True
    assert r.report["hypercall_errors"] == 0, r.report["hypercall_errors"]
    assert all(v["sched"]["guest_slice_yields"] > 0 for v in r.report["vcpus"]), \
        [v["sched"] for v in r.report["vcpus"]]
    r = vmm("-c", "4", "--pcpus", "2", "--yield", "none", "--duration", duration, "--guest-slice", "off", "-q",
            timeout=300)
    assert r.rc == 0, r
    harness.check_mutual_exclusion(r.report)
    assert r.report["sched"]["guest_slice_yields"] == 0, r.report["sched"]
