"""`vmm bench --wake-slice-us LIST` without KVM (--test-synthetic): the slice
length while a woken vCPU queues as a dimension of co-scheduler cells
through --list-cells, shards and merge, one pooled 1x for every value, the
CSV columns at the rows' ends, the slice fit's groups, results.json files
from before it (also of the slices preset, which sweeps it now), and the
tables' policy column as wide as the longest label."""
import json
import re

import bench_stats_ref
import test_bench_fit as tbf
import test_bench_merge as tbm

# 0 (never cut), 500 and vmm run's default side by side
WS = ["--test-synthetic", "--locks", "tas", "--policies", "pv,none", "--wake-slice-us", "0,500,1000",
      "--overcommit", "1,2", "--reps", "5", "--pcpus", "2", "--duration", "100ms", "--no-plot",
      "--no-micro"]


def keys_of(listed):
    return [l.split("\t")[1] for l in listed.splitlines() if l.split("\t")[0].isdigit()]


def test_bad_wake_slice():
    for bad in (["--wake-slice-us", "-1"], ["--wake-slice-us", "0,0"], ["--wake-slice-us", ""],
                ["--wake-slice-us", "1000,500,1000"], ["--wake-slice-us", "10000001"],
                ["--wake-slice-us", "1.5"], ["--wake-slice-us", "fast"]):
        p = tbm.bench(*tbm.DIMS, *bad, "--list-cells")
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (bad, p)
        assert p.stderr.startswith("vmm bench: ") and "--wake-slice-us" in p.stderr, (bad, p.stderr)


def test_wake_slice_dimension_merges():
    with tbm.Tmp() as t:
        keys = keys_of(tbm.bench(*WS, "--list-cells").stdout)
        # the default keeps the key it always had; the others are marked; host and native take none
        for pol in ("pv", "none"):
            for x in (2, 4):
                k = "vm:lockbench:tas:%s:process:1x%d:p2:t4096" % (pol, x)
                assert k in keys and k + ":w0" in keys and k + ":w500" in keys, (k, keys)
                assert k + ":w1000" not in keys, keys
        assert not any(":w" in k for k in keys if ":host:" in k or k.startswith("native:"))
        assert len(keys) == len(set(keys)) == 2 + 2 * 3 * 2 + 2, keys
        # the default matrix's keys (and so its fingerprint) do not change
        plain = [a for a in WS if a not in ("--wake-slice-us", "0,500,1000")]
        assert tbm.bench(*plain, "--list-cells").stdout == \
            tbm.bench(*plain, "--wake-slice-us", "1000", "--list-cells").stdout
        full = tbm.load(t.run("full", matrix=WS))
        s = t.shards(3, matrix=WS)
        assert tbm.merge(t.p("a"), *s).returncode == 0
        for name in ("results.csv", "runs.csv", "loss.csv", "slice_fit.csv"):
            assert tbm.read(t.p("full", name)) == tbm.read(t.p("a", name)), name
        m = tbm.load(t.p("a"))
        assert m["config"]["wake_slice_us"] == [0, 500, 1000], m["config"]
        assert m["shard"]["matrix"] == full["shard"]["matrix"]
        assert [dict(c, runs=None) for c in m["cells"]] == [dict(c, runs=None) for c in full["cells"]]
        assert m["loss"] == full["loss"]
        vm = [c for c in m["cells"] if c["kind"] == "vm"]
        assert {(c["policy"], c["wake_slice_us"]) for c in vm} == \
            {("host", 1000)} | {(p, w) for p in ("pv", "none") for w in (0, 500, 1000)}, vm
        assert all(c["wake_slice_us"] == 1000 for c in m["cells"] if c["kind"] == "native")
        # at 1x nobody queues, so no slice is cut: one pool of every 1x
        ones = sorted(c["id"] for c in vm if c["vcpus_total"] == 2)
        assert len(ones) == 7, ones
        for c in m["cells"]:
            assert c["status"] == "ok" and len(c["runs"]) == 5, c
            if c["kind"] == "vm":
                assert c["ref_ids"] == ones, (c["id"], c["ref_ids"])
                ref = m["cells"][c["ref_id"]]
                assert ref["policy"] == c["policy"] and ref["wake_slice_us"] == c["wake_slice_us"], (c, ref)
            bench_stats_ref.check_cell(m, c)
        # the new column came last (before the Linux cells' QEMU comparison); the ones before are where they were
        rows = tbf.rows(t.p("a", "results.csv"))
        assert list(rows[0].keys())[-8:] == ["guest_slice", "loop_cpu", "loop_cpu_ran", "wake_slice_us",
                                             "qemu_ref_id", "vs_qemu", "vs_qemu_lo", "vs_qemu_hi"]
        for row, c in zip(rows, m["cells"]):
            assert int(row["wake_slice_us"]) == c["wake_slice_us"], (row, c)
        # every wake slice above 1x in the loss table
        assert {c["id"] for c in vm if c["overcommit"] == 2} <= {l["id"] for l in m["loss"]}
        out = tbm.bench(*WS, "--out", t.p("table")).stdout
        assert "pv/w0us" in out and "none/w500us" in out and "/w1000us" not in out, out


