"""`vmm bench` with Linux workloads (vmm/bench/exec/linux.c): a Linux guest
booted from Debian's kernel and the workload initramfs under vmm, and the
same kernel under QEMU -accel kvm on the same CPUs, each run's ops/s read
from the guest's own result line. Speeds are for `vmm bench` to publish
(BENCHMARKS.md); these tests check the harness: every cell ran, each
figure follows from its runs, the QEMU baseline is beside every vmm cell."""
import json
import os
import statistics
import subprocess
import tempfile

import harness
import test_linux as linux_guests  # not a test of this module

SMALL = ["--workloads", "hackbench", "--policies", "qemu,pv", "--overcommit", "1,2", "--pcpus", "2", "--reps", "1",
         "--linux-size", "10", "--no-micro", "--no-plot", "--no-native"]


def test_bench_linux_needs_its_kernel():
    """User errors, one line and exit 2, before anything runs."""
    for args, words in ((["--preset", "linux"], "give --kernel and --initrd"),
                        (["--policies", "qemu"], "only Linux workloads"),
                        (["--workloads", "hackbench", "--kernel", "/nonexistent/k", "--initrd", "/nonexistent/i"],
                         "--kernel /nonexistent/k: No such file")):
        p = subprocess.run([harness.vmm_path(), "bench", *args], capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (args, p)
        assert words in p.stderr, (args, p.stderr)


def test_bench_linux_shards_merge_where_the_kernel_is_not():
    """Synthetic Linux cells (no KVM) in 2 shards merge into the full run's
    tables on a machine without the shards' kernel and initramfs (a fleet's
    merge host): the files are recorded, not checked there, and vs qemu
    comes out of the merged runs as out of a full run."""
    with tempfile.TemporaryDirectory() as d:
        k = os.path.join(d, "bzImage")
        for path in (k, k + ".img"):
            with open(path, "wb") as f:
                f.write(b"x")
        m = ["--test-synthetic", "--workloads", "hackbench,lockbench", "--locks", "tas", "--policies", "qemu,pv",
             "--overcommit", "1,2", "--pcpus", "1", "--reps", "5", "--no-micro", "--no-plot", "--no-native",
             "--kernel", k, "--initrd", k + ".img", "--linux-size", "33"]

        def run(*args):
            return subprocess.run([harness.vmm_path(), "bench", *args], capture_output=True, text=True, timeout=120)
        full = run(*m, "--out", os.path.join(d, "full"))
        assert full.returncode == 0, full
        for i in (1, 2):
            p = run(*m, "--shard", f"{i}/2", "--out", os.path.join(d, f"s{i}"))
            assert p.returncode == 0, p
        os.remove(k)
        os.remove(k + ".img")
        p = run("merge", "--no-plot", "--out", os.path.join(d, "m"), os.path.join(d, "s1", "results.json"),
                os.path.join(d, "s2", "results.json"))
        assert p.returncode == 0, p
        docs = []
        for name in ("full", "m"):
            with open(os.path.join(d, name, "results.json")) as f:
                docs.append(json.load(f))
        a, b = docs
        assert b["config"]["kernel"] == k and b["config"]["linux_size"] == 33, b["config"]
        assert [c["kind"] for c in a["cells"]] == [c["kind"] for c in b["cells"]], b["cells"]
        assert "qemu" in {c["kind"] for c in b["cells"]}
        for x, y in zip(a["cells"], b["cells"]):
            for key in ("median_ops_per_s", "efficiency", "vs_qemu", "vs_qemu_lo", "vs_qemu_hi", "qemu_ref_id"):
                assert x[key] == y[key], (key, x, y)
        assert any(c["vs_qemu"] is not None for c in b["cells"]), b["cells"]
        assert [t for t in a["targets"] if t["target"] == "vs qemu"] == \
            [t for t in b["targets"] if t["target"] == "vs qemu"], b["targets"]


def _bench(vmlinuz, img, d):
    return subprocess.run([harness.vmm_path(), "bench", *SMALL, "--kernel", vmlinuz, "--initrd", img, "--out", d],
                          capture_output=True, text=True, timeout=1800)


@harness.nested_stage
@harness.nested_linux
@harness.plain_stage_only
def test_bench_linux_against_qemu():
    """A tiny --preset linux: hackbench at 1x and 2x under --sched host,
    --yield pv and QEMU -accel kvm. Every run's ops/s is the guest's
    ops/seconds, each VMM's efficiency is against its own 1x, vs qemu is the
    ratio of medians, the pv 2x cell is judged by the vs qemu target, and
    the Linux table lists QEMU beside every vmm cell."""
    linux_guests.need_user_space()
    vmlinuz, img = linux_guests.workload()
    with tempfile.TemporaryDirectory() as d:
        p = _bench(vmlinuz, img, d)
        for attempt in range(linux_guests.NESTED_FAULT_RETRIES):
            if not (harness.nested() and p.returncode == 1 and "triple fault" in p.stdout):
                break
            print("    a boot ended in the nested KVM's random reset (test_linux.py); the matrix runs again")
            p = _bench(vmlinuz, img, d)
        assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-2000:])
        with open(os.path.join(d, "results.json")) as f:
            doc = json.load(f)
    cells = doc["cells"]
    by = {(c["kind"], c["policy"], c["overcommit"]): c for c in cells}
    assert set(by) == {(k, pol, x) for k, pol in (("vm", "host"), ("vm", "pv"), ("qemu", "qemu")) for x in (1, 2)}, by
    assert doc["config"]["kernel"] == vmlinuz and doc["config"]["initrd"] == img, doc["config"]
    for c in cells:
        assert c["status"] == "ok" and c["lock"] == "-", c
        run = c["runs"][0]
        assert run["ok"] and run["ops_per_s"] > 0 and c["median_ops_per_s"] == run["ops_per_s"], c
    q1, q2 = by[("qemu", "qemu", 1)], by[("qemu", "qemu", 2)]
    assert abs(q2["efficiency"] - q2["median_ops_per_s"] / q1["median_ops_per_s"]) < 1e-6 * q2["efficiency"], q2
    pool = statistics.median([by[("vm", pol, 1)]["median_ops_per_s"] for pol in ("host", "pv")])
    for pol in ("host", "pv"):
        c = by[("vm", pol, 2)]
        assert abs(c["efficiency"] - c["median_ops_per_s"] / pool) < 1e-6 * c["efficiency"], c
        assert c["qemu_ref_id"] == q2["id"], c
        assert abs(c["vs_qemu"] - c["median_ops_per_s"] / q2["median_ops_per_s"]) < 1e-6 * c["vs_qemu"], c
    # the guest's own scheduler counters came back from vmm's report (halts parked)
    assert by[("vm", "pv", 2)]["sched"]["kernel_halts"] > 0, by[("vm", "pv", 2)]
    t = [x for x in doc["targets"] if x["target"] == "vs qemu"]
    assert len(t) == 1 and t[0]["cell_id"] == by[("vm", "pv", 2)]["id"] and t[0]["qemu_id"] == q2["id"], t
    assert "Linux guests against QEMU+KVM" in p.stdout and "vs qemu" in p.stdout, p.stdout[-3000:]
    print(f"    hackbench ops/s (speeds mean nothing nested): "
          + ", ".join(f"{k[1]} {k[2]}x {c['median_ops_per_s']:.0f}" for k, c in sorted(by.items())))
