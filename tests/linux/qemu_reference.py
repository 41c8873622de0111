"""QEMU on the same KVM as the reference for the Linux boot tests: the same
kernel, initramfs and command line under `qemu-system-x86_64 -accel kvm`.
Where QEMU reaches user space and vmm does not, that is vmm's bug; where
neither can, the KVM is at fault and the test says so with what QEMU showed.
"""
import os
import shutil
import subprocess
import time


class Boot:
    def __init__(self, console, seconds, reached, rc, stalled_s=None):
        self.console, self.seconds, self.reached, self.rc = console, seconds, reached, rc
        self.stalled_s = stalled_s  # the console went quiet this long before the end

    def last_lines(self, n=3):
        lines = [ln.strip() for ln in self.console.splitlines() if ln.strip()]
        return " | ".join(lines[-n:]) or "(nothing on the console)"


def boot(vmlinuz, initrd, cmdline, disk, until, bound_s, stall_s=None, cpus=2, mem="512M", started=None):
    """Boots under QEMU with KVM until the console shows UNTIL, QEMU exits,
    BOUND_S passes, or (with STALL_S) the console has been quiet that long.
    Returns a Boot (reached: UNTIL was seen). started(pid) is called once
    QEMU runs."""
    if not shutil.which("qemu-system-x86_64"):
        raise FileNotFoundError("qemu-system-x86_64 (Debian package qemu-system-x86) is not installed")
    cmd = ["qemu-system-x86_64", "-accel", "kvm", "-cpu", "host", "-smp", str(cpus), "-m", mem,
           "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot", "-serial", "stdio",
           "-kernel", vmlinuz, "-initrd", initrd, "-append", cmdline]
    if disk:
        cmd += ["-drive", f"file={disk},if=virtio,format=raw"]
    t0 = time.time()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if started:
        started(p.pid)
    os.set_blocking(p.stdout.fileno(), False)
    out = b""
    last = time.time()
    while time.time() - t0 < bound_s and p.poll() is None and until.encode() not in out:
        chunk = p.stdout.read() or b""
        if chunk:
            out += chunk
            last = time.time()
        elif stall_s and time.time() - last > stall_s:
            break
        time.sleep(0.2)
    quiet = time.time() - last
    if p.poll() is None:
        # the guest powers itself off after UNTIL; give it a moment, then stop it
        try:
            p.wait(timeout=10 if until.encode() in out else 0.1)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    out += p.stdout.read() or b""
    text = out.decode(errors="replace")
    return Boot(text, time.time() - t0, until in text, p.returncode, quiet)
