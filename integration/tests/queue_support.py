"""Queue mode test support: a real redis-server on an ephemeral loopback port, a minimal RESP
client (Debian has no python3-redis in the test profile; RESP is small), and the two encodings
the queue uses (stream entry fields, netstring replies: src/queue/queue_envelope.h and
queue_reply.h)."""

import os
import shutil
import socket
import time

from harness import LOOPBACK, ManagedProcess, wait_for


def free_port():
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


class Redis:
    """A blocking RESP2 client on one connection."""

    def __init__(self, port, timeout=5.0):
        self.sock = socket.create_connection((LOOPBACK, port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def command(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        return self._read()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise RuntimeError(f"bad RESP line {line!r}")


class RedisServer(ManagedProcess):
    """redis-server without persistence on a free port; restart() keeps the port."""

    def __init__(self, workdir, name="redis"):
        self.workdir = workdir
        self.port = free_port()
        self._start(name)

    def _start(self, name):
        binary = shutil.which("redis-server")
        if binary is None:
            raise AssertionError("redis-server is not installed (scripts/setup.sh test)")
        super().__init__(name, [binary, "--port", str(self.port), "--bind", LOOPBACK,
                                "--save", "", "--appendonly", "no", "--dir", self.workdir],
                         self.workdir)
        wait_for(self._pong, 10, what="redis-server to answer PING")

    def _pong(self):
        if not self.alive():
            raise AssertionError(f"redis-server exited:\n{self.log_tail()}")
        try:
            r = Redis(self.port, timeout=1)
            try:
                return r.command("PING") == "PONG"
            finally:
                r.close()
        except OSError:
            return False

    def client(self):
        return Redis(self.port)

    def restart(self):
        self.terminate()
        self._start(self.name + "-again")


def netstrings(data):
    """Parses a sequence of netstrings into a list of bytes."""
    out = []
    i = 0
    while i < len(data):
        colon = data.index(b":", i)
        n = int(data[i:colon])
        out.append(data[colon + 1:colon + 1 + n])
        assert data[colon + 1 + n:colon + 2 + n] == b","
        i = colon + 2 + n
    return out


def encode_netstrings(items):
    return b"".join(b"%d:%s," % (len(x), x) for x in items)


def pairs(items):
    return [(items[i], items[i + 1]) for i in range(0, len(items), 2)]


def encode_metadata(meta):
    return encode_netstrings([x for kv in meta for x in kv])


def entry_fields(raw):
    """XREADGROUP's field list -> dict (field names are unique in an envelope)."""
    return {raw[i].decode(): raw[i + 1] for i in range(0, len(raw), 2)}


def encode_reply(call_id, status=0, message=b"", headers=(), body=b"", trailers=(),
                 consumer=b"py"):
    fields = [b"v", b"1", b"call_id", call_id, b"consumer", consumer, b"attempt", b"1",
              b"status", str(status).encode(), b"message", message,
              b"headers", encode_metadata(headers), b"body", body,
              b"trailers", encode_metadata(trailers)]
    return encode_netstrings(fields)


def wait_until(predicate, timeout, what):
    return wait_for(predicate, timeout, what=what)


__all__ = ["RedisServer", "Redis", "netstrings", "encode_reply", "entry_fields", "pairs",
           "free_port", "encode_metadata", "time", "os"]
