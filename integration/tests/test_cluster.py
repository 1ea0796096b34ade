"""sluice's upstream clusters under failure (issue 14): PING keepalive against a frozen endpoint,
max_stream_duration, transparent retry of refused streams, and connection retirement after
max_requests_per_connection. Each test asserts through responses, the upstreams' own counters
and sluice's admin stats."""

import signal
import threading
import time
import unittest

import grpc

import harness
from harness import IntegrationTestCase, direct_mode, service_time, sluice_config
from lowering_upstream import LoweringUpstream
import sluice_test_pb2 as pb

needs_proxy = unittest.skipIf(direct_mode(), "only meaningful with sluice in the path")


class ClusterTestCase(IntegrationTestCase):

    REQUIRES_SLUICE = True

    def cluster_stat(self, proxy, leaf):
        status, body = proxy.admin_get(f"/stats?filter={leaf}")
        self.assertEqual(status, 200, body)
        return sum(int(line.partition(": ")[2]) for line in body.splitlines()
                   if line.partition(": ")[0].endswith("." + leaf))


class Load:
    """`threads` callers, each making one unary call without a deadline after another until
    stop(). Every call is waited for at most `hang_after` seconds: longer counts as hung."""

    def __init__(self, stub, threads=8, hang_after=5.0):
        self.stub = stub
        self.hang_after = hang_after
        self.calls = []  # (start, end, status code name)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]
        for t in self._threads:
            t.start()

    def _run(self):
        while not self._stop.is_set():
            start = time.monotonic()
            future = self.stub.Unary.future(pb.Request(service_time=service_time(0.005)))
            try:
                future.result(timeout=self.hang_after)
                code = "OK"
            except grpc.FutureTimeoutError:
                future.cancel()
                code = "HUNG"
            except grpc.RpcError as e:
                code = e.code().name
            with self._lock:
                self.calls.append((start, time.monotonic(), code))

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(timeout=self.hang_after + 5)
        return list(self.calls)


@needs_proxy
class KeepaliveTest(ClusterTestCase):

    INTERVAL = 0.2
    TIMEOUT = 0.3

    def test_frozen_endpoint_is_bypassed_within_interval_plus_timeout_and_used_again_after(self):
        a = self.start_upstream(name="upstream-a")
        b = self.start_upstream(name="upstream-b")
        config = sluice_config(a.port, workers=1)
        cluster = config["clusters"][0]
        cluster["endpoints"].append(f"127.0.0.1:{b.port}")
        cluster["keepalive"] = {"interval": "200ms", "timeout": "300ms"}
        proxy = self.start_sluice(config)
        load = Load(self.stub(proxy.port))
        try:
            time.sleep(1.0)
            self.assertGreater(a.stats().calls_started["unary"], 10)
            a.signal(signal.SIGSTOP)
            frozen_at = time.monotonic()
            try:
                time.sleep(2.5)
                b_before = b.stats().calls_started["unary"]
            finally:
                a.signal(signal.SIGCONT)
            thawed_at = time.monotonic()
            # Once thawed, a reconnect attempt succeeds after the backoff and a serves again.
            a_before = a.stats().calls_started["unary"]
            harness.wait_for(lambda: a.stats().calls_started["unary"] > a_before + 5, 15,
                             what="the thawed endpoint to get calls again")
        finally:
            calls = load.stop()
        detect = self.INTERVAL + self.TIMEOUT
        slack = 0.5  # a loaded machine's scheduling, the keepalive timer's own lateness
        hung = [c for c in calls if c[2] == "HUNG"]
        self.assertEqual(hung, [], "a call without a deadline hung")
        failed = [c for c in calls if c[2] != "OK"]
        # Only calls that were on the frozen endpoint, or sent to it before it was found dead,
        # fail (UNAVAILABLE: the upstream may have seen them).
        self.assertTrue(all(c[2] == "UNAVAILABLE" for c in failed), failed)
        self.assertTrue(all(c[0] < frozen_at + detect + slack for c in failed), failed)
        # After detection every call is served by the other endpoint, and quickly.
        later = [c for c in calls if frozen_at + detect + slack <= c[0] and c[1] < thawed_at]
        self.assertGreater(len(later), 50)
        self.assertTrue(all(c[2] == "OK" for c in later))
        self.assertLess(max(c[1] - c[0] for c in later), 0.5)
        self.assertGreater(b_before, 0)
        self.assertGreaterEqual(self.cluster_stat(proxy, "upstream_cx_keepalive_timeout_total"), 1)

    def test_pings_on_a_silent_call_stay_within_what_grpc_servers_allow(self):
        # A call the upstream answers only after 2 s: the connection is silent. gRPC servers
        # GOAWAY(too_many_pings) a client that pings a silent connection a fourth time within
        # 5 minutes, failing the call; sluice sends two PINGs and then waits.
        up = self.start_upstream()
        config = sluice_config(up.port, workers=1)
        config["clusters"][0]["keepalive"] = {"interval": "100ms", "timeout": "1s"}
        proxy = self.start_sluice(config)
        stub = self.stub(proxy.port)
        stub.Unary(pb.Request(), timeout=5)  # connected
        stub.Unary(pb.Request(service_time=service_time(2.0)))
        self.assertEqual(self.cluster_stat(proxy, "upstream_cx_keepalive_ping_total"), 2)
        self.assertEqual(self.cluster_stat(proxy, "upstream_cx_goaway_total"), 0)
        self.assertEqual(self.cluster_stat(proxy, "upstream_cx_keepalive_timeout_total"), 0)

    def test_idle_connection_is_not_pinged(self):
        up = self.start_upstream()
        config = sluice_config(up.port, workers=1)
        config["clusters"][0]["keepalive"] = {"interval": "100ms", "timeout": "1s"}
        proxy = self.start_sluice(config)
        stub = self.stub(proxy.port)
        stub.Unary(pb.Request(), timeout=5)
        time.sleep(1.0)
        self.assertEqual(self.cluster_stat(proxy, "upstream_cx_keepalive_ping_total"), 0)
        stub.Unary(pb.Request(), timeout=5)  # the connection is still there and works
        self.assertEqual(self.cluster_stat(proxy, "upstream_cx_total"), 1)


