"""HTTP/2 abuse against the real sluice binary (issue 6, "HTTP/2 abuse"): raw frames from
raw_h2.py, one test per attack. Each asserts the frame or close that comes back, that a
well-behaved gRPC client on another connection keeps being served meanwhile, that sluice's RSS
stays bounded, and that the upstream did no work for the streams the attack reset. Also RFC 9113
error handling (connection and stream errors) and what a generic HTTP/2 probe of `/` gets.

Limits are set small (hardening_support.FAST_LIMITS) so the module runs in well under 2 min."""

import os
import socket
import struct
import subprocess
import time

from hyperframe.frame import PingFrame

import harness
from hardening_support import HardeningTestCase, listener_config
import raw_h2
from raw_h2 import (CONTINUATION, DATA, END_HEADERS, END_STREAM, HEADERS, PING, PRIORITY,
                    PUSH_PROMISE, RST_STREAM, SETTINGS, WINDOW_UPDATE, ConnectionClosed, RawH2,
                    frame, grpc_message, grpc_request_headers, settings_payload)
import sluice_test_pb2 as pb

MAX_STREAM_ID = 2**31 - 1
# The attacking connections call ServerStream; the well-behaved client (GoodClient) calls Unary,
# so the upstream's per-method counters tell the two apart.
ATTACK_PATH = "/sluice.test.TestService/ServerStream"


def attack_headers(extra=()):
    return grpc_request_headers(path=ATTACK_PATH, extra=extra)


def attack_body(**fields):
    """A ServerStream request; one response message unless told otherwise."""
    fields.setdefault("response_count", 1)
    return grpc_message(pb.Request(**fields).SerializeToString())


class AbuseTestCase(HardeningTestCase):

    def attacker_calls(self, up):
        return up.stats().calls_started["server_stream"]

    def connect(self, proxy, **kw):
        c = RawH2(proxy.port, **kw)
        self.addCleanup(c.close)
        return c

    def assert_goaway(self, conn, code, timeout=5):
        """Reads until sluice closes the connection; its last GOAWAY carries `code`."""
        conn.wait_closed(timeout)
        g = conn.last_goaway()
        self.assertIsNotNone(g, f"no GOAWAY before the close; frames: {conn.describe()}")
        self.assertEqual(raw_h2.ERROR_NAMES[g.error_code], raw_h2.ERROR_NAMES[code],
                         f"frames: {conn.describe()}")
        return g

    def assert_connection_usable(self, conn, stream_id):
        """A complete gRPC call on `conn` still succeeds (the connection was kept)."""
        conn.request(stream_id, attack_headers(), body=attack_body(response_size=8))
        conn.read_until(lambda f: conn.stream_ended(stream_id))
        trailers = conn.response_headers(stream_id)[-1]
        self.assertEqual(trailers.get("grpc-status"), "0", conn.response_headers(stream_id))
        self.assertIsNone(conn.last_goaway())

    def non_reading_client(self, proxy, response_count):
        """A client with a tiny receive buffer and huge HTTP/2 windows that asks, on stream 1,
        for `response_count` responses of 64 KiB and then never reads them."""
        c = self.connect(proxy, rcvbuf=4096)
        c.handshake(settings={raw_h2.SETTINGS_INITIAL_WINDOW_SIZE: 2**31 - 1},
                    connection_window=2**31 - 1 - 65535)
        c.request(1, attack_headers(),
                  body=attack_body(response_count=response_count, response_size=64 * 1024))
        return c

    def flood_without_reading(self, conn, chunk, seconds=15):
        """Writes `chunk` again and again, never reading, until sluice closes the connection
        (a write fails). Fails the test if the connection is still open after `seconds`."""
        deadline = time.monotonic() + seconds
        conn.sock.settimeout(seconds)
        while time.monotonic() < deadline:
            try:
                conn.sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                return
            except TimeoutError:
                break  # sluice stopped reading but kept the connection
        self.fail(f"sluice kept a flooding connection open for {seconds}s")


