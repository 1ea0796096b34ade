"""Live reload of listeners (issue 15) through the real binary: a listener moved to a new port
serves its open connections on the old one until they have drained while new connections reach
the new port; an added listener serves at once; a removed one drains with no failed call (and
past drain_timeout ends its streams, counted); a reload whose new listener cannot bind changes
nothing; a renamed listener takes over its address; a listener pointed at another cluster sends
the next calls there; a certificate rotated in place reaches new connections. No other
listener's connection is touched by any of these."""

import json
import os
import signal
import socket
import ssl
import time
import unittest

import grpc

import harness
import raw_h2
from harness import LOOPBACK
from hardening_support import sanitized
import sluice_test_pb2 as pb
from test_reload import Load, ReloadTestCase, admin_post, open_fds
from test_tls import Certificates, openssl

MAX_STREAM_ID = 2**31 - 1


def held(seconds):
    return pb.Request(service_time=harness.service_time(seconds))


class ListenerReloadTestCase(ReloadTestCase):
    TEST_TIMEOUT = 60

    def start_sluice(self, config, name="sluice", extra_args=()):
        sluice = super().start_sluice(config, name, extra_args)
        self.addCleanup(self.assert_no_sanitizer_report, sluice)
        return sluice

    def assert_no_sanitizer_report(self, sluice):
        """Under scripts/test-sanitizers.sh (TSAN_INTEGRATION=test_reload_listeners): a report
        fails the test; runs before the harness kills sluice."""
        log = sluice.stderr()
        for marker in ("ERROR: AddressSanitizer", "runtime error:", "WARNING: ThreadSanitizer"):
            if marker in log:
                self.fail(f"sluice reported a sanitizer error:\n{log[log.index(marker):][:4000]}")

    def two_listeners(self, upstream, **overrides):
        """"ingress" and "side", both on ephemeral ports, to cluster "app"."""
        config = self.config(upstream, [], **overrides)
        config["listeners"].append({"name": "side", "address": f"{LOOPBACK}:0",
                                    "cluster": "app"})
        return config

    def ready_file(self, sluice):
        with open(os.path.join(self.tmpdir, f"{sluice.name}.ready.json")) as f:
            return json.load(f)

    def listener_ports(self, sluice):
        """Bound port per listener, from /server_info; the ready file must agree."""
        ports = self.server_info(sluice)["listeners"]
        self.assertEqual(self.ready_file(sluice)["listeners"], ports)
        return ports

    def raw_call(self, conn, stream_id, seconds):
        """A Unary call on a raw HTTP/2 connection whose upstream service takes `seconds`."""
        conn.request(stream_id, raw_h2.grpc_request_headers(),
                     raw_h2.grpc_message(held(seconds).SerializeToString()))

    def assert_completed(self, conn, stream_id):
        blocks = conn.response_headers(stream_id)
        self.assertTrue(conn.stream_ended(stream_id), conn.describe())
        self.assertEqual(blocks[-1].get("grpc-status"), "0", blocks)

    def assert_untouched(self, sluice, stub, listener="side"):
        """`stub`'s connection to `listener`, opened before the reload, still serves and is the
        only one that listener ever accepted."""
        stub.Unary(pb.Request(), timeout=5)
        stats = self.stats(sluice)
        self.assertEqual(stats[f"listener.{listener}.downstream_cx_total"], 1)
        self.assertEqual(stats[f"listener.{listener}.downstream_cx_active"], 1)


