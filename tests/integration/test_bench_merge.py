"""`vmm bench --shard I/N` + `vmm bench merge` without KVM: --test-synthetic
makes every unit a deterministic made-up result of (cell key, rep), so a
full run and 4 shards merged must agree exactly, and the merge's checks
(missing, duplicated, foreign, bad files, several hosts) can be driven."""
import csv
import json
import os
import shutil
import subprocess
import tempfile

import bench_stats_ref
import harness

MATRIX = ["--test-synthetic", "--locks", "tas,pvticket", "--policies", "host,pv",
          "--overcommit", "1,2", "--vms", "1,2", "--reps", "3", "--pcpus", "2",
          "--duration", "100ms", "--no-plot"]


def bench(*args):
    return subprocess.run([harness.vmm_path(), "bench", *args], capture_output=True,
                          text=True, timeout=60)


def merge(out, *paths):
    return bench("merge", "--no-plot", "--out", out, *paths)


class Tmp:
    def __enter__(self):
        self.d = tempfile.mkdtemp(prefix="vmm-bench-merge.")
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.d, ignore_errors=True)

    def p(self, *names):
        return os.path.join(self.d, *names)

    def run(self, name, *extra, matrix=MATRIX):
        p = bench(*matrix, *extra, "--out", self.p(name))
        assert p.returncode == 0, (name, p.stderr)
        return self.p(name)

    def shards(self, n=4, matrix=MATRIX, prefix="s"):
        return [self.run("%s%d" % (prefix, i), "--shard", "%d/%d" % (i, n), matrix=matrix)
                for i in range(1, n + 1)]


def load(d):
    with open(os.path.join(d, "results.json")) as f:
        return json.load(f)


def read(path):
    with open(path, "rb") as f:
        return f.read()


DERIVED = ["status", "median_ops_per_s", "min_ops_per_s", "max_ops_per_s", "spread_pct",
           "efficiency", "of_native", "jain", "vs_1vm", "vs_process", "vs_host_procs",
           "median_lo", "median_hi", "eff_lo", "eff_hi", "pooled_1x_ops_per_s", "ref_ids", "sched"]


def test_shards_merge_equal_full_run():
    with Tmp() as t:
        full = load(t.run("full"))
        p = merge(t.p("m"), *t.shards())
        assert p.returncode == 0, p.stderr
        m = load(t.p("m"))
        assert len(m["cells"]) == len(full["cells"]) > 10
        for a, b in zip(full["cells"], m["cells"]):
            assert a["id"] == b["id"] and a["policy"] == b["policy"], (a, b)
            assert [r["rep"] for r in b["runs"]] == list(range(3)), b
            assert a["runs"] == b["runs"], (a["id"], a["runs"], b["runs"])
            for k in DERIVED:
                assert a.get(k) == b.get(k), (a["id"], k, a.get(k), b.get(k))
        assert full["micro"] == m["micro"]
        # the guest-timed micro keys travel through shard and merge like the rest
        for k in ("safe_point_switch_ns", "safe_point_switches", "safe_point_deferrals_hard",
                  "kick_to_guest_ns", "kicks_timed"):
            assert len(m["micro"][k]["runs"]) == 3 and m["micro"][k]["median"] > 0, (k, m["micro"][k])
        for k in ("kick_to_guest_over_futex", "safe_point_switch_over_forced_preemption"):
            assert m["micro"][k] > 0, (k, m["micro"])
        assert m["shard"]["count"] == 4 and m["shard"]["matrix"] == full["shard"]["matrix"]
        assert len(m["shard"]["units"]) == len(full["shard"]["units"])
        for name in ("results.csv", "runs.csv", "micro.csv"):
            assert read(t.p("full", name)) == read(t.p("m", name)), name


def test_shards_split_the_units():
    with Tmp() as t:
        full = load(t.run("full"))["shard"]
        assert full["index"] == 1 and full["count"] == 1
        units = [tuple(u) for u in full["units"]]
        got = []
        for i, d in enumerate(t.shards(), 1):
            s = load(d)["shard"]
            assert s["index"] == i and s["count"] == 4 and s["matrix"] == full["matrix"]
            mine = [tuple(u) for u in s["units"]]
            # every 4th unit of the full run's order, from the i-th
            assert mine == units[i - 1::4], (i, mine)
            got += mine
        assert sorted(got, key=str) == sorted(units, key=str)