def test_wake_slices_fit_apart():
    """A slice sweep per wake slice: a group differs only in the slice."""
    ws = ["--test-synthetic", "--locks", "tas", "--policies", "host,pv", "--slice-us",
          "3000,6000,12000", "--wake-slice-us", "0,1000", "--overcommit", "1,2", "--reps", "5",
          "--pcpus", "2", "--duration", "100ms", "--no-plot", "--no-micro", "--no-native"]
    with tbm.Tmp() as t:
        p = tbm.bench(*ws, "--out", t.p("full"))
        assert p.returncode == 0, p.stderr
        full = tbm.load(t.p("full"))
        tbf.check_fits(full, ngroups=2, slices=(3000, 6000, 12000))
        tbf.check_loss(full)
        assert sorted(full["cells"][f["first_id"]]["wake_slice_us"] for f in full["slice_fit"]) == \
            [0, 1000], full["slice_fit"]
        fits = tbf.rows(t.p("full", "slice_fit.csv"))
        assert list(fits[0].keys())[-1] == "wake_slice_us"
        assert sorted(r["wake_slice_us"] for r in fits) == ["0", "1000"], fits
        assert re.search(r"\bwake\b", p.stdout) and "wake = --wake-slice-us" in p.stdout, p.stdout
        m = tbm.merge(t.p("m"), *t.shards(2, matrix=ws))
        assert m.returncode == 0, m.stderr
        merged = tbm.load(t.p("m"))
        assert merged["slice_fit"] == full["slice_fit"] and merged["loss"] == full["loss"]
        for name in ("slice_fit.csv", "loss.csv"):
            assert tbm.read(t.p("full", name)) == tbm.read(t.p("m", name)), name


def _without_wake(doc):
    del doc["config"]["wake_slice_us"]
    for c in doc["cells"]:
        del c["wake_slice_us"]
    return doc


def test_file_from_before_wake_slice_merges():
    """A results.json without wake_slice_us (config and cells) merges as
    vmm run's 1000, the old default, with the same keys and fingerprint;
    one of the slices preset too, which sweeps 0,1000 now: its matrix stays
    the one it ran. A bad value is refused in one line."""
    old_slices = ["--test-synthetic", "--preset", "slices", "--wake-slice-us", "1000", "--reps", "1",
                  "--pcpus", "2", "--duration", "100ms", "--no-plot", "--no-micro", "--no-native"]
    with tbm.Tmp() as t:
        for name, matrix in (("old", tbm.MATRIX), ("oldslices", old_slices)):
            d = t.run(name, matrix=matrix)
            new = tbm.load(d)
            assert new["config"]["wake_slice_us"] == [1000]
            with open(t.p(name + ".json"), "w") as f:
                json.dump(_without_wake(tbm.load(d)), f)
            p = tbm.merge(t.p("m" + name), t.p(name + ".json"))
            assert p.returncode == 0, (name, p.stderr)
            m = tbm.load(t.p("m" + name))
            assert m["config"]["wake_slice_us"] == [1000], m["config"]
            assert m["shard"]["matrix"] == new["shard"]["matrix"], name
            assert len(m["cells"]) == len(new["cells"]), name
            for c, o in zip(m["cells"], new["cells"]):
                assert c["wake_slice_us"] == 1000 and c["efficiency"] == o["efficiency"], (name, c["id"])
                assert c["ref_ids"] == o["ref_ids"], (name, c["id"])
            for f in ("results.csv", "runs.csv"):
                assert tbm.read(t.p(name, f)) == tbm.read(t.p("m" + name, f)), (name, f)
        # the slices preset's own matrix now has the never-cut cells besides,
        # which that old file's merge above did not take
        now = keys_of(tbm.bench(*[a for a in old_slices if a not in ("--wake-slice-us", "1000")],
                                "--list-cells").stdout)
        assert sum(1 for k in now if k.endswith(":w0")) > 0, now
        assert len(now) > len(tbm.load(t.p("oldslices"))["cells"]), now
        # malformed: not a number, or a value vmm run does not take
        for val, where in ((["fast"], "config.wake_slice_us"), ([-1], "--wake-slice-us"),
                           ([0, 0], "--wake-slice-us"), ([], "config.wake_slice_us")):
            doc = tbm.load(t.p("old"))
            doc["config"]["wake_slice_us"] = val
            with open(t.p("bad.json"), "w") as f:
                json.dump(doc, f)
            p = tbm.merge(t.p("m2"), t.p("bad.json"))
            assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (val, p)
            assert where in p.stderr, (val, p.stderr)