class MovedListenerTest(ListenerReloadTestCase):
    def test_a_moved_listener_serves_its_open_connection_until_drained_and_new_ones_at_the_new_port(
            self):
        upstream = self.start_upstream()
        config = self.two_listeners(upstream)
        sluice = self.start_sluice(config)
        old_port = sluice.port
        side = self.stub(sluice.listeners["side"])
        side.Unary(pb.Request(), timeout=5)
        # One gRPC connection with calls in flight across the move, and a raw one to see frames.
        client = self.stub(old_port)
        client.Unary(pb.Request(), timeout=5)
        in_flight = [client.Unary.future(held(1.5), timeout=10) for _ in range(3)]
        raw = raw_h2.RawH2(old_port)
        self.addCleanup(raw.close)
        raw.handshake()
        harness.wait_for(lambda: upstream.stats().in_flight == 3, 5, what="3 calls upstream")

        new_port = harness.closed_port()
        config["listeners"][0]["address"] = f"{LOOPBACK}:{new_port}"
        answer = self.reload(sluice, config)
        moved_at = time.monotonic()
        # The open connection still takes a new call (before the final GOAWAY, about a second
        # after the move) and serves it.
        self.raw_call(raw, 1, 1.5)
        self.assertEqual(answer["changes"], [f'listeners[0] ("ingress").address: '
                                             f'"{LOOPBACK}:0" -> "{LOOPBACK}:{new_port}"'])
        # The old sockets are closed when the reload answers; the new port serves.
        self.assertTrue(harness.connect_refused(old_port), "the old port still accepts")
        self.assertEqual(self.listener_ports(sluice), {"ingress": new_port,
                                                       "side": sluice.listeners["side"]})
        self.assertEqual(json.loads(sluice.admin_get("/config_dump")[1])["listeners"][0]
                         ["address"], f"{LOOPBACK}:{new_port}")
        fresh = self.stub(new_port)
        fresh.Unary(pb.Request(), timeout=5)
        raw.wait_closed(10)
        self.assert_completed(raw, 1)
        goaways = raw.goaways()
        self.assertEqual([g.last_stream_id for g in goaways], [MAX_STREAM_ID, 1], raw.describe())
        self.assertEqual([g.error_code for g in goaways], [0, 0])
        for call in in_flight:
            call.result()
        drained_in = time.monotonic() - moved_at
        harness.wait_for(
            lambda: self.stats(sluice)["listener.ingress.downstream_cx_active"] == 1, 5,
            what="the old connections to close")
        stats = self.stats(sluice)
        # Its stats continued under its name: 2 old connections + 1 new.
        self.assertEqual(stats["listener.ingress.downstream_cx_total"], 3)
        self.assertEqual(stats["listener.ingress.downstream_rq_completed_total"], 6)
        self.assertEqual(stats["listener.ingress.downstream_rq_drained_total"], 0)
        self.assertIn("listener 'ingress' (moved to", sluice.stderr())
        self.assert_untouched(sluice, side)
        fresh.Unary(pb.Request(), timeout=5)
        print(f"\nmoved: 4 calls in flight on the old port finished, drained in "
              f"{drained_in:.2f}s; GOAWAYs {[g.last_stream_id for g in goaways]}")


class AddedListenerTest(ListenerReloadTestCase):
    def test_an_added_listener_serves_at_once_and_the_ready_file_names_its_port(self):
        upstream = self.start_upstream(delay="5ms")
        config = self.config(upstream, [])
        sluice = self.start_sluice(config)
        load = Load(self.stub(sluice.port), 4)
        try:
            config["listeners"].append({
                "name": "second", "address": f"{LOOPBACK}:0", "cluster": "app",
                "filters": [{"type": "fixed_semaphore", "max_concurrency": 2}]})
            answer = self.reload(sluice, config)
            self.assertEqual(answer["changes"], [f'listeners: "second" added on {LOOPBACK}:0'])
            ports = self.listener_ports(sluice)
            self.assertEqual(set(ports), {"ingress", "second"})
            self.assertNotEqual(ports["second"], 0)
            self.assertEqual(ports["ingress"], sluice.port)
            second = self.stub(ports["second"])
            for _ in range(5):
                second.Unary(pb.Request(), timeout=5)
            self.assertEqual(self.limits(sluice, "fixed_semaphore")["listener"], "second")
            after = load.count()
            harness.wait_for(lambda: load.count() >= after + 20, 5, what="calls after the reload")
        finally:
            ok, failures = load.stop()
        self.assertEqual(failures, [])
        stats = self.stats(sluice)
        self.assertEqual(stats["listener.second.downstream_rq_completed_total"], 5)
        self.assertEqual(stats["filter.second.fixed_semaphore.admitted_total"], 5)
        self.assertEqual(stats["listener.ingress.downstream_cx_total"], 1)
        self.assertEqual(stats["listener.ingress.downstream_cx_active"], 1)

    def test_a_listener_added_after_post_drain_does_not_accept_either(self):
        upstream = self.start_upstream()
        config = self.config(upstream, [])
        sluice = self.start_sluice(config)
        self.assertEqual(admin_post(sluice, "/drain")[0], 200)
        harness.wait_for(lambda: harness.connect_refused(sluice.port), 5, what="the drain")
        config["listeners"].append({"name": "late", "address": f"{LOOPBACK}:0",
                                    "cluster": "app"})
        self.reload(sluice, config)
        port = self.listener_ports(sluice)["late"]
        harness.wait_for(lambda: harness.connect_refused(port), 5, what="the late port to close")
        self.assertEqual(self.stats(sluice)["listener.late.downstream_cx_total"], 0)