def test_merge_order_independent_and_idempotent():
    with Tmp() as t:
        s = t.shards()
        assert merge(t.p("a"), *s).returncode == 0
        assert merge(t.p("b"), *reversed(s)).returncode == 0
        assert read(t.p("a", "results.json")) == read(t.p("b", "results.json"))
        assert merge(t.p("c"), t.p("a")).returncode == 0
        assert read(t.p("a", "results.json")) == read(t.p("c", "results.json"))
        assert read(t.p("a", "results.csv")) == read(t.p("c", "results.csv"))


def test_missing_shard_names_exactly_its_cells():
    with Tmp() as t:
        s = t.shards()
        lost = {tuple(u) for u in load(s[1])["shard"]["units"]}
        p = merge(t.p("m"), s[0], s[2], s[3])
        assert p.returncode == 1, p
        lines = [l for l in p.stderr.splitlines() if "missing:" in l]
        named = {}
        for l in lines:
            w = l.split("missing: ", 1)[1].split()
            if w[0] == "micro":
                named["micro"] = w
                continue
            assert w[0] == "cell" and w[3] == "reps" and w[5:] == ["(shard", "2)"], l
            named[int(w[1])] = {int(r) for r in w[4].split(",")}
        want = {}
        for c, r in lost:
            if c != "micro":
                want.setdefault(c, set()).add(r)
        assert {k: v for k, v in named.items() if k != "micro"} == want, (named, want)
        assert ("micro" in named) == any(c == "micro" for c, _ in lost)
        m = load(t.p("m"))
        for c in m["cells"]:
            kept = {r["rep"] for r in c["runs"]}
            assert kept == {0, 1, 2} - want.get(c["id"], set()), c
            if c["id"] in want:
                assert c["status"] == "failed" and c["reason"] == "missing from the merge", c
            else:
                assert c["status"] == "ok", c


def test_duplicates_are_refused():
    with Tmp() as t:
        s = t.shards()
        for paths in ([s[0], s[0]], [s[0], os.path.join(s[0], "results.json")]):
            p = merge(t.p("m"), *paths, s[1], s[2], s[3])
            assert p.returncode == 2 and "duplicated" in p.stderr, p
        shutil.copytree(s[0], t.p("copy"))
        p = merge(t.p("m"), t.p("copy"), *s)
        assert p.returncode == 2 and "duplicated" in p.stderr, p
        p = merge(t.p("m"), t.run("full"), s[0])
        assert p.returncode == 2, p
        assert not os.path.exists(t.p("m")), "an error must write nothing"


def test_foreign_matrix_is_refused():
    with Tmp() as t:
        s = t.shards()
        for change in (["--reps", "2"], ["--duration", "200ms"]):
            other = [a for a in MATRIX]
            i = other.index(change[0])
            other[i + 1] = change[1]
            o = t.run("o" + change[0], "--shard", "2/4", matrix=other)
            p = merge(t.p("m"), s[0], o, s[2], s[3])
            assert p.returncode == 2 and "foreign" in p.stderr, p
            assert s[0] in p.stderr and o in p.stderr, p.stderr
        o = t.run("o3", "--shard", "2/3")
        p = merge(t.p("m"), s[0], o)
        assert p.returncode == 2 and "foreign" in p.stderr, p
        assert not os.path.exists(t.p("m"))


def test_two_hosts_kept_apart():
    with Tmp() as t:
        a = t.shards(prefix="a")
        b = t.shards(prefix="b")
        for d in b:
            doc = load(d)
            doc["machine"]["cpu"] = "Other CPU 9000"
            with open(os.path.join(d, "results.json"), "w") as f:
                json.dump(doc, f)
        p = merge(t.p("m"), *a, *b)
        assert p.returncode == 0, p.stderr
        subs = sorted(os.listdir(t.p("m")))
        assert len(subs) == 2, subs
        assert len([l for l in p.stdout.splitlines() if l.startswith("host ")]) == 2, p.stdout
        cpus = set()
        for sub in subs:
            m = load(t.p("m", sub))
            cpus.add(m["machine"]["cpu"])
            assert all(len(c["runs"]) == 3 and c["status"] == "ok" for c in m["cells"])
        assert "Other CPU 9000" in cpus and len(cpus) == 2


