"""The admin endpoint end to end (issue 4): a real sluice between real gRPC clients and the test
upstream, asserted through its admin port. Every endpoint once; counters that agree with the
traffic the test sent; /stats/prometheus through a strict parser; /config_dump fed back to
`sluice validate` and to a second sluice; readiness during a SIGTERM drain and after POST /drain;
the JSON access log; /ready while both workers are saturated with load (h2load)."""

import calendar
import http.client
import json
import math
import os
import re
import signal
import subprocess
import time
import unittest

import grpc

import harness
from harness import IntegrationTestCase, grpc_frame, service_time, sluice_config
import sluice_test_pb2 as pb

UNARY_PATH = "/sluice.test.TestService/Unary"


# --- a strict Prometheus text-format (0.0.4) parser --------------------------------------------

class PrometheusError(ValueError):
    pass


_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
# Go's strconv.ParseFloat as Prometheus accepts it, minus hex and underscores.
_FLOAT = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[Ii]nf|NaN)")
_TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


def _parse_float(text, line_no):
    if not _FLOAT.fullmatch(text):
        raise PrometheusError(f"line {line_no}: bad value {text!r}")
    return float(text)


def _unescape(text, allowed, line_no):
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            if i + 1 >= len(text) or text[i + 1] not in allowed:
                raise PrometheusError(f"line {line_no}: bad escape in {text!r}")
            out.append("\n" if text[i + 1] == "n" else text[i + 1])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _parse_labels(text, pos, line_no):
    """Parses `{k="v",...}` starting at text[pos] == '{'; returns (labels dict, end pos)."""
    labels = {}
    pos += 1
    while True:
        if text.startswith("}", pos):
            return labels, pos + 1
        m = _LABEL_NAME.match(text, pos)
        if not m:
            raise PrometheusError(f"line {line_no}: bad label name at {text[pos:]!r}")
        name = m.group(0)
        if name.startswith("__"):
            raise PrometheusError(f"line {line_no}: reserved label name {name}")
        if name in labels:
            raise PrometheusError(f"line {line_no}: duplicate label {name}")
        pos = m.end()
        if not text.startswith('="', pos):
            raise PrometheusError(f"line {line_no}: label {name} has no quoted value")
        pos += 2
        raw = []
        while True:
            if pos >= len(text):
                raise PrometheusError(f"line {line_no}: unterminated label value")
            c = text[pos]
            if c == "\\":
                raw.append(text[pos:pos + 2])
                pos += 2
                continue
            if c == '"':
                pos += 1
                break
            raw.append(c)
            pos += 1
        labels[name] = _unescape("".join(raw), '\\"n', line_no)
        if text.startswith(",", pos):
            pos += 1
        elif not text.startswith("}", pos):
            raise PrometheusError(f"line {line_no}: expected ',' or '}}' at {text[pos:]!r}")


def _sample_suffixes(mtype):
    if mtype == "histogram":
        return ("_bucket", "_sum", "_count")
    if mtype == "summary":
        return ("", "_sum", "_count")
    return ("",)


def parse_prometheus(text):
    """Parses exposition text strictly. Returns {family: {"help", "type", "samples": [(name,
    labels, value)]}}; raises PrometheusError naming the line on any violation: names and labels,
    escapes, HELP and TYPE once each and before the family's samples, families contiguous, no
    duplicate series, counters named *_total and >= 0, histograms with increasing `le`,
    non-decreasing buckets, +Inf == _count and a _sum."""
    if not text.endswith("\n"):
        raise PrometheusError("output does not end with a newline")
    families = {}
    closed = set()  # families whose block has ended
    current = None
    series = set()
    for line_no, line in enumerate(text[:-1].split("\n"), 1):
        if line == "":
            raise PrometheusError(f"line {line_no}: empty line")
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not _METRIC_NAME.fullmatch(name):
                    raise PrometheusError(f"line {line_no}: bad metric name {name!r}")
                if name != current:
                    if name in closed or name in families:
                        raise PrometheusError(f"line {line_no}: family {name} reopened")
                    if current is not None:
                        closed.add(current)
                    current = name
                    families[name] = {"help": None, "type": None, "samples": []}
                fam = families[name]
                if fam["samples"]:
                    raise PrometheusError(f"line {line_no}: {parts[1]} after samples of {name}")
                rest = parts[3] if len(parts) == 4 else ""
                if parts[1] == "HELP":
                    if fam["help"] is not None:
                        raise PrometheusError(f"line {line_no}: second HELP for {name}")
                    fam["help"] = _unescape(rest, "\\n", line_no)
                else:
                    if fam["type"] is not None:
                        raise PrometheusError(f"line {line_no}: second TYPE for {name}")
                    if rest not in _TYPES:
                        raise PrometheusError(f"line {line_no}: unknown type {rest!r}")
                    fam["type"] = rest
            continue  # any other comment
        m = _METRIC_NAME.match(line)
        if not m:
            raise PrometheusError(f"line {line_no}: bad sample line {line!r}")
        name = m.group(0)
        pos = m.end()
        labels = {}
        if line.startswith("{", pos):
            labels, pos = _parse_labels(line, pos, line_no)
        if not line.startswith(" ", pos):
            raise PrometheusError(f"line {line_no}: no value in {line!r}")
        fields = line[pos + 1:].split(" ")
        if len(fields) not in (1, 2):
            raise PrometheusError(f"line {line_no}: trailing garbage in {line!r}")
        value = _parse_float(fields[0], line_no)
        if len(fields) == 2 and not re.fullmatch(r"-?\d+", fields[1]):
            raise PrometheusError(f"line {line_no}: bad timestamp {fields[1]!r}")
        fam = families.get(current) if current else None
        if fam is None or fam["help"] is None or fam["type"] is None:
            raise PrometheusError(f"line {line_no}: sample {name} without HELP and TYPE first")
        if not any(name == current + s for s in _sample_suffixes(fam["type"])):
            raise PrometheusError(f"line {line_no}: sample {name} outside its family {current}")
        key = (name, tuple(sorted(labels.items())))
        if key in series:
            raise PrometheusError(f"line {line_no}: duplicate series {name}{labels}")
        series.add(key)
        if fam["type"] == "counter":
            if not name.endswith("_total"):
                raise PrometheusError(f"line {line_no}: counter {name} not named *_total")
            if not value >= 0:
                raise PrometheusError(f"line {line_no}: counter {name} is {value}")
        fam["samples"].append((name, labels, value))
    for name, fam in families.items():
        if fam["help"] is None or fam["type"] is None:
            raise PrometheusError(f"family {name} lacks HELP or TYPE")
        if fam["type"] == "histogram":
            _check_histogram(name, fam["samples"])
    return families


