#!/usr/bin/python3
"""Scenario 10, queue mode against push mode: three pods of different capacity, one slowing down.

Three test upstreams play the service's pods: A has 4 workers at 20 ms (200 calls/s), B 2
workers at 20 ms (100/s), C 2 workers at 10 -> 40 -> 10 ms over three phases (200 -> 50 -> 200/s,
Part 2's slowdown). The load generator offers 240 unary calls/s open loop (2 s deadline), less
than the pods' capacity in every phase (500/s, then 350/s). What it compares:

- push mode: a sluice per pod in front of its upstream with a limiter (and a queue-wait budget),
  behind a front sluice whose cluster lists the three pod sluices: round robin per call, like a
  Kubernetes Service or any L7 balancer that does not know the pods' capacity. Each pod gets a
  third of the calls whatever it can serve; when C slows, its sluice can only shed its third.
- queue mode: one frontend sluice (listener `queue:`) in front of a real redis-server, and a
  consumer sluice per pod with `aimd`: each pod pulls only what its limiter admits, so the slow
  pod takes less and the others more.

Reports per phase goodput, OK p50/p95/p99, shed and timeouts (pooled over repetitions), which
pod served how much (the upstreams' completion counters), the frontend's backlog and estimated
wait in queue mode, and plots.
"""

import json
import os
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import plots  # noqa: E402
import report  # noqa: E402
from loadgen import nearest_rank, ok_latencies, outcomes, run_loadgen  # noqa: E402
from procs import LOOPBACK, Binaries, RedisServer, Sluice, Upstream, died, log, workdir  # noqa
from sampler import Sampler  # noqa: E402

PODS = ("A", "B", "C")


def pod_upstreams(step):
    """Upstream options per pod: (workers, delay, schedule)."""
    return {
        "A": {"workers": 4, "delay": "20ms"},
        "B": {"workers": 2, "delay": "20ms"},
        "C": {"workers": 2, "delay": "10ms", "schedule": f"10ms:{step}s,40ms:{step}s,10ms:{step}s"},
    }


def configs(budget, slo):
    """name -> (mode, pod filters)."""
    qwb = {"type": "queue_wait_budget", "budget": budget}
    return {
        "push_no_filter": ("push", []),
        "push_rtt_gradient": ("push", [qwb, {"type": "rtt_gradient"}]),
        "push_aimd": ("push", [qwb, {"type": "aimd", "latency_slo": slo}]),
        # A consumer reads only what its limiter admits: nothing waits at it, so no budget.
        "queue_aimd": ("queue", [{"type": "aimd", "latency_slo": slo}]),
    }


def extra_args(p):
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--rate", type=int, default=240, help="calls/s offered")
    p.add_argument("--budget", default="100ms", help="queue_wait_budget of the push pods")
    p.add_argument("--slo", default="100ms", help="aimd latency_slo")
    p.add_argument("--configs", help="comma-separated subset")
    p.add_argument("--phase-seconds", type=int, help="length of each phase (default 12, smoke 3)")


class StatsSampler:
    """Samples the queue frontend's queue.* stats (backlog, estimated wait, drain rate) every
    100 ms."""

    LEAVES = ("backlog", "pending", "estimated_wait_ms", "drain_rate", "frontend_rq_open")

    def __init__(self, sluice, interval=0.1):
        self.sluice = sluice
        self.interval = interval
        self.rows = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def stats(self, timeout=0.5):
        url = f"http://{LOOPBACK}:{self.sluice.admin_port}/stats?format=json&filter=%5Equeue%5C."
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return {s["leaf"]: s.get("value") for s in json.loads(r.read())["stats"]}

    def _run(self):
        while not self._stop.is_set():
            try:
                row = {"t_unix_ms": int(time.time() * 1000)}
                row.update(self.stats())
                self.rows.append(row)
            except Exception:  # noqa: BLE001 - a missed sample is a gap
                pass
            self._stop.wait(self.interval)

    def series(self, leaf, start_unix_ms):
        return [((r["t_unix_ms"] - start_unix_ms) / 1000.0, float(r[leaf])) for r in self.rows
                if r.get(leaf) is not None]


def pod_sluice_config(upstream, filters):
    return {
        "workers": 1,
        "admin": {"address": f"{LOOPBACK}:0"},
        "listeners": [{"name": "ingress", "address": f"{LOOPBACK}:0", "cluster": "app",
                       "filters": filters}],
        "clusters": [{"name": "app", "endpoints": [upstream.target]}],
        "log_level": "warn",
        "drain_timeout": "1s",
    }


