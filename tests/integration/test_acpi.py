"""The Linux guest's DSDT through ACPICA, the ACPI implementation Linux itself
uses (Debian's acpica-tools: iasl disassembles, acpiexec loads the table and
runs its AML). Proves the PCI root bridge \\_SB.PCI0 is well-formed AML that
an OS can evaluate: its _CRS decodes to bus 0, the config ports, the I/O
windows and the MMIO window, and its _PRT routes every slot's INTA#-INTD#
to the IOAPIC inputs the VMM raises (devices/pci_bus.h pci_intx_gsi); and
COM1 (\\_SB.COM1, PNP0501) with its 8 ports at 0x3F8 and ISA IRQ 4, which a
hardware-reduced Linux needs to map the UART's interrupt (without it
/dev/console cannot be opened and user space prints nothing). That a booted
kernel binds both is test_linux.py's, where a KVM boots Linux that far."""
import os
import re
import shutil
import subprocess
import tempfile

import harness

MMIO_BASE, MMIO_SIZE = 0xE0000000, 0x10000000


def gsi(slot, pin):
    return 16 + (slot + pin) % 8


def dsdt(d):
    for tool in ("iasl", "acpiexec"):
        if not shutil.which(tool):
            raise harness.Skip(f"{tool} not found (Debian package acpica-tools; make deps installs it)")
    path = os.path.join(d, "dsdt.aml")
    exe = os.path.join(harness.BUILD, "tests", "unit", "test_acpi")
    p = subprocess.run([exe], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, VMM_TEST_DSDT_OUT=path))
    assert p.returncode == 0 and os.path.getsize(path) > 36, p.stdout + p.stderr
    return path


def acpiexec(path, commands):
    p = subprocess.run(["acpiexec", "-b", commands, path], capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    # no ACPICA exception while loading or evaluating (the `resources` command
    # also tries _SRS, which a fixed-resource bridge rightly lacks)
    bad = [l for l in out.splitlines() if re.search(r"\bAE_(?!OK)", l) and "AcpiSetCurrentResources" not in l]
    assert not bad, bad
    return out


def test_acpi_dsdt_disassembles_cleanly():
    with tempfile.TemporaryDirectory() as d:
        path = dsdt(d)
        p = subprocess.run(["iasl", "-d", path], capture_output=True, text=True, timeout=60, cwd=d)
        assert p.returncode == 0, p.stdout + p.stderr
        with open(os.path.join(d, "dsdt.dsl")) as f:
            asl = f.read()
        assert "Name (_S5, Package (0x02)" in asl, asl[:2000]
        assert re.search(r"Scope \(\\_SB\)\s*\{\s*Device \(PCI0\)", asl), asl[:2000]
        assert 'Name (_HID, EisaId ("PNP0A03")' in asl, asl[:2000]
        assert "Name (_PRT, Package (0x7C)" in asl  # 31 slots x 4 pins
        assert re.search(r'Device \(COM1\)\s*\{\s*Name \(_HID, EisaId \("PNP0501"\)', asl), asl
        assert re.search(r"IRQNoFlags \(\)\s*\{4\}", asl), asl
        # recompiling the disassembly gives the same bytes: nothing was lost
        # (-on: iasl would otherwise shorten our \_SB_ to _SB_, the same name at the root)
        p = subprocess.run(["iasl", "-on", "-p", os.path.join(d, "again"), os.path.join(d, "dsdt.dsl")],
                           capture_output=True, text=True, timeout=60, cwd=d)
        assert p.returncode == 0, p.stdout + p.stderr
        with open(path, "rb") as a, open(os.path.join(d, "again.aml"), "rb") as b:
            ours, theirs = a.read(), b.read()
        # the header's creator fields and checksum differ (iasl's own); the AML must not
        assert ours[36:] == theirs[36:], (len(ours), len(theirs))


def test_acpi_pci_root_resources_and_routing_evaluate():
    with tempfile.TemporaryDirectory() as d:
        path = dsdt(d)
        out = acpiexec(path, "resources \\_SB.PCI0")
        res = out[out.index("Evaluating _CRS"):]
        kinds = re.findall(r"^\[\d\d\] (.+)$", res, re.M)
        assert kinds[:5] == ["16-Bit WORD Address Space Resource", "I/O Resource",
                             "16-Bit WORD Address Space Resource", "16-Bit WORD Address Space Resource",
                             "32-Bit DWORD Address Space Resource"], kinds
        mins = re.findall(r"Address Minimum : ([0-9A-F]+)", res)
        maxs = re.findall(r"Address Maximum : ([0-9A-F]+)", res)
        got = [(int(a, 16), int(b, 16)) for a, b in zip(mins, maxs)]
        assert got == [(0, 0), (0xCF8, 0xCF8), (0, 0xCF7), (0xD00, 0xFFFF),
                       (MMIO_BASE, MMIO_BASE + MMIO_SIZE - 1)], got
        assert res.count("ResourceProducer") == 4, res  # the windows; the config ports are consumed

        prt = out[out.index("Evaluating _PRT"):out.index("Evaluating _CRS")]
        entries = re.findall(r"Address : ([0-9A-F]+)\s+Pin : ([0-9A-F]+)\s+Source : \[NULL NAMESTRING\]"
                             r"\s+Source Index : ([0-9A-F]+)", prt)
        seen = {(int(a, 16) >> 16, int(p, 16)): int(g, 16) for a, p, g in entries}
        assert len(entries) == 124 and len(seen) == 124, len(entries)
        for slot in range(1, 32):
            assert all(int(a, 16) & 0xFFFF == 0xFFFF for a, _, _ in entries)
            for pin in range(4):
                assert seen[(slot, pin)] == gsi(slot, pin), (slot, pin, seen.get((slot, pin)))
        out = acpiexec(path, "evaluate \\_S5")
        assert re.search(r"Contains 2 Elements:\s+\[Integer\] = 0+5\s+\[Integer\] = 0+\s", out), out[-1500:]


def test_acpi_com1_resources_evaluate():
    with tempfile.TemporaryDirectory() as d:
        out = acpiexec(dsdt(d), "resources \\_SB.COM1")
        res = out[out.index("Evaluating _CRS"):]
        kinds = re.findall(r"^\[\d\d\] (.+)$", res, re.M)
        assert kinds[:2] == ["I/O Resource", "IRQ Resource"], kinds
        assert re.search(r"Address Minimum : 0+3F8", res) and re.search(r"Address Length : 0+8", res), res
        irq = res[res.index("IRQ Resource"):]
        assert re.search(r"Triggering : Edge", irq) and re.search(r"Polarity : ActiveHigh", irq), irq
        assert re.search(r"Interrupt Count : 01\s+Interrupt List : 4\s", irq), irq
