#!/usr/bin/env python3
"""The deployment examples, built and run for real (scripts/container-test.sh runs this after
installing what it needs; docker/README.md, "What CI runs", explains each check).

  1. yamllint over every shipped YAML file
  2. the base image: mmdebstrap --variant=minbase bookworm, imported as
     localhost/debian:bookworm-slim (no image registry is reachable here)
  3. both images from docker/Dockerfile, from source, with podman
  4. the images: non-root, and sluice runs on a read-only root filesystem
  5. docker/kubernetes/ with `podman kube play`: readiness, calls from outside the pod through
     the sidecar, hardening, then the pod's termination with calls in flight, played the way
     the kubelet does it from the manifest (preStop hooks, SIGTERM, grace period)
  6. docker/kubernetes/queue-mode/ with `podman kube play` (a Redis image made from the base
     image): a call through frontend, Redis and consumer, hardening, and the app pod's
     termination with a call in the consumer's hand (queue_mode.py)
  7. docker/compose/ with podman-compose: one call through it, the image's HEALTHCHECK, and a
     stop with a call in flight

Every pod, container, network and image lives in a podman state of its own (--state), removed
at the end and at the start (what a killed run left). The last line is "N passed, N failed".
"""

import argparse
import fcntl
import json
import os
import subprocess
import sys
import threading
import time

import yaml

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # scripts/

from calls import ClientContainer  # noqa: E402
from checks import Checks  # noqa: E402
from deploy_lint.compose import go_duration  # noqa: E402
from deploy_lint.sluice_config import parse_duration  # noqa: E402
from engine import EngineError, Podman  # noqa: E402
from kubelet import KubePod, fetch, free_port  # noqa: E402
from queue_mode import build_redis_image, queue_run  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE_IMAGE = "localhost/debian:bookworm-slim"
SLUICE_IMAGE = "localhost/sluice:0.1.0"
UPSTREAM_IMAGE = "localhost/sluice-test-upstream:0.1.0"
NON_ROOT_USER = "10001:10001"  # docker/Dockerfile: numeric, so runAsNonRoot can verify it
# What debian:bookworm-slim leaves out of a minbase system (and what later installs then skip).
SLIM_EXCLUDES = ["/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*",
                 "/usr/share/locale/*", "/usr/share/lintian/*"]


def log(text):
    print(text, flush=True)


def stat(admin_url, name):
    """One counter or gauge from sluice's /stats?format=json ({"stats": [{name, value, ...}]})."""
    status, body = fetch("GET", f"{admin_url}/stats?format=json")
    if status != 200:
        return None
    return next((s.get("value") for s in json.loads(body)["stats"] if s.get("name") == name), None)


def apt_sources():
    """This machine's Debian sources, so the image uses the mirror the machine uses."""
    for path in ("/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"):
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return path
    return "http://deb.debian.org/debian"


# --- steps -----------------------------------------------------------------------------------


def yamllint(checks):
    proc = subprocess.run(["yamllint", "--strict", "-c", ".yamllint.yaml", "docker", "config",
                           ".yamllint.yaml"], cwd=REPO, capture_output=True, text=True,
                          check=False)
    checks.expect(proc.returncode == 0, "yamllint: docker/ and config/ are clean",
                  proc.stdout + proc.stderr)


def base_image(podman, keep):
    if keep and podman.run("image", "exists", BASE_IMAGE, check=False, quiet=True).returncode == 0:
        log(f"{BASE_IMAGE} kept from an earlier run (--keep)")
        return
    tarball = os.path.join(podman.state, "base.tar")
    cmd = ["mmdebstrap", "--variant=minbase", "--quiet"]
    cmd += [f"--dpkgopt=path-exclude={p}" for p in SLIM_EXCLUDES]
    cmd += ["--dpkgopt=path-include=/usr/share/doc/*/copyright", "bookworm", tarball,
            apt_sources()]
    log("$ " + " ".join(cmd))
    subprocess.run(cmd, check=True, timeout=900, env=podman.env)
    podman.run("import", "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
               "/sbin:/bin", "--change", 'CMD ["bash"]', tarball, BASE_IMAGE, timeout=300)
    os.remove(tarball)


