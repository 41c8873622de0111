"""A one-node Slurm for the tests: its own munged, slurmctld and slurmd,
configured and kept in a temp dir, on free ports. The system's /etc/slurm,
/etc/munge and any munged already running are never touched.

    with cluster.Cluster() as c:
        subprocess.run(["sbatch", ...], env=c.env)

Unavailable: Slurm or munge is not installed and cannot be (not root, no
apt); the caller skips. A daemon that does not come up is a RuntimeError
with its log's tail. VMM_SLURM_KEEP=1 keeps the temp dir (conf, logs) for
a look afterwards. `python3 tests/slurm/cluster.py` brings it up, prints
how long that took and sinfo, and stops it."""
import atexit
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "sinfo", "scancel", "scontrol")
UP_TIMEOUT_S = 60


class Unavailable(Exception):
    """Slurm cannot be installed here."""


def _which(name):
    # the daemons are in sbin, which a non-login PATH may lack
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def ensure_installed():
    """Installs Debian's slurm-wlm and munge when missing (tests/deps.sh:
    apt-get as root, otherwise one line saying what to run)."""
    if all(_which(n) for n in DAEMONS + CLIENTS):
        return
    p = subprocess.run(["sh", os.path.join(ROOT, "tests", "deps.sh"), "slurm-wlm", "munge"],
                       capture_output=True, text=True, timeout=900)
    missing = [n for n in DAEMONS + CLIENTS if not _which(n)]
    if p.returncode or missing:
        why = p.stderr.strip().splitlines()[-1:] or [f"missing {' '.join(missing)}"]
        raise Unavailable(f"Slurm is not installed and could not be: {why[0]}")


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node_line():
    """This machine as slurmd sees it (CPUs, topology, RealMemory): a node
    configured bigger than it is would be drained, smaller would waste it."""
    p = subprocess.run([_which("slurmd"), "-C"], capture_output=True, text=True, timeout=30)
    for line in p.stdout.splitlines():
        if line.startswith("NodeName="):
            return line.split(None, 1)[1]
    mem_kb = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    return f"CPUs={len(os.sched_getaffinity(0))} RealMemory={mem_kb // 1024}"


def _tail(path, lines=25):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return f"({path}: {e.strerror})"


def _prepare_nested_host():
    """The nested KVM's inner host (tests/nested/run) is a throwaway VM made
    for the tests, bare where slurmd 22.05 needs more: its cgroup plugin
    wants a cgroup hierarchy named systemd (none is mounted there), and its
    getaddrinfo(AI_ADDRCONFIG) finds no address while the host has only
    127.0.0.1 (glibc does not count it): give lo a second one. Nowhere but
    there does the cluster touch the host."""
    if not os.environ.get("VMM_NESTED"):
        return
    if not os.path.isdir("/sys/fs/cgroup/systemd"):
        for cmd in (["mount", "-t", "tmpfs", "-o", "mode=755", "cgroup", "/sys/fs/cgroup"],
                    ["mkdir", "-p", "/sys/fs/cgroup/systemd"],
                    ["mount", "-t", "cgroup", "-o", "none,name=systemd", "cgroup",
                     "/sys/fs/cgroup/systemd"]):
            subprocess.run(cmd, check=True, timeout=30)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True, timeout=30)
    a = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, timeout=30)
    if "127.0.0.2/" not in a.stdout:
        subprocess.run(["ip", "addr", "add", "127.0.0.2/8", "dev", "lo"], check=True, timeout=30)


