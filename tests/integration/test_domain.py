"""The scheduling domain (issue 12, sched/DOMAIN.md): separate `vmm run`
processes share a domain's CPUs through one agent. Without KVM: the
command's errors, the agent's status, and a rogue client refused with
nothing else changed. With KVM (nested here when there is none): 2 and 4
members on 2 slots keep mutual exclusion and never have more than 2 vCPUs
in guest mode (from their traces, on one time axis), a SIGKILLed member's
slots go to the others, a killed agent leaves members running, a
SIGSTOPped member cannot keep a slot, weights 1:2 give 1:2, a live
policy change is applied and marked, seats go back at their leases'
ends, two gang members have their two seats granted together
(plain members do not), and the agent confines members in cgroups
(cpuset and CPU weight) where the host lets it."""
import json
import re
import mmap
import os
import signal
import socket
import struct
import subprocess
import tempfile
import time

import harness
from harness import check_mutual_exclusion, need_kvm

USAGE = 2
MAGIC, VERSION = 0x444D4D56, 1
JOIN, JOIN_OK, LEAVE, STATUS, STATUS_REPLY, SET, OK, ERROR = range(1, 9)
HDR = "<IHHII"


def _env(d):
    return dict(os.environ, VMM_DOMAIN_DIR=d)


class Domain:
    """`vmm domain start NAME --pcpus N` in the background, stopped on exit."""

    def __init__(self, name="d", pcpus=2, extra=(), affinity=None):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.name = name
        self.env = _env(self.dir)
        self.sock = os.path.join(self.dir, name, "ctl.sock")
        pin = (lambda: os.sched_setaffinity(0, affinity)) if affinity else None
        self.p = subprocess.Popen([harness.vmm_path(), "domain", "start", name, "--pcpus", str(pcpus), *extra],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env,
                                  preexec_fn=pin)
        line = self.p.stdout.readline()
        assert "socket" in line, (line, self.p.poll(), self.p.stderr.read() if self.p.poll() is not None else "")
        self.ready_line = line

    def vmm(self, *args, timeout=60):
        p = subprocess.run([harness.vmm_path(), *args], capture_output=True, text=True, timeout=timeout, env=self.env)
        return p

    def status(self):
        p = self.vmm("domain", "status", self.name, "--json")
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    def member(self, *args, json_path=None, trace=None):
        cmd = [harness.vmm_path(), "run", "--domain", self.name, "-q", *args]
        if json_path:
            cmd += ["--json", json_path]
        if trace:
            cmd += ["--trace", trace]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        try:
            out, err = self.p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            out, err = self.p.communicate()
        return self.p.returncode, err

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        self.tmp.cleanup()


def _slow():
    """3 under the sanitizers (read at each use: run_all sets it per stage)."""
    return 3 if os.environ.get("VMM_SANITIZED") == "1" else 1


def _dur(seconds):
    """A member's --duration: the sanitized build starts and runs 2-3x
    slower, and the tests look at members while they still run."""
    return "%gs" % (seconds * _slow())


def _finish(p, timeout=240):
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, err


def _report(path):
    with open(path) as f:
        return json.load(f)


# ---- no KVM needed ----

def test_domain_command_errors_are_one_line_and_exit_2():
    with tempfile.TemporaryDirectory() as d:
        env = _env(d)

        def run(*args):
            return subprocess.run([harness.vmm_path(), *args], capture_output=True, text=True, timeout=30, env=env)

        for args, words in [
            (("domain",), "usage"),
            (("domain", "start"), "give one domain NAME"),
            (("domain", "start", "a/b", "--pcpus", "1"), "only letters"),
            (("domain", "start", "x"), "--pcpus N or --cpus LIST"),
            (("domain", "start", "x", "--pcpus", "0"), "--pcpus"),
            (("domain", "start", "x", "--cpus", "4095"), "--cpus"),
            (("domain", "start", "x", "--cpus", "0,0"), "--cpus"),
            (("domain", "start", "x", "--pcpus", "1", "--confine", "kernel"), "--confine"),
            (("domain", "status", "nosuch"), "no domain 'nosuch' is running"),
            (("domain", "set", "nosuch", "0"), "nothing to change"),
            (("domain", "set", "nosuch", "zero", "--weight", "2"), "neither a member id"),
            (("domain", "set", "nosuch", "0", "--weight", "0"), "--weight"),
            (("domain", "set", "nosuch", "0", "--yield", "bogus"), "unknown policy"),
            (("domain", "stop", "nosuch"), "no domain 'nosuch' is running"),
            (("domain", "frob"), "unknown subcommand"),
        ]:
            p = run(*args)
            assert p.returncode == USAGE, (args, p.returncode, p.stderr)
            lines = p.stderr.strip().splitlines()
            assert words in p.stderr and (words == "usage" or len(lines) == 1), (args, p.stderr)
        # vmm run: the domain is checked before KVM is opened (a missing KVM device would be exit 6)
        for args, words in [
            (("--domain", "nosuch"), "no domain 'nosuch' is running"),
            (("--weight", "5"), "only with --domain"),
            (("--slice-floor", "on"), "only with --domain"),
            (("--domain", "x", "--vms", "2"), "a domain member is one VM"),
            (("--domain", "x", "--pcpus", "2"), "the domain owns the CPUs"),
            (("--domain", "x", "--sched", "host"), "scheduled by the domain"),
            (("--domain", "x", "--weight", "10001"), "--weight"),
        ]:
            r = harness.vmm_without_kvm(*args, env=env, json_report=False)
            assert r.rc == USAGE, (args, r)
            assert words in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)