def build(podman, target, tag, jobs):
    # --format docker: OCI image configs have no HEALTHCHECK, and the image's health check is one
    # of the things tested below.
    # --jobs 2: a runtime stage's apt-get runs while the build stage compiles.
    podman.streamed(["build", "--format", "docker", "--jobs", "2", "-f", "docker/Dockerfile",
                     "--ignorefile", "docker/Dockerfile.dockerignore",
                     "--build-arg", f"DEBIAN_IMAGE={BASE_IMAGE}", "--build-arg", f"JOBS={jobs}",
                     "--target", target, "-t", tag, REPO],
                    os.path.join(podman.state, f"build-{target}.log"), timeout=3600)


def image_checks(podman, checks):
    for image in (SLUICE_IMAGE, UPSTREAM_IMAGE):
        user = podman.out("image", "inspect", "--format", "{{.Config.User}}", image, quiet=True)
        checks.expect(user == NON_ROOT_USER, f"{image} runs as {NON_ROOT_USER} (numeric, non-root)",
                      f"USER is {user!r}")
    # Nothing but the image: its user, its libraries, a root filesystem it cannot write.
    proc = podman.run("run", "--rm", "--read-only", "--network", "none", SLUICE_IMAGE,
                      "--version", check=False)
    checks.expect(proc.returncode == 0 and proc.stdout.strip() == "sluice 0.1.0",
                  "sluice --version runs in the image, read-only, as its own user",
                  proc.stdout + proc.stderr)
    proc = podman.run("run", "--rm", "--read-only", "--network", "none", SLUICE_IMAGE,
                      "validate", "/etc/sluice/sluice.yaml", check=False)
    checks.expect(proc.returncode == 0, "the image's default config validates",
                  proc.stdout + proc.stderr)
    proc = podman.run("run", "--rm", "--read-only", "--network", "none", "--entrypoint",
                      "/usr/local/bin/sluice-test-client", UPSTREAM_IMAGE, "--help", check=False)
    checks.expect(proc.returncode == 0, "sluice-test-client runs in its image",
                  proc.stdout + proc.stderr)


def hardening_checks(podman, checks, pod, name):
    """The hardening docker/README.md promises (non-root, read-only root filesystem, no
    capabilities, no privilege escalation), seen from inside the running container. Checked
    whatever the manifest says: taking a line out of its securityContext must fail here."""
    c = pod.container(name)
    ctr = pod.runtime_name(name)
    context = dict(pod.spec.get("securityContext") or {}, **(c.get("securityContext") or {}))
    status = podman.out("exec", ctr, "cat", "/proc/1/status", quiet=True)
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    uid = int(fields["Uid"].split()[1])  # effective uid of the container's main process
    checks.expect(uid != 0, f"kube: {name} runs as non-root", f"uid {uid}")
    if "runAsUser" in context:
        checks.expect(uid == context["runAsUser"], f"kube: {name} runs as uid "
                      f"{context['runAsUser']} (runAsUser)", f"uid {uid}")
    # As a non-root user a writable / would still refuse with EACCES: only EROFS says that the
    # root filesystem itself is read-only.
    for path in ("/probe", "/usr/local/bin/probe", "/etc/probe", "/tmp/probe"):
        proc = podman.run("exec", ctr, "touch", path, check=False, quiet=True)
        checks.expect(proc.returncode != 0 and "Read-only file system" in proc.stderr,
                      f"kube: {name} cannot write {path} (read-only root filesystem)",
                      f"touch {path}: exit {proc.returncode} {proc.stderr.strip()!r}")
    # A non-root process has no effective capabilities anyway: the bounding set shows whether
    # they were dropped (it is what a setuid binary or a file capability could regain).
    checks.expect(int(fields["CapEff"], 16) == 0 and int(fields["CapBnd"], 16) == 0,
                  f"kube: {name} holds no capabilities, not even in its bounding set",
                  f"CapEff {fields['CapEff'].strip()}, CapBnd {fields['CapBnd'].strip()}")
    checks.expect(fields.get("NoNewPrivs", "").strip() == "1",
                  f"kube: {name} cannot gain privileges (no_new_privs)",
                  f"NoNewPrivs {fields.get('NoNewPrivs')}")