def test_bad_file_is_one_line():
    with Tmp() as t:
        s = t.shards()
        doc = load(s[1])
        doc["shard"]["units"][0] = ["x", 0]
        with open(t.p("bad.json"), "w") as f:
            json.dump(doc, f)
        with open(t.p("trunc.json"), "w") as f:
            f.write(read(os.path.join(s[2], "results.json")).decode()[:500])
        os.mkdir(t.p("empty"))
        for bad, field in ((t.p("bad.json"), "shard.units[0]"), (t.p("trunc.json"), "JSON"),
                           (t.p("empty"), "results.json")):
            p = merge(t.p("m"), s[0], bad)
            assert p.returncode == 2, p
            lines = p.stderr.strip().splitlines()
            assert len(lines) == 1 and field in lines[0], (bad, p.stderr)
        doc = load(s[1])
        c = next(c for c in doc["cells"] if c["runs"])
        c["runs"][0]["wall_s"] = "slow"
        with open(t.p("bad2.json"), "w") as f:
            json.dump(doc, f)
        p = merge(t.p("m"), s[0], t.p("bad2.json"))
        assert p.returncode == 2 and "wall_s" in p.stderr and "bad2.json" in p.stderr, p
        assert not os.path.exists(t.p("m"))


def test_list_cells():
    a, b = bench(*MATRIX, "--list-cells"), bench(*MATRIX, "--list-cells")
    assert a.returncode == 0 and a.stdout == b.stdout, (a, b)
    lines = a.stdout.splitlines()
    cells = [l.split("\t") for l in lines[:-1]]
    assert cells[-1] == ["micro", "micro", "reps=3"], cells[-1]
    ids = [int(c[0]) for c in cells[:-1]]
    assert ids == list(range(len(ids))), ids
    assert len({c[1] for c in cells}) == len(cells)
    units = (len(cells)) * 3
    assert lines[-1] == "units=%d shards-max=%d" % (units, units), lines[-1]
    assert "vm:lockbench:tas:pv:process:1x2:p2:t4096" in a.stdout
    with Tmp() as t:
        assert len(load(t.run("full"))["shard"]["units"]) == units


def test_bad_shard_options():
    for bad in (["--shard", "0/4"], ["--shard", "5/4"], ["--shard", "1/0"], ["--shard", "x"],
                ["--shard", "1/4", "--cells", "0"], ["--cells", "0-999"], ["--cells", "3-1"]):
        p = bench(*MATRIX, *bad, "--list-cells")
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (bad, p)


def test_cells_runs_every_rep_of_those():
    with Tmp() as t:
        d = t.run("c", "--cells", "0,3-4")
        s = load(d)
        assert s["shard"]["index"] == 0 and s["shard"]["count"] == 0
        assert sorted({u[0] for u in s["shard"]["units"]}) == [0, 3, 4]
        for c in s["cells"]:
            assert len(c["runs"]) == (3 if c["id"] in (0, 3, 4) else 0), c


# Two slice lengths and two co-scheduler policies (host joins by itself), 5 reps:
# enough for every interval.
DIMS = ["--test-synthetic", "--locks", "tas", "--policies", "pv,none", "--slice-us", "3000,6000",
        "--overcommit", "1,2", "--reps", "5", "--pcpus", "2", "--duration", "100ms", "--no-plot",
        "--no-micro"]


