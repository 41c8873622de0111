#!/usr/bin/env python3
"""The Linux guest tests' kernel: Debian's cloud kernel with its virtio-blk
modules, busybox-static, the initramfs mkinitramfs.py builds and the
workload initramfs mkworkload.py builds, cached under BUILD/linux (never
committed).
Usage: fetch_kernel.py [--workload] [BUILD]: prints the cache folder, or
with --workload the kernel's and the workload initramfs's paths; exit 3
when apt cannot download here, 2 when a workload program is missing (the
caller skips with the reason on stderr)."""
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


def workload_initrd(build=None):
    """(vmlinuz, workload initramfs); raises debian_kernel.FetchError, or
    FileNotFoundError naming the Debian packages a workload program needs."""
    vmlinuz, _ = guest_kernel(build)
    out = os.path.dirname(vmlinuz)
    busybox = debian_kernel.fetch_busybox(out)
    img = os.path.join(out, "workload.img")
    mk = os.path.join(HERE, "mkworkload.py")
    if not os.path.exists(img) or any(os.path.getmtime(p) > os.path.getmtime(img)
                                      for p in (mk, busybox, os.path.join(HERE, "cpio_newc.py"))):
        import mkworkload
        mkworkload.build(busybox, img)
    return vmlinuz, img


def main():
    args = sys.argv[1:]
    workload = "--workload" in args
    args = [a for a in args if a != "--workload"]
    build = args[0] if args else None
    try:
        if workload:
            print(*workload_initrd(build))
        else:
            print(os.path.dirname(guest_kernel(build)[0]))
    except debian_kernel.FetchError as e:
        print(e, file=sys.stderr)
        return 3
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
