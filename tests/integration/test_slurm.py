"""The Slurm array job (vmm/bench/slurm) on a real one-node Slurm
(tests/slurm/cluster.py): a tiny matrix as 4 array tasks plus the dependent
merge gives the same cells, repetitions and derived columns as a local run
of the same matrix; an array task that dies makes the merge name exactly its
cells as missing, exit non-zero, and keep the rest."""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import bench_stats_ref
import harness

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "slurm"))
import cluster  # noqa: E402

SUBMIT = os.path.join(ROOT, "vmm", "bench", "slurm", "submit")
TASKS = 4
WAIT_S = 180
# 1 pcpu: two shards run side by side on a 2-CPU node
SYNTHETIC = ["--locks", "tas", "--policies", "host,pv", "--overcommit", "1,2", "--reps", "3",
             "--duration", "100ms", "--no-micro", "--no-native", "--no-plot", "--pcpus", "1",
             "--test-synthetic"]
KVM = ["--locks", "tas", "--policies", "pv", "--overcommit", "1,2", "--reps", "2",
       "--duration", "100ms", "--no-micro", "--no-native", "--no-plot", "--pcpus", "1"]
# what makes a cell the cell it is, whatever id a run gives it
IDENT = ("kind", "workload", "lock", "policy", "spin_threshold", "vms", "vcpus_per_vm", "pcpus",
         "overcommit", "mode")
DERIVED = ("median_ops_per_s", "min_ops_per_s", "max_ops_per_s", "spread_pct", "efficiency",
           "of_native", "jain", "max_over_min", "vs_1vm", "vs_process", "vs_host_procs",
           "median_lo", "median_hi", "eff_lo", "eff_hi", "pooled_1x_ops_per_s")
MISSING = re.compile(r"^vmm bench merge: missing: cell (\d+) (\S+) reps ([\d,]+) \(shard (\d+)\)$")


def _vmm():
    # VMM_SLURM_TEST_VMM: try the jobs with another vmm build
    return os.path.abspath(os.environ.get("VMM_SLURM_TEST_VMM", harness.vmm_path()))


def _key(c):
    return c.get("key") or "/".join(str(c.get(f)) for f in IDENT)


def _close(a, b):
    """The JSON keeps 10 significant digits: equal to that, relatively."""
    if a is None or b is None:
        return a is b
    return abs(a - b) <= 1e-8 * max(abs(a), abs(b), 1e-300)


def _load(d):
    with open(os.path.join(d, "results.json")) as f:
        return json.load(f)


