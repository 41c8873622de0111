#!/usr/bin/env python3
"""Runs every test: the C unit-test binaries, then the integration tests that
boot guests. Each unit binary ends with "N passed, N failed"; integration tests
are functions named test_* in tests/integration/*.py that raise on failure or
raise Skip(reason). Ends with two lines: the tests (a unit test case, as
tests/unit/check.h's RUN counts them, or an integration test function), then
the closing line "N passed, N failed[, N skipped]" that adds each unit
binary's checks to the integration tests, as CI and the docs read it:
  tests: T passed, T failed[, T skipped]
  N passed, N failed[, N skipped]"""
import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "integration"))
import harness  # noqa: E402


UNIT_LINE = re.compile(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?")
# A unit binary's test cases (check.h's check_summary prints it before the
# closing line); a binary without it (check_cases.h, Python checks) is one test.
TESTS_LINE = re.compile(r"^tests: (\d+) passed, (\d+) failed(?:, (\d+) skipped)?")


class Tally:
    """Counts of checks (what the closing line adds up: each unit binary's
    checks, each integration test as one) and of tests (test cases)."""

    def __init__(self, p=0, f=0, sk=0, tp=0, tf=0, tsk=0):
        self.p, self.f, self.sk, self.tp, self.tf, self.tsk = p, f, sk, tp, tf, tsk

    def __add__(self, o):
        return Tally(self.p + o.p, self.f + o.f, self.sk + o.sk, self.tp + o.tp, self.tf + o.tf,
                     self.tsk + o.tsk)

    def __sub__(self, o):
        return Tally(self.p - o.p, self.f - o.f, self.sk - o.sk, self.tp - o.tp, self.tf - o.tf,
                     self.tsk - o.tsk)

    def line(self):
        return f"{self.p} passed, {self.f} failed" + (f", {self.sk} skipped" if self.sk else "")

    def tests_line(self):
        return (f"tests: {self.tp} passed, {self.tf} failed"
                + (f", {self.tsk} skipped" if self.tsk else ""))

    def as_json(self):
        return {"passed": self.p, "failed": self.f, "skipped": self.sk,
                "tests": {"passed": self.tp, "failed": self.tf, "skipped": self.tsk}}

    @staticmethod
    def from_json(r):
        t = r["tests"]
        return Tally(r["passed"], r["failed"], r["skipped"], t["passed"], t["failed"], t["skipped"])


def unit_tally(out, rc):
    """What one unit binary's output (and exit status) counts: its last
    closing line, and its tests line (without one, the binary is one test).
    No closing line, or a non-zero exit, is a failure however many checks
    passed. Returns (Tally, the closing line's match or None)."""
    m = t = None
    for line in out.splitlines():
        m = UNIT_LINE.match(line.strip()) or m
        t = TESTS_LINE.match(line.strip()) or t
    if not m or rc != 0:
        p_, f_ = (int(m.group(1)), max(1, int(m.group(2)))) if m else (0, 1)
        tp, tf = (int(t.group(1)), max(1, int(t.group(2)))) if t else (0, 1)
        return Tally(p_, f_, 0, tp, tf, 0), m
    p_, f_, sk = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    if t:
        return Tally(p_, f_, sk, int(t.group(1)), int(t.group(2)), int(t.group(3) or 0)), m
    return Tally(p_, f_, sk, int(not f_ and not sk), int(bool(f_)), int(not f_ and bool(sk))), m


# Unit binaries with parts that need /dev/kvm (they count those parts as
# skipped where there is none): the nested stage runs them on kvm_amd.
KVM_UNITS = ("test_kvm_stats", "test_kvm_steal_time", "test_ple_perf", "test_x86_linux_cpu")


def say(line):
    print(PREFIX + line if PREFIX else line, flush=True)


PREFIX = ""

# What failed, by name and stage, repeated just above the closing lines: a
# CI log cut to its tail still says which test to look at.
FAILURES = []
STAGE = "plain"


def note_failure(name):
    FAILURES.append((name, STAGE))


def run_unit(build, only, names=None):
    """Returns (Tally, [(unit, its Tally)] for units that skipped something)."""
    total = Tally()
    partial = []
    unit_dir = os.path.join(build, "tests", "unit")
    if not os.path.isdir(unit_dir):
        return total, []
    for name in sorted(os.listdir(unit_dir)):
        path = os.path.join(unit_dir, name)
        if not name.startswith("test_") or "." in name or not os.access(path, os.X_OK):
            continue
        if (only and not re.search(only, name)) or (names is not None and name not in names):
            continue
        t0 = time.time()
        try:
            p = subprocess.run([path], capture_output=True, text=True, timeout=600)
            out, rc = p.stdout + p.stderr, p.returncode
        except subprocess.TimeoutExpired:
            out, rc = "timed out after 600 s", -1
        t, m = unit_tally(out, rc)
        total += t
        counts = f"{m.group(0)}; {t.tests_line()}" if m else t.tests_line()
        if t.f:
            note_failure(f"unit {name}")
            say(f"unit {name}: FAILED (exit {rc})")
            say("    " + "\n    ".join(out.strip().splitlines()[-30:]))
        elif t.sk:
            partial.append((name, t))
            why = "; ".join(ln.strip() for ln in out.splitlines() if ln.startswith("skipped:"))
            say(f"unit {name}: {counts} ({time.time() - t0:.1f}s) {why}")
        else:
            say(f"unit {name}: {counts} ({time.time() - t0:.1f}s)")
    return total, partial


def integration_tests(only, names=None):
    """(full name, function) of every selected test_* in tests/integration."""
    idir = os.path.join(HERE, "integration")
    for fname in sorted(os.listdir(idir)):
        if not (fname.startswith("test_") and fname.endswith(".py")):
            continue
        spec = importlib.util.spec_from_file_location(fname[:-3], os.path.join(idir, fname))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for name in sorted(n for n in dir(mod) if n.startswith("test_")):
            full = f"{fname[:-3]}.{name}"
            if (only and not re.search(only, full)) or (names is not None and full not in names):
                continue
            yield full, getattr(mod, name)


def run_integration(build, only, names=None):
    """Returns (Tally, tests skipped for want of KVM); each test counts once
    as a check and once as a test."""
    passed = failed = skipped = 0
    no_kvm = []
    harness.BUILD = build
    for full, test in integration_tests(only, names):
        t0 = time.time()
        try:
            test()
            passed += 1
            say(f"ok   {full} ({time.time() - t0:.1f}s)")
        except harness.NoKvm as e:
            no_kvm.append(full)
            skipped += 1
            say(f"skip {full}: {e}")
        except harness.Skip as e:
            skipped += 1
            say(f"skip {full}: {e}")
        except Exception:  # noqa: BLE001 - every failure is reported, none stops the run
            failed += 1
            note_failure(full)
            say(f"FAIL {full} ({time.time() - t0:.1f}s)")
            say("    " + "\n    ".join(traceback.format_exc().strip().splitlines()[-25:]))
    return Tally(passed, failed, skipped, passed, failed, skipped), no_kvm


# ---- the nested stage: mainstream KVM (kvm_amd) under QEMU's emulator ----

# Bounds on each inner host, from what a run takes on 2 CPUs: the QEMU 7.2
# host ~340 s plain and ~630 s under ASan; the QEMU 10 Linux host ~300 s
# for its five tests. A host past its bound is dead (QEMU 10 multi has hung
# its inner kernel: a CI run lost 45 minutes to one under the old 2700 s).
NESTED_TIMEOUT_S = 1500
NESTED_LINUX_BASE_S, NESTED_LINUX_PER_TEST_S = 300, 120
# The whole of run_all inside CI's 90 minutes, less the build: no inner
# host is started again when its bound would end past this.
BUDGET_S = int(os.environ.get("VMM_TEST_BUDGET_S", "4800"))
T_START = time.time()


def run_nested(build, tests, units, label):
    """Runs TESTS (integration names) and UNITS (unit binaries) in the
    nested KVM through tests/nested/run, in two inner hosts: the tests
    marked @harness.nested_linux under QEMU 10 with thread=multi (a Linux
    guest reaches user space only there), the rest under the system's QEMU
    7.2 with thread=single (no guest reset at random: docs/nested-kvm.md).
    Returns a Tally; an inner host that fails counts as a failure."""
    linux = {full for full, t in integration_tests(".") if getattr(t, "nested_linux", False)}
    rest = run_nested_host(build, [t for t in tests if t not in linux], units, label,
                           ["--qemu", "system", "--tcg", "single"], "QEMU 7.2 TCG, thread=single",
                           NESTED_TIMEOUT_S)
    # QEMU 10's thread=multi has crashed the inner host's own kernel under
    # it (a page fault in its KVM_RUN path, once in a CI-like run) and hung
    # it (once, in CI): that host, and only that, gets one more try
    mine = [t for t in tests if t in linux]
    return rest + run_nested_host(build, mine, [], label + "-linux", [], "QEMU 10 TCG, thread=multi",
                                  NESTED_LINUX_BASE_S + NESTED_LINUX_PER_TEST_S * len(mine), tries=2)


def run_nested_host(build, tests, units, label, emulator, what, timeout, tries=1):
    """TESTS and UNITS in one inner host of tests/nested/run, emulated as
    EMULATOR (its options) says, for at most TIMEOUT seconds; an inner host
    that gives no results is started again, TRIES times in all, while the
    run's BUDGET_S leaves room for it."""
    if not tests and not units:
        return Tally()
    for attempt in range(1, tries + 1):
        left = T_START + BUDGET_S - time.time()
        last = attempt == tries or left < 2 * timeout
        t = nested_host_once(build, tests, units, label, emulator, what,
                             max(300, min(timeout, int(left))), last=last)
        if t is not None:
            return t
        say(f"stage nested ({label}): the inner host died (its console's end is above); "
            f"starting it again ({attempt + 1} of {tries})")


def nested_host_once(build, tests, units, label, emulator, what, timeout, last):
    """One inner host: its Tally, or None when it gave no results and it
    is not the LAST try (then nothing is counted)."""
    ndir = os.path.join(build, "nested")
    os.makedirs(ndir, exist_ok=True)
    sel = os.path.join(ndir, f"select-{label}.txt")
    res = os.path.join(ndir, f"results-{label}.json")
    with open(sel, "w") as f:
        f.write("\n".join([*tests, *units]) + "\n")
    if os.path.exists(res):
        os.remove(res)
    t0 = time.time()
    cmd = [os.path.join(HERE, "nested", "run"), "--timeout", str(timeout), *emulator, "--",
           sys.executable, os.path.join("tests", "run_all.py"), "--build", build,
           "--names", sel, "--results", res, "--prefix", "[nested] "]
    say(f"stage nested ({label}): {len(tests)} integration tests and {len(units)} unit binaries "
        f"on kvm_amd in {what}")
    rc = subprocess.run(cmd, stdin=subprocess.DEVNULL).returncode
    try:
        with open(res) as f:
            r = json.load(f)
        t = Tally.from_json(r)
    except (OSError, ValueError, KeyError):
        if not last:
            return None
        say(f"stage nested ({label}): the inner host gave no results (exit {rc}): FAILED")
        note_failure(f"the nested host (exit {rc})")
        return Tally(0, 1, 0, 0, 1, 0)
    FAILURES.extend((name, f"{label}, nested") for name, _ in r.get("failures", []))
    say(f"stage nested ({label}, {time.time() - t0:.0f}s): {t.line()}; {t.tests_line()}")
    return t


def kvm_here():
    return os.access("/dev/kvm", os.R_OK | os.W_OK)


def nested_selection(native_no_kvm, partial_units, mode, only):
    """What the nested stage runs. Without a usable /dev/kvm here: every
    test that skipped for want of it. With one: the tests marked
    @harness.nested_stage and the KVM unit binaries, so that both KVMs run
    them. mode "only": every integration test and the KVM units."""
    if mode == "only":
        return [full for full, _ in integration_tests(only)], [u for u in KVM_UNITS if re.search(only, u)]
    if native_no_kvm or not kvm_here():
        return native_no_kvm, [name for name, _ in partial_units]
    return ([full for full, t in integration_tests(only) if getattr(t, "nested_stage", False)],
            [u for u in KVM_UNITS if re.search(only, u)])


# ---- security stages (SECURITY.md): sanitized suite, TSan, fuzzers ----
# Each prints its own counts on lines that do not start with a number, so
# the one closing "N passed, N failed" line below stays the only total.

def run_sanitized(build, only, nested_mode):
    """The whole suite again from an ASan+UBSan build. vmm runs under its
    seccomp filters with detect_leaks=0 (LeakSanitizer's exit-time check needs
    clone/ptrace/open, which no filter allows); test_seccomp checks for leaks
    with --no-seccomp instead. Unit tests keep leak checks on."""
    old_build, old_env = harness.BUILD, os.environ.get("ASAN_OPTIONS")
    os.environ["ASAN_OPTIONS"] = "detect_leaks=0"
    os.environ["VMM_SANITIZED"] = "1"  # harness.need_timing: no speed means anything here
    if nested_mode == "auto" and kvm_here():
        nested_mode = "off"  # the plain suite's nested stage already ran both KVMs
    t0 = time.time()
    try:
        t = run_suite(build, only, None, nested_mode, "asan", integration_asan=True)
    finally:
        os.environ.pop("VMM_SANITIZED", None)
        harness.BUILD = old_build
        if old_env is None:
            os.environ.pop("ASAN_OPTIONS", None)
        else:
            os.environ["ASAN_OPTIONS"] = old_env
    say(f"stage sanitize (ASan+UBSan, {build}, {time.time() - t0:.0f}s): {t.line()}; {t.tests_line()}")
    return t


def run_fuzzers(build, seconds):
    """Each fuzzer: first every input in its corpus and regression folder
    once (the regression tests), then `seconds` of fuzzing from the corpus.
    New inputs go to BUILD/corpus, findings to BUILD/crashes."""
    global STAGE
    STAGE = "fuzz"
    passed = failed = 0
    t_all = time.time()
    fdir = os.path.join(build, "fuzz")
    names = sorted(n for n in os.listdir(fdir) if n.startswith("fuzz_") and "." not in n) \
        if os.path.isdir(fdir) else []
    if not names:
        print(f"stage fuzz: no fuzzers in {fdir}: FAILED")
        return 0, 1
    for name in names:
        exe = os.path.join(fdir, name)
        seeds = os.path.join(HERE, "fuzz", "corpus", name)
        regress = os.path.join(HERE, "fuzz", "regressions", name)
        dirs = [d for d in (seeds, regress) if os.path.isdir(d)]
        work = os.path.join(build, "corpus", name)
        crashes = os.path.join(build, "crashes")
        os.makedirs(work, exist_ok=True)
        os.makedirs(crashes, exist_ok=True)
        common = [f"-artifact_prefix={crashes}/{name}-", "-timeout=10", "-rss_limit_mb=2048",
                  "-print_final_stats=1"]
        for stage, args, limit in (
                ("regressions", ["-runs=0", *common, *dirs], 600),
                (f"{seconds}s", [f"-max_total_time={seconds}", *common, work, *dirs], seconds + 120)):
            t0 = time.time()
            try:
                p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=limit)
                out, rc = p.stdout + p.stderr, p.returncode
            except subprocess.TimeoutExpired:
                out, rc = f"timed out after {limit} s", -1
            m = re.search(r"stat::number_of_executed_units: (\d+)", out)
            execs = int(m.group(1)) if m else 0
            if rc == 0:
                passed += 1
                print(f"fuzz {name} {stage}: {execs} inputs run, no finding ({time.time() - t0:.0f}s)")
            else:
                failed += 1
                note_failure(f"fuzz {name} {stage}")
                print(f"fuzz {name} {stage}: FINDING (exit {rc}); the input is in {crashes}/")
                print("    " + "\n    ".join(out.strip().splitlines()[-40:]))
    print(f"stage fuzz ({len(names)} fuzzers, {seconds}s each, {time.time() - t_all:.0f}s): "
          f"{passed} passed, {failed} failed")
    return passed, failed


