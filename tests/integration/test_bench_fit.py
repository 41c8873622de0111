"""The slice fit and the loss table end to end, without KVM: --test-synthetic
shapes a co-scheduler cell above 1x as eff = Q x (1 - 0.02 - 60/slice) with
noise that does not depend on the slice, and its run share as
0.98 - 30/slice, so every sweep's fit is exact and checkable here; a full
run and merged shards must write the same fit and table."""
import csv
import os

import bench_stats_ref
import test_bench_merge as tbm

# the synthetic shape (vmm/bench/exec/synth.c)
SYN_A, SYN_C, SYN_SLOT_C, SYN_SHARE = 0.02, 60.0, 30.0, 0.98

SWEEP = ["--test-synthetic", "--locks", "tas,pvticket", "--policies", "host,pv,none",
         "--slice-us", "3000,6000,12000,24000", "--overcommit", "1,2,4", "--reps", "5",
         "--pcpus", "2", "--duration", "100ms", "--no-plot", "--no-micro", "--no-native"]

GROUP_KEYS = ("workload", "lock", "policy", "spin_threshold", "defer_us", "guest_slice", "loop_cpu",
              "wake_slice_us", "vms", "vcpus_per_vm", "pcpus", "mode")


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)


def fit(xs, ys):
    """loss = a + C/slice by least squares, as written out, not as stats/fit.c computes it."""
    us = [1 / x for x in xs]
    n = len(us)
    mu, my = sum(us) / n, sum(ys) / n
    c = sum((u - mu) * (y - my) for u, y in zip(us, ys)) / sum((u - mu) ** 2 for u in us)
    a = my - c * mu
    res = sum((y - a - c * u) ** 2 for u, y in zip(us, ys))
    tot = sum((y - my) ** 2 for y in ys)
    return a, c, 1 - res / tot


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def check_fits(doc, ngroups=8, slices=(3000, 6000, 12000, 24000)):
    cells = doc["cells"]
    groups = {}
    for c in cells:
        if c["kind"] == "vm" and c["policy"] != "host" and c["overcommit"] > 1:
            groups.setdefault(tuple(c[k] for k in GROUP_KEYS), []).append(c)
    # 2 locks x pv, none x 2x, 4x, each swept over 4 slices
    assert len(groups) == ngroups and len(doc["slice_fit"]) == ngroups, doc["slice_fit"]
    for f in doc["slice_fit"]:
        first = cells[f["first_id"]]
        g = groups[tuple(first[k] for k in GROUP_KEYS)]
        assert f["ids"] == [c["id"] for c in g] and f["slices_us"] == list(slices), f
        a, c, r2 = fit([x["slice_us"] for x in g], [1 - x["efficiency"] for x in g])
        assert close(f["a"], a) and close(f["c_us"], c), (f, a, c)
        assert close(f["r2"], 1, 1e-9) and close(r2, 1, 1e-9), (f, r2)
        # eff = Q (1 - A - C/s): the fit's C over its 1 - a is the shape's, whatever Q is
        assert close(f["c_us"] / (1 - f["a"]), SYN_C / (1 - SYN_A), 1e-6), f
        assert close(f["slice_1pct_us"], 100 * f["c_us"]), f
        swept = [s for s in f["slices_us"] if s >= f["slice_1pct_us"]]
        assert f["swept_1pct_us"] == (min(swept) if swept else None), f
        assert close(f["wait_bound_us"], (first["overcommit"] - 1) * f["slice_1pct_us"]), f


def check_loss(doc):
    cells = doc["cells"]
    above = [c for c in cells if c["kind"] == "vm" and c["overcommit"] > 1]
    assert [l["id"] for l in doc["loss"]] == [c["id"] for c in above], doc["loss"]

    def share(c, r):
        s = r["sched"]
        return s["run_ns_total"] / 1e9 / (c["pcpus"] * s["guest_window_s"])

    for l in doc["loss"]:
        c = cells[l["id"]]
        assert l["efficiency"] == c["efficiency"], (l, c)
        mine = bench_stats_ref.median([share(c, r) for r in c["runs"] if r["ok"]])
        pool = [(cells[i], r) for i in c["ref_ids"] for r in cells[i]["runs"] if r["ok"]]
        one = bench_stats_ref.median([share(p, r) for p, r in pool])
        assert close(l["run_share"], mine) and close(l["run_share_1x"], one), (l, mine, one)
        assert close(one, SYN_SHARE, 1e-6), one
        want = SYN_SHARE * 0.9 if c["policy"] == "host" else SYN_SHARE - SYN_SLOT_C / c["slice_us"]
        assert close(mine, want, 1e-6), (c["id"], mine, want)
        assert close(l["share_ratio"], mine / one), l
        # the lost points split exactly into slot time and slower operations
        assert close(l["pts_slot"], 1 - l["share_ratio"]), l
        assert close(l["pts_slot"] + l["pts_ops"], 1 - l["efficiency"]), l
        # ops per running second, against the pool's, from the runs
        opr = lambda p, r: r["ops_per_s"] * r["sched"]["guest_window_s"] / (r["sched"]["run_ns_total"] / 1e9)
        ratio = bench_stats_ref.median([opr(c, r) for r in c["runs"] if r["ok"]]) / \
            bench_stats_ref.median([opr(p, r) for p, r in pool])
        assert close(l["ops_ratio"], ratio), (l, ratio)
        assert l["switches_per_s"] == c["sched"]["switches_per_s"], (l, c["sched"])
        lost = (l["run_share_1x"] - l["run_share"]) * c["pcpus"] / l["switches_per_s"] * 1e6
        assert close(l["lost_us_per_switch"], lost), (l, lost)


