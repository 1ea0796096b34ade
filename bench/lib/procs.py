"""Processes a benchmark starts: the test upstream, sluice with a generated YAML, peer proxies.

Every child gets PR_SET_PDEATHSIG so it dies with the script, and is also killed at exit; nothing
is left listening after a run, even when the script fails halfway.
"""

import atexit
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LOOPBACK = "127.0.0.1"

_LIVE = []
_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _kill_all():
    for proc in list(_LIVE):
        if proc.poll() is None:
            proc.kill()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
    _LIVE.clear()


atexit.register(_kill_all)
for _sig in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(_sig, lambda signum, _frame: (_kill_all(), sys.exit(128 + signum)))


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Binaries:
    """Locates the built tools: --build DIR, else $SLUICE_BUILD_DIR, else the newest build*/ dir
    of the repository that has the load generator and the test upstream."""

    def __init__(self, build_dir=None):
        self.build = self._find_build(build_dir or os.environ.get("SLUICE_BUILD_DIR"))
        self.loadgen = os.path.join(self.build, "tools", "loadgen", "sluice-loadgen")
        self.upstream = os.path.join(self.build, "integration", "upstream", "sluice-test-upstream")
        sluice = os.environ.get("SLUICE_BIN") or os.path.join(self.build, "src", "sluice")
        self.sluice = sluice if os.access(sluice, os.X_OK) else None
        # Reports name the binary they measured (report.environment()).
        os.environ["SLUICE_BENCH_BINARY"] = self.sluice or "none"
        self.pystubs = os.path.join(self.build, "integration", "proto", "python")

    @staticmethod
    def _find_build(explicit):
        def complete(d):
            return all(os.access(os.path.join(d, p), os.X_OK) for p in (
                "tools/loadgen/sluice-loadgen", "integration/upstream/sluice-test-upstream"))
        if explicit:
            if not complete(explicit):
                raise SystemExit(f"bench: {explicit} lacks sluice-loadgen or sluice-test-upstream;"
                                 " build targets sluice-loadgen sluice-test-upstream sluice")
            return os.path.abspath(explicit)
        candidates = [os.path.join(REPO, d) for d in os.listdir(REPO) if d.startswith("build")]
        candidates = [d for d in candidates if complete(d)]
        if not candidates:
            raise SystemExit("bench: no build directory with sluice-loadgen and "
                             "sluice-test-upstream; pass --build DIR")
        return max(candidates, key=lambda d: os.path.getmtime(
            os.path.join(d, "tools/loadgen/sluice-loadgen")))


def start(argv, log_path, cpus=None, env=None):
    """Starts a child (optionally pinned with taskset), stdout+stderr to log_path."""
    if cpus is not None:
        argv = ["taskset", "-c", str(cpus)] + list(argv)
    out = open(log_path, "wb")
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            preexec_fn=_die_with_parent, env=env)
    out.close()
    _LIVE.append(proc)
    return proc


def stop(proc, timeout=5):
    if proc is None:
        return
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc in _LIVE:
        _LIVE.remove(proc)


def died(**procs):
    """Names (and exit codes) of the given processes that are no longer running: a run during
    which the upstream or sluice exited (crash, or a stray kill from elsewhere) is invalid."""
    return [f"{name} exited ({p.poll()})" for name, p in procs.items()
            if p is not None and p.poll() is not None]


