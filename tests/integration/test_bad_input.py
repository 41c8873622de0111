"""Every user error is one line on stderr and exit status 2, with nothing left behind.

vmm runs here pointed at a KVM device that does not exist (harness.vmm_without_kvm):
every refusal below happens before KVM is opened, so it is the same on every
machine, with or without /dev/kvm. Only a check that asks KVM itself (its
vCPU limit) needs a real one."""
import os
import struct
import subprocess
import tempfile

import harness
from harness import need_kvm, vmm, vmm_without_kvm


def _expect_usage_error(*args, words=(), kvm=False):
    """kvm=True: a check that asks KVM itself, so vmm gets the real device."""
    with tempfile.TemporaryDirectory() as d:
        jpath = os.path.join(d, "out.json")
        run = vmm if kvm else vmm_without_kvm
        r = run(*args, "--json", jpath, json_report=False)
        assert r.rc == 2, r
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        assert lines[0].startswith("vmm: "), lines
        for w in words:
            assert w in lines[0], (w, lines[0])
        assert r.stdout == "", r.stdout
        assert not os.path.exists(jpath), "a refused run must not write a report"
    return lines[0]


def _minimal_elf(paddr=0x100000, memsz=0x1000, machine=62, entry=None):
    """A tiny x86-64 ELF: one RX segment holding `hlt`."""
    entry = paddr if entry is None else entry
    code = b"\xf4"
    ehdr = struct.pack("<16sHHIQQQIHHHHHH",
                       b"\x7fELF\x02\x01\x01" + b"\x00" * 9, 2, machine, 1, entry, 64, 0, 0, 64, 56, 1, 0, 0, 0)
    phdr = struct.pack("<IIQQQQQQ", 1, 5, 120, paddr, paddr, len(code), memsz, 0x1000)
    return ehdr + phdr + code


def _write(d, name, data):
    path = os.path.join(d, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def test_missing_firmware_file():
    _expect_usage_error("--firmware", "/nonexistent/guest.elf", words=["/nonexistent/guest.elf", "No such file"])


def test_firmware_is_a_directory():
    _expect_usage_error("--firmware", "/tmp", words=["/tmp"])


def test_not_an_elf():
    with tempfile.TemporaryDirectory() as d:
        p = _write(d, "x.bin", b"#!/bin/sh\necho hi\n")
        _expect_usage_error("--firmware", p, words=["not an ELF"])


def test_not_x86_64():
    with tempfile.TemporaryDirectory() as d:
        p = _write(d, "arm.elf", _minimal_elf(machine=183))
        _expect_usage_error("--firmware", p, words=["x86-64"])


def test_truncated_elf():
    with tempfile.TemporaryDirectory() as d:
        good = _minimal_elf()
        for cut in (20, 64 + 30, len(good) - 1):
            p = _write(d, f"t{cut}.elf", good[:cut])
            _expect_usage_error("--firmware", p, words=["truncated"])


def test_truncated_bundled_firmware_copy():
    """A real image cut inside its loadable data (the bundled firmware, from the build tree)."""
    fw = os.path.join(harness.BUILD, "firmware", "firmware.elf")
    with open(fw, "rb") as f:
        data = f.read()
    with tempfile.TemporaryDirectory() as d:
        phoff, phnum = struct.unpack_from("<Q", data, 32)[0], struct.unpack_from("<H", data, 56)[0]
        ends = []
        for i in range(phnum):
            ptype, _, off, _, _, filesz = struct.unpack_from("<IIQQQQ", data, phoff + 56 * i)
            if ptype == 1 and filesz:
                ends.append(off + filesz)
        p = _write(d, "cut.elf", data[: max(ends) - 1])
        _expect_usage_error("--firmware", p, words=["truncated"])


def test_segment_outside_guest_memory():
    with tempfile.TemporaryDirectory() as d:
        p = _write(d, "high.elf", _minimal_elf(paddr=0x7f000000))
        _expect_usage_error("-m", "64M", "--firmware", p, words=["outside guest memory"])


def test_memory_too_small_for_image():
    # The bundled firmware needs ~6 MiB; 8M leaves too little after the VMM's pages.
    _expect_usage_error("-m", "8M", words=["outside guest memory", "-m"])


def test_zero_vcpus():
    _expect_usage_error("-c", "0", words=["--cpus"])


def test_more_vcpus_than_kvm_allows():
    need_kvm()
    _expect_usage_error("-c", "4096", "-m", "1G", words=["--cpus", "KVM allows at most"], kvm=True)


def test_unknown_workload_and_lock():
    _expect_usage_error("--workload", "ebizzy", words=["unknown workload", "lockbench"])
    _expect_usage_error("--lock", "rwsem", words=["unknown lock kind", "ticket"])


def test_malformed_sizes_and_times():
    _expect_usage_error("-m", "12Q", words=["--mem"])
    _expect_usage_error("-m", "-5", words=["--mem"])
    _expect_usage_error("-m", "99999999999999999999", words=["--mem"])
    _expect_usage_error("--duration", "soon", words=["--duration"])
    _expect_usage_error("--cs-cycles", "1e3", words=["--cs-cycles"])
    _expect_usage_error("-c", "two", words=["--cpus"])


def test_memory_too_small_for_vcpus():
    # 600 shared pages and the VMM's tables need more than 4M leaves
    _expect_usage_error("-c", "600", "-m", "4M", words=["--mem", "not enough for 600 vCPUs"])


def test_empty_kvm_device():
    _expect_usage_error("--kvm-device", "", words=["--kvm-device"])


def test_unknown_option():
    _expect_usage_error("--turbo", words=["--turbo"])


def test_no_stray_files_in_cwd():
    """A refused run leaves no file in the working directory."""
    with tempfile.TemporaryDirectory() as d:
        cwd = os.getcwd()
        vmm_bin = os.path.abspath(harness.vmm_path())
        try:
            os.chdir(d)
            p = subprocess.run([vmm_bin, "run", "--firmware", "nope.elf"], capture_output=True,
                               env=dict(os.environ, VMM_KVM_DEVICE=harness.MISSING_KVM_DEVICE))
            assert p.returncode == 2
            assert os.listdir(d) == []
        finally:
            os.chdir(cwd)
