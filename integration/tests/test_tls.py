"""TLS end to end (issue 6, "TLS"): a CA and certificates made with the openssl CLI for each
test; sluice's listener speaking TLS to real gRPC clients (grpc++ sluice-test-client and
/usr/bin/python3 grpcio), a bad certificate, a client that never finishes its handshake, and
TLS to the upstream (sluice-test-upstream --tls-cert/--tls-key) with CA and name checks."""

import os
import socket
import ssl
import subprocess
import time

import grpc

from hardening_support import HardeningTestCase, GoodClient, listener_config
import raw_h2
import sluice_test_pb2 as pb
import sluice_test_pb2_grpc as pb_grpc


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


class Certificates:
    """A CA, a server certificate it signed for localhost and 127.0.0.1, and a second CA that
    signed nothing we serve (the "wrong CA")."""

    def __init__(self, directory):
        self.dir = directory
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
                "-subj", "/CN=sluice test CA", cwd=directory)
        openssl("req", "-x509", *ec, "-keyout", "other-ca.key", "-out", "other-ca.pem",
                "-days", "2", "-subj", "/CN=some other CA", cwd=directory)
        openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr",
                "-subj", "/CN=localhost", cwd=directory)
        with open(os.path.join(directory, "server.ext"), "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                    "basicConstraints=CA:FALSE\n"
                    "keyUsage=digitalSignature,keyEncipherment\n"
                    "extendedKeyUsage=serverAuth\n")
        openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-set_serial", "0x" + os.urandom(8).hex(), "-days", "2",
                "-extfile", "server.ext", "-out", "server.pem", cwd=directory)

    def path(self, name):
        return os.path.join(self.dir, name)

    def read(self, name):
        with open(self.path(name), "rb") as f:
            return f.read()


class TlsTestCase(HardeningTestCase):

    def setUp(self):
        super().setUp()
        self.certs = Certificates(self.tmpdir)

    def listener_tls(self, **extra):
        return {"cert": self.certs.path("server.pem"), "key": self.certs.path("server.key"),
                **extra}

    def start_tls_pair(self, limits=None, upstream_flags=None, **config_kw):
        return self.start_pair(limits=limits, upstream_flags=upstream_flags,
                               tls=self.listener_tls(), **config_kw)

    def tls_channel(self, port, ca="ca.pem"):
        credentials = grpc.ssl_channel_credentials(root_certificates=self.certs.read(ca))
        channel = grpc.secure_channel(f"127.0.0.1:{port}", credentials, options=[
            ("grpc.ssl_target_name_override", "localhost"),
            ("grpc.enable_http_proxy", 0),
        ])
        self.addCleanup(channel.close)
        return channel

    def tls_stub(self, port, ca="ca.pem"):
        return pb_grpc.TestServiceStub(self.tls_channel(port, ca))

    def grpcpp_call(self, port, *args, ca="ca.pem"):
        return self.run_test_client(["--target", f"127.0.0.1:{port}",
                                     "--tls-ca", self.certs.path(ca),
                                     "--tls-server-name", "localhost", *args])

    def raw_tls(self, port, alpn=("h2",), ciphers=None, **context_kw):
        """A TLS socket to sluice from Python's ssl module (for ALPN/version checks)."""
        ctx = ssl.create_default_context(cafile=self.certs.path("ca.pem"))
        if ciphers:
            ctx.set_ciphers(ciphers)
        if alpn:
            ctx.set_alpn_protocols(list(alpn))
        for key, value in context_kw.items():
            setattr(ctx, key, value)
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.addCleanup(sock.close)
        return ctx.wrap_socket(sock, server_hostname="localhost")