class RapidResetTest(AbuseTestCase):

    def test_rapid_reset_is_closed_by_the_premature_reset_rule_with_no_upstream_work(self):
        up, proxy = self.start_pair(limits={"premature_reset_limit": 20},
                                    upstream_flags={"delay": "50ms"})
        good = self.good_client(proxy)
        rss = proxy.rss_bytes()
        calls_before = self.attacker_calls(up)
        c = self.connect(proxy)
        c.handshake()
        burst = bytearray()
        for i in range(200):
            sid = 2 * i + 1
            burst += frame(HEADERS, END_HEADERS | END_STREAM, sid,
                           c.encode(attack_headers()))
            burst += frame(RST_STREAM, 0, sid, struct.pack(">L", raw_h2.CANCEL))
        c.send(bytes(burst))
        g = self.assert_goaway(c, raw_h2.ENHANCE_YOUR_CALM)
        self.assertLess(g.last_stream_id, 399, "the GOAWAY names the last stream processed")
        self.assertEqual(self.listener_stat(proxy, "downstream_cx_premature_reset_total"), 1)
        self.assert_upstream_idle(up)
        self.assertLessEqual(self.attacker_calls(up) - calls_before, 20)
        self.assert_good_client_served(good)
        self.assert_rss_bounded(proxy, rss)

    def test_rapid_reset_beyond_nghttp2s_reset_rate_limit_gets_goaway(self):
        # The premature-reset rule switched off (ratio 1: never more than all streams), so
        # nghttp2's own limit (Debian backport: 1000 resets burst, then 33/s) must act.
        up, proxy = self.start_pair(limits={"premature_reset_ratio": 1.0})
        good = self.good_client(proxy)
        rss = proxy.rss_bytes()
        c = self.connect(proxy)
        c.handshake()
        pairs = bytearray()
        for i in range(1200):
            sid = 2 * i + 1
            pairs += frame(HEADERS, END_HEADERS | END_STREAM, sid, c.encode(attack_headers()))
            pairs += frame(RST_STREAM, 0, sid, struct.pack(">L", raw_h2.CANCEL))
        try:
            c.send(bytes(pairs))
        except ConnectionClosed:
            pass
        g = self.assert_goaway(c, raw_h2.INTERNAL_ERROR)
        self.assertLessEqual(g.last_stream_id, 2 * 1200)
        self.assert_upstream_idle(up)
        self.assert_good_client_served(good)
        self.assert_rss_bounded(proxy, rss)


class HeaderAbuseTest(AbuseTestCase):

    def test_continuation_flood_is_closed_with_enhance_your_calm(self):
        up, proxy = self.start_pair()
        good = self.good_client(proxy)
        rss = proxy.rss_bytes()
        c = self.connect(proxy)
        c.handshake()
        enc = c.encoder
        first = enc.encode(attack_headers())
        more = b"".join(enc.encode([(f"x-pad-{i}", "v" * 100)]) for i in range(20))
        # HEADERS without END_HEADERS, then more CONTINUATIONs than nghttp2 allows (8).
        data = frame(HEADERS, END_STREAM, 1, first)
        for i in range(20):
            data += frame(CONTINUATION, 0, 1, more[i * 10:(i + 1) * 10] or b"\x00")
        try:
            c.send(data)
        except ConnectionClosed:
            pass
        self.assert_goaway(c, raw_h2.ENHANCE_YOUR_CALM)
        self.assertEqual(self.attacker_calls(up), 0)
        self.assert_good_client_served(good)
        self.assert_rss_bounded(proxy, rss)

    def test_oversized_header_list_is_answered_and_the_connection_kept(self):
        up, proxy = self.start_pair(http2={"max_header_list_size": "4KiB"})
        good = self.good_client(proxy)
        calls_before = self.attacker_calls(up)
        c = self.connect(proxy)
        settings = c.handshake()
        self.assertEqual(settings[raw_h2.SETTINGS_MAX_HEADER_LIST_SIZE], 4096)
        # 12 KiB of headers over HEADERS + 2 CONTINUATIONs: legal framing, too large a list.
        block = c.encode(attack_headers(extra=[(f"x-big-{i}", "b" * 1000) for i in range(12)]))
        third = len(block) // 3
        c.send(frame(HEADERS, 0, 1, block[:third]) +
               frame(CONTINUATION, 0, 1, block[third:2 * third]) +
               frame(CONTINUATION, END_HEADERS, 1, block[2 * third:]))
        c.send(frame(DATA, END_STREAM, 1, attack_body()))
        c.read_until(lambda f: c.stream_ended(1) or 1 in c.resets())
        reply = c.response_headers(1)[0]
        self.assertEqual(reply.get("grpc-status"), "8", reply)  # RESOURCE_EXHAUSTED
        self.assertIn("header list too large", reply.get("grpc-message", ""))
        self.assert_connection_usable(c, 3)
        self.assertEqual(self.attacker_calls(up) - calls_before, 1)
        self.assertGreaterEqual(
            self.listener_stat(proxy, "downstream_rq_headers_too_large_total"), 1)
        self.assert_good_client_served(good)

    def test_too_many_header_fields_are_answered_and_the_connection_kept(self):
        up, proxy = self.start_pair(http2={"max_headers_count": 20})
        good = self.good_client(proxy)
        rss = proxy.rss_bytes()
        c = self.connect(proxy)
        c.handshake()
        c.request(1, attack_headers(extra=[(f"x-h{i}", "v") for i in range(30)]),
                  body=attack_body())
        c.read_until(lambda f: c.stream_ended(1) or 1 in c.resets())
        self.assertEqual(c.response_headers(1)[0].get("grpc-status"), "8")
        self.assert_connection_usable(c, 3)
        self.assertEqual(self.attacker_calls(up), 1)
        self.assert_good_client_served(good)
        self.assert_rss_bounded(proxy, rss)


