#!/usr/bin/python3
"""Scenario 8, criticality under the Part-2 slowdown (issue 13: traffic classes).

The slowdown of scenario 2 (one upstream worker at 10 -> 40 -> 10 ms for 12 s each, 2 s
deadline) with its 80 calls/s split into 15/s critical and 65/s sheddable callers (two load
generators, header `x-sluice-criticality`). Critical demand alone always fits (15/s x 40 ms = 60%
of the worker), the total does not while the worker is slow (capacity 25/s). The same filter chain
runs with the listener's `criticality` block and without it (then every request is `critical`
and the header is ignored). Target: with classes, critical goodput >= 95% of offered in every
phase, and the sheddable callers absorb the shedding.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import plots  # noqa: E402
import report  # noqa: E402
from loadgen import MergedRun, nearest_rank, outcomes  # noqa: E402
from procs import Binaries, log, workdir  # noqa: E402
from target_run import run_target_clients  # noqa: E402

HEADER = "x-sluice-criticality"
TARGET_GOODPUT = 0.95
CLASSES_BLOCK = {"criticality": {"header": HEADER, "default": "critical"}}


def configs(budget, queue_order):
    """name -> (filters, listener_extra)."""
    chain = [{"type": "queue_wait_budget", "budget": budget},
             {"type": "rtt_gradient", "queue_order": queue_order}]
    return {
        "no_filter": ([], None),
        "no_classes": (chain, None),
        "classes": (chain, CLASSES_BLOCK),
    }


def extra_args(p):
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--critical-rate", type=int, default=15)
    p.add_argument("--sheddable-rate", type=int, default=65)
    p.add_argument("--budget", default="100ms", help="queue_wait_budget (both classes)")
    p.add_argument("--queue-order", default="adaptive_lifo",
                   choices=("fifo", "lifo", "adaptive_lifo"), help="rtt_gradient's queue_order")
    p.add_argument("--phase-seconds", type=int, help="length of each phase (default 12, smoke 2)")
    p.add_argument("--configs", help="comma-separated subset of no_filter,no_classes,classes")


def main():
    args = report.parse_args(__doc__.splitlines()[0], extra_args)
    bins = Binaries(args.build)
    step = args.phase_seconds or (2 if args.smoke else 12)
    reps = 1 if args.smoke else args.reps
    all_configs = configs(args.budget, args.queue_order)
    names = ["no_classes", "classes"] if args.smoke else list(all_configs)
    if args.configs:
        names = args.configs.split(",")
    if args.direct_only or not bins.sluice:
        raise SystemExit("criticality: every configuration goes through sluice")
    schedule = f"10ms:{step}s,40ms:{step}s,10ms:{step}s"
    windows = [("normal", 0, step), ("slow", step, 2 * step), ("recovered", 2 * step, 3 * step)]
    rates = {"critical": args.critical_rate, "sheddable": args.sheddable_rate}

    def plan(rate):
        return ",".join(f"{rate}/s:{step}s@{label}" for label, _, _ in windows)

    common = ["--deadline", "2s", "--channels", "2", "--max-outstanding", "1000"]
    clients = [(c, plan(r), common + ["--metadata", f"{HEADER}={c}"]) for c, r in rates.items()]
    work = workdir("criticality")
    log(f"workdir {work}, build {bins.build}")

    results = {n: [] for n in names}  # config -> [(runs, sampler)]
    invalid = []
    for rep in range(reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            filters, extra = all_configs[name]
            for attempt in range(3):
                tag = f"{name}.r{rep}" + (f".a{attempt}" if attempt else "")
                runs, sampler, dead = run_target_clients(
                    bins, work, tag, filters, clients,
                    {"workers": 1, "delay": "10ms", "schedule": schedule},
                    listener_extra=extra)
                if not dead:
                    results[name].append((runs, sampler))
                    break
                log(f"{tag} invalid: {', '.join(dead)}; running it again")
                invalid.append((tag, ", ".join(dead)))

    rows, verdict = [], []
    for name in names:
        reps_done = results[name]
        crit_ok_all = True
        for label, t0, t1 in windows:
            per_class = {}
            for c in rates:
                o = {"slots": 0, "ok": 0, "shed": 0, "timeouts": 0, "other": 0, "skipped": 0,
                     "lat": []}
                for runs, _ in reps_done:
                    x = outcomes(runs[c].calls, t0, t1)
                    for k in o:
                        o[k] += x[k]
                per_class[c] = o
                n = len(reps_done) * (t1 - t0)
                pct = 100.0 * o["ok"] / o["slots"] if o["slots"] else None
                rows.append([name, label, c, o["slots"] / n, o["ok"] / n, pct, o["shed"],
                             o["timeouts"], o["other"] + o["skipped"],
                             nearest_rank(o["lat"], .5), nearest_rank(o["lat"], .95)])
            crit = per_class["critical"]
            share = crit["ok"] / crit["slots"] if crit["slots"] else 0
            crit_ok_all = crit_ok_all and share >= TARGET_GOODPUT
            if name != "no_filter":
                verdict.append(f"- {name}, {label}: critical goodput {100 * share:.1f}% of "
                               f"offered; shed critical {crit['shed']}, sheddable "
                               f"{per_class['sheddable']['shed']}.")
        if name == "classes":
            verdict.insert(0, f"**{'Met' if crit_ok_all else 'Missed'}** with classes: critical "
                              f"goodput {'>=' if crit_ok_all else 'below'} "
                              f"{TARGET_GOODPUT:.0%} of offered in "
                              f"{'every phase' if crit_ok_all else 'some phase'}.")

    out = args.out
    prefix = "criticality" + ("-smoke" if args.smoke else "")
    marks = (step, 2 * step)
    last = {n: results[n][-1] for n in names}
    panels = []
    for n in names:
        runs, _ = last[n]
        for c in rates:
            panels.append((f"{n} / {c}", runs[c]))
    plots.rates_over_time(os.path.join(out, f"{prefix}-rates.png"), panels,
                          "Criticality under the slowdown: goodput, shed and timeouts per second "
                          "per class (last repetition)", phase_marks=marks)
    plots.latency_over_time(os.path.join(out, f"{prefix}-latency.png"),
                            [(n, MergedRun(last[n][0])) for n in names],
                            "Criticality: call duration by start time, both classes (last "
                            "repetition)", marks)

    body = [
        "## Setup", "",
        f"- Upstream: `sluice-test-upstream --workers 1 --schedule {schedule}` (as scenario 2), "
        "fresh process per run.",
        "- Load: two `sluice-loadgen` processes started together, "
        + "; ".join(f"{c}: `--phases {p} {' '.join(a)}`" for c, p, a in clients) + ".",
        f"- Filters of `no_classes` and `classes`: `[queue_wait_budget {{budget: {args.budget}}}"
        f", rtt_gradient {{queue_order: {args.queue_order}}}]` (the best adaptive chain of "
        "scenario 2), sluice `workers: 1`. `classes` adds the listener block "
        f"`criticality: {{header: {HEADER}, default: critical}}`; without it every request is "
        "`critical`. `no_filter` is sluice without filters, for reference.",
        f"- {reps} repetition(s), configuration order rotated each repetition; a run during which "
        "the upstream or sluice exited is run again: "
        + ("; ".join(f"`{t}` ({r})" for t, r in invalid) if invalid else "none this time") + ".",
        "- Offered and goodput: slots and OK calls per second by the slot's scheduled time, "
        "pooled over repetitions. Latency: client end-to-end duration of OK calls.", "",
        f"## Target: critical goodput >= {TARGET_GOODPUT:.0%} of offered in every phase", "",
        *verdict, "",
        "## Per phase and class (pooled)", "",
        report.table(["config", "phase", "class", "offered/s", "goodput/s", "goodput % of offered",
                      "shed", "timeouts", "other/skipped", "OK p50 ms", "OK p95 ms"], rows), "",
        f"![rates]({prefix}-rates.png)", "", f"![latency]({prefix}-latency.png)", "",
        f"Raw CSVs of this run: `{work}` (not kept in the repository).",
    ]
    path = report.write(out, prefix, "Scenario 8: criticality under the slowdown "
                        f"({args.critical_rate}/s critical + {args.sheddable_rate}/s sheddable)",
                        "\n".join(body), args.smoke)
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