def test_agent_serves_status_refuses_a_second_agent_and_stops_clean():
    with Domain("alpha", pcpus=1) as dom:
        st = dom.status()
        assert st["domain"] == "alpha" and len(st["slots"]) == 1 and st["members"] == [], st
        assert st["slots"][0]["member"] is None and st["agent_pid"] == dom.p.pid, st
        text = dom.vmm("domain", "status", "alpha")
        assert text.returncode == 0 and "1 slots" in text.stdout and "members: 0" in text.stdout, text
        second = dom.vmm("domain", "start", "alpha", "--pcpus", "1")
        assert second.returncode == USAGE and "already has an agent (pid %d)" % dom.p.pid in second.stderr, second
        stop = dom.vmm("domain", "stop", "alpha")
        assert stop.returncode == 0, stop.stderr
        rc, err = dom.stop()
        assert rc == 0, err
        assert not os.path.exists(dom.sock), "the socket outlived its agent"


def _cpu_ticks(pid):
    """utime + stime of a process, in clock ticks."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def test_agent_sleeps_between_beats_while_nobody_contends():
    """One member, uncontended: no slice end is due, only the beat (every
    100 ms). The agent sleeps in between: it used to re-arm its timer at
    every pass, the update's own completion woke it for the next one, and
    it spun on io_uring_enter at a whole CPU and never ticked."""
    need_kvm()
    with Domain("idle", pcpus=1) as dom:
        p = dom.member("-c", "1", "--duration", _dur(3))
        _wait_members(dom, 1, [p])
        time.sleep(0.3)
        hz = os.sysconf("SC_CLK_TCK")
        t0, c0 = time.monotonic(), _cpu_ticks(dom.p.pid)
        time.sleep(1.0)
        used = (_cpu_ticks(dom.p.pid) - c0) / hz / (time.monotonic() - t0)
        rc, out, err = _finish(p)
        assert rc == 0, err[-2000:]
        assert used < 0.2, "the agent used %.0f%% of a CPU with one member" % (100 * used)


def _hdr(t, length):
    return struct.pack(HDR, MAGIC, VERSION, t, length, 0)


def _join(nseats=2, nvcpus=2, weight=100, policy=b"pv", name=b"rogue"):
    body = struct.pack("<IIII32s32s", nseats, nvcpus, weight, 0, policy, name)
    return _hdr(JOIN, 16 + len(body)) + body


def _ask(path, msg):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(path)
    s.send(msg)
    reply = s.recv(70000)
    after = s.recv(100)  # the agent closes a refused connection
    s.close()
    return reply, after


def test_rogue_client_is_refused_and_nothing_else_changes():
    # --confine self: the member that joins for real below is this test
    # process, which a confining agent would move into a cgroup of its own
    with Domain("rogue", pcpus=2, extra=("--confine", "self")) as dom:
        before = dom.status()
        hostile = [
            b"",                                        # an empty packet
            b"\x00" * 16,                               # no magic
            _join()[:40],                               # truncated JOIN
            _join() + b"\x00",                          # one byte too many
            _join(weight=0),                            # weight out of range
            _join(nseats=0),                            # no seats
            _join(nseats=5, nvcpus=4),                  # more seats than vCPUs
            _join(policy=b"bogus"),                     # unknown policy
            _join(name=b"a\x01b"),                      # not printable
            _join(policy=b"pv\x00junk"),                # garbage after the NUL
            _hdr(JOIN_OK, 16),                          # a message only agents send
            _hdr(LEAVE, 16),                            # LEAVE without JOIN
            struct.pack(HDR, MAGIC, 99, STATUS, 24, 0) + b"\x00" * 8,  # wrong version
            _hdr(STATUS, 16 + 8) + b"\xff" * 8,         # unknown flags
            b"\x56\x4d\x4d\x44" + b"\xff" * 5000,       # oversized
        ]
        for msg in hostile:
            reply, after = _ask(dom.sock, msg) if msg else (None, None)
            if msg:
                assert len(reply) >= 16, (msg[:20], reply)
                magic, ver, typ, length, _ = struct.unpack(HDR, reply[:16])
                assert typ == ERROR and length == len(reply), (msg[:20], typ)
                assert after == b"", "a refused connection must be closed"
        p = dom.p.poll()
        assert p is None, "the agent died of a hostile message"
        after = dom.status()
        assert after["members"] == before["members"] == [] and after["slots"] == before["slots"], after
        assert after["refused"] >= before["refused"] + len(hostile) - 1, after

        # a member that joins for real and then writes garbage into its own words
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(5)
        s.connect(dom.sock)
        s.send(_join())
        msg, fds, _, _ = socket.recv_fds(s, 4096, 3)
        assert struct.unpack(HDR, msg[:16])[2] == JOIN_OK and len(fds) == 3, msg[:16]
        req_fd, grant_fd, bell = fds
        req = mmap.mmap(req_fd, os.fstat(req_fd).st_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        try:
            mmap.mmap(grant_fd, os.fstat(grant_fd).st_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            assert False, "the grant segment must not be writable by its member"
        except PermissionError:
            pass
        for junk in (0xFFFFFFFF, 3, 0x12345678 << 2 | 1, 7 << 2):
            for seat in range(2):
                struct.pack_into("<I", req, 64 * (1 + seat), junk & 0xFFFFFFFF)
            os.write(bell, struct.pack("<Q", 1))
            time.sleep(0.05)
        st = dom.status()
        assert len(st["members"]) == 1 and st["members"][0]["bad_words"] > 0, st
        held = [sl for sl in st["slots"] if sl["member"] is not None]
        assert len(held) <= 2 and st["members"][0]["held"] == len(held), st
        s.close()
        time.sleep(0.3)
        st = dom.status()
        assert st["members"] == [] and all(sl["member"] is None for sl in st["slots"]), st
        for fd in (req_fd, grant_fd, bell):
            os.close(fd)
        req.close()
        assert dom.p.poll() is None


# ---- with KVM ----

def _running_spans(trace_path):
    """[(start_ns, end_ns)] of every vCPU's "running" spans on CLOCK_MONOTONIC."""
    with open(trace_path) as f:
        t = json.load(f)
    t0 = t["otherData"]["t0_monotonic_ns"]
    spans = []
    for e in t["traceEvents"]:
        if e.get("ph") == "X" and e.get("pid") == 1 and e.get("name") == "running":
            a = t0 + e["ts"] * 1000
            spans.append((a, a + e["dur"] * 1000))
    return spans