def sidecar_flags(pod):
    """The preStop delay and the ConfigMap's drain_timeout, as the manifest states them."""
    hook = pod.container("sluice")["lifecycle"]["preStop"]["exec"]["command"]
    delay = seconds(hook[hook.index("--delay") + 1]) if "--delay" in hook else 0.0
    with open(pod.configmap_path, encoding="utf-8") as f:
        config = yaml.safe_load(yaml.safe_load(f)["data"]["sluice.yaml"])
    return delay, seconds(config.get("drain_timeout", "5s"))


def seconds(text, parse=parse_duration):
    value = parse(text)
    if value is None:
        raise ValueError(f"not a duration: {text!r}")
    return value


def kube_run(podman, checks, workdir):
    pod = KubePod(podman, os.path.join(REPO, "docker/kubernetes/configmap.yaml"),
                  os.path.join(REPO, "docker/kubernetes/deployment.yaml"), workdir, log)
    pod.play()
    try:
        with ClientContainer(podman, "sluice-ct-client") as client:
            kube_checks(podman, checks, pod, client)
    finally:
        proc = pod.down()
        left = podman.out("pod", "ps", "--format", "{{.Name}}", quiet=True)
        checks.expect(proc.returncode == 0 and not left, "kube: podman kube down removes the pod",
                      f"exit {proc.returncode} {proc.stderr.strip()}; pods left: {left!r}")


def kube_checks(podman, checks, pod, client):
    grpc_port = pod.published[("sluice", pod.port_number(pod.container("sluice"), "grpc"))]
    admin_port = pod.published[("sluice", pod.port_number(pod.container("sluice"), "admin"))]
    admin_url = f"http://127.0.0.1:{admin_port}"
    sluice_ctr = pod.runtime_name("sluice")

    start = time.monotonic()
    try:
        pod.wait_ready(timeout=90)
        checks.expect(True, f"kube: every container passes its readinessProbe "
                      f"({time.monotonic() - start:.1f} s after play)")
    except RuntimeError as e:
        checks.expect(False, "kube: every container passes its readinessProbe", str(e))
        log(podman.out("pod", "logs", pod.pod_name, check=False, quiet=True))
        return

    for name in ("app", "sluice"):
        hardening_checks(podman, checks, pod, name)

    proc = podman.run("exec", sluice_ctr, "/usr/local/bin/sluice", "admin", "GET", "/ready",
                      check=False, quiet=True)
    checks.expect(proc.returncode == 0 and proc.stdout.strip() == "LIVE",
                  "kube: `sluice admin GET /ready` inside the sidecar answers LIVE",
                  proc.stdout + proc.stderr)

    before = stat(admin_url, "cluster.app.upstream_rq_grpc_status_0_total") or 0
    call = client.call(grpc_port, 0.02, "a unary call")
    checks.expect(call.ok() and call.through_sluice(),
                  "kube: a gRPC call from outside the pod reaches the app through the sidecar",
                  call.describe() + f" {call.result().get('initial_metadata')}")
    after = stat(admin_url, "cluster.app.upstream_rq_grpc_status_0_total") or 0
    checks.expect(after == before + 1, "kube: sluice counted it as answered by the app (OK)",
                  f"cluster.app.upstream_rq_grpc_status_0_total {before} -> {after}")

    terminate_with_calls_in_flight(podman, checks, pod, client, grpc_port, admin_url)


