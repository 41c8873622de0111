"""The bundled guest boots on 1, 2, 4 and 8 vCPUs, host-scheduled, and proves
mutual exclusion for every lock kind."""
import harness
from harness import check_mutual_exclusion, need_kvm, vmm, vmm_raw

LOCKS = ["ticket", "tas"]


def _lockbench(cpus, lock, *args):
    need_kvm()
    r = vmm("-c", str(cpus), "--lock", lock, "--duration", "300ms", "-q", *args)
    assert r.rc == 0, r
    rep = r.report
    assert rep["status"] == "ok" and rep["exit_code"] == 0
    assert rep["config"]["cpus"] == cpus and rep["config"]["lock"] == lock
    assert len(rep["vcpus"]) == cpus
    assert all(v["state"] == "exited" and v["exit_status"] == 0 for v in rep["vcpus"])
    check_mutual_exclusion(rep)
    assert rep["ops_per_s"] > 0
    # the measured window is the requested one, on the guest's TSC (the guest
    # loops until its deadline), and lies within the run as the host's clock
    # saw it: a TSC frequency in the device tree that ran fast would break it
    assert rep["elapsed_ns"] >= 300e6 - 1e3, rep["elapsed_ns"]
    assert rep["elapsed_ns"] <= rep["wall_ns"], (rep["elapsed_ns"], rep["wall_ns"])
    assert rep["exits"]["total"] >= cpus * 3  # report, report, exit at least
    assert rep["hypercall_errors"] == 0
    return rep


def test_lockbench_1_vcpu():
    for lock in LOCKS:
        _lockbench(1, lock)


def test_lockbench_2_vcpus():
    for lock in LOCKS:
        _lockbench(2, lock)


def test_lockbench_4_vcpus():
    for lock in LOCKS:
        _lockbench(4, lock)


@harness.nested_stage
def test_lockbench_8_vcpus_on_2_host_cores():
    """8 vCPUs on 2 host CPUs (--pcpus 2): the co-scheduler keeps at most 2 of
    them in the guest at any time (their running time fits in 2 x the wall
    time), so at least 6 waited for a slot, and all made progress."""
    for lock in LOCKS:
        rep = _lockbench(8, lock, "--pcpus", "2")
        assert rep["config"]["sched"]["pcpus"] == 2, rep["config"]["sched"]
        run_ns = sum(v["sched"]["ns_running"] for v in rep["vcpus"])
        assert run_ns <= 2 * rep["wall_ns"] * 1.01 + 2e6, (run_ns, rep["wall_ns"])
        assert all(v["sched"]["ns_running"] > 0 for v in rep["vcpus"]), lock
        assert sum(v["sched"]["ns_runnable"] > 0 for v in rep["vcpus"]) >= 6, [v["sched"] for v in rep["vcpus"]]


def test_report_table_on_stdout():
    need_kvm()
    r = vmm("-c", "2", "--duration", "200ms", json_report=False)
    assert r.rc == 0, r
    assert "firmware: lockbench" in r.stdout  # the guest console reached stdout
    assert "ops/s" in r.stdout and "mutual exclusion holds" in r.stdout
    assert r.stdout.count("\nall ") == 1


def test_quiet_hides_console():
    need_kvm()
    r = vmm("-c", "1", "--duration", "100ms", "-q", json_report=False)
    assert r.rc == 0, r
    assert "firmware:" not in r.stdout and "ops/s" in r.stdout


def test_version_and_help():
    r = vmm_raw("--version")
    assert r.rc == 0 and r.stdout.startswith("vmm ")
    r = vmm_raw("run", "--help")
    assert r.rc == 0 and "--cpus" in r.stdout and "--lock" in r.stdout
    r = vmm_raw()
    assert r.rc == 2