def run_suite(build, only, names, nested_mode, label, unit_only=False, integration_asan=False):
    """The unit binaries, the integration tests, then the nested stage for
    what needs a KVM (nested_selection). A test that skipped here for want
    of KVM and then ran nested counts once, as it ended there."""
    global STAGE
    STAGE = label
    here = Tally()
    partial, no_kvm = [], []
    if nested_mode != "only":
        old = os.environ.pop("ASAN_OPTIONS", None) if integration_asan else None
        try:
            here, partial = run_unit(build, only, names)
        finally:
            if old is not None:
                os.environ["ASAN_OPTIONS"] = old
        if not unit_only:
            it, no_kvm = run_integration(build, only, names)
            here += it
    if nested_mode == "off" or harness.nested() or unit_only:
        return here
    tests, units = nested_selection(no_kvm, partial, nested_mode, only)
    if label == "asan":
        left_out = [full for full, t in integration_tests(only) if getattr(t, "plain_stage_only", False)]
        if any(t in tests for t in left_out):
            say(f"stage nested (asan): {', '.join(t for t in left_out if t in tests)} left to the plain "
                "stage (many Linux boots each: harness.plain_stage_only); they count as skipped here")
        tests = [t for t in tests if t not in left_out]
    there = run_nested(build, tests, units, label)
    if there.p + there.f + there.sk and not (there.f and not there.p + there.sk):
        # they ran there: what skipped here for want of KVM is not a skip
        n = len([t for t in no_kvm if t in tests])
        here -= Tally(0, 0, n, 0, 0, n)
        for name, t in partial:
            if name in units:  # the unit ran again there, whole: its run here does not count
                here -= t
    return here + there