def test_dimensions_pooled_1x_and_intervals_merge():
    with Tmp() as t:
        listed = bench(*DIMS, "--list-cells").stdout
        # vmm run's default slice keeps the key it always had; 3 ms is marked
        assert "vm:lockbench:tas:pv:process:1x2:p2:t4096\t" in listed, listed
        assert "vm:lockbench:tas:pv:process:1x2:p2:t4096:s3000\t" in listed, listed
        assert ":d" not in listed and "host:process:1x2:p2:t4096:s" not in listed, listed
        full = load(t.run("full", matrix=DIMS))
        s = t.shards(3, matrix=DIMS)
        assert merge(t.p("a"), *s).returncode == 0
        assert merge(t.p("b"), *reversed(s)).returncode == 0
        assert merge(t.p("c"), t.p("a")).returncode == 0
        assert read(t.p("a", "results.json")) == read(t.p("b", "results.json")) == \
            read(t.p("c", "results.json"))
        for name in ("results.csv", "runs.csv"):
            assert read(t.p("full", name)) == read(t.p("a", name)), name
        m = load(t.p("a"))
        assert m["config"]["slice_us"] == [3000, 6000] and m["config"]["defer_us"] == [200]
        assert [dict(c, runs=None) for c in m["cells"]] == [dict(c, runs=None) for c in full["cells"]]
        vm = [c for c in m["cells"] if c["kind"] == "vm"]
        assert {(c["policy"], c["slice_us"]) for c in vm} == \
            {("host", 6000), ("pv", 3000), ("pv", 6000), ("none", 3000), ("none", 6000)}, vm
        ones = sorted(c["id"] for c in vm if c["vcpus_total"] == 2)
        assert len(ones) == 5, ones
        for c in m["cells"]:
            assert c["status"] == "ok" and len(c["runs"]) == 5, c
            if c["kind"] == "vm":
                # every policy's and slice's 1x, not only the cell's own policy
                assert c["ref_ids"] == ones, (c["id"], c["ref_ids"])
                assert c["ref_id"] in ones and m["cells"][c["ref_id"]]["policy"] == c["policy"]
            else:
                assert c["ref_ids"] == [c["ref_id"]], c
            bench_stats_ref.check_cell(m, c)
            if c["kind"] == "vm" and c["overcommit"] == 2:
                assert c["eff_lo"] <= c["efficiency"] <= c["eff_hi"], c
        # the scheduler's statistics: per run, their medians, and the rates
        for c in vm:
            runs = [r["sched"] for r in c["runs"]]
            for k in ("preemptions", "yields_given", "deferrals", "loop_ticks", "window_s"):
                assert c["sched"][k] == bench_stats_ref.median([r[k] for r in runs]), (c["id"], k)
            sw = [(r["preemptions"] + r["yields_given"]) / r["window_s"] for r in runs]
            assert c["sched"]["switches_per_s"] == bench_stats_ref.median(sw), c["id"]
        by = {(c["policy"], c["slice_us"], c["overcommit"]): c for c in vm}
        # shorter slices switch more (what the synthetic counts model)
        assert by[("pv", 3000, 2)]["sched"]["switches_per_s"] > by[("pv", 6000, 2)]["sched"]["switches_per_s"]
        with open(t.p("a", "results.csv")) as f:
            rows = list(csv.DictReader(f))
        for row, c in zip(rows, m["cells"]):
            assert int(row["slice_us"]) == c["slice_us"] and int(row["defer_us"]) == c["defer_us"]
            assert row["ref_ids"] == ";".join(str(i) for i in c["ref_ids"]), row
            for k in ("median_lo", "median_hi", "eff_lo", "eff_hi"):
                assert float(row[k]) == c[k], (k, row[k], c[k])
            if c["kind"] == "vm":
                assert float(row["switches_per_s"]) == c["sched"]["switches_per_s"]
                assert float(row["loop_wakeups_per_s"]) == c["sched"]["loop_wakeups_per_s"]


def test_intervals_null_below_five_reps():
    with Tmp() as t:
        few = [a if a != "5" else "4" for a in DIMS]
        m = load(t.run("few", matrix=few))
        for c in m["cells"]:
            assert c["median_lo"] is None and c["eff_lo"] is None and c["eff_hi"] is None, c
            assert c["efficiency"] is not None, c


def test_bad_slice_and_defer():
    for bad in (["--slice-us", "10"], ["--slice-us", "3000,3000"], ["--defer-us", "0"],
                ["--defer-us", "x"]):
        p = bench(*DIMS, *bad, "--list-cells")
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (bad, p)


def test_bad_guest_slice():
    for bad in (["--guest-slice", "maybe"], ["--guest-slice", "on,on"], ["--guest-slice", ""],
                ["--guest-slice", "on,off,on"], ["--guest-slice", "1"]):
        p = bench(*DIMS, *bad, "--list-cells")
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (bad, p)
        assert "--guest-slice" in p.stderr, (bad, p.stderr)


# Both safe-point paths side by side: the guest times its slices (on, the
# default) or the VMM does and requests each switch (off).
GS = ["--test-synthetic", "--locks", "tas", "--policies", "pv,none", "--guest-slice", "on,off",
      "--overcommit", "1,2", "--reps", "5", "--pcpus", "2", "--duration", "100ms", "--no-plot",
      "--no-micro"]


