"""The admin dashboard in a real headless browser (issues 4 and 13): a sluice with rtt_gradient
behind a queue-wait budget, overloaded by sluice-loadgen so the limiter moves, and
dashboard_browser_test.js (playwright-core driving Debian's chromium) checking that the page
loads cleanly and offline, that its first frame already draws the server-side history (the
seconds of load before the page was opened), that each filter has the charts of its type, and
that the charts render and move. The queue-mode test does the same for a queue's and a
consumer's cards, with a real redis-server on an ephemeral port.

Needs: Debian's chromium (/usr/bin/chromium, or CHROMIUM_BIN), node (NODE_BIN or on PATH) and
`npm ci` run in this folder (playwright-core). A missing one fails the test, naming the fix.
Environment as for integration/tests (SLUICE_BIN, TEST_UPSTREAM_BIN, LOADGEN_BIN, PYTHONPATH
with the generated stubs and integration/tests)."""

import json
import os
import shutil
import subprocess
import time
import unittest

import harness
from harness import LOOPBACK, IntegrationTestCase, sluice_config
from queue_support import RedisServer

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "dashboard_browser_test.js")
FILTER_KEYS = ["ingress/rtt_gradient", "ingress/queue_wait_budget"]
# Seconds of history the page must find when it opens (the server samples once a second).
MIN_HISTORY = 6


