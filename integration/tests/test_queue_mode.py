"""Queue mode (issue 16) with a real redis-server on an ephemeral port. QueueFrontendTest: a
frontend sluice whose listener enqueues to a queue, the consumer side played by the test over
RESP (read the entry, check it, push a reply), so every assertion is about what the frontend
puts in the stream and what its caller gets back. QueueEndToEndTest: frontend sluice, consumer
sluice(s) and sluice-test-upstream, gRPC clients on the frontend."""

import json
import signal
import threading
import time
import unittest

import grpc

from harness import IntegrationTestCase, LOOPBACK, direct_mode, grpc_frame, service_time, wait_for
from queue_support import RedisServer, encode_reply, entry_fields, netstrings, pairs
import sluice_test_pb2 as pb

needs_proxy = unittest.skipIf(direct_mode(), "queue mode exists only with sluice in the path")

STREAM = "sluice:work"
GROUP = "sluice"


def frontend_config(redis_port, workers=2, **queue):
    q = {"name": "work", "redis": f"{LOOPBACK}:{redis_port}"}
    q.update(queue)
    return {
        "admin": {"address": f"{LOOPBACK}:0"},
        "workers": workers,
        "queues": [q],
        "listeners": [{"name": "ingress", "address": f"{LOOPBACK}:0", "queue": "work"}],
        "drain_timeout": "2s",
    }


class RedisTestCase(IntegrationTestCase):
    """A redis-server of the test's own on a free port (self.redis), with a client (self.r)."""

    REQUIRES_SLUICE = True

    def setUp(self):
        super().setUp()
        self.redis = RedisServer(self.tmpdir)
        self._processes.append(self.redis)
        self.r = self.redis.client()
        self.addCleanup(self.r.close)

    def stat(self, proxy, leaf):
        status, body = proxy.admin_get(f"/stats?filter={leaf}")
        self.assertEqual(status, 200, body)
        return sum(int(line.partition(": ")[2]) for line in body.splitlines()
                   if line.partition(": ")[0].endswith("." + leaf))


