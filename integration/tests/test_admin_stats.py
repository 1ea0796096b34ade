"""The admin endpoint's stats views end to end (issue 4): a real sluice between real gRPC clients
and the test upstream, with counters that agree with the traffic the test sent, the text and
JSON views agreeing, ?filter=, and /stats/prometheus through a strict parser (tested here too).
The other endpoints: test_admin_info.py, test_admin_readiness.py, test_admin_access_log.py."""

import math
import re
import unittest

import grpc

import harness
from harness import AdminTestCase, admin_request, grpc_frame, stats_json, with_filters
import sluice_test_pb2 as pb


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


# --- the stats endpoints -----------------------------------------------------------------------

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


if __name__ == "__main__":
    unittest.main()