def _max_overlap(spans):
    ev = []
    for a, b in spans:
        ev.append((a, 1))
        ev.append((b, -1))
    ev.sort(key=lambda x: (x[0], x[1]))  # an end and a start at one instant: the end first
    n = best = 0
    for _, d in ev:
        n += d
        best = max(best, n)
    return best


def _overlapping(tagged, n):
    """The first instant n (member, start, end) spans overlap, for the failure
    message: which members, and by how many ns."""
    ev = sorted([(a, 1, (i, a, b)) for a, b, i in tagged] + [(b, -1, (i, a, b)) for a, b, i in tagged],
                key=lambda x: (x[0], x[1]))
    open_ = set()
    for t, d, span in ev:
        if d > 0:
            open_.add(span)
            if len(open_) >= n:
                return [(m, a - t, b - t) for m, a, b in sorted(open_)]
        else:
            open_.discard(span)
    return []


def _members_share_two_slots(k):
    # An honest member gives a revoked slot back within the grace; only one
    # that overruns it (stopped, or slower than the grace) is reclaimed while
    # still in guest mode. The emulated SVM of the nested KVM can take longer
    # than the default 5 ms to force a vCPU out, so the grace is longer here
    # and the test asserts nothing was reclaimed: then the bound must hold.
    grace = "1000000" if harness.nested() else "50000"
    with Domain("share%d" % k, pcpus=2, extra=("--grace-us", grace)) as dom, tempfile.TemporaryDirectory() as d:
        procs = []
        for i in range(k):
            j, t = os.path.join(d, "r%d.json" % i), os.path.join(d, "t%d.json" % i)
            procs.append((dom.member("-c", "4", "--lock", "ticket", "--duration", _dur(1), "--name", "vm%d" % i,
                                     json_path=j, trace=t), j, t))
        time.sleep(0.3)
        st = dom.status()
        spans, doms, tagged = [], [], []
        for i, (p, j, t) in enumerate(procs):
            rc, out, err = _finish(p)
            assert rc == 0, (rc, err[-2000:])
            rep = _report(j)
            check_mutual_exclusion(rep)
            assert rep["domain"]["grants"] > 0 and rep["domain"]["agent_lost"] is False, rep["domain"]
            assert rep["domain"]["reclaims"] == 0, rep["domain"]
            doms.append(rep["domain"])
            spans += _running_spans(t)
            tagged += [(a, b, i) for a, b in _running_spans(t)]
        assert len(st["members"]) == k or any(p.poll() is not None for p, _, _ in procs), st
        assert len(spans) > k * 4, len(spans)
        rc, agent_err = dom.stop()
        reclaims = [int(x) for x in re.findall(r"(\d+) reclaims", agent_err)]
        assert len(reclaims) == k and sum(reclaims) == 0, agent_err
        assert _max_overlap(spans) <= 2, ("more than 2 vCPUs of the domain held a slot at once", _max_overlap(spans),
                                          _overlapping(tagged, 3), doms)
        return spans


@harness.nested_stage
def test_two_members_on_two_slots():
    need_kvm()
    _members_share_two_slots(2)


@harness.nested_stage
def test_four_members_on_two_slots():
    need_kvm()
    _members_share_two_slots(4)


