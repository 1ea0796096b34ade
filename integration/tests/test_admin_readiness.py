"""Readiness through the admin port (issue 4): /ready during a SIGTERM drain and after
POST /drain, and /ready answering quickly while both workers are saturated with load (h2load)."""

import json
import os
import re
import signal
import time
import unittest

import grpc

import harness
from harness import (UNARY_PATH, AdminTestCase, admin_request, grpc_frame, sluice_config,
                     stats_json, with_filters)
import sluice_test_pb2 as pb


# --- drain -------------------------------------------------------------------------------------

class DrainTest(AdminTestCase):
    def poll_ready_until(self, sluice, done):
        """GET /ready every 50 ms until done() is true; returns the statuses seen."""
        seen = []
        while not done():
            try:
                seen.append(admin_request(sluice, "GET", "/ready", timeout=2)[0])
            except ConnectionError:
                # SIGTERM: the admin port closes once the last stream is done, which can be
                # just before the client sees its answer.
                break
            time.sleep(0.05)
        return seen

    def test_sigterm_drain_is_not_ready_while_a_call_is_in_flight_and_exits_after_it(self):
        upstream = self.start_upstream(workers=4)
        sluice = self.start_sluice(sluice_config(upstream.port, drain_timeout="10s"))
        held = self.hold_call(sluice.port, 1.5)
        self.wait_in_flight(upstream, 1)
        self.assertEqual(admin_request(sluice, "GET", "/ready")[0], 200)
        sluice.signal(signal.SIGTERM)
        harness.wait_for(lambda: admin_request(sluice, "GET", "/ready", timeout=2)[0] == 503, 1,
                         what="/ready to turn 503 after SIGTERM")
        self.assertEqual(admin_request(sluice, "GET", "/ready")[2], "DRAINING\n")
        harness.wait_for(lambda: harness.connect_refused(sluice.port), 2,
                         what="the listener to close")
        seen = self.poll_ready_until(sluice, held.done)
        self.assertGreaterEqual(len(seen), 5, "the call should still be in flight for a while")
        self.assertEqual(set(seen), {503}, "readiness came back during the drain")
        self.assertTrue(sluice.alive() or held.done())
        self.assertEqual(held.result(), pb.Response())
        self.assertEqual(held.code(), grpc.StatusCode.OK)
        # Nothing left in flight: the process exits cleanly well before drain_timeout.
        self.assertEqual(sluice.wait(5), 0, sluice.log_tail())
        self.assertIn("drained; exiting", sluice.stderr() + sluice.stdout())

    def test_admin_drain_refuses_new_connections_finishes_in_flight_calls_and_keeps_running(self):
        upstream = self.start_upstream(workers=4)
        sluice = self.start_sluice(sluice_config(upstream.port, drain_timeout="10s"))
        held = self.hold_call(sluice.port, 1.5)
        self.wait_in_flight(upstream, 1)
        status, _, body = admin_request(sluice, "POST", "/drain")
        self.assertEqual((status, body), (200, "OK: draining\n"))
        self.assertEqual(admin_request(sluice, "GET", "/ready")[::2], (503, "DRAINING\n"))
        harness.wait_for(lambda: harness.connect_refused(sluice.port), 2,
                         what="the listener to close")
        # A new client cannot get in.
        with self.assertRaises(grpc.RpcError) as cm:
            self.stub(sluice.port).Unary(pb.Request(), timeout=1)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE)
        seen = self.poll_ready_until(sluice, held.done)
        self.assertEqual(set(seen), {503})
        self.assertEqual(held.result(), pb.Response())
        # Unlike SIGTERM, an admin drain keeps the process (and its admin port) up.
        time.sleep(1.5)
        self.assertTrue(sluice.alive(), sluice.log_tail())
        self.assertEqual(admin_request(sluice, "GET", "/ready")[0], 503)
        self.assertEqual(json.loads(admin_request(sluice, "GET", "/server_info")[2])["state"],
                         "DRAINING")
        s = stats_json(sluice)
        self.assertEqual(s["listener.ingress.downstream_rq_completed_total"]["value"], 1)
        self.assertEqual(s["listener.ingress.downstream_rq_drained_total"]["value"], 0)
        self.assertEqual(s["listener.ingress.downstream_rq_total"]["value"], 1)
        self.assertTrue(harness.connect_refused(sluice.port))


