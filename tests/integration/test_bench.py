"""`vmm bench` checks the harness itself on a tiny matrix: every cell is
present in CSV and JSON, medians and efficiencies follow from the raw runs,
the plot is made, and a failing cell is reported as failed (exit 1), never
dropped."""
import csv
import json
import os
import shutil
import statistics
import subprocess
import tempfile

import harness

TINY = ["--locks", "tas", "--policies", "host,pv", "--overcommit", "1,2",
        "--reps", "3", "--duration", "100ms"]


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
            eff = c["median_ops_per_s"] / ref["median_ops_per_s"]
            assert abs(c["efficiency"] - eff) <= 1e-6 * eff, (c["efficiency"], eff)
            raw_csv = [float(r["ops_per_s"]) for r in runs if int(r["id"]) == c["id"]]
            assert sorted(raw_csv) == sorted(raw), (raw_csv, raw)
        svg = os.path.join(d, "overcommit.svg")
        assert os.path.getsize(svg) > 0, svg
        with open(svg) as f:
            assert "<svg" in f.read(4096)
        assert "overcommit efficiency" in p.stdout, p.stdout
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
        for k in ("hypercall_ns", "bare_exit_ns", "futex_wake_ns", "forced_preemption_ns"):
            assert mi[k]["median"] is not None and mi[k]["median"] > 0, (k, mi)
        # A hypercall is an exit plus a little dispatch: never cheaper than half one.
        assert mi["hypercall_over_exit"] > 0.5, mi
        assert os.path.exists(os.path.join(d, "micro.csv"))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_bench_bad_input():
    for args in (["--reps", "0"], ["--locks", "nope"], ["--policies", "x"], ["--preset", "zzz"],
                 ["--overcommit", "0"], ["--vms", "1.5"], ["--duration", "soon"], ["--bogus"],
                 ["--pcpus", "9999"]):
        r = harness.vmm_raw("bench", *args)
        assert r.rc == 2, (args, r)
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("vmm bench: "), (args, r.stderr)
    r = harness.vmm_raw("bench", "--help")
    assert r.rc == 0 and "--preset" in r.stdout and "test-fail" not in r.stdout, r
