"""The test upstream and test client on their own (no sluice): every method, metadata, large
messages, errors, capacity (workers x service time), the schedule, one-at-a-time client
streaming, cancellation, deadlines, and the Stats counters."""

import base64
import signal
import subprocess
import time
import unittest

import grpc

import harness
from harness import IntegrationTestCase, service_time
import sluice_test_pb2 as pb

MIB = 1024 * 1024


def md_dict(metadata):
    return {m.key: m.value for m in metadata}


class PythonClientTest(IntegrationTestCase):
    """Each method through the Python grpcio client."""

    def setUp(self):
        super().setUp()
        self.up = self.start_upstream(workers=4, delay="2ms")
        self.stub = self.stub(self.up.port)

    def test_unary_answers_with_the_requested_response_size(self):
        resp = self.stub.Unary(pb.Request(payload=b"abc", response_size=1000), timeout=5)
        self.assertEqual(len(resp.payload), 1000)

    def test_server_stream_sends_response_count_messages_in_order(self):
        msgs = list(self.stub.ServerStream(pb.Request(response_count=5, response_size=7),
                                           timeout=5))
        self.assertEqual([m.sequence for m in msgs], [0, 1, 2, 3, 4])
        self.assertTrue(all(len(m.payload) == 7 for m in msgs))

    def test_client_stream_returns_messages_and_bytes_processed(self):
        resp = self.stub.ClientStream(iter([pb.Request(payload=b"x" * 100)] * 6), timeout=5)
        self.assertEqual((resp.messages_processed, resp.bytes_processed), (6, 600))

    def test_bidi_echoes_each_payload(self):
        reqs = [pb.Request(payload=bytes([i]) * 10) for i in range(4)]
        resps = list(self.stub.Bidi(iter(reqs), timeout=5))
        self.assertEqual([r.payload for r in resps], [r.payload for r in reqs])
        self.assertEqual([r.sequence for r in resps], [0, 1, 2, 3])

    def test_fail_returns_status_message_and_trailing_metadata(self):
        req = pb.Request(status_code=grpc.StatusCode.FAILED_PRECONDITION.value[0],
                         status_message="bad thing: 100% ünïcode")
        req.trailing_metadata["x-fail-reason"] = b"quota"
        req.trailing_metadata["x-fail-detail-bin"] = b"\x00\x01\xfe\xff"
        with self.assertRaises(grpc.RpcError) as cm:
            self.stub.Fail(req, timeout=5)
        err = cm.exception
        self.assertEqual(err.code(), grpc.StatusCode.FAILED_PRECONDITION)
        self.assertEqual(err.details(), "bad thing: 100% ünïcode")
        trailers = md_dict(err.trailing_metadata())
        self.assertEqual(trailers["x-fail-reason"], "quota")
        self.assertEqual(trailers["x-fail-detail-bin"], b"\x00\x01\xfe\xff")

    def test_fail_with_out_of_range_code_is_invalid_argument(self):
        with self.assertRaises(grpc.RpcError) as cm:
            self.stub.Fail(pb.Request(status_code=99), timeout=5)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)

    def test_metadata_is_echoed_as_initial_and_trailing_including_bin_keys(self):
        sent = [("x-plain", "value 1"), ("x-blob-bin", b"\x00\xffbinary"), ("x-multi", "a")]
        _, call = self.stub.Unary.with_call(pb.Request(echo_metadata=True), metadata=sent,
                                            timeout=5)
        for md in (md_dict(call.initial_metadata()), md_dict(call.trailing_metadata())):
            self.assertEqual(md["x-plain"], "value 1")
            self.assertEqual(md["x-blob-bin"], b"\x00\xffbinary")
            self.assertEqual(md["x-multi"], "a")
            self.assertFalse(any(k.startswith("grpc-") for k in md))

    def test_illegal_requested_trailers_are_invalid_argument_not_a_crash(self):
        for key, value in (("Bad Key", b"v"), ("x-ok", b"line\nbreak"), ("grpc-status", b"0")):
            req = pb.Request()
            req.trailing_metadata[key] = value
            with self.assertRaises(grpc.RpcError) as cm:
                self.stub.Unary(req, timeout=5)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, key)
            self.assertIn(key, cm.exception.details())
        self.assertTrue(self.up.alive())

    def test_metadata_is_not_echoed_unless_asked(self):
        _, call = self.stub.Unary.with_call(pb.Request(), metadata=[("x-plain", "v")], timeout=5)
        self.assertNotIn("x-plain", md_dict(call.initial_metadata()))

    def test_four_mib_messages_work_both_ways(self):
        big = b"z" * (4 * MIB + 3)
        resp = self.stub.Unary(pb.Request(payload=big, response_size=5 * MIB), timeout=10)
        self.assertEqual(len(resp.payload), 5 * MIB)
        echoed = list(self.stub.Bidi(iter([pb.Request(payload=big)] * 2), timeout=10))
        self.assertEqual([len(r.payload) for r in echoed], [len(big)] * 2)
        self.assertEqual(self.up.stats().bytes_processed, 3 * len(big))

    def test_deadline_remaining_is_reported_in_trailing_metadata(self):
        _, call = self.stub.Unary.with_call(pb.Request(), timeout=3)
        remaining = int(md_dict(call.trailing_metadata())["x-upstream-deadline-ms"])
        # grpcio rounds the timeout it sends up to 10 ms below 10 s: 3 s goes out as "3S" or
        # "3010m" (seen on the wire), so a fast call can arrive with up to 3,009 ms left.
        self.assertLessEqual(remaining, 3010)
        self.assertGreater(remaining, 2000)
        self.assertEqual(self.up.stats().last_deadline_ms, remaining)

    def test_no_deadline_header_without_a_deadline(self):
        _, call = self.stub.Unary.with_call(pb.Request())
        self.assertNotIn("x-upstream-deadline-ms", md_dict(call.trailing_metadata()))

    def test_deadline_exceeded_is_seen_as_cancellation(self):
        with self.assertRaises(grpc.RpcError) as cm:
            self.stub.Unary(pb.Request(service_time=service_time(5)), timeout=0.2)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        harness.wait_for(lambda: self.up.stats().calls_cancelled == 1, 5,
                         what="the upstream to count the expired call as cancelled")
        harness.wait_for(lambda: self.up.stats().in_flight == 0, 5, what="in_flight 0")