def terminate_with_calls_in_flight(podman, checks, pod, client, grpc_port, admin_url):
    """Deletes the pod the way the kubelet does, with calls in flight, and checks what the
    manifest promises: sluice keeps serving through its preStop delay, then /ready fails and
    new connections are refused, every call admitted before the drain finishes (as long as
    drain_timeout allows), sluice exits by itself inside the grace period, and the app gets
    SIGTERM only once sluice is gone. The calls' lengths come from the manifest's own numbers."""
    delay, drain = sidecar_flags(pod)
    grace = pod.grace_s
    log(f"termination: preStop delay {delay:g}s, drain_timeout {drain:g}s, "
        f"terminationGracePeriodSeconds {grace}")
    # Longest a call admitted now may take and still finish: the drain deadline is drain_timeout
    # after POST /drain, which the hook sends `delay` seconds from now. 1 s of margin.
    in_budget = [client.call(grpc_port, max(delay + drain - 1, 0.5), "a call ending just inside "
                             "the drain budget"),
                 client.call(grpc_port, 1, "a short call")]
    # Longer than the drain budget: sluice must cut it at the drain deadline and still exit by
    # itself (status 0) before the grace period ends: this one checks grace > delay + drain.
    over_budget = client.call(grpc_port, delay + drain + 10, "a call longer than the drain budget")
    calls = in_budget + [over_budget]
    try:
        podman.wait_for("3 calls in flight at the app",
                        lambda: (stat(admin_url, "cluster.app.upstream_rq_active") or 0) >= 3,
                        timeout=60)
    except EngineError as e:
        checks.expect(False, "kube: calls in flight before termination", str(e))
        for c in calls:
            c.kill()
        return

    t0 = time.monotonic()
    results = {}
    terminator = threading.Thread(target=lambda: results.update(pod.terminate(t0)))
    terminator.start()

    # While the hooks run: kubelet-style readiness probes every 0.25 s, one new call a third of
    # the way into the delay (endpoints still send traffic to a terminating pod for a while),
    # and one once /ready has flipped (the listener is closed by then: refused, not queued).
    probes = []  # (seconds since t0, status)
    during_delay = after_drain = None
    while terminator.is_alive():
        now = time.monotonic() - t0
        if during_delay is None and now >= delay / 3:
            during_delay = client.call(grpc_port, 1, "a call started during the preStop delay")
        status, _ = fetch("GET", f"{admin_url}/ready", timeout=1)
        probes.append((now, status))
        if after_drain is None and status == 503:
            after_drain = client.call(grpc_port, 1, "a call started after the drain")
        time.sleep(0.25)
    terminator.join()
    first_503 = next((t for t, s in probes if s == 503), None)
    log("readiness during termination: " + " ".join(f"{t:.1f}s:{s}" for t, s in probes[::4]))

    sluice, app = results["sluice"], results["app"]
    for name, t in results.items():
        log(f"{name}: preStop {t.hook} exit {t.hook_exit} at {t.sigterm_at - t0:.1f}s (SIGTERM), "
            f"exited {t.exit_code} at {t.exited_at - t0:.1f}s {t.hook_output[-300:]!r}")

    checks.expect(all(s == 200 for t, s in probes if t < delay - 0.5),
                  f"kube: /ready stays 200 through the preStop delay ({delay:g}s)",
                  f"probes: {probes[:12]}")
    checks.expect(first_503 is not None and delay - 0.5 <= first_503 <= delay + 3,
                  f"kube: /ready flips to 503 when the hook drains (after {delay:g}s)",
                  f"first 503 at {first_503}")
    checks.expect(during_delay is not None and during_delay.ok(),
                  "kube: sluice keeps serving new calls during its preStop delay",
                  during_delay.describe() if during_delay else "not started")
    checks.expect(after_drain is not None and after_drain.result().get("status_code") == 14,
                  "kube: once drained, a new call is refused (UNAVAILABLE), not queued",
                  after_drain.describe() if after_drain else "/ready never flipped")
    for c in in_budget:
        checks.expect(c.ok(), f"kube: {c.label} finishes (nothing in flight is lost)",
                      c.describe())
    over = over_budget.result()
    over_end = over_budget.ended - t0
    checks.expect(over.get("status_code") != 0 and over_end >= delay + drain - 1,
                  f"kube: {over_budget.label} is cut at the drain deadline, not before",
                  f"{over_budget.describe()} ended at {over_end:.1f}s")
    checks.expect(sluice.hook_exit == 0, "kube: sluice's preStop hook (POST /drain) succeeds",
                  f"exit {sluice.hook_exit}: {sluice.hook_output}")
    checks.expect(sluice.exit_code == 0 and not sluice.killed,
                  f"kube: sluice exits by itself (status 0) within the grace period ({grace}s)",
                  f"exit {sluice.exit_code} at {sluice.exited_at - t0:.1f}s")
    checks.expect(app.sigterm_at >= sluice.exited_at,
                  "kube: the app gets SIGTERM only after sluice has exited (its preStop covers "
                  "the drain)", f"app SIGTERM at {app.sigterm_at - t0:.1f}s, sluice exited at "
                  f"{sluice.exited_at - t0:.1f}s")
    checks.expect(app.exit_code == 0 and not app.killed,
                  f"kube: the app exits by itself (status 0) within the grace period ({grace}s)",
                  f"exit {app.exit_code} at {app.exited_at - t0:.1f}s")


