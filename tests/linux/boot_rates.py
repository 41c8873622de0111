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
"""
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


def boot_vmm(vmm, vmlinuz, initrd, params, extra, disk, bound_s, stall_s):
    cmd = [vmm, "run", "-k", vmlinuz, "-i", initrd, "-p", params, "-m", "512M", "-d", disk,
           "--timeout", f"{bound_s}s", *extra]
    t0 = time.time()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
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
                                    cpus=args.cpus)
            console, err, rc, secs = b.console, "", b.rc, b.seconds
        else:
            console, err, rc, secs = boot_vmm(args.vmm, vmlinuz, initrd, args.params, args.vmm_args.split(),
                                              disk, args.bound, args.stall)
    t, line = where_stopped(console)
    fault = next((ln for ln in err.splitlines() if "faulted" in ln or "emulation" in ln), "")
    return {"engine": engine, "reached": USER_SPACE in console, "poweroff": "VMM-POWEROFF" in console,
            "rc": rc, "wall_s": round(secs, 1), "guest_s": t, "last": line, "fault": fault[:160]}


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
    args = ap.parse_args()
    if "-c" not in args.vmm_args.split() and "--cpus" not in args.vmm_args:
        args.vmm_args = f"-c {args.cpus} {args.vmm_args}"
    vmlinuz, initrd = fetch_kernel.guest_kernel()
    engines = args.engines.split(",")
    boots = []
    for n in range(args.boots):
        for e in engines:
            r = one(e, args, vmlinuz, initrd)
            r["n"] = n + 1
            boots.append(r)
            print(f"{e:5} {n + 1:3}: {'user space' if r['reached'] else 'STOPPED'}"
                  f"{' + poweroff' if r['poweroff'] else ''}, rc {r['rc']}, {r['wall_s']}s wall, "
                  f"last kernel line at {r['guest_s']:.1f}s: {r['last']!r} {r['fault']}", flush=True)
    summary = {}
    for e in engines:
        mine = [b for b in boots if b["engine"] == e]
        ok = [b["wall_s"] for b in mine if b["reached"]]
        summary[e] = {"reached": len(ok), "boots": len(mine),
                      "median_wall_s": sorted(ok)[len(ok) // 2] if ok else None}
        print(f"{e}: user space in {len(ok)} of {len(mine)} boots"
              + (f", median {summary[e]['median_wall_s']}s wall" if ok else ""), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"boots": boots, "summary": summary, "args": vars(args),
                       "emulator": os.environ.get("VMM_NESTED_EMULATOR", "")}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
