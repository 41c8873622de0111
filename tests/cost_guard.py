#!/usr/bin/env python3
"""The scheduler's cost in counts, not times (issue 32): a budget CI can
hold on any machine, KVM or not, loaded or quiet.

  - instructions per event of the pure sched/ core, for every policy at 8
    vCPUs on 2 slots, 512 on 16 and 4096 on 128: the synthetic stream of
    tests/bench/sched_stream.h run by `sched_scale --instr N:M`, counted by
    `valgrind --tool=callgrind` inside measured_steps() only (the same
    binary and input give the same count, whatever else the machine does);
  - system calls and futex calls per slot hand-off: tests/bench/handoff
    (two threads passing one slot by yield through sched.c, pinned to one
    CPU) under `strace -f -c`. These depend a little on timing (a FUTEX_WAKE
    is skipped when the other thread has not gone to sleep yet), so their
    margin is wider.

Budgets live in tests/cost_budgets.json with the reason each was last set.
A change that raises a cost must raise its budget in the same commit and
say why there (`--write` measures and rewrites the numbers, keeping the
reasons; edit the reason by hand).

  tests/cost_guard.py [--build DIR] [--write] [--reason TEXT] [--budgets FILE] [--only REGEX]
Exit 0 within budget, 1 over (each line says by how much), 2 a tool missing.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUDGETS = os.path.join(ROOT, "tests", "cost_budgets.json")
SHAPES = [(8, 2), (512, 16), (4096, 128)]
STEPS = 2000
HANDOFF_N = 2000


def policies(build):
    out = subprocess.run([os.path.join(build, "bench", "sched_scale"), "--instr", "8:2", "--steps", "1"],
                         capture_output=True, text=True, check=True).stdout
    return [ln.split()[1] for ln in out.splitlines() if ln.startswith("instr ")]


def instr_per_event(build, pol, n, m):
    with tempfile.TemporaryDirectory() as d:
        cg = os.path.join(d, "cg.out")
        p = subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no",
                            "--toggle-collect=measured_steps", f"--callgrind-out-file={cg}",
                            os.path.join(build, "bench", "sched_scale"), "--instr", f"{n}:{m}",
                            "--steps", str(STEPS), "--policy", pol], capture_output=True, text=True)
        if p.returncode:
            raise SystemExit(f"cost_guard: callgrind on {pol} {n}:{m}: exit {p.returncode}: {p.stderr[-400:]}")
        events = int(re.search(r"^instr \S+ \d+ \d+ events (\d+)", p.stdout, re.M).group(1))
        with open(cg) as f:
            total = int(re.search(r"^summary: (\d+)", f.read(), re.M).group(1))
    return total / max(events, 1)


def handoff_counts(build):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "strace.txt")
        p = subprocess.run(["strace", "-f", "-c", "-o", out, os.path.join(build, "bench", "handoff"),
                            "--n", str(HANDOFF_N), "--cpu", "0"], capture_output=True, text=True)
        if p.returncode:
            raise SystemExit(f"cost_guard: handoff under strace: exit {p.returncode}: {p.stderr[-400:]}")
        handoffs = int(re.search(r"(\d+) hand-offs", p.stdout).group(1))
        calls = {}
        for ln in open(out):
            f = ln.split()
            if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
                calls[f[-1]] = int(f[3])
    return {"syscalls_per_handoff": sum(calls.values()) / handoffs,
            "futex_per_handoff": calls.get("futex", 0) / handoffs}


def measure(build, only):
    got = {}
    for pol in policies(build):
        for n, m in SHAPES:
            key = f"sched_instr_per_event/{pol}/{n}:{m}"
            if re.search(only, key):
                got[key] = round(instr_per_event(build, pol, n, m), 1)
    if re.search(only, "handoff/"):
        for k, v in handoff_counts(build).items():
            got[f"handoff/{k}"] = round(v, 3)
    return got


def margin(budgets, key):
    return budgets["margins"][key.split("/")[0]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--write", action="store_true", help="rewrite the budgets with what this run measures")
    ap.add_argument("--reason", help="with --write: why the budgets change (kept in the file)")
    ap.add_argument("--budgets", default=BUDGETS)
    ap.add_argument("--only", default="", help="measure and judge only the keys this matches")
    a = ap.parse_args()
    for tool in ("valgrind", "strace"):
        if subprocess.run(["which", tool], capture_output=True).returncode:
            print(f"cost_guard: {tool} not found (make deps installs it)", file=sys.stderr)
            return 2
    with open(a.budgets) as f:
        budgets = json.load(f)
    got = measure(a.build, a.only)
    if a.write and a.only:
        print("cost_guard: --write measures everything (no --only)", file=sys.stderr)
        return 2
    if a.write:
        budgets["budgets"] = got
        if a.reason:
            budgets["reasons"].append(a.reason)
        with open(a.budgets, "w") as f:
            json.dump(budgets, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"cost_guard: {len(got)} budgets written to {a.budgets}")
        return 0
    over = 0
    for key in sorted(set(got) | {k for k in budgets["budgets"] if re.search(a.only, k)}):
        if key not in budgets["budgets"]:
            print(f"cost_guard: {key}: {got[key]} measured, no budget (tests/cost_guard.py --write)")
            over += 1
            continue
        if key not in got:
            print(f"cost_guard: {key}: budgeted, not measured (a policy or shape is gone: --write)")
            over += 1
            continue
        b, mg = budgets["budgets"][key], margin(budgets, key)
        ok = got[key] <= b * (1 + mg)
        over += not ok
        print(f"cost_guard: {key}: {got[key]} against budget {b} (+{mg:.0%}): "
              f"{'ok' if ok else 'OVER by %.1f%%' % (100 * (got[key] / b - 1))}")
    print(f"cost_guard: {len(got) - over} within budget, {over} over")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