class ControlFrameFloodTest(AbuseTestCase):

    def flood_test(self, frame_bytes):
        up, proxy = self.start_pair()
        good = self.good_client(proxy)
        rss = proxy.rss_bytes()
        c = self.connect(proxy, rcvbuf=4096)
        c.handshake()
        self.flood_without_reading(c, frame_bytes * 2000)
        self.wait_listener_stat(proxy, "downstream_cx_protocol_error_total")
        self.assert_good_client_served(good)
        self.assert_rss_bounded(proxy, rss)
        self.assertEqual(self.attacker_calls(up), 0)

    def test_settings_flood_from_a_client_that_does_not_read_is_closed(self):
        self.flood_test(frame(SETTINGS, 0, 0, settings_payload({0x4: 65535})))

    def test_ping_flood_from_a_client_that_does_not_read_is_closed(self):
        self.flood_test(frame(PING, 0, 0, b"12345678"))

    def test_refused_stream_flood_from_a_client_that_does_not_read_is_closed(self):
        # CVE-2019-9514: every stream beyond max_concurrent_streams makes sluice queue a
        # RST_STREAM(REFUSED_STREAM). nghttp2 does not bound that queue; sluice closes a
        # connection once 10000 frames wait for a client that does not read.
        up, proxy = self.start_pair(http2={"max_concurrent_streams": 1},
                                    limits={"premature_reset_ratio": 1.0,
                                            "stream_write_timeout": "20s"})
        good = self.good_client(proxy)
        rss = proxy.rss_bytes()
        # The only stream slot: a big response that fills every socket buffer on the way, as
        # the client never reads.
        c = self.non_reading_client(proxy, response_count=1000)
        time.sleep(0.5)
        block = c.encode(attack_headers())  # fully indexed now: the same bytes every time
        sid = 3
        closed = False
        deadline = time.monotonic() + 15
        c.sock.settimeout(5)
        while not closed and time.monotonic() < deadline:
            burst = b"".join(frame(HEADERS, END_HEADERS | END_STREAM, sid + 2 * i, block)
                             for i in range(1000))
            sid += 2000
            try:
                c.sock.sendall(burst)
            except (BrokenPipeError, ConnectionResetError):
                closed = True
            except TimeoutError:
                break  # sluice stopped reading without closing
        self.assertTrue(closed, "sluice kept the flooding connection open")
        self.assertEqual(self.listener_stat(proxy, "downstream_cx_write_timeout_total"), 0)
        self.wait_listener_stat(proxy, "downstream_cx_protocol_error_total")
        self.assert_good_client_served(good)
        self.assert_rss_bounded(proxy, rss)
        self.assert_upstream_idle(up, timeout=10)
        self.assertEqual(self.attacker_calls(up), 1)  # none of the refused streams

    def test_streams_beyond_the_limit_again_and_again_trip_the_premature_reset_rule(self):
        # A client that reads: each refused stream is a stream the client "reset" before a
        # response, so the premature-reset rule ends the reset loop.
        up, proxy = self.start_pair(http2={"max_concurrent_streams": 1},
                                    limits={"premature_reset_limit": 20})
        good = self.good_client(proxy)
        c = self.connect(proxy)
        c.handshake()
        c.request(1, attack_headers(), body=attack_body(service_time=harness.service_time(20)))
        block = c.encode(attack_headers())
        c.send(b"".join(frame(HEADERS, END_HEADERS | END_STREAM, 3 + 2 * i, block)
                        for i in range(100)))
        g = self.assert_goaway(c, raw_h2.ENHANCE_YOUR_CALM)
        # About premature_reset_limit refused streams were processed, not all 100. (Their
        # RST_STREAMs may not go out: the GOAWAY ends the session first.)
        self.assertLess(g.last_stream_id, 3 + 2 * 30)
        self.assertTrue(all(code == raw_h2.REFUSED_STREAM for code in c.resets().values()))
        self.assertEqual(self.listener_stat(proxy, "downstream_cx_premature_reset_total"), 1)
        # Stream 1 may or may not have reached the upstream before the close; no refused one.
        self.assertLessEqual(self.attacker_calls(up), 1)
        self.assert_upstream_idle(up)
        self.assert_good_client_served(good)


class EmptyFrameTest(AbuseTestCase):

    def test_empty_data_frames_in_a_row_close_the_connection(self):
        up, proxy = self.start_pair()
        good = self.good_client(proxy)
        rss = proxy.rss_bytes()
        c = self.connect(proxy)
        c.handshake()
        c.send(frame(HEADERS, END_HEADERS, 1, c.encode(attack_headers())) +
               frame(DATA, 0, 1) + frame(DATA, 0, 1) + frame(DATA, 0, 1))
        self.assert_goaway(c, raw_h2.ENHANCE_YOUR_CALM)
        self.assert_upstream_idle(up)
        self.assertLessEqual(self.attacker_calls(up), 1)  # if TCP split the burst
        self.assert_good_client_served(good)
        self.assert_rss_bounded(proxy, rss)

    def test_empty_headers_and_continuation_frames_close_the_connection(self):
        up, proxy = self.start_pair()
        good = self.good_client(proxy)
        c = self.connect(proxy)
        c.handshake()
        c.send(frame(HEADERS, 0, 1) + frame(CONTINUATION, 0, 1) + frame(CONTINUATION, 0, 1))
        self.assert_goaway(c, raw_h2.ENHANCE_YOUR_CALM)
        self.assertEqual(self.attacker_calls(up), 0)
        self.assert_good_client_served(good)

    def test_one_empty_data_frame_and_an_empty_end_stream_are_fine(self):
        up, proxy = self.start_pair()
        c = self.connect(proxy)
        c.handshake()
        c.send_headers(1, attack_headers(), end_stream=False)
        c.send(frame(DATA, 0, 1) + frame(DATA, 0, 1, attack_body()) + frame(DATA, 0, 1) +
               frame(DATA, END_STREAM, 1))
        c.read_until(lambda f: c.stream_ended(1))
        self.assertEqual(c.response_headers(1)[-1].get("grpc-status"), "0")
        self.assertIsNone(c.last_goaway())


