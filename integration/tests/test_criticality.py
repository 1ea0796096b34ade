"""Traffic classes through the real sluice binary (issue 13): grants most critical first and FIFO
within a class, eviction of the least critical newest waiter from a full queue, per-class
queue-wait budgets, and how a request's class is chosen (header, method rule, default).

One permit is held by a client-streaming call that the test half-closes when it wants the permit
back, so every waiter is queued, checked in /limits, and released at a moment the test picks; no
assertion depends on how fast the machine is beyond generous bounds."""

import json
import threading
import time
import unittest

import grpc

import harness
from harness import IntegrationTestCase, service_time, sluice_config
import sluice_test_pb2 as pb

HEADER = "x-sluice-criticality"
CLASSES = ("sheddable", "sheddable_plus", "critical", "critical_plus")
# Service time of every queued call: consecutive grants reach the upstream at least this far
# apart, ten times the error of working out when each arrived (QueuedCall).
SERVE_S = 0.1


def config(upstream_port, filters, criticality=None):
    c = sluice_config(upstream_port)
    c["listeners"][0]["filters"] = filters
    if criticality is not None:
        c["listeners"][0]["criticality"] = criticality
    return c


def class_metadata(criticality):
    return () if criticality is None else ((HEADER, criticality),)


class HeldPermit:
    """A client-streaming call through sluice that holds its filter's permit until release():
    it sends one message, then half-closes only when told (the permit is held to stream end)."""

    def __init__(self, stub):
        self._release = threading.Event()

        def requests():
            yield pb.Request(payload=b"held")
            self._release.wait(30)

        self.future = stub.ClientStream.future(requests(), timeout=30)

    def unblock(self):
        """Lets the sender finish (at cleanup: a failed test must not leave it waiting)."""
        self._release.set()

    def release(self):
        self.unblock()
        return self.future.result(timeout=10)


