"""`vmm run --start-at NS`: the vCPUs start at an absolute CLOCK_MONOTONIC
instant (several processes, one window), and a missed instant is started at
once and reported as late, never silently."""
import time

import harness

USAGE = 2


@harness.nested_stage
def test_start_at_waits_for_the_instant():
    harness.need_kvm()
    at = time.monotonic_ns() + 300_000_000
    r = harness.vmm("-c", "2", "--duration", "50ms", "--start-at", str(at), "-q")
    assert r.rc == 0, r
    rep = r.report
    assert rep["start_at_ns"] == at, rep["start_at_ns"]
    # the run's clock starts at or after the instant, and the lateness says by how much
    assert rep["start_ns"] >= at, (rep["start_ns"], at)
    assert 0 <= rep["start_late_ns"] <= rep["start_ns"] - at, (rep["start_late_ns"], rep["start_ns"] - at)
    assert rep["end_ns"] - rep["start_ns"] == rep["wall_ns"], rep
    # the VM was made well before the instant, so it waited (or says it was not ready)
    assert 0 <= rep["start_wait_ns"] <= 300_000_000, rep["start_wait_ns"]
    assert rep["start_wait_ns"] > 0 or rep["start_late_ns"] > 0, rep
    assert time.monotonic_ns() >= at


@harness.nested_stage
def test_start_at_in_the_past_is_reported_late():
    harness.need_kvm()
    at = time.monotonic_ns() - 50_000_000
    r = harness.vmm("-c", "1", "--duration", "50ms", "--start-at", str(at))
    assert r.rc == 0, r
    assert r.report["start_late_ns"] >= 50_000_000, r.report["start_late_ns"]
    assert r.report["start_wait_ns"] == 0, r.report["start_wait_ns"]
    assert "after --start-at" in r.stdout, r.stdout
    # without --start-at there is no instant and no lateness
    r = harness.vmm("-c", "1", "--duration", "50ms", "-q")
    assert r.rc == 0 and r.report["start_at_ns"] is None and r.report["start_late_ns"] is None, r.report
    assert r.report["start_wait_ns"] is None, r.report
    assert "after --start-at" not in r.stdout


def test_start_at_bad_values_are_refused_before_kvm():
    far = time.monotonic_ns() + 3600 * 10**9
    for arg, words in (("soon", "not CLOCK_MONOTONIC nanoseconds"), ("-5", "not CLOCK_MONOTONIC"),
                       (str(far), "more than 10 minutes")):
        r = harness.vmm_without_kvm("--start-at", arg, json_report=False)
        assert r.rc == USAGE, (arg, r)
        assert words in r.stderr and len(r.stderr.strip().splitlines()) == 1, (arg, r.stderr)