class WindowUpdateAndPriorityFloodTest(AbuseTestCase):

    def test_window_update_flood_is_closed_with_enhance_your_calm(self):
        up, proxy = self.start_pair()
        good = self.good_client(proxy)
        rss = proxy.rss_bytes()
        c = self.connect(proxy)
        c.handshake()
        c.send(frame(WINDOW_UPDATE, 0, 0, struct.pack(">L", 1)) * 200)
        self.assert_goaway(c, raw_h2.ENHANCE_YOUR_CALM)
        self.assert_good_client_served(good)
        self.assert_rss_bounded(proxy, rss)
        self.assertEqual(self.attacker_calls(up), 0)

    def test_window_updates_acknowledging_data_are_fine(self):
        up, proxy = self.start_pair()
        c = self.connect(proxy)
        c.handshake()
        # A server stream of 50 x 4 KiB: the client returns credit for every DATA frame, on
        # the stream and on the connection, as a chatty but honest client would.
        c.request(1, attack_headers(), body=attack_body(response_count=50, response_size=4096))
        while not c.stream_ended(1):
            f = c.read_frame()
            if f.type == DATA and f.flow_controlled_length:
                c.window_update(0, f.flow_controlled_length)
                c.window_update(1, f.flow_controlled_length)
        self.assertEqual(c.response_headers(1)[-1].get("grpc-status"), "0")
        self.assertIsNone(c.last_goaway())

    def test_priority_flood_is_closed_and_no_rfc7540_priorities_is_advertised(self):
        up, proxy = self.start_pair()
        good = self.good_client(proxy)
        rss = proxy.rss_bytes()
        c = self.connect(proxy)
        settings = c.handshake()
        self.assertEqual(settings.get(raw_h2.SETTINGS_NO_RFC7540_PRIORITIES), 1, settings)
        prio = b"".join(frame(PRIORITY, 0, 2 * i + 1, struct.pack(">LB", 0, 15))
                        for i in range(300))
        c.send(prio)
        self.assert_goaway(c, raw_h2.ENHANCE_YOUR_CALM)
        self.assert_good_client_served(good)
        self.assert_rss_bounded(proxy, rss)
        self.assertEqual(self.attacker_calls(up), 0)


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