class StatsTest(IntegrationTestCase):

    def test_counters_match_the_calls_made(self):
        up = self.start_upstream(workers=2)
        stub = self.stub(up.port)
        for _ in range(3):
            stub.Unary(pb.Request(payload=b"u" * 10), timeout=5)
        list(stub.ServerStream(pb.Request(payload=b"s", response_count=4), timeout=5))
        stub.ClientStream(iter([pb.Request(payload=b"c" * 5)] * 7), timeout=5)
        list(stub.Bidi(iter([pb.Request(payload=b"b" * 2)] * 2), timeout=5))
        with self.assertRaises(grpc.RpcError):
            stub.Fail(pb.Request(status_code=5), timeout=5)
        stats = harness.wait_for(lambda: (lambda s: s if s.in_flight == 0 else None)(up.stats()),
                                 5, what="all calls finished")
        self.assertEqual(dict(stats.calls_started), {
            "unary": 3, "server_stream": 1, "client_stream": 1, "bidi": 1, "fail": 1})
        self.assertEqual(stats.calls_finished, 7)
        self.assertEqual(stats.calls_cancelled, 0)
        # 3 unary + 4 streamed + 7 client-streamed + 2 bidi + 1 fail.
        self.assertEqual(stats.messages_processed, 17)
        self.assertEqual(stats.bytes_processed, 30 + 1 + 35 + 4)
        self.assertEqual(stats.workers, 2)

        reset = up.reset_stats()
        self.assertEqual(sum(reset.calls_started.values()), 0)
        self.assertEqual(reset.messages_processed, 0)
        self.assertEqual(reset.max_in_flight, 0)

    def test_sigterm_exits_zero_and_prints_stats_json(self):
        up = self.start_upstream()
        self.stub(up.port).Unary(pb.Request(payload=b"12345"), timeout=5)
        self.assertEqual(up.terminate(), 0)
        final = up.final_stats()
        self.assertEqual(final["calls_started"]["unary"], 1)
        self.assertEqual(final["bytes_processed"], 5)
        self.assertEqual(final["in_flight"], 0)

    def test_sigterm_lets_calls_in_flight_finish(self):
        up = self.start_upstream(shutdown_grace="5s")
        fut = self.stub(up.port).Unary.future(pb.Request(service_time=service_time(0.5)))
        harness.wait_for(lambda: up.stats().in_flight == 1, 5, what="the call to start")
        up.signal(signal.SIGTERM)
        self.assertEqual(len(fut.result(timeout=5).payload), 0)
        self.assertEqual(up.wait(5), 0)


