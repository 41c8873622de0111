"""`vmm bench` checks the harness itself on a tiny matrix: every cell is
present in CSV and JSON, medians and efficiencies follow from the raw runs,
the plot is made, and a failing cell is reported as failed (exit 1), never
dropped."""
import csv
import json
import math
import os
import shutil
import statistics
import subprocess
import tempfile

import bench_stats_ref
import harness

TINY = ["--locks", "tas", "--policies", "host,pv", "--overcommit", "1,2",
        "--reps", "3", "--duration", "100ms"]



def _close(a, b):
    """The JSON writes 10 significant digits: equal to that, relatively."""
    return abs(a - b) <= 1e-8 * max(abs(a), abs(b), 1e-300)

def bench(*args, timeout=120):
    d = tempfile.mkdtemp(prefix="vmm-bench-test.")
    p = subprocess.run([harness.vmm_path(), "bench", *args, "--out", d],
                       capture_output=True, text=True, timeout=timeout)
    return p, d


def load(d):
    with open(os.path.join(d, "results.json")) as f:
        doc = json.load(f)
    with open(os.path.join(d, "results.csv")) as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(d, "runs.csv")) as f:
        runs = list(csv.DictReader(f))
    return doc, rows, runs


def test_bench_tiny_matrix():
    harness.need_kvm()
    if not shutil.which("gnuplot"):
        raise harness.Skip("gnuplot is not installed")
    p, d = bench(*TINY, "--no-micro")
    try:
        assert p.returncode == 0, p
        doc, rows, runs = load(d)
        cells = doc["cells"]
        vm = {(c["policy"], c["vcpus_total"]) for c in cells if c["kind"] == "vm"}
        # host is the baseline; 1x = 2 slots' worth of vCPUs on the default pcpus
        pc = doc["config"]["pcpus"]
        assert vm == {(pol, n * pc) for pol in ("host", "pv") for n in (1, 2)}, vm
        natives = [c for c in cells if c["kind"] == "native"]
        assert {c["vcpus_total"] for c in natives} == {pc, 2 * pc}, natives
        assert len(rows) == len(cells), (len(rows), len(cells))
        by_id = {c["id"]: c for c in cells}
        for c, row in zip(cells, rows):
            assert int(row["id"]) == c["id"] and row["policy"] == c["policy"], (row, c)
            assert c["status"] == "ok" and row["status"] == "ok", c
            raw = [r["ops_per_s"] for r in c["runs"]]
            assert len(raw) == 3 and all(r["ok"] for r in c["runs"]), c
            assert abs(c["median_ops_per_s"] - statistics.median(raw)) <= 1e-6 * c["median_ops_per_s"], c
            assert abs(float(row["median_ops_per_s"]) - c["median_ops_per_s"]) <= 1e-6 * c["median_ops_per_s"]
            assert c["min_ops_per_s"] == min(raw) and c["max_ops_per_s"] == max(raw), c
            ref = by_id[c["ref_id"]]
            assert ref["vcpus_total"] == pc and ref["vms"] == 1 and ref["policy"] == c["policy"], (c, ref)
            # the denominator: every policy's 1x runs pooled (3 reps: no intervals)
            pool = [by_id[i] for i in c["ref_ids"]]
            assert c["ref_id"] in c["ref_ids"] and all(p["vcpus_total"] == pc for p in pool), c
            if c["kind"] == "vm":
                assert {p["policy"] for p in pool} == {"host", "pv"}, pool
            eff = c["median_ops_per_s"] / bench_stats_ref.median(
                [v for p in pool for v in bench_stats_ref.ok_runs(p)])
            assert abs(c["efficiency"] - eff) <= 1e-6 * eff, (c["efficiency"], eff)
            assert c["eff_lo"] is None and c["median_lo"] is None, c
            if c["kind"] == "vm":
                # the guest's run meter, for the loss table
                assert all(r["sched"]["run_ns_total"] > 0 and r["sched"]["guest_window_s"] > 0
                           for r in c["runs"]), c["runs"]
            if c["kind"] == "vm" and c["policy"] != "host":
                assert all(r["sched"]["window_s"] > 0 for r in c["runs"]), c["runs"]
                if c["overcommit"] == 2:  # slices end: the loop or the holder's own timer ticks
                    assert c["sched"]["loop_ticks"] + c["sched"]["own_ticks"] > 0 and \
                        c["sched"]["switches_per_s"] > 0, c["sched"]
            raw_csv = [float(r["ops_per_s"]) for r in runs if int(r["id"]) == c["id"]]
            assert sorted(raw_csv) == sorted(raw), (raw_csv, raw)
        svg = os.path.join(d, "overcommit.svg")
        assert os.path.getsize(svg) > 0, svg
        with open(svg) as f:
            assert "<svg" in f.read(4096)
        assert "overcommit efficiency" in p.stdout, p.stdout
        # where a lost point goes: every 2x cell, its points split exactly in two
        assert "where a lost point goes" in p.stdout, p.stdout
        twice = [c["id"] for c in cells if c["kind"] == "vm" and c["overcommit"] == 2]
        assert [l["id"] for l in doc["loss"]] == twice, doc["loss"]
        for l in doc["loss"]:
            assert 0 < l["run_share"] <= 1.05 and 0 < l["run_share_1x"] <= 1.05, l
            assert _close(l["pts_slot"] + l["pts_ops"], 1 - l["efficiency"]), l
        assert doc["slice_fit"] == [], doc["slice_fit"]  # one slice: nothing to fit
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_bench_failed_cell_is_reported():
    harness.need_kvm()
    # Cell 1 is host at 2x in this matrix (host first, its 1x reference first).
    p, d = bench("--locks", "tas", "--policies", "host", "--overcommit", "1,2", "--reps", "2",
                 "--duration", "50ms", "--no-micro", "--no-native", "--no-plot",
                 "--test-fail-cell", "1")
    try:
        assert p.returncode == 1, p
        doc, rows, runs = load(d)
        assert len(doc["cells"]) == 2 == len(rows), doc["cells"]
        bad = doc["cells"][1]
        assert bad["status"] == "failed" and bad["exit_code"] == 2, bad
        assert rows[1]["status"] == "failed" and rows[1]["exit_code"] == "2", rows[1]
        assert len(bad["runs"]) == 2 and not any(r["ok"] for r in bad["runs"]), bad
        assert doc["cells"][0]["status"] == "ok", doc["cells"][0]
        assert doc["failed_cells"] == 1
        assert "FAILED (exit 2" in p.stdout, p.stdout
        assert "FAILED" in p.stderr, p.stderr
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_bench_micro():
    harness.need_kvm()
    harness.need_timing("microbenchmark medians > 0, hypercall vs exit ratio")
    p, d = bench("--locks", "tas", "--policies", "pv", "--overcommit", "1", "--reps", "1",
                 "--duration", "100ms", "--no-native", "--no-plot")
    try:
        assert p.returncode == 0, p
        doc, _, _ = load(d)
        mi = doc["micro"]
        for k in ("hypercall_ns", "bare_exit_ns", "futex_wake_ns", "forced_preemption_ns",
                  "kick_to_guest_ns", "kicks_timed", "safe_point_switch_ns", "safe_point_switches"):
            assert mi[k]["median"] is not None and mi[k]["median"] > 0, (k, mi)
        # the safe-point switches came at safe points: hard deferrals are the exception
        assert mi["safe_point_deferrals_hard"]["median"] * 5 <= mi["safe_point_switches"]["median"], mi
        # A hypercall is an exit plus a little dispatch: never cheaper than half one.
        assert mi["hypercall_over_exit"] > 0.5, mi
        assert os.path.exists(os.path.join(d, "micro.csv"))
    finally:
        shutil.rmtree(d, ignore_errors=True)


