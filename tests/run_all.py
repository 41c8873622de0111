#!/usr/bin/env python3
"""Runs every test: the C unit-test binaries, then the integration tests that
boot guests. Each unit binary ends with "N passed, N failed"; integration tests
are functions named test_* in tests/integration/*.py that raise on failure or
raise Skip(reason). Ends with the line "N passed, N failed[, N skipped]"."""
import argparse
import importlib.util
import os
import re
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "integration"))
import harness  # noqa: E402


def run_unit(build, only):
    passed = failed = 0
    unit_dir = os.path.join(build, "tests", "unit")
    if not os.path.isdir(unit_dir):
        return 0, 0
    for name in sorted(os.listdir(unit_dir)):
        path = os.path.join(unit_dir, name)
        if not name.startswith("test_") or "." in name or not os.access(path, os.X_OK):
            continue
        if only and not re.search(only, name):
            continue
        t0 = time.time()
        try:
            p = subprocess.run([path], capture_output=True, text=True, timeout=600)
            out, rc = p.stdout + p.stderr, p.returncode
        except subprocess.TimeoutExpired:
            out, rc = "timed out after 600 s", -1
        m = None
        for line in out.splitlines():
            m = re.match(r"^(\d+) passed, (\d+) failed", line.strip()) or m
        if m and rc == 0:
            passed += int(m.group(1))
            print(f"unit {name}: {m.group(0)} ({time.time() - t0:.1f}s)")
        else:
            p_, f_ = (int(m.group(1)), max(1, int(m.group(2)))) if m else (0, 1)
            passed += p_
            failed += f_
            print(f"unit {name}: FAILED (exit {rc})")
            print("    " + "\n    ".join(out.strip().splitlines()[-30:]))
    return passed, failed


def run_integration(build, only):
    passed = failed = skipped = 0
    harness.BUILD = build
    idir = os.path.join(HERE, "integration")
    for fname in sorted(os.listdir(idir)):
        if not (fname.startswith("test_") and fname.endswith(".py")):
            continue
        spec = importlib.util.spec_from_file_location(fname[:-3], os.path.join(idir, fname))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for name in sorted(n for n in dir(mod) if n.startswith("test_")):
            full = f"{fname[:-3]}.{name}"
            if only and not re.search(only, full):
                continue
            t0 = time.time()
            try:
                getattr(mod, name)()
                passed += 1
                print(f"ok   {full} ({time.time() - t0:.1f}s)")
            except harness.Skip as e:
                skipped += 1
                print(f"skip {full}: {e}")
            except Exception:  # noqa: BLE001 - every failure is reported, none stops the run
                failed += 1
                print(f"FAIL {full} ({time.time() - t0:.1f}s)")
                print("    " + "\n    ".join(traceback.format_exc().strip().splitlines()[-25:]))
    return passed, failed, skipped


# ---- security stages (SECURITY.md): sanitized suite, TSan, fuzzers ----
# Each prints its own counts on lines that do not start with a number, so
# the one closing "N passed, N failed" line below stays the only total.

def run_sanitized(build, only):
    """The whole suite again from an ASan+UBSan build. vmm runs under its
    seccomp filters with detect_leaks=0 (LeakSanitizer's exit-time check needs
    clone/ptrace/open, which no filter allows); test_seccomp checks for leaks
    with --no-seccomp instead. Unit tests keep leak checks on."""
    old_build, old_env = harness.BUILD, os.environ.get("ASAN_OPTIONS")
    up, uf = run_unit(build, only)
    os.environ["ASAN_OPTIONS"] = "detect_leaks=0"
    try:
        ip, if_, isk = run_integration(build, only)
    finally:
        harness.BUILD = old_build
        if old_env is None:
            os.environ.pop("ASAN_OPTIONS", None)
        else:
            os.environ["ASAN_OPTIONS"] = old_env
    print(f"stage sanitize (ASan+UBSan, {build}): {up + ip} passed, {uf + if_} failed"
          + (f", {isk} skipped" if isk else ""))
    return up + ip, uf + if_, isk


def run_fuzzers(build, seconds):
    """Each fuzzer: first every input in its corpus and regression folder
    once (the regression tests), then `seconds` of fuzzing from the corpus.
    New inputs go to BUILD/corpus, findings to BUILD/crashes."""
    passed = failed = 0
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
                print(f"fuzz {name} {stage}: FINDING (exit {rc}); the input is in {crashes}/")
                print("    " + "\n    ".join(out.strip().splitlines()[-40:]))
    print(f"stage fuzz ({len(names)} fuzzers, {seconds}s each): {passed} passed, {failed} failed")
    return passed, failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default="", help="regex selecting tests by name")
    ap.add_argument("--unit-only", action="store_true")
    ap.add_argument("--sanitize-build", help="also run the whole suite from this ASan+UBSan build")
    ap.add_argument("--tsan-build", help="also run the scheduler's unit tests from this TSan build")
    ap.add_argument("--tsan-units", default="test_sched_core test_sched_threads")
    ap.add_argument("--fuzz-build", help="also run the fuzzers in BUILD/fuzz")
    ap.add_argument("--fuzz-seconds", type=int, default=60)
    ap.add_argument("--fuzz-only", action="store_true", help="only the fuzzers")
    args = ap.parse_args()
    up = uf = ip = if_ = isk = 0
    if not args.fuzz_only:
        up, uf = run_unit(args.build, args.only)
        if not args.unit_only:
            ip, if_, isk = run_integration(args.build, args.only)
    if args.sanitize_build:
        sp, sf, ssk = run_sanitized(args.sanitize_build, args.only)
        up, uf, isk = up + sp, uf + sf, isk + ssk
    if args.tsan_build:
        sel = "^(" + "|".join(re.escape(u) for u in args.tsan_units.split()) + ")$"
        tp, tf = run_unit(args.tsan_build, sel)
        print(f"stage tsan (ThreadSanitizer, {args.tsan_build}): {tp} passed, {tf} failed")
        up, uf = up + tp, uf + tf
    if args.fuzz_build and args.fuzz_seconds > 0:
        fp, ff = run_fuzzers(args.fuzz_build, args.fuzz_seconds)
        up, uf = up + fp, uf + ff
    p, f = up + ip, uf + if_
    line = f"{p} passed, {f} failed" + (f", {isk} skipped" if isk else "")
    print(line)
    return 1 if f else 0


if __name__ == "__main__":
    sys.exit(main())
