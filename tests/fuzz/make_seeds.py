#!/usr/bin/env python3
"""Writes the seed corpora of fuzz_bzimage, fuzz_virtqueue and
fuzz_domain_proto (tests/fuzz/corpus/<target>/): small synthetic inputs,
valid as far as the code under test goes, in each fuzzer's input layout (see
its comment; for fuzz_domain_proto one packet, as sched/domain_proto.h lays
it out, one seed per message type and a few edges).
No real kernel: the bzImage is built like tests/unit/test_bzimage.c's synth()."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def bzimage(kernel=4096, version=0x020F, initrd_max=0x7FFFFFFF, pref=0x1000000, init_size=4 << 20):
    setup = 5 * 512
    p = bytearray(setup + kernel)
    p[0x1F1] = 4
    struct.pack_into("<I", p, 0x1F4, kernel // 16)
    struct.pack_into("<H", p, 0x1FE, 0xAA55)
    p[0x200], p[0x201] = 0xEB, 0x6A
    p[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", p, 0x206, version)
    struct.pack_into("<H", p, 0x20E, 0x300)
    v = b"6.99.0-synthetic\0"
    p[0x500:0x500 + len(v)] = v
    p[0x211] = 0x01
    struct.pack_into("<I", p, 0x22C, initrd_max)
    struct.pack_into("<I", p, 0x230, 0x200000)
    p[0x234], p[0x235] = 1, 21
    struct.pack_into("<H", p, 0x236, 0x3)
    struct.pack_into("<I", p, 0x238, 2047)
    struct.pack_into("<Q", p, 0x258, pref)
    struct.pack_into("<I", p, 0x260, init_size)
    for i in range(kernel):
        p[setup + i] = (i * 7) & 0xFF
    return bytes(p)


def bz_req(mem_mib_extra, keep, clen, ilen):
    return bytes([mem_mib_extra & 63, keep]) + struct.pack("<H", clen) + struct.pack("<I", ilen)[:3]


def vq(qsize_log2, desc, avail, used, maxbufs, ops, ram):
    hdr = bytes([qsize_log2]) + struct.pack("<III", desc, avail, used) + bytes([maxbufs, len(ops) // 3])
    return hdr + ops + ram


def vq_ram():
    ram = bytearray(40 << 10)  # spills into the second region (GPA 64 KiB)

    def d(i, addr, ln, flags, nxt, base=0):
        struct.pack_into("<QIHH", ram, base + 16 * i, addr, ln, flags, nxt)
    d(0, 0x3000, 16, 1, 1)                # readable, NEXT -> 1
    d(1, 0x10000 + 0x100, 64, 2, 0)       # writable, in the second region (file offset 32 KiB)
    d(2, 0x4000, 32, 4, 0)                # indirect: 2 entries at 0x4000
    d(0, 0x3100, 8, 1, 1, base=0x4000)
    d(1, 0x3200, 1, 2, 0, base=0x4000)
    d(3, 0x3300, 4, 1, 3)                 # a loop: 3 -> 3
    struct.pack_into("<HHHHH", ram, 0x1000, 0, 3, 0, 2, 3)  # avail: flags, idx 3, ring 0 2 3
    return bytes(ram)


DOM_MAGIC, DOM_VERSION = 0x444D4D56, 1
(DOM_JOIN, DOM_JOIN_OK, DOM_LEAVE, DOM_STATUS, DOM_STATUS_REPLY, DOM_SET, DOM_OK,
 DOM_ERROR) = range(1, 9)


def dom(mtype, body):
    return struct.pack("<IHHII", DOM_MAGIC, DOM_VERSION, mtype, 16 + len(body), 0) + body


def dom_name(s, n=32):
    return s.encode().ljust(n, b"\0")


def dom_join_ok(member, cpus, nseats=1):
    slots = list(cpus) + [-1] * (256 - len(cpus))
    return dom(DOM_JOIN_OK, struct.pack("<IIIIQQQ", member, len(cpus), nseats, 0,
                                        0x1122334455667788, 10_000_000, 5_000_000)
               + struct.pack("<256i", *slots))


def dom_seeds():
    return {
        "join": dom(DOM_JOIN, struct.pack("<IIII", 2, 4, 100, 0) + dom_name("holder") + dom_name("vm-1")),
        "join_max": dom(DOM_JOIN, struct.pack("<IIII", 1024, 1024, 10000, 1) + dom_name("gang")
                        + dom_name("x" * 31)),
        "join_ok": dom_join_ok(7, [0, 1, 2, 3], nseats=2),
        "join_ok_full": dom_join_ok(0x7FFFFFFF, [1023 - i for i in range(256)], nseats=1024),
        "leave": dom(DOM_LEAVE, b""),
        "status": dom(DOM_STATUS, struct.pack("<II", 1, 0)),
        "status_reply": dom(DOM_STATUS_REPLY, b'{"members": [\n\t{"id": 0}\n]}\n\0'),
        "status_reply_empty": dom(DOM_STATUS_REPLY, b"\0"),
        "set_weight": dom(DOM_SET, struct.pack("<iiII", 3, 0, 1, 50) + bytes(32)),
        "set_policy_by_pid": dom(DOM_SET, struct.pack("<iiII", -1, 4242, 2, 0) + dom_name("pv")),
        "set_both": dom(DOM_SET, struct.pack("<iiII", 0, 0, 3, 1) + dom_name("random")),
        "ok": dom(DOM_OK, struct.pack("<Q", 123456789)),
        "error": dom(DOM_ERROR, struct.pack("<iI", -22, 0) + dom_name("weight out of range", 160)),
    }


def main():
    out = os.path.join(HERE, "corpus", "fuzz_bzimage")
    os.makedirs(out, exist_ok=True)
    seeds = {
        "plain": bz_req(16, 0x02, 20, 0) + bzimage(),
        "initrd": bz_req(32, 0x01, 200, 4096) + bzimage(),
        "v212_low_initrd_max": bz_req(48, 0, 0, 65536) + bzimage(version=0x020C, initrd_max=0x2000000),
        "long_cmdline": bz_req(16, 0x80, 0x100, 0) + bzimage(kernel=1024),
        "too_small": bz_req(0, 0x03, 0, 0) + bzimage(init_size=16 << 20),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    out = os.path.join(HERE, "corpus", "fuzz_virtqueue")
    os.makedirs(out, exist_ok=True)
    pop, intr = b"\x00\x00\x00", b"\x02\x00\x00"
    seeds = {
        "three_chains": vq(3, 0, 0x1000, 0x2000, 4, pop * 3 + intr, vq_ram()),
        "guest_rewrites_idx": vq(3, 0, 0x1000, 0x2000, 1, pop + b"\x01\x02\x10" + pop + pop, vq_ram()),
        "rings_in_region1": vq(2, 0x10000, 0x10400, 0x10800, 16, pop * 2, bytes(32 << 10) + vq_ram()[:2048]),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)

    out = os.path.join(HERE, "corpus", "fuzz_domain_proto")
    os.makedirs(out, exist_ok=True)
    for name, data in dom_seeds().items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