def _wait_members(dom, n, procs, timeout=20):
    """The status once n members have joined (the nested KVM starts slowly)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        st = dom.status()
        if len(st["members"]) >= n:
            return st
        dead = [p for p in procs if p.poll() is not None]
        assert not dead, [p.communicate()[1][-1000:] for p in dead]
        time.sleep(0.05)
    raise AssertionError("only %d of %d members joined" % (len(dom.status()["members"]), n))


def _slot_ns(st):
    return {m["vm"]: m["slot_ns"] for m in st["members"]}


@harness.nested_stage
def test_sigkill_of_a_member_gives_its_share_to_the_others():
    need_kvm()
    with Domain("kill", pcpus=2) as dom, tempfile.TemporaryDirectory() as d:
        procs = [dom.member("-c", "2", "--lock", "tas", "--pv-spinlock", "off", "--duration", _dur(8), "--name",
                            "vm%d" % i, json_path=os.path.join(d, "r%d.json" % i)) for i in range(3)]
        _wait_members(dom, 3, procs)
        time.sleep(0.5)
        a = dom.status()
        time.sleep(0.5)
        b = dom.status()
        procs[2].send_signal(signal.SIGKILL)
        procs[2].wait()
        deadline = time.time() + 2
        while time.time() < deadline and len(dom.status()["members"]) == 3:
            time.sleep(0.02)
        c = dom.status()
        assert sorted(m["vm"] for m in c["members"]) == ["vm0", "vm1"], c
        time.sleep(0.5)
        e = dom.status()
        for i in range(2):
            p = procs[i]
            rc, out, err = _finish(p)
            assert rc == 0, err[-2000:]
            check_mutual_exclusion(_report(os.path.join(d, "r%d.json" % i)))
        before = sum(_slot_ns(b)["vm%d" % i] - _slot_ns(a)["vm%d" % i] for i in range(2)) / (b["uptime_ns"] - a["uptime_ns"])
        after = sum(_slot_ns(e)["vm%d" % i] - _slot_ns(c)["vm%d" % i] for i in range(2)) / (e["uptime_ns"] - c["uptime_ns"])
        assert after > before * 1.15, (before, after)


@harness.nested_stage
def test_killed_agent_leaves_members_running_and_says_so():
    need_kvm()
    with Domain("orphan", pcpus=2) as dom, tempfile.TemporaryDirectory() as d:
        procs = [dom.member("-c", "2", "--lock", "ticket", "--duration", _dur(2),
                            json_path=os.path.join(d, "r%d.json" % i)) for i in range(2)]
        _wait_members(dom, 2, procs)
        dom.p.send_signal(signal.SIGKILL)
        dom.p.wait()
        for i, p in enumerate(procs):
            rc, out, err = _finish(p)
            assert rc == 0, err[-2000:]
            rep = _report(os.path.join(d, "r%d.json" % i))
            check_mutual_exclusion(rep)
            assert rep["domain"]["agent_lost"] is True, rep["domain"]
            assert "agent lost" in err and "host scheduler" in err, err


@harness.nested_stage
def test_restarted_agent_takes_members_back():
    need_kvm()
    with Domain("phoenix", pcpus=2) as dom, tempfile.TemporaryDirectory() as d:
        procs = [dom.member("-c", "4", "--lock", "ticket", "--duration", _dur(6), "--name", "vm%d" % i,
                            json_path=os.path.join(d, "r%d.json" % i)) for i in range(2)]
        _wait_members(dom, 2, procs)
        dom.p.send_signal(signal.SIGKILL)
        dom.p.wait()
        time.sleep(0.5)
        # a new agent takes the name over from the dead one, and the members come back to it
        dom.p = subprocess.Popen([harness.vmm_path(), "domain", "start", "phoenix", "--pcpus", "2"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dom.env)
        assert "socket" in dom.p.stdout.readline()
        st = _wait_members(dom, 2, procs, timeout=10)
        assert sorted(m["vm"] for m in st["members"]) == ["vm0", "vm1"], st
        # the new agent grants nothing for its first 1.5 s (the dead one's
        # members may still run on its slots until they rejoin)
        deadline = time.time() + 10
        st = dom.status()
        while sum(m["slot_ns"] for m in st["members"]) == 0 and time.time() < deadline:
            time.sleep(0.1)
            st = dom.status()
        assert sum(m["slot_ns"] for m in st["members"]) > 0, st
        for i, p in enumerate(procs):
            rc, out, err = _finish(p)
            assert rc == 0, err[-2000:]
            rep = _report(os.path.join(d, "r%d.json" % i))
            check_mutual_exclusion(rep)
            dm = rep["domain"]
            assert dm["rejoins"] == 1 and dm["agent_lost"] is True and dm["rejoined_at_s"] > dm["agent_lost_at_s"], dm
            assert "taken back by a new agent" in err, err


@harness.nested_stage
def test_sigstopped_member_cannot_keep_a_slot():
    need_kvm()
    # the nested KVM can take more than 5 ms to force an honest vCPU out
    grace = "50000" if harness.nested() else "5000"
    with Domain("stop", pcpus=2, extra=("--slice-us", "5000", "--grace-us", grace)) as dom, \
            tempfile.TemporaryDirectory() as d:
        procs = [dom.member("-c", "2", "--lock", "tas", "--pv-spinlock", "off", "--duration", _dur(3), "--name",
                            "vm%d" % i, json_path=os.path.join(d, "r%d.json" % i)) for i in range(2)]
        _wait_members(dom, 2, procs)
        time.sleep(0.3)
        procs[1].send_signal(signal.SIGSTOP)
        time.sleep(0.3)
        a = dom.status()
        time.sleep(0.5)
        b = dom.status()
        procs[1].send_signal(signal.SIGCONT)
        stopped = next(m for m in b["members"] if m["vm"] == "vm1")
        running = next(m for m in b["members"] if m["vm"] == "vm0")
        # while stopped: nothing held by vm1 past the hard deadline, and vm0 got both slots
        assert stopped["held"] == 0, b
        grew = _slot_ns(b)["vm0"] - _slot_ns(a)["vm0"]
        assert grew > 0.7 * 2 * (b["uptime_ns"] - a["uptime_ns"]), (grew, a, b)
        for i, p in enumerate(procs):
            rc, out, err = _finish(p)
            assert rc == 0, err[-2000:]
            check_mutual_exclusion(_report(os.path.join(d, "r%d.json" % i)))


@harness.nested_stage
def test_weights_one_to_two_give_shares_one_to_two():
    need_kvm()
    # A member behind its share is probed at its slice ends and must answer
    # within the grace, and one ahead is revoked; a reclaimed member loses
    # its lead in vtime. The test asserts that neither honest member was
    # reclaimed, so the shares are the core's; the grace is one an honest
    # member meets on a loaded host. The default 5 ms is not: on a 2-CPU
    # kvm_pvm host running the agent, two members' vCPU, link and loop
    # threads, a release took up to 8.6 ms and a member was reclaimed 4-9
    # times beside ~140 obeyed revokes; the nested KVM is slower still.
    # Reclaim at the hard deadline is the SIGSTOP test's and test_domain_core's.
    grace = "1000000" if harness.nested() else "100000"
    with Domain("weights", pcpus=2, extra=("--grace-us", grace)) as dom, tempfile.TemporaryDirectory() as d:
        procs = [dom.member("-c", "2", "--lock", "tas", "--pv-spinlock", "off", "--duration", _dur(7), "--name",
                            "w%d" % w, "--weight", str(w), json_path=os.path.join(d, "r%d.json" % w))
                 for w in (100, 200)]
        _wait_members(dom, 2, procs)
        time.sleep(0.5)
        a = dom.status()
        time.sleep(2.0)
        b = dom.status()
        for p in procs:
            rc, out, err = _finish(p)
            assert rc == 0, err[-2000:]
        da, db = (_slot_ns(b)[n] - _slot_ns(a)[n] for n in ("w100", "w200"))
        share = db / (da + db)
        assert abs(share - 2 / 3) <= 0.05 * 2 / 3, (da, db, share, b["members"])
        # the one behind was probed and answered: probes, and no reclaim
        assert sum(m["probes"] for m in b["members"]) > 0, b["members"]
        assert all(m["reclaims"] == 0 for m in b["members"]), b["members"]


@harness.nested_stage
def test_policy_changed_live_is_applied_and_marked():
    need_kvm()
    with Domain("live", pcpus=2) as dom, tempfile.TemporaryDirectory() as d:
        j, t = os.path.join(d, "r.json"), os.path.join(d, "t.json")
        p = dom.member("-c", "4", "--lock", "ticket", "--yield", "pv", "--duration", _dur(2), json_path=j, trace=t)
        _wait_members(dom, 1, [p])
        time.sleep(0.3)
        s = dom.vmm("domain", "set", "live", "0", "--yield", "directed", "--weight", "300")
        assert s.returncode == 0 and "changed at" in s.stdout, s
        time.sleep(0.3)
        st = dom.status()
        m = st["members"][0]
        assert m["policy"] == "directed" and m["policy_applied"] and m["weight"] == 300, m
        rc, out, err = _finish(p)
        assert rc == 0, err[-2000:]
        rep = _report(j)
        ch = rep["domain"]["policy_changes"]
        assert len(ch) == 1 and ch[0]["policy"] == "directed" and 0 < ch[0]["at_s"] < 2.5 * _slow(), ch
        wc = rep["domain"]["weight_changes"]
        assert len(wc) == 1 and wc[0]["weight"] == 300 and 0 < wc[0]["at_s"] < 2.5 * _slow(), wc
        assert "weight     300 from" in out or "weight now 300" in err, (out[-1500:], err[-1500:])
        with open(t) as f:
            names = {e.get("name") for e in json.load(f)["traceEvents"]}
        assert "policy changed" in names, sorted(n for n in names if n)[:40]


@harness.nested_stage
def test_seats_go_back_at_their_lease_end():
    """Two members of 4 vCPUs (PV ticket locks, guests that time their
    slices) on 2 slots: each seat goes back by itself at the end of the
    domain's slice it was granted (its lease), at its guest's lock
    boundary, so the agent's revoke is the exception, not the way slots
    change hands."""
    need_kvm()
    args = ("-c", "4", "--lock", "pvticket", "--yield", "pv", "--duration", _dur(2))
    with Domain("lease", pcpus=2) as dom, tempfile.TemporaryDirectory() as d:
        procs = [dom.member(*args, json_path=os.path.join(d, "r%d.json" % i)) for i in range(2)]
        for p in procs:
            rc, out, err = _finish(p)
            assert rc == 0, err[-2000:]
        for i in range(2):
            rep = _report(os.path.join(d, "r%d.json" % i))
            check_mutual_exclusion(rep)
            dm, s = rep["domain"], rep["sched"]
            assert s["lease_ends"] >= 10, (dm, s["lease_ends"])
            assert s["lease_ends"] > dm["revokes"], (dm, s["lease_ends"], s["deferrals"])

@harness.nested_stage
def test_idle_seats_are_kept_while_nobody_waits():
    """A member alone keeps a seat its vCPUs leave idle (a PV wait and its
    kick need no round trip through the agent); with a second member
    waiting, idle seats go back at once."""
    need_kvm()
    args = ("-c", "4", "--lock", "pvticket", "--yield", "pv", "--spin-threshold", "64", "--safe-point", "off",
            "--duration", _dur(1))
    with Domain("keep", pcpus=2) as dom, tempfile.TemporaryDirectory() as d:
        j = os.path.join(d, "alone.json")
        rc, out, err = _finish(dom.member(*args, json_path=j))
        assert rc == 0, err[-2000:]
        alone = _report(j)
        assert alone["sched"]["waits"] > 0, alone["sched"]  # its vCPUs did leave seats idle
        assert alone["domain"]["grants"] <= 4, alone["domain"]
        procs = [dom.member(*args, json_path=os.path.join(d, "r%d.json" % i)) for i in range(2)]
        for p in procs:
            rc, out, err = _finish(p)
            assert rc == 0, err[-2000:]
        both = [_report(os.path.join(d, "r%d.json" % i))["domain"] for i in range(2)]
        assert sum(x["grants"] for x in both) > 8, both


def _threads(pid):
    """{name: (allowed CPUs, voluntary switches)} of a process's threads."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                st = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
        except OSError:
            continue  # ended meanwhile
        allowed = set()
        for part in st["Cpus_allowed_list"].split(","):
            lo, _, hi = part.partition("-")
            allowed |= set(range(int(lo), int(hi or lo) + 1))
        out[st["Name"]] = (allowed, int(st["voluntary_ctxt_switches"]))
    return out


