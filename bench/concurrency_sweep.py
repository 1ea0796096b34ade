#!/usr/bin/python3
"""Scenario 3, concurrency sweep ("Measure tail latency before raising request concurrency").

Upstream: 2 workers x 20 ms. Closed loop, 40 calls per phase at concurrency 1, 4 and 12, an 80 ms
deadline, two rounds in opposite order (1, 4, 12, 12, 4, 1). Direct, through sluice without
filters, and through sluice with a queue-wait budget in front of a 2-permit semaphore: timeouts
should turn into fast RESOURCE_EXHAUSTED answers while goodput stays at capacity (~100/s).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import plots  # noqa: E402
import report  # noqa: E402
from procs import Binaries, log, workdir  # noqa: E402
from target_run import run_target  # noqa: E402


def extra_args(p):
    p.add_argument("--budget", default="30ms", help="queue_wait_budget of the filtered run")


def main():
    args = report.parse_args(__doc__.splitlines()[0], extra_args)
    bins = Binaries(args.build)
    calls = 10 if args.smoke else 40
    levels = [1, 4, 12, 12, 4, 1]
    phases = ",".join(f"{c}w:{calls}@c{c}-r{1 if i < 3 else 2}" for i, c in enumerate(levels))
    targets = {"direct": None, "sluice_no_filter": [],
               "sluice_budget": [{"type": "queue_wait_budget", "budget": args.budget},
                                 {"type": "fixed_semaphore", "max_concurrency": 2}]}
    if args.direct_only or not bins.sluice:
        targets = {"direct": None}
    work = workdir("sweep")
    log(f"workdir {work}, build {bins.build}")

    runs = {}
    exits = []  # processes that exited during a run: the run is kept, and flagged in the report
    for name, filters in targets.items():
        runs[name], _, dead = run_target(bins, work, name, filters, phases,
                                         ["--deadline", "80ms", "--channels", "4"],
                                         {"workers": 2, "delay": "20ms"}, sample_upstream=False)
        exits.extend(f"{name}: {d}" for d in dead)

    rows = []
    for name, run in runs.items():
        for p in run.summary["phases"]:
            fast = p["failed_duration_ms"].get("RESOURCE_EXHAUSTED", {})
            rows.append([name, p["name"], p["calls"], p["ok"], p["timed_out"], p["shed"],
                         p["calls"] - p["ok"] - p["timed_out"] - p["shed"], p["goodput_per_s"],
                         p["ok_latency_ms"]["p95"], p["ok_queue_wait_ms"]["p95"],
                         fast.get("p95"), p["window_s"] * 1000])

    out = args.out
    prefix = "concurrency-sweep" + ("-smoke" if args.smoke else "")
    plots.latency_over_time(os.path.join(out, f"{prefix}-latency.png"), list(runs.items()),
                            "Concurrency sweep: call duration by start time")
    labels = [p["name"] for p in next(iter(runs.values())).summary["phases"]]
    plots.bars(os.path.join(out, f"{prefix}-goodput.png"), "Goodput (OK/s) per phase", labels,
               [(n, [p["goodput_per_s"] for p in r.summary["phases"]]) for n, r in runs.items()],
               "OK/s")
    plots.bars(os.path.join(out, f"{prefix}-outcomes.png"),
               "Timeouts (DEADLINE_EXCEEDED) and sheds (RESOURCE_EXHAUSTED) per phase", labels,
               [(f"{n} {k}", [p[k] for p in r.summary["phases"]])
                for n, r in runs.items() for k in ("timed_out", "shed")], "calls")

    body = [
        "## Setup", "",
        "- Upstream: `sluice-test-upstream --workers 2 --delay 20ms` (capacity ~100 calls/s).",
        f"- Load: `sluice-loadgen --phases {phases} --deadline 80ms --channels 4` (closed loop: "
        "each worker waits for its call to end; a phase ends when its last call does).",
        f"- sluice_budget: `queue_wait_budget {{budget: {args.budget}}}` then "
        "`fixed_semaphore {max_concurrency: 2}`; sluice_no_filter forwards everything.",
        "- OK p95 is over successful calls only; timeouts and sheds are counted apart, with no "
        "latency invented for them. 'shed p95' is how long a RESOURCE_EXHAUSTED answer took.", "",
        "## Results", "",
        report.table(["target", "phase", "calls", "OK", "timeouts", "shed", "other", "goodput/s",
                      "OK p95 ms", "OK queue-wait p95 ms", "shed p95 ms", "phase ms"], rows), "",
        "## Plots", "", f"![latency]({prefix}-latency.png)", "",
        f"![goodput]({prefix}-goodput.png)", "", f"![outcomes]({prefix}-outcomes.png)", "",
        "Process exits during runs (crash or stray kill; those runs are not valid): "
        + ("; ".join(exits) if exits else "none") + ".", "",
        f"Raw CSVs of this run: `{work}` (not kept in the repository).",
    ]
    path = report.write(out, prefix, "Scenario 3: concurrency sweep (2 permits x 20 ms, 80 ms "
                        "deadline)", "\n".join(body), args.smoke)
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
