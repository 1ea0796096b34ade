"""Cluster endpoints by name and active health checks (issue 14 items 4 and 5), with the real
sluice binary, grpc++ test upstreams and real gRPC clients.

Names: sluice runs with a hosts file of the test's own (private_hosts.py: a mount namespace, the
system's /etc/hosts untouched), so `app.sluice.test` resolves through the real getaddrinfo to
what the test writes: 127.0.0.1 and ::1, with one upstream on each address and the same port.

Health: the upstreams run grpc++'s default grpc.health.v1 service; SetHealth flips it."""

import re
import signal
import time
import unittest

import grpc

import harness
from harness import service_time, sluice_config
from private_hosts import PrivateHosts
import sluice_test_pb2 as pb
from test_cluster import ClusterTestCase

needs_proxy = unittest.skipIf(harness.direct_mode(), "only meaningful with sluice in the path")

NAME = "app.sluice.test"


def call(stub, n, **request):
    for _ in range(n):
        stub.Unary(pb.Request(**request), timeout=5)


@needs_proxy
class NameTest(ClusterTestCase):

    def setUp(self):
        super().setUp()
        self.hosts = PrivateHosts(self.tmpdir)

    def two_address_upstreams(self):
        """One upstream on 127.0.0.1:P, another on [::1]:P."""
        v4 = self.start_upstream(name="upstream-v4")
        v6 = self.start_upstream(name="upstream-v6", host="::1", port=v4.port)
        return v4, v6

    def named_config(self, port, **cluster):
        config = sluice_config(port, workers=1)
        config["clusters"][0]["endpoints"] = [f"{NAME}:{port}"]
        config["clusters"][0].update(cluster)
        return config

    def test_a_name_with_an_ipv4_and_an_ipv6_address_sends_calls_to_both(self):
        v4, v6 = self.two_address_upstreams()
        self.hosts.set({NAME: ["127.0.0.1", "::1"]})
        proxy = self.start_sluice(self.named_config(v4.port), wrapper=self.hosts.wrapper())
        call(self.stub(proxy.port), 40)
        # Round-robin over the two addresses of the one endpoint.
        self.assertEqual(v4.unary_calls(), 20)
        self.assertEqual(v6.unary_calls(), 20)
        self.assertEqual(self.cluster_stat(proxy, "endpoints"), 2)
        self.assertEqual(self.cluster_stat(proxy, "endpoints_healthy"), 2)
        self.assertGreaterEqual(self.cluster_stat(proxy, "dns_resolve_total"), 1)
        self.assertEqual(self.cluster_stat(proxy, "dns_resolve_failed_total"), 0)

    def test_an_address_that_vanishes_drains_and_one_that_appears_gets_calls(self):
        v4, v6 = self.two_address_upstreams()
        self.hosts.set({NAME: ["127.0.0.1", "::1"]})
        proxy = self.start_sluice(self.named_config(v4.port, dns_refresh="200ms"),
                                  wrapper=self.hosts.wrapper())
        stub = self.stub(proxy.port)
        held = [stub.Unary.future(pb.Request(service_time=service_time(2.0)), timeout=20)
                for _ in range(4)]
        harness.wait_for(lambda: v4.stats().in_flight == 2 and v6.stats().in_flight == 2, 5,
                         what="two held calls on each address")
        self.hosts.set({NAME: ["127.0.0.1"]})
        harness.wait_for(lambda: self.cluster_stat(proxy, "endpoints") == 1, 5,
                         what="::1 to leave the cluster")
        v6_before = v6.unary_calls()
        call(stub, 20)
        self.assertEqual(v6.unary_calls(), v6_before, "a call went to the vanished address")
        self.assertEqual(v6.stats().in_flight, 2, "the calls on the vanished address went away")
        # The drained connection's calls finish normally, and then it closes.
        for f in held:
            f.result()
        self.assertGreaterEqual(self.cluster_stat(proxy, "upstream_cx_drain_total"), 1)
        harness.wait_for(lambda: self.cluster_stat(proxy, "upstream_cx_active") == 1, 5,
                         what="the drained connection to close")
        self.assertEqual(self.cluster_stat(proxy, "endpoints_removed_total"), 1)
        # The address comes back (a new pod on the same IP): it gets calls again.
        self.hosts.set({NAME: ["127.0.0.1", "::1"]})
        harness.wait_for(lambda: self.cluster_stat(proxy, "endpoints") == 2, 5,
                         what="::1 to rejoin the cluster")
        call(stub, 20)
        self.assertEqual(v6.unary_calls(), v6_before + 10)

    def test_a_name_that_does_not_resolve_at_startup_fails_calls_fast_until_it_does(self):
        up = self.start_upstream()
        self.hosts.set({})
        start = time.monotonic()
        proxy = self.start_sluice(self.named_config(up.port, dns_refresh="1s"),
                                  wrapper=self.hosts.wrapper())
        self.assertLess(time.monotonic() - start, 10)  # a failed name does not stop startup
        stub = self.stub(proxy.port)
        start = time.monotonic()
        with self.assertRaises(grpc.RpcError) as cm:
            stub.Unary(pb.Request(), timeout=5)
        self.assertLess(time.monotonic() - start, 1.0)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE)
        self.assertIn("upstream cluster 'app' has no address: cannot resolve "
                      f"{NAME}:{up.port}", cm.exception.details())
        status, body = proxy.admin_get("/ready")
        self.assertEqual(status, 503)
        self.assertTrue(body.startswith(
            "NO_HEALTHY_UPSTREAM cluster app (listener ingress): 0 of 0 addresses healthy: "
            f"no address: cannot resolve {NAME}:{up.port}: "), body)
        self.assertGreaterEqual(self.cluster_stat(proxy, "dns_resolve_failed_total"), 1)
        self.assertEqual(self.cluster_stat(proxy, "endpoints"), 0)
        # The record appears (the Service got its first pod): retried within dns_refresh.
        self.hosts.set({NAME: ["127.0.0.1"]})
        harness.wait_for(lambda: proxy.admin_get("/ready")[0] == 200, 10,
                         what="/ready once the name resolves")
        call(stub, 5)
        self.assertEqual(up.unary_calls(), 5)