class RemovedListenerTest(ListenerReloadTestCase):
    def test_a_removed_listener_drains_with_no_failed_call_and_its_stats_stay(self):
        upstream = self.start_upstream(delay="5ms")
        config = self.two_listeners(upstream)
        sluice = self.start_sluice(config)
        side_port = sluice.listeners["side"]
        removed = self.stub(side_port)
        removed.Unary(pb.Request(), timeout=5)
        in_flight = [removed.Unary.future(held(1.5), timeout=10) for _ in range(4)]
        harness.wait_for(lambda: upstream.stats().in_flight == 4, 5, what="4 calls upstream")
        load = Load(self.stub(sluice.port), 4)
        try:
            del config["listeners"][1]
            answer = self.reload(sluice, config)
            self.assertEqual(answer["changes"],
                             [f'listeners: "side" removed from {LOOPBACK}:0'])
            self.assertTrue(harness.connect_refused(side_port), "the removed port still accepts")
            self.assertEqual(self.listener_ports(sluice), {"ingress": sluice.port})
            results = [call.result() for call in in_flight]  # raises on a failed call
            after = load.count()
            harness.wait_for(lambda: load.count() >= after + 20, 5, what="calls after the reload")
            harness.wait_for(
                lambda: self.stats(sluice)["listener.side.downstream_cx_active"] == 0, 5,
                what="the removed listener's connection to close")
        finally:
            ok, failures = load.stop()
        self.assertEqual(len(results), 4)
        self.assertEqual(failures, [])
        self.assertGreater(ok, 20)
        stats = self.stats(sluice)
        # Frozen, not gone.
        self.assertEqual(stats["listener.side.downstream_rq_completed_total"], 5)
        self.assertEqual(stats["listener.side.downstream_rq_drained_total"], 0)
        self.assertEqual(stats["listener.ingress.downstream_cx_total"], 1)
        self.assertEqual(stats["listener.ingress.downstream_cx_active"], 1)
        harness.wait_for(lambda: "listener 'side' (removed): drained in" in sluice.stderr(), 5,
                         what="the drain to be logged")

    def test_streams_still_open_at_drain_timeout_end_unavailable_and_are_counted(self):
        upstream = self.start_upstream()
        config = self.two_listeners(upstream, drain_timeout="1s")
        sluice = self.start_sluice(config)
        side = self.stub(sluice.port)
        side.Unary(pb.Request(), timeout=5)
        removed = self.stub(sluice.listeners["side"])
        slow = removed.Unary.future(held(20), timeout=30)
        harness.wait_for(lambda: upstream.stats().in_flight == 1, 5, what="the slow call")
        del config["listeners"][1]
        start = time.monotonic()
        self.reload(sluice, config)
        with self.assertRaises(grpc.RpcError) as cm:
            slow.result()
        ended_after = time.monotonic() - start
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(cm.exception.details(),
                         "sluice listener 'side' removed (drain timeout)")
        self.assertGreaterEqual(ended_after, 0.9)
        self.assertLess(ended_after, 5)
        harness.wait_for(
            lambda: self.stats(sluice)["listener.side.downstream_cx_active"] == 0, 5,
            what="the connection to close")
        stats = self.stats(sluice)
        self.assertEqual(stats["listener.side.downstream_rq_drained_total"], 1)
        self.assert_untouched(sluice, side, listener="ingress")