def main():
    global PREFIX
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default="", help="regex selecting tests by name")
    ap.add_argument("--names", help="a file naming the tests to run, one a line (unit binaries and "
                    "integration tests as module.function)")
    ap.add_argument("--unit-only", action="store_true")
    ap.add_argument("--nested", choices=("auto", "off", "only"),
                    default=os.environ.get("VMM_NESTED_STAGE", "auto"),
                    help="the nested KVM stage: auto (what this machine's KVM cannot run, or the "
                    "tests marked for both KVMs), off, or only (every test, nested)")
    ap.add_argument("--results", help="also write the counts to this JSON file")
    ap.add_argument("--prefix", default="", help="put this before every line printed")
    ap.add_argument("--sanitize-build", help="also run the whole suite from this ASan+UBSan build")
    ap.add_argument("--tsan-build", help="also run the scheduler's unit tests from this TSan build")
    ap.add_argument("--tsan-units", default="test_sched_core test_sched_threads test_vcpu_kick")
    ap.add_argument("--fuzz-build", help="also run the fuzzers in BUILD/fuzz")
    ap.add_argument("--fuzz-seconds", type=int, default=60)
    ap.add_argument("--fuzz-only", action="store_true", help="only the fuzzers")
    args = ap.parse_args()
    PREFIX = args.prefix
    names = None
    if args.names:
        with open(args.names) as f:
            names = set(f.read().split())
    total = Tally()
    if not args.fuzz_only:
        t0 = time.time()
        total = run_suite(args.build, args.only, names, args.nested, "plain", args.unit_only)
        if not args.results:
            say(f"stage plain ({args.build}, {time.time() - t0:.0f}s): {total.line()}; {total.tests_line()}")
    if args.sanitize_build:
        total += run_sanitized(args.sanitize_build, args.only, args.nested)
    if args.tsan_build:
        global STAGE
        STAGE = "tsan"
        sel = "^(" + "|".join(re.escape(u) for u in args.tsan_units.split()) + ")$"
        t0 = time.time()
        t, _ = run_unit(args.tsan_build, sel)
        say(f"stage tsan (ThreadSanitizer, {args.tsan_build}, {time.time() - t0:.0f}s): "
            f"{t.p} passed, {t.f} failed; {t.tests_line()}")
        total += Tally(t.p, t.f, 0, t.tp, t.tf, 0)
    if args.fuzz_build and args.fuzz_seconds > 0:
        fp, ff = run_fuzzers(args.fuzz_build, args.fuzz_seconds)
        total += Tally(fp, ff, 0, fp, ff, 0)
    if args.results:
        with open(args.results, "w") as out:
            json.dump({**total.as_json(), "failures": FAILURES}, out)
        # inside the nested stage the totals are the outer run's to print
        say(f"subtotal: {total.line()}; {total.tests_line()}")
    else:
        for name, stage in FAILURES:
            say(f"failed: {name} ({stage})")
        say(total.tests_line())
        say(total.line())
    return 1 if total.f else 0


if __name__ == "__main__":
    sys.exit(main())