def _ends(line, n):
    """Where the n-th whitespace-separated field of line ends (1-based)."""
    return [m.end() for m in re.finditer(r"\S+", line)][n - 1]


def test_long_labels_keep_columns_aligned():
    """Labels longer than the 12 (main tables) or 20 (loss table) columns
    widen the column to the longest label, so every row's next field ends
    under its header."""
    long = ["--test-synthetic", "--locks", "tas", "--policies", "pv", "--slice-us", "3000",
            "--defer-us", "100", "--guest-slice", "off", "--loop-cpu", "none", "--wake-slice-us", "500",
            "--vms", "1,2", "--vm-mode", "domain", "--overcommit", "1,2", "--reps", "3", "--pcpus", "2",
            "--duration", "100ms", "--no-plot", "--no-micro"]
    label = "pv@dom/s3ms/d100us/gsoff/loopnone/w500us"
    with tbm.Tmp() as t:
        p = tbm.bench(*long, "--out", t.p("o"))
        assert p.returncode == 0, p.stderr
        lines = p.stdout.splitlines()
        assert any(label in l for l in lines), p.stdout
        # each table: its header, the field after the label, and its rows (label with no space)
        tables = ((r"^cell +workload +lock +thr +policy +VMs", 6, 6, r"^\d+ "),
                  (r"^workload +lock +thr +policy +pooled 1x", 6, 5, r"^lockbench "),
                  (r"^cell +workload +lock +policy +VMs +vCPUs +sum/s", 5, 5, r"^\d+ "),
                  (r"^cell +workload +lock +policy +x +eff", 5, 5, r"^\d+ "))
        for head, hfield, rfield, row in tables:
            at = [i for i, l in enumerate(lines) if re.match(head, l)]
            assert at, (head, p.stdout)
            for i in at:
                end = _ends(lines[i], hfield)
                body = []
                for l in lines[i + 1:]:
                    if not re.match(row, l):
                        break
                    body.append(l)
                assert body and any("/w500us" in l for l in body), (head, lines[i:i + 5])
                for l in body:
                    assert _ends(l, rfield) == end, (head, lines[i], l)
        # without long labels the tables are as they were: 12 and 20 wide
        short = tbm.bench(*tbm.DIMS, "--no-native", "--out", t.p("s")).stdout
        head = next(l for l in short.splitlines() if l.startswith("cell ") and " thr " in l)
        assert head.index("VMs") - head.index("policy") == 12 + 1, head


def test_wake_cuts_are_counted_per_run_cell_and_loss_row():
    """Each run keeps the report's sched.wake_cut_slices; a cell its median
    and the rate per second of the window; the loss table and loss.csv that
    rate. Nothing is cut where nobody queues (1x), at 0, or under the host."""
    with tbm.Tmp() as t:
        d = t.run("a", matrix=WS + ["--policies", "host,pv,none"])
        m = tbm.load(d)
        vm = [c for c in m["cells"] if c["kind"] == "vm"]
        cutting = 0
        for c in vm:
            runs = [r["sched"] for r in c["runs"]]
            cuts = [r["wake_cut_slices"] for r in runs]
            assert c["sched"]["wake_cut_slices"] == bench_stats_ref.median(cuts), c["id"]
            rate = bench_stats_ref.median([r["wake_cut_slices"] / r["window_s"] for r in runs])
            assert c["sched"]["wake_cuts_per_s"] == rate, c["id"]
            if c["policy"] == "host" or c["overcommit"] <= 1 or c["wake_slice_us"] == 0:
                assert all(x == 0 for x in cuts), (c["id"], cuts)
            else:
                cutting += any(x > 0 for x in cuts)
        assert cutting > 0, "no cell cut a slice"
        loss = {l["id"]: l for l in m["loss"]}
        for c in vm:
            if c["id"] in loss:
                assert loss[c["id"]]["wake_cuts_per_s"] == c["sched"]["wake_cuts_per_s"], c["id"]
        with open(t.p("a", "loss.csv")) as f:
            head = f.readline().strip().split(",")
        assert head[-1] == "wake_cuts_per_s", head
