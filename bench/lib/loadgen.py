"""Runs sluice-loadgen and reads back its summary and per-call CSV."""

import csv
import json
import os
import subprocess

from procs import log


class LoadgenRun:
    def __init__(self, summary, calls, sends=None):
        self.summary = summary
        self.calls = calls  # list of dicts (CSV rows)
        self.sends = sends or []
        self.start_unix_ms = summary["start_unix_ms"]

    def phase(self, name):
        for p in self.summary["phases"]:
            if p["name"] == name:
                return p
        raise KeyError(name)


def settled_after(good):
    """Index of the first bin from which every later bin is good (None: never), for recovery
    times measured in bins."""
    for i in range(len(good)):
        if all(good[i:]):
            return i
    return None


def run_loadgen(bins, workdir, name, target, phases, extra=(), cpus=None, timeout=900):
    """Runs one loadgen invocation; returns a LoadgenRun. extra: more CLI flags."""
    csv_path = os.path.join(workdir, f"{name}.calls.csv")
    summary_path = os.path.join(workdir, f"{name}.summary.json")
    sends_path = os.path.join(workdir, f"{name}.sends.csv")
    argv = [bins.loadgen, "--target", target, "--phases", phases, "--csv", csv_path,
            "--summary", summary_path, "--quiet"] + list(extra)
    if "client_stream" in extra:
        argv += ["--sends-csv", sends_path]
    if cpus is not None:
        argv = ["taskset", "-c", str(cpus)] + argv
    log(f"loadgen {name}: {' '.join(argv[argv.index('--target'):])}")
    with open(os.path.join(workdir, f"{name}.loadgen.log"), "wb") as out:
        rc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=timeout).returncode
    if rc != 0:
        raise RuntimeError(f"sluice-loadgen failed ({rc}); see {workdir}/{name}.loadgen.log")
    with open(summary_path) as f:
        summary = json.load(f)
    with open(csv_path) as f:
        calls = list(csv.DictReader(f))
    sends = []
    if os.path.exists(sends_path):
        with open(sends_path) as f:
            sends = list(csv.DictReader(f))
    return LoadgenRun(summary, calls, sends)


def ok_latencies(run, t0=None, t1=None, by="start_ms"):
    """OK latencies (ms) of calls whose `by` time (ms) falls in [t0, t1) seconds."""
    out = []
    for c in run.calls:
        if c["kind"] != "call" or c["status"] != "0":
            continue
        t = float(c[by]) / 1000.0
        if (t0 is None or t >= t0) and (t1 is None or t < t1):
            out.append(float(c["latency_ms"]))
    return out


def nearest_rank(values, q):
    if not values:
        return None
    s = sorted(values)
    import math
    rank = max(1, min(len(s), math.ceil(q * len(s) - 1e-9)))
    return s[rank - 1]


class MergedRun:
    """Several concurrent LoadgenRuns as one, for plots: every call row gets a `client` key and
    its times shifted onto the earliest generator's clock (they start within milliseconds)."""

    def __init__(self, runs):
        """runs: {client name: LoadgenRun}."""
        self.start_unix_ms = min(r.start_unix_ms for r in runs.values())
        self.calls = []
        for name, r in runs.items():
            shift = r.start_unix_ms - self.start_unix_ms
            for c in r.calls:
                row = dict(c, client=name)
                for k in ("scheduled_ms", "start_ms", "end_ms"):
                    if row.get(k) not in (None, ""):
                        row[k] = str(float(row[k]) + shift)
                self.calls.append(row)


def outcomes(calls, t0=None, t1=None, by="scheduled_ms"):
    """Counts of the slots whose `by` time (ms) falls in [t0, t1) seconds: slots, ok, shed,
    timeouts, other (any other status), skipped (cap or late), and the OK latencies (ms)."""
    out = {"slots": 0, "ok": 0, "shed": 0, "timeouts": 0, "other": 0, "skipped": 0, "lat": []}
    for c in calls:
        t = float(c[by if c["kind"] == "call" else "scheduled_ms"]) / 1000.0
        if (t0 is not None and t < t0) or (t1 is not None and t >= t1):
            continue
        out["slots"] += 1
        if c["kind"] != "call":
            out["skipped"] += 1
        elif c["status"] == "0":
            out["ok"] += 1
            out["lat"].append(float(c["latency_ms"]))
        elif c["status"] == "8":
            out["shed"] += 1
        elif c["status"] == "4":
            out["timeouts"] += 1
        else:
            out["other"] += 1
    return out