@needs_proxy
class QueueFrontendTest(RedisTestCase):

    def start_frontend(self, **queue):
        proxy = self.start_sluice(frontend_config(self.redis.port, **queue), name="frontend")
        # The frontend creates the group (MKSTREAM) once connected.
        self.wait_group()
        return proxy

    def wait_group(self):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                if any(g[1] == GROUP.encode() for g in self.r.command("XINFO", "GROUPS", STREAM)):
                    return
            except RuntimeError:
                pass
            time.sleep(0.02)
        self.fail("the frontend did not create the consumer group")

    def read_entry(self, block_ms=5000):
        reply = self.r.command("XREADGROUP", "GROUP", GROUP, "py", "COUNT", 1, "BLOCK", block_ms,
                               "STREAMS", STREAM, ">")
        self.assertIsNotNone(reply, "no entry was enqueued")
        entry_id, fields = reply[0][1][0]
        return entry_id, entry_fields(fields)

    def test_unary_call_travels_through_the_stream_and_its_reply_comes_back_unchanged(self):
        proxy = self.start_frontend()
        stub = self.stub(proxy.port)
        result = {}

        def call():
            try:
                resp, c = stub.Unary.with_call(
                    pb.Request(payload=b"ping"), timeout=10,
                    metadata=[("x-user", "alice"), ("x-trace-bin", b"\x00\x01\xff")])
                result["resp"] = resp
                result["initial"] = dict(c.initial_metadata())
                result["trailing"] = dict(c.trailing_metadata())
            except grpc.RpcError as e:
                result["error"] = e

        t = threading.Thread(target=call)
        t.start()
        entry_id, f = self.read_entry()
        self.assertEqual(f["v"], b"1")
        self.assertEqual(f["method"], b"/sluice.test.TestService/Unary")
        self.assertEqual(f["attempt"], b"1")
        # An absolute deadline of what the caller has left: at most the timeout it sent. grpcio
        # rounds a timeout up to 3 significant digits (10 s goes out as "10S" or as "10100m",
        # seen on the wire), and the frontend can be descheduled between the steady and the
        # wall clock reads it anchors the deadline with: 10,250 ms as in the round trip below.
        left_ms = int(f["deadline_ms"]) - int(time.time() * 1000)
        self.assertTrue(8000 < left_ms <= 10250, left_ms)
        meta = dict(pairs(netstrings(f["meta"])))
        self.assertEqual(meta[b"x-user"], b"alice")
        # Byte-exact as on the wire: gRPC sends -bin values base64-encoded (unpadded).
        self.assertEqual(meta[b"x-trace-bin"], b"AAH/")
        self.assertEqual(meta[b":path"], b"/sluice.test.TestService/Unary")
        self.assertNotIn(b"grpc-timeout", meta)  # the absolute deadline replaces it
        self.assertEqual(pb.Request.FromString(f["body"][5:]).payload, b"ping")
        self.assertTrue(f["reply_to"].startswith(b"sluice:work:reply:"), f["reply_to"])

        body = grpc_frame(pb.Response(payload=b"pong"))
        self.r.command("RPUSH", f["reply_to"], encode_reply(
            f["call_id"], headers=[(b":status", b"200"), (b"content-type", b"application/grpc"),
                                   (b"x-served-by", b"py")],
            body=body, trailers=[(b"grpc-status", b"0"), (b"x-trailer-bin", b"AgM")]))
        self.r.command("XACK", STREAM, GROUP, entry_id)
        t.join(10)
        self.assertNotIn("error", result)
        self.assertEqual(result["resp"].payload, b"pong")
        self.assertEqual(result["initial"]["x-served-by"], "py")
        self.assertIn("x-sluice-queue-us", result["initial"])
        self.assertEqual(result["trailing"]["x-trailer-bin"], b"\x02\x03")
        self.assertEqual(self.stat(proxy, "frontend_rq_ok_total"), 1)

    def test_a_consumers_error_status_reaches_the_caller(self):
        proxy = self.start_frontend()
        stub = self.stub(proxy.port)
        result = {}

        def call():
            try:
                stub.Unary(pb.Request(), timeout=10)
            except grpc.RpcError as e:
                result["error"] = e

        t = threading.Thread(target=call)
        t.start()
        _, f = self.read_entry()
        self.r.command("RPUSH", f["reply_to"], encode_reply(
            f["call_id"], status=9, message=b"precondition: nope \xc3\xa9"))
        t.join(10)
        self.assertEqual(result["error"].code(), grpc.StatusCode.FAILED_PRECONDITION)
        self.assertEqual(result["error"].details(), "precondition: nope \u00e9")

    def test_streaming_call_is_unimplemented_and_not_enqueued(self):
        proxy = self.start_frontend()
        stub = self.stub(proxy.port)
        with self.assertRaises(grpc.RpcError) as cm:
            stub.ClientStream(iter([pb.Request(payload=b"a"), pb.Request(payload=b"b")]),
                              timeout=5)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
        self.assertIn("unary calls only", cm.exception.details())
        self.assertEqual(self.r.command("XLEN", STREAM), 0)
        self.assertEqual(self.stat(proxy, "frontend_rq_unimplemented_total"), 1)

    def test_deadline_while_queued_is_deadline_exceeded(self):
        proxy = self.start_frontend()
        stub = self.stub(proxy.port)
        start = time.monotonic()
        with self.assertRaises(grpc.RpcError) as cm:
            stub.Unary(pb.Request(), timeout=0.3)
        elapsed = time.monotonic() - start
        self.assertEqual(cm.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertLess(elapsed, 2.0)
        self.assertEqual(self.r.command("XLEN", STREAM), 1)  # it was enqueued, nobody took it
        harness_wait = time.monotonic() + 3
        while time.monotonic() < harness_wait:
            if self.stat(proxy, "frontend_rq_timeout_total") + \
                    self.stat(proxy, "frontend_rq_cancelled_total") == 1:
                break
            time.sleep(0.05)
        self.assertEqual(self.stat(proxy, "frontend_rq_open"), 0)

    def test_redis_down_is_unavailable_fast(self):
        proxy = self.start_frontend()
        stub = self.stub(proxy.port)
        self.redis.kill()
        time.sleep(0.2)  # the frontend sees its connections drop
        start = time.monotonic()
        with self.assertRaises(grpc.RpcError) as cm:
            stub.Unary(pb.Request(), timeout=5)
        elapsed = time.monotonic() - start
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE)
        self.assertIn("Redis", cm.exception.details())
        self.assertLess(elapsed, 0.5)
        self.assertGreaterEqual(self.stat(proxy, "frontend_rq_enqueue_failed_total"), 1)

    def test_backlog_above_max_pending_is_resource_exhausted_before_xadd(self):
        proxy = self.start_frontend(max_pending=2)
        stub = self.stub(proxy.port)
        for _ in range(2):
            self.r.command("XADD", STREAM, "*", "v", "1")
        time.sleep(0.3)  # the backlog is polled every 100 ms
        with self.assertRaises(grpc.RpcError) as cm:
            stub.Unary(pb.Request(), timeout=5)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("max_pending 2", cm.exception.details())
        self.assertEqual(dict(cm.exception.trailing_metadata())["grpc-retry-pushback-ms"], "250")
        self.assertEqual(self.r.command("XLEN", STREAM), 2)

    def test_round_trip_latency_at_low_load(self):
        """What queue mode adds to a call at low load, with an instant consumer (printed)."""
        proxy = self.start_frontend()
        stub = self.stub(proxy.port)
        stop = threading.Event()
        consumer = self.redis.client()
        self.addCleanup(consumer.close)

        def serve():
            body = grpc_frame(pb.Response(payload=b"x"))
            while not stop.is_set():
                reply = consumer.command("XREADGROUP", "GROUP", GROUP, "py", "COUNT", 1,
                                         "BLOCK", 100, "STREAMS", STREAM, ">")
                if not reply:
                    continue
                entry_id, fields = reply[0][1][0]
                f = entry_fields(fields)
                consumer.command("RPUSH", f["reply_to"], encode_reply(
                    f["call_id"], headers=[(b":status", b"200"),
                                           (b"content-type", b"application/grpc")],
                    body=body, trailers=[(b"grpc-status", b"0")]))
                consumer.command("XACK", STREAM, GROUP, entry_id)
                consumer.command("XDEL", STREAM, entry_id)

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        stub.Unary(pb.Request(), timeout=5)  # warm-up
        samples = []
        for _ in range(100):
            start = time.monotonic()
            stub.Unary(pb.Request(service_time=service_time(0)), timeout=5)
            samples.append(time.monotonic() - start)
        stop.set()
        t.join(2)
        samples.sort()
        p50, p99 = samples[49] * 1000, samples[98] * 1000
        print(f"\nqueue-mode round trip (python consumer over RESP): p50 {p50:.2f} ms, "
              f"p99 {p99:.2f} ms")
        self.assertLess(p50, 50)