class DashboardBrowserTest(IntegrationTestCase):
    REQUIRES_SLUICE = True
    TEST_TIMEOUT = 75

    def setUp(self):
        super().setUp()
        if harness.direct_mode():
            self.skipTest("the dashboard needs sluice")  # only in SLUICE_DIRECT=1 runs
        self.node = os.environ.get("NODE_BIN") or shutil.which("node") or shutil.which("nodejs")
        self.assertTrue(self.node, "node not found: install Debian's nodejs or set NODE_BIN")
        chromium = os.environ.get("CHROMIUM_BIN", "/usr/bin/chromium")
        self.assertTrue(os.access(chromium, os.X_OK),
                        f"no chromium at {chromium}: apt-get install chromium "
                        f"(scripts/setup.sh test), or set CHROMIUM_BIN")
        self.assertTrue(
            os.path.isdir(os.path.join(HERE, "node_modules", "playwright-core")),
            f"playwright-core is not installed: run `npm ci` in {HERE} (scripts/test.sh does)")

    def test_charts_render_and_move_under_overload_with_no_errors_and_no_external_requests(self):
        # Capacity 2 workers / 20 ms = 100 calls/s; the load offers 250/s, so the limit shrinks,
        # calls are shed, and every chart has something to draw.
        upstream = self.start_upstream(workers=2, delay="20ms")
        config = sluice_config(upstream.port)
        config["listeners"][0]["filters"] = [
            {"type": "queue_wait_budget", "budget": "20ms"},
            {"type": "rtt_gradient"},
        ]
        sluice = self.start_sluice(config)
        loadgen = harness.ManagedProcess("loadgen", [
            harness.env_path("LOADGEN_BIN"), "--target", f"127.0.0.1:{sluice.port}",
            "--phases", "250/s:40s", "--channels", "4", "--quiet",
            "--summary", os.path.join(self.tmpdir, "loadgen.json")], self.tmpdir)
        self._processes.append(loadgen)

        def limiter_moved():
            status, body = sluice.admin_get("/limits")
            if status != 200 or not loadgen.alive():
                raise AssertionError(f"/limits {status} or loadgen died:\n{loadgen.log_tail()}")
            limit = next(x for x in json.loads(body) if x["filter"] == "rtt_gradient")
            return limit["limit"] < 20 and limit["shed"] + limit["admitted"] > 100
        harness.wait_for(limiter_moved, 10, interval=0.1,
                         what="rtt_gradient to shrink its limit under the overload")

        self.wait_history(sluice)
        report, elapsed, out_dir = self.run_browser(sluice, loadgen, FILTER_KEYS)
        rtt = report["filters"]["ingress/rtt_gradient"]["last"]
        first = report["firstFrame"]
        print(f"\nfirst frame: {first['samples']} history samples after {first['polls']} poll(s), "
              f"charts {first['charts']['ingress/rtt_gradient']}")
        print(f"browser {report.get('browserVersion')} in {elapsed:.1f}s: frames "
              f"{report['frames']}, polls {report['polls']}, rtt_gradient limit {rtt['limit']} "
              f"in_flight {rtt['in_flight']} admitted/s {rtt['admitted_per_s']:.0f} shed/s "
              f"{rtt['shed_per_s']}; screenshots in {out_dir}")

    def test_queue_and_consumer_panels_render_and_move_under_load(self):
        # One sluice is the frontend (listener on queue "work") and the pod (consumer "pull" with
        # aimd, on an upstream of 2 workers x 20 ms = 100 calls/s); 150 calls/s offered, so the
        # backlog, the estimated wait and the outcomes all move.
        redis = RedisServer(self.tmpdir)
        self._processes.append(redis)
        upstream = self.start_upstream(workers=2, delay="20ms")
        config = sluice_config(upstream.port, workers=1)
        config["queues"] = [{"name": "work", "redis": f"{LOOPBACK}:{redis.port}",
                             "max_pending": 500}]
        config["listeners"][0].pop("cluster")
        config["listeners"][0]["queue"] = "work"
        config["consumers"] = [{"name": "pull", "queue": "work", "cluster": "app",
                                "filters": [{"type": "aimd", "latency_slo": "100ms"}]}]
        sluice = self.start_sluice(config)
        loadgen = harness.ManagedProcess("loadgen", [
            harness.env_path("LOADGEN_BIN"), "--target", f"127.0.0.1:{sluice.port}",
            "--phases", "150/s:40s", "--channels", "4", "--deadline", "3s", "--quiet",
            "--summary", os.path.join(self.tmpdir, "loadgen.json")], self.tmpdir)
        self._processes.append(loadgen)

        def served():
            status, body = sluice.admin_get("/queues")
            if status != 200 or not loadgen.alive():
                raise AssertionError(f"/queues {status} or loadgen died:\n{loadgen.log_tail()}")
            q = json.loads(body)
            return (q["queues"][0]["requests"]["ok"] > 100 and
                    q["consumers"][0]["completed_by_status"].get("OK", 0) > 100)
        harness.wait_for(served, 15, interval=0.1, what="100 calls through the queue")
        self.wait_history(sluice)
        # (Not the consumer's aimd filter card: saturated, its limit and in-flight sit still for
        # seconds, which the filter checks would take for a frozen chart.)
        report, elapsed, out_dir = self.run_browser(
            sluice, loadgen, [], queues=["work"], consumers=["pull"])
        q = report["queues"]["work"]
        c = report["consumers"]["pull"]
        print(f"\nbrowser {report.get('browserVersion')} in {elapsed:.1f}s: queue work backlog "
              f"{q['last']['backlog']} ok/s {q['last']['ok']} e2e p99 {q['last']['e2e_p99_ms']} "
              f"ms (10 s: {q['live']['e2e_ms_recent']['p99']} ms); consumer pull window "
              f"{c['last']['limit']} in flight {c['last']['in_flight']} completed "
              f"{c['live']['completed_by_status']}; screenshots in {out_dir}")

    def wait_history(self, sluice):
        """Lets the history collect some seconds of the load before the page is opened."""
        def history_samples():
            status, body = sluice.admin_get("/history")
            if status != 200:
                raise AssertionError(f"/history {status}: {body}")
            return len(json.loads(body)["t"])
        harness.wait_for(lambda: history_samples() >= MIN_HISTORY + 1, 15, interval=0.2,
                         what=f"{MIN_HISTORY + 1} history samples")

    def run_browser(self, sluice, loadgen, filters, queues=(), consumers=()):
        """Runs dashboard_browser_test.js while the load goes on; returns its report, the
        seconds it took and its output folder."""
        out_dir = os.path.join(self.tmpdir, "browser")
        argv = [self.node, SCRIPT, "--url", f"http://127.0.0.1:{sluice.admin_port}/",
                "--out", out_dir, "--seconds", "4", "--min-points", str(MIN_HISTORY)]
        for key in filters:
            argv += ["--filter", key]
        for name in queues:
            argv += ["--queue", name]
        for name in consumers:
            argv += ["--consumer", name]
        started = time.monotonic()
        proc = subprocess.run(harness._die_with_parent(argv), capture_output=True, text=True,
                              timeout=60, cwd=HERE)
        elapsed = time.monotonic() - started
        self.assertTrue(loadgen.alive(), "the load ended before the browser was done")
        loadgen.kill()
        self.assertNotEqual(proc.returncode, 2, proc.stderr)  # could not run: names the fix
        self.assertEqual(proc.returncode, 0, f"{proc.stderr}\n{proc.stdout}")
        report = json.loads(proc.stdout)
        self.assertEqual(report["failures"], [])
        for path in report["screenshots"]:
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", path)
        return report, elapsed, out_dir


if __name__ == "__main__":
    unittest.main()
