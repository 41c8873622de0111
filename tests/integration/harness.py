"""Helpers for integration tests: run the vmm binary, read its JSON report."""
import json
import os
import subprocess
import tempfile

BUILD = "build"


class Skip(Exception):
    """Raised by a test that cannot run here; the reason is printed."""


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
        raise Skip("/dev/kvm is not usable here")


def vmm(*args, timeout=120, json_report=True, env=None):
    """Runs `vmm run ARGS`; returns Run with the parsed --json report (or None)."""
    with tempfile.TemporaryDirectory() as d:
        jpath = os.path.join(d, "report.json")
        cmd = [vmm_path(), "run", *args]
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