@harness.nested_stage
def test_each_slot_has_a_thread_on_its_cpu_woken_by_its_bell():
    """A member has one thread per domain slot, allowed on that slot's CPU
    and not on the other slot's, and the agent's grants wake it (its
    bell): with two members taking turns on 2 slots, every slot thread
    wakes again and again."""
    need_kvm()
    args = ("-c", "2", "--lock", "tas", "--pv-spinlock", "off", "--duration", _dur(3))
    with Domain("bell", pcpus=2) as dom:
        procs = [dom.member(*args, "--name", "vm%d" % i) for i in range(2)]
        st = _wait_members(dom, 2, procs)
        cpu = {s["slot"]: s["cpu"] for s in st["slots"]}
        time.sleep(1.5 * _slow())
        seen = {m["pid"]: _threads(m["pid"]) for m in dom.status()["members"]}
        for p in procs:
            rc, out, err = _finish(p)
            assert rc == 0, err[-2000:]
    for pid, th in seen.items():
        for s, c in cpu.items():
            name = "vmm-slot%d" % s
            assert name in th, (pid, sorted(th))
            allowed, woke = th[name]
            assert c in allowed and all(cpu[o] not in allowed for o in cpu if cpu[o] != c), (name, allowed, cpu)
            # nothing but its bell (or the stop) wakes a slot thread
            assert woke >= 20, (pid, name, th)

