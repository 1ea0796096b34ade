"""Harness for sluice's integration tests: real processes on loopback ports, always cleaned up.

Run with /usr/bin/python3 (Debian's grpcio). Environment, set by ctest (integration/tests/
CMakeLists.txt):
  SLUICE_BIN         the sluice binary
  TEST_UPSTREAM_BIN  sluice-test-upstream
  TEST_CLIENT_BIN    sluice-test-client
  PYTHONPATH         must include the generated sluice_test_pb2 stubs
  SLUICE_DIRECT=1    optional: no sluice; clients talk to the upstream directly. Checks the tests'
                     own logic; start_sluice() then returns a stand-in whose .proc is the upstream.
  SLUICE_KEEP_TMP=1  optional: keep every test's temp dir (failed tests always keep theirs).

Every process is started with PR_SET_PDEATHSIG (via setpriv), so it dies with the test runner
even if ctest kills the runner on timeout; each test also has its own alarm
(IntegrationTestCase.TEST_TIMEOUT) that fails it, and cleanups kill and reap what it started.
"""

import atexit
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import grpc

import sluice_test_pb2 as pb
import sluice_test_pb2_grpc as pb_grpc

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
LOOPBACK = "127.0.0.1"

# Every process this runner started and has not reaped yet, for the atexit/signal safety net.
_LIVE = set()


def _kill_all_live():
    for proc in list(_LIVE):
        if proc.poll() is None:
            proc.kill()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        _LIVE.discard(proc)


def _on_fatal_signal(signum, _frame):
    _kill_all_live()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


atexit.register(_kill_all_live)
signal.signal(signal.SIGTERM, _on_fatal_signal)
signal.signal(signal.SIGHUP, _on_fatal_signal)

_SETPRIV = shutil.which("setpriv")


def _die_with_parent(argv):
    """`argv` wrapped so the process gets SIGKILL when the runner dies (PR_SET_PDEATHSIG, which
    survives exec). setpriv (util-linux) sets it without a preexec_fn, which is unsafe in a
    process that has threads (grpcio's). Start children from the main thread: the signal fires
    when the thread that forked them exits."""
    if _SETPRIV:
        return [_SETPRIV, "--pdeathsig", "KILL", "--", *argv]
    return list(argv)


def env_path(name):
    """The executable named by environment variable `name`; fails the test clearly if unusable."""
    path = os.environ.get(name, "")
    if not path:
        raise AssertionError(f"{name} is not set (ctest sets it from the CMake target; "
                             f"running by hand, export it)")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise AssertionError(f"{name}={path} is not an executable file: build it first")
    return path


def direct_mode():
    return os.environ.get("SLUICE_DIRECT", "") == "1"


