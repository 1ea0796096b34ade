"""Live reload (issue 15) through the real binary: SIGHUP and POST /config/reload re-read the
file; a broken file or a change that needs a restart is refused whole and reported; filter
chains change under load from one gRPC connection without a failed call; limiter state carries
over; many reloads leave memory and file descriptors flat. Listeners added, removed, moved or
re-pointed by a reload: test_reload_listeners.py."""

import json
import os
import signal
import threading
import time
import unittest

import grpc

import harness
import raw_h2
from hardening_support import sanitized
from harness import IntegrationTestCase, sluice_config
import sluice_test_pb2 as pb


def admin_post(sluice, path, timeout=10):
    import http.client

    conn = http.client.HTTPConnection(harness.LOOPBACK, sluice.admin_port, timeout=timeout)
    try:
        conn.request("POST", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace")
    finally:
        conn.close()


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


class Load:
    """`callers` threads calling Unary in a loop on one stub (one channel: one HTTP/2
    connection) until stop(); counts successes and keeps every failure."""

    def __init__(self, stub, callers):
        self.ok = 0
        self.failures = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._stub = stub
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(callers)]
        for t in self._threads:
            t.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                self._stub.Unary(pb.Request(), timeout=20)
                with self._lock:
                    self.ok += 1
            except grpc.RpcError as e:
                with self._lock:
                    self.failures.append(f"{e.code()}: {e.details()}")

    def count(self):
        with self._lock:
            return self.ok

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)
        return self.ok, self.failures


class ReloadTestCase(IntegrationTestCase):
    REQUIRES_SLUICE = True
    TEST_TIMEOUT = 90

    def setUp(self):
        super().setUp()
        if harness.direct_mode():
            self.skipTest("reload needs sluice")

    def config(self, upstream, filters, **overrides):
        config = sluice_config(upstream.port, **overrides)
        config["listeners"][0]["filters"] = filters
        return config

    def rewrite(self, sluice, config):
        """Replaces the running sluice's config file (atomically, as an editor or a ConfigMap
        update would)."""
        text = json.dumps(config, indent=2) if isinstance(config, dict) else config
        tmp = sluice.config_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, sluice.config_path)

    def reload(self, sluice, config=None, expect=200):
        if config is not None:
            self.rewrite(sluice, config)
        status, body = admin_post(sluice, "/config/reload")
        self.assertEqual(status, expect, body)
        return json.loads(body)

    def server_info(self, sluice):
        status, body = sluice.admin_get("/server_info")
        self.assertEqual(status, 200)
        return json.loads(body)

    def stats(self, sluice):
        status, body = sluice.admin_get("/stats?format=json")
        self.assertEqual(status, 200)
        data = json.loads(body)
        entries = data["stats"] if isinstance(data, dict) else data
        return {e["name"]: e.get("value") for e in entries}

    def limits(self, sluice, filter_name):
        status, body = sluice.admin_get("/limits")
        self.assertEqual(status, 200)
        data = json.loads(body)
        entries = data["limiters"] if isinstance(data, dict) else data
        for entry in entries:
            if entry["filter"] == filter_name:
                return entry
        raise AssertionError(f"no limiter {filter_name} in {body}")

    def measure_concurrency(self, upstream, seconds=1.0):
        """The most calls the upstream served at once over the next `seconds` (max_in_service:
        exact, unlike max_in_flight, which overlaps the next call by gRPC's OnDone delay)."""
        upstream.reset_stats()
        time.sleep(seconds)
        return upstream.stats().max_in_service