class DownstreamTlsTest(TlsTestCase):

    def test_grpcpp_client_over_tls(self):
        up, proxy = self.start_tls_pair()
        r = self.grpcpp_call(proxy.port, "--method", "unary", "--size", 100,
                             "--response-size", 2000)
        self.assertEqual((r["status_code"], r["bytes_received"]), (0, 2000), r)
        r = self.grpcpp_call(proxy.port, "--method", "bidi", "--count", 20, "--size", 5000)
        self.assertEqual((r["status_code"], r["messages_received"]), (0, 20), r)
        self.assertEqual(self.listener_stat(proxy, "downstream_cx_tls_error_total"), 0)
        self.assertEqual(up.stats().calls_started["unary"], 1)

    def test_python_grpcio_client_over_tls(self):
        up, proxy = self.start_tls_pair()
        stub = self.tls_stub(proxy.port)
        self.assertEqual(len(stub.Unary(pb.Request(response_size=300), timeout=5).payload), 300)
        seqs = [m.sequence for m in stub.ServerStream(
            pb.Request(response_count=50, response_size=4096), timeout=5)]
        self.assertEqual(seqs, list(range(50)))
        reqs = [pb.Request(payload=bytes([i]) * 20000) for i in range(10)]
        echoed = list(stub.Bidi(iter(reqs), timeout=5))
        self.assertEqual([r.payload for r in echoed], [r.payload for r in reqs])

    def test_tls_is_h2_over_alpn_tls12_or_newer(self):
        _, proxy = self.start_tls_pair()
        tls = self.raw_tls(proxy.port)
        self.assertEqual(tls.selected_alpn_protocol(), "h2")
        self.assertIn(tls.version(), ("TLSv1.2", "TLSv1.3"))
        # A TLS 1.2-only client still gets in, with a forward-secret AEAD suite.
        tls12 = self.raw_tls(proxy.port, maximum_version=ssl.TLSVersion.TLSv1_2)
        self.assertEqual(tls12.version(), "TLSv1.2")
        name, _, _ = tls12.cipher()
        self.assertRegex(name, r"^ECDHE-.*(GCM|CHACHA20)")
        # And it speaks HTTP/2 with us.
        tls12.sendall(raw_h2.PREFACE + raw_h2.frame(raw_h2.SETTINGS, 0, 0))
        self.assertEqual(tls12.recv(9)[3], raw_h2.SETTINGS)

    def test_clients_without_h2_alpn_or_below_tls12_are_refused(self):
        _, proxy = self.start_tls_pair()
        with self.assertRaises(ssl.SSLError):
            self.raw_tls(proxy.port, alpn=("http/1.1",))
        # SECLEVEL=0 lets this client offer TLS 1.1: the refusal is sluice's.
        with self.assertRaisesRegex(ssl.SSLError, "PROTOCOL_VERSION"):
            self.raw_tls(proxy.port, ciphers="DEFAULT:@SECLEVEL=0",
                         minimum_version=ssl.TLSVersion.TLSv1,
                         maximum_version=ssl.TLSVersion.TLSv1_1)
        self.wait_listener_stat(proxy, "downstream_cx_tls_error_total", at_least=2)

    def test_client_trusting_another_ca_fails_the_handshake_and_is_counted(self):
        up, proxy = self.start_tls_pair()
        with self.assertRaises(grpc.RpcError) as cm:
            self.tls_stub(proxy.port, ca="other-ca.pem").Unary(pb.Request(), timeout=3)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE)
        r = self.grpcpp_call(proxy.port, "--method", "unary", "--deadline", "3s",
                             ca="other-ca.pem")
        self.assertEqual(r["status_code"], 14, r)  # UNAVAILABLE
        self.wait_listener_stat(proxy, "downstream_cx_tls_error_total", at_least=2)
        self.assertEqual(sum(up.stats().calls_started.values()), 0)
        # A client with the right CA is served by the same listener.
        self.assertIsNotNone(self.tls_stub(proxy.port).Unary(pb.Request(), timeout=5))

    def test_client_that_never_finishes_the_handshake_is_closed_after_handshake_timeout(self):
        up, proxy = self.start_tls_pair(limits={"handshake_timeout": "500ms"})
        good = GoodClient(self.tls_stub(proxy.port)).start()
        self.addCleanup(good.stop)
        rss = proxy.rss_bytes()
        silent = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        self.addCleanup(silent.close)
        # Half a ClientHello: a record header promising more than is ever sent.
        half = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        self.addCleanup(half.close)
        half.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
        start = time.monotonic()
        for s in (silent, half):
            s.settimeout(5)
            try:
                self.assertEqual(s.recv(4096), b"", "sluice answered a half handshake")
            except ConnectionResetError:
                pass
        self.assertLess(time.monotonic() - start, 3)
        self.assertEqual(self.listener_stat(proxy, "downstream_cx_handshake_timeout_total"), 2)
        self.assert_good_client_served(good)
        self.assert_rss_bounded(proxy, rss)

    def test_plaintext_h2c_listener_stays_available_next_to_a_tls_one(self):
        up = self.start_upstream()
        config = listener_config(up.port, tls=self.listener_tls())
        plain = dict(config["listeners"][0], name="plain")
        del plain["tls"]
        config["listeners"].append(plain)
        proxy = self.start_sluice(config)
        self.assertIsNotNone(self.tls_stub(proxy.listeners["ingress"]).Unary(pb.Request(),
                                                                             timeout=5))
        self.assertIsNotNone(self.stub(proxy.listeners["plain"]).Unary(pb.Request(), timeout=5))
        # TLS bytes on the h2c listener, and h2c on the TLS one, are turned away cleanly.
        with self.assertRaises((ssl.SSLError, ConnectionError)):
            self.raw_tls(proxy.listeners["plain"])
        c = raw_h2.RawH2(proxy.listeners["ingress"])
        self.addCleanup(c.close)
        c.send(raw_h2.PREFACE + raw_h2.frame(raw_h2.SETTINGS, 0, 0))
        self.assertTrue(c.read_all(3), "the TLS listener kept a cleartext connection")
        self.assertEqual(up.stats().calls_started["unary"], 2)


