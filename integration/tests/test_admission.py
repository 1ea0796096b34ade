"""Admission filters through the real sluice binary (issue 3): shedding answers, the queue-wait
budget in front of a fixed semaphore under open-loop overload, deadline-aware shedding, and the
rtt_gradient limiter across an upstream slowdown. Load comes from sluice-loadgen (LOADGEN_BIN)."""

import csv
import json
import os
import re
import subprocess
import threading
import time
import unittest

import grpc

import harness
from harness import IntegrationTestCase, service_time, sluice_config
import sluice_test_pb2 as pb


def with_filters(upstream_port, filters, **overrides):
    config = sluice_config(upstream_port, **overrides)
    config["listeners"][0]["filters"] = filters
    return config


class AdmissionTestCase(IntegrationTestCase):
    REQUIRES_SLUICE = True

    def setUp(self):
        super().setUp()
        if harness.direct_mode():
            self.skipTest("admission filters need sluice")  # only in SLUICE_DIRECT=1 runs

    def run_loadgen(self, port, phases, extra=(), timeout=90):
        """Runs sluice-loadgen; returns (summary dict, rows of its per-call CSV)."""
        summary_path = os.path.join(self.tmpdir, "loadgen.json")
        csv_path = os.path.join(self.tmpdir, "loadgen.csv")
        argv = [harness.env_path("LOADGEN_BIN"), "--target", f"127.0.0.1:{port}",
                "--phases", phases, "--summary", summary_path, "--csv", csv_path, "--quiet",
                *map(str, extra)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise AssertionError(f"sluice-loadgen failed ({proc.returncode}):\n{proc.stderr}")
        with open(summary_path) as f:
            summary = json.load(f)
        with open(csv_path) as f:
            rows = list(csv.DictReader(f))
        return summary, rows

    def stats(self, sluice):
        status, body = sluice.admin_get("/stats?format=json")
        self.assertEqual(status, 200)
        data = json.loads(body)
        entries = data["stats"] if isinstance(data, dict) else data
        return {e["name"]: e.get("value") for e in entries}

    def hold_calls(self, port, count, hold_s):
        """Starts `count` unary calls that each hold the upstream for `hold_s`; returns futures."""
        stub = self.stub(port)
        futures = [stub.Unary.future(pb.Request(service_time=service_time(hold_s)), timeout=30)
                   for _ in range(count)]
        return futures


class ShedAnswerTest(AdmissionTestCase):
    def test_queue_full_shed_is_resource_exhausted_with_filter_reason_and_pushback(self):
        upstream = self.start_upstream(workers=4, delay="1ms")
        sluice = self.start_sluice(with_filters(upstream.port, [
            {"type": "fixed_semaphore", "max_concurrency": 1, "max_queue": 0,
             "retry_pushback": "250ms"}]))
        held = self.hold_calls(sluice.port, 1, 1.5)
        harness.wait_for(lambda: upstream.stats().in_flight == 1, 5, what="held call upstream")
        stub = self.stub(sluice.port)
        started = time.monotonic()
        with self.assertRaises(grpc.RpcError) as cm:
            stub.Unary(pb.Request(), timeout=5)
        elapsed = time.monotonic() - started
        err = cm.exception
        self.assertEqual(err.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("fixed_semaphore", err.details())
        self.assertIn("queue", err.details())
        trailers = dict(err.trailing_metadata())
        self.assertEqual(trailers.get("grpc-retry-pushback-ms"), "250")
        self.assertIn("x-sluice-queue-us", trailers)
        self.assertLess(elapsed, 0.5, "a full queue must shed at once")
        self.assertEqual(held[0].result().payload, b"")
        self.assertEqual(upstream.stats().calls_started["unary"], 1, "the shed call went upstream")

    def test_budget_shed_names_the_budget_and_every_response_has_queue_time(self):
        upstream = self.start_upstream(workers=4, delay="1ms")
        sluice = self.start_sluice(with_filters(upstream.port, [
            {"type": "queue_wait_budget", "budget": "30ms"},
            {"type": "fixed_semaphore", "max_concurrency": 1}]))
        stub = self.stub(sluice.port)
        # An admitted call carries its queue time in its initial metadata.
        call = stub.Unary.with_call(pb.Request(), timeout=5)
        initial = dict(call[1].initial_metadata())
        self.assertRegex(initial.get("x-sluice-queue-us", ""), r"^\d+$")

        held = self.hold_calls(sluice.port, 1, 1.0)
        harness.wait_for(lambda: upstream.stats().in_flight == 1, 5, what="held call upstream")
        started = time.monotonic()
        with self.assertRaises(grpc.RpcError) as cm:
            stub.Unary(pb.Request(), timeout=5)
        elapsed = time.monotonic() - started
        err = cm.exception
        self.assertEqual(err.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertEqual(err.details(), "queue wait budget 30ms exceeded")
        queue_us = int(dict(err.trailing_metadata())["x-sluice-queue-us"])
        self.assertGreaterEqual(queue_us, 30_000)
        self.assertLess(queue_us, 500_000)
        self.assertLess(elapsed, 0.5)
        held[0].result()
        stats = self.stats(sluice)
        self.assertEqual(stats["filter.ingress.queue_wait_budget.shed_budget_total"], 1)
        self.assertEqual(stats["listener.ingress.downstream_rq_shed_total"], 1)

    def test_non_grpc_request_is_shed_with_503_and_retry_after(self):
        upstream = self.start_upstream(workers=4, delay="1ms")
        sluice = self.start_sluice(with_filters(upstream.port, [
            {"type": "fixed_semaphore", "max_concurrency": 1, "max_queue": 0,
             "retry_pushback": "2500ms"}]))
        held = self.hold_calls(sluice.port, 1, 1.0)
        harness.wait_for(lambda: upstream.stats().in_flight == 1, 5, what="held call upstream")
        body = os.path.join(self.tmpdir, "body.txt")
        with open(body, "w") as f:
            f.write("hello")
        out = subprocess.run(["nghttp", "-v", "-H", "content-type: text/plain", "-d", body,
                              f"http://127.0.0.1:{sluice.port}/plain"],
                             capture_output=True, text=True, timeout=10).stdout
        self.assertRegex(out, r":status: 503")
        self.assertRegex(out, r"retry-after: 3\b")  # 2.5 s, rounded up to whole seconds
        self.assertRegex(out, r"x-sluice-queue-us: \d+")
        held[0].result()


class DeadlineAwareTest(AdmissionTestCase):
    def test_deadline_shorter_than_the_budget_is_answered_without_reaching_the_upstream(self):
        upstream = self.start_upstream(workers=4, delay="1ms")
        sluice = self.start_sluice(with_filters(upstream.port, [
            {"type": "queue_wait_budget", "budget": "2s"},
            {"type": "fixed_semaphore", "max_concurrency": 1}]))
        held = self.hold_calls(sluice.port, 1, 1.5)
        harness.wait_for(lambda: upstream.stats().in_flight == 1, 5, what="held call upstream")
        stub = self.stub(sluice.port)
        started = time.monotonic()
        with self.assertRaises(grpc.RpcError) as cm:
            stub.Unary(pb.Request(), timeout=0.2)
        elapsed = time.monotonic() - started
        self.assertEqual(cm.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertLess(elapsed, 1.0)
        held[0].result()
        time.sleep(0.1)
        self.assertEqual(upstream.stats().calls_started["unary"], 1,
                         "the call whose deadline could not be met reached the upstream")
        stats = self.stats(sluice)
        self.assertEqual(stats["cluster.app.upstream_rq_total"], 1)


class OverloadTest(AdmissionTestCase):
    TEST_TIMEOUT = 90

    def test_budget_before_semaphore_sheds_fast_and_keeps_admitted_calls_near_service_time(self):
        # Issue 3: 2 workers x 20 ms (capacity 100/s), 300 calls/s open loop, through
        # [queue_wait_budget 8ms, fixed_semaphore 2].
        upstream = self.start_upstream(workers=2, delay="20ms")
        sluice = self.start_sluice(with_filters(upstream.port, [
            {"type": "queue_wait_budget", "budget": "8ms"},
            {"type": "fixed_semaphore", "max_concurrency": 2}]))
        summary, rows = self.run_loadgen(sluice.port, "300/s:4s", ["--channels", "4"])
        overall = summary["overall"]
        self.assertEqual(overall["calls"], 1200)
        self.assertEqual(set(overall["status"]) - {"OK", "RESOURCE_EXHAUSTED"}, set(),
                         f"only OK and RESOURCE_EXHAUSTED may come back: {overall['status']}")
        ok = overall["status"].get("OK", 0)
        shed = overall["status"].get("RESOURCE_EXHAUSTED", 0)
        self.assertGreater(ok, 0.7 * 100 * 4, "the two workers should stay busy")
        self.assertGreater(shed, 600)
        # Admitted calls: at most the 8 ms budget in the queue plus the 20 ms service time.
        self.assertLess(overall["ok_latency_ms"]["p95"], 60)
        # Shed calls are answered within milliseconds of the budget.
        self.assertLess(overall["failed_duration_ms"]["RESOURCE_EXHAUSTED"]["p95"], 40)
        # Every response, admitted or shed, carried x-sluice-queue-us.
        missing = [r for r in rows if r["kind"] == "call" and r["queue_us"] == ""]
        self.assertEqual(missing, [])
        # sluice counted the same traffic, and shed calls never reached the upstream.
        stats = self.stats(sluice)
        self.assertEqual(stats["filter.ingress.queue_wait_budget.admitted_total"], ok)
        self.assertEqual(stats["filter.ingress.queue_wait_budget.shed_total"], shed)
        self.assertEqual(stats["filter.ingress.fixed_semaphore.in_flight"], 0)
        self.assertEqual(stats["filter.ingress.fixed_semaphore.queued"], 0)
        self.assertEqual(upstream.stats().calls_started["unary"], ok)
        # Two permits: the upstream's two workers never have a backlog worth the name (its
        # in-flight count can briefly read higher: a call counts there until grpc's OnDone).
        self.assertLessEqual(upstream.stats().max_queue_length, 2)

    def test_rtt_gradient_tracks_a_slowdown_keeping_admitted_latency_near_service_time(self):
        # Part 2's shape, shortened: 1 worker, 10 ms -> 40 ms -> 10 ms, 80 calls/s open loop.
        upstream = self.start_upstream(workers=1, schedule="10ms:4s,40ms:5s,10ms:5s")
        sluice = self.start_sluice(with_filters(upstream.port, [
            {"type": "queue_wait_budget", "budget": "20ms"},
            {"type": "rtt_gradient"}]))
        limits = []
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                try:
                    status, body = sluice.admin_get("/limits", timeout=2)
                    if status == 200:
                        limits.append((time.monotonic(), json.loads(body)[0]))
                except OSError:
                    pass
                stop.wait(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        started = time.monotonic()
        try:
            summary, rows = self.run_loadgen(
                sluice.port, "80/s:4s@before,80/s:5s@slow,80/s:5s@after", ["--channels", "2"])
        finally:
            stop.set()
            sampler.join(5)
        phases = {p["name"]: p for p in summary["phases"]}
        slow, after = phases["slow"], phases["after"]
        for p in summary["phases"]:
            self.assertEqual(set(p["status"]) - {"OK", "RESOURCE_EXHAUSTED"}, set(), p["status"])
        # During the slowdown the worker stays busy (capacity 25/s) ...
        self.assertGreater(slow["goodput_per_s"], 0.75 * 25)
        # ... and once the limiter has reacted (the first second is the reaction: calls admitted
        # at the old limit queue in the upstream), admitted calls wait at most about the budget:
        # near the 40 ms service time, not the 800 ms a fixed limit of 20 would queue.
        settled = sorted(float(r["latency_ms"]) for r in rows
                         if r["kind"] == "call" and r["status_name"] == "OK"
                         and 5000 <= float(r["scheduled_ms"]) < 9000)
        self.assertGreater(len(settled), 60)
        p95 = settled[int(0.95 * (len(settled) - 1))]
        timeline = [(round(t - started, 2), s["limit"], s.get("rtt_noload_ms"), s["in_flight"],
                     [d["reason"] for d in s["recent_decisions"][-1:]]) for t, s in limits
                    if 3.5 < t - started < 6]
        self.assertLess(p95, 150, f"settled slowdown p95 {p95:.0f} ms; timeline {timeline}")
        self.assertLess(slow["ok_latency_ms"]["max"], 1000)
        # After it, the limit grows back and most calls are admitted again.
        self.assertGreater(after["goodput_per_s"], 0.8 * 80)
        self.assertLess(after["ok_latency_ms"]["p95"], 60)
        # The limiter's live state moved: it shrank during the slowdown and RTT_noload followed.
        during = [s for t, s in limits if 5.5 < t - started < 9.0]
        self.assertTrue(during, "no /limits samples during the slowdown")
        self.assertLessEqual(min(s["limit"] for s in during), 3)
        self.assertTrue(all(s["type"] == "rtt_gradient" for _, s in limits))
        self.assertTrue(any((s.get("rtt_noload_ms") or 0) > 25 for s in during),
                        "RTT_noload never followed the slower service")
        self.assertLessEqual(upstream.stats().max_queue_length, 20)

    def test_at_debug_level_every_limiter_decision_is_logged_holds_included(self):
        # An operator explaining a run that shed: one line per decision, what it saw and did.
        upstream = self.start_upstream(workers=4, delay="5ms")
        sluice = self.start_sluice(with_filters(upstream.port, [
            {"type": "aimd", "name": "slo", "latency_slo": "200ms", "interval": "200ms"},
            {"type": "rtt_gradient"}], log_level="debug"))
        summary, _ = self.run_loadgen(sluice.port, "200/s:2s@steady", ["--channels", "2"])
        self.assertEqual(set(summary["phases"][0]["status"]), {"OK"})
        log = sluice.stderr()
        vegas = re.findall(r"\[debug\] ingress rtt_gradient rtt_gradient decision: limit (\d+) -> "
                           r"(\d+) \(([^)]*)\); samples (\d+), judged", log)
        aimd = re.findall(r"\[debug\] ingress slo aimd decision: limit (\d+) -> (\d+) "
                          r"\(([^)]*)\); samples (\d+), over slo 0", log)
        # 2 s at 200/s: decisions of at least min_samples (10) calls, at least every 50 ms
        # (rtt_gradient) and every 200 ms (aimd); an idle, fast service only holds or grows.
        self.assertGreaterEqual(len(vegas), 10, log[-2000:])
        self.assertGreaterEqual(len(aimd), 4, log[-2000:])
        for before, after, outcome, samples in vegas + aimd:
            self.assertGreaterEqual(int(after), int(before), outcome)
            self.assertGreaterEqual(int(samples), 1)
        self.assertIn("no queueing", {v[2] for v in vegas})
        self.assertIn("hold", {a[2] for a in aimd})
        # At the default level (info) nothing of it is written.
        quiet = self.start_sluice(with_filters(upstream.port, [{"type": "rtt_gradient"}]),
                                  name="quiet")
        self.run_loadgen(quiet.port, "200/s:1s@steady", ["--channels", "2"])
        self.assertNotIn("decision:", quiet.stderr())


if __name__ == "__main__":
    unittest.main()
