#!/usr/bin/env python3
"""The Linux guest tests' kernel: Debian's cloud kernel with its virtio-blk
modules, busybox-static, and the initramfs mkinitramfs.py builds, cached
under BUILD/linux (never committed).
Usage: fetch_kernel.py [BUILD]: prints the cache folder; exit 3 when apt
cannot download here (the caller skips with the reason on stderr)."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import debian_kernel  # noqa: E402

# virtio-blk and its transport are modules in Debian's cloud kernel
MODULES = ["virtio_pci", "virtio_blk"]


ROOT = os.path.dirname(os.path.dirname(HERE))


def guest_kernel(build=None):
    """(vmlinuz, initrd); raises debian_kernel.FetchError. Cached in
    build/linux of this tree whatever build folder asks (build-san's tests
    use the same kernel), or in BUILD/linux when given on the command line."""
    out = os.path.abspath(os.path.join(build or os.path.join(ROOT, "build"), "linux"))
    vmlinuz, mdir, order = debian_kernel.fetch_kernel(out, "linux-image-cloud-amd64", MODULES)
    busybox = debian_kernel.fetch_busybox(out)
    initrd = os.path.join(out, "initrd.img")
    mk = os.path.join(HERE, "mkinitramfs.py")
    if not os.path.exists(initrd) or any(os.path.getmtime(p) > os.path.getmtime(initrd)
                                         for p in (mk, busybox, os.path.join(mdir, "order"))):
        subprocess.run([sys.executable, mk, busybox, initrd, mdir, *order], check=True)
    return vmlinuz, initrd


def main():
    try:
        vmlinuz, _ = guest_kernel(sys.argv[1] if len(sys.argv) > 1 else None)
    except debian_kernel.FetchError as e:
        print(e, file=sys.stderr)
        return 3
    print(os.path.dirname(vmlinuz))
    return 0


if __name__ == "__main__":
    sys.exit(main())
