#!/usr/bin/env python3
"""Writes a gzip'd newc cpio initramfs: busybox-static and an /init that
prints a marker, and with `vmm.disk` on the kernel command line loads the
virtio-blk modules, reads the first MiB of /dev/vda and prints its SHA-256,
writes a MiB pattern at 1 MiB with fsync (a FLUSH), drops the page cache,
reads it back and prints VMM-DISK-OK or VMM-DISK-BAD; with `vmm.shell` it
starts a shell; then it powers the guest off.
Usage: mkinitramfs.py BUSYBOX OUT [MODULE_DIR MODULE...]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpio_newc  # noqa: E402

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


def main():
    busybox, out = sys.argv[1], sys.argv[2]
    a = cpio_newc.Archive()
    a.busybox_base(busybox)
    a.file("init", INIT.encode(), 0o755)
    if len(sys.argv) > 3:
        a.modules(sys.argv[3], sys.argv[4:])
    a.write(out)


if __name__ == "__main__":
    main()