def _seat_rounds(trace_path):
    """A member's rounds from its trace's "slot online"/"slot offline"
    instants (args.other: the seat): a round starts when a seat comes online
    while none is. [(start_ns, ns until a second seat came online, or
    None)]: 0-ish when the domain granted the seats together."""
    with open(trace_path) as f:
        t = json.load(f)
    on, rounds = set(), []
    for e in t["traceEvents"]:
        if e.get("ph") != "i" or e.get("name") not in ("slot online", "slot offline"):
            continue
        seat, at = e["args"]["other"], e["ts"] * 1000
        if e["name"] == "slot offline":
            on.discard(seat)
            continue
        if not on:
            rounds.append([at, None])
        elif rounds[-1][1] is None:
            rounds[-1][1] = at - rounds[-1][0]
        on.add(seat)
    return rounds


def _union_ns(spans, k):
    """How long at least k of the spans overlap (ns)."""
    ev = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans], key=lambda x: (x[0], x[1]))
    n, at, total = 0, 0, 0
    for t, d in ev:
        if n >= k:
            total += t - at
        n += d
        at = t
    return total


def _two_members_together(dom, d, yield_policy):
    """Two members, 4 vCPUs on 2 seats each, on the domain's 2 slots, 1 s:
    per member, the fraction of its rounds (after the first, which starts
    as its vCPUs come up) in which both seats came online within 2 ms of
    each other, and of its running time with 2 vCPUs in guest mode; and
    the domain's max overlap. Checks exits, mutual exclusion, no reclaim."""
    procs = []
    # One start instant, as the bench gives its K processes: a member that
    # starts seconds after the other (an ASan build in the nested KVM) would
    # run mostly alone, keep its seats all along and leave too few rounds.
    at = time.monotonic_ns() + int((1.5e9 if harness.nested() else 0.5e9) * _slow())
    for i in range(2):
        j, t = os.path.join(d, "%s%d.json" % (yield_policy, i)), os.path.join(d, "%s%d.trace" % (yield_policy, i))
        procs.append((dom.member("-c", "4", "--yield", yield_policy, "--lock", "ticket", "--duration", _dur(1),
                                 "--start-at", str(at), "--name", "%s%d" % (yield_policy, i),
                                 json_path=j, trace=t), j, t))
    # the status while both are members: a member's start-up (an ASan
    # build in the nested KVM) can take longer than the first look
    names, deadline = {"%s%d" % (yield_policy, i) for i in range(2)}, time.time() + 20
    time.sleep(0.3)
    st = dom.status()
    while not names <= {m["vm"] for m in st["members"]} and time.time() < deadline:
        time.sleep(0.1)
        st = dom.status()
    text = dom.vmm("domain", "status", dom.name).stdout
    spans, whole, timefrac = [], [], []
    for p, j, t in procs:
        rc, out, err = _finish(p)
        assert rc == 0, (rc, err[-2000:])
        rep = _report(j)
        check_mutual_exclusion(rep)
        assert rep["domain"]["grants"] > 0 and rep["domain"]["agent_lost"] is False, rep["domain"]
        # a vCPU slower than the grace to leave guest mode is reclaimed while
        # still in it: then the bound below need not hold
        assert rep["domain"]["reclaims"] == 0, rep["domain"]
        rounds = _seat_rounds(t)[1:]
        # a gang comes and goes whole, round after round; a plain member
        # may keep one seat or the other all along (few rounds: its seats
        # were not granted as a unit, which is what the plain run shows)
        assert yield_policy != "gang" or len(rounds) >= 4, ("too few rounds to judge", rounds)
        whole.append(sum(1 for _, skew in rounds if skew is not None and skew <= 2e6) / max(len(rounds), 1))
        mine = _running_spans(t)
        timefrac.append(_union_ns(mine, 2) / max(1, _union_ns(mine, 1)))
        spans += mine
    return st, text, whole, timefrac, _max_overlap(spans)


