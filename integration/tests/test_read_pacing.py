"""Read pacing, the point of sluice (issue 2): a client-streaming call floods 16 KiB messages at
an upstream that processes one message per 10 ms. Through sluice, sluice's RSS stays flat, the
client is slowed to about the upstream's pace by HTTP/2 flow control, and every message sent is
processed. SLUICE_DIRECT=1 checks the same logic against the upstream alone (which reads one
message at a time with 64 KiB windows, so it paces its client the same way)."""

import sys
import threading
import time
import unittest

from harness import IntegrationTestCase, sluice_config

MIB = 1024 * 1024
MESSAGE_BYTES = 16 * 1024
OFFERED_RATE = 300  # messages/s, 3x what the upstream can process
FLOOD_SECONDS = 6
UPSTREAM_DELAY = "10ms"  # one worker: at most ~100 messages/s
MAX_RSS_GROWTH = 4 * MIB  # "a few MiB at most"


class RssSampler:
    """Samples a process's RSS every `interval` seconds in a background thread."""

    def __init__(self, process, interval=0.1):
        self.samples = []  # (seconds since start, bytes)
        self._process = process
        self._interval = interval
        self._stop = threading.Event()
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                rss = self._process.rss_bytes()
            except (OSError, AssertionError):
                return  # the process is gone; the test reports that itself
            self.samples.append((time.monotonic() - self._start, rss))
            self._stop.wait(self._interval)

    def stop(self):
        self._stop.set()
        self._thread.join()

    def at(self, seconds):
        """The first sample taken at or after `seconds`."""
        return next(rss for t, rss in self.samples if t >= seconds)

    def max_after(self, seconds):
        return max(rss for t, rss in self.samples if t >= seconds)


class ReadPacingTest(IntegrationTestCase):

    REQUIRES_SLUICE = True

    def test_client_stream_flood_is_paced_to_the_upstream_with_flat_proxy_memory(self):
        up = self.start_upstream(workers=1, delay=UPSTREAM_DELAY)
        proxy = self.start_sluice(sluice_config(up.port))
        sampler = RssSampler(proxy)
        client = self.start_test_client([
            "--target", f"127.0.0.1:{proxy.port}", "--method", "client_stream",
            "--size", MESSAGE_BYTES, "--rate", OFFERED_RATE, "--duration", f"{FLOOD_SECONDS}s",
            "--deadline", "60s"])
        result = client.result(timeout=60)
        sampler.stop()
        stats = up.stats()

        sent = result["messages_sent"]
        per_second = result["send"]["per_second"]
        # Steady state: skip the first second, while the windows on the path fill.
        steady = per_second[1:FLOOD_SECONDS]
        steady_rate = sum(steady) / len(steady)
        baseline = sampler.at(1.0)
        growth = sampler.max_after(1.0) - baseline
        sys.stderr.write(
            f"\nread pacing: sent {sent} in {FLOOD_SECONDS}s (offered {OFFERED_RATE}/s), "
            f"sends/s {per_second}, steady {steady_rate:.0f}/s; processed "
            f"{stats.messages_processed}; call {result['elapsed_ms']:.0f} ms; proxy RSS "
            f"{baseline / MIB:.1f} MiB at 1 s, max growth {growth / MIB:.2f} MiB\n")

        self.assertEqual(result["status_name"], "OK", result["status_message"])
        # Every message sent was processed, and the call drained well inside its deadline.
        self.assertEqual(result["response"]["messages_processed"], sent)
        self.assertEqual(stats.messages_processed, sent)
        self.assertEqual(stats.bytes_processed, sent * MESSAGE_BYTES)
        self.assertLess(result["elapsed_ms"], (FLOOD_SECONDS + 5) * 1000)
        # The client was slowed to about the upstream's pace (~100/s), far below the offer.
        self.assertLess(steady_rate, OFFERED_RATE / 2)
        self.assertGreater(steady_rate, 40)
        self.assertLess(sent, FLOOD_SECONDS * 150)
        # sluice's memory stayed flat while the overload lasted.
        self.assertLess(growth, MAX_RSS_GROWTH)


if __name__ == "__main__":
    unittest.main()
