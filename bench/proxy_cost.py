#!/usr/bin/python3
"""Scenario 5, proxy cost: h2load with unary gRPC-shaped POSTs (c=16, m=32, one client thread)
direct to a fast upstream and through sluice, nghttpx, HAProxy and nginx (grpc_pass), each proxy
with one worker pinned to CPU 1 (h2load and the upstream share CPU 0), interleaved rounds.
Reports req/s, p50/p99, proxy CPU microseconds per request (utime+stime from /proc/<pid>/stat)
and RSS. Peer configurations are generated into a temp dir; everything listens on 127.0.0.1.

Admission cost (issue 13): sluice variants with the filter chain [queue_wait_budget,
rtt_gradient], with one worker and with two (still pinned to CPU 1: the second worker adds the
cross-worker hand-offs a shared lock would cost, not CPU), next to the same without filters.
The rtt_gradient limit is held above the 512 calls h2load keeps in flight (min_limit 600) so every
call is admitted and none is shed (a shed is cheaper than a proxied call and would flatter the
figure); the algorithm still takes every sample and every decision. sluice's own stats confirm
nothing was shed.
"""

import os
import re
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import plots  # noqa: E402
import report  # noqa: E402
from loadgen import nearest_rank  # noqa: E402
from procs import (CLK_TCK, LOOPBACK, Binaries, Sluice, Upstream,  # noqa: E402
                   cpu_ticks, free_port, log, rss_kb, sluice_yaml, start, stop, wait_for_port,
                   workdir)

PROXY_CPU = 1
LOAD_CPU = 0
PATH = "/sluice.test.TestService/Unary"
# Filter chain of the admission-cost targets (see the module docstring).
ADMISSION_FILTERS = [
    {"type": "queue_wait_budget", "budget": "50ms"},
    {"type": "rtt_gradient", "initial_limit": 600, "min_limit": 600, "max_limit": 1000},
]
# sluice targets: name -> (workers, filters)
SLUICE_TARGETS = {
    "sluice": (1, []),
    "sluice-filters": (1, ADMISSION_FILTERS),
    "sluice-w2": (2, []),
    "sluice-w2-filters": (2, ADMISSION_FILTERS),
}


def extra_args(p):
    p.add_argument("--duration", type=int, default=10, help="seconds per measured run")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--targets",
                   help="comma-separated subset of direct,sluice,sluice-filters,sluice-w2,"
                        "sluice-w2-filters,nghttpx,haproxy,nginx")
    p.add_argument("--sluice-b", metavar="BINARY",
                   help="A/B: also run target `sluice-b`, the same setup as `sluice` with this "
                        "binary (e.g. one built from the commit before a change), interleaved")
    p.add_argument("--upstream", choices=("fast", "grpc"), default="fast",
                   help="fast: nghttpd serving a fixed gRPC-framed body (no trailers), as in the "
                        "peer measurements; grpc: the grpc++ test upstream (the bottleneck)")
    p.add_argument("--upstream-max-streams", type=int, default=1000,
                   help="SETTINGS_MAX_CONCURRENT_STREAMS of the fast upstream (nghttpd -m). gRPC "
                        "servers (grpc++, grpc-go, grpc-java) advertise no limit; nghttpd's own "
                        "default is 100, which makes a proxy open one upstream connection per "
                        "100 of the 512 calls in flight (or queue them)")


class FastUpstream:
    """nghttpd (nghttp2-server) answering every POST with a static 5-byte gRPC frame: a fast
    HTTP/2 upstream, so the proxy and not the service is what the run measures."""

    def __init__(self, work, max_streams):
        root = os.path.join(work, "www", PATH.strip("/").split("/")[0])
        os.makedirs(root, exist_ok=True)
        with open(os.path.join(root, PATH.rsplit("/", 1)[1]), "wb") as f:
            f.write(b"\x00\x00\x00\x00\x00")
        self.port = free_port()
        self.proc = start(["nghttpd", "--no-tls", f"--max-concurrent-streams={max_streams}", "-d",
                           os.path.join(work, "www"), str(self.port)],
                          os.path.join(work, "nghttpd.log"), cpus=LOAD_CPU)
        wait_for_port(self.port)
        self.target = f"{LOOPBACK}:{self.port}"

    def stop(self):
        stop(self.proc)