@harness.nested_stage
def test_bench_micro_guest_timed_keys():
    """The guest-timed micro keys in results.json and micro.csv, in any KVM:
    the kick to guest code and the safe-point switch are positive and
    finite, each with its count, and the switch run's hard deferrals are
    recorded beside it (how few they are is asserted where timing means
    something: test_bench_micro, test_micro_workloads)."""
    harness.need_kvm()
    p, d = bench("--locks", "tas", "--policies", "pv", "--overcommit", "1", "--reps", "1",
                 "--cells", "micro", "--duration", "300ms", "--no-native", "--no-plot", timeout=600)
    try:
        assert p.returncode == 0, (p.stdout, p.stderr)
        with open(os.path.join(d, "results.json")) as f:
            mi = json.load(f)["micro"]
        # the safe-point switch on both paths: guest-timed slices (the
        # default) and the VMM's request (--guest-slice off)
        for k in ("kick_to_guest_ns", "kicks_timed", "safe_point_switch_ns", "safe_point_switches",
                  "request_switch_ns", "request_switches", "preemptions", "preemptions_own"):
            v = mi[k]["median"]
            assert isinstance(v, (int, float)) and math.isfinite(v) and v > 0, (k, mi[k])
        for k in ("safe_point_deferrals_hard", "request_deferrals_hard"):
            hard = mi[k]["median"]
            assert isinstance(hard, (int, float)) and hard >= 0, (k, mi)
        assert mi["kick_to_guest_over_futex"] > 0 and mi["request_switch_over_safe_point_switch"] > 0, mi
        with open(os.path.join(d, "micro.csv")) as f:
            names = [row["name"] for row in csv.DictReader(f)]
        for k in ("kick_to_guest_ns", "safe_point_switch_ns", "safe_point_deferrals_hard",
                  "request_switch_ns", "request_switches", "request_deferrals_hard"):
            assert k in names, names
        assert "PV kick -> guest code" in p.stdout and "safe-point switch" in p.stdout, p.stdout
        assert "requested switch" in p.stdout, p.stdout
    finally:
        shutil.rmtree(d, ignore_errors=True)