def test_guest_slice_dimension_merges():
    with Tmp() as t:
        listed = bench(*GS, "--list-cells").stdout
        keys = [l.split("\t")[1] for l in listed.splitlines() if l.split("\t")[0].isdigit()]
        # on keeps the key it always had; off is marked; host and native take neither
        for pol in ("pv", "none"):
            for x in (2, 4):
                k = "vm:lockbench:tas:%s:process:1x%d:p2:t4096" % (pol, x)
                assert k in keys and k + ":gsoff" in keys, (k, keys)
        assert not any(k.endswith(":gsoff") for k in keys if ":host:" in k or k.startswith("native:"))
        assert len(keys) == len(set(keys)) == 2 + 2 * 2 * 2 + 2, keys
        # the default matrix's keys (and so its fingerprint) do not change
        plain = [a for a in GS if a not in ("--guest-slice", "on,off")]
        assert bench(*plain, "--list-cells").stdout == \
            bench(*plain, "--guest-slice", "on", "--list-cells").stdout
        full = load(t.run("full", matrix=GS))
        s = t.shards(3, matrix=GS)
        assert merge(t.p("a"), *s).returncode == 0
        for name in ("results.csv", "runs.csv", "loss.csv", "slice_fit.csv"):
            assert read(t.p("full", name)) == read(t.p("a", name)), name
        m = load(t.p("a"))
        assert m["config"]["guest_slice"] == ["on", "off"], m["config"]
        assert m["shard"]["matrix"] == full["shard"]["matrix"]
        assert [dict(c, runs=None) for c in m["cells"]] == [dict(c, runs=None) for c in full["cells"]]
        assert m["loss"] == full["loss"]
        vm = [c for c in m["cells"] if c["kind"] == "vm"]
        assert {(c["policy"], c["guest_slice"]) for c in vm} == \
            {("host", "on"), ("pv", "on"), ("pv", "off"), ("none", "on"), ("none", "off")}, vm
        assert all(c["guest_slice"] == "on" for c in m["cells"] if c["kind"] == "native")
        # 1x runs alike whatever the guest-slice value: one pool of all five
        ones = sorted(c["id"] for c in vm if c["vcpus_total"] == 2)
        assert len(ones) == 5, ones
        for c in m["cells"]:
            assert c["status"] == "ok" and len(c["runs"]) == 5, c
            if c["kind"] == "vm":
                assert c["ref_ids"] == ones, (c["id"], c["ref_ids"])
                ref = m["cells"][c["ref_id"]]
                assert ref["policy"] == c["policy"] and ref["guest_slice"] == c["guest_slice"], (c, ref)
            bench_stats_ref.check_cell(m, c)
        # the two paths' counts, per run and as medians and rates
        for c in vm:
            runs = [r["sched"] for r in c["runs"]]
            for k in ("guest_slice_yields", "guest_slice_declined"):
                assert c["sched"][k] == bench_stats_ref.median([r[k] for r in runs]), (c["id"], k)
            gy = [r["guest_slice_yields"] / r["window_s"] for r in runs]
            assert c["sched"]["guest_slice_yields_per_s"] == bench_stats_ref.median(gy), c["id"]
            if c["overcommit"] == 2 and c["policy"] != "host":
                if c["guest_slice"] == "on":  # the guest left at its own slice ends
                    assert c["sched"]["guest_slice_yields"] > 0 and c["sched"]["deferrals"] == 0, c
                else:  # the VMM deferred its own slice ends, no guest-timed yield
                    assert c["sched"]["guest_slice_yields"] == 0 and c["sched"]["deferrals"] > 0, c
        with open(t.p("a", "results.csv")) as f:
            for row, c in zip(csv.DictReader(f), m["cells"]):
                assert row["guest_slice"] == c["guest_slice"], (row, c)
                if c["kind"] == "vm":
                    assert float(row["guest_slice_yields_per_s"]) == c["sched"]["guest_slice_yields_per_s"]
        # the loss table has both paths, each with its own slice-end rate
        loss = {l["id"]: l for l in m["loss"]}
        for c in vm:
            if c["overcommit"] != 2:
                continue
            l = loss[c["id"]]
            assert l["guest_slice_yields_per_s"] == c["sched"]["guest_slice_yields_per_s"], (l, c)
            s = c["sched"]
            if c["policy"] != "host" and c["guest_slice"] == "on":
                want = s["deferrals_hard"] / (s["guest_slice_yields"] + s["deferrals"] + s["deferrals_hard"])
            else:
                want = s["deferrals_hard"] / s["deferrals"] if s["deferrals"] else None
            assert want is None and l["hard_share"] is None or abs(l["hard_share"] - want) < 1e-9, (l, want)
        out = bench(*GS, "--out", t.p("table")).stdout
        assert "pv/gsoff" in out and "none/gsoff" in out and "gsyield/s" in out, out


