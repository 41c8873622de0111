"""Guests other than the bundled one: a guest written from hypercalls/ABI.md
alone, and guests that exit through the port, fault, or never stop."""
import os
import signal
import subprocess
import time

import harness
from harness import guest, need_kvm, vmm


@harness.nested_stage
def test_abi_document_guest_reports_intact():
    need_kvm()
    for cpus in (1, 3):
        r = vmm("--firmware", guest("abi_guest.elf"), "-c", str(cpus), "--timeout", "60s")
        assert r.rc == 0, r
        assert "abi_guest: hello from the ABI document" in r.stdout
        rep = r.report
        assert rep["config"]["firmware"].endswith("abi_guest.elf")
        for v in rep["vcpus"]:
            i = v["id"]
            assert v["state"] == "exited", v
            assert v["reports"]["vcpu_seen"] == i + 100, v
            assert v["ops"] == (i + 1) * 10, v
        r0 = rep["vcpus"][0]["reports"]
        assert r0["ncpus"] == cpus
        # deliberate bad calls came back as error codes, and were counted
        assert r0["bad_nr"] == 38 and r0["bad_buf"] == 14 and r0["bad_key"] == 22, r0
        assert rep["hypercall_errors"] == 3
        assert rep["ops_total"] == sum((i + 1) * 10 for i in range(cpus))


def test_guest_exit_port_status():
    need_kvm()
    r = vmm("--firmware", guest("exit_port_guest.elf"), "-c", "2", "--timeout", "60s")
    assert r.rc == 1, r  # the guest ended with status 7: a guest failure
    assert r.report["status"] == "guest_failed" and r.report["guest_status"] == 7, r.report


@harness.nested_stage
def test_triple_fault_is_reported_with_registers():
    need_kvm()
    r = vmm("--firmware", guest("fault_guest.elf"), "-c", "2", "--timeout", "60s")
    assert r.rc == 3, r
    assert r.report["status"] == "guest_fault"
    faulted = [v for v in r.report["vcpus"] if v["state"] == "faulted"]
    assert faulted, r.report
    assert "shutdown" in faulted[0]["fault"] or "internal error" in faulted[0]["fault"], faulted[0]
    assert "rip" in faulted[0]["regs"]
    assert f"vCPU {faulted[0]['id']} faulted" in r.stderr and "rip " in r.stderr and "cr3 " in r.stderr


@harness.nested_stage
def test_timeout_stops_a_runaway_guest():
    need_kvm()
    t0 = time.time()
    r = vmm("--firmware", guest("spin_guest.elf"), "-c", "2", "--timeout", "1s")
    took = time.time() - t0
    assert r.rc == 4, r
    assert took < 20, took
    assert r.report["status"] == "timeout"
    assert "timed out" in r.stderr and "rip " in r.stderr
    assert all(v["state"] == "stopped" and "rip" in v["regs"] for v in r.report["vcpus"])


def test_sigint_stops_cleanly_with_report():
    need_kvm()
    p = subprocess.Popen([harness.vmm_path(), "run", "--firmware", guest("spin_guest.elf"), "-c", "2",
                          "--timeout", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert harness.wait_signals_taken(p, signal.SIGINT), p.poll()
    time.sleep(0.3)  # the vCPUs running, so the stop is of a running guest
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 128 + signal.SIGINT, (p.returncode, err)
    assert "status     signal" in out, out


@harness.nested_stage
def test_guest_deadlock_is_reported_not_a_hang():
    need_kvm()
    for mode in ("vmm", "host"):
        t0 = time.time()
        r = vmm("--firmware", guest("deadlock_guest.elf"), "-c", "3", "--pcpus", "2", "--sched", mode,
                "--timeout", "30s")
        assert r.rc == 5, (mode, r)
        assert time.time() - t0 < 10
        assert r.report["status"] == "guest_deadlock"
        assert "guest deadlock" in r.stderr
        assert all(v["state"] == "stopped" and "wait" in v["fault"] for v in r.report["vcpus"]), r.report
        assert r.report["sched"]["waits"] == 3


@harness.nested_stage
def test_int3_and_fwait_at_cpl0_behave_as_on_hardware():
    """tests/guests/trap_guest.S: three INT3s reach the guest's own #BP
    handler and two FWAITs do nothing, whether the CPU runs them or (on
    kvm_pvm, whose emulator lacks them) vcpu/x86/emulation_gaps.c does; the
    report says how many the VMM did."""
    need_kvm()
    r = vmm("--firmware", guest("trap_guest.elf"), "-c", "1", "--timeout", "30s")
    assert r.rc == 1 and r.report["guest_status"] == 0x43, (r.report and r.report["guest_status"], r)
    em = r.report["vcpus"][0]["emulated"]
    if os.path.exists("/sys/module/kvm_pvm"):
        assert em == {"int3": 3, "fwait": 2}, em
        assert "emulated   3 INT3, 2 FWAIT" in r.stdout, r.stdout
        assert "INT3 at rip" in r.stderr and "(reported once)" in r.stderr, r.stderr
    else:
        assert em == {"int3": 0, "fwait": 0}, em
