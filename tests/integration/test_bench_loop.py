"""`vmm bench --loop-cpu LIST` without KVM (--test-synthetic): the event
loop's placement as a dimension through --list-cells, shards and merge, its
own 1x pools, where the loop ran per run, the CSV columns at the rows' ends,
the slice fit's groups, and results.json files from before it."""
import csv
import json

import bench_stats_ref
import test_bench_fit as tbf
import test_bench_merge as tbm

# auto (the default), none and a CPU number side by side
LC = ["--test-synthetic", "--locks", "tas", "--policies", "pv,none", "--loop-cpu", "auto,none,1",
      "--overcommit", "1,2", "--reps", "5", "--pcpus", "2", "--duration", "100ms", "--no-plot",
      "--no-micro"]

# where the synthetic loop ran (exec/synth.c): auto takes the first CPU past the slots
RAN = {"auto": 2, "none": -1, "1": 1}


def test_bad_loop_cpu():
    for bad in (["--loop-cpu", "sometimes"], ["--loop-cpu", "auto,auto"], ["--loop-cpu", ""],
                ["--loop-cpu", "none,auto,none"], ["--loop-cpu", "-1"], ["--loop-cpu", "1024"],
                ["--loop-cpu", "2,2"]):
        p = tbm.bench(*tbm.DIMS, *bad, "--list-cells")
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (bad, p)
        assert "--loop-cpu" in p.stderr, (bad, p.stderr)


def test_loop_cpu_dimension_merges():
    with tbm.Tmp() as t:
        listed = tbm.bench(*LC, "--list-cells").stdout
        keys = [l.split("\t")[1] for l in listed.splitlines() if l.split("\t")[0].isdigit()]
        # auto keeps the key it always had; the others are marked; host and native take none
        for pol in ("pv", "none"):
            for x in (2, 4):
                k = "vm:lockbench:tas:%s:process:1x%d:p2:t4096" % (pol, x)
                assert k in keys and k + ":loopnone" in keys and k + ":loop1" in keys, (k, keys)
        assert not any(":loop" in k for k in keys if ":host:" in k or k.startswith("native:"))
        assert len(keys) == len(set(keys)) == 2 + 2 * 3 * 2 + 2, keys
        # the default matrix's keys (and so its fingerprint) do not change
        plain = [a for a in LC if a not in ("--loop-cpu", "auto,none,1")]
        assert tbm.bench(*plain, "--list-cells").stdout == \
            tbm.bench(*plain, "--loop-cpu", "auto", "--list-cells").stdout
        full = tbm.load(t.run("full", matrix=LC))
        s = t.shards(3, matrix=LC)
        assert tbm.merge(t.p("a"), *s).returncode == 0
        for name in ("results.csv", "runs.csv", "loss.csv", "slice_fit.csv"):
            assert tbm.read(t.p("full", name)) == tbm.read(t.p("a", name)), name
        m = tbm.load(t.p("a"))
        assert m["config"]["loop_cpu"] == ["auto", "none", "1"], m["config"]
        assert m["shard"]["matrix"] == full["shard"]["matrix"]
        assert [dict(c, runs=None) for c in m["cells"]] == [dict(c, runs=None) for c in full["cells"]]
        assert m["loss"] == full["loss"]
        vm = [c for c in m["cells"] if c["kind"] == "vm"]
        assert {(c["policy"], c["loop_cpu"]) for c in vm} == \
            {("host", "auto")} | {(p, l) for p in ("pv", "none") for l in RAN}, vm
        assert all(c["loop_cpu"] == "auto" for c in m["cells"] if c["kind"] == "native")
        # each placement pools its own 1x runs (the host's 1x is auto's)
        for c in vm:
            ones = sorted(o["id"] for o in vm if o["vcpus_total"] == 2 and o["loop_cpu"] == c["loop_cpu"])
            assert len(ones) == (3 if c["loop_cpu"] == "auto" else 2), ones
            assert c["ref_ids"] == ones, (c["id"], c["ref_ids"], ones)
            ref = m["cells"][c["ref_id"]]
            assert ref["policy"] == c["policy"] and ref["loop_cpu"] == c["loop_cpu"], (c, ref)
        for c in m["cells"]:
            assert c["status"] == "ok" and len(c["runs"]) == 5, c
            bench_stats_ref.check_cell(m, c)
        # where each run's loop ran, and the cell's common CPU
        for c in vm:
            want = -1 if c["policy"] == "host" else RAN[c["loop_cpu"]]
            assert [r["sched"]["loop_cpu"] for r in c["runs"]] == [want] * 5, c
            assert c["sched"]["loop_cpu"] == want, c
        # the new columns are the rows' last; the ones before are where they were
        with open(t.p("a", "results.csv")) as f:
            head = f.readline().strip().split(",")
            # then wake_slice_us and the Linux cells' QEMU comparison
            assert head[-8:-5] == ["guest_slice", "loop_cpu", "loop_cpu_ran"], head
            f.seek(0)
            for row, c in zip(csv.DictReader(f), m["cells"]):
                assert row["loop_cpu"] == c["loop_cpu"], (row, c)
                ran = c["sched"]["loop_cpu"] if c.get("sched") else None
                assert (row["loop_cpu_ran"] == "") if ran is None else int(row["loop_cpu_ran"]) == ran, row
        with open(t.p("a", "runs.csv")) as f:
            rows = list(csv.DictReader(f))
        assert list(rows[0].keys())[-1] == "loop_cpu"
        by_id = {c["id"]: c for c in m["cells"]}
        for row in rows:
            c = by_id[int(row["id"])]
            want = c["runs"][0].get("sched", {}).get("loop_cpu")
            assert (row["loop_cpu"] == "") if want is None else int(row["loop_cpu"]) == want, row
        # the loss table has every placement above 1x
        loss = {l["id"] for l in m["loss"]}
        assert {c["id"] for c in vm if c["overcommit"] == 2} <= loss
        out = tbm.bench(*LC, "--out", t.p("table")).stdout
        assert "pv/loopnone" in out and "none/loop1" in out, out
        assert "each --loop-cpu placement pools only its own 1x runs" in out, out
        assert "pools only its own" not in tbm.bench(*plain, "--out", t.p("plain")).stdout