class UpstreamTlsTest(TlsTestCase):

    def start_tls_upstream(self):
        return self.start_upstream(tls_cert=self.certs.path("server.pem"),
                                   tls_key=self.certs.path("server.key"))

    def start_with_cluster_tls(self, cluster_tls):
        up = self.start_tls_upstream()
        proxy = self.start_sluice(listener_config(up.port, cluster_tls=cluster_tls))
        return up, proxy

    def tls_upstream_stats(self, up):
        # harness's Upstream.stats() speaks h2c; this upstream wants TLS.
        return self.tls_stub(up.port).Stats(pb.StatsRequest(), timeout=5)

    def cluster_stat(self, proxy, leaf):
        return self.stats(proxy).get(f"cluster.app.{leaf}", 0)

    def test_upstream_tls_with_ca_and_sni(self):
        up, proxy = self.start_with_cluster_tls({"ca": self.certs.path("ca.pem"),
                                                 "sni": "localhost"})
        stub = self.stub(proxy.port)
        self.assertEqual(len(stub.Unary(pb.Request(response_size=100), timeout=5).payload), 100)
        r = self.run_test_client(["--target", f"127.0.0.1:{proxy.port}", "--method", "bidi",
                                  "--count", 10, "--size", 30000])
        self.assertEqual((r["status_code"], r["messages_received"]), (0, 10), r)
        self.assertEqual(self.tls_upstream_stats(up).calls_started["unary"], 1)
        self.assertEqual(self.cluster_stat(proxy, "upstream_cx_tls_error_total"), 0)

    def test_upstream_tls_verifies_an_ip_endpoint_against_the_ip_san(self):
        up, proxy = self.start_with_cluster_tls({"ca": self.certs.path("ca.pem")})
        self.assertIsNotNone(self.stub(proxy.port).Unary(pb.Request(), timeout=5))

    def test_upstream_certificate_from_another_ca_fails_verification(self):
        up, proxy = self.start_with_cluster_tls({"ca": self.certs.path("other-ca.pem"),
                                                 "sni": "localhost"})
        with self.assertRaises(grpc.RpcError) as cm:
            self.stub(proxy.port).Unary(pb.Request(), timeout=5)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE)
        self.assertIn("TLS handshake failed", cm.exception.details())
        self.assertGreaterEqual(self.cluster_stat(proxy, "upstream_cx_tls_error_total"), 1)
        self.assertEqual(sum(self.tls_upstream_stats(up).calls_started.values()), 0)

    def test_upstream_certificate_for_another_name_fails_verification(self):
        up, proxy = self.start_with_cluster_tls({"ca": self.certs.path("ca.pem"),
                                                 "sni": "not-this-host.example"})
        with self.assertRaises(grpc.RpcError) as cm:
            self.stub(proxy.port).Unary(pb.Request(), timeout=5)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE)
        self.assertGreaterEqual(self.cluster_stat(proxy, "upstream_cx_tls_error_total"), 1)

    def test_tls_on_both_sides(self):
        up = self.start_tls_upstream()
        proxy = self.start_sluice(listener_config(
            up.port, tls=self.listener_tls(),
            cluster_tls={"ca": self.certs.path("ca.pem"), "sni": "localhost"}))
        r = self.grpcpp_call(proxy.port, "--method", "server_stream", "--count", 20,
                             "--response-size", 10000)
        self.assertEqual((r["status_code"], r["messages_received"]), (0, 20), r)


if __name__ == "__main__":
    import unittest

    unittest.main()