@harness.nested_stage
def test_bench_guest_slice_on_off_side_by_side():
    """--guest-slice on,off: the same cell on both safe-point paths in one
    run, each doing what its path says: on, the guest leaves at its own
    slice ends (guest-timed yields); off, the VMM defers its slice ends and
    the guest never times one. 2 vCPUs on 1 slot: every slice end has
    someone queued. Slices as test_sched's guest-timed test takes them."""
    harness.need_kvm()
    slice_us, defer_us, dur = ("10000", "5000", "2s") if harness.nested() else ("1000", "200", "300ms")
    p, d = bench("--locks", "ticket", "--policies", "none", "--overcommit", "1,2", "--pcpus", "1",
                 "--slice-us", slice_us, "--defer-us", defer_us, "--guest-slice", "on,off",
                 "--reps", "1", "--duration", dur, "--no-micro", "--no-native", "--no-plot",
                 timeout=600)
    try:
        assert p.returncode == 0, (p.stdout, p.stderr)
        doc, rows, _ = load(d)
        assert doc["config"]["guest_slice"] == ["on", "off"], doc["config"]
        two = {c["guest_slice"]: c for c in doc["cells"]
               if c["kind"] == "vm" and c["policy"] == "none" and c["overcommit"] == 2}
        assert set(two) == {"on", "off"}, doc["cells"]
        on, off = two["on"]["sched"], two["off"]["sched"]
        assert on["guest_slice_yields"] > 0 and on["guest_slice_yields_per_s"] > 0, on
        assert off["guest_slice_yields"] == 0 and off["deferrals"] > 0, off
        assert off["deferrals_hard"] < off["deferrals"], off  # answered at safe points
        for c, row in zip(doc["cells"], rows):
            assert row["guest_slice"] == c["guest_slice"], (row, c)
        assert {l["id"] for l in doc["loss"]} >= {two["on"]["id"], two["off"]["id"]}, doc["loss"]
        assert "/gsoff" in p.stdout and "gsyield/s" in p.stdout, p.stdout
    finally:
        shutil.rmtree(d, ignore_errors=True)