class TriggerTest(ReloadTestCase):
    def test_post_reload_applies_answers_json_and_shows_in_server_info(self):
        upstream = self.start_upstream()
        config = self.config(upstream, [])
        sluice = self.start_sluice(config)
        before = self.server_info(sluice)["config"]
        self.assertRegex(before["version"], r"^[0-9a-f]{16}$")
        self.assertIsNone(before["last_reload"])

        config["log_level"] = "debug"
        answer = self.reload(sluice, config)
        self.assertTrue(answer["ok"], answer)
        self.assertEqual(answer["trigger"], "admin")
        self.assertEqual(answer["changes"], ['log_level: "info" -> "debug"'])
        after = self.server_info(sluice)["config"]
        self.assertNotEqual(after["version"], before["version"])
        self.assertEqual(after["version"], answer["version"])
        self.assertTrue(after["last_reload"]["ok"])
        self.assertEqual(json.loads(sluice.admin_get("/config_dump")[1])["log_level"], "debug")
        stats = self.stats(sluice)
        self.assertEqual(stats["server.config_reload_total"], 1)
        self.assertEqual(stats["server.config_reload_failed_total"], 0)
        self.assertIn("config reloaded (admin)", sluice.stderr())

    def test_sighup_reloads_and_the_process_keeps_running(self):
        upstream = self.start_upstream()
        config = self.config(upstream, [])
        sluice = self.start_sluice(config)
        config["drain_timeout"] = "7s"
        self.rewrite(sluice, config)
        sluice.signal(signal.SIGHUP)
        info = harness.wait_for(
            lambda: (self.server_info(sluice)["config"]["last_reload"] or None), 5,
            what="the SIGHUP reload")
        self.assertTrue(info["ok"], info)
        self.assertEqual(info["trigger"], "SIGHUP")
        self.assertTrue(sluice.alive())
        self.assertEqual(json.loads(sluice.admin_get("/config_dump")[1])["drain_timeout"], "7s")
        self.stub(sluice.port).Unary(pb.Request(), timeout=5)

    def test_an_invalid_file_is_refused_with_where_and_nothing_changes(self):
        upstream = self.start_upstream(delay="20ms")
        config = self.config(upstream, [{"type": "fixed_semaphore", "max_concurrency": 3}])
        sluice = self.start_sluice(config)
        version = self.server_info(sluice)["config"]["version"]
        load = Load(self.stub(sluice.port), 10)
        try:
            broken = (json.dumps(config, indent=2)
                      .replace('"max_concurrency": 3', '"max_concurrency": "lots"'))
            answer = self.reload(sluice, broken, expect=400)
            self.assertFalse(answer["ok"])
            self.assertFalse(answer["needs_restart"])
            # file:line:col: at YAML path: message, exactly as at startup.
            self.assertRegex(answer["error"],
                             r"sluice\.yaml:\d+:\d+: at listeners\[0\]\.filters\[0\]\."
                             r"max_concurrency: ")
            self.assertEqual(answer["version"], version)
            info = self.server_info(sluice)["config"]
            self.assertEqual(info["version"], version)
            self.assertFalse(info["last_reload"]["ok"])
            self.assertEqual(info["last_reload"]["error"], answer["error"])
            self.assertEqual(self.stats(sluice)["server.config_reload_failed_total"], 1)
            self.assertIn(answer["error"], sluice.stderr())
            # The old limit keeps being enforced.
            self.assertEqual(self.measure_concurrency(upstream), 3)
        finally:
            ok, failures = load.stop()
        self.assertEqual(failures, [])
        self.assertGreater(ok, 50)

    def test_workers_and_admin_address_changes_are_refused_saying_they_need_a_restart(self):
        upstream = self.start_upstream()
        config = self.config(upstream, [])
        sluice = self.start_sluice(config)
        changed = dict(config, workers=3, admin={"address": "127.0.0.1:1"})
        answer = self.reload(sluice, changed, expect=409)
        self.assertTrue(answer["needs_restart"])
        self.assertIn("need a restart", answer["error"])
        self.assertIn("workers: 2 -> 3", answer["error"])
        self.assertIn("admin.address: 127.0.0.1:0 -> 127.0.0.1:1", answer["error"])
        self.assertEqual(json.loads(sluice.admin_get("/config_dump")[1])["workers"], 2)
        self.assertEqual(self.stats(sluice)["server.config_reload_failed_total"], 1)


