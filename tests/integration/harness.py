"""Helpers for integration tests: run the vmm binary, read its JSON report."""
import json
import os
import subprocess
import tempfile
import time

BUILD = "build"


class Skip(Exception):
    """Raised by a test that cannot run here; the reason is printed."""


class NoKvm(Skip):
    """Raised by a test that needs a usable /dev/kvm where there is none:
    tests/run_all.py runs such tests again in the nested KVM
    (tests/nested/run) instead of counting them as skipped."""


def nested_stage(test):
    """Marks a test that also runs in the nested KVM (kvm_amd under QEMU's
    emulator) on machines that have a KVM of their own, so that both KVMs
    run it in one `make test`."""
    test.nested_stage = True
    return test


def nested_linux(test):
    """Marks a test that needs a Linux guest to reach user space in the
    nested KVM: the nested stage runs it in an inner host emulated by QEMU 10
    with thread=multi, the only emulator under which one does. The other
    nested tests keep QEMU 7.2 with thread=single, which resets no guest at
    random (QEMU 10 thread=multi now and then does: docs/nested-kvm.md)."""
    test.nested_linux = True
    return test


def plain_stage_only(test):
    """Marks a nested Linux test that the sanitize stage leaves out: each
    boots Linux many times (every scheduling shape, a bench matrix, PV on
    and off), which under ASan in the nested KVM costs more CI time than its
    sanitizer adds; the sanitize stage keeps the single boots, which run the
    same device, ACPI and boot code under ASan."""
    test.plain_stage_only = True
    return test


def nested():
    """The nested KVM's name when the tests run inside it, else None."""
    return os.environ.get("VMM_NESTED") or None


def need_timing(what):
    """For a test whose assertion compares speeds: the emulated SVM of the
    nested KVM runs guests 10-100x slower with ms outliers, so timing means
    nothing there (HOST.md), nor under the sanitizers (VMM_SANITIZED, set by
    run_all's sanitize stage); VMM_NO_TIMING=1 skips them anywhere."""
    if nested():
        raise Skip(f"compares speeds ({what}); timing means nothing in the nested KVM ({nested()})")
    if os.environ.get("VMM_SANITIZED") == "1":
        raise Skip(f"compares speeds ({what}); timing means nothing under the sanitizers")
    if os.environ.get("VMM_NO_TIMING") == "1":
        raise Skip(f"compares speeds ({what}); VMM_NO_TIMING=1")


class Run:
    def __init__(self, rc, stdout, stderr, report):
        self.rc, self.stdout, self.stderr, self.report = rc, stdout, stderr, report

    def __repr__(self):
        return f"Run(rc={self.rc}, stderr={self.stderr[-2000:]!r}, stdout={self.stdout[-2000:]!r})"


def vmm_path():
    return os.path.join(BUILD, "vmm")


def guest(name):
    path = os.path.join(BUILD, "tests", "guests", name)
    if not os.path.exists(path):
        raise AssertionError(f"test guest {path} was not built")
    return path


def need_kvm():
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        raise NoKvm("/dev/kvm is not usable here")


def vmm_test_path():
    """BUILD/vmm-test: the shipped vmm plus the test hooks (-DVMM_TEST_HOOKS,
    built by `make build-tests`), for the tests that force a violation."""
    return os.path.join(BUILD, "vmm-test")


def vmm(*args, timeout=120, json_report=True, env=None, binary=None):
    """Runs `vmm run ARGS` (BINARY: another vmm build, e.g. vmm_test_path());
    returns Run with the parsed --json report (or None)."""
    with tempfile.TemporaryDirectory() as d:
        jpath = os.path.join(d, "report.json")
        cmd = [binary or vmm_path(), "run", *args]
        if json_report:
            cmd += ["--json", jpath]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        report = None
        if json_report and os.path.exists(jpath):
            with open(jpath) as f:
                report = json.load(f)
        return Run(p.returncode, p.stdout, p.stderr, report)


def vmm_raw(*args, timeout=60):
    p = subprocess.run([vmm_path(), *args], capture_output=True, text=True, timeout=timeout)
    return Run(p.returncode, p.stdout, p.stderr, None)


def check_mutual_exclusion(report):
    """The shared counter the guest bumps under its lock equals the sum of per-vCPU ops."""
    ops = [v["ops"] for v in report["vcpus"]]
    assert all(o is not None and o > 0 for o in ops), ops
    assert report["counter"] == sum(ops) == report["ops_total"], (report["counter"], ops)
    assert report["mutual_exclusion_ok"] is True


# A KVM device that exists nowhere. User-error tests run vmm pointed at it:
# exit 2 then proves the input was refused before KVM was opened, on every
# machine, with or without a KVM of its own.
MISSING_KVM_DEVICE = "/nonexistent/kvm"


def vmm_without_kvm(*args, env=None, **kw):
    """`vmm run ARGS` with VMM_KVM_DEVICE pointing at a missing device."""
    env = dict(os.environ if env is None else env, VMM_KVM_DEVICE=MISSING_KVM_DEVICE)
    return vmm(*args, env=env, **kw)


def wait_signals_taken(p, sig, timeout=60):
    """Until process p blocks sig (vmm takes SIGINT/SIGTERM through a
    signalfd once its run starts): a signal sent before that kills it
    without a report, and a fixed sleep is too short for a slow start (an
    ASan build in the nested KVM). True when taken, False when p ended or
    the time ran out."""
    bit = 1 << (sig - 1)
    deadline = time.time() + timeout
    while time.time() < deadline and p.poll() is None:
        try:
            with open("/proc/%d/status" % p.pid) as f:
                blk = next((int(ln.split()[1], 16) for ln in f if ln.startswith("SigBlk:")), 0)
        except OSError:
            return False
        if blk & bit:
            return True
        time.sleep(0.05)
    return False