@harness.nested_stage
def test_bench_loop_cpu_auto_none_side_by_side():
    """--loop-cpu auto,none: the same cells with the event loop on the CPU
    no slot uses and unpinned, in one run, each run recording where its
    loop really was (the child's event_loop.cpu). --pcpus 1 leaves the
    second CPU free: auto puts the loop there, none leaves it unpinned (-1),
    and the --sched host cells keep auto, whose loop is with the vCPU
    threads on the slot's one CPU."""
    harness.need_kvm()
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise harness.Skip(f"needs 2 CPUs this process may use, has {cpus}")
    dur = "1s" if harness.nested() else "300ms"
    p, d = bench("--locks", "ticket", "--policies", "none", "--overcommit", "1,2", "--pcpus", "1",
                 "--loop-cpu", "auto,none", "--reps", "1", "--duration", dur, "--no-micro",
                 "--no-native", "--no-plot", timeout=600)
    try:
        assert p.returncode == 0, (p.stdout, p.stderr)
        doc, rows, runs = load(d)
        assert doc["config"]["loop_cpu"] == ["auto", "none"], doc["config"]
        cells = [c for c in doc["cells"] if c["kind"] == "vm"]
        assert len(cells) == 6, cells
        want = {"auto": cpus[1], "none": -1}
        for c in cells:
            assert c["status"] == "ok", c
            ran = cpus[0] if c["policy"] == "host" else want[c["loop_cpu"]]
            if c["policy"] == "host":
                assert c["loop_cpu"] == "auto", c
            assert [r["sched"]["loop_cpu"] for r in c["runs"]] == [ran], (c["id"], c["runs"])
            assert c["sched"]["loop_cpu"] == ran, c["sched"]
        # each placement's 2x divides by its own 1x
        by = {(c["policy"], c["loop_cpu"], c["overcommit"]): c for c in cells}
        for pl in ("auto", "none"):
            assert set(by[("none", pl, 2)]["ref_ids"]) >= {by[("none", pl, 1)]["id"]}, by
            assert all(doc["cells"][i]["loop_cpu"] == pl for i in by[("none", pl, 2)]["ref_ids"])
        for c, row in zip(doc["cells"], rows):
            assert row["loop_cpu"] == c["loop_cpu"], (row, c)
            if c["kind"] == "vm":
                assert int(row["loop_cpu_ran"]) == c["sched"]["loop_cpu"], (row, c)
        for row in runs:
            c = doc["cells"][int(row["id"])]
            assert int(row["loop_cpu"]) == c["runs"][0]["sched"]["loop_cpu"], (row, c)
        assert "none/loopnone" in p.stdout, p.stdout
    finally:
        shutil.rmtree(d, ignore_errors=True)