class CapacityTest(IntegrationTestCase):
    """Workers x service time is the upstream's capacity; the excess waits in a FIFO queue."""

    def test_workers_and_delay_bound_throughput(self):
        up = self.start_upstream(workers=4, delay="20ms")
        stub = self.stub(up.port)
        start = time.monotonic()
        calls = [stub.Unary.future(pb.Request(), timeout=10) for _ in range(80)]
        for c in calls:
            c.result()
        elapsed = time.monotonic() - start
        # 80 calls / 4 workers x 20 ms = 0.4 s at best; generous upper bound for a busy machine.
        self.assertGreaterEqual(elapsed, 0.38)
        self.assertLess(elapsed, 2.0)
        stats = up.stats()
        self.assertEqual(stats.messages_processed, 80)
        self.assertGreaterEqual(stats.max_queue_length, 40)
        self.assertLessEqual(stats.max_queue_length, 76)

    def test_one_worker_serves_calls_one_after_another(self):
        up = self.start_upstream(workers=1, delay="25ms")
        stub = self.stub(up.port)
        start = time.monotonic()
        calls = [stub.Unary.future(pb.Request(), timeout=10) for _ in range(12)]
        for c in calls:
            c.result()
        self.assertGreaterEqual(time.monotonic() - start, 12 * 0.025 * 0.95)

    def test_unlimited_workers_do_not_queue(self):
        up = self.start_upstream(delay="50ms")
        stub = self.stub(up.port)
        start = time.monotonic()
        calls = [stub.Unary.future(pb.Request(), timeout=10) for _ in range(40)]
        for c in calls:
            c.result()
        self.assertLess(time.monotonic() - start, 1.0)
        self.assertEqual(up.stats().max_queue_length, 0)

    def test_per_call_service_time_overrides_delay(self):
        up = self.start_upstream(delay="2s")
        start = time.monotonic()
        self.stub(up.port).Unary(pb.Request(service_time=service_time(0.01)), timeout=5)
        self.assertLess(time.monotonic() - start, 1.0)

    def test_cancelled_call_leaves_the_queue_without_using_a_worker(self):
        up = self.start_upstream(workers=1, delay="300ms")
        stub = self.stub(up.port)
        first = stub.Unary.future(pb.Request(), timeout=10)
        harness.wait_for(lambda: up.stats().busy_workers == 1, 5, what="the first call served")
        queued = stub.Unary.future(pb.Request(), timeout=10)
        harness.wait_for(lambda: up.stats().queue_length == 1, 5, what="a queued call")
        queued.cancel()
        harness.wait_for(lambda: up.stats().calls_cancelled == 1, 5, what="the cancellation")
        stats = up.stats()
        self.assertEqual(stats.jobs_dropped, 1)
        self.assertEqual(stats.queue_length, 0)
        first.result()

    def test_cancelled_call_in_service_finishes_at_once_but_keeps_its_worker(self):
        up = self.start_upstream(workers=1, delay="1s")
        call = self.stub(up.port).Unary.future(pb.Request(), timeout=10)
        harness.wait_for(lambda: up.stats().busy_workers == 1, 5, what="the call in service")
        call.cancel()
        stats = harness.wait_for(lambda: (lambda s: s if s.in_flight == 0 else None)(up.stats()),
                                 0.5, what="the cancelled call to finish")
        self.assertEqual(stats.calls_cancelled, 1)
        self.assertEqual(stats.busy_workers, 1)


