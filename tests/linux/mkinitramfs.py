#!/usr/bin/env python3
"""Writes a gzip'd newc cpio initramfs: busybox-static and an /init that
prints a marker, runs a shell command list, and powers the guest off.
Usage: mkinitramfs.py BUSYBOX OUT"""
import gzip
import os
import sys

INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
echo "VMM-INIT-OK: $(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo)"
if grep -q vmm.shell /proc/cmdline; then
  setsid cttyhack sh
fi
echo "VMM-POWEROFF"
poweroff -f
"""


def entry(name, mode, data=b"", rdev=(0, 0), ino=[1]):
    ino[0] += 1
    hdr = "070701" + "".join(f"{v:08x}" for v in (
        ino[0], mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(name) + 1, 0))
    out = hdr.encode() + name.encode() + b"\0"
    out += b"\0" * ((4 - len(out) % 4) % 4)
    out += data + b"\0" * ((4 - len(data) % 4) % 4)
    return out


def main():
    busybox, out = sys.argv[1], sys.argv[2]
    with open(busybox, "rb") as f:
        bb = f.read()
    blob = b""
    for d in ("bin", "sbin", "proc", "sys", "dev", "etc", "tmp", "usr", "usr/bin", "usr/sbin"):
        blob += entry(d, 0o040755)
    blob += entry("dev/console", 0o020600, rdev=(5, 1))  # the kernel opens it for init's stdio
    blob += entry("bin/busybox", 0o100755, bb)
    blob += entry("bin/sh", 0o120777, b"busybox")
    blob += entry("init", 0o100755, INIT.encode())
    blob += entry("TRAILER!!!", 0)
    tmp = out + ".tmp"
    with gzip.open(tmp, "wb", compresslevel=6) as f:
        f.write(blob)
    os.replace(tmp, out)


if __name__ == "__main__":
    main()