def compose_timing():
    """(stop_grace_period of the sluice service, drain_timeout of its config) in seconds."""
    with open(os.path.join(REPO, "docker/compose/compose.yaml"), encoding="utf-8") as f:
        service = yaml.safe_load(f)["services"]["sluice"]
    with open(os.path.join(REPO, "docker/compose/sluice.yaml"), encoding="utf-8") as f:
        config = yaml.safe_load(f)
    return (seconds(service.get("stop_grace_period", "10s"), go_duration),
            seconds(config.get("drain_timeout", "5s")))


def compose_run(podman, checks):
    port, admin_port = free_port(), free_port()
    env = dict(podman.env, SLUICE_HOST_PORT=str(port), SLUICE_HOST_ADMIN_PORT=str(admin_port))
    base = ["podman-compose", "-p", "sluice-ct", "-f",
            os.path.join(REPO, "docker/compose/compose.yaml")]
    admin_url = f"http://127.0.0.1:{admin_port}"

    def compose(*args, timeout=300):
        log("$ " + " ".join(base + list(args)))
        return subprocess.run(base + list(args), env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)

    up = compose("up", "-d", "--no-build")
    try:
        if not checks.expect(up.returncode == 0, "compose: podman-compose up",
                             (up.stdout + up.stderr)[-3000:]):
            return
        try:
            podman.wait_for("compose sluice /ready", lambda: fetch("GET", f"{admin_url}/ready")[0]
                            == 200, timeout=90)
        except EngineError as e:
            checks.expect(False, "compose: sluice becomes ready", str(e))
            log(compose("logs").stdout[-3000:])
            return
        with ClientContainer(podman, "sluice-ct-client") as client:
            call = client.call(port, 0.02, "a unary call")
            checks.expect(call.ok() and call.through_sluice(),
                          "compose: a gRPC call through the published port reaches the upstream "
                          "through sluice", call.describe())
        sluice_ctr = podman.out("ps", "--filter", "label=com.docker.compose.service=sluice",
                                "--format", "{{.Names}}", quiet=True).splitlines()
        if not checks.expect(len(sluice_ctr) == 1, "compose: one sluice container",
                             f"{sluice_ctr}"):
            return
        health = podman.run("healthcheck", "run", sluice_ctr[0], check=False)
        checks.expect(health.returncode == 0, "compose: the image's HEALTHCHECK (sluice admin GET "
                      "/ready) passes", health.stdout + health.stderr)
        fetch("POST", f"{admin_url}/healthcheck/fail")
        health = podman.run("healthcheck", "run", sluice_ctr[0], check=False)
        checks.expect(health.returncode != 0, "compose: the HEALTHCHECK fails after POST "
                      "/healthcheck/fail", health.stdout + health.stderr)
        fetch("POST", f"{admin_url}/healthcheck/ok")

        # docker compose stop: each service in reverse dependency order, SIGTERM then SIGKILL
        # after its stop_grace_period. podman-compose 1.0.3 reads no stop_grace_period, so it
        # is passed as -t, the way docker compose applies it. A call in flight that takes
        # drain_timeout - 1 s must finish, and sluice must exit by itself.
        grace, drain = compose_timing()
        with ClientContainer(podman, "sluice-ct-client") as client:
            call = client.call(port, max(drain - 1, 0.5), "a call in flight during stop")
            podman.wait_for("the call in flight", lambda: (stat(
                admin_url, "cluster.app.upstream_rq_active") or 0) >= 1, timeout=60)
            stop = compose("stop", "-t", f"{grace:g}")
            code = podman.out("inspect", "--format", "{{.State.ExitCode}}", sluice_ctr[0],
                              check=False, quiet=True)
            checks.expect(call.ok(), f"compose: {call.label} finishes (drain_timeout {drain:g}s)",
                          call.describe())
        checks.expect(stop.returncode == 0 and code == "0", f"compose: sluice exits by itself "
                      f"(status 0) within stop_grace_period ({grace:g}s)",
                      f"exit {code!r} {stop.stderr[-500:]}")
    finally:
        down = compose("down")
        left = podman.out("ps", "-a", "--filter", "label=io.podman.compose.project=sluice-ct",
                          "--format", "{{.Names}}", quiet=True)
        checks.expect(down.returncode == 0 and not left, "compose: podman-compose down removes "
                      "its containers", f"{down.stderr[-500:]} left: {left!r}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", default=os.environ.get("SLUICE_CT_STATE",
                                                          "/var/tmp/sluice-container-test"),
                        help="podman state directory (removed at start and end)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the images (and build cache) for the next run: for development")
    parser.add_argument("--jobs", default=os.environ.get("JOBS", "2"),
                        help="compile jobs inside the image builds")
    args = parser.parse_args(argv)

    os.makedirs(os.path.dirname(args.state), exist_ok=True)
    lock = open(args.state + ".lock", "w", encoding="utf-8")  # noqa: SIM115 (held until exit)
    fcntl.flock(lock, fcntl.LOCK_EX)
    podman = Podman(args.state, log)
    checks = Checks()
    failed_step = None
    try:
        with checks.step("clean up what an earlier run left"):
            if args.keep and os.path.isdir(args.state):
                podman.remove_containers()
            else:
                podman.reset()
            podman.write_config()
        workdir = os.path.join(args.state, "work")
        os.makedirs(workdir, exist_ok=True)
        with checks.step("yamllint"):
            yamllint(checks)
        with checks.step("base image (mmdebstrap + podman import)"):
            base_image(podman, args.keep)
        with checks.step("build image sluice"):
            build(podman, "sluice", SLUICE_IMAGE, args.jobs)
        with checks.step("build image sluice-test-upstream"):
            build(podman, "sluice-test-upstream", UPSTREAM_IMAGE, args.jobs)
        with checks.step("build image redis (for docker/kubernetes/queue-mode/)"):
            build_redis_image(podman, REPO, BASE_IMAGE, args.keep)
        with checks.step("image checks"):
            image_checks(podman, checks)
        with checks.step("kube play: docker/kubernetes/"):
            kube_run(podman, checks, workdir)
        with checks.step("kube play: docker/kubernetes/queue-mode/"):
            queue_run(podman, checks, REPO, workdir,
                      lambda: ClientContainer(podman, "sluice-ct-client"), hardening_checks, stat)
        with checks.step("compose: docker/compose/"):
            compose_run(podman, checks)
    except (EngineError, subprocess.SubprocessError, OSError, RuntimeError) as e:
        failed_step = str(e)
        checks.expect(False, "the run itself", failed_step)
    finally:
        with checks.step("clean up"):
            if args.keep:
                podman.remove_containers()
            else:
                podman.reset()
        checks.summary()
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
