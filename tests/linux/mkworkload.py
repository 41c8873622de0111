#!/usr/bin/env python3
"""Writes the Linux workload initramfs: busybox-static, Debian's hackbench
(rt-tests) and sysbench with their shared libraries, and an /init that runs
one workload to a fixed amount of work, prints its result on the console and
powers the guest off. What `vmm bench --preset linux` and the Linux PV
spinlock tests boot. Usage: mkworkload.py BUSYBOX OUT

The kernel command line chooses (defaults in brackets):
  vmm.work=NAME      hackbench | sysbench-threads | sysbench-mutex | kbuild | none [none]
  vmm.size=N         the amount of work, in the workload's own unit [hackbench:
                     1000 messages from each sender to each receiver;
                     sysbench-threads: 20000 events; sysbench-mutex: 20000
                     locks per thread; kbuild: 400 jobs], about a second or
                     more on 2 CPUs of hardware KVM
  vmm.threads=T      tasks or groups, the same whatever the vCPUs [8], so that a
                     cell at 1x and one at 4x do the same work

and /init prints, for a script to read:
  VMM-WORK-START work=NAME cpus=C threads=T size=N
  VMM-WORK-RESULT work=NAME ops=OPS seconds=S cpus=C steal_ms=MS rc=RC
  VMM-PVLOCK: <the kernel's line about PV spinlocks, or "none">
  VMM-POWEROFF
ops is fixed by NAME, size and threads; seconds comes from /proc/uptime
(the guest's kvmclock: wall time, also while a vCPU is held off a CPU);
steal_ms is /proc/stat's steal over every CPU during the work.
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpio_newc  # noqa: E402

PROGRAMS = {"hackbench": "rt-tests", "sysbench": "sysbench"}

INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
arg() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
work=$(arg vmm.work); work=${work:-none}
threads=$(arg vmm.threads); threads=${threads:-8}
size=$(arg vmm.size)
cpus=$(grep -c ^processor /proc/cpuinfo)
uptime_s() { cut -d' ' -f1 /proc/uptime; }
steal() { awk '/^cpu /{print $9}' /proc/stat; }
case $work in
hackbench)
  # groups of 10 senders and 10 receivers over sockets; each sender sends
  # size messages to each receiver of its group
  size=${size:-1000}; ops=$((threads * 10 * 10 * size))
  set -- hackbench -P -g $threads -f 10 -l $size -s 100 ;;
sysbench-threads)
  # scheduler and mutex heavy: yields inside locked regions
  size=${size:-20000}; ops=$size
  set -- sysbench threads --threads=$threads --thread-yields=100 --thread-locks=4 --events=$size --time=0 run ;;
sysbench-mutex)
  # every thread takes one of few pthread mutexes size times
  size=${size:-20000}; ops=$((threads * size))
  set -- sysbench mutex --threads=$threads --mutex-num=4 --mutex-locks=$size --mutex-loops=200 run ;;
kbuild)
  # a parallel build's shape: size short processes (fork, exec, page faults,
  # a pipe), threads at a time
  size=${size:-400}; ops=$size
  dd if=/dev/urandom of=/tmp/src bs=64k count=4 2>/dev/null
  set -- sh -c "seq $size | xargs -P $threads -n 1 sh -c 'gzip -c /tmp/src | md5sum >/dev/null'" ;;
none) ops=0; set -- true ;;
*) echo "VMM-WORK-RESULT work=$work unknown"; poweroff -f ;;
esac
echo "VMM-WORK-START work=$work cpus=$cpus threads=$threads size=${size:-0}"
s0=$(steal); t0=$(uptime_s)
"$@" >/tmp/out 2>&1
rc=$?
t1=$(uptime_s); s1=$(steal)
[ $rc = 0 ] || tail -5 /tmp/out
echo "VMM-WORK-RESULT work=$work ops=$ops seconds=$(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") cpus=$cpus steal_ms=$(( (s1 - s0) * 10 )) rc=$rc"
echo "VMM-PVLOCK: $(dmesg | grep -o 'PV spinlocks [a-z]*' | head -1)"
echo "VMM-POWEROFF"
poweroff -f
"""


def missing_programs():
    """The Debian packages whose programs this machine lacks."""
    return sorted({pkg for prog, pkg in PROGRAMS.items() if not shutil.which(prog)})


def build(busybox, out):
    missing = missing_programs()
    if missing:
        raise FileNotFoundError(f"the workloads need {' '.join(missing)}: apt-get install {' '.join(missing)}")
    a = cpio_newc.Archive()
    a.busybox_base(busybox)
    a.file("init", INIT.encode(), 0o755)
    for prog in sorted(PROGRAMS):
        a.program(shutil.which(prog))
    a.write(out)


def main():
    try:
        build(sys.argv[1], sys.argv[2])
    except FileNotFoundError as e:
        print(f"mkworkload.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