def front_config(pod_sluices):
    return {
        "workers": 1,
        "admin": {"address": f"{LOOPBACK}:0"},
        "listeners": [{"name": "ingress", "address": f"{LOOPBACK}:0", "cluster": "pods"}],
        "clusters": [{"name": "pods", "endpoints": [s.target for s in pod_sluices]}],
        "log_level": "warn",
        "drain_timeout": "1s",
    }


def queue_block(redis):
    return [{"name": "work", "redis": redis.target}]


def frontend_config(redis):
    return {
        "workers": 1,
        "admin": {"address": f"{LOOPBACK}:0"},
        "queues": queue_block(redis),
        "listeners": [{"name": "ingress", "address": f"{LOOPBACK}:0", "queue": "work"}],
        "log_level": "warn",
        "drain_timeout": "1s",
    }


def consumer_config(redis, upstream, filters, pod):
    return {
        "workers": 1,
        "admin": {"address": f"{LOOPBACK}:0"},
        "queues": queue_block(redis),
        "consumers": [{"name": f"pod{pod}", "queue": "work", "cluster": "app",
                       "filters": filters}],
        "clusters": [{"name": "app", "endpoints": [upstream.target]}],
        "log_level": "warn",
        "drain_timeout": "1s",
    }


def run_config(bins, work, tag, mode, filters, step, phases, loadgen_args):
    """One run: fresh upstreams, sluices (and Redis), the load generator under samplers.
    Returns (run, {pod: Sampler}, frontend StatsSampler or None, dead, front stats)."""
    procs = {}
    started = []
    try:
        ups = {}
        for pod, opts in pod_upstreams(step).items():
            ups[pod] = Upstream(bins, work, name=f"up{pod}.{tag}", **opts)
            started.append(ups[pod])
            procs[f"upstream {pod}"] = ups[pod].proc
        pods = {}
        if mode == "push":
            for pod in PODS:
                pods[pod] = Sluice(bins, work, pod_sluice_config(ups[pod], filters),
                                   name=f"pod{pod}.{tag}")
                started.append(pods[pod])
                procs[f"sluice {pod}"] = pods[pod].proc
            front = Sluice(bins, work, front_config([pods[p] for p in PODS]),
                           name=f"front.{tag}")
        else:
            redis = RedisServer(work, name=f"redis.{tag}")
            started.append(redis)
            procs["redis"] = redis.proc
            front = Sluice(bins, work, frontend_config(redis), name=f"frontend.{tag}")
            started.append(front)
            for pod in PODS:
                pods[pod] = Sluice(bins, work, consumer_config(redis, ups[pod], filters, pod),
                                   name=f"consumer{pod}.{tag}")
                started.append(pods[pod])
                procs[f"consumer {pod}"] = pods[pod].proc
        if front not in started:
            started.append(front)
        procs["front"] = front.proc
        samplers = {pod: Sampler(os.path.join(work, f"{tag}.pod{pod}.samples.csv"),
                                 sluice=pods[pod], upstream=ups[pod])
                    for pod in PODS}
        fstats = StatsSampler(front) if mode == "queue" else None
        for s in samplers.values():
            s.__enter__()
        if fstats:
            fstats.__enter__()
        try:
            run = run_loadgen(bins, work, tag, front.target, phases, loadgen_args)
        finally:
            for s in samplers.values():
                s.__exit__(None, None, None)
            if fstats:
                fstats.__exit__(None, None, None)
        dead = died(**procs)
        final = {}
        if mode == "queue" and not dead:
            try:
                final = fstats.stats(timeout=2)
            except Exception:  # noqa: BLE001 - only loses a detail of the report
                pass
        return run, samplers, fstats, dead, final
    finally:
        for p in reversed(started):
            p.stop()


def served(sampler, start_unix_ms, t0, t1):
    """Calls the pod's upstream completed between t0 and t1 s of the run (its cumulative
    completion counter, sampled every 100 ms; the sample nearest each bound)."""
    points = sampler.series("up.messages_processed", start_unix_ms)
    if not points:
        return None

    def at(t):
        return min(points, key=lambda p: abs(p[0] - t))[1]
    return at(t1) - at(t0)


def pod_rates(sampler, start_unix_ms, bin_s=1.0):
    """(t, completions/s) of one upstream in bins."""
    points = sampler.series("up.messages_processed", start_unix_ms)
    out = []
    if not points:
        return out
    t = 0.0
    horizon = points[-1][0]
    while t + bin_s <= horizon + 1e-9:
        out.append((t + bin_s / 2, served(sampler, start_unix_ms, t, t + bin_s) / bin_s))
        t += bin_s
    return out