class BindFailureTest(ListenerReloadTestCase):
    def test_a_reload_whose_new_listener_cannot_bind_is_refused_and_nothing_changes(self):
        upstream = self.start_upstream(delay="20ms")
        config = self.two_listeners(upstream)
        config["listeners"][0]["filters"] = [{"type": "fixed_semaphore", "max_concurrency": 3}]
        sluice = self.start_sluice(config)
        side = self.stub(sluice.listeners["side"])
        side.Unary(pb.Request(), timeout=5)
        ready_before = self.ready_file(sluice)
        version = self.server_info(sluice)["config"]["version"]
        taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # no SO_REUSEPORT
        self.addCleanup(taken.close)
        taken.bind((LOOPBACK, 0))
        taken.listen(1)
        taken_port = taken.getsockname()[1]
        free_port = harness.closed_port()
        load = Load(self.stub(sluice.port), 10)
        try:
            changed = json.loads(json.dumps(config))
            changed["listeners"][0]["filters"][0]["max_concurrency"] = 6
            # Moved first (bound), then a new listener that cannot bind: both undone.
            changed["listeners"][1]["address"] = f"{LOOPBACK}:{free_port}"
            changed["listeners"].append({"name": "blocked", "address": f"{LOOPBACK}:{taken_port}",
                                         "cluster": "app"})
            answer = self.reload(sluice, changed, expect=400)
            self.assertFalse(answer["ok"])
            self.assertFalse(answer["needs_restart"])
            self.assertEqual(answer["error"],
                             f"cannot apply the configuration (nothing changed): listener "
                             f"'blocked': cannot listen on {LOOPBACK}:{taken_port}: Address "
                             f"already in use")
            self.assertTrue(harness.connect_refused(free_port), "the moved listener stayed bound")
            self.assertEqual(self.ready_file(sluice), ready_before)
            self.assertEqual(self.listener_ports(sluice), ready_before["listeners"])
            info = self.server_info(sluice)["config"]
            self.assertEqual(info["version"], version)
            self.assertEqual(info["last_reload"]["error"], answer["error"])
            dump = json.loads(sluice.admin_get("/config_dump")[1])
            self.assertEqual([entry["name"] for entry in dump["listeners"]], ["ingress", "side"])
            # The old limit keeps being enforced.
            self.assertEqual(self.limits(sluice, "fixed_semaphore")["limit"], 3)
            self.assertEqual(self.measure_concurrency(upstream), 3)
        finally:
            ok, failures = load.stop()
        self.assertEqual(failures, [])
        self.assertGreater(ok, 50)
        stats = self.stats(sluice)
        self.assertEqual(stats["server.config_reload_failed_total"], 1)
        self.assertNotIn("listener.blocked.downstream_cx_total", stats)
        self.assertEqual(stats["listener.ingress.downstream_cx_total"], 1)
        self.assert_untouched(sluice, side)


class RenamedListenerTest(ListenerReloadTestCase):
    def test_a_renamed_listener_takes_over_its_address_and_the_old_name_drains(self):
        upstream = self.start_upstream()
        port = harness.closed_port()
        config = self.two_listeners(upstream)
        config["listeners"][0]["address"] = f"{LOOPBACK}:{port}"
        sluice = self.start_sluice(config)
        side = self.stub(sluice.listeners["side"])
        side.Unary(pb.Request(), timeout=5)
        old = self.stub(port)
        old.Unary(pb.Request(), timeout=5)
        in_flight = old.Unary.future(held(1.0), timeout=10)
        harness.wait_for(lambda: upstream.stats().in_flight == 1, 5, what="the call upstream")
        config["listeners"][0]["name"] = "front"
        answer = self.reload(sluice, config)
        self.assertEqual(answer["changes"], [f'listeners: "front" added on {LOOPBACK}:{port}',
                                             f'listeners: "ingress" removed from '
                                             f'{LOOPBACK}:{port}'])
        # The same port, served by the new name (bound before the old name's sockets closed).
        self.stub(port).Unary(pb.Request(), timeout=5)
        in_flight.result()
        self.assertEqual(self.listener_ports(sluice), {"front": port,
                                                       "side": sluice.listeners["side"]})
        harness.wait_for(
            lambda: self.stats(sluice)["listener.ingress.downstream_cx_active"] == 0, 5,
            what="the old name's connection to close")
        stats = self.stats(sluice)
        self.assertEqual(stats["listener.front.downstream_rq_completed_total"], 1)
        self.assertEqual(stats["listener.ingress.downstream_rq_completed_total"], 2)
        self.assert_untouched(sluice, side)