def wait_for_file(path, proc, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            with open(path) as f:
                text = f.read()
            if text.strip():
                return text
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before writing {path}")
        time.sleep(0.02)
    raise RuntimeError(f"timed out waiting for {path}")


def wait_for_port(port, timeout=10):
    import socket
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection((LOOPBACK, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"nothing listens on {port}")


def free_port():
    import socket
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def cpu_ticks(pid):
    """utime + stime of a process, in clock ticks (/proc/<pid>/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


CLK_TCK = os.sysconf("SC_CLK_TCK")


class Upstream:
    """sluice-test-upstream on an ephemeral loopback port."""

    def __init__(self, bins, workdir, workers=1, delay="10ms", schedule=None, extra=(),
                 cpus=None, name="upstream"):
        port_file = os.path.join(workdir, f"{name}.port")
        if os.path.exists(port_file):
            os.unlink(port_file)  # a stale one (same name run again) would name a dead port
        argv = [bins.upstream, "--host", LOOPBACK, "--port", "0", "--port-file", port_file,
                "--workers", str(workers), "--delay", delay]
        if schedule:
            argv += ["--schedule", schedule]
        argv += list(extra)
        self.proc = start(argv, os.path.join(workdir, f"{name}.log"), cpus=cpus)
        self.port = int(wait_for_file(port_file, self.proc).strip())
        self.target = f"{LOOPBACK}:{self.port}"
        self._stub = None
        self._pystubs = bins.pystubs

    def stats(self):
        """The upstream's Stats RPC as a dict, or None when stubs or the call are unavailable."""
        try:
            if self._stub is None:
                if self._pystubs not in sys.path:
                    sys.path.insert(0, self._pystubs)
                import grpc
                import sluice_test_pb2 as pb
                import sluice_test_pb2_grpc as pb_grpc
                self._pb = pb
                channel = grpc.insecure_channel(self.target,
                                                options=[("grpc.enable_http_proxy", 0)])
                self._stub = pb_grpc.TestServiceStub(channel)
            r = self._stub.Stats(self._pb.StatsRequest(), timeout=1)
            return {"messages_processed": r.messages_processed, "in_flight": r.in_flight,
                    "queue_length": r.queue_length, "busy_workers": r.busy_workers,
                    "calls_cancelled": r.calls_cancelled, "jobs_dropped": r.jobs_dropped,
                    "max_in_service": r.max_in_service}
        except Exception:  # noqa: BLE001 - sampling must never stop a run
            return None

    def reset(self, restart_schedule=True):
        self.stats()
        if self._stub is not None:
            self._stub.ResetStats(self._pb.ResetStatsRequest(restart_schedule=restart_schedule),
                                  timeout=2)

    def stop(self):
        stop(self.proc)


def sluice_yaml(upstream_target, filters, workers=1, http2=None, extra_listener=None,
                admin_port=0):
    listener = {"name": "ingress", "address": f"{LOOPBACK}:0", "cluster": "app",
                "filters": filters}
    if http2:
        listener["http2"] = http2
    if extra_listener:
        listener.update(extra_listener)
    return {
        "workers": workers,
        "admin": {"address": f"{LOOPBACK}:{admin_port}"},
        "listeners": [listener],
        "clusters": [{"name": "app", "endpoints": [upstream_target]}],
        # SLUICE_BENCH_LOG_LEVEL=debug: one line per limiter decision in <workdir>/sluice.log.
        "log_level": os.environ.get("SLUICE_BENCH_LOG_LEVEL", "warn"),
    }


class Sluice:
    """sluice with a generated YAML; ports come from its --ready-file."""

    def __init__(self, bins, workdir, config, cpus=None, name="sluice", binary=None):
        binary = binary or bins.sluice
        if not binary:
            raise RuntimeError("no sluice binary (build target sluice or set SLUICE_BIN)")
        self.config_path = os.path.join(workdir, f"{name}.yaml")
        with open(self.config_path, "w") as f:
            yaml.safe_dump(config, f, sort_keys=False)
        ready = os.path.join(workdir, f"{name}.ready.json")
        if os.path.exists(ready):
            os.unlink(ready)
        self.proc = start([binary, "--config", self.config_path, "--ready-file", ready],
                          os.path.join(workdir, f"{name}.log"), cpus=cpus)
        info = json.loads(wait_for_file(ready, self.proc))
        self.admin_port = info["admin_port"]
        # None for a sluice without that listener (a queue consumer only).
        self.port = info["listeners"].get("ingress")
        self.target = f"{LOOPBACK}:{self.port}"
        self.pid = self.proc.pid

    def admin(self, path, timeout=1.0):
        import urllib.request
        with urllib.request.urlopen(f"http://{LOOPBACK}:{self.admin_port}{path}",
                                    timeout=timeout) as r:
            return json.loads(r.read())

    def stop(self):
        stop(self.proc)


class RedisServer:
    """redis-server without persistence on a free loopback port (queue mode)."""

    def __init__(self, workdir, name="redis", cpus=None):
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (scripts/setup.sh bench)")
        self.port = free_port()
        self.proc = start([binary, "--port", str(self.port), "--bind", LOOPBACK, "--save", "",
                           "--appendonly", "no", "--dir", workdir],
                          os.path.join(workdir, f"{name}.log"), cpus=cpus)
        wait_for_port(self.port)
        self.target = f"{LOOPBACK}:{self.port}"
        self.pid = self.proc.pid

    def stop(self):
        stop(self.proc)


def workdir(prefix):
    return tempfile.mkdtemp(prefix=f"sluice-bench-{prefix}-")
