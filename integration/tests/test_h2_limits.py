"""Slow and greedy HTTP/2 peers against the real sluice binary (issue 6, "HTTP/2 abuse"): streams
beyond max_concurrent_streams, clients that never open their window or never read
(stream_write_timeout), half a preface, request headers that never end, idle connections (and a
frame dribbled byte by byte), the connection cap, max_connection_age, and running out of file
descriptors. Each asserts the reset or close that comes back and, where it applies, that a
well-behaved gRPC client on another connection keeps being served.

Limits are set small (hardening_support.FAST_LIMITS) so every timeout fires within a second or
two."""

import os
import socket
import subprocess
import time

import harness
import sluice_test_pb2 as pb
from hardening_support import AbuseTestCase, attack_body, attack_headers
import raw_h2
from raw_h2 import HEADERS, ConnectionClosed, frame

MAX_STREAM_ID = 2**31 - 1


class StreamLimitTest(AbuseTestCase):

    def test_streams_beyond_max_concurrent_streams_are_refused(self):
        up, proxy = self.start_pair(http2={"max_concurrent_streams": 4},
                                    upstream_flags={"delay": "300ms"})
        good = self.good_client(proxy)
        calls_before = self.attacker_calls(up)
        c = self.connect(proxy)
        settings = c.handshake()
        self.assertEqual(settings[raw_h2.SETTINGS_MAX_CONCURRENT_STREAMS], 4)
        for sid in (1, 3, 5, 7, 9):
            c.request(sid, attack_headers(), body=attack_body())
        c.read_until(lambda f: all(c.stream_ended(s) for s in (1, 3, 5, 7)))
        self.assertEqual(c.resets(), {9: raw_h2.REFUSED_STREAM})
        for sid in (1, 3, 5, 7):
            self.assertEqual(c.response_headers(sid)[-1].get("grpc-status"), "0")
        self.assertIsNone(c.last_goaway())
        self.assert_good_client_served(good)
        self.assertEqual(self.attacker_calls(up) - calls_before, 4)

    def test_a_client_queueing_for_a_stream_slot_is_counted(self):
        # A compliant gRPC client never exceeds max_concurrent_streams: it queues the calls
        # beyond it itself, out of any filter's sight. sluice counts the streams that took a
        # connection's last slot, so an operator can tell the limit is hiding part of the queue.
        up, proxy = self.start_pair(http2={"max_concurrent_streams": 2},
                                    upstream_flags={"delay": "200ms"})
        stub = self.stub(proxy.port)
        stub.Unary(pb.Request(response_size=16), timeout=5)  # connected, one slot at a time
        self.assertEqual(self.listener_stat(proxy, "downstream_cx_streams_full_total"), 0)
        started = time.monotonic()
        calls = [stub.Unary.future(pb.Request(response_size=16), timeout=10) for _ in range(6)]
        for call in calls:
            call.result()  # every call served: none refused, none failed
        elapsed = time.monotonic() - started
        # Six 200 ms calls two at a time take three rounds: the client waited for slots.
        self.assertGreaterEqual(elapsed, 0.55)
        full = self.listener_stat(proxy, "downstream_cx_streams_full_total")
        self.assertGreaterEqual(full, 3)  # each round's second stream took the last slot
        self.assertLessEqual(full, 6)
        self.assertEqual(self.listener_stat(proxy, "downstream_rq_completed_total"), 7)


