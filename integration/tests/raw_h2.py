"""A raw HTTP/2 client for abuse tests: it writes exactly the frames a test asks for (valid or
not) and reads back every frame sluice sends, without any HTTP/2 state machine of its own.

Frames are built by hand (frame()) or with hyperframe; header blocks are HPACK-encoded with
Debian's python3-hpack; replies are parsed with hyperframe. Run with /usr/bin/python3.
"""

import socket
import ssl
import struct
import time

import hpack
from hyperframe.frame import (ContinuationFrame, DataFrame, Frame, GoAwayFrame, HeadersFrame,
                              PingFrame, RstStreamFrame, SettingsFrame)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# RFC 9113 frame types, flags, settings and error codes.
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, \
    CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20
SETTINGS_HEADER_TABLE_SIZE = 0x1
SETTINGS_ENABLE_PUSH = 0x2
SETTINGS_MAX_CONCURRENT_STREAMS = 0x3
SETTINGS_INITIAL_WINDOW_SIZE = 0x4
SETTINGS_MAX_FRAME_SIZE = 0x5
SETTINGS_MAX_HEADER_LIST_SIZE = 0x6
SETTINGS_NO_RFC7540_PRIORITIES = 0x9
NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR, SETTINGS_TIMEOUT, STREAM_CLOSED, \
    FRAME_SIZE_ERROR, REFUSED_STREAM, CANCEL, COMPRESSION_ERROR, CONNECT_ERROR, \
    ENHANCE_YOUR_CALM, INADEQUATE_SECURITY, HTTP_1_1_REQUIRED = range(14)

ERROR_NAMES = {v: k for k, v in dict(
    NO_ERROR=0, PROTOCOL_ERROR=1, INTERNAL_ERROR=2, FLOW_CONTROL_ERROR=3, SETTINGS_TIMEOUT=4,
    STREAM_CLOSED=5, FRAME_SIZE_ERROR=6, REFUSED_STREAM=7, CANCEL=8, COMPRESSION_ERROR=9,
    CONNECT_ERROR=10, ENHANCE_YOUR_CALM=11, INADEQUATE_SECURITY=12,
    HTTP_1_1_REQUIRED=13).items()}

GRPC_PATH = "/sluice.test.TestService/Unary"


def frame(ftype, flags, stream_id, payload=b""):
    """One frame's bytes, exactly as given (no validation: malformed frames are the point)."""
    n = len(payload)
    return struct.pack(">BHBBL", n >> 16, n & 0xFFFF, ftype, flags, stream_id) + payload


def settings_payload(settings):
    return b"".join(struct.pack(">HL", k, v) for k, v in settings.items())


def grpc_request_headers(path=GRPC_PATH, authority="sluice.test", extra=()):
    return [(":method", "POST"), (":scheme", "http"), (":authority", authority),
            (":path", path), ("content-type", "application/grpc"), ("te", "trailers"),
            *extra]


def grpc_message(payload=b""):
    """A length-prefixed gRPC message carrying raw protobuf bytes."""
    return b"\x00" + len(payload).to_bytes(4, "big") + payload


class ConnectionClosed(Exception):
    pass