class Rfc9113ErrorHandlingTest(AbuseTestCase):
    """Malformed frames and invalid stream states get the error RFC 9113 names."""

    CONNECTION_ERRORS = [
        # (what, bytes after the handshake, GOAWAY code, RFC section)
        ("DATA on stream 0", frame(DATA, 0, 0, b"x"), raw_h2.PROTOCOL_ERROR, "6.1"),
        ("HEADERS on an even (server) stream id", None, raw_h2.PROTOCOL_ERROR, "5.1.1"),
        ("SETTINGS length not a multiple of 6", frame(SETTINGS, 0, 0, b"\0" * 5),
         raw_h2.FRAME_SIZE_ERROR, "6.5"),
        ("SETTINGS ACK with a payload", frame(SETTINGS, 1, 0, b"\0" * 6),
         raw_h2.FRAME_SIZE_ERROR, "6.5"),
        ("SETTINGS on a stream", frame(SETTINGS, 0, 1), raw_h2.PROTOCOL_ERROR, "6.5"),
        ("SETTINGS_ENABLE_PUSH = 2", frame(SETTINGS, 0, 0, settings_payload({0x2: 2})),
         raw_h2.PROTOCOL_ERROR, "6.5.2"),
        ("SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
         frame(SETTINGS, 0, 0, settings_payload({0x4: 2**31})), raw_h2.FLOW_CONTROL_ERROR,
         "6.5.2"),
        ("SETTINGS_MAX_FRAME_SIZE below 16384",
         frame(SETTINGS, 0, 0, settings_payload({0x5: 100})), raw_h2.PROTOCOL_ERROR, "6.5.2"),
        ("PING of 7 bytes", frame(PING, 0, 0, b"\0" * 7), raw_h2.FRAME_SIZE_ERROR, "6.7"),
        ("PING on a stream", frame(PING, 0, 1, b"\0" * 8), raw_h2.PROTOCOL_ERROR, "6.7"),
        ("WINDOW_UPDATE of 0 on the connection", frame(WINDOW_UPDATE, 0, 0, b"\0" * 4),
         raw_h2.PROTOCOL_ERROR, "6.9"),
        ("connection window above 2^31-1",
         frame(WINDOW_UPDATE, 0, 0, struct.pack(">L", 2**31 - 1)), raw_h2.FLOW_CONTROL_ERROR,
         "6.9.1"),
        ("RST_STREAM on an idle stream", frame(RST_STREAM, 0, 5, b"\0\0\0\x08"),
         raw_h2.PROTOCOL_ERROR, "5.1"),
        ("RST_STREAM on stream 0", frame(RST_STREAM, 0, 0, b"\0\0\0\x08"),
         raw_h2.PROTOCOL_ERROR, "6.4"),
        ("DATA on an idle stream", frame(DATA, 0, 5, b"x"), raw_h2.PROTOCOL_ERROR, "5.1"),
        ("a frame larger than SETTINGS_MAX_FRAME_SIZE", None, raw_h2.FRAME_SIZE_ERROR, "4.2"),
        ("CONTINUATION without HEADERS", frame(CONTINUATION, END_HEADERS, 1, b"\x82"),
         raw_h2.PROTOCOL_ERROR, "6.10"),
        ("another frame inside a header block", None, raw_h2.PROTOCOL_ERROR, "6.10"),
        ("PUSH_PROMISE from a client", frame(PUSH_PROMISE, END_HEADERS, 1, b"\0\0\0\x02\x82"),
         raw_h2.PROTOCOL_ERROR, "8.4"),
        ("an undecodable HPACK block", frame(HEADERS, END_HEADERS | END_STREAM, 1, b"\xff\xff"),
         raw_h2.COMPRESSION_ERROR, "4.3"),
        # RFC 9113 names stream errors for these two; nghttp2 escalates them to connection
        # errors, which 5.4.1 allows ("an endpoint MAY treat a stream error as a connection
        # error"): only the misbehaving client's connection is lost.
        ("WINDOW_UPDATE of 0 on a stream", None, raw_h2.PROTOCOL_ERROR, "6.9"),
        ("DATA after END_STREAM (half-closed remote)", None, raw_h2.STREAM_CLOSED, "5.1"),
        ("bytes that are not a preface", None, raw_h2.PROTOCOL_ERROR, "3.4"),
    ]

    def special(self, c, what):
        hdr = c.encode(attack_headers())
        if what == "HEADERS on an even (server) stream id":
            return frame(HEADERS, END_HEADERS | END_STREAM, 2, hdr)
        if what == "a frame larger than SETTINGS_MAX_FRAME_SIZE":
            return frame(HEADERS, END_HEADERS, 1, hdr) + frame(DATA, 0, 1, b"x" * 16385)
        if what == "another frame inside a header block":
            return frame(HEADERS, 0, 1, hdr) + frame(PING, 0, 0, b"\0" * 8)
        if what == "WINDOW_UPDATE of 0 on a stream":
            return frame(HEADERS, END_HEADERS, 1, hdr) + frame(WINDOW_UPDATE, 0, 1, b"\0" * 4)
        if what == "DATA after END_STREAM (half-closed remote)":
            return (frame(HEADERS, END_HEADERS, 1, hdr) + frame(DATA, END_STREAM, 1, attack_body())
                    + frame(DATA, 0, 1, b"late"))
        raise AssertionError(what)

    def test_connection_errors_get_goaway_with_the_rfc_error_code(self):
        up, proxy = self.start_pair()
        good = self.good_client(proxy)
        rss = proxy.rss_bytes()
        for what, data, code, section in self.CONNECTION_ERRORS:
            with self.subTest(what, rfc=section):
                c = RawH2(proxy.port)
                try:
                    if what == "bytes that are not a preface":
                        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                    else:
                        c.handshake()
                        c.send(data if data is not None else self.special(c, what))
                    self.assert_goaway(c, code)
                finally:
                    c.close()
        self.assert_upstream_idle(up)
        self.assert_good_client_served(good)
        self.assert_rss_bounded(proxy, rss)

    STREAM_ERRORS = [
        # (what, request headers, extra frames on stream 1, RST_STREAM code, RFC section)
        ("an upper-case header name", attack_headers(extra=[("X-Upper", "v")]), b"",
         raw_h2.PROTOCOL_ERROR, "8.2.1"),
        ("a missing :path", [h for h in attack_headers() if h[0] != ":path"], b"",
         raw_h2.PROTOCOL_ERROR, "8.3.1"),
        ("a connection-specific header", attack_headers(extra=[("connection", "close")]),
         b"", raw_h2.PROTOCOL_ERROR, "8.2.2"),
        ("te other than trailers", [h for h in attack_headers() if h[0] != "te"] +
         [("te", "gzip")], b"", raw_h2.PROTOCOL_ERROR, "8.2.2"),
        ("a pseudo-header after a regular one", attack_headers()[1:] +
         [(":method", "POST")], b"", raw_h2.PROTOCOL_ERROR, "8.3"),
        ("content-length not matching the DATA",
         attack_headers(extra=[("content-length", "100")]), "data:5",
         raw_h2.PROTOCOL_ERROR, "8.1.1"),
    ]

    def test_stream_errors_reset_the_stream_and_keep_the_connection(self):
        up, proxy = self.start_pair(upstream_flags={"delay": "200ms"})
        c = self.connect(proxy)
        c.handshake()
        sid = 1
        for what, headers, extra, code, section in self.STREAM_ERRORS:
            with self.subTest(what, rfc=section):
                calls_before = self.attacker_calls(up)
                if extra == "data:5":
                    c.send_headers(sid, headers, end_stream=False)
                    c.send(frame(DATA, END_STREAM, sid, b"12345"))
                else:
                    c.send_headers(sid, headers, end_stream=True)
                c.read_until(lambda f, s=sid: s in c.resets())
                self.assertEqual(raw_h2.ERROR_NAMES[c.resets()[sid]], raw_h2.ERROR_NAMES[code])
                self.assertIsNone(c.last_goaway(), c.describe())
                # The connection is alive: a PING is answered.
                c.ping(b"alive!!!")
                c.read_until(lambda f: isinstance(f, PingFrame) and f.opaque_data == b"alive!!!")
                self.assertEqual(self.attacker_calls(up), calls_before,
                                 "a malformed request reached the upstream")
                sid += 2
        self.assert_upstream_idle(up)
        self.assert_connection_usable(c, sid)

    def test_headers_on_a_stream_id_lower_than_one_opened_is_a_protocol_error(self):
        # RFC 9113 5.1.1: opening stream 5 closed idle stream 3; HEADERS on it is an unexpected
        # stream identifier, a connection error PROTOCOL_ERROR, answered before anything else:
        # stream 5 (still waiting for its slow upstream) gets no response.
        up, proxy = self.start_pair()
        c = self.connect(proxy)
        c.handshake()
        c.send(frame(HEADERS, END_HEADERS, 5, c.encode(attack_headers())) +
               frame(DATA, END_STREAM, 5,
                     attack_body(service_time=harness.service_time(0.5))) +
               frame(HEADERS, END_HEADERS | END_STREAM, 3, c.encode(attack_headers())))
        g = self.assert_goaway(c, raw_h2.PROTOCOL_ERROR)
        self.assertEqual(g.last_stream_id, 5)
        self.assertNotIn(3, c.headers)
        self.assertNotIn(5, c.headers, "a response on stream 5 before the GOAWAY")
        self.assertEqual(self.listener_stat(proxy, "downstream_cx_protocol_error_total"), 1)
        self.assert_upstream_idle(up)

    def test_a_lower_stream_id_after_the_higher_one_completed_is_a_protocol_error(self):
        up, proxy = self.start_pair()
        c = self.connect(proxy)
        c.handshake()
        c.request(5, attack_headers(), body=attack_body())
        c.read_until(lambda f: c.stream_ended(5))
        c.send_headers(3, attack_headers())
        self.assert_goaway(c, raw_h2.PROTOCOL_ERROR)
        self.assertNotIn(3, c.headers)
        self.assertEqual(self.attacker_calls(up), 1)

    # --- RFC 9113 5.1 "closed": which frames on a closed stream are errors ---

    def test_data_after_the_client_reset_the_stream_is_a_stream_closed_connection_error(self):
        up, proxy = self.start_pair()
        c = self.connect(proxy)
        c.handshake()
        c.send_headers(1, attack_headers(), end_stream=False)
        c.rst(1)
        c.send(frame(DATA, 0, 1, b"late"))
        self.assert_goaway(c, raw_h2.STREAM_CLOSED)
        self.assert_upstream_idle(up)

    def test_headers_after_the_client_reset_the_stream_is_a_stream_closed_connection_error(self):
        up, proxy = self.start_pair()
        c = self.connect(proxy)
        c.handshake()
        c.send_headers(1, attack_headers(), end_stream=False)
        c.rst(1)
        c.send_headers(1, [("x-trailer", "late")], end_stream=True)
        self.assert_goaway(c, raw_h2.STREAM_CLOSED)

    def test_frames_on_a_stream_closed_both_ways_are_a_stream_closed_connection_error(self):
        up, proxy = self.start_pair()
        for what in ("DATA", "HEADERS"):
            with self.subTest(what):
                c = RawH2(proxy.port)
                try:
                    c.handshake()
                    c.request(1, attack_headers(), body=attack_body())
                    c.read_until(lambda f, c=c: c.stream_ended(1))
                    if what == "DATA":
                        c.send(frame(DATA, 0, 1, b"late"))
                    else:
                        c.send_headers(1, [("x-trailer", "late")], end_stream=True)
                    self.assert_goaway(c, raw_h2.STREAM_CLOSED)
                finally:
                    c.close()

    def test_frames_on_a_stream_sluice_reset_are_ignored(self):
        # The client may have sent them before it saw the RST_STREAM: 5.1 says MUST ignore.
        up, proxy = self.start_pair()
        c = self.connect(proxy)
        c.handshake()
        c.send_headers(1, attack_headers(extra=[("X-Upper", "v")]), end_stream=False)
        c.read_until(lambda f: 1 in c.resets())
        self.assertEqual(c.resets(), {1: raw_h2.PROTOCOL_ERROR})
        c.send(frame(DATA, 0, 1, b"x" * 1000) + frame(DATA, END_STREAM, 1, b"y"))
        c.send_headers(1, [("x-trailer", "late")], end_stream=True)
        c.ping(b"ignored!")
        c.read_until(lambda f: isinstance(f, PingFrame) and f.opaque_data == b"ignored!")
        self.assertIsNone(c.last_goaway(), c.describe())
        self.assert_connection_usable(c, 3)
        self.assertEqual(self.attacker_calls(up), 1)

    # --- RFC 9113 5.3.1: a stream cannot depend on itself ---

    def test_priority_on_an_idle_stream_depending_on_itself_is_a_stream_error(self):
        up, proxy = self.start_pair()
        c = self.connect(proxy)
        c.handshake()
        c.send(frame(PRIORITY, 0, 1, struct.pack(">LB", 1, 15)))
        c.read_until(lambda f: 1 in c.resets())
        self.assertEqual(c.resets(), {1: raw_h2.PROTOCOL_ERROR})
        self.assertIsNone(c.last_goaway())
        self.assert_connection_usable(c, 3)

    def test_priority_on_an_open_stream_depending_on_itself_resets_it(self):
        up, proxy = self.start_pair()
        c = self.connect(proxy)
        c.handshake()
        c.request(1, attack_headers(), body=attack_body(service_time=harness.service_time(2)))
        c.send(frame(PRIORITY, 0, 1, struct.pack(">LB", 1, 15)) +
               frame(PRIORITY, 0, 1, struct.pack(">LB", 0, 15)))  # a valid one is ignored
        c.read_until(lambda f: 1 in c.resets())
        self.assertEqual(c.resets(), {1: raw_h2.PROTOCOL_ERROR})
        self.assertIsNone(c.last_goaway())
        self.assert_upstream_idle(up)  # the upstream call was cancelled
        self.assert_connection_usable(c, 3)

    def test_unknown_frame_types_and_flags_are_ignored(self):
        up, proxy = self.start_pair()
        c = self.connect(proxy)
        c.handshake()
        c.send(frame(0xFA, 0xFF, 0, b"extension") + frame(0xFB, 0, 1, b"x"))
        c.send(frame(PING, 0xF0, 0, b"flags!!!"))  # undefined flags are ignored (4.1)
        c.read_until(lambda f: isinstance(f, PingFrame) and "ACK" in f.flags)
        self.assert_connection_usable(c, 1)