def consumer_config(redis_port, upstream_port, name="pull", filters=None, claim_after="1s"):
    return {
        "admin": {"address": f"{LOOPBACK}:0"},
        "workers": 1,
        "queues": [{"name": "work", "redis": f"{LOOPBACK}:{redis_port}",
                    "claim_after": claim_after, "max_deliveries": 3}],
        "consumers": [{"name": name, "queue": "work", "cluster": "app",
                       "filters": filters if filters is not None else
                       [{"type": "fixed_semaphore", "max_concurrency": 4, "max_queue": 0}]}],
        "clusters": [{"name": "app", "endpoints": [f"{LOOPBACK}:{upstream_port}"]}],
        "drain_timeout": "5s",
    }


@needs_proxy
class QueueEndToEndTest(RedisTestCase):
    """A frontend sluice, consumer sluice(s) and sluice-test-upstream: the real path."""

    def test_unary_ok_end_to_end_with_metadata_and_trailers(self):
        upstream = self.start_upstream()
        consumer = self.start_sluice(consumer_config(self.redis.port, upstream.port),
                                     name="consumer")
        frontend = self.start_sluice(frontend_config(self.redis.port), name="frontend")
        stub = self.stub(frontend.port)
        resp, call = stub.Unary.with_call(
            pb.Request(payload=b"abc", response_size=7, echo_metadata=True,
                       trailing_metadata={"x-extra": b"e", "x-extra-bin": b"\x00\xff"}),
            timeout=10, metadata=[("x-user", "alice"), ("x-trace-bin", b"\x00\x01\xff")])
        self.assertEqual(len(resp.payload), 7)
        initial = dict(call.initial_metadata())
        trailing = dict(call.trailing_metadata())
        self.assertEqual(initial.get("x-user"), "alice")
        self.assertEqual(trailing.get("x-extra"), "e")
        self.assertEqual(trailing.get("x-extra-bin"), b"\x00\xff")
        self.assertEqual(trailing.get("x-trace-bin"), b"\x00\x01\xff")
        # The upstream saw the caller's remaining deadline. (Up to 250 ms over 10 s: grpcio sends
        # a 10 s timeout as "10100m" as often as "10S", and under CPU contention a process can be
        # descheduled between reading the steady clock the remaining time came from and the
        # wall clock the envelope's deadline is written in.)
        last_deadline_ms = upstream.stats().last_deadline_ms
        self.assertTrue(0 < last_deadline_ms <= 10250, last_deadline_ms)
        # Acknowledged and deleted (just after the reply is pushed, so not always yet).
        wait_for(lambda: self.r.command("XLEN", STREAM) == 0, 5,
                 what="the entry acknowledged and deleted")
        # The consumer's limiter is on /limits like a listener's.
        status, body = consumer.admin_get("/limits")
        self.assertEqual(status, 200, body)
        limits = json.loads(body)
        self.assertIn("consumer:pull", json.dumps(limits))
        # An error status passes through unchanged too.
        with self.assertRaises(grpc.RpcError) as cm:
            stub.Fail(pb.Request(status_code=9, status_message="nope"), timeout=10)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
        self.assertEqual(cm.exception.details(), "nope")

    def test_round_trip_latency_added_at_low_load(self):
        upstream = self.start_upstream()
        self.start_sluice(consumer_config(self.redis.port, upstream.port), name="consumer")
        frontend = self.start_sluice(frontend_config(self.redis.port), name="frontend")

        def measure(stub, n=200):
            stub.Unary(pb.Request(), timeout=5)
            samples = []
            for _ in range(n):
                start = time.monotonic()
                stub.Unary(pb.Request(), timeout=5)
                samples.append(time.monotonic() - start)
            samples.sort()
            return samples[n // 2] * 1000, samples[n * 99 // 100] * 1000

        direct = measure(self.stub(upstream.port))
        queued = measure(self.stub(frontend.port))
        print(f"\nunary round trip at low load: direct p50 {direct[0]:.2f} ms p99 "
              f"{direct[1]:.2f} ms; queue mode p50 {queued[0]:.2f} ms p99 {queued[1]:.2f} ms "
              f"(added p50 {queued[0] - direct[0]:.2f} ms)")
        self.assertLess(queued[0], direct[0] + 20)

    def test_consumer_killed_mid_call_is_served_by_another(self):
        upstream = self.start_upstream()
        # Kill the first consumer while the service runs its call; the second takes the entry
        # over after claim_after and runs it again (at-least-once); the caller gets one reply.
        first = self.start_sluice(consumer_config(self.redis.port, upstream.port, name="a"),
                                  name="consumer-a")
        frontend = self.start_sluice(frontend_config(self.redis.port), name="frontend")
        stub = self.stub(frontend.port)
        result = {}

        def call():
            try:
                result["resp"] = stub.Unary(pb.Request(payload=b"x",
                                                       service_time=service_time(1.0)),
                                            timeout=15)
            except grpc.RpcError as e:
                result["error"] = e

        t = threading.Thread(target=call)
        t.start()
        deadline = time.monotonic() + 5
        while upstream.stats().in_flight == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertEqual(upstream.stats().in_flight, 1)
        first.kill()
        self.start_sluice(consumer_config(self.redis.port, upstream.port, name="b"),
                          name="consumer-b")
        t.join(15)
        self.assertNotIn("error", result, result.get("error"))
        self.assertEqual(result["resp"].payload, b"")
        self.assertEqual(upstream.stats().calls_started["unary"], 2)  # run twice, answered once
        self.assertEqual(self.r.command("XLEN", STREAM), 0)

    def test_sigterm_finishes_the_call_in_hand_replies_and_exits(self):
        upstream = self.start_upstream()
        consumer = self.start_sluice(consumer_config(self.redis.port, upstream.port),
                                     name="consumer")
        frontend = self.start_sluice(frontend_config(self.redis.port), name="frontend")
        stub = self.stub(frontend.port)
        future = stub.Unary.future(pb.Request(service_time=service_time(0.8)), timeout=10)
        deadline = time.monotonic() + 5
        while upstream.stats().in_flight == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        consumer.signal(signal.SIGTERM)
        self.assertIsNotNone(future.result(timeout=10))  # finished, replied: OK
        self.assertEqual(consumer.wait(10), 0)
        self.assertEqual(self.r.command("XLEN", STREAM), 0)
        self.assertEqual(upstream.stats().calls_started["unary"], 1)

    def test_redis_restarted_mid_run_every_call_ends_and_service_resumes(self):
        upstream = self.start_upstream()
        self.start_sluice(consumer_config(self.redis.port, upstream.port), name="consumer")
        frontend = self.start_sluice(frontend_config(self.redis.port), name="frontend")
        stub = self.stub(frontend.port)
        codes = []
        stop = threading.Event()

        def load():
            while not stop.is_set():
                try:
                    stub.Unary(pb.Request(service_time=service_time(0.01)), timeout=3)
                    codes.append("OK")
                except grpc.RpcError as e:
                    codes.append(e.code().name)

        threads = [threading.Thread(target=load) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        self.r.close()
        self.redis.restart()  # no persistence: stream, group and reply lists are gone
        self.r = self.redis.client()
        self.addCleanup(self.r.close)
        time.sleep(2.0)
        restarted_at = len(codes)
        time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join(10)
        self.assertTrue(all(c in ("OK", "UNAVAILABLE") for c in codes), set(codes))
        after = codes[restarted_at:]
        self.assertTrue(after and all(c == "OK" for c in after), after[:20])

    def test_work_goes_where_capacity_is(self):
        """Two pods of different capacity behind one queue: each consumer pulls only what its
        limiter admits, so the pod with four times the capacity serves most of the calls."""
        slow = self.start_upstream(name="upstream-slow", workers=1, delay="20ms")
        fast = self.start_upstream(name="upstream-fast", workers=4, delay="20ms")

        def sem(n):
            return [{"type": "fixed_semaphore", "max_concurrency": n, "max_queue": 0}]

        self.start_sluice(consumer_config(self.redis.port, slow.port, name="slow",
                                          filters=sem(1)), name="consumer-slow")
        self.start_sluice(consumer_config(self.redis.port, fast.port, name="fast",
                                          filters=sem(4)), name="consumer-fast")
        frontend = self.start_sluice(frontend_config(self.redis.port), name="frontend")
        stub = self.stub(frontend.port)
        futures = [stub.Unary.future(pb.Request(), timeout=20) for _ in range(100)]
        for f in futures:
            f.result()
        served_slow = slow.stats().calls_started["unary"]
        served_fast = fast.stats().calls_started["unary"]
        print(f"\n100 calls: slow pod (1 x 20 ms) served {served_slow}, "
              f"fast pod (4 x 20 ms) served {served_fast}")
        self.assertEqual(served_slow + served_fast, 100)
        self.assertGreater(served_fast, 2 * served_slow)
        # (Not asserted on the upstreams' max_in_flight: they count a call until grpc++'s
        # OnDone, well after its reply left, so consecutive calls overlap there. The exact
        # COUNT-follows-permits check is QueueConsumerTest.NeverReadsMoreThanItsLimiterCanAdmit.)

    def entries_added(self):
        """XINFO STREAM entries-added: every XADD the stream ever took (XLEN falls as the
        consumer deletes what it acknowledged; this only counts additions)."""
        info = self.r.command("XINFO", "STREAM", STREAM)
        return dict(zip(info[0::2], info[1::2]))[b"entries-added"]

    def float_stat(self, proxy, leaf):
        status, body = proxy.admin_get(f"/stats?filter={leaf}")
        self.assertEqual(status, 200, body)
        return sum(float(line.partition(": ")[2]) for line in body.splitlines()
                   if line.partition(": ")[0].endswith("." + leaf))

    def test_a_deadline_shorter_than_the_estimated_wait_is_refused_before_xadd(self):
        """One pod of 10 calls/s (one worker, 100 ms a call, a semaphore of 1) and 40 calls
        queued at once: a new entry would wait ~3 s. A call with a 1 s deadline is refused
        RESOURCE_EXHAUSTED with pushback before anything is added; one with 60 s is enqueued
        and served."""
        upstream = self.start_upstream(workers=1, delay="100ms")
        self.start_sluice(consumer_config(
            self.redis.port, upstream.port,
            filters=[{"type": "fixed_semaphore", "max_concurrency": 1, "max_queue": 0}]),
            name="consumer")
        # One worker: each worker's estimator has its own polls, and the gauges waited on below
        # are worker 0's.
        frontend = self.start_sluice(frontend_config(self.redis.port, workers=1),
                                     name="frontend")
        stub = self.stub(frontend.port)
        backlog = [stub.Unary.future(pb.Request(), timeout=60) for _ in range(40)]
        # The frontend has measured the consumers' drain rate (>= 500 ms of saturated polls).
        wait_for(lambda: self.float_stat(frontend, "drain_rate") > 0, 5, what="a drain rate")
        wait_ms = self.stat(frontend, "estimated_wait_ms")
        self.assertGreater(wait_ms, 1000)
        added = self.entries_added()
        length = self.r.command("XLEN", STREAM)
        with self.assertRaises(grpc.RpcError) as cm:
            stub.Unary(pb.Request(), timeout=1.0)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("estimated wait", cm.exception.details())
        self.assertIn("exceeds the call's remaining deadline", cm.exception.details())
        pushback = int(dict(cm.exception.trailing_metadata())["grpc-retry-pushback-ms"])
        self.assertGreaterEqual(pushback, 100)
        self.assertEqual(self.entries_added(), added)  # never XADDed
        self.assertLessEqual(self.r.command("XLEN", STREAM), length)
        self.assertEqual(self.stat(frontend, "frontend_rq_backpressure_wait_total"), 1)
        self.assertEqual(self.stat(frontend, "frontend_rq_backpressure_total"), 1)
        # A deadline that covers the wait is enqueued, and served.
        late = stub.Unary.future(pb.Request(payload=b"late"), timeout=60)
        wait_for(lambda: self.entries_added() == added + 1, 5, what="the long call enqueued")
        for f in backlog:
            f.result(timeout=30)
        self.assertEqual(late.result(timeout=30).payload, b"")
        self.assertEqual(upstream.stats().calls_started["unary"], 41)
        self.assertEqual(self.stat(frontend, "frontend_rq_backpressure_total"), 1)
        print(f"\nestimated wait {wait_ms} ms with 40 queued at ~10/s; refused the 1 s call "
              f"with pushback {pushback} ms")

    def test_entry_expired_while_queued_is_answered_without_calling_the_service(self):
        upstream = self.start_upstream()
        frontend = self.start_sluice(frontend_config(self.redis.port), name="frontend")
        stub = self.stub(frontend.port)
        with self.assertRaises(grpc.RpcError) as cm:  # no consumer yet: it waits in the stream
            stub.Unary(pb.Request(), timeout=0.3)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertEqual(self.r.command("XLEN", STREAM), 1)
        consumer = self.start_sluice(consumer_config(self.redis.port, upstream.port),
                                     name="consumer")
        deadline = time.monotonic() + 5
        while self.r.command("XLEN", STREAM) != 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertEqual(self.r.command("XLEN", STREAM), 0)  # answered, acknowledged, deleted
        self.assertEqual(self.stat(consumer, "consumer_rq_expired_total"), 1)
        self.assertEqual(upstream.stats().calls_started.get("unary", 0), 0)

    def queues(self, proxy):
        status, body = proxy.admin_get("/queues")
        self.assertEqual(status, 200, body)
        return json.loads(body)

    def test_queues_endpoint_shows_the_backlog_grow_and_the_calls_complete(self):
        """/queues on the frontend and on the pod: live values, as an operator reads them."""
        upstream = self.start_upstream()
        # One worker: the polled gauges are worker 0's, and so are all the calls here.
        frontend = self.start_sluice(frontend_config(self.redis.port, workers=1),
                                     name="frontend")
        stub = self.stub(frontend.port)
        futures = [stub.Unary.future(pb.Request(), timeout=20) for _ in range(5)]

        # No consumer yet: the calls wait in the stream, and the frontend shows it.
        def waiting():
            q = self.queues(frontend)["queues"][0]
            return q if q["backlog"] == 5 and q["open"] == 5 else None
        q = wait_for(waiting, 5, interval=0.05, what="a backlog of 5 on /queues")
        self.assertEqual(q["queue"], "work")
        self.assertEqual(q["stream"], STREAM)
        self.assertEqual(q["group"], GROUP)
        self.assertEqual(q["redis"], f"{LOOPBACK}:{self.redis.port}")
        self.assertEqual(q["stream_length"], 5)
        self.assertEqual(q["pending"], 0)
        self.assertEqual(q["requests"]["ok"], 0)
        self.assertIsNone(q["e2e_ms_recent"])  # nothing answered yet
        wait_for(lambda: self.queues(frontend)["queues"][0]["redis_info"]["used_memory_bytes"],
                 5, interval=0.1, what="Redis's memory from INFO")

        consumer = self.start_sluice(consumer_config(self.redis.port, upstream.port),
                                     name="consumer")
        for f in futures:
            f.result(timeout=20)
        with self.assertRaises(grpc.RpcError):
            stub.Fail(pb.Request(status_code=9, status_message="nope"), timeout=10)

        def answered():
            q = self.queues(frontend)["queues"][0]
            recent = q["e2e_ms_recent"]
            return q if (q["requests"]["ok"] == 6 and q["backlog"] == 0 and q["open"] == 0 and
                         recent and recent["count"] == 6) else None
        q = wait_for(answered, 5, interval=0.1, what="6 calls answered on the frontend's /queues")
        self.assertGreater(q["e2e_ms_recent"]["p99"], 0)
        self.assertEqual(q["requests"]["backpressure"], 0)

        def completed():
            c = self.queues(consumer)["consumers"][0]
            return c if c["completed"] == 6 and c["in_flight"] == 0 else None
        c = wait_for(completed, 5, interval=0.1, what="6 calls completed on the pod's /queues")
        self.assertEqual(c["consumer"], "pull")
        self.assertEqual(c["queue"], "work")
        self.assertEqual(c["cluster"], "app")
        self.assertEqual(c["read"], 6)
        self.assertEqual(c["completed_by_status"], {"OK": 5, "FAILED_PRECONDITION": 1})
        self.assertEqual(c["limit"], 4)  # its fixed_semaphore
        self.assertEqual([(x["filter"], x["type"]) for x in c["limiters"]],
                         [("fixed_semaphore", "fixed_semaphore")])
        self.assertIsNone(c["adjustments"])  # no adaptive limiter
        # The pod's history has the consumer's completions per second.
        wait_for(lambda: any(v for v in json.loads(consumer.admin_get("/history")[1])
                             ["consumers"][0].get("completed_ok_per_s", []) if v),
                 5, interval=0.2, what="completions per second in the pod's /history")

    def test_poison_entry_is_dead_lettered(self):
        upstream = self.start_upstream()
        consumer = self.start_sluice(consumer_config(self.redis.port, upstream.port),
                                     name="consumer")
        self.r.command("XADD", STREAM, "*", "v", "1", "call_id", "p1", "method", "/x.Y/Z")
        deadline = time.monotonic() + 5
        while self.r.command("XLEN", STREAM + ":dead") == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        dead = self.r.command("XRANGE", STREAM + ":dead", "-", "+")
        self.assertEqual(len(dead), 1)
        fields = entry_fields(dead[0][1])
        self.assertIn(b"undecodable", fields["dead_reason"])
        self.assertEqual(self.r.command("XLEN", STREAM), 0)
        self.assertEqual(self.stat(consumer, "consumer_rq_dead_lettered_total"), 1)
        self.assertEqual(upstream.stats().calls_started.get("unary", 0), 0)


if __name__ == "__main__":
    unittest.main()
