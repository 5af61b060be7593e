#!/usr/bin/env python3
"""Writes the recording's truth from what was measured outside aftermath:
php-fpm's own access log (each request's duration, CPU %, memory peak), the
1 s /proc samples of php-fpm's processes (CPU ticks, resident size, PSS,
private bytes) and the load generator's requests.
Usage: truth.py RUN OLD NEW CPU_MS MEM_MB WAIT_MS"""
import csv, json, re, sys
from datetime import datetime

run, old, new, cpu_ms, mem_mb, wait_ms = sys.argv[1], *map(int, sys.argv[2:7])

# php-fpm's access log: one line per request it ran.
line_re = re.compile(r'^(\S+) pid=(\d+) "(\S+) (\S+)" (\d+) (\d+) us (\d+) B cpu=([\d.]+)%')
reqs = []
for line in open(f"{run}/logs/php-fpm-access.log"):
    m = line_re.match(line)
    if not m:
        continue
    end = datetime.strptime(m[1], "%Y-%m-%dT%H:%M:%S%z").timestamp()
    dur = int(m[6]) / 1e6
    reqs.append({"end": end, "uri": m[4], "dur": dur, "mem": int(m[7]), "cpu_s": float(m[8]) / 100 * dur})
app = [r for r in reqs if r["uri"].startswith("/a/")]

# The load generator's requests.
sent = list(csv.DictReader(open(f"{run}/requests.csv")))
sends = sorted(int(r["send_unix_ms"]) / 1000 for r in sent)
t0 = sends[0]
peak_rate = 0.0
for i, s in enumerate(sends):  # arrivals per second over any 60 s
    j = i
    while j < len(sends) and sends[j] < s + 60:
        j += 1
    peak_rate = max(peak_rate, (j - i) / 60)
status = {}
for r in sent:
    k = r["status"] if r["status"] != "0" else "client_error"
    status[k] = status.get(k, 0) + 1

# /proc samples of php-fpm's processes.
samples = [json.loads(l) for l in open(f"{run}/proc-samples.jsonl")]
load = [s for s in samples if t0 <= s["t"] <= sends[-1] + 10]
tick = load[0]["tick"]
def workers(s):
    return [p for p in s["procs"] if p["cmd"].endswith("pool www")]
first, last = load[0], load[-1]
secs = last["t"] - first["t"]
def ticks(s, sel):
    return sum(p["utime"] + p["stime"] for p in sel(s))
def everyone(s):
    return s["procs"]
worker_cpu = (ticks(last, workers) - ticks(first, workers)) / tick
fpm_cpu = (ticks(last, everyone) - ticks(first, everyone)) / tick
# Busy worker-seconds: the durations php-fpm logged for requests that ended in the same span.
busy_s = sum(r["dur"] for r in reqs if first["t"] <= r["end"] <= last["t"])
served = [r for r in reqs if first["t"] <= r["end"] <= last["t"]]
cpu0, cpu1 = first["stat_cpu"], last["stat_cpu"]
d = [b - a for a, b in zip(cpu0, cpu1)]  # user nice system idle iowait irq softirq steal
total = sum(d)
import os
host_cores = os.cpu_count()
busy_frac = (total - d[3] - d[4]) / total
host_busy_cores = busy_frac * host_cores
nice_cores = d[1] / total * host_cores
def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None
rss = [p["rss_kb"] for s in load for p in workers(s)]
pss = [p["pss_kb"] for s in load for p in workers(s)]
priv = [p["private_kb"] for s in load for p in workers(s)]
shmem = [p["shmem_kb"] for s in load for p in workers(s)]
hwm = max(p["hwm_kb"] for s in load for p in workers(s))
master = [p["rss_kb"] for s in load for p in s["procs"] if "master process" in p["cmd"]]
others = [p["rss_kb"] for s in load for p in s["procs"] if "master process" not in p["cmd"] and not p["cmd"].endswith("pool www")]
active = [s["status"]["active"] for s in load if "status" in s]
baseline = [r for r in app if r["end"] < t0 + 70]
# The span in which php-fpm's status page showed every worker busy: CPU a
# busy worker kept running there, over the busy worker-seconds it counted.
full = [s for s in load if s.get("status", {}).get("active") == new]
sat = None
if len(full) >= 2:
    a, b = full[0], full[-1]
    span = [s for s in load if a["t"] <= s["t"] <= b["t"]]
    busy_sat = sum(s["status"]["active"] * (n["t"] - s["t"]) for s, n in zip(span, span[1:]) if "status" in s)
    cpu_sat = (ticks(b, workers) - ticks(a, workers)) / tick
    sat = {"from": a["t"], "to": b["t"], "seconds_all_busy": len(full), "workers_cpu_s": round(cpu_sat, 2),
           "busy_worker_s": round(busy_sat, 1), "cores_per_busy_worker": round(cpu_sat / busy_sat, 4)}
truth = {
    "source": "real Caddy + php-fpm + Prometheus on one host (record.sh)",
    "max_children": {"old": old, "new": new},
    "page_cost": {"cpu_ms": cpu_ms, "mem_mb": mem_mb, "wait_ms": wait_ms},
    "requests": {"sent": len(sent), "by_status": status, "peak_arrivals_per_s_60s": round(peak_rate, 2),
                 "php_ran": len(app)},
    "service_time_s": {"baseline_mean": round(mean([r["dur"] for r in baseline]), 3),
                       "all_mean": round(mean([r["dur"] for r in app]), 3)},
    "busy_workers_needed_at_peak": round(peak_rate * mean([r["dur"] for r in baseline]), 2),
    "cpu": {
        "span_s": round(secs, 1),
        "workers_cpu_s": round(worker_cpu, 2),
        "php_fpm_cpu_s": round(fpm_cpu, 2),
        "requests_ended": len(served),
        "busy_worker_s": round(busy_s, 1),
        "cpu_s_per_request_proc": round(worker_cpu / len(served), 4),
        "cpu_s_per_request_fpm_log": round(mean([r["cpu_s"] for r in app]), 4),
        "cores_per_busy_worker": round(worker_cpu / busy_s, 4),
        "host_cores": host_cores,
        "host_busy_cores": round(host_busy_cores, 3),
        "host_nice_cores": round(nice_cores, 3),
        "others_cores": round(host_busy_cores - fpm_cpu / secs, 3),
        "others_cores_not_niced": round(host_busy_cores - nice_cores - fpm_cpu / secs, 3),
        "mean_active_status_page": round(mean(active), 2),
    },
    "cpu_while_all_busy": sat,
    "memory_kb": {
        "worker_rss_mean": round(mean(rss)),
        "worker_rss_peak_hwm": hwm,
        "worker_pss_mean": round(mean(pss)),
        "worker_private_mean": round(mean(priv)),
        "worker_shmem_mean": round(mean(shmem)),
        "master_rss_mean": round(mean(master)),
        "other_fpm_rss_mean": round(mean(others)) if others else None,
        "request_peak_mean_fpm_log": round(mean([r["mem"] for r in app]) / 1024),
    },
}
json.dump(truth, sys.stdout, indent=1)
print()