class Peer:
    """A peer proxy process with the pid whose CPU we measure."""

    def __init__(self, proc, port, pid=None):
        self.proc, self.port, self.pid = proc, port, pid or proc.pid

    def stop(self):
        stop(self.proc)


def start_nghttpx(work, up_port):
    port = free_port()
    argv = ["nghttpx", f"--frontend={LOOPBACK},{port};no-tls",
            f"--backend={LOOPBACK},{up_port};;proto=h2", "--workers=1", "--conf=/dev/null",
            f"--errorlog-file={work}/nghttpx.err", "--no-ocsp", "--no-via",
            "--backend-http2-connections-per-worker=1"]
    proc = start(argv, os.path.join(work, "nghttpx.log"), cpus=PROXY_CPU)
    wait_for_port(port)
    # nghttpx forks a worker process; its CPU is what serves requests.
    out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout
    children = [int(x) for x in out.split()]
    return Peer(proc, port, children[0] if children else proc.pid)


def start_haproxy(work, up_port):
    port = free_port()
    cfg = os.path.join(work, "haproxy.cfg")
    with open(cfg, "w") as f:
        f.write(f"""global
    nbthread 1
    maxconn 4096
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend fe
    bind {LOOPBACK}:{port} proto h2
    default_backend be
backend be
    server up {LOOPBACK}:{up_port} proto h2
""")
    proc = start(["haproxy", "-f", cfg, "-db"], os.path.join(work, "haproxy.log"), cpus=PROXY_CPU)
    wait_for_port(port)
    return Peer(proc, port)


def start_nginx(work, up_port):
    port = free_port()
    root = os.path.join(work, "nginx")
    os.makedirs(root, exist_ok=True)
    cfg = os.path.join(root, "nginx.conf")
    with open(cfg, "w") as f:
        f.write(f"""worker_processes 1;
master_process off;
daemon off;
error_log {root}/error.log warn;
pid {root}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {root}/body;
    proxy_temp_path {root}/proxy;
    fastcgi_temp_path {root}/fastcgi;
    uwsgi_temp_path {root}/uwsgi;
    scgi_temp_path {root}/scgi;
    upstream up {{ server {LOOPBACK}:{up_port}; keepalive 64; }}
    server {{
        listen {LOOPBACK}:{port} http2;
        http2_max_concurrent_streams 128;
        keepalive_requests 1000000;
        http2_max_requests 1000000;
        location / {{ grpc_pass grpc://up; }}
    }}
}}
""")
    proc = start(["nginx", "-p", root, "-c", cfg], os.path.join(work, "nginx.log"),
                 cpus=PROXY_CPU)
    wait_for_port(port)
    return Peer(proc, port)


def h2load(work, tag, port, duration, body):
    log_file = os.path.join(work, f"{tag}.h2load.tsv")
    argv = ["taskset", "-c", str(LOAD_CPU), "h2load", "-c", "16", "-m", "32", "-t", "1",
            "-D", str(duration), "-d", body, "-H", "content-type: application/grpc",
            "-H", "te: trailers", "--log-file", log_file, f"http://{LOOPBACK}:{port}{PATH}"]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=duration + 60)
    with open(os.path.join(work, f"{tag}.h2load.out"), "w") as f:
        f.write(res.stdout + res.stderr)
    text = res.stdout
    m = re.search(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s", text)
    rq = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                   r"(\d+) failed, (\d+) errored, (\d+) timeout", text)
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
    if not m or not rq:
        raise RuntimeError(f"h2load output not understood; see {work}/{tag}.h2load.out")
    lat = []
    if os.path.exists(log_file):
        with open(log_file) as f:
            for line in f:
                parts = line.split("\t")
                if len(parts) >= 3:
                    lat.append(int(parts[2]) / 1000.0)
        os.unlink(log_file)  # large; the percentiles are what we keep
    done = int(rq.group(3))
    errors = int(rq.group(5)) + int(rq.group(6)) + int(rq.group(7))
    non2xx = sum(int(codes.group(i)) for i in (2, 3, 4)) if codes else 0
    return {"rps": float(m.group(3)), "done": done, "errors": errors, "non2xx": non2xx,
            "p50": nearest_rank(lat, 0.5), "p99": nearest_rank(lat, 0.99)}