class QueuedCall:
    """A unary call started at a known moment; arrived_upstream() says when the upstream got it,
    from the remaining deadline it saw (trailer x-upstream-deadline-ms)."""

    # Under 10 s, so that grpc core sends grpc-timeout in units of 10 ms (it rounds up: 100 ms
    # units from 10 s on, which would blur calls served 100 ms apart). sluice forwards the time
    # left exactly.
    TIMEOUT_S = 9

    def __init__(self, stub, label, criticality):
        self.label = label
        self.criticality = criticality
        self.started = time.monotonic()
        self.future = stub.Unary.future(
            pb.Request(service_time=service_time(SERVE_S)),
            metadata=class_metadata(criticality), timeout=self.TIMEOUT_S)

    def arrived_upstream(self):
        self.future.result(timeout=15)
        trailers = dict(self.future.trailing_metadata())
        remaining_ms = int(trailers["x-upstream-deadline-ms"])
        return self.started + self.TIMEOUT_S - remaining_ms / 1000.0

    def shed_error(self, timeout=5):
        """The RpcError this call failed with (fails the test if it succeeded or is still
        waiting after `timeout` seconds)."""
        try:
            err = self.future.exception(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise AssertionError(f"{self.label} ({self.criticality}) was not shed within "
                                 f"{timeout}s") from None
        if err is None:
            raise AssertionError(f"{self.label} ({self.criticality}) was not shed")
        return err


class CriticalityTestCase(IntegrationTestCase):
    REQUIRES_SLUICE = True

    def setUp(self):
        super().setUp()
        if harness.direct_mode():
            self.skipTest("traffic classes need sluice")  # only in SLUICE_DIRECT=1 runs

    def stats(self, sluice):
        """name -> entry of /stats?format=json (counters and gauges: "value"; histograms:
        "count", "max", ...)."""
        status, body = sluice.admin_get("/stats?format=json")
        self.assertEqual(status, 200)
        return {e["name"]: e for e in json.loads(body)["stats"]}

    def limits(self, sluice, filter_name):
        status, body = sluice.admin_get("/limits")
        self.assertEqual(status, 200)
        entries = [e for e in json.loads(body) if e["filter"] == filter_name]
        self.assertEqual(len(entries), 1, body)
        return entries[0]

    def wait_queued(self, sluice, filter_name, **per_class):
        """Waits until the filter's queue holds exactly `per_class` (class -> count, others 0)."""
        want = {c: per_class.get(c, 0) for c in CLASSES}

        def matches():
            entry = self.limits(sluice, filter_name)
            got = {c: entry["classes"][c]["queued"] for c in CLASSES}
            return got == want and entry["queued"] == sum(want.values())

        harness.wait_for(matches, 10, what=f"{filter_name} queue {want}")

    def hold_permit(self, sluice, filter_name="fixed_semaphore"):
        held = HeldPermit(self.stub(sluice.port))
        self.addCleanup(held.unblock)
        harness.wait_for(lambda: self.limits(sluice, filter_name)["in_flight"] == 1, 10,
                         what="the held call to take the permit")
        return held

    def assert_class_stats_match_limits(self, sluice, filter_name):
        """Per-class counters in /stats and /limits' "classes" are the same numbers."""
        stats = self.stats(sluice)
        entry = self.limits(sluice, filter_name)
        for c in CLASSES:
            prefix = f"filter.ingress.{filter_name}.{c}."
            self.assertEqual(entry["classes"][c]["admitted"],
                             stats[prefix + "class_admitted_total"]["value"], c)
            self.assertEqual(entry["classes"][c]["shed"],
                             stats[prefix + "class_shed_total"]["value"], c)
        self.assertEqual(entry["admitted"],
                         sum(entry["classes"][c]["admitted"] for c in CLASSES))
        self.assertEqual(entry["shed"], sum(entry["classes"][c]["shed"] for c in CLASSES))
        return stats, entry


class OrderingTest(CriticalityTestCase):
    def check_grant_order(self, limiter):
        """One permit of `limiter` held, nine waiters of every class queued one at a time in a
        mixed order; the permit then goes most critical first, FIFO within a class."""
        upstream = self.start_upstream()
        name = limiter["type"]
        sluice = self.start_sluice(config(upstream.port, [limiter], criticality={}))
        held = self.hold_permit(sluice, name)
        self.assertEqual(self.limits(sluice, name)["limit"], 1)
        # Waiters on two connections (so possibly two sluice workers), queued one at a time.
        stubs = [self.stub(sluice.port), self.stub(sluice.port)]
        arrivals = [("s1", "sheddable"), ("c1", "critical"), ("s2", "sheddable"),
                    ("x1", "critical_plus"), ("p1", "sheddable_plus"), ("c2", "critical"),
                    ("x2", "critical_plus"), ("p2", "sheddable_plus"), ("c3", None)]
        calls = []
        queued = {}
        for i, (label, criticality) in enumerate(arrivals):
            calls.append(QueuedCall(stubs[i % 2], label, criticality))
            cls = criticality or "critical"  # no header: the default class
            queued[cls] = queued.get(cls, 0) + 1
            self.wait_queued(sluice, name, **queued)
        self.assertEqual(upstream.stats().calls_started["unary"], 0)

        held.release()
        by_arrival = sorted(calls, key=lambda call: call.arrived_upstream())
        self.assertEqual([call.label for call in by_arrival],
                         ["x1", "x2", "c1", "c2", "c3", "p1", "p2", "s1", "s2"])
        # One permit: each reached the upstream after the one before it had been served. (The
        # upstream's own max_in_flight can read 2: a call counts there until grpc's OnDone.)
        times = [call.arrived_upstream() for call in by_arrival]
        gaps = [round(b - a, 3) for a, b in zip(times, times[1:])]
        self.assertTrue(all(g >= SERVE_S / 2 for g in gaps), f"gaps between grants: {gaps}")

        stats, entry = self.assert_class_stats_match_limits(sluice, name)
        self.assertEqual({c: entry["classes"][c]["admitted"] for c in CLASSES},
                         {"sheddable": 2, "sheddable_plus": 2, "critical": 4,
                          "critical_plus": 2})  # critical: c1-c3 and the held call
        self.assertEqual(entry["shed"], 0)
        self.assertEqual(entry["queued"], 0)
        self.assertEqual(entry["in_flight"], 0)
        waits = {c: stats[f"filter.ingress.{name}.{c}.class_queue_wait_us"] for c in CLASSES}
        self.assertEqual({c: waits[c]["count"] for c in CLASSES},
                         {"sheddable": 2, "sheddable_plus": 2, "critical": 4,
                          "critical_plus": 2})
        # The sheddable calls queued first and were served last: they waited the longest.
        self.assertGreater(waits["sheddable"]["max"], waits["critical_plus"]["max"])

    def test_fixed_semaphore_grants_the_most_critical_waiter_first_and_fifo_within_a_class(self):
        self.check_grant_order({"type": "fixed_semaphore", "max_concurrency": 1})

    def test_rtt_gradient_grants_in_the_same_order(self):
        # The limit pinned at 1: the adaptive filters queue through the same kind of gate.
        self.check_grant_order({"type": "rtt_gradient", "initial_limit": 1, "min_limit": 1,
                                "max_limit": 1})

    def test_aimd_grants_in_the_same_order(self):
        self.check_grant_order({"type": "aimd", "latency_slo": "1s", "initial_limit": 1,
                                "min_limit": 1, "max_limit": 1})


class EvictionTest(CriticalityTestCase):
    def test_a_full_queue_sheds_its_least_critical_newest_waiter_or_else_the_arrival(self):
        upstream = self.start_upstream()
        sluice = self.start_sluice(config(upstream.port, [
            {"type": "fixed_semaphore", "max_concurrency": 1, "max_queue": 3,
             "retry_pushback": "100ms"}], criticality={}))
        held = self.hold_permit(sluice)
        stub = self.stub(sluice.port)
        wait = self.wait_queued

        s1 = QueuedCall(stub, "s1", "sheddable")
        wait(sluice, "fixed_semaphore", sheddable=1)
        s2 = QueuedCall(stub, "s2", "sheddable")
        wait(sluice, "fixed_semaphore", sheddable=2)
        p1 = QueuedCall(stub, "p1", "sheddable_plus")
        wait(sluice, "fixed_semaphore", sheddable=2, sheddable_plus=1)

        # Full. A critical arrival takes the place of the newest sheddable waiter: not p1 (newer,
        # but more critical), not s1 (older).
        c1 = QueuedCall(stub, "c1", "critical")
        wait(sluice, "fixed_semaphore", sheddable=1, sheddable_plus=1, critical=1)
        err = s2.shed_error()
        self.assertEqual(err.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertEqual(err.details(),
                         "fixed_semaphore: queue full (3 waiting), shed for a more critical "
                         "request")
        trailers = dict(err.trailing_metadata())
        self.assertEqual(trailers.get("grpc-retry-pushback-ms"), "100")
        self.assertIn("x-sluice-queue-us", trailers)
        self.assertFalse(s1.future.done())

        c2 = QueuedCall(stub, "c2", "critical")
        wait(sluice, "fixed_semaphore", sheddable_plus=1, critical=2)
        self.assertEqual(s1.shed_error().code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        c3 = QueuedCall(stub, "c3", "critical")
        wait(sluice, "fixed_semaphore", critical=3)
        self.assertEqual(p1.shed_error().code(), grpc.StatusCode.RESOURCE_EXHAUSTED)

        # Nothing waiting is less critical than these arrivals: they are shed at once, and the
        # queue stays as it was.
        for label, criticality in (("p2", "sheddable_plus"), ("c4", "critical")):
            started = time.monotonic()
            with self.assertRaises(grpc.RpcError) as cm:
                stub.Unary(pb.Request(), metadata=class_metadata(criticality), timeout=10)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED, label)
            self.assertEqual(cm.exception.details(), "fixed_semaphore: queue full (3 waiting)")
            self.assertLess(time.monotonic() - started, 2.0, f"{label} was not shed at once")
            wait(sluice, "fixed_semaphore", critical=3)

        # A critical_plus arrival evicts the newest critical waiter.
        x1 = QueuedCall(stub, "x1", "critical_plus")
        wait(sluice, "fixed_semaphore", critical=2, critical_plus=1)
        self.assertIn("shed for a more critical request", c3.shed_error().details())
        self.assertFalse(c2.future.done())
        self.assertEqual(upstream.stats().calls_started["unary"], 0)

        held.release()
        survivors = sorted((x1, c1, c2), key=lambda call: call.arrived_upstream())
        self.assertEqual([call.label for call in survivors], ["x1", "c1", "c2"])
        # Shed calls never reached the upstream.
        self.assertEqual(upstream.stats().calls_started["unary"], 3)

        stats, entry = self.assert_class_stats_match_limits(sluice, "fixed_semaphore")
        self.assertEqual({c: entry["classes"][c]["shed"] for c in CLASSES},
                         {"sheddable": 2, "sheddable_plus": 2, "critical": 2,
                          "critical_plus": 0})
        self.assertEqual({c: entry["classes"][c]["admitted"] for c in CLASSES},
                         {"sheddable": 0, "sheddable_plus": 0, "critical": 3,
                          "critical_plus": 1})  # critical: c1, c2 and the held call
        value = {name: e.get("value") for name, e in stats.items()}
        self.assertEqual(value["filter.ingress.fixed_semaphore.shed_evicted_total"], 4)
        self.assertEqual(value["filter.ingress.fixed_semaphore.shed_queue_full_total"], 2)
        self.assertEqual(value["filter.ingress.fixed_semaphore.shed_total"], 6)
        self.assertEqual(value["listener.ingress.downstream_rq_shed_total"], 6)
        self.assertEqual(value["filter.ingress.fixed_semaphore.queued"], 0)


class BudgetTest(CriticalityTestCase):
    def test_each_class_waits_up_to_its_own_budget(self):
        upstream = self.start_upstream()
        sluice = self.start_sluice(config(upstream.port, [
            {"type": "queue_wait_budget", "budget": "50ms",
             "budgets": {"critical": "1s", "sheddable": "10ms"}},
            {"type": "fixed_semaphore", "max_concurrency": 1}], criticality={}))
        held = self.hold_permit(sluice)
        stub = self.stub(sluice.port)

        # A critical call waits behind the held permit ...
        c1 = QueuedCall(stub, "c1", "critical")
        self.wait_queued(sluice, "fixed_semaphore", critical=1)

        # ... while a sheddable one is shed at its 10 ms and a sheddable_plus one (no budget of
        # its own) at the filter's 50 ms.
        for criticality, budget_ms in (("sheddable", 10), ("sheddable_plus", 50)):
            started = time.monotonic()
            with self.assertRaises(grpc.RpcError) as cm:
                stub.Unary(pb.Request(), metadata=class_metadata(criticality), timeout=10)
            elapsed = time.monotonic() - started
            err = cm.exception
            self.assertEqual(err.code(), grpc.StatusCode.RESOURCE_EXHAUSTED, criticality)
            self.assertEqual(err.details(), f"queue wait budget {budget_ms}ms exceeded")
            queue_us = int(dict(err.trailing_metadata())["x-sluice-queue-us"])
            self.assertGreaterEqual(queue_us, budget_ms * 1000, criticality)
            self.assertLess(queue_us, 900_000, criticality)
            self.assertLess(elapsed, 1.0, criticality)

        # The critical call is shed at its own 1 s budget, not the filter's 50 ms.
        err = c1.shed_error(timeout=10)
        waited = time.monotonic() - c1.started
        self.assertEqual(err.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertEqual(err.details(), "queue wait budget 1s exceeded")
        self.assertGreaterEqual(int(dict(err.trailing_metadata())["x-sluice-queue-us"]),
                                1_000_000)
        self.assertGreater(waited, 0.95)
        self.wait_queued(sluice, "fixed_semaphore")

        # A critical call that gets the permit within its budget is admitted.
        c2 = QueuedCall(stub, "c2", "critical")
        self.wait_queued(sluice, "fixed_semaphore", critical=1)
        time.sleep(0.2)  # four times the filter's budget
        self.assertFalse(c2.future.done())
        held.release()
        c2.future.result(timeout=10)
        queue_us = int(dict(c2.future.initial_metadata())["x-sluice-queue-us"])
        self.assertGreaterEqual(queue_us, 200_000)
        self.assertLess(queue_us, 1_000_000)
        self.assertEqual(upstream.stats().calls_started["unary"], 1)

        stats = self.stats(sluice)
        budget = "filter.ingress.queue_wait_budget."
        self.assertEqual({c: stats[f"{budget}{c}.class_shed_total"]["value"] for c in CLASSES},
                         {"sheddable": 1, "sheddable_plus": 1, "critical": 1,
                          "critical_plus": 0})
        self.assertEqual(
            {c: stats[f"{budget}{c}.class_admitted_total"]["value"] for c in CLASSES},
            {"sheddable": 0, "sheddable_plus": 0, "critical": 2, "critical_plus": 0})
        self.assertEqual(stats[budget + "shed_budget_total"]["value"], 3)
        waits = {c: stats[f"{budget}{c}.class_queue_wait_us"] for c in CLASSES}
        self.assertEqual({c: waits[c]["count"] for c in CLASSES},
                         {"sheddable": 1, "sheddable_plus": 1, "critical": 3,
                          "critical_plus": 0})
        self.assertGreaterEqual(waits["sheddable"]["max"], 10_000)
        self.assertLess(waits["sheddable"]["max"], 900_000)
        self.assertGreaterEqual(waits["critical"]["max"], 1_000_000)

        # The limiter behind the budget counts the same classes; calls shed by the budget left
        # its queue without being counted as its own sheds.
        _, entry = self.assert_class_stats_match_limits(sluice, "fixed_semaphore")
        self.assertEqual({c: entry["classes"][c]["admitted"] for c in CLASSES},
                         {"sheddable": 0, "sheddable_plus": 0, "critical": 2,
                          "critical_plus": 0})
        self.assertEqual(entry["shed"], 0)
        self.assertEqual(entry["queued"], 0)


class ClassificationTest(CriticalityTestCase):
    METHOD = "/sluice.test.TestService/"

    def test_header_beats_method_rules_which_beat_the_default_and_the_header_goes_upstream(self):
        upstream = self.start_upstream()
        cfg = config(upstream.port, [
            {"type": "queue_wait_budget", "budget": "1s"},
            {"type": "fixed_semaphore", "max_concurrency": 100}], criticality={
                "default": "sheddable_plus",
                "methods": [
                    {"match": self.METHOD + "Unary", "criticality": "sheddable"},
                    {"match": self.METHOD + "Server*", "criticality": "critical_plus"},
                    {"match": self.METHOD + "ServerStream", "criticality": "sheddable"},
                ]})
        # A second listener without a criticality section: the header is not read there.
        plain = json.loads(json.dumps(cfg["listeners"][0]))
        plain["name"] = "plain"
        del plain["criticality"]
        cfg["listeners"].append(plain)
        # A third with its own header, named in mixed case (HTTP/2 header names are lower case).
        custom = json.loads(json.dumps(plain))
        custom["name"] = "custom"
        custom["criticality"] = {"header": "X-Request-Class"}
        cfg["listeners"].append(custom)
        sluice = self.start_sluice(cfg)
        stub = self.stub(sluice.port)

        def unary(value):
            request = pb.Request(echo_metadata=True)
            _, call = stub.Unary.with_call(request, metadata=class_metadata(value), timeout=10)
            return call

        def server_stream(value):
            request = pb.Request(echo_metadata=True, response_count=1)
            responses = stub.ServerStream(request, metadata=class_metadata(value), timeout=10)
            self.assertEqual(len(list(responses)), 1)
            return responses

        def bidi(value):
            responses = stub.Bidi(iter([pb.Request()]), metadata=class_metadata(value),
                                  timeout=10)
            self.assertEqual(len(list(responses)), 1)

        cases = [
            (unary, None, "sheddable"),             # exact method rule
            (server_stream, None, "critical_plus"),  # the first matching rule, a prefix
            (bidi, None, "sheddable_plus"),          # no rule: the default
            (unary, "critical", "critical"),         # a valid header beats the rule
            (unary, "CRITICAL_PLUS", "critical_plus"),  # any ASCII case
            (bidi, "sheddable", "sheddable"),        # and beats the default
            (unary, "urgent", "sheddable"),          # invalid: as if absent (method rule)
            (bidi, "", "sheddable_plus"),            # invalid: as if absent (default)
        ]
        expected = {c: 0 for c in CLASSES}
        for call, value, want in cases:
            call(value)
            expected[want] += 1
            stats = self.stats(sluice)
            for f in ("queue_wait_budget", "fixed_semaphore"):
                got = {c: stats[f"filter.ingress.{f}.{c}.class_admitted_total"]["value"]
                       for c in CLASSES}
                self.assertEqual(got, expected, f"{f} after {call.__name__} with {value!r}")
        stats = self.stats(sluice)
        self.assertEqual(stats["listener.ingress.downstream_rq_criticality_invalid_total"]
                         ["value"], 2)
        self.assertEqual(stats["listener.ingress.downstream_rq_total"]["value"], len(cases))
        self.assertEqual(stats["listener.ingress.downstream_rq_completed_total"]["value"],
                         len(cases))
        self.assertEqual(upstream.stats().calls_started["unary"], 4)

        # The header reaches the upstream as the client sent it, valid or not.
        for value in ("critical", "CRITICAL_PLUS", "urgent", ""):
            call = unary(value)
            self.assertEqual(dict(call.initial_metadata()).get(HEADER), value)
            self.assertEqual(dict(call.trailing_metadata()).get(HEADER), value)
        self.assertEqual(dict(server_stream("sheddable").initial_metadata()).get(HEADER),
                         "sheddable")
        self.assertEqual(self.stats(sluice)
                         ["listener.ingress.downstream_rq_criticality_invalid_total"]["value"], 4)

        # Without a criticality section every request is critical, whatever its header says.
        plain_stub = self.stub(sluice.listeners["plain"])
        for value in ("sheddable", "urgent", None):
            request = pb.Request(echo_metadata=True)
            _, call = plain_stub.Unary.with_call(request, metadata=class_metadata(value),
                                                 timeout=10)
            if value is not None:
                self.assertEqual(dict(call.initial_metadata()).get(HEADER), value)
        stats = self.stats(sluice)
        self.assertEqual(
            {c: stats[f"filter.plain.fixed_semaphore.{c}.class_admitted_total"]["value"]
             for c in CLASSES},
            {"sheddable": 0, "sheddable_plus": 0, "critical": 3, "critical_plus": 0})
        self.assertEqual(stats["listener.plain.downstream_rq_criticality_invalid_total"]
                         ["value"], 0)

        # With `header` set, that header is read and the default one is just metadata.
        custom_stub = self.stub(sluice.listeners["custom"])
        for metadata in ((("x-request-class", "sheddable"),),
                         (("x-request-class", "SHEDDABLE"), (HEADER, "critical_plus")),
                         ((HEADER, "critical_plus"),),
                         (("x-request-class", "urgent"),)):
            custom_stub.Unary(pb.Request(), metadata=metadata, timeout=10)
        stats = self.stats(sluice)
        self.assertEqual(
            {c: stats[f"filter.custom.fixed_semaphore.{c}.class_admitted_total"]["value"]
             for c in CLASSES},
            {"sheddable": 2, "sheddable_plus": 0, "critical": 2, "critical_plus": 0})
        self.assertEqual(stats["listener.custom.downstream_rq_criticality_invalid_total"]
                         ["value"], 1)


if __name__ == "__main__":
    unittest.main()
