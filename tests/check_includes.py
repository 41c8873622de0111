#!/usr/bin/env python3
"""Every dependency points down: reads each #include in the parts below,
maps the including file and the included file to their parts, and fails on
an edge the ALLOWED table does not list.

    python3 tests/check_includes.py            the tree this script lives in
    python3 tests/check_includes.py --root DIR another tree (same layout)
    python3 tests/check_includes.py --layout   each part's role, floor by floor
                                               (`make layout`)
    python3 tests/check_includes.py --self-test
                                               proves the check on synthetic
                                               trees: bad edges fail, good pass

One line per bad edge ("file:line includes X: part A may not include part
B"), then "N passed, N failed" (files without / with a bad edge) as the last
line, which tests/run_all.py counts; exit status 1 on any bad edge. Built
into build/tests/unit/test_includes{,_self} by tests/checks.mk.
"""
import contextlib
import io
import os
import re
import sys
import tempfile

# ---- the layout: written once, here ------------------------------------

# Which part a file belongs to: the first prefix that matches. The ABI header
# is its own part because the guest may include it and nothing else of ours.
PARTS = [
    ("vmm/main.c", "vmm/main"),
    # the bench harness's layers, each a part of its own (vmm/bench/README.md)
    ("vmm/bench/matrix/", "vmm/bench/matrix"),
    ("vmm/bench/cli/", "vmm/bench/cli"),
    ("vmm/bench/exec/", "vmm/bench/exec"),
    ("vmm/bench/stats/", "vmm/bench/stats"),
    ("vmm/bench/report/", "vmm/bench/report"),
    ("vmm/bench/fleet/", "vmm/bench/fleet"),
    ("vmm/bench/", "vmm/bench"),  # bench.c, bench.h: `vmm bench` itself, the top
    ("vmm/cli/", "vmm/cli"),
    ("vmm/report/", "vmm/report"),
    ("vmm/core/", "vmm/core"),
    ("vmm/sandbox/", "vmm/sandbox"),
    ("vmm/domain/", "vmm/domain"),
    ("vmm/host/", "vmm/host"),
    ("vmm/spin/", "vmm/spin"),
    ("vmm/linux/", "vmm/linux"),
    ("vmm/boot/", "vmm/boot"),
    ("vmm/domain/", "vmm/domain"),
    ("vmm/", "vmm"),  # config.h, errors.h: what every vmm/ subfolder shares
    ("vcpu/", "vcpu"),
    ("sched/", "sched"),
    ("hypercalls/abi.h", "abi"),
    ("hypercalls/", "hypercalls"),
    ("devices/", "devices"),
    ("lib/", "lib"),
    ("firmware/", "firmware"),
    ("tests/guests/", "tests/guests"),
]

# Host parts under vmm/, and what every one of them may use.
_BELOW_VMM = ["vcpu", "sched", "hypercalls", "abi", "devices", "lib"]

