"""`vmm bench`'s targets table (vmm/bench/report/targets.c) without KVM:
--test-synthetic gives deterministic made-up cells, and each verdict in
results.json must be what the rules in BENCHMARKS.md ("Targets") give when
recomputed here from the cells themselves; the text table must say the same;
a merge of shards must judge alike."""
import re

import test_bench_merge as tbm

ONE_VM = ["--test-synthetic", "--locks", "ticket,pvticket,tas", "--policies", "host,none,pv",
          "--overcommit", "1,2,4", "--pcpus", "2", "--duration", "100ms", "--no-plot", "--no-micro",
          "--no-native"]
MULTI_VM = ["--test-synthetic", "--locks", "ticket", "--policies", "none", "--overcommit", "1,2",
            "--vms", "2", "--vm-mode", "domain,process", "--reps", "5", "--pcpus", "2",
            "--duration", "100ms", "--no-plot", "--no-micro", "--no-native"]


def finite(x):
    return isinstance(x, (int, float))


def expected(cells):
    """The rules, written out: [(target, cell id, host id, met)] in cell order."""
    by_id = {c["id"]: c for c in cells}
    out = []
    for c in cells:
        if c["kind"] != "vm":
            continue
        failed = c["status"] != "ok"
        if c["mode"] == "domain" and c["vms"] > 1:
            v = c.get("vs_process")
            out.append(("vs process", c["id"], None, None if failed or not finite(v) else v >= 0.97))
            continue
        if c["vms"] != 1 or c["overcommit"] <= 1 or c["policy"] == "host":
            continue
        if c["workload"] == "lockbench" and (c["lock"], c["policy"]) in (("ticket", "none"), ("pvticket", "pv")) \
                and c["overcommit"] in (2, 4):
            e = c["efficiency"]
            few = sum(1 for r in c["runs"] if r["ok"]) < 5  # an efficiency needs 5 interleaved runs
            out.append(("efficiency", c["id"], None,
                        None if failed or few or not finite(e) else e >= (0.97 if c["overcommit"] == 2 else 0.95)))
        hosts = [h for h in cells if h["kind"] == "vm" and h["vms"] == 1 and h["policy"] == "host"
                 and all(h[k] == c[k] for k in ("workload", "lock", "spin_threshold", "vcpus_per_vm", "pcpus"))]
        if not hosts:
            continue
        h = by_id[hosts[0]["id"]]
        unknown = failed or h["status"] != "ok"
        ok = finite(c["efficiency"]) and finite(h["efficiency"]) and h["efficiency"] > 0
        # the ratio of medians decides; an interval wholly below the host's overrules it
        met = None if unknown or not ok else c["efficiency"] / h["efficiency"] >= 1.0
        if met and finite(c["eff_hi"]) and finite(h["eff_lo"]) and c["eff_hi"] < h["eff_lo"]:
            met = False
        out.append(("vs host", c["id"], h["id"], met))
    return out


def check(d, stdout):
    r = tbm.load(d)
    got = [(t["target"], t["cell_id"], t["host_id"], t["met"]) for t in r["targets"]]
    want = expected(r["cells"])
    assert got == want, (got, want)
    lines = [ln for ln in stdout.splitlines() if re.match(r"^(efficiency|vs host|vs process)\s+\d+ ", ln)]
    assert len(lines) == len(got), (len(lines), len(got))
    for ln, (_, cid, _, met) in zip(lines, got):
        assert int(ln.split()[2 if ln.startswith("vs ") else 1]) == cid, ln
        assert ln.split(" (host:")[0].rstrip().endswith({True: "met", False: "MISSED", None: "unknown"}[met]), ln
    n = [sum(1 for g in got if g[3] is v) for v in (True, False, None)]
    assert "targets: %d met, %d missed, %d unknown" % tuple(n) in stdout, stdout[-600:]
    return got


def test_one_vm_targets_follow_the_rules():
    """5 reps: intervals decide vs host; both efficiency bounds (2x, 4x)
    are judged, and each co-scheduler cell above 1x has its host twin."""
    with tbm.Tmp() as t:
        p = tbm.bench(*ONE_VM, "--reps", "5", "--out", t.p("full"))
        assert p.returncode == 0, p.stderr
        got = check(t.p("full"), p.stdout)
        kinds = [g[0] for g in got]
        assert kinds.count("efficiency") == 4, got  # ticket/none and pvticket/pv at 2x and 4x
        assert kinds.count("vs host") == 2 * 3 * 2, got  # none, pv x 3 locks x 2x, 4x
        # the efficiencies of the synthetic shape are far below the bounds
        assert all(g[3] is False for g in got if g[0] == "efficiency"), got


def test_medians_decide_below_five_reps_and_a_failed_cell_is_unknown():
    """3 reps leave no intervals: the ratio of medians decides vs host, and
    no efficiency is judged (it needs 5 runs). A failed host cell leaves
    its co-scheduler twins unjudged, not met."""
    with tbm.Tmp() as t:
        p = tbm.bench(*ONE_VM, "--reps", "3", "--out", t.p("m"))
        assert p.returncode == 0, p.stderr
        r = tbm.load(t.p("m"))
        assert all(c["eff_lo"] is None for c in r["cells"]), "3 reps gave an interval"
        got = check(t.p("m"), p.stdout)
        assert [g[3] for g in got if g[0] == "efficiency"] == [None] * 4, got
        host2x = next(c["id"] for c in r["cells"] if c["policy"] == "host" and c["lock"] == "ticket"
                      and c["overcommit"] == 2)
        p = tbm.bench(*ONE_VM, "--reps", "3", "--test-fail-cell", str(host2x), "--out", t.p("f"))
        got = check(t.p("f"), p.stdout)
        twins = [g for g in got if g[0] == "vs host" and g[2] == host2x]
        assert twins and all(g[3] is None for g in twins), got


def test_domain_cells_are_judged_against_one_process_and_merge_alike():
    with tbm.Tmp() as t:
        p = tbm.bench(*MULTI_VM, "--out", t.p("full"))
        assert p.returncode == 0, p.stderr
        got = check(t.p("full"), p.stdout)
        assert [g[0] for g in got].count("vs process") >= 1, got
        shards = t.shards(2, matrix=MULTI_VM)
        m = tbm.merge(t.p("merged"), *shards)
        assert m.returncode == 0, m.stderr
        assert tbm.load(t.p("merged"))["targets"] == tbm.load(t.p("full"))["targets"]
