"""Each thread kind runs under its own seccomp filter: a call outside its list
is caught, named, and ends the process with status 7; --no-seccomp turns the
filters off and the report says so. (Every other integration test runs with
the filters on, so they also prove the lists allow what each mode needs.)
The forced violation (VMM_TEST_SECCOMP_VIOLATE) is a test hook, compiled
only into BUILD/vmm-test; the shipped BUILD/vmm has none."""
import os
import re

import harness
from harness import need_kvm, vmm

SECCOMP_EXIT = 7
HOOK = b"VMM_TEST_SECCOMP_VIOLATE"


def _violate(kind, *extra, json_report=True):
    env = dict(os.environ, VMM_TEST_SECCOMP_VIOLATE=kind)
    # a run killed by its filter leaves the pre-opened --json file empty
    return harness.vmm("-c", "2", "--duration", "200ms", "-q", *extra, env=env, json_report=json_report,
                       binary=harness.vmm_test_path())


def _expect_caught(kind, thread):
    need_kvm()
    r = _violate(kind, json_report=False)
    assert r.rc == SECCOMP_EXIT, r
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("vmm: seccomp:")]
    assert len(lines) == 1, r.stderr
    # exactly the call the hook made, by name and number (x86-64: socket is 41)
    assert re.fullmatch(rf"vmm: seccomp: thread {thread} made forbidden system call socket \(41\)", lines[0]), lines


@harness.nested_stage
def test_vcpu_filter_catches_a_forbidden_call():
    _expect_caught("vcpu", "vcpu0")


@harness.nested_stage
def test_event_loop_filter_catches_a_forbidden_call():
    _expect_caught("loop", "loop")


def test_no_seccomp_turns_the_filters_off():
    need_kvm()
    for kind in ("vcpu", "loop"):
        r = _violate(kind, "--no-seccomp")
        assert r.rc == 0, r
        assert "seccomp" not in r.stderr, r.stderr
        assert r.report["config"]["seccomp"] is False
        assert "seccomp    off (--no-seccomp)" in r.stdout, r.stdout


def test_only_the_test_build_has_the_hook():
    with open(harness.vmm_path(), "rb") as f:
        assert HOOK not in f.read(), "the shipped vmm carries the seccomp test hook"
    with open(harness.vmm_test_path(), "rb") as f:
        assert HOOK in f.read(), "vmm-test lacks the seccomp test hook"


def test_shipped_vmm_ignores_the_hook():
    need_kvm()
    for kind in ("vcpu", "loop"):
        r = vmm("-c", "2", "--duration", "200ms", "-q", env=dict(os.environ, VMM_TEST_SECCOMP_VIOLATE=kind))
        assert r.rc == 0, r
        assert "seccomp:" not in r.stderr, r.stderr


def test_report_says_filters_are_on():
    need_kvm()
    r = vmm("-c", "2", "--duration", "200ms", "-q")
    assert r.rc == 0, r
    assert r.report["config"]["seccomp"] is True
    assert "seccomp    on (vcpu, loop filters)" in r.stdout, r.stdout


@harness.nested_stage
def test_filters_allow_every_mode():
    """The lists were cut from strace of these runs: each must still pass."""
    need_kvm()
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "t.json")
        runs = [
            ("-c", "4", "--pcpus", "2", "--trace", trace),
            ("-c", "4", "--pcpus", "2", "--sched", "host"),
            ("-c", "8", "--pcpus", "2", "--lock", "pvticket", "--yield", "pv"),
            ("-c", "8", "--pcpus", "2", "--lock", "pvticket", "--sched", "host"),
            ("-c", "4", "--pcpus", "2", "--workload", "shootdown"),
            ("-c", "2", "--pcpus", "1", "--vms", "2", "--workload", "barrier", "--yield", "gang"),
            ("-c", "4", "--pcpus", "2", "--yield", "directed", "--spin-detect", "hint,yield"),
            ("-c", "2", "--spin-detect", "ple", "--ple-tracepoint", "kvm:kvm_userspace_exit"),
        ]
        for args in runs:
            r = vmm(*args, "--duration", "200ms", "-q")
            assert r.rc == 0, (args, r)
            assert "seccomp:" not in r.stderr, (args, r.stderr)
        assert os.path.getsize(trace) > 0


def test_teardown_leaks_nothing():
    """Under ASan (the sanitize stage) LeakSanitizer's exit-time check cannot
    run inside the filters, so this run turns them off to check for leaks; in
    other builds it is one more plain run."""
    need_kvm()
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1")
    for args in (("-c", "4", "--pcpus", "2"), ("-c", "2", "--sched", "host")):
        r = vmm(*args, "--duration", "200ms", "-q", "--no-seccomp", env=env)
        assert r.rc == 0, (args, r)
        assert "LeakSanitizer" not in r.stderr, r.stderr