class ScheduleTest(IntegrationTestCase):

    def unary_seconds(self, stub):
        start = time.monotonic()
        stub.Unary(pb.Request(), timeout=5)
        return time.monotonic() - start

    def test_schedule_changes_the_service_time_from_the_first_request(self):
        up = self.start_upstream(schedule="10ms:800ms,300ms:10s")
        up.stats()  # connects the channel; control calls do not start the schedule
        # Default start is the first request: the upstream's own age does not count.
        time.sleep(1.0)
        self.assertLess(self.unary_seconds(up.stub), 0.2)
        self.assertEqual(up.stats().current_service_time_us, 10_000)
        time.sleep(0.9)
        self.assertGreaterEqual(self.unary_seconds(up.stub), 0.3)
        self.assertEqual(up.stats().current_service_time_us, 300_000)

    def test_schedule_can_start_at_process_start(self):
        up = self.start_upstream(schedule="300ms:500ms,5ms:10s", schedule_start="process")
        up.stats()
        time.sleep(0.7)
        self.assertLess(self.unary_seconds(up.stub), 0.2)

    def test_last_step_holds_after_the_schedule_ends(self):
        up = self.start_upstream(schedule="5ms:100ms,30ms:100ms", schedule_start="process")
        time.sleep(0.4)
        self.assertEqual(up.stats().current_service_time_us, 30_000)

    def test_reset_stats_can_restart_the_schedule(self):
        up = self.start_upstream(schedule="5ms:300ms,300ms:10s")
        up.stats()
        self.unary_seconds(up.stub)
        time.sleep(0.4)
        self.assertGreaterEqual(self.unary_seconds(up.stub), 0.3)
        up.reset_stats(restart_schedule=True)
        self.assertLess(self.unary_seconds(up.stub), 0.2)

    def test_malformed_schedule_is_a_usage_error(self):
        proc = subprocess.run([harness.env_path("TEST_UPSTREAM_BIN"), "--schedule", "10ms"],
                              capture_output=True, timeout=10)
        self.assertEqual(proc.returncode, 2)
        self.assertIn(b"--schedule", proc.stderr)


class ClientStreamPacingTest(IntegrationTestCase):

    def test_client_stream_processes_one_message_at_a_time(self):
        # Four idle workers, yet one stream's messages are served strictly in turn.
        up = self.start_upstream(workers=4, delay="20ms")
        result = self.run_test_client(["--target", up.address, "--method", "client_stream",
                                       "--count", 15, "--size", 64, "--deadline", "10s"])
        self.assertEqual(result["status_name"], "OK")
        self.assertEqual(result["response"]["messages_processed"], 15)
        self.assertGreaterEqual(result["elapsed_ms"], 15 * 20 * 0.95)
        stats = up.stats()
        self.assertEqual(stats.max_queue_length, 0)
        self.assertEqual(stats.messages_processed, 15)

    def test_slow_worker_slows_a_flooding_sender(self):
        # One worker at 10 ms/message against 300 offered messages/s of 16 KiB: with 64 KiB
        # windows (no BDP probing) the sender is held near 100/s by HTTP/2 flow control.
        up = self.start_upstream(workers=1, delay="10ms")
        result = self.run_test_client([
            "--target", up.address, "--method", "client_stream", "--size", 16384,
            "--rate", 300, "--duration", "2s", "--deadline", "20s"])
        self.assertEqual(result["status_name"], "OK")
        self.assertEqual(result["response"]["messages_processed"], result["messages_sent"])
        self.assertLess(result["messages_sent"], 2 * 160)
        self.assertGreater(result["messages_sent"], 2 * 60)


