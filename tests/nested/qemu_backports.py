"""QEMU 10 from Debian's bookworm-backports, for the nested KVM's outer
emulator: fetched with apt-get download and unpacked with dpkg-deb -x into a
build folder, never installed (the system's QEMU stays as it is).

Why: QEMU 7.2's emulated SVM corrupts inner vCPUs that run at once under
`-accel tcg,thread=multi`, and under `thread=single` its inner guests take
interrupts with IF clear; no Linux reached user space there. QEMU 10 with
thread=multi boots one (HOST.md, docs/nested-kvm.md).

apt runs against a private sources list, package lists and cache inside the
build folder, so this machine's /etc/apt is neither read for sources nor
changed; only Debian's archive (and its keyring) is used.
"""
import glob
import os
import shutil
import subprocess
import tempfile

SUITE = "bookworm-backports"
MIRROR = "http://deb.debian.org/debian"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
PACKAGES = ["qemu-system-x86", "qemu-system-common", "qemu-system-data", "seabios"]


class FetchError(Exception):
    """apt-get could not fetch or the unpacked QEMU does not run here."""


class Qemu:
    """An unpacked QEMU: its binary, the -L data folders it needs, its version line."""

    def __init__(self, binary, data_dirs, version):
        self.binary, self.data_dirs, self.version = binary, data_dirs, version

    def argv0(self):
        args = [self.binary]
        for d in self.data_dirs:
            args += ["-L", d]
        return args


def _apt_opts(state):
    return ["-o", f"Dir::Etc::SourceList={state}/sources.list", "-o", "Dir::Etc::SourceParts=/nonexistent",
            "-o", f"Dir::State::Lists={state}/lists", "-o", f"Dir::Cache={state}/cache",
            "-o", "Dir::State::status=/dev/null", "-o", "APT::Sandbox::User=root", "-qq"]


def _last_line(p):
    return (p.stderr.strip().splitlines() or p.stdout.strip().splitlines() or ["(no output)"])[-1]


def _version(binary, data_dirs):
    try:
        p = subprocess.run([binary, *sum((["-L", d] for d in data_dirs), []), "--version"],
                           capture_output=True, text=True, timeout=30)
    except OSError as e:
        raise FetchError(f"{binary} does not start: {e}")
    if p.returncode != 0 or not p.stdout.startswith("QEMU emulator version"):
        raise FetchError(f"{binary} --version failed: {_last_line(p)}")
    return p.stdout.splitlines()[0]


def fetch(cache):
    """The backports QEMU, unpacked in CACHE/qemu-backports (once). Raises FetchError."""
    root = os.path.join(cache, "qemu-backports")
    binary = os.path.join(root, "usr", "bin", "qemu-system-x86_64")
    data = [os.path.join(root, "usr", "share", "qemu"), os.path.join(root, "usr", "share", "seabios")]
    if os.path.exists(os.path.join(root, "complete")):
        return Qemu(binary, data, _version(binary, data))
    if not shutil.which("apt-get") or not os.path.exists(KEYRING):
        raise FetchError("apt-get and Debian's archive keyring are needed to fetch QEMU from " + SUITE)
    os.makedirs(cache, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as state:
        for d in ("lists/partial", "cache/archives/partial", "debs"):
            os.makedirs(os.path.join(state, d))
        with open(os.path.join(state, "sources.list"), "w") as f:
            f.write(f"deb [signed-by={KEYRING}] {MIRROR} {SUITE} main\n")
        opts = _apt_opts(state)
        p = subprocess.run(["apt-get", *opts, "update"], capture_output=True, text=True)
        if p.returncode != 0:
            raise FetchError(f"apt-get update for {SUITE} failed: {_last_line(p)}")
        debs = os.path.join(state, "debs")
        p = subprocess.run(["apt-get", *opts, "download", *PACKAGES], cwd=debs, capture_output=True, text=True)
        if p.returncode != 0:
            raise FetchError(f"apt-get download {' '.join(PACKAGES)} from {SUITE} failed: {_last_line(p)}")
        tree = os.path.join(state, "tree")
        for deb in sorted(glob.glob(os.path.join(debs, "*.deb"))):
            subprocess.run(["dpkg-deb", "-x", deb, tree], check=True)
        if not os.path.exists(os.path.join(tree, "usr", "bin", "qemu-system-x86_64")):
            raise FetchError(f"the {SUITE} packages hold no qemu-system-x86_64")
        shutil.rmtree(root, ignore_errors=True)
        os.replace(tree, root)
    version = _version(binary, data)
    with open(os.path.join(root, "complete"), "w") as f:
        f.write(version + "\n")
    return Qemu(binary, data, version)


def system():
    """The system's qemu-system-x86_64 (Debian bookworm: 7.2), or None."""
    binary = shutil.which("qemu-system-x86_64")
    if not binary:
        return None
    try:
        return Qemu(binary, [], _version(binary, []))
    except FetchError:
        return None