def _old_file(doc, micro_from=None):
    """doc as a results.json written before --guest-slice and its micro keys."""
    del doc["config"]["guest_slice"]
    for c in doc["cells"]:
        del c["guest_slice"]
        for s in [c.get("sched")] + [r.get("sched") for r in c["runs"]]:
            if s:
                for k in ("guest_slice_yields", "guest_slice_declined", "guest_slice_yields_per_s"):
                    s.pop(k, None)
    names = list(doc["micro"].keys())
    first = names.index(micro_from or "request_switch_ns")
    for k in names[first:]:
        if isinstance(doc["micro"][k], dict) or k.endswith("_over_safe_point_switch") \
                or k == "own_tick_over_loop_preemption":
            del doc["micro"][k]
    return doc


def test_file_from_before_guest_slices_merges():
    """An older results.json (no guest-slice in its config, fewer micro keys)
    merges: the missing micro keys are unknown and guest-slice is on, the old
    default; a file missing a key that older files had is still refused."""
    with Tmp() as t:
        d = t.run("old")
        new = load(d)
        assert new["config"]["guest_slice"] == ["on"]
        for k in ("request_switch_ns", "request_switches", "request_deferrals_hard"):
            assert len(new["micro"][k]["runs"]) == 3 and new["micro"][k]["median"] > 0, k
        assert new["micro"]["request_switch_over_safe_point_switch"] > 0
        for k in ("forced_preemption_own_ns", "preemptions_own"):
            assert len(new["micro"][k]["runs"]) == 3 and new["micro"][k]["median"] > 0, k
        assert new["micro"]["own_tick_over_loop_preemption"] > 0
        for since, gone in (("forced_preemption_own_ns", 2), ("request_switch_ns", 5),
                            ("safe_point_switch_ns", 10)):
            doc = _old_file(load(d), since)
            with open(t.p("old.json"), "w") as f:
                json.dump(doc, f)
            p = merge(t.p("m"), t.p("old.json"))
            assert p.returncode == 0, (since, p.stderr)
            m = load(t.p("m"))
            assert m["config"]["guest_slice"] == ["on"], m["config"]
            assert m["shard"]["matrix"] == new["shard"]["matrix"]
            names = [k for k, v in m["micro"].items() if isinstance(v, dict)]
            assert len(names) == 17, names
            for k in names[:-gone]:
                assert m["micro"][k] == new["micro"][k], k
            for k in names[-gone:]:
                assert m["micro"][k]["median"] is None and m["micro"][k]["runs"] == [None] * 3, k
            assert m["micro"]["own_tick_over_loop_preemption"] is None
            if since != "forced_preemption_own_ns":
                assert m["micro"]["request_switch_over_safe_point_switch"] is None
            assert all(c["guest_slice"] == "on" for c in m["cells"])
            assert all(c["sched"]["guest_slice_yields"] is None for c in m["cells"] if c["kind"] == "vm")
            for c, o in zip(m["cells"], new["cells"]):
                assert c["efficiency"] == o["efficiency"] and c["ref_ids"] == o["ref_ids"], c["id"]
        # malformed, not older: a gap in the micro keys, or one every file has
        for k in ("safe_point_switch_ns", "hypercall_ns"):
            doc = load(d)
            del doc["micro"][k]
            with open(t.p("bad.json"), "w") as f:
                json.dump(doc, f)
            p = merge(t.p("m2"), t.p("bad.json"))
            assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (k, p)
            assert "micro.%s" % k in p.stderr, (k, p.stderr)
        doc = load(d)
        doc["config"]["guest_slice"] = ["sometimes"]
        with open(t.p("bad.json"), "w") as f:
            json.dump(doc, f)
        p = merge(t.p("m3"), t.p("bad.json"))
        assert p.returncode == 2 and "config" in p.stderr and "--guest-slice" in p.stderr, p
