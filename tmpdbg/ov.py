import json, os, subprocess, sys, time, signal
os.environ["VMM_DOMAIN_DIR"] = "/tmp/ovd"
os.makedirs("/tmp/ovd", exist_ok=True)

def once(k):
    ag = subprocess.Popen(["build/vmm", "domain", "start", "ov", "--pcpus", "2", "--grace-us", "200000"], stdout=subprocess.PIPE, text=True)
    ag.stdout.readline()
    ps = []
    for i in range(4):
        ps.append(subprocess.Popen(["build/vmm", "run", "--domain", "ov", "-q", "-c", "4", "--lock", "ticket", "--duration", "1s",
                                    "--trace", "/tmp/t%d.json" % i, "--json", "/tmp/r%d.json" % i], stdout=subprocess.DEVNULL))
    for p in ps:
        p.wait()
    ag.send_signal(signal.SIGTERM)
    ag.wait()
    ev = []
    raw = {}
    for i in range(4):
        t = json.load(open("/tmp/t%d.json" % i))
        t0 = t["otherData"]["t0_monotonic_ns"]
        if t["otherData"]["dropped"]:
            print("dropped", i)
        raw[i] = (t0, t["traceEvents"])
        for e in t["traceEvents"]:
            if e.get("ph") == "X" and e.get("pid") == 1 and e.get("name") == "running":
                a = t0 + e["ts"] * 1000
                ev.append((a, 1, i, e["tid"]))
                ev.append((a + e["dur"] * 1000, -1, i, e["tid"]))
    ev.sort(key=lambda x: (x[0], x[1]))
    cur = set()
    for tt, d, m, v in ev:
        if d > 0:
            cur.add((m, v))
        else:
            cur.discard((m, v))
        if len(cur) > 2:
            print("run", k, "overlap at", tt, sorted(cur))
            for (mm, vv) in sorted(cur):
                t0, evs = raw[mm]
                near = [(round(t0 + e["ts"] * 1000 - tt), e.get("name"), e.get("tid"), e.get("pid"), round(e.get("dur", 0) * 1000))
                        for e in evs if e.get("ph") in ("X", "i") and abs(t0 + e["ts"] * 1000 - tt) < 3e6]
                print("  member", mm, "vcpu", vv, sorted(near)[:30])
            ends = {i: max(x[0] for x in ev if x[2] == i) for i in range(4)}
            print("  member ends rel:", {i: round(ends[i] - tt) for i in ends})
            return

for k in range(3):
    once(k)
print("done")