class SlowReaderTest(AbuseTestCase):

    def test_client_that_never_opens_its_window_is_reset_after_stream_write_timeout(self):
        up, proxy = self.start_pair(limits={"stream_write_timeout": "1s"})
        good = self.good_client(proxy)
        rss = proxy.rss_bytes()
        c = self.connect(proxy)
        c.handshake(settings={raw_h2.SETTINGS_INITIAL_WINDOW_SIZE: 0})
        c.request(1, attack_headers(), body=attack_body(response_count=5000, response_size=1000))
        start = time.monotonic()
        c.read_until(lambda f: 1 in c.resets(), timeout=5)
        waited = time.monotonic() - start
        self.assertEqual(c.resets(), {1: raw_h2.CANCEL})
        self.assertGreaterEqual(waited, 0.9, "reset before stream_write_timeout")
        self.assertEqual(c.data.get(1, b""), b"", "DATA sent into a closed window")
        self.assert_upstream_idle(up)
        stats = up.stats()
        # Read pacing: sluice stopped reading the upstream once one window was buffered.
        self.assertLess(stats.messages_processed - stats.calls_started["unary"], 500, stats)
        self.assertEqual(stats.calls_cancelled, 1)
        self.assertEqual(self.listener_stat(proxy, "downstream_rq_write_timeout_total"), 1)
        self.assert_good_client_served(good)
        self.assert_rss_bounded(proxy, rss)

    def test_client_that_never_reads_is_closed_after_stream_write_timeout(self):
        up, proxy = self.start_pair(limits={"stream_write_timeout": "1s"})
        good = self.good_client(proxy)
        rss = proxy.rss_bytes()
        client = self.non_reading_client(proxy, response_count=2000)
        # Never read: sluice's socket fills, its write stays pending, then it closes.
        self.wait_listener_stat(proxy, "downstream_cx_write_timeout_total", timeout=10)
        self.assert_upstream_idle(up)
        stats = up.stats()
        self.assertLess(stats.messages_processed - stats.calls_started["unary"], 2000,
                        "sluice kept reading the upstream")
        self.assert_good_client_served(good)
        self.assert_rss_bounded(proxy, rss)
        client.close()  # held open (unread) until here