# Part -> the parts it may include (itself always). Down only: no cycle, which
# self_test() checks of this table. Within vmm/, top to bottom: main; bench;
# cli, report; core; sandbox, spin, linux, boot, domain; host (KVM device, event
# loop, files); vmm (config.h, errors.h). Within vmm/bench/, top to bottom:
# bench (the command); fleet (shards, merge); report; stats; exec, cli; matrix.
# main sees only the top (bench.h), never a layer inside.
_VMM_BASE = ["vmm/host", "vmm"] + _BELOW_VMM
# What every bench layer may use outside the harness: it runs vmm as a child
# and parses values as vmm run does, never a VM in-process.
_BENCH_OUT = ["vmm/cli", "vmm/report", "vmm/core"] + _VMM_BASE
ALLOWED = {
    "vmm/main": ["vmm/bench", "vmm/cli", "vmm/report", "vmm/core", "vmm/domain"] + _VMM_BASE,
    "vmm/bench": ["vmm/bench/fleet", "vmm/bench/report", "vmm/bench/stats", "vmm/bench/exec",
                  "vmm/bench/cli", "vmm/bench/matrix"] + _BENCH_OUT,
    "vmm/bench/fleet": ["vmm/bench/report", "vmm/bench/stats", "vmm/bench/exec", "vmm/bench/cli",
                        "vmm/bench/matrix"] + _BENCH_OUT,
    "vmm/bench/report": ["vmm/bench/stats", "vmm/bench/exec", "vmm/bench/matrix"] + _BENCH_OUT,
    "vmm/bench/stats": ["vmm/bench/exec", "vmm/bench/matrix"] + _BENCH_OUT,
    "vmm/bench/exec": ["vmm/bench/matrix"] + _BENCH_OUT,
    "vmm/bench/cli": ["vmm/bench/matrix"] + _BENCH_OUT,
    "vmm/bench/matrix": _BENCH_OUT,
    "vmm/cli": _VMM_BASE,
    "vmm/report": ["vmm/core", "vmm/linux", "vmm/domain"] + _VMM_BASE,
    "vmm/core": ["vmm/sandbox", "vmm/spin", "vmm/linux", "vmm/boot", "vmm/domain"] + _VMM_BASE,
    "vmm/sandbox": _VMM_BASE,
    "vmm/spin": _VMM_BASE,
    "vmm/linux": _VMM_BASE,
    "vmm/boot": _VMM_BASE,
    "vmm/domain": _VMM_BASE,
    "vmm/host": ["vmm"] + _BELOW_VMM,
    "vmm": _BELOW_VMM,
    "vcpu": ["sched", "hypercalls", "abi", "devices", "lib"],
    "sched": ["lib"],
    "hypercalls": ["abi", "lib"],
    "devices": ["abi", "lib"],
    "lib": [],
    "abi": [],
    # the guests: the ABI header and their own code, nothing of the host
    "firmware": ["abi"],
    "tests/guests": ["abi"],
}

# What each part is for, one line each: `make layout` prints them floor by
# floor (a part's floor is one above the highest part it may include), so a
# newcomer sees the house from lib up to main.
ROLES = {
    "lib": "small shared helpers: bytes, guest memory's one accessor, JSON out, errors",
    "abi": "the guest ABI header (hypercall numbers, shared page): the one file guests and host share",
    "firmware": "the bundled guest, freestanding: lock workloads on the PV ABI",
    "tests/guests": "test guests, freestanding, on the same ABI header",
    "hypercalls": "the PV hypercall dispatcher and its feature negotiation, no KVM",
    "devices": "emulated devices: serial, PCI, virtio-blk, the io buses",
    "sched": "the co-scheduler: a pure core (events in, actions out) and its thread layer; the domain's pure core",
    "vcpu": "one vCPU: KVM_RUN loop, x86 boot state and tables, CPUID, steal time, KVM stats",
    "vmm": "what every vmm/ folder shares: config, exit codes",
    "vmm/host": "the host: /dev/kvm, the io_uring event loop, files, fd limits",
    "vmm/boot": "loading the bundled guest: ELF, memory layout, device tree",
    "vmm/linux": "booting a Linux guest: bzImage, ACPI tables, console",
    "vmm/spin": "seeing guests spin: PLE exits and hypercall counts from perf",
    "vmm/sandbox": "seccomp filters as data, one table per thread role",
    "vmm/domain": "the scheduling domain's processes: agent, member link, shared memory, confinement",
    "vmm/core": "one VM run: build it, run its vCPUs and event loop, the scheduler's glue, the trace",
    "vmm/report": "the run's report, text and JSON",
    "vmm/cli": "`vmm run`'s command line as a table",
    "vmm/bench/matrix": "bench floor: cells, keys, shards, NaN-aware numbers",
    "vmm/bench/cli": "bench: `vmm bench`'s options as a table, presets",
    "vmm/bench/exec": "bench: running one unit (a child vmm, Linux, native threads, micro)",
    "vmm/bench/stats": "bench: each cell's figures, intervals, the slice fit, the loss split",
    "vmm/bench/report": "bench: tables, CSV, targets, results.json, plots",
    "vmm/bench/fleet": "bench: shards from many hosts read back and merged",
    "vmm/bench": "`vmm bench` itself",
    "vmm/main": "main: `vmm run|bench|domain` dispatched, the only place that exits",
}


