"""When the KVM device cannot be used, `vmm run` exits 6 with one or two lines
that name the cause and the next step (vmm/host/kvm_diagnose.c). --kvm-device and
VMM_KVM_DEVICE point vmm at another path, so every machine shows each case:
a missing node, /dev/null, a regular file, a directory, a node this user may
not open. None of these needs a KVM."""
import os
import subprocess
import tempfile

import harness

MISSING = "/nonexistent/kvm"


def _host_error(r, *words):
    assert r.rc == 6, r
    lines = r.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2 and all(ln.startswith("vmm: ") for ln in lines), r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)
    assert r.stdout == "", r.stdout
    return r.stderr


def _expected_missing_cause():
    """What this host's /sys and /proc say, as kvm_diagnose reads them."""
    if os.path.exists("/sys/class/misc/kvm"):
        return ["KVM serves a device on this host", "mknod"]
    if any(os.path.exists(f"/sys/module/{m}") for m in ("kvm_intel", "kvm_amd", "kvm_pvm")):
        return ["is loaded but serves no KVM device", "dmesg | grep -i kvm", "tests/nested/run"]
    flags = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = line.split(":", 1)[1].split()
                break
    if "vmx" not in flags and "svm" not in flags:
        return ["no vmx or svm flag", "nested virtualization", "tests/nested/run"]
    if os.path.exists("/sys/module/kvm"):
        return ["no backend", "dmesg | grep -i kvm", "tests/nested/run"]
    return ["kvm module is not loaded", "modprobe", "tests/nested/run"]


def test_kvm_device_missing_names_the_cause():
    r = harness.vmm("--kvm-device", MISSING, json_report=False)
    _host_error(r, MISSING, "does not exist", *_expected_missing_cause())


def test_kvm_device_not_kvm():
    r = harness.vmm("--kvm-device", "/dev/null", json_report=False)
    _host_error(r, "/dev/null is not a KVM device", "KVM_GET_API_VERSION")
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "kvm")
        with open(f, "w") as out:
            out.write("not a device\n")
        r = harness.vmm("--kvm-device", f, json_report=False)
        _host_error(r, f"{f} is not a KVM device", "KVM_GET_API_VERSION")
        r = harness.vmm("--kvm-device", d, json_report=False)
        _host_error(r, f"{d} is not a KVM device", "Is a directory")


def test_kvm_device_permission_denied_names_the_kvm_group():
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o755)
        f = os.path.join(d, "kvm")
        with open(f, "w"):
            pass
        os.chmod(f, 0o600 if os.geteuid() == 0 else 0)
        cmd = [os.path.abspath(harness.vmm_path()), "run", "--kvm-device", f]
        if os.geteuid() == 0:
            # root opens anything: run it as nobody
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + cmd
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=d)
        except FileNotFoundError:
            raise harness.Skip("setpriv (util-linux) is not installed")
        r = harness.Run(p.returncode, p.stdout, p.stderr, None)
        _host_error(r, f"{f}: permission denied", "kvm group", f"ls -l {f}")


def test_kvm_device_from_the_environment_and_the_option_wins():
    env = dict(os.environ, VMM_KVM_DEVICE="/dev/null")
    r = harness.vmm(json_report=False, env=env)
    _host_error(r, "/dev/null is not a KVM device")
    r = harness.vmm("--kvm-device", MISSING, json_report=False, env=env)
    _host_error(r, MISSING, "does not exist")
    r = harness.vmm("--kvm-device", "", json_report=False)
    assert r.rc == 2 and "--kvm-device" in r.stderr, r


def test_user_errors_come_before_kvm():
    """A bad option or file is exit 2 even where the device is missing or not KVM."""
    for dev in (MISSING, "/dev/null"):
        for args in (["--pcpus", "4096"], ["--firmware", "/nonexistent/guest.elf"], ["-m", "8M"]):
            r = harness.vmm("--kvm-device", dev, *args, json_report=False)
            assert r.rc == 2 and len(r.stderr.strip().splitlines()) == 1, (dev, args, r)