class SlowConnectionTest(AbuseTestCase):

    def test_half_a_preface_is_closed_after_handshake_timeout(self):
        up, proxy = self.start_pair(limits={"handshake_timeout": "500ms"})
        good = self.good_client(proxy)
        c = self.connect(proxy)
        silent = self.connect(proxy)
        start = time.monotonic()
        c.send(raw_h2.PREFACE[:10])
        c.wait_closed(5)
        silent.wait_closed(5)
        self.assertLess(time.monotonic() - start, 3)
        self.assertEqual(self.listener_stat(proxy, "downstream_cx_handshake_timeout_total"), 2)
        self.assert_good_client_served(good)

    def test_request_headers_that_never_end_are_closed_after_request_headers_timeout(self):
        up, proxy = self.start_pair(limits={"request_headers_timeout": "500ms"})
        good = self.good_client(proxy)
        c = self.connect(proxy)
        c.handshake()
        c.send(frame(HEADERS, 0, 1, c.encode(attack_headers())))  # no END_HEADERS
        start = time.monotonic()
        self.assert_goaway(c, raw_h2.PROTOCOL_ERROR)
        self.assertGreaterEqual(time.monotonic() - start, 0.4)
        self.assertEqual(self.listener_stat(proxy, "downstream_cx_headers_timeout_total"), 1)
        self.assertEqual(self.attacker_calls(up), 0)
        self.assert_good_client_served(good)

    def test_idle_connection_gets_goaway_after_idle_timeout(self):
        up, proxy = self.start_pair(limits={"idle_timeout": "1s"})
        good = self.good_client(proxy)  # busy, so never idle
        c = self.connect(proxy)
        c.handshake()
        c.request(1, attack_headers(), body=attack_body())
        c.read_until(lambda f: c.stream_ended(1))
        start = time.monotonic()
        g = self.assert_goaway(c, raw_h2.NO_ERROR, timeout=5)
        self.assertEqual(g.last_stream_id, 1)
        self.assertGreaterEqual(time.monotonic() - start, 0.9)
        self.assertEqual(self.listener_stat(proxy, "downstream_cx_idle_timeout_total"), 1)
        self.assert_good_client_served(good)

    def test_a_frame_dribbled_byte_by_byte_does_not_hold_an_idle_connection(self):
        up, proxy = self.start_pair(limits={"idle_timeout": "1s"})
        good = self.good_client(proxy)
        c = self.connect(proxy)
        c.handshake()
        # Activity is a complete frame: bytes of one that never completes do not count.
        dribble = frame(0xFA, 0, 0, b"e" * 200)  # an extension frame (ignored when complete)
        start = time.monotonic()
        try:
            for b in dribble:
                c.send(bytes([b]))
                time.sleep(0.05)
                if time.monotonic() - start > 5:
                    break
        except ConnectionClosed:
            pass
        c.wait_closed(3)
        self.assertLess(time.monotonic() - start, 4)
        self.assertEqual(self.listener_stat(proxy, "downstream_cx_idle_timeout_total"), 1)
        self.assert_good_client_served(good)

    def test_connections_beyond_max_connections_are_closed_at_once(self):
        up, proxy = self.start_pair(limits={"max_connections": 3})
        good = self.good_client(proxy)  # connection 1
        a, b = self.connect(proxy), self.connect(proxy)
        a.handshake()
        b.handshake()
        extra = self.connect(proxy)
        self.assertTrue(extra.read_all(2), "a connection beyond the cap was kept")
        self.assertEqual(extra.frames, [], "the refused connection got HTTP/2 frames")
        self.assertEqual(self.listener_stat(proxy, "downstream_cx_refused_total"), 1)
        a.close()
        harness.wait_for(lambda: self.listener_stat(proxy, "downstream_cx_active") == 2, 5,
                         what="the closed connection to be counted out")
        again = self.connect(proxy)
        again.handshake()
        self.assert_connection_usable(again, 1)
        self.assert_good_client_served(good)

    def test_max_connection_age_drains_with_two_goaways(self):
        up, proxy = self.start_pair(limits={"max_connection_age": "1s"})
        c = self.connect(proxy)
        c.handshake()
        c.request(1, attack_headers(), body=attack_body())
        c.read_until(lambda f: c.stream_ended(1))
        c.wait_closed(5)
        goaways = [(g.last_stream_id, g.error_code) for g in c.goaways()]
        self.assertEqual(goaways, [(MAX_STREAM_ID, raw_h2.NO_ERROR), (1, raw_h2.NO_ERROR)])
        self.assertEqual(self.listener_stat(proxy, "downstream_cx_max_age_total"), 1)


class AcceptErrorTest(AbuseTestCase):

    @staticmethod
    def cpu_seconds(pid):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def test_out_of_descriptors_pauses_accepting_and_recovers(self):
        up, proxy = self.start_pair()
        first = self.connect(proxy)
        first.handshake()
        self.assert_connection_usable(first, 1)  # the upstream connection is open too
        fds = len(os.listdir(f"/proc/{proxy.pid}/fd"))
        subprocess.run(["prlimit", f"--pid={proxy.pid}", f"--nofile={fds + 3}"], check=True)
        held = [socket.create_connection(("127.0.0.1", proxy.port)) for _ in range(10)]
        time.sleep(0.3)  # three are accepted, the others wait in the backlog: accept fails
        before = self.cpu_seconds(proxy.pid)
        time.sleep(1.0)
        used = self.cpu_seconds(proxy.pid) - before
        self.assertLess(used, 0.2, f"sluice used {used:.2f} s of CPU in 1 s: accept spins")
        self.assertTrue(proxy.alive())
        for s in held:
            s.close()
        # Every backlogged connection is accepted (and closes) as descriptors free up; a new
        # client is then served.
        again = self.connect(proxy, timeout=10)
        again.handshake()
        self.assert_connection_usable(again, 1)
        self.assert_connection_usable(first, 3)
        errors = self.listener_stat(proxy, "downstream_cx_accept_error_total")
        self.assertGreaterEqual(errors, 1)
        self.assertLess(errors, 40, "accept retried without pausing")
        self.assertIn("pausing accepts", proxy.stderr())


if __name__ == "__main__":
    import unittest

    unittest.main()
