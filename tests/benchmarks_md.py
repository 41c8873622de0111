#!/usr/bin/env python3
"""BENCHMARKS.md's measured tables, regenerated from the committed results
(issue 32: the document cannot drift from its data).

Two kinds of generated block, each between HTML comments:

  <!-- vmm bench tables bench/results/FILE.json -->   ... <!-- end tables -->
      what `vmm bench tables FILE.json` prints, in a text block;
  <!-- targets summary -->                             ... <!-- end targets summary -->
      one table of every target of the hot-path, domain and Linux issues
      over every bench/results/*.json: value, bound, verdict, date, machine,
      runs; a target no file measured is a row that says so.

  tests/benchmarks_md.py            rewrite the blocks (make benchmarks-md)
  tests/benchmarks_md.py --check    exit 1 naming each block that differs
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = "bench/results"
TABLES = re.compile(r"(<!-- vmm bench tables (\S+) -->\n)(.*?)(<!-- end tables -->)", re.S)
SUMMARY = re.compile(r"(<!-- targets summary -->\n)(.*?)(<!-- end targets summary -->)", re.S)

# The targets the open issues set, as families (target, what it asks); a
# family no committed file judged is printed as unmeasured.
FAMILIES = [
    ("efficiency", "ticket/none and pvticket/pv, one VM, 2x >= 0.97, 4x >= 0.95 (issue 13)"),
    ("vs host", "every lock kind, barrier and shootdown, none and pv, 2x and 4x: >= 1.00 of --sched host "
     "(issue 13)"),
    ("vs process", "a domain of K VMs >= 0.97 of the same VMs in one process (issue 12)"),
    ("vs qemu", "Linux hackbench/sysbench at 2x, --yield pv >= 1.00 of QEMU+KVM (issue 30)"),
]


def tables_text(vmm, path):
    p = subprocess.run([vmm, "bench", "tables", os.path.join(ROOT, path)], capture_output=True, text=True)
    if p.returncode not in (0, 1) or not p.stdout:
        raise SystemExit(f"benchmarks_md: vmm bench tables {path}: exit {p.returncode}: {p.stderr.strip()}")
    return "```text\n" + p.stdout.rstrip("\n") + "\n```\n"


def label(c):
    x = c["overcommit"]
    lvl = f"{x:g}x" if c["vms"] == 1 else f"{c['vms']} VMs x {c['vcpus_per_vm']}"
    gs = ", guest slice off" if c.get("guest_slice") == "off" else ""
    mode = f" @{c['mode']}" if c["vms"] > 1 else ""
    lock = "" if c["lock"] in ("-", "") or c["workload"] not in ("lockbench",) else f" {c['lock']}"
    return f"{c['workload']}{lock} {c['policy']}{mode} {lvl}{gs}"


def machine(r):
    m = r.get("machine", {})
    return f"{m.get('kvm', '?')}, {m.get('nproc', '?')} CPUs"


def fmt(v):
    return "-" if v is None else f"{v:.3f}"


def summary_text():
    files = sorted(glob.glob(os.path.join(ROOT, RESULTS, "*.json")))
    rows = {f[0]: [] for f in FAMILIES}
    nested = []
    for path in files:
        r = json.load(open(path))
        date = os.path.basename(path)[:10]
        if "nested" in r.get("machine", {}).get("kvm", ""):
            nested.append(f"{RESULTS}/{os.path.basename(path)}")  # emulated SVM: its speeds grade nothing
            continue
        cells = {c["id"]: c for c in r["cells"]}
        for t in r.get("targets", []):
            c = cells[t["cell_id"]]
            runs = sum(1 for u in c.get("runs", []) if u.get("ok"))
            verdict = {True: "met", False: "**missed**", None: "unknown"}[t["met"]]
            rows.setdefault(t["target"], []).append(
                f"| {t['target']} | {label(c)} | {fmt(t.get('value'))} | >= {t['bound']:.2f} | {verdict} "
                f"| {date} | {machine(r)} | {runs} | {RESULTS}/{os.path.basename(path)} |")
    out = ["| target | cell | value | bound | verdict | date | machine | runs | data |",
           "|---|---|---|---|---|---|---|---|---|"]
    counts = {"met": 0, "**missed**": 0, "unknown": 0}
    for name, what in FAMILIES:
        if not rows.get(name):
            out.append(f"| {name} | {what} | - | - | unmeasured | - | - | - | - |")
        for row in rows.get(name, []):
            counts[row.split(" | ")[4]] += 1
            out.append(row)
    out.append("")
    out.append(f"{counts['met']} met, {counts['**missed**']} missed, {counts['unknown']} unknown; "
               f"every target unmeasured on VMX/SVM hardware unless a row above names it.")
    if nested:
        out.append(f"Not graded: runs in the nested KVM (kvm_amd under QEMU's emulator, whose speeds mean "
                   f"nothing): {', '.join(nested)}.")
    return "\n".join(out) + "\n"


def regenerate(text, vmm):
    """TEXT with every generated block rewritten; and the names of those
    that changed."""
    changed = []

    def tables(m):
        new = tables_text(vmm, m.group(2))
        if new != m.group(3):
            changed.append(m.group(2))
        return m.group(1) + new + m.group(4)

    def summary(m):
        new = summary_text()
        if new != m.group(2):
            changed.append("targets summary")
        return m.group(1) + new + m.group(3)

    return SUMMARY.sub(summary, TABLES.sub(tables, text)), changed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when a block differs")
    ap.add_argument("--vmm", default=os.path.join(ROOT, "build", "vmm"))
    ap.add_argument("--doc", default=os.path.join(ROOT, "BENCHMARKS.md"))
    a = ap.parse_args()
    text = open(a.doc).read()
    new, changed = regenerate(text, a.vmm)
    if a.check:
        for name in changed:
            print(f"benchmarks_md: {a.doc}: the block of {name} is not what its data prints "
                  "(make benchmarks-md)")
        return 1 if changed else 0
    if changed:
        with open(a.doc, "w") as f:
            f.write(new)
    print(f"benchmarks_md: {len(changed)} blocks rewritten" + (f": {', '.join(changed)}" if changed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