class ClusterChangeTest(ListenerReloadTestCase):
    def test_a_listener_pointed_at_another_cluster_sends_the_next_calls_there(self):
        first = self.start_upstream(name="first", delay="5ms")
        second = self.start_upstream(name="second", delay="5ms")
        config = self.config(first, [])
        config["clusters"].append({"name": "other", "endpoints": [second.address]})
        sluice = self.start_sluice(config)
        load = Load(self.stub(sluice.port), 4)
        try:
            harness.wait_for(lambda: load.count() >= 20, 5, what="calls to the first upstream")
            config["listeners"][0]["cluster"] = "other"
            answer = self.reload(sluice, config)
            self.assertEqual(answer["changes"],
                             ['listeners[0] ("ingress").cluster: "app" -> "other"'])
            time.sleep(0.1)  # calls admitted before the reload finish on the first upstream
            first.reset_stats()
            second.reset_stats()
            harness.wait_for(lambda: second.stats().calls_finished >= 20, 5,
                             what="calls to the second upstream")
        finally:
            ok, failures = load.stop()
        self.assertEqual(failures, [])
        self.assertEqual(first.stats().calls_finished, 0)
        stats = self.stats(sluice)
        self.assertGreater(stats["cluster.other.upstream_rq_total"], 20)
        self.assertEqual(stats["listener.ingress.downstream_cx_total"], 1, "one connection")
        self.assertEqual(stats["listener.ingress.downstream_cx_active"], 1, "it survived")


class CertificateRotationTest(ListenerReloadTestCase):
    """The certificate and key live in a directory laid out as kubelet mounts a Secret:
    tls/live -> a versioned directory; an update swaps the symlink, so both files change at
    once."""

    def setUp(self):
        super().setUp()
        self.certs = Certificates(self.tmpdir)
        self.tls_dir = os.path.join(self.tmpdir, "tls")
        os.makedirs(self.tls_dir)
        self.versions = 0
        self.publish(self.certs.read("server.pem"), self.certs.read("server.key"))

    def publish(self, cert, key):
        self.versions += 1
        version = f"v{self.versions}"
        os.makedirs(os.path.join(self.tls_dir, version))
        for name, data in (("server.pem", cert), ("server.key", key)):
            with open(os.path.join(self.tls_dir, version, name), "wb") as f:
                f.write(data)
        tmp = os.path.join(self.tls_dir, "live.tmp")
        os.symlink(version, tmp)
        os.replace(tmp, os.path.join(self.tls_dir, "live"))

    def live(self, name):
        return os.path.join(self.tls_dir, "live", name)

    def rotate(self, ca):
        """A new key and certificate for localhost signed by `ca` (ca.pem or other-ca.pem)."""
        d = self.certs.dir
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        openssl("req", *ec, "-keyout", "next.key", "-out", "next.csr", "-subj", "/CN=localhost",
                cwd=d)
        openssl("x509", "-req", "-in", "next.csr", "-CA", ca, "-CAkey",
                ca.replace(".pem", ".key"), "-set_serial", "0x" + os.urandom(8).hex(),
                "-days", "2", "-extfile", "server.ext", "-out", "next.pem", cwd=d)
        self.publish(self.certs.read("next.pem"), self.certs.read("next.key"))

    def served_certificate(self, port):
        """The DER certificate sluice presents to a new connection (ALPN h2, not verified)."""
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.set_alpn_protocols(["h2"])
        with socket.create_connection((LOOPBACK, port), timeout=5) as s:
            with context.wrap_socket(s, server_hostname="localhost") as tls:
                return tls.getpeercert(binary_form=True)

    def live_certificate(self):
        with open(self.live("server.pem")) as f:
            return ssl.PEM_cert_to_DER_cert(f.read())

    def tls_stub(self, port, ca):
        channel = grpc.secure_channel(
            f"{LOOPBACK}:{port}",
            grpc.ssl_channel_credentials(root_certificates=self.certs.read(ca)),
            options=[("grpc.ssl_target_name_override", "localhost"),
                     ("grpc.enable_http_proxy", 0)])
        self.addCleanup(channel.close)
        return pb_stub(channel)

    def test_a_certificate_rotated_in_place_reaches_new_connections_and_open_ones_keep_theirs(
            self):
        upstream = self.start_upstream()
        config = self.two_listeners(upstream)
        config["listeners"][0]["tls"] = {"cert": self.live("server.pem"),
                                         "key": self.live("server.key")}
        sluice = self.start_sluice(config)
        side = self.stub(sluice.listeners["side"])
        side.Unary(pb.Request(), timeout=5)
        first = self.live_certificate()
        self.assertEqual(self.served_certificate(sluice.port), first)
        old = self.tls_stub(sluice.port, "ca.pem")
        old.Unary(pb.Request(), timeout=5)

        # SIGHUP with the same config file: the files are read again.
        self.rotate("other-ca.pem")
        second = self.live_certificate()
        self.assertNotEqual(second, first)
        sluice.signal(signal.SIGHUP)
        reload = harness.wait_for(
            lambda: self.server_info(sluice)["config"]["last_reload"], 5, what="the reload")
        self.assertTrue(reload["ok"], reload)
        self.assertEqual(reload["changes"], [
            f'listeners[0] ("ingress").tls: new certificate or key file content '
            f'({self.live("server.pem")})'])
        self.assertEqual(self.served_certificate(sluice.port), second)
        self.tls_stub(sluice.port, "other-ca.pem").Unary(pb.Request(), timeout=5)
        with self.assertRaises(grpc.RpcError):  # the old CA does not vouch for the new one
            self.tls_stub(sluice.port, "ca.pem").Unary(pb.Request(), timeout=5)
        # The connection made under the first certificate goes on (a new one would fail).
        old.Unary(pb.Request(), timeout=5)

        # watch_config: a rotation alone (the config file unchanged) is seen within seconds.
        config["watch_config"] = True
        self.assertEqual(self.reload(sluice, config)["changes"], ["watch_config: false -> true"])
        self.rotate("ca.pem")
        third = self.live_certificate()
        harness.wait_for(lambda: self.served_certificate(sluice.port) == third, 5,
                         what="the watch to load the third certificate")
        info = self.server_info(sluice)["config"]["last_reload"]
        self.assertEqual(info["trigger"], "watch")
        self.assertTrue(info["ok"], info)
        stats = self.stats(sluice)
        self.assertEqual(stats["server.config_reload_total"], 3)
        self.assertEqual(stats["server.config_reload_failed_total"], 0)
        self.assert_untouched(sluice, side)


