"""A gzip'd newc cpio archive, the format the kernel unpacks as its
initramfs. Both initramfs builders (the Linux guest tests', the nested KVM
runner's) write theirs with this."""
import gzip
import os
import subprocess


class Archive:
    def __init__(self):
        self.blob = bytearray()
        self.ino = 1

    def add(self, name, mode, data=b"", rdev=(0, 0)):
        self.ino += 1
        hdr = "070701" + "".join(f"{v:08x}" for v in (
            self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(name) + 1, 0))
        self.blob += hdr.encode() + name.encode() + b"\0"
        self.blob += b"\0" * ((4 - len(self.blob) % 4) % 4)
        self.blob += data + b"\0" * ((4 - len(data) % 4) % 4)

    def dirs(self, *names):
        for d in names:
            self.add(d, 0o040755)

    def file(self, name, data, mode=0o644):
        self.add(name, 0o100000 | mode, data)

    def symlink(self, name, target):
        self.add(name, 0o120777, target.encode())

    def busybox_base(self, busybox):
        """The directories, /dev/console (the kernel opens it for init's
        stdio) and busybox as /bin/busybox and /bin/sh."""
        self.dirs("bin", "sbin", "proc", "sys", "dev", "etc", "tmp", "usr", "usr/bin", "usr/sbin")
        self.add("dev/console", 0o020600, rdev=(5, 1))
        with open(busybox, "rb") as f:
            self.file("bin/busybox", f.read(), 0o755)
        self.symlink("bin/sh", "busybox")

    def parents(self, path):
        """Every directory above PATH not yet in the archive (the kernel does
        not create a file's folders when it unpacks)."""
        have = getattr(self, "_dirs", None)
        if have is None:
            have = self._dirs = {"bin", "sbin", "proc", "sys", "dev", "etc", "tmp", "usr", "usr/bin", "usr/sbin"}
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in have:
                have.add(d)
                self.add(d, 0o040755)

    def program(self, path):
        """This machine's PATH binary, at the same path, with every shared
        library ldd says it loads (and the loader), so a Debian program runs
        in a busybox initramfs."""
        p = subprocess.run(["ldd", path], capture_output=True, text=True)
        files = [path]
        for line in p.stdout.splitlines():
            words = line.split()
            if "=>" in words and words.index("=>") + 1 < len(words) and words[words.index("=>") + 1].startswith("/"):
                files.append(words[words.index("=>") + 1])
            elif words and words[0].startswith("/"):
                files.append(words[0])  # the loader
        for f in files:
            name = f.lstrip("/")
            if name in getattr(self, "_files", set()):
                continue
            self._files = getattr(self, "_files", set()) | {name}
            self.parents(name)
            with open(f, "rb") as src:
                self.file(name, src.read(), 0o755)

    def modules(self, mdir, order):
        """lib/modules/NAME.ko for each module and lib/modules/order."""
        self.dirs("lib", "lib/modules")
        for m in order:
            with open(os.path.join(mdir, m + ".ko"), "rb") as f:
                self.file(f"lib/modules/{m}.ko", f.read())
        self.file("lib/modules/order", (" ".join(order) + "\n").encode())

    def write(self, out):
        self.add("TRAILER!!!", 0)
        tmp = out + ".tmp"
        with gzip.open(tmp, "wb", compresslevel=6) as f:
            f.write(bytes(self.blob))
        os.replace(tmp, out)
