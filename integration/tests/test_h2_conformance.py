"""RFC 9113 error handling of the real sluice binary (issue 6): malformed frames and invalid
stream states get the connection or stream error the RFC names, frames on closed streams and
self-dependent PRIORITY frames are handled as section 5 requires, unknown frame types and flags
are ignored; a HEAD request gets headers and no content (RFC 9110); and generic HTTP/2 probes of
`/` (raw frames, nghttp) get a clean HTTP answer. Raw frames from raw_h2.py."""

import struct
import subprocess

from hyperframe.frame import PingFrame

import harness
from hardening_support import AbuseTestCase, attack_body, attack_headers, listener_config
import raw_h2
from raw_h2 import (CONTINUATION, DATA, END_HEADERS, END_STREAM, HEADERS, PING, PRIORITY,
                    PUSH_PROMISE, RST_STREAM, SETTINGS, WINDOW_UPDATE, RawH2, frame,
                    settings_payload)


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