def _check_histogram(family, samples):
    groups = {}
    for name, labels, value in samples:
        rest = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
        g = groups.setdefault(rest, {"buckets": [], "sum": None, "count": None})
        if name == family + "_bucket":
            if "le" not in labels:
                raise PrometheusError(f"{family}: bucket without le")
            g["buckets"].append((_parse_float(labels["le"], 0), value))
        elif name == family + "_sum":
            g["sum"] = value
        else:
            g["count"] = value
    for rest, g in groups.items():
        where = f"{family}{dict(rest)}"
        if g["sum"] is None or g["count"] is None:
            raise PrometheusError(f"{where}: _sum or _count missing")
        buckets = g["buckets"]
        if not buckets or buckets[-1][0] != math.inf:
            raise PrometheusError(f"{where}: last bucket is not le=\"+Inf\"")
        for (le_a, n_a), (le_b, n_b) in zip(buckets, buckets[1:]):
            if not le_b > le_a:
                raise PrometheusError(f"{where}: le {le_b} does not increase after {le_a}")
            if n_b < n_a:
                raise PrometheusError(f"{where}: bucket le={le_b} count {n_b} < {n_a}")
        if buckets[-1][1] != g["count"]:
            raise PrometheusError(f"{where}: +Inf bucket {buckets[-1][1]} != _count {g['count']}")


def prometheus_value(families, name, **labels):
    for family in families.values():
        for sample_name, sample_labels, value in family["samples"]:
            if sample_name == name and sample_labels == labels:
                return value
    raise AssertionError(f"no sample {name}{labels}")


class PrometheusParserTest(unittest.TestCase):
    """The parser is what lets the Prometheus assertions fail: it must reject what it claims to."""

    HEAD = "# HELP h x\n# TYPE h histogram\n"

    def test_accepts_well_formed_output(self):
        text = ('# HELP a_total Requests, with \\\\ and \\n.\n# TYPE a_total counter\n'
                'a_total{x="q\\"\\\\\\n"} 3\n# free comment\n'
                + self.HEAD + 'h_bucket{le="0.1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 0.5\nh_count 2\n'
                '# HELP g g\n# TYPE g gauge\ng -1.5e-3\ng{k="v"} NaN 1700000000000\n')
        families = parse_prometheus(text)
        self.assertEqual(list(families), ["a_total", "h", "g"])
        self.assertEqual(families["a_total"]["help"], "Requests, with \\ and \n.")
        self.assertEqual(families["a_total"]["samples"][0][1], {"x": 'q"\\\n'})
        self.assertEqual(prometheus_value(families, "h_count"), 2)

    def test_rejects_each_rule_it_enforces(self):
        bad = {
            "no help/type": "a_total 1\n",
            "help after samples": "# HELP g x\n# TYPE g gauge\ng 1\n# HELP g y\n",
            "family reopened": "# HELP a x\n# TYPE a gauge\na 1\n# HELP b x\n# TYPE b gauge\n"
                               "b 1\n# HELP a x\n",
            "sample of another family": "# HELP a x\n# TYPE a gauge\n# HELP b x\n# TYPE b gauge\n"
                                        "a 1\n",
            "bad metric name": "# HELP 1a x\n# TYPE 1a gauge\n1a 1\n",
            "reserved label": '# HELP a x\n# TYPE a gauge\na{__k="v"} 1\n',
            "unquoted label": "# HELP a x\n# TYPE a gauge\na{k=v} 1\n",
            "bad escape": '# HELP a x\n# TYPE a gauge\na{k="\\t"} 1\n',
            "duplicate label": '# HELP a x\n# TYPE a gauge\na{k="v",k="w"} 1\n',
            "hex value": "# HELP a x\n# TYPE a gauge\na 0x10\n",
            "no final newline": "# HELP a x\n# TYPE a gauge\na 1",
            "duplicate series": '# HELP a x\n# TYPE a gauge\na{k="v"} 1\na{k="v"} 2\n',
            "counter without _total": "# HELP a x\n# TYPE a counter\na 1\n",
            "negative counter": "# HELP a_total x\n# TYPE a_total counter\na_total -1\n",
            "unknown type": "# HELP a x\n# TYPE a meter\na 1\n",
            "no +Inf": self.HEAD + 'h_bucket{le="1"} 1\nh_sum 1\nh_count 1\n',
            "+Inf != count": self.HEAD + 'h_bucket{le="+Inf"} 2\nh_sum 1\nh_count 3\n',
            "buckets decrease": self.HEAD + 'h_bucket{le="1"} 2\nh_bucket{le="2"} 1\n'
                                            'h_bucket{le="+Inf"} 2\nh_sum 1\nh_count 2\n',
            "le not increasing": self.HEAD + 'h_bucket{le="2"} 1\nh_bucket{le="1"} 1\n'
                                             'h_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n',
            "no _sum": self.HEAD + 'h_bucket{le="+Inf"} 1\nh_count 1\n',
            "plain sample in histogram": self.HEAD + "h 1\n",
        }
        for what, text in bad.items():
            with self.subTest(what):
                with self.assertRaises(PrometheusError):
                    parse_prometheus(text)


# --- helpers -----------------------------------------------------------------------------------

def admin_request(sluice, method, path, headers=None, timeout=5):
    """One request on the admin port; returns (status, headers dict lower-cased, body text)."""
    conn = http.client.HTTPConnection(harness.LOOPBACK, sluice.admin_port, timeout=timeout)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        body = resp.read().decode(errors="replace")
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body
    finally:
        conn.close()


def stats_json(sluice, query=""):
    status, _, body = admin_request(sluice, "GET", "/stats?format=json" + query)
    if status != 200:
        raise AssertionError(f"/stats?format=json{query}: {status} {body}")
    return {e["name"]: e for e in json.loads(body)["stats"]}


