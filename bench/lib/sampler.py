"""Samples sluice's /limits and the RSS of chosen processes every 100 ms into a CSV while a run
goes, plus the test upstream's Stats RPC (worker completions) when asked."""

import csv
import threading
import time

from procs import rss_kb


class Sampler:
    def __init__(self, path, sluice=None, pids=None, upstream=None, interval=0.1):
        self.path = path
        self.sluice = sluice
        self.pids = dict(pids or {})  # column prefix -> pid
        if sluice is not None:
            self.pids.setdefault("sluice", sluice.pid)
        self.upstream = upstream
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
        self.write()

    def _sample(self):
        row = {"t_unix_ms": int(time.time() * 1000)}
        for name, pid in self.pids.items():
            row[f"{name}_rss_kb"] = rss_kb(pid)
        if self.sluice is not None:
            try:
                for lim in self.sluice.admin("/limits", timeout=0.5):
                    key = lim.get("filter", "limiter")
                    for field in ("limit", "in_flight", "queued", "rtt_noload_ms",
                                  "rtt_smoothed_ms", "gradient", "p99_ms", "shed", "admitted"):
                        if field in lim:
                            row[f"{key}.{field}"] = lim[field]
            except Exception:  # noqa: BLE001 - a missed sample is a gap, not a failure
                row["limits_error"] = 1
        if self.upstream is not None:
            stats = self.upstream.stats()
            if stats:
                for k, v in stats.items():
                    row[f"up.{k}"] = v
        return row

    def _run(self):
        next_at = time.time()
        while not self._stop.is_set():
            self.rows.append(self._sample())
            next_at += self.interval
            self._stop.wait(max(0.0, next_at - time.time()))

    def write(self):
        fields = []
        for row in self.rows:
            for k in row:
                if k not in fields:
                    fields.append(k)
        with open(self.path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            for row in self.rows:
                w.writerow(row)

    def series(self, column, start_unix_ms):
        """(seconds since start_unix_ms, value) of one column, skipping empty samples."""
        out = []
        for row in self.rows:
            v = row.get(column)
            if v is not None and v != "":
                out.append(((row["t_unix_ms"] - start_unix_ms) / 1000.0, float(v)))
        return out
