"""Every flag `vmm bench` accepts, and no other (issue 33 item 1): the
harness's CLI is rebuilt as a table, and this list is what it must still
take. No KVM needed: every run is --test-synthetic --list-cells, or an
error that stops before anything runs.

The public flags are the ones --help lists; the hidden ones (for tests) are
tried by name. Each flag is accepted with a value of its kind, a value flag
without one says it needs a value, a switch given a value is refused, and a
near miss of each name is an unknown option. `vmm bench merge` and
`vmm bench tables` keep their own (three, and one)."""
import re
import subprocess

import harness

# name -> a value it accepts, or None for a switch
FLAGS = {
    "preset": "quick", "reps": "3", "duration": "100ms", "pcpus": "1", "workloads": "lockbench",
    "locks": "tas", "policies": "host,pv", "overcommit": "1,2", "vms": "1,2", "spin-thresholds": "4k",
    "slice-us": "3000", "defer-us": "200", "wake-slice-us": "0,1000", "guest-slice": "on,off",
    "loop-cpu": "auto,none", "kernel": "/dev/null", "initrd": "/dev/null", "qemu": "qemu-system-x86_64",
    "linux-size": "10", "linux-threads": "4", "linux-timeout": "60s", "cs-cycles": "1000",
    "work-cycles": "10000", "out": "bench-results", "no-plot": None, "no-native": None, "no-micro": None,
    "vm-mode": "domain,process", "start-margin": "500ms", "test-fail-cell": "0", "test-synthetic": None,
    "list-cells": None, "shard": "1/2", "cells": "0,micro", "help": None,
}
# for tests only: not in --help
HIDDEN = {"test-fail-cell", "test-synthetic"}
MERGE_FLAGS = {"out": "merged", "no-plot": None, "help": None}

BASE = ["--test-synthetic", "--list-cells", "--pcpus", "1"]


def bench(*args):
    return subprocess.run([harness.vmm_path(), "bench", *args], capture_output=True, text=True, timeout=60)


def listed(text):
    """The long options an option line of a usage text names."""
    names = set()
    for line in text.splitlines():
        m = re.match(r"^\s+(?:-h, )?--([a-z][a-z-]*)", line)
        if m:
            names.add(m.group(1))
    return names


def test_help_lists_exactly_the_public_flags():
    p = bench("--help")
    assert p.returncode == 0 and p.stdout.startswith("usage: vmm bench"), p
    assert listed(p.stdout) == set(FLAGS) - HIDDEN, sorted(listed(p.stdout) ^ (set(FLAGS) - HIDDEN))


def test_every_flag_is_accepted_with_its_value():
    for name, value in FLAGS.items():
        args = [f"--{name}"] + ([value] if value is not None else [])
        p = bench(*BASE, *args)
        assert p.returncode == 0, (name, p)
        if value is not None:
            # the --name=value form too, as getopt_long takes it
            p = bench(*BASE, f"--{name}={value}")
            assert p.returncode == 0, (name, p)
    assert bench("-h").returncode == 0


def test_a_value_flag_without_a_value_and_a_switch_with_one_are_refused():
    for name, value in FLAGS.items():
        if value is None:
            p = bench(*BASE, f"--{name}=x")
        else:
            p = bench(*BASE, f"--{name}")
        assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, (name, p)
        assert p.stderr.startswith("vmm bench: ") and f"--{name}" in p.stderr, (name, p.stderr)


def test_near_misses_are_unknown_options():
    for name in FLAGS:
        for bad in (f"--{name}x", f"--x{name}"):
            p = bench(*BASE, bad)
            assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, (bad, p)
    p = bench(*BASE, "--bogus")
    assert p.returncode == 2 and p.stderr == "vmm bench: unknown option '--bogus' (try vmm bench --help)\n", p


def test_merge_and_tables_keep_their_own_flags():
    """merge takes --out, --no-plot and --help; tables (which writes nothing) only --help."""
    for cmd, flags in (("merge", MERGE_FLAGS), ("tables", {"help": None})):
        for name, value in MERGE_FLAGS.items():
            args = [f"--{name}"] + ([value] if value is not None else [])
            p = bench(cmd, *args)
            if name == "help":
                assert p.returncode == 0 and p.stdout.startswith("usage: vmm bench " + cmd), (cmd, p)
            elif name in flags:
                # no results given: refused after the options were taken, not as a bad option
                assert p.returncode == 2 and "no results given" in p.stderr, (cmd, name, p)
            else:
                assert p.returncode == 2 and "bad option" in p.stderr, (cmd, name, p)
        for bad in ("--bogus", "--reps", "--outx", "--no-plotx"):
            p = bench(cmd, bad, "x.json")
            assert p.returncode == 2 and "bad option" in p.stderr, (cmd, bad, p)
