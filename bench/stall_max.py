#!/usr/bin/python3
"""Scenario 9, the stall at the highest rate this machine sustains (the adaptive backpressure
article: 65k calls/s, 2.1 ms -> 850 ms for 4 s).

First a sweep per policy: short steady runs at 2.1 ms service time, the offered rate doubling from
--start-rate until a run is not sustained (OK < 99% of slots, any shedding beyond 0.1%, or OK p99
over --max-p99), then bisected down to --precision. Then scenario 4's stall (5 s at 2.1 ms, 4 s at
850 ms, 6 s at 2.1 ms) at each policy's highest sustained rate. Policies: direct (the rig's own
ceiling: load generator and upstream alone), sluice without filters, and
`[queue_wait_budget 50ms, rtt_gradient]`. The upstream has unlimited workers by default, like the
article's goroutine per request: a stall is pure latency, nothing queues inside it.
"""

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import plots  # noqa: E402
import report  # noqa: E402
from loadgen import nearest_rank, outcomes  # noqa: E402
from procs import Binaries, log, workdir  # noqa: E402
from stall import first_after, recovery  # noqa: E402
from target_run import run_target  # noqa: E402

ARTICLE_RATE = 65000


def extra_args(p):
    p.add_argument("--policies", help="comma-separated subset of direct,no_filter,rtt_gradient")
    p.add_argument("--start-rate", type=int, help="first rate of the sweep (default 1000)")
    p.add_argument("--max-rate", type=int, default=128000, help="the sweep stops doubling here")
    p.add_argument("--min-rate", type=int, default=100,
                   help="when the first rate fails, halve down to this before giving up")
    p.add_argument("--retries", type=int, help="runs more at a rate that failed (default 1, "
                   "smoke 0)")
    p.add_argument("--precision", type=float, default=1.15,
                   help="bisect until first failing / last sustained rate is at most this")
    p.add_argument("--probe-seconds", type=float, help="length of a sweep run (default 5)")
    p.add_argument("--max-p99", type=float, default=50.0,
                   help="a sustained rate keeps the OK p99 under this many ms")
    p.add_argument("--rate", type=int,
                   help="skip the sweep: run the stall at this rate for every policy")
    p.add_argument("--workers", type=int, default=0, help="upstream workers (0: unlimited)")
    p.add_argument("--channels", type=int, default=4, help="load generator connections")
    p.add_argument("--sluice-workers", type=int, default=1)
    # 100 (sluice's default) x 4 connections is 400 slots, fewer than a 50 ms budget's queue at
    # 9,500/s: the load generator queued the rest itself, out of the budget's sight (calls
    # waited over a second there while sluice shed almost nothing). See docs/configuration.md.
    p.add_argument("--max-concurrent-streams", type=int, default=1000,
                   help="sluice's listener max_concurrent_streams (default 1000: room for the "
                   "budget's whole queue; sluice's own default is 100)")
    p.add_argument("--budget", default="50ms")
    p.add_argument("--tolerance", type=float,
                   help="rtt_gradient's tolerance (default: the filter's own, 0.85)")
    p.add_argument("--delay-tolerance",
                   help="rtt_gradient's delay_tolerance, e.g. 0ms (default: the filter's own, 1ms)")
    p.add_argument("--service", default="2.1ms", help="normal service time")
    p.add_argument("--stall-service", default="850ms")


def loadgen_args(rate, channels):
    # Room for every call of a stall in flight (rate x 0.85 s) without skipping slots.
    return ["--deadline", "2s", "--channels", str(channels),
            "--max-outstanding", str(max(5000, 2 * rate))]


def judge(run, warmup, end, max_p99):
    """(sustained, outcome row) of one steady probe, after a warm-up."""
    o = outcomes(run.calls, warmup, end)
    p99 = nearest_rank(o["lat"], 0.99)
    slots = o["slots"] or 1
    sustained = (o["ok"] >= 0.99 * slots and o["shed"] <= 0.001 * slots
                 and p99 is not None and p99 <= max_p99)
    return sustained, o, p99