def floors():
    """{part: floor}, a part's floor one above the highest part it may include."""
    memo = {}

    def floor(p):
        if p not in memo:
            memo[p] = 1 + max((floor(q) for q in ALLOWED[p] if q != p), default=-1)
        return memo[p]

    for p in ALLOWED:
        floor(p)
    return memo


def print_layout():
    fl = floors()
    width = max(len(p) for p in ALLOWED)
    for f in range(max(fl.values()), -1, -1):
        for p in sorted(q for q in fl if fl[q] == f):
            print(f"{f:2d}  {p:<{width}}  {ROLES.get(p, '?')}")
    return 0


# Edges that point up, each file to file, until the move that ends it:
# (including file, included file, why it is still there). None today.
KNOWN_UP = []

# Where the check looks: every C and assembly source and header below these.
CHECKED = ["vmm", "vcpu", "sched", "hypercalls", "devices", "lib", "firmware", "tests/guests"]
SUFFIXES = (".c", ".h", ".S")

# -------------------------------------------------------------------------

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def part_of(path):
    for prefix, part in PARTS:
        if path == prefix or (prefix.endswith("/") and path.startswith(prefix)):
            return part
    return None


def resolve(root, src, name, quoted):
    """The repository path an include names, or None when it is not ours.
    Quoted: the including file's folder first, then the root (-I.); angle
    brackets: the root only, so <stdint.h> and <libfdt.h> are not ours."""
    tries = [os.path.join(os.path.dirname(src), name)] if quoted else []
    tries.append(name)
    for t in tries:
        t = os.path.normpath(t)
        if not t.startswith("..") and os.path.isfile(os.path.join(root, t)):
            return t
    return None


def sources(root):
    for top in CHECKED:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(SUFFIXES):
                    yield os.path.relpath(os.path.join(d, f), root)