@harness.nested_stage
def test_bench_multi_vm_cells_are_k_processes_with_one_window():
    """A tiny matrix with 2 VMs of 2 vCPUs: as 2 domain members, as one
    process, as 2 host-scheduled processes. The mechanism, not the speed:
    each member's own report was read and says it was granted slots by the
    domain, the K processes started within a few ms of each other, Jain's
    index and the comparisons follow from the numbers in results.json."""
    harness.need_kvm()
    p, d = bench("--locks", "tas", "--policies", "host,pv", "--overcommit", "1", "--vms", "2",
                 "--reps", "1", "--duration", "200ms", "--start-margin", "3s",
                 "--no-micro", "--no-native", "--no-plot", timeout=300)
    try:
        assert p.returncode == 0, (p.stdout, p.stderr)
        doc, rows, _ = load(d)
        cells = doc["cells"]
        by_id = {c["id"]: c for c in cells}
        dom = [c for c in cells if c["mode"] == "domain"]
        procs = [c for c in cells if c["mode"] == "host-procs"]
        assert len(dom) == 1 and len(procs) == 1, [(c["policy"], c["mode"], c["vms"]) for c in cells]
        dom, procs = dom[0], procs[0]
        assert dom["policy"] == "pv" and procs["policy"] == "host" and dom["vms"] == 2, (dom, procs)
        for c in (dom, procs):
            run = c["runs"][0]
            assert run["ok"] and len(run["vms"]) == 2, run
            reports = []
            for k in range(2):
                path = os.path.join(d, "reports", f"cell{c['id']}-rep0-vm{k}.json")
                with open(path) as f:
                    reports.append(json.load(f))
            for k, rep in enumerate(reports):
                assert rep["status"] == "ok" and rep["config"]["vms"] == 1, rep["status"]
                assert rep["start_at_ns"] is not None and rep["start_late_ns"] is not None, rep
                # the bench read this very report
                assert abs(run["vms"][k]["ops_per_s"] - rep["ops_per_s"]) <= 1e-6 * rep["ops_per_s"], (run, rep)
                assert run["vms"][k]["start_ns"] == rep["start_ns"], (run, rep)
                if c is dom:
                    assert rep["domain"]["grants"] > 0, rep["domain"]
                    # the members' lock drains are kept with the run, summed
                    assert "lock_drains" in rep["sched"], rep["sched"]
                    assert rep["config"]["sched"]["mode"] != "host", rep["config"]["sched"]
                else:
                    assert "domain" not in rep and rep["config"]["sched"]["mode"] == "host", rep["config"]
            # one instant for both: the windows overlap almost entirely
            assert reports[0]["start_at_ns"] == reports[1]["start_at_ns"], reports
            starts = [r["start_ns"] for r in reports]
            assert max(starts) - min(starts) < 20e6, starts
            assert abs(run["start_spread_ms"] - (max(starts) - min(starts)) / 1e6) < 1e-3, run
            drains = sum(r["sched"]["lock_drains"] for r in reports)
            assert run["sched"]["lock_drains"] == drains, (run["sched"], drains)
            total = sum(r["ops_per_s"] for r in reports)
            assert abs(c["median_ops_per_s"] - total) <= 1e-6 * total, (c, total)
            per = c["per_vm_ops_per_s"]
            jain = sum(per) ** 2 / (2 * sum(x * x for x in per))
            assert 0 < c["jain"] <= 1 and _close(c["jain"], jain), (c["jain"], jain)
            assert _close(c["max_over_min"], max(per) / min(per)), c
            one = by_id[c["vs_1vm_ref_id"]]
            assert (one["vms"], one["vcpus_per_vm"], one["policy"], one["mode"], one["pcpus"]) == \
                (1, c["vcpus_per_vm"], c["policy"], "process", c["pcpus"]), one
            assert _close(c["vs_1vm"], c["median_ops_per_s"] / one["median_ops_per_s"]), c
        proc = by_id[dom["process_ref_id"]]
        assert (proc["mode"], proc["policy"], proc["vms"]) == ("process", "pv", 2), proc
        assert _close(dom["vs_process"], dom["median_ops_per_s"] / proc["median_ops_per_s"])
        assert dom["host_procs_ref_id"] == procs["id"]
        assert _close(dom["vs_host_procs"], dom["median_ops_per_s"] / procs["median_ops_per_s"])
        # the in-process cell's per-VM figures come from its own report's vms[]
        assert len(proc["per_vm_ops_per_s"]) == 2 and 0 < proc["jain"] <= 1, proc
        row = next(r for r in rows if int(r["id"]) == dom["id"])
        assert row["mode"] == "domain" and abs(float(row["jain"]) - dom["jain"]) < 1e-6, row
        assert "multi-VM cells" in p.stdout and "pv@dom" in p.stdout, p.stdout
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_bench_bad_input():
    for args in (["--vm-mode", "threads"], ["--start-margin", "soon"], ["--reps", "0"], ["--locks", "nope"], ["--policies", "x"], ["--preset", "zzz"],
                 ["--overcommit", "0"], ["--vms", "1.5"], ["--duration", "soon"], ["--bogus"],
                 ["--pcpus", "9999"], ["--slice-us", "10"], ["--defer-us", "0"], ["--slice-us", "6000,6000"]):
        r = harness.vmm_raw("bench", *args)
        assert r.rc == 2, (args, r)
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("vmm bench: "), (args, r.stderr)
    r = harness.vmm_raw("bench", "--help")
    assert r.rc == 0 and "--preset" in r.stdout and "test-fail" not in r.stdout, r
