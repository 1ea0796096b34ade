"""The JSON access log (issue 4): one line per request, whatever its outcome (completed,
deadline exceeded while queued, shed), with its gRPC status, timings and exact byte counts."""

import calendar
import json
import os
import re
import subprocess
import time
import unittest

import grpc

import harness
from harness import UNARY_PATH, AdminTestCase, grpc_frame, stats_json, with_filters
import sluice_test_pb2 as pb


# --- access log --------------------------------------------------------------------------------

class AccessLogTest(AdminTestCase):
    FIELDS = {"timestamp", "method", "path", "grpc_status", "outcome", "queue_wait_us",
              "upstream_us", "total_us", "bytes_in", "bytes_out"}

    def raw_call_with_deadline(self, port, grpc_timeout):
        """A unary call with a grpc-timeout header, sent by nghttp; returns its grpc-status."""
        body = os.path.join(self.tmpdir, "empty.grpc")
        with open(body, "wb") as f:
            f.write(grpc_frame(pb.Request()))
        proc = subprocess.run(
            ["nghttp", "-v", "-H", "content-type: application/grpc", "-H", "te: trailers",
             "-H", f"grpc-timeout: {grpc_timeout}", "-d", body,
             f"http://127.0.0.1:{port}{UNARY_PATH}"],
            capture_output=True, text=True, timeout=10)
        m = re.search(r"grpc-status: (\d+)", proc.stdout)
        if not m:
            raise AssertionError(f"nghttp got no grpc-status:\n{proc.stdout}\n{proc.stderr}")
        return m.group(1)

    def read_log(self, path):
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return f.read().splitlines()

    def test_one_json_line_per_request_with_outcome_status_and_timings(self):
        log_path = os.path.join(self.tmpdir, "access.log")
        upstream = self.start_upstream(workers=4, delay="1ms")
        sluice = self.start_sluice(with_filters(
            upstream.port, [{"type": "fixed_semaphore", "max_concurrency": 1, "max_queue": 1}],
            admin={"address": "127.0.0.1:0",
                   "access_log": {"enabled": True, "path": log_path}}))
        stub = self.stub(sluice.port)
        started_wall = time.time()
        ok_request = pb.Request(payload=b"p" * 100, response_size=200)
        for _ in range(3):
            stub.Unary(ok_request, timeout=5)
        held = self.hold_call(sluice.port, 1.2)
        self.wait_in_flight(upstream, 1)
        # Queued behind the held call until its 250 ms deadline passes. Sent with nghttp, which
        # (unlike a gRPC client) does not cancel the call itself when the deadline passes, so
        # the outcome is sluice's deadline and not a race with the client's reset.
        self.assertEqual(self.raw_call_with_deadline(sluice.port, "250m"), "4")
        # Takes the one queue slot (and is admitted when the held call ends) ...
        queued = stub.Unary.future(pb.Request(), timeout=10)
        harness.wait_for(lambda: stats_json(sluice)["filter.ingress.fixed_semaphore.queued"]
                         ["value"] == 1, 5, what="a queued call")
        # ... so the next one finds the queue full and is shed.
        with self.assertRaises(grpc.RpcError) as cm:
            stub.Unary(pb.Request(), timeout=5)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        held.result()
        queued.result()
        sent = 3 + 1 + 1 + 1 + 1

        # The writer is a background thread: wait for the lines, then make sure no more come.
        harness.wait_for(lambda: len(self.read_log(log_path)) >= sent, 5,
                         what=f"{sent} access log lines")
        time.sleep(0.3)
        lines = self.read_log(log_path)
        self.assertEqual(len(lines), sent, "\n".join(lines))
        entries = [json.loads(line) for line in lines]
        for e in entries:
            self.assertEqual(set(e), self.FIELDS, e)
            self.assertEqual((e["method"], e["path"]), ("POST", UNARY_PATH))
            self.assertRegex(e["timestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            stamp = calendar.timegm(time.strptime(e["timestamp"][:19], "%Y-%m-%dT%H:%M:%S"))
            self.assertLess(abs(stamp - started_wall), 30, e)
            for key in ("queue_wait_us", "total_us", "bytes_in", "bytes_out"):
                self.assertIsInstance(e[key], int, (key, e))
                self.assertGreaterEqual(e[key], 0, (key, e))
            # Slack: ProxyStream::finish() reads the clock twice (total, then the queue wait of
            # an unadmitted request), so a shed line can show queue_wait_us = total_us + 1.
            self.assertLessEqual(e["queue_wait_us"], e["total_us"] + 1000, e)

        by_outcome = {}
        for e in entries:
            by_outcome.setdefault(e["outcome"], []).append(e)
        self.assertEqual({k: len(v) for k, v in by_outcome.items()},
                         {"completed": 5, "deadline_exceeded": 1, "shed": 1})
        for e in by_outcome["completed"]:
            self.assertEqual(e["grpc_status"], 0)
            self.assertIsInstance(e["upstream_us"], int)
            self.assertLessEqual(e["upstream_us"], e["total_us"])
        # The three OK calls: exact body sizes (gRPC frame = 5-byte prefix + message).
        sized = [e for e in by_outcome["completed"] if e["bytes_out"] > 5]
        self.assertEqual(len(sized), 3)
        response = pb.Response(payload=b"\0" * 200)
        for e in sized:
            self.assertEqual(e["bytes_in"], len(grpc_frame(ok_request)))
            self.assertEqual(e["bytes_out"], len(grpc_frame(response)))
        # The held call spent 1.2 s upstream; the queued one waited for it in the queue.
        self.assertTrue(any(e["upstream_us"] >= 1_100_000 for e in by_outcome["completed"]))
        self.assertTrue(any(e["queue_wait_us"] >= 300_000 for e in by_outcome["completed"]))

        deadline = by_outcome["deadline_exceeded"][0]
        self.assertEqual(deadline["grpc_status"], 4)
        self.assertIsNone(deadline["upstream_us"])
        self.assertGreaterEqual(deadline["queue_wait_us"], 150_000)
        self.assertLess(deadline["queue_wait_us"], 1_000_000)
        shed = by_outcome["shed"][0]
        self.assertEqual(shed["grpc_status"], 8)
        self.assertIsNone(shed["upstream_us"])
        self.assertLess(shed["queue_wait_us"], 100_000)
        self.assertEqual(shed["bytes_out"], 0)  # trailers-only: no body
        self.assertEqual(stats_json(sluice)["server.access_log_dropped_total"]["value"], 0)


if __name__ == "__main__":
    unittest.main()