def test_slice_fit_and_loss_table_merge():
    with tbm.Tmp() as t:
        p = tbm.bench(*SWEEP, "--out", t.p("full"))
        assert p.returncode == 0, p.stderr
        assert "slice fit: loss = 1 - eff = a + C/slice" in p.stdout, p.stdout
        assert "where a lost point goes" in p.stdout, p.stdout
        full = tbm.load(t.p("full"))
        check_fits(full)
        check_loss(full)
        s = t.shards(3, matrix=SWEEP)
        m = tbm.merge(t.p("m"), *s)
        assert m.returncode == 0, m.stderr
        merged = tbm.load(t.p("m"))
        assert merged["slice_fit"] == full["slice_fit"] and merged["loss"] == full["loss"]
        for name in ("slice_fit.csv", "loss.csv", "results.csv", "runs.csv"):
            assert tbm.read(t.p("full", name)) == tbm.read(t.p("m", name)), name
        # the printed tables too: the merge runs the same code
        cut = lambda out: out[out.index("slice fit:"):out.index("results in")]
        assert cut(m.stdout) == cut(p.stdout)
        fits = rows(t.p("full", "slice_fit.csv"))
        assert len(fits) == len(full["slice_fit"])
        for row, f in zip(fits, full["slice_fit"]):
            assert int(row["first_id"]) == f["first_id"], row
            assert row["ids"] == ";".join(str(i) for i in f["ids"]), row
            for k in ("a", "c_us", "r2", "slice_1pct_us", "wait_bound_us"):
                assert float(row[k]) == f[k], (k, row, f)
        loss = rows(t.p("full", "loss.csv"))
        assert [int(r["id"]) for r in loss] == [l["id"] for l in full["loss"]]
        for row, l in zip(loss, full["loss"]):
            for k in ("run_share", "share_ratio", "pts_slot", "pts_ops", "switches_per_s"):
                assert float(row[k]) == l[k], (k, row, l)


def test_guest_slice_paths_fit_apart():
    """--guest-slice on,off: a sweep per path (a group differs only in the
    slice), both in the fit table and the loss table, through shards and merge."""
    gs = ["--test-synthetic", "--locks", "tas", "--policies", "host,pv", "--slice-us",
          "3000,6000,12000", "--guest-slice", "on,off", "--overcommit", "1,2", "--reps", "5",
          "--pcpus", "2", "--duration", "100ms", "--no-plot", "--no-micro", "--no-native"]
    with tbm.Tmp() as t:
        p = tbm.bench(*gs, "--out", t.p("full"))
        assert p.returncode == 0, p.stderr
        full = tbm.load(t.p("full"))
        check_fits(full, ngroups=2, slices=(3000, 6000, 12000))
        check_loss(full)
        assert sorted(full["cells"][f["first_id"]]["guest_slice"] for f in full["slice_fit"]) == \
            ["off", "on"], full["slice_fit"]
        fits = rows(t.p("full", "slice_fit.csv"))
        assert sorted(r["guest_slice"] for r in fits) == ["off", "on"], fits
        m = tbm.merge(t.p("m"), *t.shards(2, matrix=gs))
        assert m.returncode == 0, m.stderr
        merged = tbm.load(t.p("m"))
        assert merged["slice_fit"] == full["slice_fit"] and merged["loss"] == full["loss"]
        for name in ("slice_fit.csv", "loss.csv"):
            assert tbm.read(t.p("full", name)) == tbm.read(t.p("m", name)), name


