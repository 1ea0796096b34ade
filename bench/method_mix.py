#!/usr/bin/python3
"""Scenario 7, method-mix shift with capacity to spare (issue 13: shed nothing).

100 calls/s (Poisson) of two unary methods with their own `:path`: `Unary` at 2 ms and `Fail`
(answering OK) at 40 ms, the mix moving 90/10 -> 50/50 -> 10/90 in three phases, against an
upstream with 64 workers (at most ~4 calls in service). Two load generators run at once, one per
method. Policies: sluice without filters, `[queue_wait_budget 50ms, rtt_gradient]` and
`[queue_wait_budget 50ms, aimd 200ms SLO]`. Target: <= 1% shed in every phase.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import plots  # noqa: E402
import report  # noqa: E402
from loadgen import MergedRun, nearest_rank, outcomes  # noqa: E402
from procs import Binaries, log, workdir  # noqa: E402
from target_run import run_target_clients, spare_capacity_policies  # noqa: E402

MIXES = [(90, 10), (50, 50), (10, 90)]  # percent fast / slow per phase
TARGET_SHED = 0.01


def extra_args(p):
    p.add_argument("--rate", type=int, default=100, help="calls/s offered, both methods")
    p.add_argument("--phase-seconds", type=int, help="length of each phase (default 12, smoke 3)")
    p.add_argument("--fast", default="2ms", help="service time of the fast method (Unary)")
    p.add_argument("--slow", default="40ms", help="service time of the slow method (Fail)")
    p.add_argument("--workers", type=int, default=64, help="upstream workers")
    p.add_argument("--budget", default="50ms")
    p.add_argument("--slo", default="200ms", help="aimd latency_slo")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--policies", help="comma-separated subset")


def phase_name(fast, slow):
    return f"mix{fast}_{slow}"


def main():
    args = report.parse_args(__doc__.splitlines()[0], extra_args)
    bins = Binaries(args.build)
    step = args.phase_seconds or (3 if args.smoke else 12)
    all_policies = spare_capacity_policies(args.budget, args.slo)
    names = list(all_policies)
    if args.policies:
        names = args.policies.split(",")
    if args.direct_only or not bins.sluice:
        raise SystemExit("method_mix: every policy goes through sluice")

    def plan(share):
        return ",".join(f"{args.rate * mix[share] / 100:g}/s:{step}s@{phase_name(*mix)}"
                        for mix in MIXES)

    common = ["--deadline", "2s", "--channels", "2", "--max-outstanding", "1000",
              "--arrivals", "poisson"]
    clients = [
        ("fast", plan(0), common + ["--method", "unary", "--service-time", args.fast,
                                    "--seed", str(args.seed)]),
        ("slow", plan(1), common + ["--method", "fail", "--service-time", args.slow,
                                    "--seed", str(args.seed + 1)]),
    ]
    work = workdir("method-mix")
    log(f"workdir {work}, build {bins.build}")

    results, exits = {}, []
    for name in names:
        runs, sampler, dead = run_target_clients(
            bins, work, name, all_policies[name], clients,
            {"workers": args.workers, "delay": "0"})
        results[name] = (runs, sampler)
        exits.extend(f"{name}: {d}" for d in dead)

    rows, verdict = [], []
    for name, (runs, s) in results.items():
        filt = all_policies[name][-1]["type"] if all_policies[name] else None
        for i, mix in enumerate(MIXES):
            t0, t1 = i * step, (i + 1) * step
            per = {c: outcomes(runs[c].calls, t0, t1) for c in runs}
            slots = sum(o["slots"] for o in per.values())
            shed = sum(o["shed"] for o in per.values())
            lims = [v for t, v in s.series(f"{filt}.limit", runs["fast"].start_unix_ms)
                    if t0 <= t < t1] if filt else []
            f, w = per["fast"], per["slow"]
            rows.append([name, f"{mix[0]}/{mix[1]}", f["slots"], f["ok"], f["shed"],
                         w["slots"], w["ok"], w["shed"],
                         100.0 * shed / slots if slots else None,
                         sum(o["timeouts"] + o["other"] + o["skipped"] for o in per.values()),
                         nearest_rank(f["lat"], .99), nearest_rank(w["lat"], .99),
                         min(lims) if lims else None])
            if filt:
                met = slots and shed <= TARGET_SHED * slots
                verdict.append(f"- {name}, {mix[0]}/{mix[1]}: {shed} of {slots} shed "
                               f"({report.fmt(100.0 * shed / slots if slots else None, 2)}%): "
                               f"**{'met' if met else 'missed'}**.")

    out = args.out
    prefix = "method-mix" + ("-smoke" if args.smoke else "")
    marks = (step, 2 * step)
    merged = [(n, MergedRun(runs)) for n, (runs, _) in results.items()]
    plots.latency_over_time(os.path.join(out, f"{prefix}-latency.png"), merged,
                            f"Method mix {' -> '.join(f'{a}/{b}' for a, b in MIXES)} "
                            f"({args.fast} / {args.slow}): call duration by start time", marks)
    panels = []
    for n, (runs, s) in results.items():
        filt = all_policies[n][-1]["type"] if all_policies[n] else None
        t0 = runs["fast"].start_unix_ms
        series = [("upstream in flight", s.series("up.in_flight", t0))]
        if filt:
            series = [(f"{filt} limit", s.series(f"{filt}.limit", t0)),
                      (f"{filt} in_flight", s.series(f"{filt}.in_flight", t0)),
                      (f"{filt} queued", s.series(f"{filt}.queued", t0))] + series
        panels.append((n, "count", series))
    plots.lines(os.path.join(out, f"{prefix}-limits.png"), panels,
                "Method mix: limit, in-flight and queued (sampled every 100 ms)")

    baselines = []
    for n, (_, s) in results.items():
        for lim in s.final_limits or []:
            for b in lim.get("baselines", []):
                baselines.append([n, lim.get("filter"), b.get("method"), b.get("rtt_noload_ms"),
                                  b.get("samples")])

    body = [
        "## Setup", "",
        f"- Upstream: `sluice-test-upstream --workers {args.workers}`; each call asks for its "
        f"service time: `Unary` {args.fast}, `Fail` (status 0, so it answers OK) {args.slow}. "
        "Fresh processes per policy.",
        "- Load: two `sluice-loadgen` processes started together, "
        f"`--phases {clients[0][1]}` ({' '.join(clients[0][2])}) and "
        f"`--phases {clients[1][1]}` ({' '.join(clients[1][2])}).",
        f"- At the 10/90 phase the upstream has ~{(args.rate * 0.9 * 0.040):.1f} calls in "
        f"service on average out of {args.workers} workers: capacity is to spare throughout.",
        f"- Filtered policies: `queue_wait_budget {{budget: {args.budget}}}` before the limiter "
        f"(no capacity hint); aimd has `latency_slo: {args.slo}`; sluice runs with `workers: 1`.",
        "- Counts by the slot's scheduled time; 'not OK otherwise' = timeouts, other statuses and "
        "skipped slots. Limit min: the lowest 100 ms sample of `/limits` in the phase.", "",
        f"## Target: <= {TARGET_SHED:.0%} shed in every phase of the filtered runs", "",
        *verdict, "",
        "## Results", "",
        report.table(["policy", "mix fast/slow", "fast calls", "fast OK", "fast shed",
                      "slow calls", "slow OK", "slow shed", "shed % (both)",
                      "not OK otherwise", "fast OK p99 ms", "slow OK p99 ms", "limit min"],
                     rows), "",
        "Per-method no-load baselines at the end of each run (`/limits`):", "",
        report.table(["policy", "filter", "method", "rtt_noload ms", "samples"], baselines)
        if baselines else "(none)", "",
        f"![latency]({prefix}-latency.png)", "", f"![limits]({prefix}-limits.png)", "",
        "Process exits during runs (crash or stray kill; those runs are not valid): "
        + ("; ".join(exits) if exits else "none") + ".", "",
        f"Raw CSVs of this run: `{work}` (not kept in the repository).",
    ]
    path = report.write(out, prefix, f"Scenario 7: method mix shifting at {args.rate} calls/s "
                        "with capacity to spare", "\n".join(body), args.smoke)
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
