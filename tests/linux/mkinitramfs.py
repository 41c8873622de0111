#!/usr/bin/env python3
"""Writes a gzip'd newc cpio initramfs: busybox-static and an /init that
prints a marker, and with `vmm.disk` on the kernel command line loads the
virtio-blk modules, reads the first MiB of /dev/vda and prints its SHA-256,
writes a MiB pattern at 1 MiB with fsync (a FLUSH), drops the page cache,
reads it back and prints VMM-DISK-OK or VMM-DISK-BAD; with `vmm.shell` it
starts a shell; then it powers the guest off.
Usage: mkinitramfs.py BUSYBOX OUT [MODULE_DIR MODULE...]"""
import gzip
import os
import sys

INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
echo "VMM-INIT-OK: $(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo)"
if grep -q vmm.disk /proc/cmdline; then
  for m in $(cat /lib/modules/order); do
    insmod /lib/modules/$m.ko || echo "VMM-INSMOD-FAIL $m"
  done
  mount -t devtmpfs dev /dev
  i=0
  while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
  echo "VMM-DISK-READ: $(dd if=/dev/vda bs=4096 count=256 2>/dev/null | sha256sum | cut -d' ' -f1)"
  yes VMM-GUEST-WROTE-THIS | head -c 1048576 >/tmp/pattern
  dd if=/tmp/pattern of=/dev/vda bs=4096 seek=256 conv=fsync 2>/dev/null || echo "VMM-DISK-WRITE-FAILED"
  echo 3 >/proc/sys/vm/drop_caches
  want=$(sha256sum </tmp/pattern | cut -d' ' -f1)
  got=$(dd if=/dev/vda bs=4096 skip=256 count=256 2>/dev/null | sha256sum | cut -d' ' -f1)
  if [ "$want" = "$got" ]; then echo "VMM-DISK-OK $got"; else echo "VMM-DISK-BAD $want $got"; fi
fi
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
    if len(sys.argv) > 3:
        mdir, mods = sys.argv[3], sys.argv[4:]
        blob += entry("lib", 0o040755) + entry("lib/modules", 0o040755)
        for m in mods:
            with open(os.path.join(mdir, m + ".ko"), "rb") as f:
                blob += entry(f"lib/modules/{m}.ko", 0o100644, f.read())
        blob += entry("lib/modules/order", 0o100644, (" ".join(mods) + "\n").encode())
    blob += entry("TRAILER!!!", 0)
    tmp = out + ".tmp"
    with gzip.open(tmp, "wb", compresslevel=6) as f:
        f.write(blob)
    os.replace(tmp, out)


if __name__ == "__main__":
    main()