class RawH2:
    """One HTTP/2 connection under the test's full control. Every frame read is kept in
    .frames (decoded header blocks in .headers[stream_id], a list of lists of (name, value) hpack
    header tuples)."""

    def __init__(self, port, host="127.0.0.1", timeout=5.0, rcvbuf=None, tls=None,
                 server_hostname=None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            # Before connect: the advertised TCP window stays small, so a client that does not
            # read fills sluice's socket quickly.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls is not None:
            self.sock = tls.wrap_socket(self.sock, server_hostname=server_hostname)
        self.timeout = timeout
        self.encoder = hpack.Encoder()
        self.decoder = hpack.Decoder()
        self.decoder.max_allowed_table_size = 1 << 16
        self._buf = bytearray()
        self._block = {}  # stream id -> header block fragments awaiting END_HEADERS
        self.frames = []
        self.headers = {}
        self.data = {}  # stream id -> bytes received
        self.server_settings = {}
        self.closed = False

    # --- writing ----------------------------------------------------------------------------

    def send(self, data):
        """Sends bytes (or a hyperframe Frame). Raises ConnectionClosed if sluice closed."""
        if isinstance(data, Frame):
            data = data.serialize()
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError) as e:
            self.closed = True
            raise ConnectionClosed(str(e)) from e

    def preface(self, settings=None):
        """Client magic + SETTINGS (empty unless `settings`)."""
        self.send(PREFACE + frame(SETTINGS, 0, 0, settings_payload(settings or {})))

    def handshake(self, settings=None, connection_window=None):
        """Preface, reads sluice's SETTINGS, ACKs them. Optionally widens the connection
        window. Returns sluice's settings as a dict."""
        self.preface(settings)
        f = self.read_until(lambda f: isinstance(f, SettingsFrame) and "ACK" not in f.flags)
        self.server_settings = dict(f.settings)
        self.send(frame(SETTINGS, ACK, 0))
        if connection_window:
            self.send(frame(WINDOW_UPDATE, 0, 0, struct.pack(">L", connection_window)))
        return self.server_settings

    def encode(self, headers):
        return self.encoder.encode(headers)

    def send_headers(self, stream_id, headers, end_stream=True, end_headers=True):
        flags = (END_STREAM if end_stream else 0) | (END_HEADERS if end_headers else 0)
        self.send(frame(HEADERS, flags, stream_id, self.encode(headers)))

    def request(self, stream_id, headers=None, body=None):
        """A complete request: HEADERS (+ one DATA with END_STREAM when `body` is given)."""
        self.send_headers(stream_id, headers or grpc_request_headers(), end_stream=body is None)
        if body is not None:
            self.send(frame(DATA, END_STREAM, stream_id, body))

    def rst(self, stream_id, code=CANCEL):
        self.send(frame(RST_STREAM, 0, stream_id, struct.pack(">L", code)))

    def window_update(self, stream_id, increment):
        self.send(frame(WINDOW_UPDATE, 0, stream_id, struct.pack(">L", increment)))

    def ping(self, opaque=b"\0" * 8):
        self.send(frame(PING, 0, 0, opaque))

    # --- reading ----------------------------------------------------------------------------

    def _recv_some(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no frame from sluice in time")
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout as e:
            raise TimeoutError("no frame from sluice in time") from e
        except (ConnectionResetError, ssl.SSLError):
            chunk = b""
        if not chunk:
            self.closed = True
            raise ConnectionClosed("sluice closed the connection")
        self._buf += chunk

    def read_frame(self, timeout=None):
        """The next frame sluice sent. Raises ConnectionClosed at EOF, TimeoutError."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while len(self._buf) < 9:
            self._recv_some(deadline)
        f, length = Frame.parse_frame_header(memoryview(bytes(self._buf[:9])))
        while len(self._buf) < 9 + length:
            self._recv_some(deadline)
        body = bytes(self._buf[9:9 + length])
        del self._buf[:9 + length]
        f.parse_body(memoryview(body))
        self._track(f)
        self.frames.append(f)
        return f

    def _track(self, f):
        if isinstance(f, (HeadersFrame, ContinuationFrame)):
            self._block.setdefault(f.stream_id, []).append(f.data)
            if "END_HEADERS" in f.flags:
                block = b"".join(self._block.pop(f.stream_id))
                # hpack's tuple types say how each field was encoded (NeverIndexedHeaderTuple).
                decoded = [type(h)(h[0].decode() if isinstance(h[0], bytes) else h[0],
                                   h[1].decode() if isinstance(h[1], bytes) else h[1])
                           for h in self.decoder.decode(block)]
                self.headers.setdefault(f.stream_id, []).append(decoded)
        elif isinstance(f, DataFrame):
            self.data[f.stream_id] = self.data.get(f.stream_id, b"") + f.data

    def read_until(self, predicate, timeout=None):
        """Reads frames until one satisfies `predicate` (returned)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            f = self.read_frame(max(deadline - time.monotonic(), 0.001))
            if predicate(f):
                return f

    def read_all(self, timeout=None):
        """Reads until EOF (returns True) or until `timeout` seconds pass quietly (False)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        try:
            while True:
                self.read_frame(max(deadline - time.monotonic(), 0.001))
        except ConnectionClosed:
            return True
        except TimeoutError:
            return False

    def wait_closed(self, timeout=None):
        """Reads everything until sluice closes the connection; fails on timeout."""
        if not self.read_all(timeout):
            raise AssertionError(f"sluice did not close the connection within "
                                 f"{self.timeout if timeout is None else timeout}s; frames: "
                                 f"{self.describe()}")

    # --- what came back ---------------------------------------------------------------------

    def goaways(self):
        return [f for f in self.frames if isinstance(f, GoAwayFrame)]

    def last_goaway(self):
        g = self.goaways()
        return g[-1] if g else None

    def resets(self, stream_id=None):
        """{stream id: error code} of every RST_STREAM received."""
        return {f.stream_id: f.error_code for f in self.frames
                if isinstance(f, RstStreamFrame)
                and (stream_id is None or f.stream_id == stream_id)}

    def response_headers(self, stream_id):
        """The header blocks of a stream (response headers, then trailers), as dicts."""
        return [dict(block) for block in self.headers.get(stream_id, [])]

    def stream_ended(self, stream_id):
        return any(getattr(f, "stream_id", None) == stream_id and "END_STREAM" in f.flags
                   for f in self.frames if isinstance(f, (HeadersFrame, DataFrame)))

    def pings(self):
        return [f for f in self.frames if isinstance(f, PingFrame)]

    def describe(self):
        out = []
        for f in self.frames[-20:]:
            if isinstance(f, GoAwayFrame):
                out.append(f"GOAWAY(last={f.last_stream_id}, "
                           f"{ERROR_NAMES.get(f.error_code, f.error_code)}, "
                           f"{f.additional_data!r})")
            elif isinstance(f, RstStreamFrame):
                out.append(f"RST_STREAM({f.stream_id}, "
                           f"{ERROR_NAMES.get(f.error_code, f.error_code)})")
            else:
                out.append(f"{type(f).__name__}({f.stream_id}, {sorted(f.flags)})")
        return ", ".join(out) or "none"

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