@harness.nested_stage
def test_gang():
    """Two gang members (`--yield gang`) on 2 slots: the domain grants each
    member's two seats together (both come online within 2 ms in nearly
    every round), unlike two plain members on the same domain; still at
    most 2 vCPUs of the domain in guest mode, and mutual exclusion holds."""
    need_kvm()
    # the nested KVM's vCPUs can take 100s of ms to leave guest mode (safe-
    # point deferral included); the grace must not reclaim them meanwhile
    grace = "1000000" if harness.nested() else "50000"
    with Domain("gang", pcpus=2, extra=("--grace-us", grace)) as dom, tempfile.TemporaryDirectory() as d:
        st, text, whole, timefrac, overlap = _two_members_together(dom, d, "gang")
        print("    gang:  rounds started on both seats %s; running time with 2 vCPUs in guest mode %s"
              % (", ".join("%.2f" % w for w in whole), ", ".join("%.2f" % w for w in timefrac)))
        members = [m for m in st["members"] if m["vm"] in ("gang0", "gang1")]
        assert len(members) == 2, st
        assert all(m["gang"] is True and m["policy"] == "gang" for m in members), members
        assert " yes " in text and "gang: its seats are granted together" in text, text
        assert overlap <= 2, ("more than 2 vCPUs of the domain held a slot at once", overlap)
        # In the nested KVM, QEMU's one TCG thread runs the inner host's CPUs
        # in turns of up to milliseconds, so a 2 ms skew is missed more
        # often there under load (0.73 seen in 2 of 4 runs, before and after
        # issue 13's changes); the plain members' contrast below still holds.
        # Under the sanitizers in the nested KVM a member runs several times
        # slower again (0.56 seen in one CI run): the bound is the timing's,
        # the mechanism is the contrast with plain members below.
        bound = 0.75 if not harness.nested() else 0.5 if os.environ.get("VMM_SANITIZED") == "1" else 0.65
        assert sum(whole) / 2 >= bound, whole
        # the same domain with plain members: seats come and go one by one
        st, text, plain, ptime, overlap = _two_members_together(dom, d, "none")
        print("    plain: rounds started on both seats %s; running time with 2 vCPUs in guest mode %s"
              % (", ".join("%.2f" % w for w in plain), ", ".join("%.2f" % w for w in ptime)))
        assert all(m["gang"] is False for m in st["members"] if m["vm"] in ("none0", "none1")), st
        assert overlap <= 2, ("more than 2 vCPUs of the domain held a slot at once", overlap)
        assert sum(plain) / 2 < sum(whole) / 2 - 0.2, (plain, whole)



def _pair_with_2ms_slices(dom, d, tag, seconds, *extra):
    """Two members, 4 vCPUs, ticket, `--yield pv`, 2 ms slices, one start
    instant: [(report, trace events)], each checked for a clean exit and
    mutual exclusion."""
    at = time.monotonic_ns() + int((1.5e9 if harness.nested() else 0.5e9) * _slow())
    procs = []
    for i in range(2):
        j, t = os.path.join(d, "%s%d.json" % (tag, i)), os.path.join(d, "%s%d.trace" % (tag, i))
        procs.append((dom.member("-c", "4", "--lock", "ticket", "--yield", "pv", "--slice-us", "2000", *extra,
                                 "--duration", _dur(seconds), "--start-at", str(at), "--name", "%s%d" % (tag, i),
                                 json_path=j, trace=t), j, t))
    out = []
    for p, j, t in procs:
        rc, _, err = _finish(p)
        assert rc == 0, (rc, err[-2000:])
        rep = _report(j)
        check_mutual_exclusion(rep)
        with open(t) as f:
            out.append((rep, json.load(f)["traceEvents"]))
    return out


@harness.nested_stage
def test_slice_floor_lets_the_revoke_end_a_seats_slice():
    """With the slice floor (a member's default), while another member
    waits, a member's slices last the domain's slice + grace, so the
    domain's revoke is a seat's one switch: members with 2 ms slices on a
    10 ms domain slice end hardly any slice of their own (without the
    floor: about 4 per grant). The trace marks the floor coming and going;
    with `--slice-floor off` there is no floor."""
    need_kvm()
    grace_us = 1000000 if harness.nested() else 5000
    with Domain("floor", pcpus=2, extra=("--slice-us", "10000", "--grace-us", str(grace_us))) as dom, \
            tempfile.TemporaryDirectory() as d:
        for rep, events in _pair_with_2ms_slices(dom, d, "f", 1):
            s, dm = rep["sched"], rep["domain"]
            print("    grants %d, slices ended by the guest %d, preemptions %d (spun past its own slice %d,"
                  " lock drains %d)" % (dm["grants"], s["guest_slice_yields"], s["preemptions"], s["floor_spin_ends"],
                                        s["lock_drains"]))
            assert dm["grants"] >= 5, dm
            # its own 2 ms slices would end ~4 times per 10 ms grant (a
            # guest's yield at its seat's lease end is the domain's switch)
            assert s["guest_slice_yields"] - s["lease_ends"] < dm["grants"], (s, dm)
            floors = [e["args"]["other"] for e in events if e.get("name", "").startswith("slice floor")]
            assert (10000 + grace_us) in floors, floors[:10]
        # off: no floor, ever
        for rep, events in _pair_with_2ms_slices(dom, d, "n", 0.5, "--slice-floor", "off"):
            assert rep["domain"]["grants"] > 0 and rep["sched"]["floor_spin_ends"] == 0, rep["domain"]
            assert not any(e.get("name", "").startswith("slice floor") for e in events), "a floor while off"


# ---- kernel-enforced confinement (vmm/domain/confine.h) ----

def _agent_confinement(extra, affinity):
    """A domain started with --confine cgroup: (Domain, None), or (None, why)."""
    try:
        return Domain("cg", pcpus=1, extra=("--confine", "cgroup", *extra), affinity=affinity), None
    except AssertionError as e:
        return None, str(e)[-300:]