class TrailerLimitTest(AbuseTestCase):

    def test_request_trailers_beyond_the_limits_reset_the_stream_not_truncated(self):
        up, proxy = self.start_pair(http2={"max_headers_count": 10},
                                    upstream_flags={"delay": "200ms"})
        c = self.connect(proxy)
        c.handshake()
        c.send_headers(1, attack_headers(), end_stream=False)
        c.send(frame(DATA, 0, 1, attack_body()))
        c.send_headers(1, [(f"x-trailer-{i}", "v") for i in range(20)], end_stream=True)
        c.read_until(lambda f: 1 in c.resets())
        self.assertEqual(c.resets(), {1: raw_h2.ENHANCE_YOUR_CALM})
        self.assertEqual(self.listener_stat(proxy, "downstream_rq_headers_too_large_total"), 1)
        self.assertEqual(self.listener_stat(proxy, "downstream_rq_internal_total"), 1)
        self.assertIsNone(c.last_goaway())
        self.assert_upstream_idle(up)
        # Trailers within the limit still go through.
        c.send_headers(3, attack_headers(), end_stream=False)
        c.send(frame(DATA, 0, 3, attack_body()))
        c.send_headers(3, [(f"x-trailer-{i}", "v") for i in range(10)], end_stream=True)
        c.read_until(lambda f: c.stream_ended(3))
        self.assertEqual(c.response_headers(3)[-1].get("grpc-status"), "0")


