"""The two stand-alone benchmarks BENCHMARKS.md quotes, built by
build-tests so that they cannot rot unseen: the scheduler core's scale run
(tests/bench/sched_scale.c) and the slot hand-off (tests/bench/handoff.c).
Small runs; what is asserted is what the tables rest on, never a speed."""
import os
import re
import subprocess

import harness


def tool(name):
    path = os.path.join(harness.BUILD, "bench", name)
    assert os.access(path, os.X_OK), f"{path}: not built (make build-tests builds it)"
    return path


def run(*args, timeout=300):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def test_sched_scale_checks_every_policy():
    """Every policy's every cell ran with the core's invariants checked
    after each event (the run exits 1 naming the cells that broke one), and
    each row counts the events and decisions it timed."""
    rc, out, err = run(tool("sched_scale"), "--reps", "1", "--steps", "300")
    assert rc == 0, (rc, err[-2000:])
    assert "checks run first" in out, out[:300]
    rows = [ln.split() for ln in out.splitlines()
            if re.match(r"^\S+\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+\s+\d+\s+\d+$", ln)]
    policies = {r[0] for r in rows}
    assert {"none", "directed", "pv", "gang"} <= policies, policies
    for r in rows:
        vcpus, slots, events, decisions = int(r[1]), int(r[2]), int(r[5]), int(r[6])
        assert vcpus >= slots, r  # overcommit >= 1 only
        assert events > 0 and 0 < decisions <= events, r
    for p in policies:
        assert re.search(rf"^{re.escape(p)}\s+largest/smallest ns/event: [\d.]+$", out, re.M), p


def test_sched_scale_is_deterministic():
    """The core is a pure state machine: the same synthetic stream gives the
    same decisions, bit for bit, run after run (the scale table compares
    like with like)."""
    a = run(tool("sched_scale"), "--hash", "--steps", "500", "--policy", "directed")
    b = run(tool("sched_scale"), "--hash", "--steps", "500", "--policy", "directed")
    assert a[0] == 0 and b[0] == 0, (a[2], b[2])
    hashes = [ln for ln in a[1].splitlines() if ln.startswith("hash ")]
    assert len(hashes) >= 4, a[1]
    assert a[1] == b[1]
    assert len({ln.split()[4] for ln in hashes}) > 1, "every cell hashed alike: the hash ignores the decisions"


def test_sched_scale_refuses_an_unknown_policy():
    rc, _, err = run(tool("sched_scale"), "--policy", "no-such-policy")
    assert rc == 2 and "usage" in err, (rc, err)


def test_handoff_counts_hand_offs():
    """Two threads passing one slot by yield: every yield with the other
    thread queued is a hand-off, so the count is close to the yields made,
    and the context-switch line is printed for the table."""
    n = 400
    rc, out, err = run(tool("handoff"), "--n", str(n))
    assert rc == 0, (rc, err)
    m = re.search(r"(\d+) yields per thread, (\d+) hand-offs", out)
    assert m and int(m.group(1)) == n, out
    # the last thread's tail finds nobody queued; all the rest hand off
    assert n <= int(m.group(2)) <= 2 * n, out
    assert re.search(r"context switches per hand-off: [\d.]+ \(voluntary [\d.]+, involuntary [\d.]+\)", out), out
