"""docker/kubernetes/queue-mode/ played with `podman kube play`: Redis, the frontend, and one pod
of the app with its consumer sidecar, each as its own pod on the engine's network, and a gRPC
call that goes client -> frontend -> Redis -> consumer -> app and back. Then the app pod is
terminated the kubelet's way with a call in the consumer's hand: the call must still be
answered OK, the consumer must exit by itself, and the app only after it.

The Redis image is made here from the base image (Debian bookworm's redis-server, 7.0.15) and
tagged with the name the manifest uses for the official image: no registry is reachable.
podman has no Services and no cluster DNS, so the frontend's and consumer's pods get a
hostAliases entry naming the Redis Service after the Redis pod's IP (kubelet.py)."""

import os
import time

import yaml

from engine import EngineError
from kubelet import KubePod

QUEUE_DIR = os.path.join("docker", "kubernetes", "queue-mode")


def split(repo, workdir, name):
    """{kind: path of a file holding that one document} for a multi-document manifest."""
    with open(os.path.join(repo, QUEUE_DIR, name), encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    out = {}
    for doc in docs:
        path = os.path.join(workdir, f"{name}.{doc['kind']}.yaml")
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump(doc, f, sort_keys=False)
        out[doc["kind"]] = path
    return out


def redis_image_name(repo):
    with open(os.path.join(repo, QUEUE_DIR, "redis.yaml"), encoding="utf-8") as f:
        deployment = next(d for d in yaml.safe_load_all(f) if d and d["kind"] == "Deployment")
    return "localhost/" + deployment["spec"]["template"]["spec"]["containers"][0]["image"]


def build_redis_image(podman, repo, base_image, keep):
    tag = redis_image_name(repo)
    if keep and podman.run("image", "exists", tag, check=False, quiet=True).returncode == 0:
        podman.log(f"{tag} kept from an earlier run (--keep)")
        return
    context = os.path.join(podman.state, "redis-image")
    os.makedirs(context, exist_ok=True)
    with open(os.path.join(context, "Containerfile"), "w", encoding="utf-8") as f:
        f.write(f"FROM {base_image}\n"
                "RUN apt-get update && apt-get install -y --no-install-recommends redis-server "
                "&& rm -rf /var/lib/apt/lists/*\n"
                "EXPOSE 6379\n"
                'CMD ["redis-server"]\n')
    podman.streamed(["build", "--format", "docker", "-t", tag, context],
                    os.path.join(podman.state, "build-redis.log"), timeout=900)


def queue_run(podman, checks, repo, workdir, client_factory, hardening, stat):
    """client_factory(): a ClientContainer context; hardening(podman, checks, pod, name) and
    stat(admin_url, name) as in run.py."""
    redis_files = split(repo, workdir, "redis.yaml")
    frontend_files = split(repo, workdir, "frontend.yaml")
    app_files = split(repo, workdir, "app.yaml")
    with open(frontend_files["ConfigMap"], encoding="utf-8") as f:
        queue = yaml.safe_load(yaml.safe_load(f)["data"]["sluice.yaml"])["queues"][0]
    with open(redis_files["Service"], encoding="utf-8") as f:
        service = yaml.safe_load(f)["metadata"]["name"]
    redis_host = queue["redis"].rsplit(":", 1)[0]
    checks.expect(redis_host == service, f"queue: the queue's redis host is the Redis Service "
                  f"({service})", f"queues[0].redis is {queue['redis']}")

    pods = []
    try:
        redis = KubePod(podman, None, redis_files["Deployment"], workdir, podman.log)
        pods.append(redis)
        redis.play()
        redis.wait_ready(timeout=60)
        aliases = [{"ip": redis.ip(), "hostnames": [redis_host]}]
        frontend = KubePod(podman, frontend_files["ConfigMap"], frontend_files["Deployment"],
                           workdir, podman.log, host_aliases=aliases)
        pods.append(frontend)
        frontend.play()
        app = KubePod(podman, app_files["ConfigMap"], app_files["Deployment"], workdir,
                      podman.log, host_aliases=aliases)
        pods.append(app)
        app.play()
        start = time.monotonic()
        try:
            frontend.wait_ready(timeout=90)
            app.wait_ready(timeout=90)
            checks.expect(True, f"queue: Redis, the frontend and the app pod pass their "
                          f"readinessProbes ({time.monotonic() - start:.1f} s after play)")
        except RuntimeError as e:
            checks.expect(False, "queue: every container passes its readinessProbe", str(e))
            for pod in pods:
                podman.log(podman.out("pod", "logs", pod.pod_name, check=False, quiet=True))
            return
        for pod, name in ((redis, "redis"), (frontend, "sluice"), (app, "consumer")):
            hardening(podman, checks, pod, name)
        with client_factory() as client:
            queue_checks(podman, checks, frontend, app, client, stat)
    finally:
        for pod in reversed(pods):
            if pod.pod_name:
                pod.down()
        left = podman.out("pod", "ps", "--format", "{{.Name}}", quiet=True)
        checks.expect(not left, "queue: podman kube down removes the pods", f"left: {left!r}")


def queue_checks(podman, checks, frontend, app, client, stat):
    grpc_port = frontend.published[("sluice", frontend.port_number(
        frontend.container("sluice"), "grpc"))]
    frontend_admin = "http://127.0.0.1:{}".format(frontend.published[(
        "sluice", frontend.port_number(frontend.container("sluice"), "admin"))])
    consumer_admin = "http://127.0.0.1:{}".format(app.published[(
        "consumer", app.port_number(app.container("consumer"), "admin"))])
    ok_stat = "queue.work.frontend_rq_ok_total"
    done_stat = "consumer.pull.consumer_rq_completed_total"

    call = client.call(grpc_port, 0.02, "a unary call through the queue")
    checks.expect(call.ok() and call.through_sluice(),
                  "queue: a gRPC call to the frontend is served by the app through Redis and "
                  "the consumer", call.describe())
    checks.expect(stat(frontend_admin, ok_stat) == 1,
                  "queue: the frontend answered it with a consumer's reply",
                  f"{ok_stat} {stat(frontend_admin, ok_stat)}")
    checks.expect(stat(consumer_admin, done_stat) == 1, "queue: the consumer ran it on the app",
                  f"{done_stat} {stat(consumer_admin, done_stat)}")

    # The app pod deleted with a call in the consumer's hand: the consumer stops reading,
    # finishes the call, replies, acknowledges and exits; the app outlives it.
    in_hand = client.call(grpc_port, 3, "a call in the consumer's hand at termination")
    try:
        podman.wait_for("a call in the consumer's hand", lambda: (stat(
            consumer_admin, "consumer.pull.consumer_rq_active") or 0) >= 1, timeout=30)
    except EngineError as e:
        checks.expect(False, "queue: a call in the consumer's hand before termination", str(e))
        in_hand.kill()
        return
    t0 = time.monotonic()
    results = app.terminate(t0)
    consumer, app_ctr = results["consumer"], results["app"]
    for name, t in results.items():
        podman.log(f"{name}: preStop {t.hook} exit {t.hook_exit} at {t.sigterm_at - t0:.1f}s "
                   f"(SIGTERM), exited {t.exit_code} at {t.exited_at - t0:.1f}s")
    checks.expect(in_hand.ok(), "queue: the call in the consumer's hand is answered OK through "
                  "the queue although its pod is terminating", in_hand.describe())
    checks.expect(consumer.hook_exit == 0, "queue: the consumer's preStop hook (POST /drain) "
                  "succeeds", f"exit {consumer.hook_exit}: {consumer.hook_output}")
    checks.expect(consumer.exit_code == 0 and not consumer.killed,
                  f"queue: the consumer exits by itself (status 0) within the grace period "
                  f"({app.grace_s}s)", f"exit {consumer.exit_code} at "
                  f"{consumer.exited_at - t0:.1f}s")
    checks.expect(app_ctr.sigterm_at >= consumer.exited_at and app_ctr.exit_code == 0,
                  "queue: the app gets SIGTERM only after the consumer has exited, and exits 0",
                  f"app SIGTERM at {app_ctr.sigterm_at - t0:.1f}s exit {app_ctr.exit_code}, "
                  f"consumer exited at {consumer.exited_at - t0:.1f}s")