def rss_bytes(pid):
    """Resident set size of a live process, from /proc/PID/status."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def wait_for(predicate, timeout, interval=0.02, what="condition"):
    """Polls `predicate` until it returns a truthy value (returned) or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def closed_port():
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def connect_refused(port, host=LOOPBACK):
    """True when a TCP connect to host:port is refused right away."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        try:
            s.connect((host, port))
        except ConnectionRefusedError:
            return True
        except OSError:
            return False
        return False


def grpc_frame(message):
    """A gRPC length-prefixed message (uncompressed), e.g. as an h2load request body."""
    data = message.SerializeToString()
    return b"\x00" + len(data).to_bytes(4, "big") + data


def service_time(seconds):
    """A Request.service_time value."""
    from google.protobuf import duration_pb2

    d = duration_pb2.Duration()
    d.FromNanoseconds(int(seconds * 1e9))
    return d


def make_channel(port, host=LOOPBACK):
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return grpc.insecure_channel(
        target,
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            # Loopback only: an http_proxy in the environment must not redirect the tests.
            ("grpc.enable_http_proxy", 0),
        ],
    )


class ManagedProcess:
    """A child process with its output in log files; terminate() or kill() reaps it."""

    def __init__(self, name, argv, workdir, env=None):
        self.name = name
        self.argv = argv
        self.stdout_path = os.path.join(workdir, f"{name}.stdout.log")
        self.stderr_path = os.path.join(workdir, f"{name}.stderr.log")
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                _die_with_parent(argv), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                env=env)
        _LIVE.add(self.proc)

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def rss_bytes(self):
        return rss_bytes(self.proc.pid)

    def signal(self, signum):
        if self.alive():
            self.proc.send_signal(signum)

    def wait(self, timeout):
        """Waits for exit; returns the exit code (negative: killed by that signal)."""
        code = self.proc.wait(timeout=timeout)
        _LIVE.discard(self.proc)
        return code

    def terminate(self, timeout=10):
        """SIGTERM, then SIGKILL if it does not exit within `timeout`. Returns the exit code."""
        self.signal(signal.SIGTERM)
        try:
            return self.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} ignored SIGTERM for {timeout}s; killed")

    def kill(self):
        if self.alive():
            self.proc.kill()
        self.proc.wait()
        _LIVE.discard(self.proc)

    def stdout(self):
        with open(self.stdout_path, errors="replace") as f:
            return f.read()

    def stderr(self):
        with open(self.stderr_path, errors="replace") as f:
            return f.read()

    def log_tail(self, lines=30):
        out = []
        for label, path in (("stdout", self.stdout_path), ("stderr", self.stderr_path)):
            with open(path, errors="replace") as f:
                tail = f.read().splitlines()[-lines:]
            out.append(f"--- {self.name} {label} ({path}) ---")
            out.extend(tail)
        return "\n".join(out)


class Upstream(ManagedProcess):
    """sluice-test-upstream on an ephemeral loopback port."""

    def __init__(self, name, workdir, flags):
        port_file = os.path.join(workdir, f"{name}.port")
        flags = dict(flags)
        host = flags.get("host", LOOPBACK)
        argv = [env_path("TEST_UPSTREAM_BIN"), "--port", str(flags.pop("port", 0)),
                "--port-file", port_file]
        for key, value in flags.items():
            flag = "--" + key.replace("_", "-")
            if value is True:
                argv.append(flag)
            elif isinstance(value, (list, tuple)):
                for item in value:
                    argv += [flag, str(item)]
            elif value is not None and value is not False:
                argv += [flag, str(value)]
        super().__init__(name, argv, workdir)
        self.port = int(wait_for(lambda: self._read_port(port_file), 10,
                                 what=f"{name} to write {port_file}"))
        self.host = host
        self.address = f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"
        self._channel = make_channel(self.port, host)
        self.stub = pb_grpc.TestServiceStub(self._channel)

    def _read_port(self, path):
        if not self.alive():
            raise AssertionError(f"{self.name} exited early:\n{self.log_tail()}")
        try:
            with open(path) as f:
                text = f.read().strip()
        except FileNotFoundError:
            return None
        return text or None

    def stats(self):
        return self.stub.Stats(pb.StatsRequest(), timeout=5)

    def reset_stats(self, restart_schedule=False):
        return self.stub.ResetStats(pb.ResetStatsRequest(restart_schedule=restart_schedule),
                                    timeout=5)

    def set_health(self, serving, service=""):
        """What its grpc.health.v1.Health/Check answers for `service` from now on."""
        self.stub.SetHealth(pb.SetHealthRequest(service=service, serving=serving), timeout=5)

    def unary_calls(self):
        return self.stats().calls_started["unary"]

    def final_stats(self):
        """The JSON counters the upstream prints on exit (after terminate())."""
        lines = [line for line in self.stdout().splitlines() if line.startswith("{")]
        if not lines:
            raise AssertionError(f"{self.name} printed no stats:\n{self.log_tail()}")
        return json.loads(lines[-1])

    def close(self):
        self._channel.close()


class Sluice(ManagedProcess):
    """The real sluice binary, ready once it wrote --ready-file (all listeners and admin bound)."""

    def __init__(self, name, workdir, config_text, extra_args=(), wrapper=()):
        config_path = os.path.join(workdir, f"{name}.yaml")
        ready_path = os.path.join(workdir, f"{name}.ready.json")
        with open(config_path, "w") as f:
            f.write(config_text)
        # `wrapper` runs before sluice and execs it (same pid), e.g. PrivateHosts.wrapper().
        argv = [*wrapper, env_path("SLUICE_BIN"), "--config", config_path, "--ready-file",
                ready_path, *extra_args]
        super().__init__(name, argv, workdir)
        self.config_path = config_path
        ready = wait_for(lambda: self._read_ready(ready_path), 15,
                         what=f"{name} to write {ready_path}")
        self.admin_port = int(ready["admin_port"])
        self.listeners = {k: int(v) for k, v in ready["listeners"].items()}
        self.port = self.listeners.get("ingress", next(iter(self.listeners.values()), None))

    def _read_ready(self, path):
        if not self.alive():
            raise AssertionError(f"{self.name} exited early:\n{self.log_tail()}")
        try:
            with open(path) as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def admin_get(self, path, timeout=5):
        """GET on the admin listener; returns (status, body text)."""
        status, _, body = admin_request(self, "GET", path, timeout=timeout)
        return status, body


class DirectSluice:
    """SLUICE_DIRECT=1 stand-in for Sluice: the 'proxy' is the upstream named by the config, so
    tests exercise their own logic against the upstream alone."""

    def __init__(self, port, upstream):
        self.port = port
        self.admin_port = None
        self.listeners = {"ingress": port}
        self.upstream = upstream
        self.name = "direct"

    @property
    def proc(self):
        return self.upstream.proc if self.upstream else None

    def __getattr__(self, attr):
        # signal/wait/terminate/rss_bytes/... act on the upstream standing in for sluice.
        if self.upstream is None:
            raise AttributeError(f"direct mode with no managed upstream has no {attr}")
        return getattr(self.upstream, attr)


def sluice_config(upstream_port, **overrides):
    """The standard test config (issue 2's shape) pointing at one upstream, as a dict. JSON is
    YAML, so the dict is written with json.dumps."""
    config = {
        "admin": {"address": f"{LOOPBACK}:0"},
        "workers": 2,
        "listeners": [{
            "name": "ingress",
            "address": f"{LOOPBACK}:0",
            "cluster": "app",
            "filters": [],
        }],
        "clusters": [{
            "name": "app",
            "endpoints": [f"{LOOPBACK}:{upstream_port}"],
            "connect_timeout": "1s",
        }],
        "drain_timeout": "5s",
    }
    config.update(overrides)
    return config


# --- the admin port ----------------------------------------------------------------------------

UNARY_PATH = "/sluice.test.TestService/Unary"


def admin_request(sluice, method, path, headers=None, timeout=5):
    """One request on the admin port; returns (status, headers dict lower-cased, body text)."""
    conn = http.client.HTTPConnection(LOOPBACK, sluice.admin_port, timeout=timeout)
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


def _first_endpoint_port(config):
    if isinstance(config, dict):
        endpoint = config["clusters"][0]["endpoints"][0]
    else:
        match = re.search(r"endpoints:\s*\[\s*['\"]?([^,\]'\"]+)", config)
        if not match:
            raise AssertionError("direct mode: no clusters[0].endpoints[0] in the config text")
        endpoint = match.group(1)
    return int(endpoint.rsplit(":", 1)[1])


class ClientProcess(ManagedProcess):
    """sluice-test-client running in the background; result() waits and parses its JSON."""

    def result(self, timeout=60):
        code = self.wait(timeout)
        if code not in (0, 3):
            raise AssertionError(f"sluice-test-client exited {code}:\n{self.log_tail()}")
        return json.loads(self.stdout())


class IntegrationTestCase(unittest.TestCase):
    """Base class: per-test temp dir, process bookkeeping, helpers."""

    TEST_TIMEOUT = 60  # seconds per test, enforced with SIGALRM
    REQUIRES_SLUICE = False  # True: fail at once, clearly, without SLUICE_BIN (unless direct)

    def setUp(self):
        if self.REQUIRES_SLUICE and not direct_mode():
            env_path("SLUICE_BIN")
        self.tmpdir = tempfile.mkdtemp(prefix=f"sluice-it-{self._testMethodName}-")
        self._processes = []
        self._channels = []
        self.addCleanup(self._cleanup)
        signal.signal(signal.SIGALRM, self._on_alarm)
        signal.alarm(self.TEST_TIMEOUT)

    def _on_alarm(self, _signum, _frame):
        raise AssertionError(f"test exceeded its {self.TEST_TIMEOUT}s timeout")

    def _failed(self):
        result = getattr(self._outcome, "result", None)
        if result is None:
            return True
        bad = list(getattr(result, "failures", [])) + list(getattr(result, "errors", []))
        return any(test is self for test, _ in bad) or not getattr(self._outcome, "success", True)

    def _cleanup(self):
        signal.alarm(0)
        failed = self._failed()
        for channel in self._channels:
            channel.close()
        for p in reversed(self._processes):
            p.kill()
            if isinstance(p, Upstream):
                p.close()
        if failed and self._processes:
            for p in self._processes:
                sys.stderr.write(p.log_tail() + "\n")
            sys.stderr.write(f"kept {self.tmpdir}\n")
        elif os.environ.get("SLUICE_KEEP_TMP") != "1":
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    # --- processes -------------------------------------------------------------------------

    def start_upstream(self, name="upstream", **flags):
        """sluice-test-upstream with --flag value for each keyword (underscores become dashes;
        True for bare flags, lists for repeated ones). Returns once it listens."""
        upstream = Upstream(name, self.tmpdir, flags)
        self._processes.append(upstream)
        return upstream

    def start_sluice(self, config, name="sluice", extra_args=(), wrapper=()):
        """sluice with `config` (a dict, or YAML text). Returns once its ready file says every
        listener and the admin server are bound. Direct mode: a DirectSluice instead."""
        if direct_mode():
            port = _first_endpoint_port(config)
            upstream = next((p for p in self._processes
                             if isinstance(p, Upstream) and p.port == port), None)
            return DirectSluice(port, upstream)
        text = json.dumps(config, indent=2) if isinstance(config, dict) else config
        sluice = Sluice(name, self.tmpdir, text, extra_args, wrapper)
        self._processes.append(sluice)
        return sluice

    def start_test_client(self, args, name=None):
        """sluice-test-client in the background; call .result() for its JSON."""
        name = name or f"client{len(self._processes)}"
        client = ClientProcess(name, [env_path("TEST_CLIENT_BIN"), *map(str, args)], self.tmpdir)
        self._processes.append(client)
        return client

    def run_test_client(self, args, timeout=60):
        """Runs sluice-test-client to completion; returns its JSON result as a dict."""
        return self.start_test_client(args).result(timeout)

    def stub(self, port):
        """A TestService stub on a fresh channel to 127.0.0.1:port, closed at cleanup."""
        channel = make_channel(port)
        self._channels.append(channel)
        return pb_grpc.TestServiceStub(channel)

    def run_h2load(self, port, body, requests, clients, streams, method="Unary", timeout=60):
        """h2load POSTing `body` (a gRPC frame) to TestService/`method`. Returns the counts of
        its 'requests:' line and 'status codes:' line as a dict."""
        body_path = os.path.join(self.tmpdir, f"h2load-{method}.bin")
        with open(body_path, "wb") as f:
            f.write(body)
        url = f"http://{LOOPBACK}:{port}/sluice.test.TestService/{method}"
        argv = ["h2load", "-n", str(requests), "-c", str(clients), "-m", str(streams),
                "-d", body_path, "-H", "content-type: application/grpc", "-H", "te: trailers",
                url]
        proc = subprocess.run(_die_with_parent(argv), capture_output=True, text=True,
                              timeout=timeout)
        out = proc.stdout
        m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                      r"(\d+) failed, (\d+) errored, (\d+) timeout", out)
        if proc.returncode != 0 or not m:
            raise AssertionError(f"h2load failed ({proc.returncode}):\n{out}\n{proc.stderr}")
        counts = dict(zip(("total", "started", "done", "succeeded", "failed", "errored",
                           "timeout"), map(int, m.groups())))
        codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
        counts["2xx"] = int(codes.group(1)) if codes else 0
        counts["output"] = out
        return counts


class AdminTestCase(IntegrationTestCase):
    """Base of the test_admin_* modules: the real sluice only, and calls that hold the upstream."""

    REQUIRES_SLUICE = True
    TEST_TIMEOUT = 30

    def setUp(self):
        super().setUp()
        if direct_mode():
            self.skipTest("admin endpoints need sluice")  # only in SLUICE_DIRECT=1 runs

    def hold_call(self, port, seconds, **request):
        """A unary call that occupies the upstream for `seconds`; returns its future."""
        return self.stub(port).Unary.future(
            pb.Request(service_time=service_time(seconds), **request), timeout=30)

    def wait_in_flight(self, upstream, n):
        wait_for(lambda: upstream.stats().in_flight == n, 5,
                 what=f"{n} call(s) in flight upstream")