class PrematureResetLifetimeTest(AbuseTestCase):

    def test_streams_reset_after_the_minimum_lifetime_do_not_trip_the_rule(self):
        # A well-behaved client under overload: its calls wait (here: a slow upstream) and it
        # cancels them at its deadline. They are reset before a response, but not premature.
        up, proxy = self.start_pair(limits={"premature_reset_limit": 10,
                                            "premature_reset_min_stream_lifetime": "300ms"})
        c = self.connect(proxy)
        c.handshake()
        slow = attack_body(service_time=harness.service_time(5))
        ids = [2 * i + 1 for i in range(20)]
        for sid in ids:
            c.request(sid, attack_headers(), body=slow)
        time.sleep(0.6)
        for sid in ids:
            c.rst(sid)
        self.assert_connection_usable(c, 2 * len(ids) + 1)
        self.assertEqual(self.listener_stat(proxy, "downstream_cx_premature_reset_total"), 0)
        # The same resets right after opening are premature: the connection is closed.
        fast = self.connect(proxy)
        fast.handshake()
        burst = b"".join(frame(HEADERS, END_HEADERS | END_STREAM, sid,
                               fast.encode(attack_headers())) +
                         frame(RST_STREAM, 0, sid, struct.pack(">L", raw_h2.CANCEL))
                         for sid in ids)
        fast.send(burst)
        self.assert_goaway(fast, raw_h2.ENHANCE_YOUR_CALM)
        self.assertEqual(self.listener_stat(proxy, "downstream_cx_premature_reset_total"), 1)
        self.assert_upstream_idle(up, timeout=10)