def with_filters(upstream_port, filters, **overrides):
    config = sluice_config(upstream_port, **overrides)
    config["listeners"][0]["filters"] = filters
    return config


class AdminTestCase(IntegrationTestCase):
    REQUIRES_SLUICE = True
    TEST_TIMEOUT = 30

    def setUp(self):
        super().setUp()
        if harness.direct_mode():
            self.skipTest("admin endpoints need sluice")  # only in SLUICE_DIRECT=1 runs

    def hold_call(self, port, seconds, **request):
        """A unary call that occupies the upstream for `seconds`; returns its future."""
        return self.stub(port).Unary.future(
            pb.Request(service_time=service_time(seconds), **request), timeout=30)

    def wait_in_flight(self, upstream, n):
        harness.wait_for(lambda: upstream.stats().in_flight == n, 5,
                         what=f"{n} call(s) in flight upstream")


# --- every endpoint ----------------------------------------------------------------------------

class StatsEndpointsTest(AdminTestCase):
    """N OK calls and M shed calls through fixed_semaphore(1, no queue); every stats view agrees
    with them and with each other."""

    N_OK = 20
    M_SHED = 6

    def setUp(self):
        super().setUp()
        self.upstream = self.start_upstream(workers=4, delay="1ms")
        self.sluice = self.start_sluice(with_filters(self.upstream.port, [
            {"type": "fixed_semaphore", "max_concurrency": 1, "max_queue": 0}]))
        port = self.sluice.port
        held = self.hold_call(port, 0.8)
        self.wait_in_flight(self.upstream, 1)
        stub = self.stub(port)
        for _ in range(self.M_SHED):
            with self.assertRaises(grpc.RpcError) as cm:
                stub.Unary(pb.Request(), timeout=5)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        held.result()
        for _ in range(self.N_OK):
            stub.Unary(pb.Request(payload=b"x" * 50, response_size=100), timeout=5)
        self.admitted = self.N_OK + 1
        self.total = self.admitted + self.M_SHED
        # Counters are bumped when a stream is finished, which can trail the client's view of
        # the answer by a moment.
        harness.wait_for(lambda: stats_json(self.sluice)[
            "listener.ingress.downstream_rq_completed_total"]["value"] == self.admitted, 5,
            what="completed requests counted")

    def test_counters_and_histograms_agree_with_the_traffic_sent(self):
        s = stats_json(self.sluice)
        v = {name: e.get("value") for name, e in s.items()}
        self.assertEqual(v["listener.ingress.downstream_rq_total"], self.total)
        self.assertEqual(v["listener.ingress.downstream_rq_completed_total"], self.admitted)
        self.assertEqual(v["listener.ingress.downstream_rq_shed_total"], self.M_SHED)
        self.assertEqual(v["listener.ingress.downstream_rq_active"], 0)
        for reason in ("client_reset", "deadline_exceeded", "upstream_unavailable",
                       "upstream_reset", "drained", "internal"):
            self.assertEqual(v[f"listener.ingress.downstream_rq_{reason}_total"], 0, reason)
        self.assertGreaterEqual(v["listener.ingress.downstream_cx_total"], 1)
        # Every request body went through: at least the gRPC frames the client sent.
        min_rx = self.N_OK * len(grpc_frame(pb.Request(payload=b"x" * 50, response_size=100)))
        self.assertGreater(v["listener.ingress.downstream_bytes_rx_total"], min_rx)
        self.assertGreater(v["listener.ingress.downstream_bytes_tx_total"], self.N_OK * 100)
        self.assertEqual(s["listener.ingress.downstream_rq_time_us"]["count"], self.total)
        self.assertEqual(s["listener.ingress.downstream_rq_queue_wait_us"]["count"], self.total)

        self.assertEqual(v["cluster.app.upstream_rq_total"], self.admitted)
        self.assertEqual(v["cluster.app.upstream_rq_grpc_status_0_total"], self.admitted)
        other = {n: x for n, x in v.items()
                 if re.fullmatch(r"cluster\.app\.upstream_rq_grpc_status_\w+_total", n)
                 and not n.endswith("_status_0_total") and x}
        self.assertEqual(other, {})
        self.assertEqual(v["cluster.app.upstream_rq_active"], 0)
        self.assertEqual(v["cluster.app.upstream_cx_connect_fail_total"], 0)
        self.assertEqual(s["cluster.app.upstream_rq_time_us"]["count"], self.admitted)
        self.assertEqual(s["cluster.app.upstream_rtt_us"]["count"], self.admitted)
        # The held call took 0.8 s upstream: the histogram's max saw it.
        self.assertGreaterEqual(s["cluster.app.upstream_rq_time_us"]["max"], 700_000)

        f = "filter.ingress.fixed_semaphore."
        self.assertEqual(v[f + "admitted_total"], self.admitted)
        self.assertEqual(v[f + "shed_total"], self.M_SHED)
        self.assertEqual(v[f + "in_flight"], 0)
        self.assertEqual(v[f + "queued"], 0)
        self.assertEqual(s[f + "rtt_us"]["count"], self.admitted)

        self.assertEqual(self.upstream.stats().calls_started["unary"], self.admitted)
        self.assertGreater(v["server.memory_rss_bytes"], 1 << 20)
        self.assertGreater(v["server.uptime_seconds"], 0)

    def test_text_stats_match_json_and_filter_by_regex(self):
        status, headers, text = admin_request(self.sluice, "GET", "/stats")
        self.assertEqual(status, 200)
        self.assertTrue(headers["content-type"].startswith("text/plain"))
        lines = text.splitlines()
        parsed = {}
        for line in lines:
            m = re.fullmatch(r"([a-z][a-z0-9_]*(?:\.[A-Za-z0-9_-]+)+): (.+)", line)
            self.assertIsNotNone(m, f"bad /stats line {line!r}")
            parsed[m.group(1)] = m.group(2)
        self.assertEqual(list(parsed), sorted(parsed), "stats are sorted by name")
        js = stats_json(self.sluice)
        self.assertEqual(set(parsed), set(js))
        for name, e in js.items():
            if e["type"] == "counter":
                self.assertEqual(parsed[name], str(e["value"]), name)
            elif e["type"] == "histogram":
                m = re.fullmatch(r"P50=(\d+) P90=(\d+) P99=(\d+) P99\.9=(\d+) max=(\d+) "
                                 r"count=(\d+)", parsed[name])
                self.assertIsNotNone(m, f"{name}: {parsed[name]!r}")
                p50, p90, p99, p999, mx, count = map(int, m.groups())
                self.assertTrue(p50 <= p90 <= p99 <= p999 <= mx, parsed[name])
                self.assertEqual(count, e["count"], name)
        self.assertEqual(parsed["listener.ingress.downstream_rq_total"], str(self.total))

        # ?filter= is a regex search over dotted names, in every format.
        _, _, one = admin_request(self.sluice, "GET",
                                  "/stats?filter=%5Ecluster%5C.app%5C.upstream_rq_total%24")
        self.assertEqual(one, f"cluster.app.upstream_rq_total: {self.admitted}\n")
        _, _, two = admin_request(self.sluice, "GET",
                                  "/stats?filter=downstream_rq_(completed%7Cshed)_total")
        self.assertEqual(two.splitlines(), [
            f"listener.ingress.downstream_rq_completed_total: {self.admitted}",
            f"listener.ingress.downstream_rq_shed_total: {self.M_SHED}"])
        filtered = stats_json(self.sluice, "&filter=%5Efilter%5C.")
        self.assertTrue(filtered)
        self.assertTrue(all(n.startswith("filter.ingress.fixed_semaphore.") for n in filtered))
        self.assertEqual(set(filtered), {n for n in js if n.startswith("filter.")})
        self.assertEqual(admin_request(self.sluice, "GET", "/stats?filter=%28")[0], 400)
        self.assertEqual(admin_request(self.sluice, "GET", "/stats?format=xml")[0], 400)

    def test_prometheus_output_parses_strictly_and_matches_json(self):
        status, headers, text = admin_request(self.sluice, "GET", "/stats/prometheus")
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        families = parse_prometheus(text)
        js = stats_json(self.sluice)
        histograms = 0
        for name, e in js.items():
            labels = e["labels"]
            base = "sluice_" + e["kind"] + "_" + e["leaf"]
            if e["type"] == "counter":
                family = base if base.endswith("_total") else base + "_total"
                self.assertEqual(families[family]["type"], "counter", name)
                self.assertEqual(prometheus_value(families, family, **labels), e["value"], name)
            elif e["type"] == "histogram":
                histograms += 1
                family = base[:-3] + "_seconds" if e.get("unit") == "us" else base
                self.assertEqual(families[family]["type"], "histogram", name)
                self.assertEqual(prometheus_value(families, family + "_count", **labels),
                                 e["count"], name)
                total_s = prometheus_value(families, family + "_sum", **labels)
                expect_s = e["sum"] / 1e6 if e.get("unit") == "us" else e["sum"]
                self.assertAlmostEqual(total_s, expect_s, delta=1e-9 + 1e-9 * expect_s)
            elif e["value"] is not None and e["leaf"] not in ("uptime_seconds",
                                                              "memory_rss_bytes", "threads"):
                self.assertEqual(families[base]["type"], "gauge", name)
                self.assertAlmostEqual(prometheus_value(families, base, **labels), e["value"],
                                       places=6, msg=name)
        self.assertGreaterEqual(histograms, 5)
        # A histogram the test can check by hand: every request's total time, in seconds.
        rq_time = "sluice_listener_downstream_rq_time_seconds_bucket"
        self.assertEqual(prometheus_value(families, rq_time, listener="ingress", le="+Inf"),
                         self.total)
        # The 0.8 s held call is above the 0.5 s bucket, the 20 fast calls below 0.25 s.
        upstream_time = "sluice_cluster_upstream_rq_time_seconds_bucket"
        self.assertEqual(prometheus_value(families, upstream_time, cluster="app", le="0.5"),
                         self.N_OK)
        self.assertEqual(prometheus_value(families, upstream_time, cluster="app", le="1"),
                         self.admitted)
        # ?filter= applies to the Prometheus view too, and the result still parses.
        _, _, some = admin_request(self.sluice, "GET", "/stats/prometheus?filter=rq_time")
        self.assertEqual(set(parse_prometheus(some)),
                         {"sluice_listener_downstream_rq_time_seconds",
                          "sluice_cluster_upstream_rq_time_seconds"})