HEALTH = {"interval": "100ms", "timeout": "500ms", "unhealthy_threshold": 2,
          "healthy_threshold": 2}


@needs_proxy
class HealthCheckTest(ClusterTestCase):

    def ready_when(self, proxy, predicate, what):
        """Polls /ready until predicate(status, body); returns (status, body)."""
        def poll():
            status, body = proxy.admin_get("/ready")
            return (status, body) if predicate(status, body) else None
        return harness.wait_for(poll, 10, what=what)

    def test_health_flips_decide_which_endpoint_gets_calls_and_what_ready_says(self):
        a = self.start_upstream(name="upstream-a")
        b = self.start_upstream(name="upstream-b")
        config = sluice_config(a.port, workers=1)
        config["clusters"][0]["endpoints"].append(b.address)
        config["clusters"][0]["health_check"] = HEALTH
        proxy = self.start_sluice(config)
        stub = self.stub(proxy.port)
        self.ready_when(proxy, lambda s, _: s == 200, "both endpoints checked")
        call(stub, 20)
        self.assertEqual((a.unary_calls(), b.unary_calls()), (10, 10))

        a.set_health(False)
        harness.wait_for(lambda: self.cluster_stat(proxy, "endpoints_healthy") == 1, 5,
                         what="a to be held unhealthy")
        self.assertEqual(proxy.admin_get("/ready")[0], 200)  # b still serves
        call(stub, 20)
        self.assertEqual((a.unary_calls(), b.unary_calls()), (10, 30))

        b.set_health(False)
        status, body = self.ready_when(proxy, lambda s, _: s == 503, "no healthy endpoint")
        self.assertRegex(body, r"^NO_HEALTHY_UPSTREAM cluster app \(listener ingress\): 0 of 2 "
                               r"addresses healthy: 127\.0\.0\.1:\d+ NOT_SERVING; "
                               r"127\.0\.0\.1:\d+ NOT_SERVING\n$")
        self.assertEqual(self.cluster_stat(proxy, "endpoints_unhealthy"), 2)
        # None healthy: panic routing sends to both rather than failing everything.
        call(stub, 20)
        self.assertEqual((a.unary_calls(), b.unary_calls()), (20, 40))
        self.assertEqual(self.cluster_stat(proxy, "upstream_rq_panic_total"), 20)

        a.set_health(True)
        self.ready_when(proxy, lambda s, _: s == 200, "a healthy again")
        call(stub, 20)
        self.assertEqual((a.unary_calls(), b.unary_calls()), (40, 40))
        self.assertGreater(self.cluster_stat(proxy, "health_check_success_total"), 0)
        self.assertGreater(self.cluster_stat(proxy, "health_check_failure_total"), 0)

    def test_an_unknown_service_and_a_frozen_upstream_fail_their_checks_with_the_reason(self):
        up = self.start_upstream()
        config = sluice_config(up.port, workers=1)
        config["clusters"][0]["health_check"] = dict(HEALTH, service="pkg.Missing")
        proxy = self.start_sluice(config)
        self.ready_when(proxy, lambda s, b: s == 503 and re.search(
            r"127\.0\.0\.1:\d+ grpc-status 5 \(NOT_FOUND\)", b), "NOT_FOUND for an unknown service")
        up.set_health(True, service="pkg.Missing")
        self.ready_when(proxy, lambda s, _: s == 200, "the service to be known and serving")
        up.set_health(False, service="pkg.Missing")
        self.ready_when(proxy, lambda s, b: s == 503 and "NOT_SERVING" in b, "NOT_SERVING")
        up.set_health(True, service="pkg.Missing")
        self.ready_when(proxy, lambda s, _: s == 200, "serving again")
        up.signal(signal.SIGSTOP)
        try:
            self.ready_when(proxy, lambda s, b: s == 503 and "timeout after 500ms" in b,
                            "a frozen upstream's checks to time out")
        finally:
            up.signal(signal.SIGCONT)
        self.ready_when(proxy, lambda s, _: s == 200, "the thawed upstream to pass again")


if __name__ == "__main__":
    unittest.main()