@needs_proxy
class MaxStreamDurationTest(ClusterTestCase):

    def test_call_without_deadline_ends_deadline_exceeded_and_one_with_a_deadline_keeps_it(self):
        up = self.start_upstream()
        config = sluice_config(up.port)
        config["clusters"][0]["max_stream_duration"] = "300ms"
        proxy = self.start_sluice(config)
        stub = self.stub(proxy.port)
        start = time.monotonic()
        with self.assertRaises(grpc.RpcError) as cm:
            stub.Unary(pb.Request(service_time=service_time(3.0)))
        self.assertLess(time.monotonic() - start, 2.0)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertIn("max_stream_duration (300ms) exceeded", cm.exception.details())
        # The client's own deadline wins over max_stream_duration.
        stub.Unary(pb.Request(service_time=service_time(0.6)), timeout=5)
        self.assertEqual(self.cluster_stat(proxy, "upstream_rq_max_duration_reached_total"), 1)
        harness.wait_for(lambda: up.stats().calls_cancelled == 1, 5,
                         what="the upstream to see the expired call cancelled")


@needs_proxy
class TransparentRetryTest(ClusterTestCase):

    def test_streams_refused_by_an_upstream_lowering_its_stream_limit_are_sent_again(self):
        raw = LoweringUpstream(lower_after=10, lowered_limit=4, delay=0.05)
        self.addCleanup(raw.close)
        proxy = self.start_sluice(sluice_config(raw.port, workers=1))
        stub = self.stub(proxy.port)
        calls = [stub.Unary.future(pb.Request(payload=b"p" * 100), timeout=20)
                 for _ in range(200)]
        failures = []
        for c in calls:
            try:
                c.result()
            except grpc.RpcError as e:
                failures.append(e.code().name)
        self.assertEqual(failures, [])
        self.assertGreater(raw.refused, 0, "the upstream refused nothing: the test tests nothing")
        self.assertEqual(raw.answered, 200)
        self.assertGreaterEqual(self.cluster_stat(proxy, "upstream_rq_retry_total"), raw.refused)
        # sluice sent them again itself; none went back to the client as REFUSED_STREAM (which
        # grpcio would have retried, hiding the difference).
        self.assertEqual(self.cluster_stat(proxy, "upstream_rq_retry_refused_total"), 0)


@needs_proxy
class RetirementTest(ClusterTestCase):

    def test_connections_retire_after_max_requests_per_connection_without_failing_a_call(self):
        up = self.start_upstream(delay="2ms")
        config = sluice_config(up.port)
        config["clusters"][0]["max_requests_per_connection"] = 50
        proxy = self.start_sluice(config)
        stub = self.stub(proxy.port)
        failures = []
        pending = []
        for _ in range(500):
            pending.append(stub.Unary.future(pb.Request(), timeout=20))
            if len(pending) >= 20:  # about 20 calls in flight
                try:
                    pending.pop(0).result()
                except grpc.RpcError as e:
                    failures.append(e.code().name)
        for c in pending:
            try:
                c.result()
            except grpc.RpcError as e:
                failures.append(e.code().name)
        self.assertEqual(failures, [])
        self.assertEqual(up.stats().calls_started["unary"], 500)
        self.assertGreaterEqual(self.cluster_stat(proxy, "upstream_cx_total"), 10)
        self.assertGreaterEqual(self.cluster_stat(proxy, "upstream_cx_retired_total"), 9)


if __name__ == "__main__":
    unittest.main()
