"""The domain as a host service other users cannot subvert (issue 31,
SECURITY.md "Who may do what"): every forbidden action tried, as another
uid (setpriv to nobody) or a rogue client, and seen refused with nothing
else lost. No KVM needed: the agent and its clients are plain processes.

- the runtime directory: one owned by another user, one others may write,
  another user's symbolic link on the way, a planted pid-file link; the
  per-user fallback /tmp/vmm-UID pre-created by someone else;
- the agent's identity: a socket whose listener is another uid is not
  dialled (SO_PEERCRED);
- who may do what: `set` by another uid, a member raising its own weight, a
  JOIN above the default weight from another uid;
- limits per client: a connection that never joins, connections past the
  per-uid bound, a doorbell flood, req words that fit nothing."""
import json
import mmap
import os
import socket
import struct
import subprocess
import tempfile
import time

import harness
from test_domain import HDR, JOIN_OK, ERROR, STATUS, SET, Domain, _hdr, _join

NOBODY = 65534
HOST_ERROR = 6
EPERM, EUSERS, EDQUOT = 1, 87, 122


def _need_root():
    if os.geteuid() != 0:
        raise harness.Skip("needs root, to act as another uid")


def _as_nobody(cmd):
    return ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"] + list(cmd)


def _start(base, name="g", extra=(), user=None):
    env = dict(os.environ, VMM_DOMAIN_DIR=base)
    cmd = [harness.vmm_path(), "domain", "start", name, "--pcpus", "1", "--confine", "self", *extra]
    return subprocess.run(_as_nobody(cmd) if user == NOBODY else cmd, capture_output=True, text=True, timeout=30,
                          env=env)


def _error_code(reply):
    magic, ver, typ, length, _ = struct.unpack(HDR, reply[:16])
    assert typ == ERROR, (typ, reply[:32])
    return struct.unpack("<i", reply[16:20])[0]


def _status_as(dom, user=None):
    cmd = [harness.vmm_path(), "domain", "status", dom.name, "--json"]
    p = subprocess.run(_as_nobody(cmd) if user == NOBODY else cmd, capture_output=True, text=True, timeout=30,
                       env=dom.env)
    return p


def _set_msg(member, weight, pid=0):
    body = struct.pack("<iiII32s", member, pid, 1, weight, b"")
    return _hdr(SET, 16 + len(body)) + body


def _shared_domain(name, extra=()):
    """A root agent whose group is nobody's, in a directory nobody may enter."""
    dom = Domain(name, pcpus=2, extra=("--confine", "self", "--group", str(NOBODY), *extra))
    os.chmod(dom.dir, 0o755)
    return dom


def _join_member(dom, weight=100):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(dom.sock)
    s.send(_join(weight=weight))
    msg, fds, _, _ = socket.recv_fds(s, 4096, 3)
    assert struct.unpack(HDR, msg[:16])[2] == JOIN_OK and len(fds) == 3, msg[:32]
    return s, fds


