"""A raw HTTP/2 upstream (python3-h2) that resets streams on request, for what a gRPC server
library will not do: send RST_STREAM instead of a status. (grpc++'s server-side cancel sends a
trailers-only CANCELLED status, not a reset.)

Request header `x-reset` chooses:
  before  RST_STREAM(INTERNAL_ERROR) before any response headers
  after   response headers and one gRPC message, then RST_STREAM(CANCEL)
  (absent) a normal OK unary response with no payload

It also records which request fields arrived as HPACK never-indexed literals, and sends its
response header `x-upstream-token` that way, to check that a proxy keeps the representation.
"""


import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import hpack

import sluice_test_pb2 as pb

from harness import grpc_frame
from raw_h2_server import RawH2Server


class ResetUpstream(RawH2Server):
    """Serves on an ephemeral loopback port from background threads until close()."""

    def __init__(self):
        super().__init__(backlog=16)
        self.requests = 0  # request headers seen
        self.resets_sent = 0
        self.resets_received = 0  # RST_STREAM frames from the proxy (e.g. client cancelled)
        self.never_indexed = set()  # request field names that arrived never-indexed
        self.start()

    def _serve(self, sock, index):
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        conn = h2.connection.H2Connection(config=config)
        conn.initiate_connection()
        modes = {}
        try:
            sock.sendall(conn.data_to_send())
            while not self._closing:
                data = sock.recv(65536)
                if not data:
                    return
                for event in conn.receive_data(data):
                    self._on_event(conn, event, modes)
                sock.sendall(conn.data_to_send())
        except (OSError, h2.exceptions.ProtocolError):
            return
        finally:
            sock.close()

    def _on_event(self, conn, event, modes):
        if isinstance(event, h2.events.RequestReceived):
            headers = dict(event.headers)
            modes[event.stream_id] = headers.get("x-reset", "")
            with self._lock:
                self.requests += 1
                self.never_indexed.update(h[0] for h in event.headers
                                          if isinstance(h, hpack.NeverIndexedHeaderTuple))
            if modes[event.stream_id] == "before":
                conn.reset_stream(event.stream_id, h2.errors.ErrorCodes.INTERNAL_ERROR)
                with self._lock:
                    self.resets_sent += 1
        elif isinstance(event, h2.events.DataReceived):
            conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            self._respond(conn, event.stream_id, modes.get(event.stream_id, ""))
        elif isinstance(event, h2.events.StreamReset):
            if not event.remote_reset:
                return
            with self._lock:
                self.resets_received += 1

    def _respond(self, conn, stream_id, mode):
        if mode == "before":
            return
        conn.send_headers(stream_id, [(":status", "200"), ("content-type", "application/grpc"),
                                      hpack.NeverIndexedHeaderTuple("x-upstream-token", "t0k")])
        conn.send_data(stream_id, grpc_frame(pb.Response(payload=b"first")))
        if mode == "after":
            conn.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
            with self._lock:
                self.resets_sent += 1
            return
        conn.send_headers(stream_id, [("grpc-status", "0")], end_stream=True)
