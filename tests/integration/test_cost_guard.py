"""The cost guard (tests/cost_guard.py, issue 32): the scheduler core's
instructions per event and the hand-off's system calls stay within the
committed budgets (tests/cost_budgets.json), and a cost over its budget is
caught. Counts of the plain -O2 build: not under the sanitizers (their
instrumentation is the cost), not nested (the same binary counts the same
on the machine itself)."""
import json
import os
import subprocess
import sys
import tempfile

import harness

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUARD = os.path.join(ROOT, "tests", "cost_guard.py")


def guard(*args):
    if os.environ.get("VMM_SANITIZED") == "1" or harness.nested():
        raise harness.Skip("counts of the plain build, once: the plain stage runs it")
    build = os.path.join(ROOT, harness.BUILD)  # an absolute BUILD stays as it is
    p = subprocess.run([sys.executable, GUARD, "--build", build, *args], capture_output=True, text=True,
                       timeout=300)
    if p.returncode == 2:
        raise harness.Skip(p.stderr.strip())
    return p


def test_scheduler_costs_are_within_their_budgets():
    p = guard()
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-1000:]
    assert "0 over" in p.stdout, p.stdout[-500:]
    with open(os.path.join(ROOT, "tests", "cost_budgets.json")) as f:
        budgets = json.load(f)["budgets"]
    judged = [ln for ln in p.stdout.splitlines() if ln.startswith("cost_guard: ") and " against budget " in ln]
    assert len(judged) == len(budgets), (len(judged), len(budgets))
    # every policy at the three shapes, and both hand-off counts
    assert sum(1 for k in budgets if k.startswith("sched_instr_per_event/") and k.endswith("/4096:128")) >= 6
    assert {"handoff/futex_per_handoff", "handoff/syscalls_per_handoff"} <= set(budgets)


def test_a_cost_over_its_budget_fails_the_guard():
    """The pv policy at 512 vCPUs against a budget 20% below what it costs
    (as a change that raised its cost by a quarter would stand)."""
    with open(os.path.join(ROOT, "tests", "cost_budgets.json")) as f:
        b = json.load(f)
    key = "sched_instr_per_event/pv/512:16"
    b["budgets"][key] = round(b["budgets"][key] * 0.8, 1)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(b, f)
    try:
        p = guard("--budgets", f.name, "--only", "/pv/512:16$")
    finally:
        os.unlink(f.name)
    assert p.returncode == 1, p.stdout + p.stderr
    assert f"{key}: " in p.stdout and "OVER by" in p.stdout, p.stdout