class Cluster:
    """One slurmctld and one slurmd (node `hostname -s`) on localhost."""

    def __init__(self, task_plugin="task/affinity"):
        self.task_plugin = task_plugin
        self.dir = None
        self.procs = {}
        self.env = None
        self.up_s = None

    # ---- files ----

    def _path(self, *p):
        return os.path.join(self.dir, *p)

    def _write_key(self):
        key = self._path("munge", "munge.key")
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(1024))
        return key

    def _write_conf(self):
        # the nested KVM's inner host is "(none)": no name slurm.conf takes
        # root as we run here; another user runs a cluster of its own jobs
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.node = socket.gethostname().split(".")[0]
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9-]*", self.node):
            self.node = "vmmnode"
        self.ports = (_free_port(), _free_port())
        d = self._path
        conf = f"""# generated by tests/slurm/cluster.py
ClusterName=vmmtest
SlurmctldHost=localhost
SlurmctldPort={self.ports[0]}
SlurmdPort={self.ports[1]}
SlurmUser={self.user}
SlurmdUser={self.user}
AuthType=auth/munge
AuthInfo=socket={d("munge", "munge.socket")}
CredType=cred/munge
StateSaveLocation={d("state")}
SlurmdSpoolDir={d("spool")}
SlurmctldPidFile={d("slurmctld.pid")}
SlurmdPidFile={d("slurmd.pid")}
SlurmctldLogFile={d("log", "slurmctld.log")}
SlurmdLogFile={d("log", "slurmd.log")}
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin={self.task_plugin}
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SchedulerParameters=sched_min_interval=0,batch_sched_delay=0
ReturnToService=2
MpiDefault=none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
PlugStackConfig={d("plugstack.conf")}
InactiveLimit=0
KillWait=5
MinJobAge=2
NodeName={self.node} NodeAddr=127.0.0.1 NodeHostname=localhost {_node_line()} State=UNKNOWN
PartitionName=vmmtest Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
        with open(d("slurm.conf"), "w") as f:
            f.write(conf)
        # no SPANK plugins: the system's plugstack.conf is not ours to read
        open(d("plugstack.conf"), "w").close()
        return d("slurm.conf")

    # ---- daemons ----

    def _start(self, name, argv):
        log = open(self._path("log", f"{name}.out"), "w")
        env = dict(self.env, VMM_SLURM_CLUSTER=self.dir)
        self.procs[name] = (subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, env=env,
                                             start_new_session=True), log)

    def _died(self, name):
        p, _ = self.procs[name]
        if p.poll() is None:
            return None
        return (f"{name} exited with status {p.returncode}:\n{_tail(self._path('log', name + '.out'))}"
                f"{_tail(self._path('log', name + '.log'))}")

    def _wait(self, what, ok, names, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if ok():
                return
            for n in names:
                why = self._died(n)
                if why:
                    raise RuntimeError(f"slurm test cluster: {why}")
            time.sleep(0.2)
        logs = "".join(f"--- {n}:\n{_tail(self._path('log', n + '.out'))}{_tail(self._path('log', n + '.log'))}"
                       for n in names)
        raise RuntimeError(f"slurm test cluster: {what} not within {timeout}s\n{logs}")

    def node_state(self):
        p = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True,
                           env=self.env, timeout=30)
        return p.stdout.strip() if p.returncode == 0 else None

    def start(self):
        ensure_installed()
        _prepare_nested_host()
        t0 = time.monotonic()
        self.dir = tempfile.mkdtemp(prefix="vmm-slurm.")
        # a test runner that exits without unwinding (sys.exit in a signal
        # handler, an error in __exit__'s caller) still stops the daemons
        atexit.register(self.stop)
        # munged wants its socket's folders searchable by all (clients of
        # any user); the key stays 0400, the state 0700
        os.chmod(self.dir, 0o755)
        for sub, mode in (("munge", 0o755), ("state", 0o700), ("spool", 0o755), ("log", 0o755)):
            os.makedirs(self._path(sub))
            os.chmod(self._path(sub), mode)
        key = self._write_key()
        conf = self._write_conf()
        self.env = dict(os.environ, SLURM_CONF=conf)
        self.env["PATH"] = self.env.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"
        for v in ("SLURM_JOB_ID", "SLURM_JOBID", "SBATCH_PARTITION", "SBATCH_ACCOUNT"):
            self.env.pop(v, None)  # from a Slurm job around us: not this cluster's
        sock = self._path("munge", "munge.socket")
        self._start("munged", [_which("munged"), "-F", "--key-file", key, "--socket", sock,
                               "--pid-file", self._path("munge", "munged.pid"),
                               "--log-file", self._path("log", "munged.log"),
                               "--seed-file", self._path("munge", "munged.seed")])
        self._wait("munged's socket", lambda: os.path.exists(sock), ["munged"], 20)
        self._start("slurmctld", [_which("slurmctld"), "-D", "-i", "-f", conf])
        # -N: the node is ours by name, whatever this host calls itself
        self._start("slurmd", [_which("slurmd"), "-D", "-N", self.node, "-f", conf])
        self._wait("the node idle in sinfo", lambda: self.node_state() == "idle",
                   ["munged", "slurmctld", "slurmd"], UP_TIMEOUT_S)
        self.up_s = time.monotonic() - t0
        return self

    def _marked(self):
        """Processes started from our daemons (slurmstepd and the job
        steps they left behind) carry VMM_SLURM_CLUSTER=our dir."""
        mark = f"VMM_SLURM_CLUSTER={self.dir}".encode()
        pids = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if mark in f.read().split(b"\0"):
                        pids.append(int(pid))
            except OSError:
                pass
        return pids

    def stop(self):
        """Cancels what is left, stops the daemons (slurmd, slurmctld,
        munged: each by its pid, waited for), and removes the temp dir."""
        if self.dir is None:
            return
        if "slurmctld" in self.procs and self.procs["slurmctld"][0].poll() is None:
            subprocess.run(["scancel", "--full", "-u", self.user], env=self.env, capture_output=True,
                           timeout=30)
            end = time.monotonic() + 15
            while time.monotonic() < end:
                q = subprocess.run(["squeue", "-h"], env=self.env, capture_output=True, text=True,
                                   timeout=30)
                if q.returncode or not q.stdout.strip():
                    break
                time.sleep(0.3)
        for name in ("slurmd", "slurmctld", "munged"):
            if name not in self.procs:
                continue
            p, log = self.procs.pop(name)
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=10)
            log.close()
        for pid in self._marked():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if not os.environ.get("VMM_SLURM_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None
        atexit.unregister(self.stop)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()


if __name__ == "__main__":
    # by hand: bring the cluster up, say how long it took, show sinfo, stop
    with Cluster() as c:
        print(f"up in {c.up_s:.2f}s in {c.dir}")
        subprocess.run(["sinfo"], env=c.env)
