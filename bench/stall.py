#!/usr/bin/python3
"""Scenario 4, stall (the adaptive backpressure article).

A high open-loop rate while the upstream's latency jumps from ~2 ms to 850 ms for 4 s and back.
Checks that sluice's RSS and in-flight stay bounded, that shedding starts within milliseconds of
the stall being visible, and measures recovery after it.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import plots  # noqa: E402
import report  # noqa: E402
from loadgen import nearest_rank, ok_latencies, settled_after  # noqa: E402
from procs import Binaries, log, workdir  # noqa: E402
from target_run import run_target  # noqa: E402


def extra_args(p):
    p.add_argument("--rate", type=int, default=1000, help="calls/s offered")
    p.add_argument("--workers", type=int, default=16, help="upstream workers")
    p.add_argument("--budget", default="50ms")


def first_after(run, t, status):
    """End time (s) of the first call with `status` that ended after t."""
    ends = [float(c["end_ms"]) / 1000 for c in run.calls
            if c["kind"] == "call" and c["status"] == status and float(c["end_ms"]) / 1000 >= t]
    return min(ends) if ends else None


def recovery(run, t_from, t_end, normal_p95, offered, bin_s=0.5):
    """Seconds after t_from until every later bin (by start time) has goodput >= 95% of the
    offered rate and OK p95 <= max(2x, +10 ms) of the pre-stall p95."""
    bound = max(2 * normal_p95, normal_p95 + 10)
    nbins = int(round((t_end - t_from) / bin_s))
    good = []
    for i in range(nbins):
        t0, t1 = t_from + i * bin_s, t_from + (i + 1) * bin_s
        lat = ok_latencies(run, t0, t1, by="scheduled_ms")
        p95 = nearest_rank(lat, 0.95)
        good.append(len(lat) >= 0.95 * offered * bin_s and p95 is not None and p95 <= bound)
    first = settled_after(good)
    return None if first is None else first * bin_s


def main():
    args = report.parse_args(__doc__.splitlines()[0], extra_args)
    bins = Binaries(args.build)
    before, stall, after = (2, 2, 2) if args.smoke else (5, 4, 6)
    rate = 200 if args.smoke else args.rate
    schedule = f"2ms:{before}s,850ms:{stall}s,2ms:{after}s"
    phases = f"{rate}/s:{before}s@before,{rate}/s:{stall}s@stall,{rate}/s:{after}s@after"
    qwb = {"type": "queue_wait_budget", "budget": args.budget}
    policies = {"direct": None, "no_filter": [],
                "rtt_gradient": [qwb, {"type": "rtt_gradient"}],
                "aimd": [qwb, {"type": "aimd", "latency_slo": "20ms"}],
                "fixed_32": [qwb, {"type": "fixed_semaphore", "max_concurrency": 32}]}
    if args.smoke:
        policies = {k: policies[k] for k in ("direct", "no_filter", "rtt_gradient")}
    if args.direct_only or not bins.sluice:
        policies = {"direct": None}
    work = workdir("stall")
    log(f"workdir {work}, build {bins.build}")

    runs = {}
    exits = []  # processes that exited during a run: the run is kept, and flagged in the report
    for name, filters in policies.items():
        run, sampler, dead = run_target(
            bins, work, name, filters, phases,
            ["--deadline", "2s", "--channels", "4", "--max-outstanding", "5000"],
            {"workers": args.workers, "delay": "2ms", "schedule": schedule})
        runs[name] = (run, sampler)
        exits.extend(f"{name}: {d}" for d in dead)

    t_stall, t_back, t_end = before, before + stall, before + stall + after
    rows = []
    for name, (run, s) in runs.items():
        normal = nearest_rank(ok_latencies(run, 0.5, t_stall, by="scheduled_ms"), 0.95) or 0
        shed_at = first_after(run, t_stall, "8")
        filt = policies[name][-1]["type"] if policies[name] else None
        inflight = s.series(f"{filt}.in_flight", run.start_unix_ms) if filt else []
        up_inflight = s.series("up.in_flight", run.start_unix_ms)
        rss = s.series("sluice_rss_kb", run.start_unix_ms)
        st = run.phase("stall")
        rec = recovery(run, t_back, t_end, normal, rate)
        rows.append([name, normal, st["ok"], st["shed"], st["timed_out"],
                     run.summary["overall"]["skipped_cap"] + run.summary["overall"]["skipped_late"],
                     None if shed_at is None else (shed_at - t_stall) * 1000,
                     max((v for _, v in inflight), default=None),
                     max((v for _, v in up_inflight), default=None),
                     max((v for _, v in rss), default=0) / 1024 if rss else None,
                     "-" if rec is None else f"{rec:.1f} s",
                     run.phase("after")["goodput_per_s"]])

    out = args.out
    prefix = "stall" + ("-smoke" if args.smoke else "")
    marks = (t_stall, t_back)
    items = [(n, r) for n, (r, _) in runs.items()]
    plots.latency_over_time(os.path.join(out, f"{prefix}-latency.png"), items,
                            "Stall: call duration by start time", marks)
    plots.rates_over_time(os.path.join(out, f"{prefix}-rates.png"), items,
                          "Stall: goodput, shed and timeouts per second", 0.25, marks)
    panels = []
    for n, (r, s) in runs.items():
        filt = policies[n][-1]["type"] if policies[n] else None
        series = [("upstream in flight", s.series("up.in_flight", r.start_unix_ms))]
        if filt:
            series += [(f"{filt} limit", s.series(f"{filt}.limit", r.start_unix_ms)),
                       (f"{filt} in_flight", s.series(f"{filt}.in_flight", r.start_unix_ms)),
                       (f"{filt} queued", s.series(f"{filt}.queued", r.start_unix_ms))]
        panels.append((n, "count", series))
        if policies[n] is not None:
            panels.append((f"{n}: sluice RSS", "MiB",
                           [("RSS", [(t, v / 1024) for t, v in
                                     s.series("sluice_rss_kb", r.start_unix_ms)])]))
    plots.lines(os.path.join(out, f"{prefix}-limits.png"), panels,
                "Stall: in-flight, limit, queue and sluice RSS (sampled every 100 ms)")

    body = [
        "## Setup", "",
        f"- Upstream: `sluice-test-upstream --workers {args.workers} --schedule {schedule}` "
        "(service time picked when a worker starts a job).",
        f"- Load: `sluice-loadgen --phases {phases} --deadline 2s --channels 4 "
        "--max-outstanding 5000` (open loop).",
        f"- Filtered policies put `queue_wait_budget {{budget: {args.budget}}}` before the limiter"
        "; sluice runs with `workers: 1`.",
        f"- 'first shed' is when the first RESOURCE_EXHAUSTED answer reached the client, counted "
        f"from the stall's start ({t_stall} s). Calls admitted just before the stall still take "
        "850 ms, so the first RTT sample showing the stall arrives ~850 ms in; a budget sheds on "
        "queue wait before that.",
        "- Recovery: time after the stall ends until every later 0.5 s bin has goodput >= 95% of "
        "the offered rate and an OK p95 within max(2x, +10 ms) of the pre-stall p95.", "",
        "## Results", "",
        report.table(["policy", "pre-stall OK p95 ms", "stall OK", "stall shed", "stall timeouts",
                      "skipped slots", "first shed after stall start ms",
                      "max limiter in-flight", "max upstream in-flight", "max sluice RSS MiB",
                      "recovery", "after: goodput/s"], rows), "",
        f"![latency]({prefix}-latency.png)", "", f"![rates]({prefix}-rates.png)", "",
        f"![limits]({prefix}-limits.png)", "",
        "Process exits during runs (crash or stray kill; those runs are not valid): "
        + ("; ".join(exits) if exits else "none") + ".", "",
        f"Raw CSVs of this run: `{work}` (not kept in the repository).",
    ]
    path = report.write(out, prefix, f"Scenario 4: stall (2 ms -> 850 ms for {stall} s at "
                        f"{rate} calls/s)", "\n".join(body), args.smoke)
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