def main():
    args = report.parse_args(__doc__.splitlines()[0], extra_args)
    bins = Binaries(args.build)
    duration = 1 if args.smoke else args.duration
    rounds = 1 if args.smoke else args.rounds
    names = ["direct", *SLUICE_TARGETS, "nghttpx", "haproxy", "nginx"]
    if args.targets:
        names = args.targets.split(",")
    if args.sluice_b and "sluice-b" not in names:
        names.insert(names.index("sluice") + 1 if "sluice" in names else len(names), "sluice-b")
    missing = []
    if not bins.sluice or args.direct_only:
        missing.extend(SLUICE_TARGETS)
    for tool in ("nghttpx", "haproxy", "nginx"):
        if not shutil.which(tool):
            missing.append(tool)
    names = [n for n in names if n not in missing]
    work = workdir("proxy-cost")
    log(f"workdir {work}, build {bins.build}; skipped: {missing or 'none'}")
    body_path = os.path.join(work, "request.grpc")
    with open(body_path, "wb") as f:
        f.write(b"\x00\x00\x00\x00\x00")  # one gRPC frame: uncompressed, empty Request

    if args.upstream == "fast" and shutil.which("nghttpd"):
        up = FastUpstream(work, args.upstream_max_streams)
        upstream_text = (f"`nghttpd --no-tls --max-concurrent-streams={args.upstream_max_streams}` "
                         "(nghttp2-server) serving a static 5-byte gRPC frame (HEADERS + DATA, no "
                         "trailers) for every POST")
    else:
        up = Upstream(bins, work, workers=0, delay="0", cpus=LOAD_CPU, name="upstream")
        upstream_text = "`sluice-test-upstream --workers 0 --delay 0` (grpc++ callback server)"
    peers = {}
    sluices = {}  # sluice targets' processes, for their stats
    shed = {}  # sluice target -> calls its filters shed (read before it stops)
    crashes = {n: [] for n in names}  # target -> exit notes of proxies that died during a run
    results = {n: [] for n in names}

    def ensure(n):
        """Starts target n's proxy, again if it died (a crash is recorded, not hidden)."""
        if n == "direct":
            return None
        peer = peers.get(n)
        if peer is not None and peer.proc.poll() is None:
            return peer
        idx = sum(1 for _ in crashes[n])
        if n in SLUICE_TARGETS or n == "sluice-b":
            workers, filters = SLUICE_TARGETS.get(n, SLUICE_TARGETS["sluice"])
            sl = Sluice(bins, work, sluice_yaml(up.target, filters, workers=workers),
                        cpus=PROXY_CPU, name=f"{n}{idx or ''}",
                        binary=args.sluice_b if n == "sluice-b" else None)
            peers[n] = Peer(sl.proc, sl.port)
            sluices[n] = sl
        else:
            peers[n] = {"nghttpx": start_nghttpx, "haproxy": start_haproxy,
                        "nginx": start_nginx}[n](work, up.port)
        return peers[n]

    def check(n, when):
        peer = peers.get(n)
        if peer is not None and peer.proc.poll() is not None:
            crashes[n].append(f"exit {peer.proc.returncode} {when}")
            log(f"{n} died ({peer.proc.returncode}) {when}")

    try:
        for n in names:
            ensure(n)
        for rnd in range(rounds):
            order = names[rnd % len(names):] + names[:rnd % len(names)]
            for n in order:
                peer = ensure(n)
                port = up.port if peer is None else peer.port
                h2load(work, f"{n}.warm{rnd}", port, 1, body_path)
                check(n, f"after warm-up of round {rnd}")
                peer = ensure(n)
                port = up.port if peer is None else peer.port
                ticks0 = cpu_ticks(peer.pid) if peer else None
                r = h2load(work, f"{n}.r{rnd}", port, duration, body_path)
                if peer:
                    try:
                        cpu_s = (cpu_ticks(peer.pid) - ticks0) / CLK_TCK
                        r["cpu_us_per_req"] = cpu_s * 1e6 / max(1, r["done"])
                        r["cpu_pct"] = 100 * cpu_s / duration
                        rss = rss_kb(peer.pid)
                        r["rss_mib"] = rss / 1024 if rss else None
                    except OSError:  # it died during the run: no CPU figure for this round
                        pass
                check(n, f"during round {rnd}")
                log(f"{n} round {rnd}: {r['rps']:.0f} req/s, p50 {r['p50']} ms, "
                    f"p99 {r['p99']} ms, cpu/req {r.get('cpu_us_per_req', '-')}")
                results[n].append(r)
        for n, sl in sluices.items():
            if sl.proc.poll() is None and SLUICE_TARGETS.get(n, SLUICE_TARGETS["sluice"])[1]:
                stats = sl.admin("/stats?format=json", timeout=5)
                shed[n] = sum(v for k, v in stats.items()
                              if k.startswith("filter.") and k.endswith(".shed_total"))
    finally:
        for p in peers.values():
            if p:
                p.stop()
        up.stop()

    def med(n, key):
        vals = [r[key] for r in results[n] if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    direct_rps = med("direct", "rps") if "direct" in results else None
    rows = []
    for n in names:
        rps = med(n, "rps")
        ratio = rps / direct_rps if direct_rps else None
        rows.append([n, len(results[n]), rps, min(r["rps"] for r in results[n]),
                     max(r["rps"] for r in results[n]),
                     None if ratio is None else f"{ratio:.2f}", med(n, "p50"), med(n, "p99"),
                     med(n, "cpu_pct"), med(n, "cpu_us_per_req"), med(n, "rss_mib"),
                     sum(r["errors"] + r["non2xx"] for r in results[n]), len(crashes[n])])

    verdict = []
    if "sluice" in results and "sluice-b" in results:
        a_rps, b_rps = med("sluice", "rps"), med("sluice-b", "rps")
        a_cpu, b_cpu = med("sluice", "cpu_us_per_req"), med("sluice-b", "cpu_us_per_req")
        verdict.append(f"A/B: `sluice` (this build) {report.fmt(a_rps, 0)} req/s at "
                       f"{report.fmt(a_cpu, 2)} us/req vs `sluice-b` ({args.sluice_b}) "
                       f"{report.fmt(b_rps, 0)} req/s at {report.fmt(b_cpu, 2)} us/req: "
                       f"req/s x{a_rps / b_rps:.3f}, CPU/req x{a_cpu / b_cpu:.3f}.")
    for one, filtered in (("sluice", "sluice-filters"), ("sluice-w2", "sluice-w2-filters")):
        if one in results and filtered in results:
            base, cost = med(one, "cpu_us_per_req"), med(filtered, "cpu_us_per_req")
            if base is not None and cost is not None:
                extra = cost - base
                verdict.append(
                    f"Admission cost ({SLUICE_TARGETS[one][0]} worker(s), goal < 1 us CPU/call for "
                    f"[queue_wait_budget, rtt_gradient]): {report.fmt(cost, 2)} - "
                    f"{report.fmt(base, 2)} = **{extra:+.2f} us/call**, "
                    f"{shed.get(filtered, 'unknown')} calls shed by the filters: "
                    f"**{'met' if extra < 1 and shed.get(filtered) == 0 else 'missed'}**.")
    if "sluice" in results and "nghttpx" in results and direct_rps:
        s_ratio = med("sluice", "rps") / direct_rps
        n_ratio = med("nghttpx", "rps") / direct_rps
        s_cpu = med("sluice", "cpu_us_per_req")
        errs = sum(r["errors"] + r["non2xx"] for r in results["sluice"]) + len(crashes["sluice"])
        ok = s_ratio >= n_ratio and s_cpu is not None and s_cpu < 5 and errs == 0
        # First, before the A/B and admission-cost lines (it used to replace them).
        verdict.insert(0, f"Target (>= nghttpx's ratio, < 5 us CPU/request, no errors): "
                       f"sluice {s_ratio:.2f}x direct vs nghttpx {n_ratio:.2f}x, "
                       f"{report.fmt(s_cpu, 2)} us/request, {errs} errors or crashes: "
                       f"**{'met' if ok else 'missed'}**.")

    out = args.out
    prefix = "proxy-cost" + ("-smoke" if args.smoke else "")
    if args.upstream == "fast" and args.upstream_max_streams != 1000:
        prefix += f"-upstream-m{args.upstream_max_streams}"
    plots.bars(os.path.join(out, f"{prefix}.png"), "Proxy cost: median req/s and CPU us/request",
               names, [("req/s / 1000", [(med(n, "rps") or 0) / 1000 for n in names]),
                       ("proxy CPU us/request", [med(n, "cpu_us_per_req") or 0 for n in names])],
               "")
    body = [
        "## Setup", "",
        f"- Upstream: {upstream_text}, pinned to CPU {LOAD_CPU} with h2load.",
        f"- Load: `h2load -c 16 -m 32 -t 1 -D {duration} -d <5-byte empty gRPC frame> "
        f"-H 'content-type: application/grpc' -H 'te: trailers' http://127.0.0.1:PORT{PATH}` "
        "after a 1 s warm-up run; latency percentiles from `--log-file`.",
        f"- Proxies pinned to CPU {PROXY_CPU}, one worker each: sluice (`workers: 1`, no "
        "filters; `sluice-filters` with `[queue_wait_budget 50ms, rtt_gradient min_limit 600]`, "
        "`sluice-w2*` the same with `workers: 2` on the same CPU; `sluice-b` like `sluice` with "
        "the `--sluice-b` binary), nghttpx (`--workers=1`, h2 backend), HAProxy 2.6 "
        "(`nbthread 1`, `proto h2` both sides), nginx (`worker_processes 1`, `grpc_pass`, "
        "keepalive 64).",
        f"- {rounds} interleaved round(s), order rotated; table shows medians (min..max of req/s).",
        "- CPU us/request = (utime+stime delta of the proxy's serving process over the measured "
        "run) / requests done; 10 ms tick resolution.",
        "- The median skips no round: a round with 0 req/s (proxy dead) pulls it down.",
        "- h2load counts HTTP status only: a gRPC error in trailers would still count as 2xx.", "",
        "## Results", "",
        *(verdict + [""] if verdict else []),
        report.table(["target", "rounds", "req/s (median)", "min", "max", "vs direct", "p50 ms",
                      "p99 ms", "proxy CPU %", "proxy CPU us/req", "proxy RSS MiB",
                      "errors + non-2xx", "proxy crashes"], rows), "",
        *(["Proxy exits during the runs (the proxy is restarted before the next run; a round "
           "whose proxy died counts what h2load got): "
           + "; ".join(f"{n}: {', '.join(c)}" for n, c in crashes.items() if c), ""]
          if any(crashes.values()) else []),
        f"Skipped (not installed / not built): {', '.join(missing) or 'none'}.", "",
        f"![proxy cost]({prefix}.png)", "",
        f"Raw outputs of this run: `{work}` (not kept in the repository).",
    ]
    path = report.write(out, prefix, "Scenario 5: proxy cost (h2load c=16 m=32, one worker each)",
                        "\n".join(body), args.smoke)
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
