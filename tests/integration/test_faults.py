"""Faults the host can inject: no memory for guest RAM is one clear line and
status 6 (host error), not a crash. (Guest faults, timeouts, deadlocks and
SIGINT/SIGTERM have their tests in test_guests.py; seccomp in test_seccomp.py.)"""
import resource
import subprocess

import harness
from harness import need_kvm

HOST_ERROR = 6


def _sanitized():
    with open(harness.vmm_path(), "rb") as f:
        return b"__asan_init" in f.read()


def test_out_of_memory_for_guest_ram_is_a_clear_error():
    need_kvm()
    if _sanitized():
        raise harness.Skip("ASan reserves terabytes of address space: RLIMIT_AS cannot be used")

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (600 << 20, 600 << 20))

    p = subprocess.run([harness.vmm_path(), "run", "-m", "1G", "--duration", "100ms", "-q"],
                       capture_output=True, text=True, timeout=60, preexec_fn=limit)
    assert p.returncode == HOST_ERROR, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot allocate 1024M of guest memory" in lines[0], p.stderr
    assert p.stdout == "", p.stdout
