"""A raw HTTP/2 gRPC upstream (python3-h2) that lowers its SETTINGS_MAX_CONCURRENT_STREAMS on its
first connection once that connection has received `lower_after` requests, and from then on
refuses (RST_STREAM(REFUSED_STREAM)) every request above the new limit: what a server shedding
load does, and what a client must retry because the server never processed those streams.

Every request is answered after `delay` seconds with an OK unary response (an empty
sluice.test.Response). The new SETTINGS frame is written by hand, so that h2 keeps accepting the
streams the client sent before it saw the frame (the test is about what the upstream refuses).
"""

import heapq
import select
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
from hyperframe.frame import SettingsFrame

import sluice_test_pb2 as pb

from harness import grpc_frame
from raw_h2_server import RawH2Server


class LoweringUpstream(RawH2Server):
    """Serves on an ephemeral loopback port from background threads until close()."""

    def __init__(self, lower_after=10, lowered_limit=4, delay=0.05):
        super().__init__(backlog=64)
        self.lower_after = lower_after
        self.lowered_limit = lowered_limit
        self.delay = delay
        self.requests = 0  # request headers seen
        self.refused = 0   # of those, refused with REFUSED_STREAM
        self.answered = 0
        self.start()

    def _serve(self, sock, index):
        lowers = index == 1  # only the first connection lowers its limit
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        conn = h2.connection.H2Connection(config=config)
        conn.local_settings = h2.settings.Settings(
            client=False, initial_values={h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1000})
        conn.initiate_connection()
        received = 0
        limit = None  # the lowered limit, once announced
        open_streams = set()  # accepted and not answered yet
        due = []  # (time, stream id) of responses to send
        try:
            sock.sendall(conn.data_to_send())
            while not self._closing:
                timeout = max(0.0, due[0][0] - time.monotonic()) if due else 0.5
                readable, _, _ = select.select([sock], [], [], timeout)
                if readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    for event in conn.receive_data(data):
                        if isinstance(event, h2.events.RequestReceived):
                            received += 1
                            if lowers and limit is None and received > self.lower_after:
                                # Lower the limit now: the rest of this burst is over it.
                                limit = self.lowered_limit
                                sock.sendall(conn.data_to_send())
                                sock.sendall(SettingsFrame(0, settings={
                                    SettingsFrame.MAX_CONCURRENT_STREAMS: limit}).serialize())
                            if limit is not None and len(open_streams) >= limit:
                                conn.reset_stream(event.stream_id,
                                                  h2.errors.ErrorCodes.REFUSED_STREAM)
                                with self._lock:
                                    self.requests += 1
                                    self.refused += 1
                                continue
                            open_streams.add(event.stream_id)
                            with self._lock:
                                self.requests += 1
                        elif isinstance(event, h2.events.DataReceived):
                            conn.acknowledge_received_data(event.flow_controlled_length,
                                                           event.stream_id)
                        elif isinstance(event, h2.events.StreamEnded):
                            if event.stream_id in open_streams:
                                heapq.heappush(due, (time.monotonic() + self.delay,
                                                     event.stream_id))
                        elif isinstance(event, h2.events.StreamReset):
                            open_streams.discard(event.stream_id)
                    sock.sendall(conn.data_to_send())
                now = time.monotonic()
                while due and due[0][0] <= now:
                    _, stream_id = heapq.heappop(due)
                    if stream_id not in open_streams:
                        continue
                    open_streams.discard(stream_id)
                    self._respond(conn, stream_id)
                sock.sendall(conn.data_to_send())
        except (OSError, h2.exceptions.ProtocolError):
            return
        finally:
            sock.close()

    def _respond(self, conn, stream_id):
        try:
            conn.send_headers(stream_id, [(":status", "200"),
                                          ("content-type", "application/grpc")])
            conn.send_data(stream_id, grpc_frame(pb.Response()))
            conn.send_headers(stream_id, [("grpc-status", "0")], end_stream=True)
        except h2.exceptions.StreamClosedError:
            return
        with self._lock:
            self.answered += 1
