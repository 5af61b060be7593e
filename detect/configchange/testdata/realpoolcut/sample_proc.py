#!/usr/bin/env python3
"""Samples php-fpm's processes from /proc once a second, for the truth.

Per process (comm COMM): role (master, www worker, status pool), user+system
CPU ticks, resident size (VmRSS), its peak (VmHWM), anonymous, file-backed and
shared-memory resident parts, PSS and private bytes (smaps_rollup); and the
host's /proc/stat cpu line (user nice system idle iowait irq softirq steal).
Also php-fpm's full status page (JSON) every second: each worker's state.
Runs until killed."""
import json, os, sys, time, urllib.request

comm_want, out_path, status_url = sys.argv[1], sys.argv[2], sys.argv[3]
TICK = os.sysconf("SC_CLK_TCK")

def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None

def kb_fields(text, names):
    out = {}
    for line in (text or "").splitlines():
        k, _, v = line.partition(":")
        if k in names:
            out[k] = int(v.split()[0])
    return out

with open(out_path, "w") as out:
    while True:
        t = time.time()
        rec = {"t": round(t, 3), "tick": TICK, "procs": []}
        rec["stat_cpu"] = [int(x) for x in read("/proc/stat").splitlines()[0].split()[1:9]]
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or (read(f"/proc/{pid}/comm") or "").strip() != comm_want:
                continue
            stat = read(f"/proc/{pid}/stat")
            cmd = (read(f"/proc/{pid}/cmdline") or "").replace("\0", " ").strip()
            if stat is None:
                continue
            f = stat.rsplit(")", 1)[1].split()
            st = kb_fields(read(f"/proc/{pid}/status"), {"VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"})
            sm = kb_fields(read(f"/proc/{pid}/smaps_rollup"), {"Pss", "Private_Clean", "Private_Dirty"})
            rec["procs"].append({"pid": int(pid), "cmd": cmd, "utime": int(f[11]), "stime": int(f[12]),
                                 "rss_kb": st.get("VmRSS"), "hwm_kb": st.get("VmHWM"), "anon_kb": st.get("RssAnon"),
                                 "file_kb": st.get("RssFile"), "shmem_kb": st.get("RssShmem"), "pss_kb": sm.get("Pss"),
                                 "private_kb": sm.get("Private_Clean", 0) + sm.get("Private_Dirty", 0)})
        try:
            with urllib.request.urlopen(status_url, timeout=0.8) as r:
                s = json.load(r)
            rec["status"] = {"active": s.get("active processes"), "queue": s.get("listen queue"),
                             "states": [p.get("state") for p in s.get("processes", [])]}
        except Exception as e:  # the truth says when the page did not answer
            rec["status_error"] = str(e)
        out.write(json.dumps(rec) + "\n")
        out.flush()
        time.sleep(max(0, 1 - (time.time() - t)))