def test_no_fit_below_three_slices():
    with tbm.Tmp() as t:
        two = [a if a != "3000,6000,12000,24000" else "3000,6000" for a in SWEEP]
        p = tbm.bench(*two, "--out", t.p("two"))
        assert p.returncode == 0, p.stderr
        doc = tbm.load(t.p("two"))
        assert doc["slice_fit"] == [] and "slice fit:" not in p.stdout, doc["slice_fit"]
        assert rows(t.p("two", "slice_fit.csv")) == []
        # the loss table does not need a sweep
        assert len(doc["loss"]) == len([c for c in doc["cells"]
                                        if c["kind"] == "vm" and c["overcommit"] > 1])
        # a failed cell leaves its sweep with too few slices: skipped, never faked
        three = [a if a != "3000,6000,12000,24000" else "3000,6000,12000" for a in SWEEP]
        listed = tbm.bench(*three, "--list-cells").stdout
        bad = next(int(l.split("\t")[0]) for l in listed.splitlines()
                   if "tas:pv:process:1x4:p2:t4096:s3000" in l)
        p = tbm.bench(*three, "--test-fail-cell", str(bad), "--out", t.p("f"))
        assert p.returncode == 1, p.stderr
        doc = tbm.load(t.p("f"))
        assert len(doc["slice_fit"]) == 7, doc["slice_fit"]
        assert all(bad not in f["ids"] for f in doc["slice_fit"])
        assert bad not in [l["id"] for l in doc["loss"]]


def test_preset_slices_matrix():
    p = tbm.bench("--preset", "slices", "--pcpus", "2", "--list-cells")
    assert p.returncode == 0, p.stderr
    keys = [l.split("\t")[1] for l in p.stdout.splitlines() if l.split("\t")[0].isdigit()]
    vm = [k for k in keys if k.startswith("vm:")]
    # host takes no slice: one cell per lock and overcommit; none and pv: one per
    # slice and wake slice (0: never cut, and vmm run's 1000, which has no suffix)
    for lock in ("ticket", "pvticket", "tas"):
        for x in (2, 4, 8):
            assert sum(1 for k in vm if ":%s:host:" % lock in k and ":1x%d:" % x in k) == 1, (lock, x)
            for pol in ("none", "pv"):
                mine = [k for k in vm if ":%s:%s:" % (lock, pol) in k and ":1x%d:" % x in k]
                assert len(mine) == 8, mine
                tails = sorted(k.split(":t4096")[-1] for k in mine)
                assert tails == sorted(s + w for s in ("", ":s3000", ":s12000", ":s24000")
                                       for w in ("", ":w0")), tails
    assert not any(k.split(":t4096")[-1] for k in vm if ":host:" in k), vm


def test_file_without_run_meter_merges_as_unknown():
    """A results.json written before the run meter's two values: read as unknown,
    so the loss table has its rows with unknown shares, never made-up ones."""
    import json
    with tbm.Tmp() as t:
        d = t.run("old", matrix=SWEEP)
        doc = tbm.load(d)
        for c in doc["cells"]:
            for r in c["runs"]:
                if "sched" in r:
                    del r["sched"]["run_ns_total"], r["sched"]["guest_window_s"]
        with open(os.path.join(d, "results.json"), "w") as f:
            json.dump(doc, f)
        p = tbm.merge(t.p("m"), d)
        assert p.returncode == 0, p.stderr
        m = tbm.load(t.p("m"))
        assert m["loss"] and all(l["run_share"] is None and l["pts_slot"] is None for l in m["loss"])
        assert m["slice_fit"] == doc["slice_fit"]  # the fit needs only efficiencies


def test_preset_hotpath_matrix():
    """Issue 13's table in one run: every lock kind and the barrier and
    shootdown workloads, host beside none and pv at 1, 2 and 4x, and the
    co-scheduler's cells once with guest-timed slices and once without."""
    p = tbm.bench("--preset", "hotpath", "--pcpus", "2", "--list-cells")
    assert p.returncode == 0, p.stderr
    keys = [l.split("\t")[1] for l in p.stdout.splitlines() if l.split("\t")[0].isdigit()]
    vm = [k for k in keys if k.startswith("vm:")]
    kinds = [("lockbench", l) for l in ("ticket", "pvticket", "tas", "mcs", "pvmcs")] + \
        [("barrier", None), ("shootdown", None)]
    for wl, lock in kinds:
        mine = [k for k in vm if k.startswith("vm:%s:%s" % (wl, (lock + ":") if lock else ""))]
        for x in (2, 4, 8):
            at = [k for k in mine if ":1x%d:" % x in k]
            assert sum(1 for k in at if ":host:" in k) == 1, at  # host: no guest-slice cells
            for pol in ("none", "pv"):
                both = [k for k in at if ":%s:" % pol in k]
                assert len(both) == 2 and sum(k.endswith(":gsoff") for k in both) == 1, both
    assert not any(":host:" in k and k.endswith(":gsoff") for k in vm), vm
