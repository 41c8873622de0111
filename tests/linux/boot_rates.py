#!/usr/bin/env python3
"""How often a Linux guest reaches user space on this KVM, under QEMU -accel
kvm and under vmm, boots interleaved: the numbers behind the table in
docs/nested-kvm.md. Meant to run inside the nested KVM's inner host, where a
boot may stall or fault at random:

    tests/nested/run [--cpu EPYC-Rome] [--tcg single] -- \\
        python3 tests/linux/boot_rates.py --boots 10 [--vmm-args '-c 4 --pcpus 2'] [--params '...']

Each boot: the Linux tests' kernel and initramfs (tests/linux/fetch_kernel.py,
fetched before: the inner host has no network), the full boot's command
line, a fresh 8 MiB disk. A boot reached user space when /init printed
VMM-INIT-OK; it stopped where its console last showed a kernel time stamp.
One line per boot, then a summary line per engine; --json FILE writes both.

--migrate moves every thread of the engine's process to a random CPU every
2 ms while it boots: a vCPU thread that changes CPUs often, as under vmm's
co-scheduler (a grant of another slot) or a busy host scheduler, which is
what made the nested KVM's guests fault (docs/nested-kvm.md).
"""
import random
import threading
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import fetch_kernel  # noqa: E402
import qemu_reference  # noqa: E402

USER_SPACE = "VMM-INIT-OK"
STAMP = re.compile(r"^\[\s*(\d+\.\d+)\] (.*)$", re.M)


def where_stopped(console):
    """(guest seconds, text) of the last kernel line on the console."""
    stamps = STAMP.findall(console)
    return (float(stamps[-1][0]), stamps[-1][1].strip()[:100]) if stamps else (0.0, "(no kernel line)")


class Migrator:
    """Moves every thread of a process to a random CPU every 2 ms, until stopped."""

    def __init__(self, cpus):
        self.cpus, self.pid, self.moves, self.done = sorted(cpus), None, 0, threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.done.wait(0.002):
            if not self.pid:
                continue
            try:
                tids = os.listdir(f"/proc/{self.pid}/task")
            except OSError:
                continue
            for t in tids:
                try:
                    os.sched_setaffinity(int(t), {random.choice(self.cpus)})
                    self.moves += 1
                except OSError:
                    pass

    def stop(self):
        self.done.set()
        self.t.join()


MIGRATOR = None


def watch(pid):
    if MIGRATOR:
        MIGRATOR.pid = pid


def boot_vmm(vmm, vmlinuz, initrd, params, extra, disk, bound_s, stall_s):
    cmd = [vmm, "run", "-k", vmlinuz, "-i", initrd, "-p", params, "-m", "512M", "-d", disk,
           "--timeout", f"{bound_s}s", *extra]
    t0 = time.time()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    watch(p.pid)
    os.set_blocking(p.stdout.fileno(), False)
    out, last = b"", time.time()
    while p.poll() is None and time.time() - t0 < bound_s + 30:
        chunk = p.stdout.read() or b""
        if chunk:
            out, last = out + chunk, time.time()
        elif time.time() - last > stall_s:
            p.terminate()
            break
        time.sleep(0.2)
    try:
        rest, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        rest, err = p.communicate()
    console = (out + (rest or b"")).decode(errors="replace")
    return console, err.decode(errors="replace"), p.returncode, time.time() - t0


def one(engine, args, vmlinuz, initrd):
    with tempfile.TemporaryDirectory() as d:
        disk = os.path.join(d, "disk.img")
        with open(disk, "wb") as f:
            f.truncate(8 << 20)
        if engine == "qemu":
            b = qemu_reference.boot(vmlinuz, initrd, args.params, disk, "VMM-POWEROFF", args.bound, args.stall,
                                    cpus=args.cpus, started=watch)
            console, err, rc, secs = b.console, "", b.rc, b.seconds
        else:
            console, err, rc, secs = boot_vmm(args.vmm, vmlinuz, initrd, args.params, args.vmm_args.split(),
                                              disk, args.bound, args.stall)
    t, line = where_stopped(console)
    fault = next((ln for ln in err.splitlines() if "faulted" in ln or "emulation" in ln), "")
    return {"engine": engine, "reached": USER_SPACE in console, "poweroff": "VMM-POWEROFF" in console,
            "rc": rc, "wall_s": round(secs, 1), "guest_s": t, "last": line, "fault": fault[:160]}


def kvm_amd_params():
    """The inner host's kvm_amd parameters that matter here (npt, nested, avic...)."""
    d = "/sys/module/kvm_amd/parameters"
    out = {}
    for name in ("npt", "nested", "avic", "vgif", "vls", "pause_filter_count"):
        try:
            with open(os.path.join(d, name)) as f:
                out[name] = f.read().strip()
        except OSError:
            pass
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boots", type=int, default=5, help="boots per engine (default 5)")
    ap.add_argument("--engines", default="qemu,vmm")
    ap.add_argument("--cpus", type=int, default=2, help="vCPUs (QEMU -smp; vmm's -c unless --vmm-args has one)")
    ap.add_argument("--vmm-args", default="", help="more vmm run options, e.g. '-c 4 --pcpus 2'")
    ap.add_argument("--params", default="console=ttyS0 reboot=k", help="the kernel command line")
    ap.add_argument("--bound", type=int, default=300, help="seconds a boot may take")
    ap.add_argument("--stall", type=int, default=90, help="seconds of console silence that end a boot")
    ap.add_argument("--vmm", default=os.path.join(ROOT, "build", "vmm"))
    ap.add_argument("--json", help="write the boots and the summary here")
    ap.add_argument("--migrate", action="store_true", help="move the engine's threads to a random CPU every 2 ms")
    args = ap.parse_args()
    global MIGRATOR
    if args.migrate:
        MIGRATOR = Migrator(os.sched_getaffinity(0))
    if "-c" not in args.vmm_args.split() and "--cpus" not in args.vmm_args:
        args.vmm_args = f"-c {args.cpus} {args.vmm_args}"
    vmlinuz, initrd = fetch_kernel.guest_kernel()
    engines = args.engines.split(",")
    boots = []
    for n in range(args.boots):
        for e in engines:
            moved = MIGRATOR.moves if MIGRATOR else 0
            r = one(e, args, vmlinuz, initrd)
            r["n"] = n + 1
            r["moves"] = (MIGRATOR.moves - moved) if MIGRATOR else 0
            boots.append(r)
            print(f"{e:5} {n + 1:3}: {'user space' if r['reached'] else 'STOPPED'}"
                  f"{' + poweroff' if r['poweroff'] else ''}, rc {r['rc']}, {r['wall_s']}s wall, "
                  f"last kernel line at {r['guest_s']:.1f}s: {r['last']!r} {r['fault']}"
                  + (f" ({r['moves']} thread moves)" if MIGRATOR else ""), flush=True)
    summary = {}
    for e in engines:
        mine = [b for b in boots if b["engine"] == e]
        ok = [b["wall_s"] for b in mine if b["reached"]]
        po = sum(b["poweroff"] for b in mine)
        summary[e] = {"reached": len(ok), "poweroff": po, "boots": len(mine),
                      "median_wall_s": sorted(ok)[len(ok) // 2] if ok else None}
        print(f"{e}: user space in {len(ok)} of {len(mine)} boots, powered off in {po}"
              + (f", median {summary[e]['median_wall_s']}s wall" if ok else ""), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"boots": boots, "summary": summary, "args": vars(args), "kvm_amd": kvm_amd_params(),
                       "emulator": os.environ.get("VMM_NESTED_EMULATOR", "")}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