class ChurnTest(ListenerReloadTestCase):
    def test_listeners_added_and_removed_80_times_under_load_leave_fds_and_rss_flat(self):
        upstream = self.start_upstream(delay="2ms")
        config = self.config(upstream, [], drain_timeout="200ms")
        sluice = self.start_sluice(config)
        with_extra = json.loads(json.dumps(config))
        with_extra["listeners"].append({
            "name": "extra", "address": f"{LOOPBACK}:0", "cluster": "app",
            "filters": [{"type": "fixed_semaphore", "max_concurrency": 4}]})
        load = Load(self.stub(sluice.port), 4)

        def cycle():
            self.reload(sluice, with_extra)
            channel = harness.make_channel(self.listener_ports(sluice)["extra"])
            try:
                pb_stub(channel).Unary(pb.Request(), timeout=5)
                self.reload(sluice, config)  # removed with its connection open: drained
                harness.wait_for(
                    lambda: self.stats(sluice)["listener.extra.downstream_cx_active"] == 0, 5,
                    what="the removed listener to drain")
            finally:
                channel.close()

        try:
            for _ in range(40):  # warm up: allocator pools, every stat registered
                cycle()
            time.sleep(0.3)
            rss_before, fds_before = sluice.rss_bytes(), open_fds(sluice.pid)
            start = time.monotonic()
            for _ in range(40):
                cycle()
            elapsed = time.monotonic() - start
            time.sleep(0.3)
            rss_after, fds_after = sluice.rss_bytes(), open_fds(sluice.pid)
        finally:
            ok, failures = load.stop()
        print(f"\n40 add/remove cycles in {elapsed:.1f}s under load ({ok} calls): fds "
              f"{fds_before} -> {fds_after}, RSS {rss_before / 2**20:.2f} -> "
              f"{rss_after / 2**20:.2f} MiB")
        self.assertEqual(failures, [])
        stats = self.stats(sluice)
        self.assertEqual(stats["listener.extra.downstream_rq_completed_total"], 80)
        self.assertEqual(stats["listener.ingress.downstream_cx_total"], 1)
        self.assertEqual(stats["server.config_reload_total"], 160)
        self.assertEqual(fds_after, fds_before)
        if not sanitized(sluice.pid):  # a sanitizer's shadow memory moves RSS on its own
            self.assertLess(rss_after - rss_before, 1 << 20, (rss_before, rss_after))


def pb_stub(channel):
    import sluice_test_pb2_grpc as pb_grpc

    return pb_grpc.TestServiceStub(channel)


if __name__ == "__main__":
    unittest.main()