class FilterChainTest(ReloadTestCase):
    def test_a_semaphore_limit_raised_and_lowered_is_enforced_exactly_on_one_connection(self):
        upstream = self.start_upstream(delay="20ms")
        config = self.config(upstream, [{"type": "fixed_semaphore", "max_concurrency": 4}])
        sluice = self.start_sluice(config)
        load = Load(self.stub(sluice.port), 16)
        seen = {}
        try:
            seen[4] = self.measure_concurrency(upstream)
            for limit in (8, 2, 5):
                config["listeners"][0]["filters"][0]["max_concurrency"] = limit
                answer = self.reload(sluice, config)
                self.assertEqual(answer["changes"], ['listeners[0] ("ingress").filters'])
                # Calls admitted under a higher limit finish (never revoked): one service time.
                time.sleep(0.2)
                seen[limit] = self.measure_concurrency(upstream)
                self.assertEqual(self.limits(sluice, "fixed_semaphore")["limit"], limit)
        finally:
            ok, failures = load.stop()
        self.assertEqual(seen, {4: 4, 8: 8, 2: 2, 5: 5})
        self.assertEqual(failures, [])
        stats = self.stats(sluice)
        self.assertEqual(stats["listener.ingress.downstream_cx_total"], 1, "one connection")
        self.assertEqual(stats["listener.ingress.downstream_cx_active"], 1, "it survived")
        # The kept filter's stats continued across the reloads.
        self.assertEqual(stats["filter.ingress.fixed_semaphore.admitted_total"], ok)
        self.assertEqual(stats["server.config_reload_total"], 3)
        print(f"\nmax concurrency at the upstream per limit {seen}; {ok} calls, none failed")

    def test_filter_order_types_and_budgets_change_for_new_calls(self):
        upstream = self.start_upstream(delay="200ms")
        config = self.config(upstream, [{"type": "fixed_semaphore", "max_concurrency": 1}])
        sluice = self.start_sluice(config)
        stub = self.stub(sluice.port)
        held = stub.Unary.future(pb.Request(), timeout=10)
        harness.wait_for(lambda: upstream.stats().busy_workers == 1, 5, what="held call")
        # A budget in front: a new call that waits longer than 50 ms for the semaphore is shed.
        config["listeners"][0]["filters"].insert(0, {"type": "queue_wait_budget",
                                                     "budget": "50ms"})
        self.reload(sluice, config)
        with self.assertRaises(grpc.RpcError) as cm:
            stub.Unary(pb.Request(), timeout=5)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertEqual(cm.exception.details(), "queue wait budget 50ms exceeded")
        held.result()
        self.assertEqual(self.stats(sluice)["filter.ingress.queue_wait_budget.shed_budget_total"],
                         1)

    def test_rtt_gradient_state_carries_over_clamped_into_the_new_bounds(self):
        upstream = self.start_upstream(delay="10ms")
        filt = {"type": "rtt_gradient", "initial_limit": 20, "min_limit": 1, "max_limit": 100}
        config = self.config(upstream, [filt])
        sluice = self.start_sluice(config)
        # Few callers: demand below the limit, so it neither grows nor shrinks; baselines form.
        load = Load(self.stub(sluice.port), 3)
        try:
            before = harness.wait_for(
                lambda: (lambda s: s if s["baselines"] and s["baselines"][0]["samples"] >= 50
                         else None)(self.limits(sluice, "rtt_gradient")), 15,
                what="a baseline")
            filt.update(initial_limit=5, tolerance=0.8)
            self.reload(sluice, config)
            after = self.limits(sluice, "rtt_gradient")
            self.assertEqual(after["limit"], before["limit"], "the limit carried over")
            self.assertEqual(after["baselines"][0]["method"], before["baselines"][0]["method"])
            self.assertGreaterEqual(after["baselines"][0]["samples"],
                                    before["baselines"][0]["samples"], "baselines carried over")
            self.assertEqual(json.loads(sluice.admin_get("/config_dump")[1])
                             ["listeners"][0]["filters"][0]["tolerance"], 0.8)

            lowered = before["limit"] - 8
            filt.update(max_limit=lowered)
            self.reload(sluice, config)
            after = self.limits(sluice, "rtt_gradient")
            self.assertEqual(after["limit"], lowered, "clamped into the new max_limit")
            self.assertEqual(after["recent_decisions"][-1]["reason"],
                             f"reload: clamped into min_limit 1, max_limit {lowered}")
            self.assertEqual(self.measure_concurrency(upstream, 0.5) <= lowered, True)
        finally:
            ok, failures = load.stop()
        self.assertEqual(failures, [])
        print(f"\nrtt_gradient limit {before['limit']} kept across a reload, then clamped to "
              f"{lowered}; baseline {before['baselines'][0]}")