# --- the admin thread under load ---------------------------------------------------------------

def thread_sched(pid):
    """{thread name: (ns on CPU, ns runnable but waiting)} from /proc/PID/task/*/schedstat."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                run_ns, wait_ns, _ = map(int, f.read().split())
        except FileNotFoundError:
            continue
        out[f"{name}/{tid}"] = (run_ns, wait_ns)
    return out


class AdminUnderLoadTest(AdminTestCase):
    def test_ready_answers_quickly_while_both_workers_are_saturated(self):
        upstream = self.start_upstream(workers=1, delay="10ms")
        # One permit and no queue: nearly every request is shed by sluice itself, so the load
        # costs sluice's workers CPU without waiting on the upstream.
        sluice = self.start_sluice(with_filters(upstream.port, [
            {"type": "fixed_semaphore", "max_concurrency": 1, "max_queue": 0}]))
        body_path = os.path.join(self.tmpdir, "empty.grpc")
        with open(body_path, "wb") as f:
            f.write(grpc_frame(pb.Request()))
        load_s = 4
        h2load = harness.ManagedProcess("h2load", [
            "h2load", "-D", str(load_s), "-t", "2", "-c", "16", "-m", "64", "-d", body_path,
            "-H", "content-type: application/grpc", "-H", "te: trailers",
            f"http://127.0.0.1:{sluice.port}{UNARY_PATH}"], self.tmpdir)
        self._processes.append(h2load)
        harness.wait_for(lambda: stats_json(sluice)["listener.ingress.downstream_rq_total"]
                         ["value"] > 1000, 5, what="the load to start")
        before = thread_sched(sluice.pid)
        t0 = time.monotonic_ns()
        latencies = []
        statuses = []
        while time.monotonic() < t0 / 1e9 + load_s - 1.0:
            start = time.monotonic()
            statuses.append(admin_request(sluice, "GET", "/ready", timeout=3)[0])
            latencies.append(time.monotonic() - start)
            time.sleep(0.05)
        after = thread_sched(sluice.pid)
        wall = time.monotonic_ns() - t0
        self.assertEqual(h2load.wait(load_s + 10), 0, h2load.log_tail())
        out = h2load.stdout()

        # The workers really were saturated: each was running or waiting for a CPU (runnable)
        # most of the time, never idle for want of work.
        busy = {}
        for name, (run, wait) in after.items():
            if name.startswith("sluice-w"):
                run0, wait0 = before.get(name, (0, 0))
                busy[name] = ((run - run0) + (wait - wait0)) / wall
        self.assertEqual(len(busy), 2, busy)
        summary = (f"worker busy fractions {busy}; /ready latencies ms: max "
                   f"{1000 * max(latencies):.1f}, median "
                   f"{1000 * sorted(latencies)[len(latencies) // 2]:.1f}, n={len(latencies)}")
        self.assertTrue(all(b > 0.5 for b in busy.values()), summary)
        self.assertEqual(set(statuses), {200}, summary)
        self.assertGreaterEqual(len(latencies), 20, summary)
        self.assertLess(max(latencies), 0.3, summary)
        m = re.search(r"(\d+) succeeded", out)
        self.assertIsNotNone(m, out)
        self.assertGreater(int(m.group(1)), 20_000, out)
        print(f"\n{summary}; h2load: {re.search(r'finished in .*', out).group(0)}")


if __name__ == "__main__":
    unittest.main()
