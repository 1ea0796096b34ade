"""The admin endpoint's descriptive views end to end (issue 4): /limits, /config_dump (fed back to
`sluice validate` and to a second sluice), /server_info, which methods each path allows, the
health check and /ready, and /history with its per-second samples and recent-window percentiles.
"""

import json
import os
import subprocess
import time
import unittest

import harness
from harness import AdminTestCase, admin_request, sluice_config, stats_json, with_filters
import sluice_test_pb2 as pb


class InfoEndpointsTest(AdminTestCase):
    def test_limits_config_dump_and_server_info_describe_the_running_proxy(self):
        upstream = self.start_upstream(workers=4, delay="2ms")
        filters = [{"type": "queue_wait_budget", "budget": "40ms"},
                   {"type": "rtt_gradient", "initial_limit": 12},
                   {"type": "fixed_semaphore", "name": "cap", "max_concurrency": 7}]
        sluice = self.start_sluice(with_filters(upstream.port, filters, drain_timeout="3s"))
        stub = self.stub(sluice.port)
        # 30 calls: the first 8 teach the method's baseline; the rest are judged against it over
        # several rtt_gradient decisions (update_interval 50 ms, min_samples 10), so the smoothed
        # RTT and the gradient exist.
        calls = 30
        for _ in range(calls):
            stub.Unary(pb.Request(), timeout=5)
            time.sleep(0.02)

        status, headers, body = admin_request(sluice, "GET", "/limits")
        self.assertEqual((status, headers["content-type"]), (200, "application/json"))
        limits = {x["filter"]: x for x in json.loads(body)}
        self.assertEqual(set(limits), {"rtt_gradient", "cap"})
        rtt, cap = limits["rtt_gradient"], limits["cap"]
        self.assertEqual((rtt["listener"], rtt["type"]), ("ingress", "rtt_gradient"))
        self.assertEqual((cap["type"], cap["limit"]), ("fixed_semaphore", 7))
        for x in (rtt, cap):
            self.assertEqual((x["in_flight"], x["queued"], x["admitted"], x["shed"]),
                             (0, 0, calls, 0))
            self.assertIsInstance(x["recent_decisions"], list)
            # Per class (zero until the filters count per class), per method, recent queue wait.
            self.assertEqual(list(x["classes"]),
                             ["sheddable", "sheddable_plus", "critical", "critical_plus"])
            for c in x["classes"].values():
                self.assertEqual(set(c), {"admitted", "shed", "queued"})
            self.assertIsInstance(x["baselines"], list)
            self.assertIn("queueing", x)
            self.assertIn("queue_wait_p99_ms_recent", x)
        self.assertGreaterEqual(rtt["limit"], 1)
        self.assertGreater(rtt["rtt_noload_ms"], 1.5)  # the upstream takes 2 ms
        self.assertGreaterEqual(rtt["rtt_smoothed_ms"], rtt["rtt_noload_ms"] * 0.5)
        self.assertGreater(rtt["gradient"], 0)

        # /config_dump: every default filled in; fed back to `sluice validate` (JSON is YAML).
        status, headers, body = admin_request(sluice, "GET", "/config_dump")
        self.assertEqual((status, headers["content-type"]), (200, "application/json"))
        dump = json.loads(body)
        self.assertEqual(dump["workers"], 2)
        self.assertEqual(dump["drain_timeout"], "3s")
        self.assertEqual(dump["admin"]["access_log"]["enabled"], False)
        self.assertEqual(dump["clusters"][0]["endpoints"], [f"127.0.0.1:{upstream.port}"])
        listener = dump["listeners"][0]
        self.assertEqual([(f["name"], f["type"]) for f in listener["filters"]], [
            ("queue_wait_budget", "queue_wait_budget"), ("rtt_gradient", "rtt_gradient"),
            ("cap", "fixed_semaphore")])
        self.assertEqual(listener["filters"][0]["budget"], "40ms")
        self.assertEqual(listener["filters"][1]["initial_limit"], 12)
        self.assertEqual(listener["filters"][1]["tolerance"], 0.85)  # a default, filled in
        self.assertEqual(listener["http2"]["initial_stream_window"], "64KiB")
        dump_path = os.path.join(self.tmpdir, "dump.yaml")
        with open(dump_path, "w") as f:
            f.write(body)
        check = subprocess.run([harness.env_path("SLUICE_BIN"), "validate", dump_path],
                               capture_output=True, text=True, timeout=10)
        self.assertEqual(check.returncode, 0, check.stderr)
        self.assertIn("OK (1 listener(s), 1 cluster(s), 2 worker(s))", check.stdout)
        # The dump is a complete config: a second sluice started from it dumps the same config.
        second = self.start_sluice(body, name="sluice2")
        _, _, body2 = admin_request(second, "GET", "/config_dump")
        self.assertEqual(json.loads(body2), dump)
        second.terminate()

        # /server_info
        version = subprocess.run([harness.env_path("SLUICE_BIN"), "--version"],
                                 capture_output=True, text=True, timeout=10).stdout.split()[-1]
        status, headers, body = admin_request(sluice, "GET", "/server_info")
        self.assertEqual((status, headers["content-type"]), (200, "application/json"))
        info = json.loads(body)
        self.assertEqual(info["version"], version)
        self.assertEqual(info["state"], "LIVE")
        self.assertEqual(info["workers"], 2)
        self.assertEqual(info["config_path"], sluice.config_path)
        self.assertRegex(info["started"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
        time.sleep(0.1)
        later = json.loads(admin_request(sluice, "GET", "/server_info")[2])
        self.assertGreater(later["uptime_s"], info["uptime_s"])
        self.assertEqual(headers["server"], f"sluice/{version}")

    def test_mutations_are_post_only_and_readiness_follows_the_healthcheck(self):
        upstream = self.start_upstream(workers=4, delay="1ms")
        sluice = self.start_sluice(sluice_config(upstream.port))
        stub = self.stub(sluice.port)
        self.assertEqual(admin_request(sluice, "GET", "/ready")[::2], (200, "LIVE\n"))
        self.assertEqual(admin_request(sluice, "HEAD", "/ready")[0], 200)

        for path in ("/healthcheck/fail", "/healthcheck/ok", "/drain"):
            status, headers, _ = admin_request(sluice, "GET", path)
            self.assertEqual((status, headers.get("allow")), (405, "POST"), path)
        for path in ("/stats", "/ready", "/limits", "/history", "/config_dump", "/server_info",
                     "/"):
            status, headers, _ = admin_request(sluice, "POST", path)
            self.assertEqual((status, headers.get("allow")), (405, "GET, HEAD"), path)
        self.assertEqual(admin_request(sluice, "DELETE", "/drain")[0], 405)
        for path in ("/nope", "/stats/", "/stats/json", "/ready/x"):
            self.assertEqual(admin_request(sluice, "GET", path)[0], 404, path)
        # Neither the GETs above nor a cross-site form POST drained or failed anything.
        self.assertEqual(admin_request(sluice, "POST", "/drain",
                                       {"Origin": "http://evil.example"})[0], 403)
        self.assertEqual(admin_request(sluice, "GET", "/ready")[0], 200)

        self.assertEqual(admin_request(sluice, "POST", "/healthcheck/fail")[0], 200)
        self.assertEqual(admin_request(sluice, "GET", "/ready")[::2], (503, "HEALTHCHECK_FAILED\n"))
        info = json.loads(admin_request(sluice, "GET", "/server_info")[2])
        self.assertEqual(info["state"], "HEALTHCHECK_FAILED")
        # Failing the health check only changes what /ready says: traffic still flows.
        stub.Unary(pb.Request(), timeout=5)
        self.assertEqual(admin_request(sluice, "POST", "/healthcheck/ok")[0], 200)
        self.assertEqual(admin_request(sluice, "GET", "/ready")[::2], (200, "LIVE\n"))
        self.assertTrue(sluice.alive())


# --- history -----------------------------------------------------------------------------------

class HistoryTest(AdminTestCase):
    """GET /history: one sample a second, rates that add up to the traffic sent, ?since=, and
    queue-wait percentiles of the recent window rather than since start."""

    TEST_TIMEOUT = 45

    def history(self, sluice, query=""):
        status, headers, body = admin_request(sluice, "GET", "/history" + query)
        self.assertEqual((status, headers["content-type"]), (200, "application/json"), body)
        return json.loads(body)

    def test_samples_every_second_and_rates_add_up_to_the_calls_sent(self):
        upstream = self.start_upstream(workers=4, delay="1ms")
        sluice = self.start_sluice(with_filters(upstream.port, [
            {"type": "fixed_semaphore", "max_concurrency": 4}]))
        stub = self.stub(sluice.port)
        sent = 40
        for _ in range(sent):
            stub.Unary(pb.Request(), timeout=5)
            time.sleep(0.05)  # spread over about two seconds
        # Two more samples: every call has been counted in some interval.
        harness.wait_for(lambda: stats_json(sluice)[
            "listener.ingress.downstream_rq_completed_total"]["value"] == sent, 5,
            what="completed calls counted")
        n = len(self.history(sluice)["t"])
        harness.wait_for(lambda: len(self.history(sluice)["t"]) >= n + 2, 5,
                         what="two more history samples")

        h = self.history(sluice)
        self.assertEqual((h["interval_ms"], h["capacity"], h["recent_intervals"]), (1000, 600, 10))
        self.assertLess(h["memory_bytes"], 1 << 20)
        t = h["t"]
        self.assertGreaterEqual(len(t), 4)
        steps = [b - a for a, b in zip(t, t[1:])]
        self.assertTrue(all(900 <= d <= 1100 for d in steps), steps)
        self.assertLess(abs(t[-1] / 1000 - time.time()), 5)
        [fixed] = h["filters"]
        self.assertEqual((fixed["listener"], fixed["filter"], fixed["type"]),
                         ("ingress", "fixed_semaphore", "fixed_semaphore"))
        for name in ("limit", "in_flight", "queued", "admitted_per_s", "shed_per_s"):
            self.assertEqual(len(fixed[name]), len(t), name)
        self.assertEqual(set(fixed["limit"]), {4})
        self.assertNotIn("rtt_noload_ms", fixed)  # no value in the range: left out
        # A rate times its interval is the calls of that interval; they add up to what was sent.
        self.assertIsNone(fixed["admitted_per_s"][0])
        admitted = sum(r * d / 1000 for r, d in zip(fixed["admitted_per_s"][1:], steps))
        self.assertAlmostEqual(admitted, sent, delta=0.5)
        self.assertEqual(sum(fixed["shed_per_s"][1:]), 0)
        [listener] = h["listeners"]
        self.assertEqual(listener["listener"], "ingress")
        completed = sum(r * d / 1000 for r, d in zip(listener["rq_per_s"]["completed"][1:], steps))
        self.assertAlmostEqual(completed, sent, delta=0.5)
        self.assertEqual(sum(listener["rq_per_s"]["shed"][1:]), 0)

        # ?since= gives only the newer samples, aligned the same way.
        newer = self.history(sluice, f"?since={t[-2]}")
        self.assertGreaterEqual(len(newer["t"]), 1)
        self.assertTrue(all(x > t[-2] for x in newer["t"]), newer["t"])
        self.assertEqual(newer["t"][0], t[-1])
        self.assertEqual(len(newer["filters"][0]["limit"]), len(newer["t"]))
        self.assertEqual(admin_request(sluice, "GET", "/history?since=yesterday")[0], 400)

    def test_queue_wait_percentiles_are_those_of_the_recent_window(self):
        upstream = self.start_upstream(workers=4)
        sluice = self.start_sluice(with_filters(upstream.port, [
            {"type": "fixed_semaphore", "max_concurrency": 1, "max_queue": 4}]))
        held = self.hold_call(sluice.port, 0.6)
        self.wait_in_flight(upstream, 1)
        queued = self.stub(sluice.port).Unary.future(pb.Request(), timeout=10)  # waits ~0.6 s
        held.result()
        queued.result()
        f = "filter.ingress.fixed_semaphore.queue_wait_us"
        harness.wait_for(lambda: stats_json(sluice)[f]["count"] == 2, 5, what="two queue waits")
        waited_ms = stats_json(sluice)[f]["max"] / 1000
        self.assertGreater(waited_ms, 400)

        def recent():
            [x] = json.loads(admin_request(sluice, "GET", "/limits")[2])
            return x["queue_wait_p99_ms_recent"]
        # Within a second the history has the wait: the p99 of the last 10 s is that wait (the
        # largest ever recorded, so exact rather than its bucket's bound).
        harness.wait_for(lambda: recent() is not None, 3, what="a recent queue wait")
        self.assertAlmostEqual(recent(), waited_ms, delta=0.01)
        h = self.history(sluice)
        per_second = [v for v in h["filters"][0]["queue_wait_p99_ms"] if v is not None]
        self.assertAlmostEqual(max(per_second), waited_ms, delta=0.01)
        self.assertAlmostEqual(max(v for v in h["listeners"][0]["queue_wait_p99_ms"]
                                   if v is not None), waited_ms, delta=0.01)
        # Ten quiet seconds later the recent window is empty, while the since-start histogram
        # still reports the wait.
        harness.wait_for(lambda: recent() is None, 14, interval=0.5,
                         what="the recent queue wait to age out")
        self.assertEqual(stats_json(sluice)[f]["max"] / 1000, waited_ms)
        self.assertGreater(stats_json(sluice)[f]["p99"] / 1000, 400)


if __name__ == "__main__":
    unittest.main()
