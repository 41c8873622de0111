"""Debian's kernels and busybox-static, fetched with apt-get (the only
registry these machines reach) and cached under a build folder, never
committed. Two users: the Linux guest tests (the cloud kernel and its
virtio-blk modules) and the nested KVM runner (the generic kernel, which has
kvm-amd and 9p; the cloud one lacks 9p).

A module list is closed over each module's `depends=` (read from its
.modinfo section: the .deb ships no modules.dep) and returned in load order.
"""
import glob
import os
import shutil
import struct
import subprocess
import tempfile


class FetchError(Exception):
    """apt-get could not download here; callers skip with this reason."""


def _apt_download(pkg, where):
    p = subprocess.run(["apt-get", "download", pkg], cwd=where, capture_output=True, text=True)
    if p.returncode != 0:
        # an old package list names versions the mirror no longer has
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True)
        p = subprocess.run(["apt-get", "download", pkg], cwd=where, capture_output=True, text=True)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise FetchError(f"apt-get download {pkg} failed: {last}")
    debs = glob.glob(os.path.join(where, f"{pkg}_*.deb"))
    if not debs:
        raise FetchError(f"apt-get download {pkg} left no .deb")
    return debs[0]


def _modinfo(data):
    """The key=value strings of an ELF64 module's .modinfo section."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def section(i):
        return struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)

    strtab = section(shstrndx)
    names = data[strtab[4]:strtab[4] + strtab[5]]
    for i in range(shnum):
        s = section(i)
        name = names[s[0]:names.index(b"\0", s[0])]
        if name == b".modinfo":
            raw = data[s[4]:s[4] + s[5]]
            return dict(kv.decode().split("=", 1) for kv in raw.split(b"\0") if b"=" in kv)
    return {}


def _load_order(tree, wanted):
    """Module files for WANTED and what they depend on, dependencies first."""
    files = {}
    for path in glob.glob(os.path.join(tree, "lib/modules/*/kernel/**/*.ko*"), recursive=True):
        files[os.path.basename(path).split(".ko")[0].replace("-", "_")] = path
    order, seen = [], set()

    def visit(name):
        name = name.replace("-", "_")
        if name in seen:
            return
        seen.add(name)
        if name not in files:
            raise FetchError(f"module {name} is not in this kernel package")
        with open(files[name], "rb") as f:
            data = f.read()
        for dep in filter(None, _modinfo(_decompressed(files[name], data)).get("depends", "").split(",")):
            visit(dep)
        order.append(name)

    for w in wanted:
        visit(w)
    return order, files


def _decompressed(path, data):
    if path.endswith(".xz"):
        return subprocess.run(["xz", "-dc"], input=data, capture_output=True, check=True).stdout
    if path.endswith(".zst"):
        return subprocess.run(["zstd", "-qdc"], input=data, capture_output=True, check=True).stdout
    return data


def fetch_kernel(cache, meta_pkg, modules):
    """Caches META_PKG's kernel in CACHE: vmlinuz, modules/NAME.ko for every
    module in MODULES and its dependencies, modules/order (load order) and
    kernel-package. Returns (vmlinuz path, modules dir, order list)."""
    os.makedirs(cache, exist_ok=True)
    mdir = os.path.join(cache, "modules")
    order_file = os.path.join(mdir, "order")
    vmlinuz = os.path.join(cache, "vmlinuz")
    if os.path.exists(vmlinuz) and os.path.exists(order_file):
        with open(order_file) as f:
            order = f.read().split()
        if all(os.path.exists(os.path.join(mdir, m + ".ko")) for m in order) and \
                set(m.replace("-", "_") for m in modules) <= set(order):
            return vmlinuz, mdir, order
    with tempfile.TemporaryDirectory() as tmp:
        meta = _apt_download(meta_pkg, tmp)
        deps = subprocess.run(["dpkg-deb", "-f", meta, "Depends"], capture_output=True, text=True).stdout
        image = next((d.strip().split()[0] for d in deps.split(",")
                      if d.strip().startswith("linux-image-") and d.strip()[12:13].isdigit()), None)
        if not image:
            raise FetchError(f"{meta_pkg} names no kernel image package")
        deb = _apt_download(image, tmp)
        tree = os.path.join(tmp, "x")
        subprocess.run(["dpkg-deb", "-x", deb, tree], check=True)
        order, files = _load_order(tree, modules)
        os.makedirs(mdir, exist_ok=True)
        for m in order:
            with open(files[m], "rb") as f:
                data = _decompressed(files[m], f.read())
            with open(os.path.join(mdir, m + ".ko"), "wb") as f:
                f.write(data)
        with open(os.path.join(cache, "kernel-package"), "w") as f:
            f.write(image + "\n")
        shutil.copy(glob.glob(os.path.join(tree, "boot", "vmlinuz-*"))[0], vmlinuz + ".tmp")
        os.replace(vmlinuz + ".tmp", vmlinuz)
        with open(order_file, "w") as f:
            f.write(" ".join(order) + "\n")
    return vmlinuz, mdir, order


def fetch_busybox(cache):
    """busybox-static's binary, cached in CACHE (downloaded, not installed:
    the package conflicts with Debian's dynamic busybox)."""
    path = os.path.join(cache, "busybox")
    if os.path.exists(path):
        return path
    os.makedirs(cache, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        deb = _apt_download("busybox-static", tmp)
        subprocess.run(["dpkg-deb", "-x", deb, os.path.join(tmp, "x")], check=True)
        shutil.copy(os.path.join(tmp, "x", "bin", "busybox"), path + ".tmp")
        os.replace(path + ".tmp", path)
    return path
