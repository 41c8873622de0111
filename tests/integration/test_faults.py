"""Faults the host can inject: no memory for guest RAM is one clear line and
status 6 (host error), not a crash. (Guest faults, timeouts, deadlocks and
SIGINT/SIGTERM have their tests in test_guests.py; seccomp in test_seccomp.py.)"""
import json
import os
import resource
import subprocess
import tempfile

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


def _with_nofile(n):
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    return limit


@harness.nested_stage
def test_too_few_file_descriptors_is_a_clear_error():
    """RLIMIT_NOFILE too low for the run (issue 15): every limit from "the
    loader barely fits" up to "enough" either runs the guest (status 0) or
    ends with status 6 and one line that names RLIMIT_NOFILE, never a
    crash, a hang or a guest status."""
    need_kvm()
    refused = 0
    for n in range(4, 17):
        p = subprocess.run([harness.vmm_path(), "run", "-c", "2", "--duration", "100ms", "-q"],
                           capture_output=True, text=True, timeout=60, preexec_fn=_with_nofile(n))
        if p.returncode == 0:
            continue
        assert p.returncode == HOST_ERROR, (n, p.returncode, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert lines and all(ln.startswith("vmm: ") for ln in lines), (n, p.stderr)
        assert any("Too many open files; RLIMIT_NOFILE (ulimit -n) is %d" % n in ln for ln in lines), (n, p.stderr)
        refused += 1
    assert refused > 0, "no limit from 4 to 16 fds was too low: the test proves nothing"
    # and the same run with room to spare passes
    p = subprocess.run([harness.vmm_path(), "run", "-c", "2", "--duration", "100ms", "-q"],
                       capture_output=True, text=True, timeout=60, preexec_fn=_with_nofile(64))
    assert p.returncode == 0, p


def _run_files(*args):
    p = subprocess.run([harness.vmm_path(), "run", *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, [ln for ln in p.stderr.splitlines() if ln.startswith("vmm: --")]


# (option, path, the error its line names): a full device, a file the kernel
# will not let us write, a folder that does not exist
UNWRITABLE = [
    ("--json", "/dev/full", "No space left on device"),
    ("--trace", "/dev/full", "No space left on device"),
    ("--json", "/proc/version", "Input/output error"),
    ("--json", "/nonexistent-vmm-dir/r.json", "No such file or directory"),
    ("--trace", "/nonexistent-vmm-dir/t.json", "No such file or directory"),
]


def test_report_files_that_cannot_be_written_are_named_and_fail_a_good_run():
    """--json/--trace where they cannot be written (issue 15): the guest still
    runs and its report is still printed; the file's error is one line
    naming the option, the path and the cause; a run whose guest passed ends
    with status 6 (README, Exit status), since its result was not delivered."""
    need_kvm()
    for opt, path, why in UNWRITABLE:
        rc, out, lines = _run_files("-c", "2", "--duration", "100ms", "-q", opt, path)
        assert rc == HOST_ERROR, (opt, path, rc, lines)
        assert lines == [f"vmm: {opt} {path}: {why}"], (opt, path, lines)
        assert "status     ok (exit 0" in out, (opt, path, out)


def test_report_files_that_cannot_be_written_keep_a_guest_failure():
    """The same errors do not hide the guest's own result: a guest that
    exits with status 7 still ends the run with status 1."""
    need_kvm()
    for opt, path, why in UNWRITABLE:
        rc, out, lines = _run_files("--firmware", harness.guest("exit_port_guest.elf"), "-c", "2",
                                    "--timeout", "60s", opt, path)
        assert rc == 1, (opt, path, rc, lines)
        assert lines == [f"vmm: {opt} {path}: {why}"], (opt, path, lines)
        assert "status     guest_failed (exit 1" in out, (opt, path, out)


LOSE_HOOK = b"VMM_TEST_EVLOOP_LOSE_AFTER"


def test_a_lost_event_loop_request_ends_the_run_as_a_host_error():
    """The event loop's submit helpers return -EBUSY when a request cannot be
    queued (issue 15: ignored at six places in run.c, a lost tick or wake-up
    then hangs or stalls the run). Forced here by a hook of the test build
    (VMM_TEST_EVLOOP_LOSE_AFTER=N: every request after the Nth is lost): the
    run stops, the report is printed, one line names the cause, status 6.
    The loop arms four requests before the vCPUs start (wake-ups, the
    scheduler's timer, signals, --timeout), so 0 and 3 are lost at set-up
    and 4 is the first one a callback makes: a tick's or a wake-up's re-arm,
    mid-run. A later N is not sure to come: how often the loop's timer fires
    depends on how many slices the guest ends itself (guest-timed slices),
    and one fresh-clone run on kvm_pvm made fewer than 41 requests in 2 s."""
    need_kvm()
    with open(harness.vmm_path(), "rb") as f:
        assert LOSE_HOOK not in f.read(), "the shipped vmm carries the event-loop test hook"
    for after in (0, 3, 4):
        env = dict(os.environ, VMM_TEST_EVLOOP_LOSE_AFTER=str(after))
        with tempfile.TemporaryDirectory() as d:
            jpath = os.path.join(d, "r.json")
            p = subprocess.run([harness.vmm_test_path(), "run", "-c", "4", "--pcpus", "2", "--duration", "2s",
                                "-q", "--timeout", "60s", "--json", jpath],
                               capture_output=True, text=True, timeout=120, env=env)
            with open(jpath) as f:
                rep = json.load(f)
        if after == 4:
            # the vCPUs were running when the request was lost
            assert sum(v["sched"]["ns_running"] for v in rep["vcpus"]) > 0, rep["vcpus"]
        assert rep["status"] == "host_error", (after, rep["status"])
        assert p.returncode == HOST_ERROR, (after, p.returncode, p.stderr)
        lines = [ln for ln in p.stderr.splitlines() if ln.startswith("vmm: event loop")]
        assert lines == ["vmm: event loop: a request could not be queued (io_uring SQ full): "
                         "Device or resource busy"], (after, p.stderr)
        assert "status     host_error (exit 6" in p.stdout, (after, p.stdout)


def test_a_kvm_run_error_is_a_host_error_naming_its_vcpu():
    """KVM_RUN failing with an error no guest causes (EFAULT: a lost
    mapping; ENOMEM; EBUSY) ends the run as a host error, status 6, with one
    line naming the vCPU and the error; not a guest fault (3), which would
    send a user hunting a bug in their guest (issue 31, item 7). Forced by
    the test build's hook VMM_TEST_KVM_RUN_ERRNO=E (vCPU 0's third
    KVM_RUN fails with E); the shipped vmm ignores it."""
    need_kvm()
    for errno_, text in ((14, "Bad address"), (12, "Cannot allocate memory"), (16, "Device or resource busy")):
        env = dict(os.environ, VMM_TEST_KVM_RUN_ERRNO=str(errno_))
        with tempfile.TemporaryDirectory() as d:
            jpath = os.path.join(d, "r.json")
            p = subprocess.run([harness.vmm_test_path(), "run", "-c", "2", "--duration", "2s", "-q",
                                "--timeout", "60s", "--json", jpath],
                               capture_output=True, text=True, timeout=120, env=env)
            with open(jpath) as f:
                rep = json.load(f)
        assert p.returncode == HOST_ERROR, (errno_, p.returncode, p.stderr)
        assert rep["status"] == "host_error", (errno_, rep["status"])
        lines = [ln for ln in p.stderr.splitlines() if ln.startswith("vmm: vCPU 0:")]
        assert lines == [f"vmm: vCPU 0: KVM_RUN: {text}; a host error, the run ends"], (errno_, p.stderr)
        assert rep["vcpus"][0]["state"] == "host-failed", rep["vcpus"][0]
        assert all(v["state"] != "faulted" for v in rep["vcpus"]), rep["vcpus"]
    r = harness.vmm("-c", "2", "--duration", "200ms", "-q", env=dict(os.environ, VMM_TEST_KVM_RUN_ERRNO="14"))
    assert r.rc == 0, r