def _cgroup_of(pid):
    """{hierarchy (controllers, '' for v2): path} from /proc/PID/cgroup."""
    with open("/proc/%d/cgroup" % pid) as f:
        return {c: path for _, c, path in (line.rstrip("\n").split(":", 2) for line in f)}


def _read(path):
    with open(path) as f:
        return f.read().strip()


@harness.nested_stage
def test_members_are_confined_by_cgroups_where_the_host_lets_the_agent():
    """`--confine cgroup`: the agent, pinned to one CPU and serving a
    one-CPU domain there, puts each member's process into a cgroup of its
    own under the domain's: every member thread may run on that CPU only
    and cannot be moved off it (even by root: the cpuset bounds
    sched_setaffinity), its CPU weight is its --weight and follows `vmm
    domain set`, and its cgroup goes when it ends. The same members of a
    `--confine self` domain can be moved (the cgroup is what confines).
    Where the host has cgroup v1 or v2 with cpu and cpuset (root), else
    skipped; where no hierarchy has them free, a cgroup2 of the test's own
    is mounted (the nested KVM's Linux), so both versions are exercised."""
    need_kvm()
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise harness.Skip("needs 2 CPUs: one for the domain, one to try to move a member to")
    here, other = cpus[0], cpus[1]
    mnt = None
    dom, why = _agent_confinement((), {here})
    if dom is None and os.geteuid() == 0:
        mnt = tempfile.mkdtemp()
        if subprocess.run(["mount", "-t", "cgroup2", "none", mnt], capture_output=True).returncode:
            os.rmdir(mnt)
            mnt = None
        else:
            dom, why = _agent_confinement((), {here})
    try:
        if dom is None:
            raise harness.Skip("no cgroup the agent can confine members in: " + why)
        with dom, tempfile.TemporaryDirectory() as d:
            line = dom.ready_line
            conf = line.split("confinement: ", 1)[-1].strip()
            m = re.fullmatch(r"cgroup v([12]) (.+)", conf)
            assert m, line
            version, where = m.group(1), m.group(2).split(", ")
            top = where[0]  # v1: the cpuset's, then the cpu hierarchy's
            assert top.endswith("/vmm-domain@cg@%d" % dom.p.pid), line
            assert dom.status()["confinement"].startswith("cgroup v" + version), dom.status()
            args = ("-c", "2", "--lock", "tas", "--pv-spinlock", "off", "--duration", _dur(4))
            procs = [dom.member(*args, "--name", "vm%d" % i, "--weight", str(100 * (i + 1)),
                                json_path=os.path.join(d, "r%d.json" % i)) for i in range(2)]
            st = _wait_members(dom, 2, procs)
            time.sleep(0.5 * _slow())
            pids = {mem["vm"]: mem["pid"] for mem in st["members"]}
            dirs = {}
            for vm, pid in pids.items():
                groups = _cgroup_of(pid)
                mine = "vmm-domain@cg@%d/pid-%d" % (dom.p.pid, pid)
                if version == "2":
                    assert groups.get("", "").endswith(mine), groups
                    dirs[vm] = os.path.join(top, "pid-%d" % pid)
                else:
                    cs = [p for c, p in groups.items() if "cpuset" in c.split(",")]
                    cu = [p for c, p in groups.items() if "cpu" in c.split(",")]
                    assert cs and cs[0].endswith(mine) and cu and cu[0].endswith(mine), groups
                    dirs[vm] = os.path.join(where[1], "pid-%d" % pid)
                for name, (allowed, _) in _threads(pid).items():
                    assert allowed == {here}, (vm, name, allowed)
                tid = int(sorted(os.listdir("/proc/%d/task" % pid))[-1])
                try:
                    os.sched_setaffinity(tid, {other})
                    moved = True
                except OSError:
                    moved = False
                assert not moved, (vm, tid, "moved off the domain's cpuset")
            weight = lambda vm: _read(os.path.join(dirs[vm], "cpu.weight" if version == "2" else "cpu.shares"))
            assert (weight("vm0"), weight("vm1")) == (("100", "200") if version == "2" else ("1024", "2048"))
            p = dom.vmm("domain", "set", "cg", "pid:%d" % pids["vm0"], "--weight", "300")
            assert p.returncode == 0, p.stderr
            assert weight("vm0") == ("300" if version == "2" else "3072")
            for i, p in enumerate(procs):
                rc, out, err = _finish(p)
                assert rc == 0, err[-2000:]
                check_mutual_exclusion(_report(os.path.join(d, "r%d.json" % i)))
            deadline = time.time() + 5
            while time.time() < deadline and any(os.path.exists(x) for x in dirs.values()):
                time.sleep(0.05)
            assert not any(os.path.exists(x) for x in dirs.values()), dirs
            rc, err = dom.stop()
            assert rc == 0, err
            assert not any(os.path.exists(x) for x in where), where
        # the control: without the cgroup a member thread can be moved
        with Domain("self", pcpus=1, extra=("--confine", "self"), affinity={here}) as plain:
            assert "confinement: self (not enforced: --confine self)" in plain.ready_line, plain.ready_line
            p = plain.member("-c", "1", "--duration", _dur(3))
            pid = _wait_members(plain, 1, [p])["members"][0]["pid"]
            tid = int(sorted(os.listdir("/proc/%d/task" % pid))[-1])
            os.sched_setaffinity(tid, {other})
            assert os.sched_getaffinity(tid) == {other}
            rc, out, err = _finish(p)
            assert rc == 0, err[-2000:]
    finally:
        if mnt:
            subprocess.run(["umount", mnt])
            os.rmdir(mnt)

