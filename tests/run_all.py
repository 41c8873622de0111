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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default="", help="regex selecting tests by name")
    ap.add_argument("--unit-only", action="store_true")
    args = ap.parse_args()
    up, uf = run_unit(args.build, args.only)
    ip = if_ = isk = 0
    if not args.unit_only:
        ip, if_, isk = run_integration(args.build, args.only)
    p, f = up + ip, uf + if_
    line = f"{p} passed, {f} failed" + (f", {isk} skipped" if isk else "")
    print(line)
    return 1 if f else 0


if __name__ == "__main__":
    sys.exit(main())
