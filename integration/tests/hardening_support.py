"""Shared pieces of the hardening tests (test_h2_floods.py, test_h2_limits.py,
test_h2_conformance.py, test_tls.py): a config with small limits, sluice's own counters from
/stats, a well-behaved client kept busy in the background, the RSS and upstream-work assertions
every abuse test makes, and the raw-frame attacker's requests and checks (AbuseTestCase)."""

import threading
import time

import grpc

import harness
from harness import IntegrationTestCase, sluice_config
import raw_h2
from raw_h2 import RawH2, grpc_message, grpc_request_headers
import sluice_test_pb2 as pb

MIB = 1024 * 1024
# The attacking connections call ServerStream; the well-behaved client (GoodClient) calls Unary,
# so the upstream's per-method counters tell the two apart.
ATTACK_PATH = "/sluice.test.TestService/ServerStream"

# Limits small enough that every timeout fires within a second or two of test time.
FAST_LIMITS = {
    "handshake_timeout": "500ms",
    "request_headers_timeout": "500ms",
    "idle_timeout": "5s",
    "stream_write_timeout": "1s",
}


def listener_config(upstream_port, limits=None, http2=None, tls=None, cluster_tls=None,
                    workers=1):
    """sluice_config() with the ingress listener's limits/http2/tls set. One worker by default,
    so a flood hits the same event loop the well-behaved client is served by."""
    config = sluice_config(upstream_port, workers=workers)
    listener = config["listeners"][0]
    listener["limits"] = {**FAST_LIMITS, **(limits or {})}
    if http2:
        listener["http2"] = http2
    if tls:
        listener["tls"] = tls
    if cluster_tls is not None:
        config["clusters"][0]["tls"] = cluster_tls
    return config


def sanitized(pid):
    """True when the process runs with GCC's ASan or TSan runtime (a shared library)."""
    with open(f"/proc/{pid}/maps") as f:
        return any("libasan" in line or "libtsan" in line for line in f)


class GoodClient:
    """A well-behaved gRPC client on its own connection, calling Unary in a loop from a
    background thread while an attack runs. stop() returns (ok, failures)."""

    def __init__(self, stub, interval=0.02):
        self._stub = stub
        self._interval = interval
        self._stop = threading.Event()
        self.ok = 0
        self.failures = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        # One call first: the connection is up before the attack starts.
        self._stub.Unary(pb.Request(response_size=16), timeout=5)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            try:
                self._stub.Unary(pb.Request(response_size=16), timeout=2)
                self.ok += 1
            except grpc.RpcError as e:
                self.failures.append(f"{e.code()}: {e.details()}")
            except ValueError:
                return  # the channel was closed: the test is over
            self._stop.wait(self._interval)

    def stop(self):
        self._stop.set()
        self._thread.join(10)
        return self.ok, self.failures


class HardeningTestCase(IntegrationTestCase):
    """Starts an upstream and sluice in front of it with small limits; helpers to read sluice's
    counters and to assert the properties every abuse test checks."""

    REQUIRES_SLUICE = True
    TEST_TIMEOUT = 40

    def start_pair(self, limits=None, http2=None, upstream_flags=None, **config_kw):
        up = self.start_upstream(**(upstream_flags or {}))
        proxy = self.start_sluice(listener_config(up.port, limits=limits, http2=http2,
                                                  **config_kw))
        return up, proxy

    def start_sluice(self, config, name="sluice", extra_args=()):
        proxy = super().start_sluice(config, name, extra_args)
        self.addCleanup(self.assert_no_sanitizer_report, proxy)
        return proxy

    def assert_no_sanitizer_report(self, proxy):
        """Fails the test when sluice printed an ASan/UBSan/TSan report (the sanitizer builds
        of scripts/test-sanitizers.sh); runs before the harness kills it."""
        log = proxy.stderr()
        for marker in ("ERROR: AddressSanitizer", "runtime error:", "WARNING: ThreadSanitizer",
                       "ERROR: LeakSanitizer"):
            if marker in log:
                self.fail(f"sluice reported a sanitizer error:\n{log[log.index(marker):][:4000]}")

    # --- sluice's counters ------------------------------------------------------------------

    def stats(self, proxy):
        status, body = proxy.admin_get("/stats")
        self.assertEqual(status, 200, body)
        out = {}
        for line in body.splitlines():
            name, sep, value = line.partition(": ")
            if sep and value.replace(".", "", 1).isdigit():
                out[name] = float(value) if "." in value else int(value)
        return out

    def listener_stat(self, proxy, leaf, listener="ingress"):
        return self.stats(proxy).get(f"listener.{listener}.{leaf}", 0)

    def wait_listener_stat(self, proxy, leaf, at_least=1, timeout=5):
        return harness.wait_for(
            lambda: (lambda v: v if v >= at_least else None)(self.listener_stat(proxy, leaf)),
            timeout, what=f"listener.ingress.{leaf} >= {at_least}")

    # --- the checks every abuse test makes --------------------------------------------------

    def good_client(self, proxy):
        good = GoodClient(self.stub(proxy.port)).start()
        self.addCleanup(good.stop)  # runs before the harness closes the channel
        return good

    def assert_good_client_served(self, good):
        ok, failures = good.stop()
        self.assertEqual(failures, [], "the well-behaved client failed during the attack")
        self.assertGreater(ok, 0, "the well-behaved client made no call during the attack")
        return ok

    def assert_rss_bounded(self, proxy, baseline, limit=32 * MIB):
        """sluice's RSS grew by less than `limit` since `baseline` (bytes). Under a sanitizer
        (scripts/test-sanitizers.sh) freed memory sits in quarantine: four times the limit."""
        self.assertTrue(proxy.alive(), f"sluice died:\n{proxy.log_tail()}")
        if sanitized(proxy.pid):
            limit *= 4
        grown = proxy.rss_bytes() - baseline
        self.assertLess(grown, limit, f"sluice's RSS grew by {grown / MIB:.1f} MiB")

    def upstream_calls(self, up):
        """Calls the upstream started (every method), not counting Stats."""
        return sum(up.stats().calls_started.values())

    def assert_upstream_idle(self, up, timeout=5):
        """Nothing is left running upstream: every call that reached it has ended."""
        harness.wait_for(lambda: up.stats().in_flight == 0, timeout,
                         what="the upstream to have no call in flight")


# --- the raw-frame attacker (test_h2_*.py) -----------------------------------------------------

def attack_headers(extra=()):
    return grpc_request_headers(path=ATTACK_PATH, extra=extra)


def attack_body(**fields):
    """A ServerStream request; one response message unless told otherwise."""
    fields.setdefault("response_count", 1)
    return grpc_message(pb.Request(**fields).SerializeToString())


class AbuseTestCase(HardeningTestCase):
    """Raw-frame connections to sluice, closed at cleanup, and the checks on what comes back."""

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