class OtherSettingsTest(ReloadTestCase):
    def test_the_access_log_is_turned_on_and_off_live(self):
        upstream = self.start_upstream()
        config = self.config(upstream, [])
        sluice = self.start_sluice(config)
        stub = self.stub(sluice.port)
        stub.Unary(pb.Request(), timeout=5)
        path = os.path.join(self.tmpdir, "access.log")
        config["admin"]["access_log"] = {"enabled": True, "path": path}
        answer = self.reload(sluice, config)
        self.assertIn("admin.access_log.enabled: false -> true", answer["changes"])
        for _ in range(3):
            stub.Unary(pb.Request(), timeout=5)
        config["admin"]["access_log"] = {"enabled": False, "path": path}
        self.reload(sluice, config)
        stub.Unary(pb.Request(), timeout=5)

        # The old log is flushed and closed once its last request has ended.
        def read_lines():
            if not os.path.exists(path):
                return None
            with open(path) as f:
                lines = f.read().splitlines()
            return lines if len(lines) == 3 else None

        lines = harness.wait_for(read_lines, 5, what="three access log lines")
        self.assertTrue(all(json.loads(line)["outcome"] == "completed" for line in lines))

    def max_concurrent_streams(self, port):
        """SETTINGS_MAX_CONCURRENT_STREAMS in sluice's first SETTINGS on a new connection."""
        c = raw_h2.RawH2(port)
        try:
            return c.handshake().get(raw_h2.SETTINGS_MAX_CONCURRENT_STREAMS)
        finally:
            c.close()

    def test_http2_settings_and_limits_reach_new_connections_and_open_ones_keep_theirs(self):
        upstream = self.start_upstream()
        config = self.config(upstream, [])
        sluice = self.start_sluice(config)
        old = self.stub(sluice.port)  # one connection, opened before the reload
        old.Unary(pb.Request(), timeout=5)
        self.assertEqual(self.max_concurrent_streams(sluice.port), 100)
        changed = json.loads(json.dumps(config))
        changed["listeners"][0]["http2"] = {"max_concurrent_streams": 7}
        changed["listeners"][0]["limits"] = {"max_connections": 3}
        answer = self.reload(sluice, changed)
        self.assertIn('listeners[0] ("ingress").http2.max_concurrent_streams: 100 -> 7',
                      answer["changes"])
        self.assertEqual(self.max_concurrent_streams(sluice.port), 7)
        old.Unary(pb.Request(), timeout=5)  # the open connection still works
        # The new connection limit counts the connections already open: with the old one and
        # two more, a fourth is refused.
        refused = "listener.ingress.downstream_cx_refused_total"
        self.assertEqual(self.stats(sluice).get(refused, 0), 0)
        held = [raw_h2.RawH2(sluice.port) for _ in range(2)]
        try:
            for c in held:
                c.handshake()
            extra = raw_h2.RawH2(sluice.port)
            self.assertTrue(extra.read_all(2), "a connection beyond the new cap was kept")
            extra.close()
            self.assertEqual(self.stats(sluice).get(refused, 0), 1)
        finally:
            for c in held:
                c.close()


class WatchConfigTest(ReloadTestCase):
    def last_reload(self, sluice, count):
        """The last reload once server.config_reload_total + _failed_total reaches `count`."""
        def done():
            stats = self.stats(sluice)
            n = stats["server.config_reload_total"] + stats["server.config_reload_failed_total"]
            return self.server_info(sluice)["config"]["last_reload"] if n >= count else None
        return harness.wait_for(done, 5, what=f"reload #{count}")

    def test_a_kubernetes_style_symlink_swap_is_seen_and_a_broken_version_reported_once(self):
        upstream = self.start_upstream(delay="20ms")
        config = self.config(upstream, [{"type": "fixed_semaphore", "max_concurrency": 2}],
                             watch_config=True)
        sluice = self.start_sluice(config)
        # Lay the file out as kubelet mounts a ConfigMap: path -> ..data/sluice.yaml, and
        # ..data -> a versioned directory that an update replaces by swapping the symlink.
        root = os.path.join(self.tmpdir, "configmap")

        def publish(version, text):
            os.makedirs(os.path.join(root, version))
            with open(os.path.join(root, version, "sluice.yaml"), "w") as f:
                f.write(text)
            tmp = os.path.join(root, "..data_tmp")
            os.symlink(version, tmp)
            os.replace(tmp, os.path.join(root, "..data"))

        config["listeners"][0]["filters"][0]["max_concurrency"] = 3
        publish("v1", json.dumps(config))
        link = os.path.join(self.tmpdir, "link.yaml")
        os.symlink(os.path.join(root, "..data", "sluice.yaml"), link)
        os.replace(link, sluice.config_path)
        first = self.last_reload(sluice, 1)
        self.assertTrue(first["ok"], first)
        self.assertEqual(first["trigger"], "watch")
        self.assertEqual(self.limits(sluice, "fixed_semaphore")["limit"], 3)

        config["listeners"][0]["filters"][0]["max_concurrency"] = 5
        publish("v2", json.dumps(config))
        second = self.last_reload(sluice, 2)
        self.assertTrue(second["ok"], second)
        self.assertEqual(self.limits(sluice, "fixed_semaphore")["limit"], 5)
        load = Load(self.stub(sluice.port), 10)
        try:
            self.assertEqual(self.measure_concurrency(upstream), 5)
        finally:
            ok, failures = load.stop()
        self.assertEqual(failures, [])

        publish("v3", json.dumps(config).replace('"max_concurrency": 5', '"max_concurrency": 0'))
        third = self.last_reload(sluice, 3)
        self.assertFalse(third["ok"])
        self.assertIn("max_concurrency", third["error"])
        time.sleep(2.5)  # more polls of the same broken content: not retried
        stats = self.stats(sluice)
        self.assertEqual(stats["server.config_reload_failed_total"], 1)
        self.assertEqual(stats["server.config_reload_total"], 2)
        self.assertEqual(self.limits(sluice, "fixed_semaphore")["limit"], 5)

    def test_without_watch_config_a_changed_file_waits_for_a_trigger(self):
        upstream = self.start_upstream()
        config = self.config(upstream, [{"type": "fixed_semaphore", "max_concurrency": 2}])
        sluice = self.start_sluice(config)
        config["listeners"][0]["filters"][0]["max_concurrency"] = 4
        self.rewrite(sluice, config)
        time.sleep(1.5)
        self.assertIsNone(self.server_info(sluice)["config"]["last_reload"])
        self.assertEqual(self.limits(sluice, "fixed_semaphore")["limit"], 2)


