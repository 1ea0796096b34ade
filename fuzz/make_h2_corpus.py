#!/usr/bin/python3
"""Writes the seed corpus of server_session_fuzzer into fuzz/corpus/server_session/.

Each seed is one policy byte (see Policy in server_session_fuzzer.cc) followed by what a client
sends after the connection preface: valid conversations, the abuse patterns of
integration/tests/test_h2_floods.py and test_h2_limits.py, and malformed frames. Run with
Debian's /usr/bin/python3 (python3-hpack); the output is deterministic, so re-running it changes
nothing."""

import os
import struct

import hpack

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "server_session")

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, \
    CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20


def frame(ftype, flags, stream_id, payload=b""):
    n = len(payload)
    return struct.pack(">BHBBL", n >> 16, n & 0xFFFF, ftype, flags, stream_id) + payload


def settings(**kv):
    ids = {"header_table_size": 1, "enable_push": 2, "max_concurrent_streams": 3,
           "initial_window_size": 4, "max_frame_size": 5, "max_header_list_size": 6,
           "no_rfc7540_priorities": 9}
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HL", ids[k], v) for k, v in kv.items()))


def grpc_headers(path="/sluice.test.TestService/Unary", extra=()):
    return [(":method", "POST"), (":scheme", "http"), (":authority", "fuzz"), (":path", path),
            ("content-type", "application/grpc"), ("te", "trailers"), ("grpc-timeout", "5S"),
            *extra]


def grpc_message(payload):
    return b"\x00" + struct.pack(">L", len(payload)) + payload


class Client:
    def __init__(self):
        self.enc = hpack.Encoder()

    def block(self, headers):
        return self.enc.encode(headers)

    def request(self, sid, body=b"hello", extra=()):
        out = frame(HEADERS, END_HEADERS, sid, self.block(grpc_headers(extra=extra)))
        return out + frame(DATA, END_STREAM, sid, grpc_message(body))