def _local(args, d):
    p = subprocess.run([_vmm(), "bench", *args, "--out", d], capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p
    return _load(d)


def _list_cells(args):
    p = subprocess.run([_vmm(), "bench", *args, "--list-cells"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p
    lines = p.stdout.strip().splitlines()
    cells = [ln.split("\t") for ln in lines[:-1]]
    assert lines[-1].startswith("units="), lines
    reps = {int(c[0]): int(c[2].removeprefix("reps=")) for c in cells}
    assert sum(reps.values()) == int(lines[-1].split()[0].removeprefix("units=")), lines
    return reps, {int(c[0]): c[1] for c in cells}


def _submit(c, out, args, **env):
    e = dict(c.env, VMM=_vmm(), VMM_MERGE_ARGS="--no-plot", **env)
    p = subprocess.run([SUBMIT, str(TASKS), out, *args], capture_output=True, text=True,
                       env=e, timeout=60, cwd=ROOT)
    assert p.returncode == 0, p
    ids = p.stdout.split()
    assert len(ids) == 2 and all(i.isdigit() for i in ids), p.stdout
    return ids


def _wait(c, ids, out):
    """Until neither job is in squeue and the merge wrote its status;
    returns the merge's exit status and stderr lines."""
    rc_file = os.path.join(out, "merge.rc")
    end = time.monotonic() + WAIT_S
    while time.monotonic() < end:
        q = subprocess.run(["squeue", "-h", "-o", "%i %T", "-j", ",".join(ids)],
                           capture_output=True, text=True, env=c.env, timeout=30)
        # an id squeue no longer knows (after MinJobAge) is an error: done too
        if (q.returncode or not q.stdout.strip()) and os.path.exists(rc_file):
            with open(rc_file) as f:
                rc = int(f.read())
            with open(os.path.join(out, "merge.err")) as f:
                return rc, f.read().splitlines()
        time.sleep(0.3)
    logs = "".join(f"--- {n}\n{cluster._tail(os.path.join(out, n))}" for n in sorted(os.listdir(out))
                   if n.startswith("slurm-"))
    raise AssertionError(f"jobs {ids} not done within {WAIT_S}s: {q.stdout}\n{logs}\n"
                         f"{cluster._tail(os.path.join(c.dir, 'log', 'slurmctld.log'))}")


def _shard_units(out):
    """(cell key, rep) of each shard's results: shard index -> set."""
    units = {}
    for i in range(1, TASKS + 1):
        doc = _load(os.path.join(out, f"shard-{i}"))
        assert "shard" in doc, doc.keys()
        units[i] = {(_key(x), r["rep"]) for x in doc["cells"] for r in x["runs"]}
    return units


def _by_key(doc):
    cells = {_key(x): x for x in doc["cells"]}
    assert len(cells) == len(doc["cells"]), "two cells with one key"
    return cells


def _ref_key(doc, x, field):
    ids = {c["id"]: _key(c) for c in doc["cells"]}
    return ids.get(x.get(field))


def _compare(local, merged, reps, exact):
    """Same cells by key, every rep, status ok; EXACT: raw values and
    derived columns equal; else medians within 2x of the local run's and
    the derived columns follow from the merged raw runs."""
    lc, mc = _by_key(local), _by_key(merged)
    assert set(lc) == set(mc), (sorted(lc), sorted(mc))
    assert len(mc) == len(reps), (len(mc), reps)
    for k, a in lc.items():
        b = mc[k]
        assert b["status"] == "ok" and a["status"] == "ok", (a, b)
        assert sorted(r["rep"] for r in b["runs"]) == list(range(reps[a["id"]])), b["runs"]
        assert all(r["ok"] for r in b["runs"]), b
        for f in ("ref_id", "native_ref_id"):
            assert _ref_key(local, a, f) == _ref_key(merged, b, f), (f, a, b)
        raw = {r["rep"]: r["ops_per_s"] for r in b["runs"]}
        if exact:
            for r in a["runs"]:
                assert _close(r["ops_per_s"], raw[r["rep"]]), (k, r, raw)
            for f in DERIVED:
                assert _close(a.get(f), b.get(f)), (k, f, a.get(f), b.get(f))
            continue
        v = list(raw.values())
        assert _close(b["median_ops_per_s"], statistics.median(v)), (k, b)
        assert _close(b["min_ops_per_s"], min(v)) and _close(b["max_ops_per_s"], max(v)), (k, b)
        ratio = b["median_ops_per_s"] / a["median_ops_per_s"]
        # the nested KVM and the sanitizers make speeds noise (harness.need_timing)
        if not (harness.nested() or os.environ.get("VMM_SANITIZED") == "1"):
            assert 0.5 <= ratio <= 2, (k, ratio, a["median_ops_per_s"], b["median_ops_per_s"])
        assert ratio > 0, (k, a, b)
        # the pooled 1x: every policy's 1x runs of the merge, as the merge pooled them
        assert [_ref_key(merged, {"i": i}, "i") for i in b["ref_ids"]] == \
            [_ref_key(local, {"i": i}, "i") for i in a["ref_ids"]], (k, a["ref_ids"], b["ref_ids"])
        pool = [v for i in b["ref_ids"] for v in bench_stats_ref.ok_runs(merged["cells"][i])]
        assert _close(b["efficiency"], b["median_ops_per_s"] / statistics.median(pool)), (k, b, pool)


def _array_and_merge(args, exact):
    try:
        cluster.ensure_installed()
    except cluster.Unavailable as e:
        raise harness.Skip(str(e))
    d = tempfile.mkdtemp(prefix="vmm-slurm-test.")
    t0 = time.monotonic()
    try:
        reps, listed = _list_cells(args)
        local = _local(args, os.path.join(d, "local"))
        with cluster.Cluster() as c:
            up = c.up_s
            out = os.path.join(d, "all")
            rc, err = _wait(c, _submit(c, out, args), out)
            assert rc == 0, err
            merged = _load(os.path.join(out, "merged"))
            _compare(local, merged, reps, exact)
            units = _shard_units(out)
            # the shards split the matrix: every unit once
            assert sum(len(u) for u in units.values()) == sum(reps.values()), units
            assert all(units.values()), units

            # task 2 dies before running: exactly its units are missing
            out = os.path.join(d, "fail")
            rc, err = _wait(c, _submit(c, out, args, VMM_BENCH_FAIL_TASK="2"), out)
            assert rc == 1, (rc, err)
            missing = set()
            for line in err:
                m = MISSING.match(line)
                if m:
                    assert m.group(4) == "2", line
                    assert m.group(2) == listed[int(m.group(1))], (line, listed)
                    missing |= {(m.group(2), int(r)) for r in m.group(3).split(",")}
            keys = {x["id"]: _key(x) for x in local["cells"]}
            # the merge names cells by the key --list-cells gives; map ours
            named = {(keys[int(m.group(1))], int(r)) for m in map(MISSING.match, err) if m
                     for r in m.group(3).split(",")}
            assert missing and named == units[2], (err, units[2])
            assert not os.path.exists(os.path.join(out, "shard-2")), os.listdir(out)
            kept = _by_key(_load(os.path.join(out, "merged")))
            lc = _by_key(local)
            for k, x in lc.items():
                got = {r["rep"]: r["ops_per_s"] for r in kept[k]["runs"]} if k in kept else {}
                for r in x["runs"]:
                    if (k, r["rep"]) in units[2]:
                        assert r["rep"] not in got, (k, r)
                    elif exact:
                        assert _close(got.get(r["rep"]), r["ops_per_s"]), (k, r, got)
                    else:
                        assert got.get(r["rep"], 0) > 0, (k, r, got)
        print(f"    slurm cluster up in {up:.2f}s; test {time.monotonic() - t0:.1f}s")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_slurm_array_synthetic():
    """No KVM: --test-synthetic units give deterministic values, so the
    merged table equals the local one exactly."""
    _array_and_merge(SYNTHETIC, exact=True)


def test_slurm_array_kvm():
    """Real runs of a tiny matrix: structure exact, values by ratio. Where
    there is no /dev/kvm, run_all runs it again in the nested KVM, where the
    whole cluster (munged, slurmctld, slurmd) runs in the inner host."""
    harness.need_kvm()
    _array_and_merge(KVM, exact=False)
