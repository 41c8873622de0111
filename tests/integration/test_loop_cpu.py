"""--loop-cpu (issue 13): where the event loop thread (the main thread:
the scheduler's tick, the devices) runs. auto pins it to a CPU no slot uses
when the process may use one, else leaves it unpinned and says why; none
never pins; N pins to CPU N, and a CPU the process may not use is exit 2.
The report's event_loop.cpu is read back from the thread; here it is also
read from outside (/proc/PID/task/TID/status) while the guest runs."""
import os
import subprocess
import tempfile
import time

import harness
from harness import need_kvm, vmm, vmm_without_kvm

USAGE = 2


def _allowed():
    return sorted(os.sched_getaffinity(0))


def _need_two_cpus():
    cpus = _allowed()
    if len(cpus) < 2:
        raise harness.Skip(f"needs 2 CPUs this process may use, has {cpus}")
    return cpus


def _cpu_list(cpus):
    """Cpus_allowed_list's form: "0-1,4"."""
    out, cpus = [], sorted(cpus)
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def _loop(rep):
    return rep["event_loop"]


def _run(*args):
    need_kvm()
    r = vmm("-c", "2", "--duration", "200ms", "-q", *args)
    assert r.rc == 0, r
    return r


def test_loop_cpu_that_this_process_may_not_use_is_exit_2():
    """Refused before KVM is opened, in one line; and a word that is not a
    CPU is refused by the parser."""
    bad = next(c for c in range(99, 1024) if c not in os.sched_getaffinity(0))
    for arg, says in ((str(bad), f"--loop-cpu: CPU {bad} is not one this process may use"),
                      ("1024", "--loop-cpu: '1024' is neither auto, none nor a CPU number"),
                      ("fast", "--loop-cpu: 'fast' is neither")):
        r = vmm_without_kvm("--loop-cpu", arg, json_report=False)
        assert r.rc == USAGE, r
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0], r.stderr
        assert r.stdout == "", r


@harness.nested_stage
def test_auto_pins_the_loop_to_the_cpu_no_slot_uses():
    """--pcpus 1: the slot takes the first CPU, the loop the next one; the
    JSON and the text report say so."""
    cpus = _need_two_cpus()
    rep = _run("--pcpus", "1").report
    loop = _loop(rep)
    assert loop["cpu"] == cpus[1], loop
    assert loop["cpus"] == str(cpus[1]), loop
    assert loop["cpu_note"].startswith("auto: the first CPU"), loop
    assert f"({cpus[0]})" in loop["cpu_note"], loop  # the slot's CPU
    assert rep["event_loop"]["ticks"] >= 0
    r = vmm("-c", "2", "--pcpus", "1", "--duration", "200ms", "-q", json_report=False)
    assert r.rc == 0, r
    assert f"loop       on CPU {cpus[1]} (auto:" in r.stdout, r.stdout


@harness.nested_stage
def test_auto_leaves_the_loop_unpinned_when_every_cpu_has_a_slot():
    cpus = _allowed()
    rep = _run("--pcpus", str(len(cpus))).report
    loop = _loop(rep)
    if len(cpus) > 1:
        assert loop["cpu"] == -1, loop
    assert loop["cpus"] == _cpu_list(cpus), loop
    assert "is a slot's; not pinned" in loop["cpu_note"], loop


@harness.nested_stage
def test_loop_cpu_none_and_a_named_cpu():
    """none: unpinned although a CPU is free; N on a slot's CPU: pinned
    there, and the note says it shares that CPU."""
    cpus = _need_two_cpus()
    loop = _loop(_run("--pcpus", "1", "--loop-cpu", "none").report)
    assert loop["cpu"] == -1 and loop["cpus"] == _cpu_list(cpus), loop
    assert loop["cpu_note"] == "--loop-cpu none: not pinned", loop
    loop = _loop(_run("--pcpus", "1", "--loop-cpu", str(cpus[0])).report)
    assert loop["cpu"] == cpus[0] and loop["cpus"] == str(cpus[0]), loop
    assert "a slot's CPU" in loop["cpu_note"], loop


@harness.nested_stage
def test_host_mode_keeps_the_loop_with_the_vcpu_threads():
    """--sched host: auto leaves the loop on the vCPU threads' CPUs (here
    one, so the read-back finds one CPU); N still moves it."""
    cpus = _need_two_cpus()
    loop = _loop(_run("--sched", "host", "--pcpus", "1").report)
    assert loop["cpus"] == str(cpus[0]) and loop["cpu"] == cpus[0], loop
    assert loop["cpu_note"].startswith("--sched host:"), loop
    loop = _loop(_run("--sched", "host", "--pcpus", "1", "--loop-cpu", str(cpus[1])).report)
    assert loop["cpu"] == cpus[1], loop


def _threads(pid):
    """{tid: (name, Cpus_allowed_list)} of a live process; {} once it is gone."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                st = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
            out[int(tid)] = (st.get("Name", ""), st.get("Cpus_allowed_list", ""))
        except OSError:
            pass
    return out


def _watch(p, want, timeout=120):
    """Samples the threads of P until want(threads) holds or P ends; the
    sample that held, else the last one."""
    end = time.time() + timeout
    last = {}
    while p.poll() is None and time.time() < end:
        t = _threads(p.pid)
        if t:
            last = t
            if want(t):
                return t
        time.sleep(0.005)
    return last


@harness.nested_stage
def test_the_loop_threads_affinity_seen_from_outside():
    """While the guest runs, the main thread (the loop: tid == pid) may run
    only on the free CPU, and the vCPU threads only on the slot's."""
    need_kvm()
    cpus = _need_two_cpus()
    with tempfile.TemporaryDirectory() as d:
        jpath = os.path.join(d, "r.json")
        p = subprocess.Popen([harness.vmm_path(), "run", "-c", "2", "--pcpus", "1", "--duration", "2s", "-q",
                              "--json", jpath], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def pinned(t):
            vcpus = [v for v in t.values() if v[0].startswith("vcpu")]
            return (t.get(p.pid, ("", ""))[1] == str(cpus[1]) and len(vcpus) == 2
                    and all(v[1] == str(cpus[0]) for v in vcpus))
        seen = _watch(p, pinned)
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
        assert pinned(seen), (seen, p.pid, cpus)


@harness.nested_stage
def test_domain_member_loop_and_link_thread_leave_the_domains_cpus():
    """A member of a one-CPU domain: auto puts its loop and its link thread
    (named vmm-link) on a CPU outside the domain's."""
    need_kvm()
    cpus = _need_two_cpus()
    from test_domain import Domain
    with Domain(pcpus=1) as dom, tempfile.TemporaryDirectory() as d:
        jpath = os.path.join(d, "r.json")
        p = dom.member("-c", "2", "--duration", "2s", json_path=jpath)

        def pinned(t):
            link = [v for v in t.values() if v[0] == "vmm-link"]
            return t.get(p.pid, ("", ""))[1] == str(cpus[1]) and link and link[0][1] == str(cpus[1])
        seen = _watch(p, pinned)
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
        assert pinned(seen), (seen, p.pid, cpus)
        import json
        with open(jpath) as f:
            loop = json.load(f)["event_loop"]
        assert loop["cpu"] == cpus[1], loop
        assert "outside the domain's CPUs" in loop["cpu_note"], loop
        assert "link thread" not in loop["cpu_note"], loop  # it followed