class HeadRequestTest(AbuseTestCase):
    """RFC 9110 9.3.2: a HEAD response has the headers a GET would get and no content."""

    HEAD = [(":method", "HEAD"), (":scheme", "http"), (":authority", "probe"), (":path", "/")]

    def assert_headers_only(self, c, sid, status):
        c.read_until(lambda f: c.stream_ended(sid) or sid in c.resets())
        self.assertEqual(c.resets(), {}, c.describe())
        first = c.response_headers(sid)[0]
        self.assertEqual(first[":status"], status, first)
        self.assertIn("x-sluice-queue-us", first)
        self.assertEqual(c.data.get(sid, b""), b"", "a HEAD response carried DATA")
        # END_STREAM on the HEADERS frame itself: no DATA frame at all, not even an empty one.
        self.assertFalse(any(f.type == DATA and f.stream_id == sid for f in c.frames),
                         c.describe())

    def test_head_forwarded_to_the_upstream_gets_headers_with_end_stream(self):
        up, proxy = self.start_pair()
        c = self.connect(proxy)
        c.handshake()
        c.send_headers(1, self.HEAD)
        self.assert_headers_only(c, 1, "200")
        self.assert_connection_usable(c, 3)

    def test_head_answered_locally_gets_headers_with_end_stream(self):
        proxy = self.start_sluice(listener_config(harness.closed_port()))
        c = self.connect(proxy)
        c.handshake()
        c.send_headers(1, self.HEAD)
        self.assert_headers_only(c, 1, "503")
        self.assertIn("retry-after", c.response_headers(1)[0])


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


class ProbeTest(AbuseTestCase):
    """Generic HTTP/2 tools probing `/` get a clean HTTP answer. sluice forwards non-gRPC
    requests unchanged, as Envoy and nghttpx do: the service behind it may serve plain HTTP
    (health checks, a gateway), and a gRPC-only service answers for itself. When the upstream
    cannot be reached, sluice answers a non-gRPC request with 503 + retry-after."""

    def test_get_and_post_to_root_are_forwarded_and_answered(self):
        up, proxy = self.start_pair()
        c = self.connect(proxy)
        c.handshake()
        get = [(":method", "GET"), (":scheme", "http"), (":authority", "probe"), (":path", "/")]
        c.send_headers(1, get)
        post = [(":method", "POST"), (":scheme", "http"), (":authority", "probe"),
                (":path", "/"), ("content-type", "text/plain")]
        c.send_headers(3, post, end_stream=False)
        c.send(frame(DATA, END_STREAM, 3, b"hello"))
        c.read_until(lambda f: c.stream_ended(1) and c.stream_ended(3))
        for sid in (1, 3):
            first = c.response_headers(sid)[0]
            self.assertEqual(first[":status"], "200", first)
            # The gRPC upstream's own answer, passed through: not a gRPC method.
            self.assertNotEqual(first.get("grpc-status", "0"), "0", first)
            self.assertIn("x-sluice-queue-us", first)
        self.assertEqual(c.resets(), {})
        self.assert_connection_usable(c, 5)

    def nghttp(self, port, path="/"):
        r = subprocess.run(harness._die_with_parent(
            ["nghttp", "-v", "-t", "5", f"http://127.0.0.1:{port}{path}"]),
            capture_output=True, text=True, timeout=10)
        return r.returncode, r.stdout + r.stderr

    def test_nghttp_probe_gets_a_clean_answer(self):
        up, proxy = self.start_pair()
        code, out = self.nghttp(proxy.port)
        self.assertEqual(code, 0, out)
        self.assertIn(":status: 200", out)
        self.assertIn("END_STREAM", out)
        self.assertNotIn("RST_STREAM", out)
        self.assertRegex(out, r"send GOAWAY frame .*\n.*error_code=NO_ERROR")  # nghttp's own

    def test_nghttp_probe_with_the_upstream_down_gets_503_with_retry_after(self):
        proxy = self.start_sluice(listener_config(harness.closed_port()))
        code, out = self.nghttp(proxy.port)
        self.assertEqual(code, 0, out)
        self.assertIn(":status: 503", out)
        self.assertIn("retry-after: ", out)
        self.assertIn("content-type: text/plain", out)
        self.assertNotIn("RST_STREAM", out)


if __name__ == "__main__":
    import unittest

    unittest.main()
