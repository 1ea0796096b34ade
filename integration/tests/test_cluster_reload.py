"""Clusters changed by a live reload (issue 15): endpoints swapped and removed, connection
settings changed, clusters added and removed, under load from one gRPC client connection.
Calls in flight finish on the connections they started on; new calls use the new cluster; no
call fails and the client's connection survives."""

import time
import unittest

import harness
from harness import service_time, sluice_config
import sluice_test_pb2 as pb
from test_reload import Load, ReloadTestCase


def cluster_stat(stats, cluster, leaf):
    return stats.get(f"cluster.{cluster}.{leaf}", 0)


class ClusterReloadTest(ReloadTestCase):

    TEST_TIMEOUT = 60

    def config(self, *upstreams, **cluster):
        config = sluice_config(upstreams[0].port, workers=2)
        config["clusters"][0]["endpoints"] = [u.address for u in upstreams]
        config["clusters"][0].update(cluster)
        return config

    def downstream_connections(self, proxy):
        return self.stats(proxy)["listener.ingress.downstream_cx_total"]

    def test_an_endpoint_changed_under_load_fails_no_call_and_keeps_the_connection(self):
        a = self.start_upstream(name="upstream-a", delay="2ms")
        b = self.start_upstream(name="upstream-b", delay="2ms")
        proxy = self.start_sluice(self.config(a))
        load = Load(self.stub(proxy.port), callers=8)
        try:
            harness.wait_for(lambda: load.count() > 200, 10, what="load through a")
            answer = self.reload(proxy, self.config(b))
            self.assertIn('clusters[0] ("app").endpoints', " ".join(answer["changes"]))
            # From now on every new call goes to b; a only finishes what it had.
            harness.wait_for(lambda: b.unary_calls() > 0, 5, what="calls on b")
            a_after = a.unary_calls()
            before = load.count()
            harness.wait_for(lambda: load.count() > before + 300, 10, what="load through b")
            self.assertEqual(a.unary_calls(), a_after)
        finally:
            ok, failures = load.stop()
        self.assertEqual(failures, [])
        self.assertGreater(ok, 500)
        self.assertGreater(b.unary_calls(), 300)
        self.assertEqual(self.downstream_connections(proxy), 1)  # the client never reconnected
        stats = self.stats(proxy)
        self.assertGreaterEqual(cluster_stat(stats, "app", "upstream_cx_drain_total"), 1)
        self.assertEqual(cluster_stat(stats, "app", "endpoints"), 1)
        # a's connections closed once drained.
        harness.wait_for(lambda: a.stats().in_flight == 0, 5, what="a idle")

    def test_an_endpoint_removed_by_reload_drains_and_its_calls_in_flight_finish(self):
        a = self.start_upstream(name="upstream-a")
        b = self.start_upstream(name="upstream-b")
        config = self.config(a, b)
        config["workers"] = 1
        proxy = self.start_sluice(config)
        stub = self.stub(proxy.port)
        held = [stub.Unary.future(pb.Request(service_time=service_time(2.0)), timeout=20)
                for _ in range(4)]
        harness.wait_for(lambda: a.stats().in_flight == 2 and b.stats().in_flight == 2, 5,
                         what="two held calls on each endpoint")
        config["clusters"][0]["endpoints"] = [b.address]
        self.reload(proxy, config)
        a_before = a.unary_calls()
        for _ in range(10):
            stub.Unary(pb.Request(), timeout=5)
        self.assertEqual(a.unary_calls(), a_before, "a new call went to the removed endpoint")
        self.assertEqual(a.stats().in_flight, 2, "the removed endpoint's calls were cut")
        for f in held:
            f.result()  # all four finish OK, the two on a included
        stats = self.stats(proxy)
        self.assertEqual(cluster_stat(stats, "app", "upstream_cx_drain_total"), 1)
        self.assertEqual(cluster_stat(stats, "app", "endpoints_removed_total"), 1)
        harness.wait_for(
            lambda: cluster_stat(self.stats(proxy), "app", "upstream_cx_active") == 1, 5,
            what="the drained connection to a to close")

    def test_changed_connection_settings_get_new_connections_and_the_old_drain(self):
        up = self.start_upstream(delay="2ms")
        proxy = self.start_sluice(self.config(up))
        load = Load(self.stub(proxy.port), callers=8)
        try:
            harness.wait_for(lambda: load.count() > 200, 10, what="load")
            opened = cluster_stat(self.stats(proxy), "app", "upstream_cx_total")
            changed = self.config(up, http2={"initial_stream_window": "1MiB"},
                                  keepalive={"interval": "5s"})
            answer = self.reload(proxy, changed)
            self.assertEqual(len(answer["changes"]), 2, answer["changes"])
            before = load.count()
            harness.wait_for(lambda: load.count() > before + 300, 10, what="load after")
            # A reload that changes only pool-level settings keeps the connections.
            self.reload(proxy, self.config(up, http2={"initial_stream_window": "1MiB"},
                                           keepalive={"interval": "5s"},
                                           max_connections_per_endpoint=8,
                                           max_stream_duration="30s"))
            stats = self.stats(proxy)
            drained = cluster_stat(stats, "app", "upstream_cx_drain_total")
            total = cluster_stat(stats, "app", "upstream_cx_total")
            before = load.count()
            harness.wait_for(lambda: load.count() > before + 300, 10, what="load at the end")
        finally:
            ok, failures = load.stop()
        self.assertEqual(failures, [])
        self.assertGreater(total, opened)  # new connections with the new settings
        self.assertGreaterEqual(drained, 1)
        stats = self.stats(proxy)
        self.assertEqual(cluster_stat(stats, "app", "upstream_cx_drain_total"), drained)
        self.assertEqual(cluster_stat(stats, "app", "upstream_cx_total"), total)
        self.assertEqual(self.downstream_connections(proxy), 1)

    def test_a_cluster_added_and_removed_by_reload(self):
        up = self.start_upstream()
        spare = self.start_upstream(name="spare")
        config = self.config(up)
        proxy = self.start_sluice(config)
        stub = self.stub(proxy.port)
        stub.Unary(pb.Request(), timeout=5)
        config["clusters"].append({"name": "spare", "endpoints": [spare.address],
                                   "health_check": {"interval": "100ms"}})
        answer = self.reload(proxy, config)
        self.assertEqual(answer["changes"], ['clusters: "spare" added'])
        # Its checker runs on its own (it has no listener yet); ready follows listeners only.
        harness.wait_for(
            lambda: cluster_stat(self.stats(proxy), "spare", "endpoints_healthy") == 1, 5,
            what="the new cluster's endpoint checked healthy")
        config["clusters"].pop()
        answer = self.reload(proxy, config)
        self.assertEqual(answer["changes"], ['clusters: "spare" removed'])
        stats = self.stats(proxy)
        self.assertEqual(cluster_stat(stats, "spare", "endpoints"), 0)
        checks = cluster_stat(stats, "spare", "health_check_success_total")
        time.sleep(0.5)
        self.assertEqual(  # its checks stopped
            cluster_stat(self.stats(proxy), "spare", "health_check_success_total"), checks)
        stub.Unary(pb.Request(), timeout=5)
        self.assertEqual(self.downstream_connections(proxy), 1)
        # Added back under the same name: it works again.
        config["clusters"].append({"name": "spare", "endpoints": [spare.address]})
        self.reload(proxy, config)
        self.assertEqual(cluster_stat(self.stats(proxy), "spare", "endpoints"), 1)

    def test_a_listener_moved_to_a_cluster_added_in_the_same_reload_serves_there(self):
        # The new cluster is committed before the listener's new snapshot: the first call after
        # the reload's answer already finds it.
        up = self.start_upstream(name="upstream-app")
        other = self.start_upstream(name="upstream-other")
        config = self.config(up)
        proxy = self.start_sluice(config)
        stub = self.stub(proxy.port)
        stub.Unary(pb.Request(), timeout=5)
        config["clusters"].append({"name": "other", "endpoints": [other.address]})
        config["listeners"][0]["cluster"] = "other"
        answer = self.reload(proxy, config)
        self.assertIn('clusters: "other" added', answer["changes"])
        self.assertIn('listeners[0] ("ingress").cluster: "app" -> "other"', answer["changes"])
        app_calls = up.unary_calls()
        for _ in range(5):
            stub.Unary(pb.Request(), timeout=5)
        self.assertEqual(other.unary_calls(), 5)
        self.assertEqual(up.unary_calls(), app_calls)
        self.assertEqual(self.downstream_connections(proxy), 1)


if __name__ == "__main__":
    unittest.main()
