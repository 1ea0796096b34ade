"""The socket side of the raw python3-h2 upstreams the tests use where a gRPC library will not
misbehave on request (reset_upstream.py, lowering_upstream.py): an ephemeral loopback listener,
one thread per accepted connection, close()."""

import socket
import threading

from harness import LOOPBACK


class RawH2Server:
    """Listens on an ephemeral loopback port; call start() once the subclass is set up. Each
    accepted connection is handed to self._serve(sock, index) on its own daemon thread (index
    counts connections from 1)."""

    def __init__(self, backlog=64):
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((LOOPBACK, 0))
        self._listener.listen(backlog)
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self.connections = 0
        self._closing = False

    def start(self):
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def close(self):
        self._closing = True
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()

    def _accept_loop(self):
        while not self._closing:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                index = self.connections
            threading.Thread(target=self._serve, args=(sock, index), daemon=True).start()

    def _serve(self, sock, index):
        raise NotImplementedError
