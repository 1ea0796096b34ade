#!/usr/bin/python3
"""Scenario 1, read pacing (Part 1 of "gRPC Under Pressure").

One client-streaming call offers 300 messages/s of 16 KiB for 60 s to one upstream worker at
10 ms per message (~90-100 messages/s), with a 120 s deadline; direct and through sluice. A send
slot that comes while the previous write is still blocked is skipped, so the send rate shows the
backpressure. Reports sends/s, worker completions/s, sluice RSS over time, and whether the call
drained in time.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import plots  # noqa: E402
import report  # noqa: E402
from procs import Binaries, log, workdir  # noqa: E402
from target_run import run_target  # noqa: E402


def per_second(times, horizon):
    counts = [0] * (int(horizon) + 1)
    for t in times:
        if 0 <= t <= horizon:
            counts[int(t)] += 1
    return [(i + 0.5, n) for i, n in enumerate(counts)]


def completions_per_second(sampler, start_ms):
    pts = sampler.series("up.messages_processed", start_ms)
    out = []
    last = None
    for t, v in pts:
        if last is None or t - last[0] >= 1.0:
            if last is not None:
                out.append(((t + last[0]) / 2, (v - last[1]) / (t - last[0])))
            last = (t, v)
    return out


def main():
    args = report.parse_args(__doc__.splitlines()[0])
    bins = Binaries(args.build)
    seconds = 8 if args.smoke else 60
    messages = 300 * seconds
    targets = ["direct", "sluice"]
    if args.direct_only or not bins.sluice:
        targets = ["direct"]
    work = workdir("read-pacing")
    log(f"workdir {work}, build {bins.build}")

    runs = {}
    exits = []  # processes that exited during a run: the run is kept, and flagged in the report
    for name in targets:
        run, sampler, dead = run_target(
            bins, work, name, [] if name == "sluice" else None, "1w:1",
            ["--method", "client_stream", "--stream-messages", str(messages), "--stream-rate",
             "300", "--size", "16384", "--deadline", "120s", "--channels", "1"],
            {"workers": 1, "delay": "10ms"}, sluice_name="sluice", timeout=200)
        runs[name] = (run, sampler)
        exits.extend(f"{name}: {d}" for d in dead)

    rows, send_series, done_series, rss_series = [], [], [], []
    for name, (run, sampler) in runs.items():
        call = run.calls[0]
        duration = float(call["latency_ms"]) / 1000
        sent = [float(s["done_ms"]) / 1000 for s in run.sends if s["kind"] == "sent"]
        horizon = max(duration, seconds) + 1
        send_series.append((f"{name}: sends/s", per_second(sent, horizon)))
        comp = completions_per_second(sampler, run.start_unix_ms)
        done_series.append((f"{name}: worker completions/s", comp))
        offered = [v for t, v in comp if t < seconds]
        rss = sampler.series("sluice_rss_kb", run.start_unix_ms)
        if rss:
            rss_series.append((f"{name}: sluice RSS MiB", [(t, v / 1024) for t, v in rss]))
        up_rss = sampler.series("upstream_rss_kb", run.start_unix_ms)
        rss_series.append((f"{name}: upstream RSS MiB", [(t, v / 1024) for t, v in up_rss]))
        status = call["status_name"]
        rows.append([name, status, duration, int(call["messages_sent"]),
                     int(call["send_slots_skipped"]), int(call["messages_sent"]) / seconds,
                     sum(offered) / len(offered) if offered else None,
                     max(v for _, v in rss) / 1024 if rss else None,
                     max(v for _, v in up_rss) / 1024 if up_rss else None,
                     "yes" if status == "OK" and duration <= 120 else "NO"])

    out = args.out
    prefix = "read-pacing" + ("-smoke" if args.smoke else "")
    plots.lines(os.path.join(out, f"{prefix}.png"),
                [("client sends completed per second (300/s offered)", "per s", send_series),
                 ("upstream worker completions per second", "per s", done_series),
                 ("resident memory", "MiB", rss_series)],
                "Read pacing: one client stream, 300 x 16 KiB/s offered, 10 ms worker")
    body = [
        "## Setup", "",
        "- Upstream: `sluice-test-upstream --workers 1 --delay 10ms` (64 KiB HTTP/2 windows, one "
        "message processed at a time).",
        f"- Load: `sluice-loadgen --phases 1w:1 --method client_stream --stream-messages "
        f"{messages} --stream-rate 300 --size 16384 --deadline 120s --channels 1`.",
        "- sluice: no filters, default windows (64 KiB stream, 1 MiB connection), `workers: 1`.",
        "- 'sends/s' counts writes gRPC accepted; a send slot that came while the previous write "
        "was blocked is skipped (the client is pushed back), never queued in the client.", "",
        "## Results", "",
        report.table(["target", "status", "call s", "messages sent", "send slots skipped",
                      "sends/s (mean over offered period)", "worker completions/s",
                      "sluice RSS max MiB", "upstream RSS max MiB", "drained within 120 s"],
                     rows), "",
        f"![read pacing]({prefix}.png)", "",
        "Process exits during runs (crash or stray kill; those runs are not valid): "
        + ("; ".join(exits) if exits else "none") + ".", "",
        f"Raw CSVs of this run: `{work}` (not kept in the repository).",
    ]
    path = report.write(out, prefix, "Scenario 1: read pacing (300 msg/s of 16 KiB, 10 ms worker)",
                        "\n".join(body), args.smoke)
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
