"""HTTP/2 floods and resets against the real sluice binary (issue 6, "HTTP/2 abuse"): raw frames
from raw_h2.py, one test per attack: rapid reset (sluice's premature-reset rule and nghttp2's own
limit), CONTINUATION floods, oversized header lists and trailers, SETTINGS, PING and
refused-stream floods from a client that does not read, empty frames, WINDOW_UPDATE and PRIORITY
floods. Each asserts the frame or close that comes back, that a well-behaved gRPC client on
another connection keeps being served meanwhile, that sluice's RSS stays bounded, and that the
upstream did no work for the streams the attack reset.

Slow peers and connection limits: test_h2_limits.py; RFC 9113 error handling:
test_h2_conformance.py. Limits are set small (hardening_support.FAST_LIMITS)."""

import struct
import time

import harness
from hardening_support import AbuseTestCase, attack_body, attack_headers
import raw_h2
from raw_h2 import (CONTINUATION, DATA, END_HEADERS, END_STREAM, HEADERS, PING, PRIORITY,
                    RST_STREAM, SETTINGS, WINDOW_UPDATE, ConnectionClosed, frame,
                    settings_payload)


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


if __name__ == "__main__":
    import unittest

    unittest.main()