def seeds():
    c = Client()
    hello = settings(initial_window_size=65535, enable_push=0) + frame(SETTINGS, ACK, 0)
    yield "unary", hello + c.request(1)

    c = Client()
    yield "three_streams_interleaved", (
        hello + frame(HEADERS, END_HEADERS, 1, c.block(grpc_headers())) +
        frame(HEADERS, END_HEADERS, 3, c.block(grpc_headers())) +
        frame(DATA, 0, 1, grpc_message(b"a" * 100)) +
        frame(WINDOW_UPDATE, 0, 0, struct.pack(">L", 1 << 20)) +
        frame(DATA, END_STREAM, 3, grpc_message(b"b" * 10)) +
        frame(PING, 0, 0, b"pingpong") +
        frame(DATA, END_STREAM, 1, b"") +
        frame(HEADERS, END_HEADERS | END_STREAM, 5, c.block(grpc_headers())) +
        frame(RST_STREAM, 0, 5, struct.pack(">L", 8)) +
        frame(WINDOW_UPDATE, 0, 1, struct.pack(">L", 1000)))

    c = Client()
    block = c.block(grpc_headers(extra=[("x-big", "v" * 300)]))
    yield "continuations", (hello + frame(HEADERS, 0, 1, block[:100]) +
                            frame(CONTINUATION, 0, 1, block[100:200]) +
                            frame(CONTINUATION, END_HEADERS, 1, block[200:]) +
                            frame(DATA, END_STREAM, 1, grpc_message(b"x")))

    c = Client()
    yield "request_trailers", (
        hello + frame(HEADERS, END_HEADERS, 1, c.block(grpc_headers())) +
        frame(DATA, 0, 1, grpc_message(b"payload")) +
        frame(HEADERS, END_HEADERS | END_STREAM, 1, c.block([("x-trailer", "t")])))

    c = Client()
    yield "padded_and_priority", (
        hello + frame(PRIORITY, 0, 3, struct.pack(">LB", 0, 15)) +
        frame(HEADERS, END_HEADERS | PADDED | PRIORITY_FLAG, 1,
              b"\x04" + struct.pack(">LB", 3, 200) + c.block(grpc_headers()) + b"\0" * 4) +
        frame(DATA, PADDED | END_STREAM, 1, b"\x02" + grpc_message(b"p") + b"\0\0"))

    c = Client()
    yield "empty_frames", (hello + frame(HEADERS, END_HEADERS, 1, c.block(grpc_headers())) +
                           frame(DATA, 0, 1) + frame(DATA, 0, 1) + frame(DATA, END_STREAM, 1))

    c = Client()
    big = [(f"x-h{i}", "v" * 200) for i in range(30)]
    yield "too_many_headers", hello + c.request(1, extra=big) + c.request(3)

    c = Client()
    yield "streams_beyond_limit", hello + b"".join(c.request(2 * i + 1) for i in range(12))

    c = Client()
    yield "rapid_reset", hello + b"".join(
        frame(HEADERS, END_HEADERS | END_STREAM, 2 * i + 1, c.block(grpc_headers())) +
        frame(RST_STREAM, 0, 2 * i + 1, struct.pack(">L", 8)) for i in range(40))

    yield "ping_and_settings_flood", hello + (frame(PING, 0, 0, b"12345678") +
                                              settings(initial_window_size=1000)) * 60

    yield "window_update_flood", hello + frame(WINDOW_UPDATE, 0, 0, struct.pack(">L", 1)) * 40

    yield "priority_flood", hello + b"".join(
        frame(PRIORITY, 0, 2 * i + 1, struct.pack(">LB", 0, 1)) for i in range(120))

    c = Client()
    yield "zero_window_client", (settings(initial_window_size=0) + frame(SETTINGS, ACK, 0) +
                                 c.request(1) + frame(WINDOW_UPDATE, 0, 1, struct.pack(">L", 7)))

    c = Client()
    yield "client_goaway", (hello + c.request(1) +
                            frame(GOAWAY, 0, 0, struct.pack(">LL", 0, 0) + b"bye"))

    c = Client()
    yield "reject_header", hello + c.request(1, extra=[("x-fuzz-reject", "1")]) + c.request(3)

    c = Client()
    yield "malformed_mix", (
        hello + frame(DATA, 0, 0, b"x") + frame(SETTINGS, 0, 0, b"\0" * 5) +
        frame(PING, 0, 0, b"\0" * 7) + frame(WINDOW_UPDATE, 0, 1, b"\0\0\0\0") +
        frame(PUSH_PROMISE, END_HEADERS, 1, b"\0\0\0\x02\x82") + frame(0xFA, 0xFF, 0, b"ext") +
        frame(HEADERS, END_HEADERS, 2, c.block(grpc_headers())) +
        frame(HEADERS, END_HEADERS | END_STREAM, 1, b"\xff\xff"))

    c = Client()
    yield "bad_messages", (
        hello + frame(HEADERS, END_HEADERS, 1,
                      c.block([(":method", "GET"), (":path", "/"), (":scheme", "http"),
                               ("connection", "close"), ("Upper", "x")])) +
        frame(HEADERS, END_HEADERS, 3, c.block(grpc_headers(extra=[("content-length", "3")]))) +
        frame(DATA, END_STREAM, 3, b"12345"))


def main():
    os.makedirs(OUT, exist_ok=True)
    # Policy bytes: default; never drain output; no responses + late credit; trailers-only +
    # resets + GOAWAY; byte-at-a-time chunks.
    policies = {"a": 0x00, "stall": 0x04, "late": 0x28, "resets": 0xD0, "bytewise": 0x01}
    for name, data in seeds():
        for label, policy in policies.items():
            with open(os.path.join(OUT, f"{name}-{label}"), "wb") as f:
                f.write(bytes([policy]) + data)


if __name__ == "__main__":
    main()