def check(root, known_up=KNOWN_UP):
    """Returns (files checked, {file: [bad edge lines]}). A KNOWN_UP entry
    that no include uses any more is itself a failure: the list must shrink
    when an up-edge goes, or it would hide the edge's return."""
    known = {(a, b) for a, b, _ in known_up}
    seen = set()
    files, bad = 0, {}
    for src in sources(root):
        files += 1
        me = part_of(src)
        with open(os.path.join(root, src), errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                quoted, name = m.group(1) == '"', m.group(2)
                dst = resolve(root, src, name, quoted)
                if dst is None:
                    if quoted:
                        bad.setdefault(src, []).append(f"{src}:{n} includes {name}: no such file in the tree")
                    continue
                them = part_of(dst)
                if (src, dst) in known:
                    seen.add((src, dst))
                    continue
                if them == me or them in ALLOWED.get(me, []):
                    continue
                bad.setdefault(src, []).append(
                    f"{src}:{n} includes {dst}: part {me} may not include part {them or dst}")
    for a, b in sorted(known - seen):
        bad.setdefault(a, []).append(f"{a}: KNOWN_UP lists its include of {b}, which is gone: drop the entry")
    return files, bad


def cycle(table):
    """A cycle in the ALLOWED table as a list of parts, or None."""
    state = {}

    def visit(p, path):
        state[p] = 1
        for q in table.get(p, []):
            if state.get(q) == 1:
                return path[path.index(q):] + [q] if q in path else path + [q]
            if not state.get(q):
                c = visit(q, path + [q])
                if c:
                    return c
        state[p] = 2
        return None

    for p in table:
        if not state.get(p):
            c = visit(p, [p])
            if c:
                return c
    return None


def main_check(root, known_up=KNOWN_UP):
    files, bad = check(root, known_up)
    for src in sorted(bad):
        for line in bad[src]:
            print(line)
    # a stale KNOWN_UP entry may name a file that is gone: it fails, it never passed
    print(f"{max(0, files - len(bad))} passed, {len(bad)} failed")
    return 1 if bad else 0


# ---- the check of the check ---------------------------------------------

SELF_CASES = [
    # (name, {path: text}, files expected to fail)
    ("down edges pass", {
        "vmm/core/vm.c": '#include "vcpu/vcpu.h"\n#include "vmm/boot/elf_loader.h"\n',
        "vmm/boot/elf_loader.h": '#include "vmm/config.h"\n#include <elf.h>\n',
        "vmm/config.h": "", "vcpu/vcpu.h": '#include "sched/sched.h"\n', "sched/sched.h": "",
        "firmware/cpu.h": '#include "hypercalls/abi.h"\n', "hypercalls/abi.h": "#include <stdint.h>\n",
        "tests/guests/g.c": '#include "guest_hc.h"\n', "tests/guests/guest_hc.h": "",
    }, []),
    ("hypercalls may not include sched", {
        "hypercalls/pv_calls.c": '#include "sched/sched.h"\n', "sched/sched.h": "",
    }, ["hypercalls/pv_calls.c"]),
    ("the guest may not include a host device header", {
        "firmware/w.c": '#include "devices/null_mmio.h"\n', "devices/null_mmio.h": "",
    }, ["firmware/w.c"]),
    ("a test guest may not include a host header, even by a relative path", {
        "tests/guests/g.c": '#include "../../hypercalls/hypercalls.h"\n',
        "hypercalls/hypercalls.h": "",
    }, ["tests/guests/g.c"]),
    ("angle brackets that name our file count too", {
        "devices/d.c": "#  include <vmm/core/vm.h>\n", "vmm/core/vm.h": "",
    }, ["devices/d.c"]),
    ("up inside vmm/ fails: a lower subfolder including core", {
        "vmm/cli/cli.c": '#include "vmm/core/run.h"\n', "vmm/core/run.h": "",
    }, ["vmm/cli/cli.c"]),
    ("a cycle between two vmm/ subfolders fails on the up side", {
        "vmm/core/a.c": '#include "vmm/linux/b.h"\n', "vmm/linux/b.h": '#include "vmm/core/a.h"\n',
        "vmm/core/a.h": "",
    }, ["vmm/linux/b.h"]),
    ("the domain's segments sit below core: domain may not include core", {
        "vmm/domain/shm.c": '#include "vmm/core/vm.h"\n', "vmm/core/vm.h": "",
        "vmm/core/run.c": '#include "vmm/domain/shm.h"\n', "vmm/domain/shm.h": '#include "vmm/host/kvm.h"\n',
        "vmm/host/kvm.h": "",
    }, ["vmm/domain/shm.c"]),
    ("a quoted include of no file fails", {
        "sched/s.c": '#include "sched/gone.h"\n',
    }, ["sched/s.c"]),
    ("bench layers point down: report may use stats, exec and matrix", {
        "vmm/bench/report/table.c": '#include "vmm/bench/stats/stats.h"\n#include "vmm/bench/exec/exec.h"\n',
        "vmm/bench/stats/stats.h": '#include "vmm/bench/matrix/types.h"\n', "vmm/bench/exec/exec.h": "",
        "vmm/bench/matrix/types.h": "", "vmm/main.c": '#include "vmm/bench/bench.h"\n',
        "vmm/bench/bench.h": '#include "vmm/bench/fleet/fleet.h"\n', "vmm/bench/fleet/fleet.h": "",
    }, []),
    ("a lower bench layer may not include a higher one", {
        "vmm/bench/stats/ci.c": '#include "vmm/bench/report/report.h"\n', "vmm/bench/report/report.h": "",
        "vmm/bench/matrix/shard.c": '#include "vmm/bench/exec/exec.h"\n', "vmm/bench/exec/exec.h": "",
    }, ["vmm/bench/stats/ci.c", "vmm/bench/matrix/shard.c"]),
    ("exec and cli sit side by side: neither includes the other", {
        "vmm/bench/exec/cell.c": '#include "vmm/bench/cli/cli.h"\n', "vmm/bench/cli/cli.h": "",
        "vmm/bench/cli/options.c": '#include "vmm/bench/exec/exec.h"\n', "vmm/bench/exec/exec.h": "",
    }, ["vmm/bench/exec/cell.c", "vmm/bench/cli/options.c"]),
    ("no bench layer includes the command above it, and main only the command", {
        "vmm/bench/fleet/merge.c": '#include "vmm/bench/bench.h"\n', "vmm/bench/bench.h": "",
        "vmm/main.c": '#include "vmm/bench/exec/exec.h"\n', "vmm/bench/exec/exec.h": "",
    }, ["vmm/bench/fleet/merge.c", "vmm/main.c"]),
    ("lib is the floor: it includes nothing above", {
        "lib/l.h": '#include "devices/io_bus.h"\n', "devices/io_bus.h": "",
    }, ["lib/l.h"]),
]


def write_tree(root, tree):
    for path, text in tree.items():
        os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as f:
            f.write(text)


def self_test():
    passed = failed = 0

    def ok(cond, what):
        nonlocal passed, failed
        if cond:
            passed += 1
        else:
            failed += 1
            print(f"FAIL: {what}")

    c = cycle(ALLOWED)
    ok(c is None, f"the ALLOWED table has a cycle: {' -> '.join(c or [])}")
    ok(all(q in ALLOWED for qs in ALLOWED.values() for q in qs), "ALLOWED names a part it does not define")
    ok(set(ALLOWED) == {p for _, p in PARTS}, "every part has a row in ALLOWED")
    ok(set(ROLES) == set(ALLOWED), f"every part has one role line: {sorted(set(ALLOWED) ^ set(ROLES))}")
    fl = floors()
    ok(fl["lib"] == 0 and fl["vmm/main"] == max(fl.values()), "lib is the floor and main the top")
    ok(cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"], "cycle() finds a cycle")
    for a, b, _ in KNOWN_UP:
        ok(part_of(b) not in ALLOWED[part_of(a)], f"known up-edge {a} -> {b} is allowed anyway: drop it")
    for name, tree, expect in SELF_CASES:
        with tempfile.TemporaryDirectory() as root:
            write_tree(root, tree)
            files, bad = check(root, known_up=[])
            ok(files == len(tree) and sorted(bad) == sorted(expect),
               f"{name}: expected {expect} to fail, got {sorted(bad)}")
            # the exit status and the closing line, as the runner sees them
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = main_check(root, known_up=[])
            lines = out.getvalue().splitlines()
            ok(rc == (1 if expect else 0) and lines[-1] == f"{len(tree) - len(expect)} passed, {len(expect)} failed",
               f"{name}: exit {rc}, last line {lines[-1]!r}")
            ok(all(re.match(r"^\S+:\d+ includes \S+: (part \S+ may not include part \S+|no such file in the tree)$", l)
                   for l in lines[:-1]) and len(lines) - 1 == sum(len(v) for v in bad.values()),
               f"{name}: one line per bad edge, each naming file:line and both parts: {lines[:-1]}")
    # an up-edge excused in KNOWN_UP passes; once the include is gone the entry fails
    with tempfile.TemporaryDirectory() as root:
        write_tree(root, {"vmm/boot/b.h": '#include "vmm/core/l.h"\n', "vmm/core/l.h": ""})
        excuse = [("vmm/boot/b.h", "vmm/core/l.h", "test")]
        ok(not check(root, known_up=excuse)[1], "a KNOWN_UP edge passes")
        write_tree(root, {"vmm/boot/b.h": ""})
        ok(sorted(check(root, known_up=excuse)[1]) == ["vmm/boot/b.h"], "a stale KNOWN_UP entry fails")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if "--self-test" in argv:
        return self_test()
    if "--layout" in argv:
        return print_layout()
    if "--root" in argv:
        root = argv[argv.index("--root") + 1]
    return main_check(root)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