def _run_nobody_client(dom, script):
    """A Python client as nobody: prints one JSON line of what it saw."""
    p = subprocess.run(_as_nobody(["python3", "-c", script, dom.sock]), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


# ---- the runtime directory ----

def test_a_directory_another_user_owns_or_may_write_is_refused():
    _need_root()
    with tempfile.TemporaryDirectory() as t:
        for case in ("owned", "writable", "link"):
            base = os.path.join(t, case)
            if case == "owned":
                os.mkdir(base)
                os.chown(base, NOBODY, NOBODY)
                words = "is owned by uid %d" % NOBODY
            elif case == "writable":
                os.mkdir(base)
                os.chmod(base, 0o777)  # writable, not sticky
                words = "writable by its group or others"
            else:
                real = os.path.join(t, "real")
                os.makedirs(real, exist_ok=True)
                os.symlink(real, base)
                os.lchown(base, NOBODY, NOBODY)
                words = "symbolic link owned by uid %d" % NOBODY
            p = _start(base)
            assert p.returncode == HOST_ERROR, (case, p.returncode, p.stderr)
            assert words in p.stderr and len(p.stderr.strip().splitlines()) == 1, (case, p.stderr)
            st = subprocess.run([harness.vmm_path(), "domain", "status", "g"], capture_output=True, text=True,
                                timeout=30, env=dict(os.environ, VMM_DOMAIN_DIR=base))
            assert st.returncode != 0 and words in st.stderr, (case, st.stderr)
            assert not os.path.exists(os.path.join(base, "g")), "created something in a directory it refused"


def test_a_planted_pid_file_link_truncates_nothing():
    _need_root()
    with tempfile.TemporaryDirectory() as t:
        victim = os.path.join(t, "victim")
        with open(victim, "w") as f:
            f.write("keep me\n")
        os.makedirs(os.path.join(t, "base", "g"))
        os.symlink(victim, os.path.join(t, "base", "g", "agent.pid"))
        p = _start(os.path.join(t, "base"))
        assert p.returncode == HOST_ERROR and "agent.pid" in p.stderr, (p.returncode, p.stderr)
        with open(victim) as f:
            assert f.read() == "keep me\n", "the agent wrote through a link"
        stop = subprocess.run([harness.vmm_path(), "domain", "stop", "g"], capture_output=True, text=True,
                              timeout=30, env=dict(os.environ, VMM_DOMAIN_DIR=os.path.join(t, "base")))
        assert stop.returncode == 2 and "no domain 'g' is running" in stop.stderr, stop.stderr


def test_the_per_user_fallback_made_by_someone_else_is_refused():
    """As nobody without XDG_RUNTIME_DIR or VMM_DOMAIN_DIR the directory is
    /tmp/vmm-65534/domain: pre-created by another uid, it is refused; made
    by the agent itself, it serves."""
    _need_root()
    fallback = "/tmp/vmm-%d" % NOBODY
    if os.path.lexists(fallback):
        raise harness.Skip("%s exists already" % fallback)
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "VMM_DOMAIN_DIR")}
    cmd = _as_nobody([harness.vmm_path(), "domain", "start", "fb", "--pcpus", "1", "--confine", "self"])
    try:
        os.mkdir(fallback)
        os.chown(fallback, NOBODY - 1, NOBODY - 1)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30, env=env)
        assert p.returncode == HOST_ERROR and "is owned by uid %d" % (NOBODY - 1) in p.stderr, p.stderr
        os.rmdir(fallback)
        agent = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        line = agent.stdout.readline()
        assert "socket %s/domain/fb/ctl.sock" % fallback in line, (line, agent.stderr.read() if agent.poll() else "")
        st = os.lstat(fallback)
        assert st.st_uid == NOBODY and not st.st_mode & 0o022, oct(st.st_mode)
        assert os.stat(fallback + "/domain/fb").st_mode & 0o777 == 0o750
        agent.terminate()
        agent.communicate(timeout=20)
    finally:
        subprocess.run(["rm", "-rf", fallback])


def test_an_agent_socket_held_by_another_uid_is_not_dialled():
    """The directory is root's, but the listener is nobody's (SO_PEERCRED
    names whoever called listen): status refuses to talk to it."""
    _need_root()
    with tempfile.TemporaryDirectory() as t:
        os.chmod(t, 0o755)
        d = os.path.join(t, "g")
        os.mkdir(d, 0o750)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.bind(os.path.join(d, "ctl.sock"))
        listener = subprocess.Popen(_as_nobody(["python3", "-c",
                                                "import socket,sys,time\n"
                                                "s=socket.socket(fileno=3)\ns.listen(4)\nprint('up',flush=True)\n"
                                                "time.sleep(30)"]),
                                    pass_fds=(s.fileno(),), stdout=subprocess.PIPE, text=True)
        try:
            # pass_fds keeps the number; the child's fd 3 is the bound socket
            assert listener.stdout.readline().strip() == "up"
        except AssertionError:
            listener.kill()
            raise
        try:
            p = subprocess.run([harness.vmm_path(), "domain", "status", "g"], capture_output=True, text=True,
                               timeout=30, env=dict(os.environ, VMM_DOMAIN_DIR=t))
            assert p.returncode == HOST_ERROR, (p.returncode, p.stderr)
            assert "of uid %d, not by root" % NOBODY in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
        finally:
            listener.kill()
            listener.wait()
            s.close()