def test_loop_cpu_placements_fit_apart():
    """A slice sweep per placement: a group differs only in the slice."""
    lc = ["--test-synthetic", "--locks", "tas", "--policies", "host,pv", "--slice-us",
          "3000,6000,12000", "--loop-cpu", "auto,none", "--overcommit", "1,2", "--reps", "5",
          "--pcpus", "2", "--duration", "100ms", "--no-plot", "--no-micro", "--no-native"]
    with tbm.Tmp() as t:
        p = tbm.bench(*lc, "--out", t.p("full"))
        assert p.returncode == 0, p.stderr
        full = tbm.load(t.p("full"))
        tbf.check_fits(full, ngroups=2, slices=(3000, 6000, 12000))
        tbf.check_loss(full)
        assert sorted(full["cells"][f["first_id"]]["loop_cpu"] for f in full["slice_fit"]) == \
            ["auto", "none"], full["slice_fit"]
        fits = tbf.rows(t.p("full", "slice_fit.csv"))
        assert sorted(r["loop_cpu"] for r in fits) == ["auto", "none"], fits
        m = tbm.merge(t.p("m"), *t.shards(2, matrix=lc))
        assert m.returncode == 0, m.stderr
        merged = tbm.load(t.p("m"))
        assert merged["slice_fit"] == full["slice_fit"] and merged["loss"] == full["loss"]
        for name in ("slice_fit.csv", "loss.csv"):
            assert tbm.read(t.p("full", name)) == tbm.read(t.p("m", name)), name


def test_file_from_before_loop_cpu_merges():
    """A results.json without loop_cpu (config, cells, runs) merges as auto,
    the old default, with where the loop ran unknown; a bad value is refused."""
    with tbm.Tmp() as t:
        d = t.run("old")
        new = tbm.load(d)
        assert new["config"]["loop_cpu"] == ["auto"]
        doc = tbm.load(d)
        del doc["config"]["loop_cpu"]
        for c in doc["cells"]:
            del c["loop_cpu"]
            for s in [c.get("sched")] + [r.get("sched") for r in c["runs"]]:
                if s:
                    s.pop("loop_cpu", None)
        with open(t.p("old.json"), "w") as f:
            json.dump(doc, f)
        p = tbm.merge(t.p("m"), t.p("old.json"))
        assert p.returncode == 0, p.stderr
        m = tbm.load(t.p("m"))
        assert m["config"]["loop_cpu"] == ["auto"] and m["shard"]["matrix"] == new["shard"]["matrix"]
        for c, o in zip(m["cells"], new["cells"]):
            assert c["loop_cpu"] == "auto" and c["efficiency"] == o["efficiency"], c["id"]
            if c["kind"] == "vm":
                assert c["sched"]["loop_cpu"] is None, c["sched"]
                assert all(r["sched"]["loop_cpu"] is None for r in c["runs"]), c["id"]
        # malformed: a placement vmm run has no name for, or a CPU no report gives
        for key, val, where in (("config", ["sometimes"], "--loop-cpu"), ("run", -3, "loop_cpu"),
                                ("run", 1.5, "loop_cpu"), ("run", "1", "loop_cpu")):
            doc = tbm.load(d)
            if key == "config":
                doc["config"]["loop_cpu"] = val
            else:
                doc["cells"][1]["runs"][0]["sched"]["loop_cpu"] = val
            with open(t.p("bad.json"), "w") as f:
                json.dump(doc, f)
            p = tbm.merge(t.p("m2"), t.p("bad.json"))
            assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (key, val, p)
            assert where in p.stderr, (key, val, p.stderr)