class InfoEndpointsTest(AdminTestCase):
    def test_limits_config_dump_and_server_info_describe_the_running_proxy(self):
        upstream = self.start_upstream(workers=4, delay="2ms")
        filters = [{"type": "queue_wait_budget", "budget": "40ms"},
                   {"type": "rtt_gradient", "initial_limit": 12},
                   {"type": "fixed_semaphore", "name": "cap", "max_concurrency": 7}]
        sluice = self.start_sluice(with_filters(upstream.port, filters, drain_timeout="3s"))
        stub = self.stub(sluice.port)
        # 30 calls: the first 8 teach the method's baseline; the rest are judged against it over
        # several rtt_gradient decisions (update_interval 50 ms, min_samples 10), so the smoothed
        # RTT and the gradient exist.
        calls = 30
        for _ in range(calls):
            stub.Unary(pb.Request(), timeout=5)
            time.sleep(0.02)

        status, headers, body = admin_request(sluice, "GET", "/limits")
        self.assertEqual((status, headers["content-type"]), (200, "application/json"))
        limits = {x["filter"]: x for x in json.loads(body)}
        self.assertEqual(set(limits), {"rtt_gradient", "cap"})
        rtt, cap = limits["rtt_gradient"], limits["cap"]
        self.assertEqual((rtt["listener"], rtt["type"]), ("ingress", "rtt_gradient"))
        self.assertEqual((cap["type"], cap["limit"]), ("fixed_semaphore", 7))
        for x in (rtt, cap):
            self.assertEqual((x["in_flight"], x["queued"], x["admitted"], x["shed"]),
                             (0, 0, calls, 0))
            self.assertIsInstance(x["recent_decisions"], list)
            # Per class (zero until the filters count per class), per method, recent queue wait.
            self.assertEqual(list(x["classes"]),
                             ["sheddable", "sheddable_plus", "critical", "critical_plus"])
            for c in x["classes"].values():
                self.assertEqual(set(c), {"admitted", "shed", "queued"})
            self.assertIsInstance(x["baselines"], list)
            self.assertIn("queueing", x)
            self.assertIn("queue_wait_p99_ms_recent", x)
        self.assertGreaterEqual(rtt["limit"], 1)
        self.assertGreater(rtt["rtt_noload_ms"], 1.5)  # the upstream takes 2 ms
        self.assertGreaterEqual(rtt["rtt_smoothed_ms"], rtt["rtt_noload_ms"] * 0.5)
        self.assertGreater(rtt["gradient"], 0)

        # /config_dump: every default filled in; fed back to `sluice validate` (JSON is YAML).
        status, headers, body = admin_request(sluice, "GET", "/config_dump")
        self.assertEqual((status, headers["content-type"]), (200, "application/json"))
        dump = json.loads(body)
        self.assertEqual(dump["workers"], 2)
        self.assertEqual(dump["drain_timeout"], "3s")
        self.assertEqual(dump["admin"]["access_log"]["enabled"], False)
        self.assertEqual(dump["clusters"][0]["endpoints"], [f"127.0.0.1:{upstream.port}"])
        listener = dump["listeners"][0]
        self.assertEqual([(f["name"], f["type"]) for f in listener["filters"]], [
            ("queue_wait_budget", "queue_wait_budget"), ("rtt_gradient", "rtt_gradient"),
            ("cap", "fixed_semaphore")])
        self.assertEqual(listener["filters"][0]["budget"], "40ms")
        self.assertEqual(listener["filters"][1]["initial_limit"], 12)
        self.assertEqual(listener["filters"][1]["tolerance"], 0.85)  # a default, filled in
        self.assertEqual(listener["http2"]["initial_stream_window"], "64KiB")
        dump_path = os.path.join(self.tmpdir, "dump.yaml")
        with open(dump_path, "w") as f:
            f.write(body)
        check = subprocess.run([harness.env_path("SLUICE_BIN"), "validate", dump_path],
                               capture_output=True, text=True, timeout=10)
        self.assertEqual(check.returncode, 0, check.stderr)
        self.assertIn("OK (1 listener(s), 1 cluster(s), 2 worker(s))", check.stdout)
        # The dump is a complete config: a second sluice started from it dumps the same config.
        second = self.start_sluice(body, name="sluice2")
        _, _, body2 = admin_request(second, "GET", "/config_dump")
        self.assertEqual(json.loads(body2), dump)
        second.terminate()

        # /server_info
        version = subprocess.run([harness.env_path("SLUICE_BIN"), "--version"],
                                 capture_output=True, text=True, timeout=10).stdout.split()[-1]
        status, headers, body = admin_request(sluice, "GET", "/server_info")
        self.assertEqual((status, headers["content-type"]), (200, "application/json"))
        info = json.loads(body)
        self.assertEqual(info["version"], version)
        self.assertEqual(info["state"], "LIVE")
        self.assertEqual(info["workers"], 2)
        self.assertEqual(info["config_path"], sluice.config_path)
        self.assertRegex(info["started"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
        time.sleep(0.1)
        later = json.loads(admin_request(sluice, "GET", "/server_info")[2])
        self.assertGreater(later["uptime_s"], info["uptime_s"])
        self.assertEqual(headers["server"], f"sluice/{version}")

    def test_mutations_are_post_only_and_readiness_follows_the_healthcheck(self):
        upstream = self.start_upstream(workers=4, delay="1ms")
        sluice = self.start_sluice(sluice_config(upstream.port))
        stub = self.stub(sluice.port)
        self.assertEqual(admin_request(sluice, "GET", "/ready")[::2], (200, "LIVE\n"))
        self.assertEqual(admin_request(sluice, "HEAD", "/ready")[0], 200)

        for path in ("/healthcheck/fail", "/healthcheck/ok", "/drain"):
            status, headers, _ = admin_request(sluice, "GET", path)
            self.assertEqual((status, headers.get("allow")), (405, "POST"), path)
        for path in ("/stats", "/ready", "/limits", "/history", "/config_dump", "/server_info",
                     "/"):
            status, headers, _ = admin_request(sluice, "POST", path)
            self.assertEqual((status, headers.get("allow")), (405, "GET, HEAD"), path)
        self.assertEqual(admin_request(sluice, "DELETE", "/drain")[0], 405)
        for path in ("/nope", "/stats/", "/stats/json", "/ready/x"):
            self.assertEqual(admin_request(sluice, "GET", path)[0], 404, path)
        # Neither the GETs above nor a cross-site form POST drained or failed anything.
        self.assertEqual(admin_request(sluice, "POST", "/drain",
                                       {"Origin": "http://evil.example"})[0], 403)
        self.assertEqual(admin_request(sluice, "GET", "/ready")[0], 200)

        self.assertEqual(admin_request(sluice, "POST", "/healthcheck/fail")[0], 200)
        self.assertEqual(admin_request(sluice, "GET", "/ready")[::2], (503, "HEALTHCHECK_FAILED\n"))
        info = json.loads(admin_request(sluice, "GET", "/server_info")[2])
        self.assertEqual(info["state"], "HEALTHCHECK_FAILED")
        # Failing the health check only changes what /ready says: traffic still flows.
        stub.Unary(pb.Request(), timeout=5)
        self.assertEqual(admin_request(sluice, "POST", "/healthcheck/ok")[0], 200)
        self.assertEqual(admin_request(sluice, "GET", "/ready")[::2], (200, "LIVE\n"))
        self.assertTrue(sluice.alive())


# --- history -----------------------------------------------------------------------------------

class HistoryTest(AdminTestCase):
    """GET /history: one sample a second, rates that add up to the traffic sent, ?since=, and
    queue-wait percentiles of the recent window rather than since start."""

    TEST_TIMEOUT = 45

    def history(self, sluice, query=""):
        status, headers, body = admin_request(sluice, "GET", "/history" + query)
        self.assertEqual((status, headers["content-type"]), (200, "application/json"), body)
        return json.loads(body)

    def test_samples_every_second_and_rates_add_up_to_the_calls_sent(self):
        upstream = self.start_upstream(workers=4, delay="1ms")
        sluice = self.start_sluice(with_filters(upstream.port, [
            {"type": "fixed_semaphore", "max_concurrency": 4}]))
        stub = self.stub(sluice.port)
        sent = 40
        for _ in range(sent):
            stub.Unary(pb.Request(), timeout=5)
            time.sleep(0.05)  # spread over about two seconds
        # Two more samples: every call has been counted in some interval.
        harness.wait_for(lambda: stats_json(sluice)[
            "listener.ingress.downstream_rq_completed_total"]["value"] == sent, 5,
            what="completed calls counted")
        n = len(self.history(sluice)["t"])
        harness.wait_for(lambda: len(self.history(sluice)["t"]) >= n + 2, 5,
                         what="two more history samples")

        h = self.history(sluice)
        self.assertEqual((h["interval_ms"], h["capacity"], h["recent_intervals"]), (1000, 600, 10))
        self.assertLess(h["memory_bytes"], 1 << 20)
        t = h["t"]
        self.assertGreaterEqual(len(t), 4)
        steps = [b - a for a, b in zip(t, t[1:])]
        self.assertTrue(all(900 <= d <= 1100 for d in steps), steps)
        self.assertLess(abs(t[-1] / 1000 - time.time()), 5)
        [fixed] = h["filters"]
        self.assertEqual((fixed["listener"], fixed["filter"], fixed["type"]),
                         ("ingress", "fixed_semaphore", "fixed_semaphore"))
        for name in ("limit", "in_flight", "queued", "admitted_per_s", "shed_per_s"):
            self.assertEqual(len(fixed[name]), len(t), name)
        self.assertEqual(set(fixed["limit"]), {4})
        self.assertNotIn("rtt_noload_ms", fixed)  # no value in the range: left out
        # A rate times its interval is the calls of that interval; they add up to what was sent.
        self.assertIsNone(fixed["admitted_per_s"][0])
        admitted = sum(r * d / 1000 for r, d in zip(fixed["admitted_per_s"][1:], steps))
        self.assertAlmostEqual(admitted, sent, delta=0.5)
        self.assertEqual(sum(fixed["shed_per_s"][1:]), 0)
        [listener] = h["listeners"]
        self.assertEqual(listener["listener"], "ingress")
        completed = sum(r * d / 1000 for r, d in zip(listener["rq_per_s"]["completed"][1:], steps))
        self.assertAlmostEqual(completed, sent, delta=0.5)
        self.assertEqual(sum(listener["rq_per_s"]["shed"][1:]), 0)

        # ?since= gives only the newer samples, aligned the same way.
        newer = self.history(sluice, f"?since={t[-2]}")
        self.assertGreaterEqual(len(newer["t"]), 1)
        self.assertTrue(all(x > t[-2] for x in newer["t"]), newer["t"])
        self.assertEqual(newer["t"][0], t[-1])
        self.assertEqual(len(newer["filters"][0]["limit"]), len(newer["t"]))
        self.assertEqual(admin_request(sluice, "GET", "/history?since=yesterday")[0], 400)

    def test_queue_wait_percentiles_are_those_of_the_recent_window(self):
        upstream = self.start_upstream(workers=4)
        sluice = self.start_sluice(with_filters(upstream.port, [
            {"type": "fixed_semaphore", "max_concurrency": 1, "max_queue": 4}]))
        held = self.hold_call(sluice.port, 0.6)
        self.wait_in_flight(upstream, 1)
        queued = self.stub(sluice.port).Unary.future(pb.Request(), timeout=10)  # waits ~0.6 s
        held.result()
        queued.result()
        f = "filter.ingress.fixed_semaphore.queue_wait_us"
        harness.wait_for(lambda: stats_json(sluice)[f]["count"] == 2, 5, what="two queue waits")
        waited_ms = stats_json(sluice)[f]["max"] / 1000
        self.assertGreater(waited_ms, 400)

        def recent():
            [x] = json.loads(admin_request(sluice, "GET", "/limits")[2])
            return x["queue_wait_p99_ms_recent"]
        # Within a second the history has the wait: the p99 of the last 10 s is that wait (the
        # largest ever recorded, so exact rather than its bucket's bound).
        harness.wait_for(lambda: recent() is not None, 3, what="a recent queue wait")
        self.assertAlmostEqual(recent(), waited_ms, delta=0.01)
        h = self.history(sluice)
        per_second = [v for v in h["filters"][0]["queue_wait_p99_ms"] if v is not None]
        self.assertAlmostEqual(max(per_second), waited_ms, delta=0.01)
        self.assertAlmostEqual(max(v for v in h["listeners"][0]["queue_wait_p99_ms"]
                                   if v is not None), waited_ms, delta=0.01)
        # Ten quiet seconds later the recent window is empty, while the since-start histogram
        # still reports the wait.
        harness.wait_for(lambda: recent() is None, 14, interval=0.5,
                         what="the recent queue wait to age out")
        self.assertEqual(stats_json(sluice)[f]["max"] / 1000, waited_ms)
        self.assertGreater(stats_json(sluice)[f]["p99"] / 1000, 400)


# --- drain -------------------------------------------------------------------------------------

class DrainTest(AdminTestCase):
    def poll_ready_until(self, sluice, done):
        """GET /ready every 50 ms until done() is true; returns the statuses seen."""
        seen = []
        while not done():
            try:
                seen.append(admin_request(sluice, "GET", "/ready", timeout=2)[0])
            except ConnectionError:
                # SIGTERM: the admin port closes once the last stream is done, which can be
                # just before the client sees its answer.
                break
            time.sleep(0.05)
        return seen

    def test_sigterm_drain_is_not_ready_while_a_call_is_in_flight_and_exits_after_it(self):
        upstream = self.start_upstream(workers=4)
        sluice = self.start_sluice(sluice_config(upstream.port, drain_timeout="10s"))
        held = self.hold_call(sluice.port, 1.5)
        self.wait_in_flight(upstream, 1)
        self.assertEqual(admin_request(sluice, "GET", "/ready")[0], 200)
        sluice.signal(signal.SIGTERM)
        harness.wait_for(lambda: admin_request(sluice, "GET", "/ready", timeout=2)[0] == 503, 1,
                         what="/ready to turn 503 after SIGTERM")
        self.assertEqual(admin_request(sluice, "GET", "/ready")[2], "DRAINING\n")
        harness.wait_for(lambda: harness.connect_refused(sluice.port), 2,
                         what="the listener to close")
        seen = self.poll_ready_until(sluice, held.done)
        self.assertGreaterEqual(len(seen), 5, "the call should still be in flight for a while")
        self.assertEqual(set(seen), {503}, "readiness came back during the drain")
        self.assertTrue(sluice.alive() or held.done())
        self.assertEqual(held.result(), pb.Response())
        self.assertEqual(held.code(), grpc.StatusCode.OK)
        # Nothing left in flight: the process exits cleanly well before drain_timeout.
        self.assertEqual(sluice.wait(5), 0, sluice.log_tail())
        self.assertIn("drained; exiting", sluice.stderr() + sluice.stdout())

    def test_admin_drain_refuses_new_connections_finishes_in_flight_calls_and_keeps_running(self):
        upstream = self.start_upstream(workers=4)
        sluice = self.start_sluice(sluice_config(upstream.port, drain_timeout="10s"))
        held = self.hold_call(sluice.port, 1.5)
        self.wait_in_flight(upstream, 1)
        status, _, body = admin_request(sluice, "POST", "/drain")
        self.assertEqual((status, body), (200, "OK: draining\n"))
        self.assertEqual(admin_request(sluice, "GET", "/ready")[::2], (503, "DRAINING\n"))
        harness.wait_for(lambda: harness.connect_refused(sluice.port), 2,
                         what="the listener to close")
        # A new client cannot get in.
        with self.assertRaises(grpc.RpcError) as cm:
            self.stub(sluice.port).Unary(pb.Request(), timeout=1)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE)
        seen = self.poll_ready_until(sluice, held.done)
        self.assertEqual(set(seen), {503})
        self.assertEqual(held.result(), pb.Response())
        # Unlike SIGTERM, an admin drain keeps the process (and its admin port) up.
        time.sleep(1.5)
        self.assertTrue(sluice.alive(), sluice.log_tail())
        self.assertEqual(admin_request(sluice, "GET", "/ready")[0], 503)
        self.assertEqual(json.loads(admin_request(sluice, "GET", "/server_info")[2])["state"],
                         "DRAINING")
        s = stats_json(sluice)
        self.assertEqual(s["listener.ingress.downstream_rq_completed_total"]["value"], 1)
        self.assertEqual(s["listener.ingress.downstream_rq_drained_total"]["value"], 0)
        self.assertEqual(s["listener.ingress.downstream_rq_total"]["value"], 1)
        self.assertTrue(harness.connect_refused(sluice.port))


# --- access log --------------------------------------------------------------------------------

class AccessLogTest(AdminTestCase):
    FIELDS = {"timestamp", "method", "path", "grpc_status", "outcome", "queue_wait_us",
              "upstream_us", "total_us", "bytes_in", "bytes_out"}

    def raw_call_with_deadline(self, port, grpc_timeout):
        """A unary call with a grpc-timeout header, sent by nghttp; returns its grpc-status."""
        body = os.path.join(self.tmpdir, "empty.grpc")
        with open(body, "wb") as f:
            f.write(grpc_frame(pb.Request()))
        proc = subprocess.run(
            ["nghttp", "-v", "-H", "content-type: application/grpc", "-H", "te: trailers",
             "-H", f"grpc-timeout: {grpc_timeout}", "-d", body,
             f"http://127.0.0.1:{port}{UNARY_PATH}"],
            capture_output=True, text=True, timeout=10)
        m = re.search(r"grpc-status: (\d+)", proc.stdout)
        if not m:
            raise AssertionError(f"nghttp got no grpc-status:\n{proc.stdout}\n{proc.stderr}")
        return m.group(1)

    def read_log(self, path):
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return f.read().splitlines()

    def test_one_json_line_per_request_with_outcome_status_and_timings(self):
        log_path = os.path.join(self.tmpdir, "access.log")
        upstream = self.start_upstream(workers=4, delay="1ms")
        sluice = self.start_sluice(with_filters(
            upstream.port, [{"type": "fixed_semaphore", "max_concurrency": 1, "max_queue": 1}],
            admin={"address": "127.0.0.1:0",
                   "access_log": {"enabled": True, "path": log_path}}))
        stub = self.stub(sluice.port)
        started_wall = time.time()
        ok_request = pb.Request(payload=b"p" * 100, response_size=200)
        for _ in range(3):
            stub.Unary(ok_request, timeout=5)
        held = self.hold_call(sluice.port, 1.2)
        self.wait_in_flight(upstream, 1)
        # Queued behind the held call until its 250 ms deadline passes. Sent with nghttp, which
        # (unlike a gRPC client) does not cancel the call itself when the deadline passes, so
        # the outcome is sluice's deadline and not a race with the client's reset.
        self.assertEqual(self.raw_call_with_deadline(sluice.port, "250m"), "4")
        # Takes the one queue slot (and is admitted when the held call ends) ...
        queued = stub.Unary.future(pb.Request(), timeout=10)
        harness.wait_for(lambda: stats_json(sluice)["filter.ingress.fixed_semaphore.queued"]
                         ["value"] == 1, 5, what="a queued call")
        # ... so the next one finds the queue full and is shed.
        with self.assertRaises(grpc.RpcError) as cm:
            stub.Unary(pb.Request(), timeout=5)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        held.result()
        queued.result()
        sent = 3 + 1 + 1 + 1 + 1

        # The writer is a background thread: wait for the lines, then make sure no more come.
        harness.wait_for(lambda: len(self.read_log(log_path)) >= sent, 5,
                         what=f"{sent} access log lines")
        time.sleep(0.3)
        lines = self.read_log(log_path)
        self.assertEqual(len(lines), sent, "\n".join(lines))
        entries = [json.loads(line) for line in lines]
        for e in entries:
            self.assertEqual(set(e), self.FIELDS, e)
            self.assertEqual((e["method"], e["path"]), ("POST", UNARY_PATH))
            self.assertRegex(e["timestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            stamp = calendar.timegm(time.strptime(e["timestamp"][:19], "%Y-%m-%dT%H:%M:%S"))
            self.assertLess(abs(stamp - started_wall), 30, e)
            for key in ("queue_wait_us", "total_us", "bytes_in", "bytes_out"):
                self.assertIsInstance(e[key], int, (key, e))
                self.assertGreaterEqual(e[key], 0, (key, e))
            # Slack: ProxyStream::finish() reads the clock twice (total, then the queue wait of
            # an unadmitted request), so a shed line can show queue_wait_us = total_us + 1.
            self.assertLessEqual(e["queue_wait_us"], e["total_us"] + 1000, e)

        by_outcome = {}
        for e in entries:
            by_outcome.setdefault(e["outcome"], []).append(e)
        self.assertEqual({k: len(v) for k, v in by_outcome.items()},
                         {"completed": 5, "deadline_exceeded": 1, "shed": 1})
        for e in by_outcome["completed"]:
            self.assertEqual(e["grpc_status"], 0)
            self.assertIsInstance(e["upstream_us"], int)
            self.assertLessEqual(e["upstream_us"], e["total_us"])
        # The three OK calls: exact body sizes (gRPC frame = 5-byte prefix + message).
        sized = [e for e in by_outcome["completed"] if e["bytes_out"] > 5]
        self.assertEqual(len(sized), 3)
        response = pb.Response(payload=b"\0" * 200)
        for e in sized:
            self.assertEqual(e["bytes_in"], len(grpc_frame(ok_request)))
            self.assertEqual(e["bytes_out"], len(grpc_frame(response)))
        # The held call spent 1.2 s upstream; the queued one waited for it in the queue.
        self.assertTrue(any(e["upstream_us"] >= 1_100_000 for e in by_outcome["completed"]))
        self.assertTrue(any(e["queue_wait_us"] >= 300_000 for e in by_outcome["completed"]))

        deadline = by_outcome["deadline_exceeded"][0]
        self.assertEqual(deadline["grpc_status"], 4)
        self.assertIsNone(deadline["upstream_us"])
        self.assertGreaterEqual(deadline["queue_wait_us"], 150_000)
        self.assertLess(deadline["queue_wait_us"], 1_000_000)
        shed = by_outcome["shed"][0]
        self.assertEqual(shed["grpc_status"], 8)
        self.assertIsNone(shed["upstream_us"])
        self.assertLess(shed["queue_wait_us"], 100_000)
        self.assertEqual(shed["bytes_out"], 0)  # trailers-only: no body
        self.assertEqual(stats_json(sluice)["server.access_log_dropped_total"]["value"], 0)


# --- the admin thread under load ---------------------------------------------------------------

def thread_sched(pid):
    """{thread name: (ns on CPU, ns runnable but waiting)} from /proc/PID/task/*/schedstat."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                run_ns, wait_ns, _ = map(int, f.read().split())
        except FileNotFoundError:
            continue
        out[f"{name}/{tid}"] = (run_ns, wait_ns)
    return out


class AdminUnderLoadTest(AdminTestCase):
    def test_ready_answers_quickly_while_both_workers_are_saturated(self):
        upstream = self.start_upstream(workers=1, delay="10ms")
        # One permit and no queue: nearly every request is shed by sluice itself, so the load
        # costs sluice's workers CPU without waiting on the upstream.
        sluice = self.start_sluice(with_filters(upstream.port, [
            {"type": "fixed_semaphore", "max_concurrency": 1, "max_queue": 0}]))
        body_path = os.path.join(self.tmpdir, "empty.grpc")
        with open(body_path, "wb") as f:
            f.write(grpc_frame(pb.Request()))
        load_s = 4
        h2load = harness.ManagedProcess("h2load", [
            "h2load", "-D", str(load_s), "-t", "2", "-c", "16", "-m", "64", "-d", body_path,
            "-H", "content-type: application/grpc", "-H", "te: trailers",
            f"http://127.0.0.1:{sluice.port}{UNARY_PATH}"], self.tmpdir)
        self._processes.append(h2load)
        harness.wait_for(lambda: stats_json(sluice)["listener.ingress.downstream_rq_total"]
                         ["value"] > 1000, 5, what="the load to start")
        before = thread_sched(sluice.pid)
        t0 = time.monotonic_ns()
        latencies = []
        statuses = []
        while time.monotonic() < t0 / 1e9 + load_s - 1.0:
            start = time.monotonic()
            statuses.append(admin_request(sluice, "GET", "/ready", timeout=3)[0])
            latencies.append(time.monotonic() - start)
            time.sleep(0.05)
        after = thread_sched(sluice.pid)
        wall = time.monotonic_ns() - t0
        self.assertEqual(h2load.wait(load_s + 10), 0, h2load.log_tail())
        out = h2load.stdout()

        # The workers really were saturated: each was running or waiting for a CPU (runnable)
        # most of the time, never idle for want of work.
        busy = {}
        for name, (run, wait) in after.items():
            if name.startswith("sluice-w"):
                run0, wait0 = before.get(name, (0, 0))
                busy[name] = ((run - run0) + (wait - wait0)) / wall
        self.assertEqual(len(busy), 2, busy)
        summary = (f"worker busy fractions {busy}; /ready latencies ms: max "
                   f"{1000 * max(latencies):.1f}, median "
                   f"{1000 * sorted(latencies)[len(latencies) // 2]:.1f}, n={len(latencies)}")
        self.assertTrue(all(b > 0.5 for b in busy.values()), summary)
        self.assertEqual(set(statuses), {200}, summary)
        self.assertGreaterEqual(len(latencies), 20, summary)
        self.assertLess(max(latencies), 0.3, summary)
        m = re.search(r"(\d+) succeeded", out)
        self.assertIsNotNone(m, out)
        self.assertGreater(int(m.group(1)), 20_000, out)
        print(f"\n{summary}; h2load: {re.search(r'finished in .*', out).group(0)}")


if __name__ == "__main__":
    unittest.main()