class TestClientTest(IntegrationTestCase):
    """sluice-test-client against the upstream: every method, metadata, sizes, exit codes."""

    def setUp(self):
        super().setUp()
        self.up = self.start_upstream(workers=8, delay="1ms")

    def client(self, *args):
        return self.run_test_client(["--target", self.up.address, *args])

    def test_every_method_completes_with_expected_counts(self):
        r = self.client("--method", "unary", "--size", 10, "--response-size", 20)
        self.assertEqual((r["status_code"], r["bytes_sent"], r["bytes_received"]), (0, 10, 20))
        r = self.client("--method", "server_stream", "--count", 4, "--response-size", 3)
        self.assertEqual((r["status_code"], r["messages_received"], r["bytes_received"]),
                         (0, 4, 12))
        r = self.client("--method", "client_stream", "--count", 5, "--size", 100)
        self.assertEqual(r["status_code"], 0)
        self.assertEqual(r["response"], {"messages_processed": 5, "bytes_processed": 500})
        self.assertEqual(r["send"]["count"], 5)
        r = self.client("--method", "bidi", "--count", 6, "--size", 9)
        self.assertEqual((r["status_code"], r["messages_sent"], r["messages_received"],
                          r["bytes_received"]), (0, 6, 6, 54))
        r = self.client("--method", "fail", "--status-code", 7, "--status-message", "nope")
        self.assertEqual((r["status_code"], r["status_name"], r["status_message"]),
                         (7, "PERMISSION_DENIED", "nope"))
        self.assertEqual(dict(self.up.stats().calls_started), {
            "unary": 1, "server_stream": 1, "client_stream": 1, "bidi": 1, "fail": 1})

    def test_metadata_round_trip_including_bin_values(self):
        blob = base64.b64encode(b"\x00\x01\x02\xff").decode()
        r = self.client("--method", "unary", "--echo-metadata", "--metadata", "x-a=1",
                        "--metadata", f"x-b-bin={blob}", "--trailing", "x-t=v",
                        "--trailing", f"x-t-bin={blob}")
        for md in (r["initial_metadata"], r["trailing_metadata"]):
            self.assertEqual(md["x-a"], ["1"])
            self.assertEqual(md["x-b-bin"], [blob])
        self.assertEqual(r["trailing_metadata"]["x-t"], ["v"])
        self.assertEqual(r["trailing_metadata"]["x-t-bin"], [blob])

    def test_fail_trailing_metadata_is_reported(self):
        r = self.client("--method", "fail", "--status-code", 9, "--status-message", "m",
                        "--trailing", "x-why=because")
        self.assertEqual(r["status_code"], 9)
        self.assertEqual(r["trailing_metadata"]["x-why"], ["because"])

    def test_large_messages_both_ways(self):
        r = self.client("--method", "bidi", "--count", 2, "--size", 4 * MIB + 1)
        self.assertEqual((r["status_code"], r["bytes_received"]), (0, 2 * (4 * MIB + 1)))
        r = self.client("--method", "unary", "--response-size", 6 * MIB)
        self.assertEqual((r["status_code"], r["bytes_received"]), (0, 6 * MIB))

    def test_deadline_and_cancel_after(self):
        r = self.client("--method", "unary", "--service-time", "3s", "--deadline", "200ms")
        self.assertEqual(r["status_name"], "DEADLINE_EXCEEDED")
        self.assertLess(r["elapsed_ms"], 2000)
        r = self.client("--method", "unary", "--service-time", "3s", "--cancel-after", "100ms")
        self.assertEqual(r["status_name"], "CANCELLED")
        harness.wait_for(lambda: self.up.stats().calls_cancelled == 2, 5,
                         what="both calls counted as cancelled")

    def test_paced_sends_follow_the_offered_rate(self):
        r = self.client("--method", "client_stream", "--count", 21, "--rate", 50)
        self.assertEqual(r["messages_sent"], 21)
        # 20 intervals of 20 ms: about 400 ms from first to last write.
        self.assertGreater(r["send"]["last_ms"] - r["send"]["first_ms"], 360)
        self.assertLess(r["send"]["achieved_rate"], 56)

    def test_expect_status_mismatch_exits_3_and_usage_errors_exit_2(self):
        client = harness.env_path("TEST_CLIENT_BIN")
        ok = subprocess.run([client, "--target", self.up.address, "--expect-status", "0"],
                            capture_output=True, timeout=10)
        self.assertEqual(ok.returncode, 0)
        bad = subprocess.run([client, "--target", self.up.address, "--method", "fail",
                              "--status-code", "5", "--expect-status", "0"],
                             capture_output=True, timeout=10)
        self.assertEqual(bad.returncode, 3)
        for argv in (["--method", "unary"], ["--target", "x:1", "--method", "nope"],
                     ["--target", "x:1", "--deadline", "soon"],
                     ["--target", "x:1", "--metadata", "novalue"],
                     ["--target", "x:1", "--metadata", "k-bin=!!!"]):
            proc = subprocess.run([client, *argv], capture_output=True, timeout=10)
            self.assertEqual(proc.returncode, 2, argv)

    def test_unreachable_target_is_unavailable(self):
        r = self.run_test_client(["--target", f"127.0.0.1:{harness.closed_port()}"])
        self.assertEqual(r["status_name"], "UNAVAILABLE")
        self.assertLess(r["elapsed_ms"], 1000)


if __name__ == "__main__":
    unittest.main()
