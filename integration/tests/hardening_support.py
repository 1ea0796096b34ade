"""Shared pieces of the hardening tests (test_h2_abuse.py, test_tls.py): a config with small
limits, sluice's own counters from /stats, a well-behaved client kept busy in the background,
and the RSS and upstream-work assertions every abuse test makes."""

import threading

import grpc

import harness
from harness import IntegrationTestCase, sluice_config
import sluice_test_pb2 as pb

MIB = 1024 * 1024

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