class ManyReloadsTest(ReloadTestCase):
    def test_100_reloads_in_10s_under_load_no_failed_call_flat_rss_and_fds(self):
        upstream = self.start_upstream(delay="5ms")
        small = self.config(upstream, [
            {"type": "queue_wait_budget", "budget": "5s"},
            {"type": "fixed_semaphore", "max_concurrency": 4}])
        # Kept filters with new options, plus a filter added and removed each time (its
        # controller, gate and stats shards come and go).
        large = self.config(upstream, [
            {"type": "queue_wait_budget", "budget": "4s"},
            {"type": "fixed_semaphore", "max_concurrency": 8},
            {"type": "rtt_gradient", "name": "extra", "initial_limit": 50, "max_limit": 100}],
            log_level="debug")
        configs = [json.dumps(c, indent=2) for c in (large, small)]
        sluice = self.start_sluice(small)
        load = Load(self.stub(sluice.port), 16)
        answers = []

        def reload_n(n, period):
            start = time.monotonic()
            for i in range(n):
                answers.append(self.reload(sluice, configs[i % 2]))
                time.sleep(max(0.0, start + (i + 1) * period - time.monotonic()))
            return time.monotonic() - start

        try:
            reload_n(20, 0.05)  # warm up: allocator pools, stats of both shapes registered
            time.sleep(0.5)
            rss_before, fds_before = sluice.rss_bytes(), open_fds(sluice.pid)
            calls_before = load.count()
            elapsed = reload_n(100, 0.1)
            time.sleep(0.5)
            rss_after, fds_after = sluice.rss_bytes(), open_fds(sluice.pid)
            calls = load.count() - calls_before
        finally:
            ok, failures = load.stop()
        self.assertTrue(all(a["ok"] for a in answers), [a for a in answers if not a["ok"]][:3])
        self.assertEqual(failures, [])
        self.assertLessEqual(elapsed, 11.0)
        self.assertGreater(calls, 1000)
        stats = self.stats(sluice)
        self.assertEqual(stats["server.config_reload_total"], 120)
        self.assertEqual(stats["listener.ingress.downstream_cx_total"], 1)
        self.assertEqual(fds_after, fds_before)
        if not sanitized(sluice.pid):  # a sanitizer's shadow memory moves RSS on its own
            self.assertLess(rss_after - rss_before, 1 << 20, (rss_before, rss_after))
        print(f"\n100 reloads in {elapsed:.1f}s under load: {calls} calls, none failed; RSS "
              f"{rss_before / 2**20:.2f} -> {rss_after / 2**20:.2f} MiB, fds {fds_before} -> "
              f"{fds_after}")


if __name__ == "__main__":
    unittest.main()
