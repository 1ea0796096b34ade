#!/usr/bin/python3
"""Scenario 2, slowdown (Part 2 of "gRPC Under Pressure", reproduced as RPC admission).

One upstream worker serves 10 ms for 12 s, 40 ms for 12 s, 10 ms for 12 s; the load generator
offers 80 unary calls/s open loop for 36 s (2 s deadline). Policies, each in fresh processes,
interleaved over the repetitions: direct (no proxy), sluice without filters, fixed_semaphore 1, 8
and 32 behind a queue-wait budget, rtt_gradient and aimd behind the same budget (with the
default FIFO queue and with adaptive LIFO), and a reference fixed_1 with adaptive LIFO. Reports
per phase
(0-12, 12-24, 24-36 s) OK p50/p95/p99, goodput and shed, pooled over repetitions, and the
recovery time after 24 s.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import plots  # noqa: E402
import report  # noqa: E402
from loadgen import nearest_rank, ok_latencies, settled_after  # noqa: E402
from procs import Binaries, log, workdir  # noqa: E402
from target_run import run_target  # noqa: E402


def policies(budget, slo):
    qwb = {"type": "queue_wait_budget", "budget": budget}
    return {
        "direct": None,
        "no_filter": [],
        "fixed_1": [qwb, {"type": "fixed_semaphore", "max_concurrency": 1}],
        "fixed_8": [qwb, {"type": "fixed_semaphore", "max_concurrency": 8}],
        "fixed_32": [qwb, {"type": "fixed_semaphore", "max_concurrency": 32}],
        "rtt_gradient": [qwb, {"type": "rtt_gradient"}],
        "aimd": [qwb, {"type": "aimd", "latency_slo": slo}],
        # The adaptive policies with adaptive LIFO (FIFO until the queue stands for 100 ms).
        "rtt_gradient_alifo": [qwb, {"type": "rtt_gradient", "queue_order": "adaptive_lifo"}],
        "aimd_alifo": [qwb, {"type": "aimd", "latency_slo": slo,
                             "queue_order": "adaptive_lifo"}],
        # Reference, not one of the fixed policies: the perfect fixed limit for this
        # one-worker upstream given the same queue discipline.
        "ref_fixed_1_alifo": [qwb, {"type": "fixed_semaphore", "max_concurrency": 1,
                                    "queue_order": "adaptive_lifo"}],
    }


def extra_args(p):
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--budget", default="100ms", help="queue_wait_budget of the filtered policies")
    p.add_argument("--slo", default="100ms", help="aimd latency_slo")
    p.add_argument("--policies", help="comma-separated subset")
    p.add_argument("--phase-seconds", type=int, help="length of each phase (default 12, smoke 1)")
    p.add_argument("--name", default="slowdown", help="report name: <out>/<name>.md and PNGs")
    p.add_argument("--admin-port", type=int, default=0,
                   help="pin sluice's admin port (0: ephemeral), e.g. to keep a dashboard open")
    p.add_argument("--print-table", action="store_true",
                   help="also print the per-phase table on stdout")


def recovery_s(run, normal_p95, t_recover, t_end, bin_s=1.0):
    """Seconds after t_recover until every later 1 s bin (by start time) has only OK calls with
    p95 <= max(2 x the normal phase's p95, normal p95 + 10 ms). None: not within the window."""
    bound = max(2 * normal_p95, normal_p95 + 10)
    nbins = int(round((t_end - t_recover) / bin_s))
    good = []
    for i in range(nbins):
        t0, t1 = t_recover + i * bin_s, t_recover + (i + 1) * bin_s
        calls = [c for c in run.calls if t0 <= float(c["scheduled_ms"]) / 1000 < t1]
        bad = any(c["kind"] != "call" or c["status"] != "0" for c in calls)
        lat = [float(c["latency_ms"]) for c in calls if c["kind"] == "call" and c["status"] == "0"]
        p95 = nearest_rank(lat, 0.95)
        good.append(not bad and p95 is not None and p95 <= bound)
    first = settled_after(good)
    return None if first is None else first * bin_s


def main():
    args = report.parse_args(__doc__.splitlines()[0], extra_args)
    bins = Binaries(args.build)
    step = args.phase_seconds or (1 if args.smoke else 12)
    reps = 1 if args.smoke else args.reps
    all_policies = policies(args.budget, args.slo)
    names = list(all_policies)
    if args.smoke:
        names = ["direct", "no_filter", "fixed_8", "rtt_gradient_alifo"]
    if args.policies:
        names = args.policies.split(",")
    if args.direct_only or not bins.sluice:
        names = ["direct"]
    schedule = f"10ms:{step}s,40ms:{step}s,10ms:{step}s"
    phases = f"80/s:{step}s@normal,80/s:{step}s@slow,80/s:{step}s@recovered"
    work = workdir("slowdown")
    log(f"workdir {work}, build {bins.build}")

    results = {n: [] for n in names}  # policy -> [(run, sampler)]
    invalid = []  # (tag, reason): attempts thrown away and run again
    for rep in range(reps):
        # Rotate the order each repetition so no policy always runs first or last.
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            for attempt in range(3):
                tag = f"{name}.r{rep}" + (f".a{attempt}" if attempt else "")
                run, sampler, dead = run_target(
                    bins, work, tag, all_policies[name], phases,
                    ["--deadline", "2s", "--channels", "4", "--max-outstanding", "1000"],
                    {"workers": 1, "delay": "10ms", "schedule": schedule},
                    admin_port=args.admin_port,
                    on_sluice_started=lambda sl, name=name: log(
                        f"{name}: dashboard at http://127.0.0.1:{sl.admin_port}/ while this "
                        f"policy runs ({3 * step} s)"))
                if not dead:
                    results[name].append((run, sampler))
                    break
                log(f"{tag} invalid: {', '.join(dead)}; running it again")
                invalid.append((tag, ", ".join(dead)))

    # Tables: pooled over repetitions, cohorts by scheduled time.
    windows = [("normal", 0, step), ("slow", step, 2 * step), ("recovered", 2 * step, 3 * step)]
    rows, summary_rows, pooled = [], [], {}
    for name in names:
        runs = [r for r, _ in results[name]]
        normal_p95s = []
        for label, t0, t1 in windows:
            lat = [x for r in runs for x in ok_latencies(r, t0, t1, by="scheduled_ms")]
            ph = [r.phase(label) for r in runs]
            slots = sum(p["slots"] for p in ph)
            ok = sum(p["ok"] for p in ph)
            shed = sum(p["shed"] for p in ph)
            timeouts = sum(p["timed_out"] for p in ph)
            other = sum(p["calls"] for p in ph) - ok - shed - timeouts
            skipped = sum(p["skipped_cap"] + p["skipped_late"] for p in ph)
            qw = [float(c["queue_us"]) / 1000 for r in runs for c in r.calls
                  if c["kind"] == "call" and c["queue_us"]
                  and t0 <= float(c["scheduled_ms"]) / 1000 < t1]
            rows.append([name, label, slots, ok, shed, timeouts, other, skipped,
                         ok / (len(runs) * (t1 - t0)), nearest_rank(lat, .5),
                         nearest_rank(lat, .95), nearest_rank(lat, .99),
                         max(lat) if lat else None, nearest_rank(qw, .95)])
            if label == "normal":
                normal_p95s = [nearest_rank(ok_latencies(r, t0, t1, by="scheduled_ms"), .95) or 0
                               for r in runs]
        tail = [x for r in runs for x in ok_latencies(r, step, 3 * step, by="scheduled_ms")]
        slow = [x for r in runs for x in ok_latencies(r, step, 2 * step, by="scheduled_ms")]
        goodput = sum(r.summary["overall"]["ok"] for r in runs) / (len(runs) * 3 * step)
        rec = [recovery_s(r, p95, 2 * step, 3 * step) for r, p95 in zip(runs, normal_p95s)]
        pooled[name] = (nearest_rank(tail, .95), nearest_rank(slow, .95), goodput)
        summary_rows.append([name, len(runs), nearest_rank(tail, .95), nearest_rank(slow, .95),
                             nearest_rank(slow, .99), goodput,
                             ", ".join(">phase" if x is None else f"{x:.0f} s" for x in rec)])

    # The target: an adaptive policy beating the best fixed one on both tails, >= 95%
    # of its goodput. "Best fixed" = the fixed policy (fixed_1/8/32, default FIFO) with
    # the lowest slowdown-only p95. ref_* rows are shown for comparison, not part of the target.
    verdict = []
    fixed = {n: v for n, v in pooled.items() if n.startswith("fixed_") and v[1] is not None}
    if fixed:
        best = min(fixed, key=lambda n: fixed[n][1])
        bt, bs, bg = fixed[best]
        verdict.append(f"Best fixed policy by slowdown-only p95: **{best}** "
                       f"(pooled {step}-{3 * step} s p95 "
                       f"{report.fmt(bt)} ms, slowdown p95 {report.fmt(bs)} ms, goodput "
                       f"{report.fmt(bg)}/s).")
        for n in ("rtt_gradient", "aimd", "rtt_gradient_alifo", "aimd_alifo",
                  "ref_fixed_1_alifo"):
            if n not in pooled or pooled[n][1] is None:
                continue
            t, s, g = pooled[n]
            win = t < bt and s < bs and g >= 0.95 * bg
            if n.startswith("ref_"):
                verdict.append(f"- {n} (reference, not an adaptive policy): pooled p95 "
                               f"{report.fmt(t)} ms, slowdown p95 {report.fmt(s)} ms, goodput "
                               f"{report.fmt(g)}/s = {100 * g / bg:.0f}% of {best}.")
                continue
            beats_t = 'beats' if t < bt else 'does not beat'
            beats_s = 'beats' if s < bs else 'does not beat'
            verdict.append(f"- {n}: pooled p95 {report.fmt(t)} ms ({beats_t}), "
                           f"slowdown p95 {report.fmt(s)} ms ({beats_s}), "
                           f"goodput {report.fmt(g)}/s = {100 * g / bg:.0f}% of {best}: "
                           f"target **{'met' if win else 'missed'}**.")

    # Plots of the last repetition of each policy.
    out = args.out
    prefix = args.name + ("-smoke" if args.smoke else "")
    last = [(n, results[n][-1]) for n in names]
    marks = (step, 2 * step)
    plots.latency_over_time(os.path.join(out, f"{prefix}-latency.png"),
                            [(n, r) for n, (r, _) in last],
                            "Slowdown: call duration by start time (last repetition)", marks)
    plots.rates_over_time(os.path.join(out, f"{prefix}-rates.png"),
                          [(n, r) for n, (r, _) in last],
                          "Slowdown: goodput, shed and timeouts per second", phase_marks=marks)
    panels = []
    for n, (r, s) in last:
        if all_policies[n] is None:
            continue
        filt = all_policies[n][-1]["type"] if all_policies[n] else None
        series = []
        if filt:
            series += [(f"{filt} limit", s.series(f"{filt}.limit", r.start_unix_ms)),
                       (f"{filt} in_flight", s.series(f"{filt}.in_flight", r.start_unix_ms)),
                       (f"{filt} queued", s.series(f"{filt}.queued", r.start_unix_ms))]
        series.append(("upstream queue", s.series("up.queue_length", r.start_unix_ms)))
        panels.append((n, "count", series))
    if panels:
        plots.lines(os.path.join(out, f"{prefix}-limits.png"), panels,
                    "Slowdown: limit, in-flight and queued (sampled every 100 ms from /limits)")

    body = [
        "## Setup", "",
        f"- Upstream: `sluice-test-upstream --workers 1 --schedule {schedule}` (schedule starts "
        "at the first request), fresh process per run.",
        f"- Load: `sluice-loadgen --phases {phases} --deadline 2s --channels 4 "
        "--max-outstanding 1000` (open loop, fixed rate; slots never made up).",
        f"- Filtered policies put `queue_wait_budget {{budget: {args.budget}}}` before the "
        f"limiter; aimd has `latency_slo: {args.slo}`; sluice runs with `workers: 1`.",
        f"- {reps} repetition(s), policy order rotated each repetition. A run during which the "
        "upstream or sluice exited is invalid and run again: "
        + ("; ".join(f"`{t}` ({r})" for t, r in invalid) if invalid else "none this time") + ".",
        "- Latency is the client's end-to-end call duration of OK calls, grouped by the phase that "
        "scheduled them; shed and timed-out calls are counted, never given a latency. The "
        "research measured server queue residence of messages inside one stream, so its "
        "numbers are a reference point, not the same metric.", "",
        "## Target", "",
        *(verdict or ["(no fixed/adaptive pair in this run)"]), "",
        "## Tails and goodput (pooled over repetitions)", "",
        report.table(["policy", "runs", f"{step}-{3 * step} s OK p95 ms",
                      f"{step}-{2 * step} s OK p95 ms", f"{step}-{2 * step} s OK p99 ms",
                      "goodput OK/s", f"recovery after {2 * step} s, per run"],
                     summary_rows), "",
        "Recovery: seconds after 24 s until every later 1 s bin has only OK calls and an OK p95 "
        "within max(2x, +10 ms) of that run's normal-phase p95; "
        "'>phase' = not before the run ended.", "",
        "## Per phase (pooled)", "",
        report.table(["policy", "phase", "slots", "OK", "shed", "timeouts", "other",
                      "skipped slots", "goodput/s", "p50 ms", "p95 ms", "p99 ms", "max ms",
                      "queue-wait p95 ms"],
                     rows), "",
        "## Plots (last repetition)", "",
        f"![latency]({prefix}-latency.png)", "", f"![rates]({prefix}-rates.png)", "",
        f"![limits]({prefix}-limits.png)" if panels else "", "",
        f"Raw CSVs of this run: `{work}` (not kept in the repository).",
    ]
    path = report.write(out, prefix, "Scenario 2: slowdown (10 -> 40 -> 10 ms, 80 calls/s)",
                        "\n".join(body), args.smoke)
    log(f"wrote {path}")
    if args.print_table:
        print()
        print(report.table(["policy", "phase", "slots", "OK", "shed", "timeouts", "other",
                            "skipped slots", "goodput/s", "p50 ms", "p95 ms", "p99 ms", "max ms",
                            "queue-wait p95 ms"], rows))
        print()
        print("\n".join(verdict))
        print()
        print(f"What happened while the worker was slow ({step}-{2 * step} s, 2 s deadline):")
        for r in rows:
            if r[1] != "slow":
                continue
            name, slots, ok, shed, timeouts = r[0], r[2], r[3], r[4], r[5]
            shed_text = (f"{shed} shed with RESOURCE_EXHAUSTED after waiting <= {args.budget}"
                         if shed else "none shed")
            print(f"  {name:>20}: {ok} of {slots} calls OK (p95 {report.fmt(r[10])} ms), "
                  f"{shed_text}, {timeouts} timed out")
        print(f"Plots: {os.path.join(out, prefix)}-{{latency,rates,limits}}.png; "
              f"report: {path}")


if __name__ == "__main__":
    main()