def main():
    args = report.parse_args(__doc__.splitlines()[0], extra_args)
    bins = Binaries(args.build)
    qwb = {"type": "queue_wait_budget", "budget": args.budget}
    rtt = {"type": "rtt_gradient"}
    if args.tolerance is not None:
        rtt["tolerance"] = args.tolerance
    if args.delay_tolerance is not None:
        rtt["delay_tolerance"] = args.delay_tolerance
    all_policies = {"direct": None, "no_filter": [], "rtt_gradient": [qwb, rtt]}
    names = list(all_policies)
    if args.policies:
        names = args.policies.split(",")
    if args.smoke:
        names = [n for n in names if n != "direct"]
    if args.direct_only or not bins.sluice:
        names = ["direct"]
    probe_s = args.probe_seconds or (1.5 if args.smoke else 5.0)
    warmup = 0.25 if args.smoke else 0.5
    start_rate = args.start_rate or (300 if args.smoke else 1000)
    max_rate = 600 if args.smoke else args.max_rate
    precision = 2.0 if args.smoke else args.precision
    if args.retries is None:
        args.retries = 0 if args.smoke else 1
    before, stall, after = (1, 1, 1) if args.smoke else (5, 4, 6)
    upstream = {"workers": args.workers, "delay": args.service}
    listener_extra = {"http2": {"max_concurrent_streams": args.max_concurrent_streams}}
    work = workdir("stall-max")
    log(f"workdir {work}, build {bins.build}")

    sweep_rows, best, exits = [], {}, []
    sweep_points = {n: [] for n in names}
    for name in names:
        if args.rate:
            best[name] = (args.rate, False)
            continue

        def probe(rate, attempt=0, name=name):
            tag = f"{name}.probe{rate}" + (f".a{attempt}" if attempt else "")
            run, _, dead = run_target(bins, work, tag, all_policies[name],
                                      f"{rate}/s:{probe_s:g}s@steady",
                                      loadgen_args(rate, args.channels), upstream,
                                      sluice_workers=args.sluice_workers,
                                      listener_extra=listener_extra)
            exits.extend(f"{tag}: {d}" for d in dead)
            ok, o, p99 = judge(run, warmup, probe_s, args.max_p99)
            ok = ok and not dead
            span = probe_s - warmup
            sweep_rows.append([name, rate, o["slots"], 100.0 * o["ok"] / (o["slots"] or 1),
                               o["shed"], o["timeouts"], o["other"], o["skipped"],
                               o["ok"] / span, nearest_rank(o["lat"], .5), p99,
                               "yes" if ok else "no", os.getloadavg()[0]])
            sweep_points[name].append((rate, o["ok"] / span))
            log(f"{name} at {rate}/s: {'sustained' if ok else 'not sustained'} "
                f"(OK {o['ok']}/{o['slots']}, shed {o['shed']}, p99 {p99})")
            return ok

        def sustained(rate):
            # A neighbour's burst on the shared CPUs can fail one run: a rate counts as sustained
            # when one of 1 + --retries runs at it passes (every attempt is in the table).
            return any(probe(rate, attempt) for attempt in range(1 + args.retries))

        good, bad, rate = None, None, start_rate
        while rate <= max_rate:
            if sustained(rate):
                good, rate = rate, rate * 2
            else:
                bad = rate
                break
        # The first rate already failed: halve down to --min-rate to find one that holds.
        while good is None and bad is not None and bad // 2 >= args.min_rate:
            if sustained(bad // 2):
                good = bad // 2
            else:
                bad //= 2
        while good and bad and bad / good > precision:
            step = 100 if good >= 1000 else 10
            mid = int(round(math.sqrt(good * bad) / step)) * step
            if mid <= good or mid >= bad:
                break
            if sustained(mid):
                good = mid
            else:
                bad = mid
        best[name] = (good or bad or start_rate, good is not None)

    runs = {}
    for name in names:
        rate, _ = best[name]
        schedule = f"{args.service}:{before}s,{args.stall_service}:{stall}s,{args.service}:{after}s"
        phases = f"{rate}/s:{before}s@before,{rate}/s:{stall}s@stall,{rate}/s:{after}s@after"
        run, sampler, dead = run_target(
            bins, work, f"{name}.stall", all_policies[name], phases,
            loadgen_args(rate, args.channels), dict(upstream, schedule=schedule),
            sluice_workers=args.sluice_workers, listener_extra=listener_extra)
        runs[name] = (run, sampler, rate)
        exits.extend(f"{name}.stall: {d}" for d in dead)

    t_stall, t_back, t_end = before, before + stall, before + stall + after
    stall_rows = []
    for name, (run, s, rate) in runs.items():
        pre = outcomes(run.calls, 0.5, t_stall)
        normal = nearest_rank(pre["lat"], 0.95) or 0
        shed_at = first_after(run, t_stall, "8")
        filt = all_policies[name][-1]["type"] if all_policies[name] else None
        inflight = s.series(f"{filt}.in_flight", run.start_unix_ms) if filt else []
        up_inflight = s.series("up.in_flight", run.start_unix_ms)
        up_service = s.series("up.max_in_service", run.start_unix_ms)
        rss = s.series("sluice_rss_kb", run.start_unix_ms)
        st = outcomes(run.calls, t_stall, t_back)
        rec = recovery(run, t_back, t_end, normal, rate)
        aft = outcomes(run.calls, t_back, t_end)
        stall_rows.append([name, rate, f"{100.0 * rate / ARTICLE_RATE:.1f}%",
                           f"{pre['shed']} / {pre['ok']}", normal, st["ok"], st["shed"],
                           st["timeouts"], st["skipped"] + st["other"],
                           None if shed_at is None else (shed_at - t_stall) * 1000,
                           max((v for _, v in inflight), default=None),
                           max((v for _, v in up_inflight), default=None),
                           max((v for _, v in up_service), default=None),
                           max((v for _, v in rss), default=0) / 1024 if rss else None,
                           "-" if rec is None else f"{rec:.1f} s", aft["ok"] / after])

    out = args.out
    prefix = "stall-max" + ("-smoke" if args.smoke else "")
    if any(sweep_points.values()):
        plots.lines(os.path.join(out, f"{prefix}-sweep.png"),
                    [("goodput vs offered (steady service time)", "OK calls/s",
                      [(n, sorted(p)) for n, p in sweep_points.items()]
                      + [("offered", sorted({(r, r) for p in sweep_points.values()
                                             for r, _ in p}))])],
                    "Stall max: the sweep", xlabel="offered calls/s", log_xy=True, marker="o")
    marks = (t_stall, t_back)
    items = [(f"{n} at {rate}/s", r) for n, (r, _, rate) in runs.items()]
    plots.latency_over_time(os.path.join(out, f"{prefix}-latency.png"), items,
                            "Stall at the highest sustained rate: call duration by start time",
                            marks)
    plots.rates_over_time(os.path.join(out, f"{prefix}-rates.png"), items,
                          "Stall at the highest sustained rate: goodput, shed and timeouts per s",
                          0.25, marks)
    panels = []
    for n, (r, s, rate) in runs.items():
        filt = all_policies[n][-1]["type"] if all_policies[n] else None
        series = [("upstream in flight", s.series("up.in_flight", r.start_unix_ms))]
        if filt:
            series += [(f"{filt} limit", s.series(f"{filt}.limit", r.start_unix_ms)),
                       (f"{filt} in_flight", s.series(f"{filt}.in_flight", r.start_unix_ms)),
                       (f"{filt} queued", s.series(f"{filt}.queued", r.start_unix_ms))]
        panels.append((f"{n} at {rate}/s", "count", series))
    plots.lines(os.path.join(out, f"{prefix}-limits.png"), panels,
                "Stall at the highest sustained rate: in-flight, limit, queue (100 ms samples)")

    summary = []
    for n in names:
        rate, found = best[n]
        if args.rate:
            summary.append(f"- {n}: stall run at the given {rate:,}/s (no sweep).")
        elif found:
            summary.append(f"- {n}: **{rate:,} calls/s** sustained, "
                           f"{100.0 * rate / ARTICLE_RATE:.1f}% of the article's "
                           f"{ARTICLE_RATE:,}/s.")
        else:
            summary.append(f"- {n}: not sustained at any rate tried (down to {rate:,}/s); the "
                           "stall ran there anyway.")
    body = [
        "## Setup", "",
        f"- Upstream: `sluice-test-upstream --workers {args.workers} --delay {args.service}` for "
        f"the sweep, `--schedule {args.service}:{before}s,{args.stall_service}:{stall}s,"
        f"{args.service}:{after}s` for the stall; fresh process per run. Workers 0 = unlimited.",
        f"- Load: `sluice-loadgen --phases RATE/s:... {' '.join(loadgen_args(0, args.channels))}`"
        " with `--max-outstanding` = max(5000, 2 x rate), open loop. Every process shares the "
        "machine's CPUs (nothing pinned).",
        f"- Sweep: {probe_s:g} s steady runs from {start_rate:,}/s doubling (at most "
        f"{max_rate:,}/s; halving down to {args.min_rate:,}/s if the first fails), then bisected "
        f"to a ratio <= {precision:g}. Sustained: after a {warmup:g} s warm-up, OK >= 99% of "
        f"slots, shed <= 0.1%, OK p99 <= {args.max_p99:g} ms, in at least one of "
        f"{1 + args.retries} run(s) at that rate (neighbours share the CPUs).",
        f"- rtt_gradient: `[queue_wait_budget {{budget: {args.budget}}}, rtt_gradient"
        + (f" {{tolerance: {args.tolerance:g}}}" if args.tolerance is not None else "")
        + (f" {{delay_tolerance: {args.delay_tolerance}}}" if args.delay_tolerance is not None
           else "")
        + f"]`, otherwise defaults; sluice `workers: {args.sluice_workers}`, listener "
        f"max_concurrent_streams {args.max_concurrent_streams} per connection (x {args.channels} "
        "client connections).",
        "- In-flight columns: the maxima of 100 ms samples (the limiter's from `/limits`, the "
        "upstream's from its Stats RPC right after, so not the same instant); the upstream counts "
        "a call until gRPC's OnDone, after its answer is sent, so its in-flight includes calls "
        "already answered whose permits sluice has released. 'Max upstream in service' is the "
        "upstream's exact maximum of calls between the start of their work and their answer: "
        "what a limit bounds.",
        "- Stall columns as in scenario 4: 'first shed' counted from the stall's start; recovery "
        "until every later 0.5 s bin has goodput >= 95% of offered and OK p95 within max(2x, "
        "+10 ms) of the pre-stall p95.", "",
        "## Highest sustained rate", "",
        *summary, "",
    ]
    if sweep_rows:
        body += ["## Sweep", "",
                 report.table(["policy", "offered/s", "slots", "OK %", "shed", "timeouts",
                               "other", "skipped", "goodput/s", "OK p50 ms", "OK p99 ms",
                               "sustained", "load avg (1 min) after"], sweep_rows), "",
                 f"![sweep]({prefix}-sweep.png)", ""]
    body += [
        "## Stall at that rate", "",
        report.table(["policy", "offered/s", "of 65k", "pre-stall shed / OK",
                      "pre-stall OK p95 ms", "stall OK", "stall shed", "stall timeouts",
                      "stall other/skipped", "first shed after stall start ms",
                      "max limiter in-flight", "max upstream in-flight",
                      "max upstream in service", "max sluice RSS MiB", "recovery",
                      "after: goodput/s"], stall_rows), "",
        f"![latency]({prefix}-latency.png)", "", f"![rates]({prefix}-rates.png)", "",
        f"![limits]({prefix}-limits.png)", "",
        "Process exits during runs (crash or stray kill; those runs are not valid): "
        + ("; ".join(exits) if exits else "none") + ".", "",
        f"Raw CSVs of this run: `{work}` (not kept in the repository).",
    ]
    path = report.write(out, prefix, "Scenario 9: the stall at the highest sustained rate "
                        f"({args.service} -> {args.stall_service} for {stall} s)",
                        "\n".join(body), args.smoke)
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
