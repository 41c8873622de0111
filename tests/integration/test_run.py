"""The bundled guest boots on 1, 2, 4 and 8 vCPUs, host-scheduled, and proves
mutual exclusion for every lock kind."""
import harness
from harness import check_mutual_exclusion, need_kvm, vmm, vmm_raw

LOCKS = ["ticket", "tas"]


def _lockbench(cpus, lock):
    need_kvm()
    r = vmm("-c", str(cpus), "--lock", lock, "--duration", "300ms", "-q")
    assert r.rc == 0, r
    rep = r.report
    assert rep["status"] == "ok" and rep["exit_code"] == 0
    assert rep["config"]["cpus"] == cpus and rep["config"]["lock"] == lock
    assert len(rep["vcpus"]) == cpus
    assert all(v["state"] == "exited" and v["exit_status"] == 0 for v in rep["vcpus"])
    check_mutual_exclusion(rep)
    assert rep["ops_per_s"] > 0
    # the measured window is the requested one (TSC-based in the guest)
    assert 250e6 <= rep["elapsed_ns"] <= 600e6, rep["elapsed_ns"]
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
    for lock in LOCKS:
        _lockbench(8, lock)


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