def main():
    args = report.parse_args(__doc__.splitlines()[0], extra_args)
    bins = Binaries(args.build)
    if not bins.sluice:
        raise SystemExit("bench: queue_vs_push needs sluice (both modes run through it)")
    step = args.phase_seconds or (3 if args.smoke else 12)
    reps = 1 if args.smoke else args.reps
    all_configs = configs(args.budget, args.slo)
    names = list(all_configs)
    if args.smoke:
        names = ["push_aimd", "queue_aimd"]
    if args.configs:
        names = args.configs.split(",")
    phases = (f"{args.rate}/s:{step}s@normal,{args.rate}/s:{step}s@slow,"
              f"{args.rate}/s:{step}s@recovered")
    loadgen_args = ["--deadline", "2s", "--channels", "4", "--max-outstanding", "2000"]
    work = workdir("queue-vs-push")
    log(f"workdir {work}, build {bins.build}")
    load_before = os.getloadavg()

    results = {n: [] for n in names}  # name -> [(run, samplers, fstats, final)]
    invalid = []
    for rep in range(reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            mode, filters = all_configs[name]
            for attempt in range(3):
                tag = f"{name}.r{rep}" + (f".a{attempt}" if attempt else "")
                log(f"{tag}: {mode} mode, {3 * step} s")
                run, samplers, fstats, dead, final = run_config(
                    bins, work, tag, mode, filters, step, phases, loadgen_args)
                if not dead:
                    results[name].append((run, samplers, fstats, final))
                    break
                log(f"{tag} invalid: {', '.join(dead)}; running it again")
                invalid.append((tag, ", ".join(dead)))

    windows = [("normal", 0, step), ("slow", step, 2 * step), ("recovered", 2 * step, 3 * step)]
    rows, summary, pod_rows = [], [], []
    for name in names:
        runs = results[name]
        for label, t0, t1 in windows:
            o = {"slots": 0, "ok": 0, "shed": 0, "timeouts": 0, "other": 0, "skipped": 0,
                 "lat": []}
            for run, _, _, _ in runs:
                for k, v in outcomes(run.calls, t0, t1).items():
                    o[k] += v
            lat = o["lat"]
            rows.append([name, label, o["slots"], o["ok"], o["shed"], o["timeouts"], o["other"],
                         o["skipped"], o["ok"] / (len(runs) * (t1 - t0)),
                         nearest_rank(lat, .5), nearest_rank(lat, .95), nearest_rank(lat, .99),
                         max(lat) if lat else None])
            share = []
            for pod in PODS:
                n = [served(s[pod], r.start_unix_ms, t0, t1) for r, s, _, _ in runs]
                n = [x for x in n if x is not None]
                share.append(sum(n) / (len(n) * (t1 - t0)) if n else None)
            pod_rows.append([name, label] + share)
        every = [x for run, _, _, _ in runs for x in ok_latencies(run, by="scheduled_ms")]
        slow = [x for run, _, _, _ in runs
                for x in ok_latencies(run, step, 2 * step, by="scheduled_ms")]
        total = {"ok": 0, "shed": 0, "timeouts": 0, "slots": 0}
        for run, _, _, _ in runs:
            o = outcomes(run.calls)
            for k in total:
                total[k] += o[k]
        waits = [f.get("frontend_rq_backpressure_wait_total", 0) for _, _, _, f in runs if f]
        summary.append([name, len(runs), total["ok"] / (len(runs) * 3 * step),
                        100.0 * total["ok"] / max(1, total["slots"]), total["shed"],
                        total["timeouts"], nearest_rank(every, .99), nearest_rank(slow, .95),
                        nearest_rank(slow, .99),
                        sum(waits) if waits else "-"])

    # Plots of the last repetition of each config.
    out = args.out
    prefix = "queue-vs-push" + ("-smoke" if args.smoke else "")
    marks = (step, 2 * step)
    last = [(n, results[n][-1]) for n in names if results[n]]
    plots.latency_over_time(os.path.join(out, f"{prefix}-latency.png"),
                            [(n, r[0]) for n, r in last],
                            "Queue vs push: call duration by start time (last repetition)", marks)
    plots.rates_over_time(os.path.join(out, f"{prefix}-rates.png"), [(n, r[0]) for n, r in last],
                          "Queue vs push: goodput, shed and timeouts per second",
                          phase_marks=marks)
    panels = []
    for n, (run, samplers, fstats, _) in last:
        panels.append((f"{n}: completions/s per pod", "calls/s",
                       [(f"pod {p}", pod_rates(samplers[p], run.start_unix_ms)) for p in PODS]))
    plots.lines(os.path.join(out, f"{prefix}-pods.png"), panels,
                "Which pod served the calls (upstream completions per second, 1 s bins)")
    limit_panels = []
    for n, (run, samplers, fstats, _) in last:
        filt = all_configs[n][1][-1]["type"] if all_configs[n][1] else None
        if not filt:
            continue
        series = [(f"pod {p} limit", samplers[p].series(f"{filt}.limit", run.start_unix_ms))
                  for p in PODS]
        series += [(f"pod {p} in_flight",
                    samplers[p].series(f"{filt}.in_flight", run.start_unix_ms)) for p in PODS]
        limit_panels.append((f"{n}: {filt}", "count", series))
    queue_runs = [(n, r) for n, r in last if r[2] is not None]
    for n, (run, samplers, fstats, _) in queue_runs:
        limit_panels.append((f"{n}: frontend backlog and estimated wait", "entries / ms",
                             [("backlog", fstats.series("backlog", run.start_unix_ms)),
                              ("estimated wait ms",
                               fstats.series("estimated_wait_ms", run.start_unix_ms))]))
    if limit_panels:
        plots.lines(os.path.join(out, f"{prefix}-limits.png"), limit_panels,
                    "Limits and in-flight per pod (sampled every 100 ms), queue backlog")

    load_after = os.getloadavg()
    up = pod_upstreams(step)
    body = [
        "## Setup", "",
        "- Pods (fresh `sluice-test-upstream` processes per run): "
        + "; ".join(f"{p}: `--workers {o['workers']} "
                    + (f"--schedule {o['schedule']}`" if "schedule" in o else
                       f"--delay {o['delay']}`")
                    for p, o in up.items())
        + f". Capacity {500}/s in the normal phases, 350/s while C is slow.",
        f"- Load: `sluice-loadgen --phases {phases} {' '.join(loadgen_args)}` (open loop, "
        "fixed rate, one generator), against the front sluice (push) or the queue frontend.",
        "- Push mode: a pod sluice (`workers: 1`) per upstream with the config's filters "
        f"(`queue_wait_budget {args.budget}` before the limiter), and a front sluice "
        "(`workers: 1`, no filters) whose cluster lists the three pod sluices: sluice spreads "
        "calls round-robin over a cluster's endpoints, so each pod gets a third of the calls, "
        "as behind a Kubernetes Service.",
        "- Queue mode: a redis-server (no persistence) on an ephemeral port, a frontend sluice "
        "(`workers: 1`, listener `queue: work`, defaults: `max_pending` 10000, "
        "`shed_by_estimated_wait` on) and a consumer sluice (`workers: 1`) per upstream with "
        f"`aimd` (`latency_slo: {args.slo}`, its defaults otherwise).",
        f"- {reps} repetition(s), order rotated each repetition. Invalid runs (a process "
        "exited): " + ("; ".join(f"`{t}` ({r})" for t, r in invalid) if invalid else "none")
        + ".",
        f"- Load average before the runs {load_before[0]:.2f}/{load_before[1]:.2f}/"
        f"{load_before[2]:.2f}, after {load_after[0]:.2f}/{load_after[1]:.2f}/"
        f"{load_after[2]:.2f} (the machine is shared with other builds: latencies carry "
        "scheduling noise).",
        "- Latency is the client's end-to-end duration of OK calls, grouped by the phase that "
        "scheduled them; shed (RESOURCE_EXHAUSTED) and timed-out calls are counted, never given "
        "a latency.", "",
        "## Summary (pooled over repetitions)", "",
        report.table(["config", "runs", "goodput OK/s", "OK % of offered", "shed", "timeouts",
                      "OK p99 ms (all)", "slow phase OK p95 ms", "slow phase OK p99 ms",
                      "refused for estimated wait"], summary), "",
        "## Per phase (pooled)", "",
        report.table(["config", "phase", "slots", "OK", "shed", "timeouts", "other",
                      "skipped slots", "goodput/s", "p50 ms", "p95 ms", "p99 ms", "max ms"],
                     rows), "",
        "## Completions per second by pod (mean over repetitions)", "",
        report.table(["config", "phase"] + [f"pod {p}" for p in PODS], pod_rows), "",
        "## Plots (last repetition)", "",
        f"![latency]({prefix}-latency.png)", "", f"![rates]({prefix}-rates.png)", "",
        f"![pods]({prefix}-pods.png)", "",
        f"![limits]({prefix}-limits.png)" if limit_panels else "", "",
        f"Raw CSVs of this run: `{work}` (not kept in the repository).",
    ]
    path = report.write(out, prefix, "Scenario 10: queue mode against push mode (three pods, "
                        "one slowing down)", "\n".join(body), args.smoke)
    log(f"wrote {path}")
    print(report.table(["config", "runs", "goodput OK/s", "OK %", "shed", "timeouts",
                        "OK p99 ms", "slow p95 ms", "slow p99 ms", "refused (wait)"], summary))
    if args.smoke:
        # The smoke run must show both modes served calls.
        for name in names:
            if not any(r.summary["overall"]["ok"] for r, _, _, _ in results[name]):
                raise SystemExit(f"bench: {name} served no call")


if __name__ == "__main__":
    main()