def test_a_wedged_agent_cannot_hang_a_client():
    """A listener that takes connections and never answers (a stopped or
    wedged agent): status gives up after its bound (DOM_DIAL_TIMEOUT_S,
    5 s) with one line, not never."""
    with tempfile.TemporaryDirectory() as t:
        os.mkdir(os.path.join(t, "g"), 0o750)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.bind(os.path.join(t, "g", "ctl.sock"))
        s.listen(4)
        try:
            t0 = time.monotonic()
            p = subprocess.run([harness.vmm_path(), "domain", "status", "g"], capture_output=True, text=True,
                               timeout=60, env=dict(os.environ, VMM_DOMAIN_DIR=t))
            took = time.monotonic() - t0
        finally:
            s.close()
        assert p.returncode == HOST_ERROR and "no answer from the agent" in p.stderr, (p.returncode, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and 4.0 < took < 30.0, (took, p.stderr)


# ---- who may do what ----

def test_set_is_for_the_owner_and_a_member_cannot_raise_its_own_weight():
    _need_root()
    with _shared_domain("who") as dom:
        s, fds = _join_member(dom, weight=100)
        try:
            # another uid: status yes, set no
            st = _status_as(dom, NOBODY)
            assert st.returncode == 0 and len(json.loads(st.stdout)["members"]) == 1, st.stderr
            seen = _run_nobody_client(dom, _CLIENT + "out=ask(_set(0, 5000))\nprint(json.dumps(out))\n")
            assert seen["type"] == ERROR and seen["code"] == -EPERM and "only the domain's owner" in seen["why"], seen
            # the member's own process: lower yes, raise no
            own = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            own.settimeout(5)
            own.connect(dom.sock)
            own.send(_set_msg(0, 500))
            reply = own.recv(4096)
            assert _error_code(reply) == -EPERM and b"cannot raise its own weight" in reply, reply
            own.close()
            p = dom.vmm("domain", "set", "who", "0", "--weight", "50")
            # `vmm domain set` is another process of the owner: allowed
            assert p.returncode == 0, p.stderr
            m = dom.status()["members"][0]
            assert m["weight"] == 50, m
            st = dom.status()
            assert st["refused"] >= 2, st
        finally:
            s.close()
            for fd in fds:
                os.close(fd)


def test_another_uid_joins_at_most_at_the_default_weight():
    _need_root()
    with _shared_domain("wjoin") as dom:
        over = _run_nobody_client(dom, _CLIENT + "out=ask(_join(101))\nprint(json.dumps(out))\n")
        assert over["type"] == ERROR and over["code"] == -EPERM and "above 100" in over["why"], over
        ok = _run_nobody_client(dom, _CLIENT + "out=ask(_join(100))\nprint(json.dumps(out))\n")
        assert ok["type"] == JOIN_OK, ok
        assert dom.p.poll() is None


# ---- limits per client ----

def test_a_connection_that_never_joins_is_closed():
    with Domain("idle", pcpus=1, extra=("--confine", "self")) as dom:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(15)
        t0 = time.monotonic()
        s.connect(dom.sock)
        assert s.recv(100) == b"", "the agent must close an idle connection"
        took = time.monotonic() - t0
        s.close()
        st = dom.status()
        assert st["guard"]["timed_out"] == 1 and 2.0 < took < 12.0, (st["guard"], took)


def test_connections_past_the_per_uid_bound_are_refused():
    _need_root()
    with _shared_domain("conns", extra=("--uid-conns", "3")) as dom:
        seen = _run_nobody_client(dom, _CLIENT +
                                  "ss=[]\nfor i in range(3):\n"
                                  "    x=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET); x.settimeout(5)\n"
                                  "    x.connect(sys.argv[1]); ss.append(x)\n"
                                  "print(json.dumps(ask(None)))\n")
        assert seen["type"] == ERROR and seen["code"] == -EUSERS and "its bound" in seen["why"], seen
        # vmm's own client, as nobody, while nobody holds its 3: it sends at
        # once, so its request may cross the agent's close; it still says why
        holder = subprocess.Popen(_as_nobody(["python3", "-c",
                                              "import socket,sys,time\nss=[]\nfor i in range(3):\n"
                                              "    x=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET)\n"
                                              "    x.connect(sys.argv[1]); ss.append(x)\n"
                                              "print('held',flush=True)\ntime.sleep(20)", dom.sock]),
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "held"
            for _ in range(5):
                p = _status_as(dom, NOBODY)
                assert p.returncode != 0 and "its bound" in p.stderr, (p.returncode, p.stderr)
        finally:
            holder.kill()
            holder.wait()
        # root is not bounded, and the agent served on
        many = []
        for _ in range(5):
            x = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            x.connect(dom.sock)
            many.append(x)
        st = dom.status()
        assert st["guard"]["over_uid_conns"] == 6 and st["guard"]["uid_conns"] == 3, st["guard"]
        for x in many:
            x.close()


def _member_words(fds):
    req = mmap.mmap(fds[0], os.fstat(fds[0]).st_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    return req, fds[2]


def test_a_doorbell_flood_ejects_the_member_and_frees_its_slots():
    with Domain("flood", pcpus=2, extra=("--confine", "self")) as dom:
        s, fds = _join_member(dom)
        req, bell = _member_words(fds)
        try:
            # ask for a slot honestly first: the seat holds it
            struct.pack_into("<I", req, 64, 1 << 2 | 1)
            os.write(bell, struct.pack("<Q", 1))
            time.sleep(0.2)
            t0 = time.monotonic()
            try:
                while time.monotonic() - t0 < 3:
                    for _ in range(1000):
                        os.write(bell, struct.pack("<Q", 1))
            except OSError:
                pass
            reply = s.recv(4096)
            assert _error_code(reply) == -EDQUOT and b"rang its doorbell" in reply, reply
            assert s.recv(100) == b""
            st = dom.status()
            assert st["members"] == [] and all(sl["member"] is None for sl in st["slots"]), st
            assert st["guard"]["ejected_bells"] == 1 and dom.p.poll() is None, st["guard"]
        finally:
            req.close()
            s.close()
            for fd in fds:
                os.close(fd)


def test_req_words_that_fit_nothing_past_the_bound_eject_the_member():
    with Domain("words", pcpus=2, extra=("--confine", "self")) as dom:
        s, fds = _join_member(dom)
        req, bell = _member_words(fds)
        try:
            # one change a ring, given time to be read: each is one bad word
            s.setblocking(False)
            reply, i, t0 = b"", 0, time.monotonic()
            while not reply and time.monotonic() - t0 < 20:
                for seat in range(2):
                    struct.pack_into("<I", req, 64 * (1 + seat), (0x1234 + i * 2 + seat) << 2 | 3)
                i += 1
                try:
                    os.write(bell, struct.pack("<Q", 1))
                except OSError:
                    pass
                time.sleep(0.002)
                try:
                    reply = s.recv(4096)
                except BlockingIOError:
                    pass
            assert _error_code(reply) == -EDQUOT and b"fit nothing" in reply, (i, reply)
            assert i >= 256 // 2, "ejected before its bound: %d rings" % i
            st = dom.status()
            assert st["members"] == [] and st["guard"]["ejected_words"] == 1, st
        finally:
            req.close()
            s.close()
            for fd in fds:
                os.close(fd)


# A client run as nobody (setpriv): the wire format again, standalone.
_CLIENT = r'''
import json, socket, struct, sys
HDR = "<IHHII"
def _hdr(t, n): return struct.pack(HDR, 0x444D4D56, 1, t, n, 0)
def _join(w):
    b = struct.pack("<IIII32s32s", 1, 1, w, 0, b"pv", b"nobody")
    return _hdr(1, 16 + len(b)) + b
def _set(m, w):
    b = struct.pack("<iiII32s", m, 0, 1, w, b"")
    return _hdr(6, 16 + len(b)) + b
def ask(msg):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.settimeout(5)
    s.connect(sys.argv[1])
    if msg:  # None: refused at accept, the error comes unasked (sending could race the close into a reset)
        s.send(msg)
    r = s.recv(4096)
    t = struct.unpack(HDR, r[:16])[2]
    if t == 8:
        code = struct.unpack("<i", r[16:20])[0]
        return {"type": t, "code": code, "why": r[24:].split(b"\0")[0].decode(errors="replace")}
    return {"type": t}
'''
