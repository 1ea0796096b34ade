"""podman with a state of its own: images, containers, networks and lock files live under one
directory, so a run neither sees nor touches anything else on the machine, and a run that was
killed is cleaned up by the next one (reset() wipes the whole directory).

Two settings make podman work in this sandbox (docker/README.md, "What CI runs"): the runc
runtime (crun cannot set RLIMIT_NOFILE here), and default ulimits no higher than the limits
podman itself runs under (without CAP_SYS_RESOURCE, podman's usual nofile=1048576 fails).
"""

import os
import resource
import shutil
import signal
import subprocess
import time


class EngineError(Exception):
    pass


def _cap(limit, ceiling):
    return ceiling if limit == resource.RLIM_INFINITY else min(limit, ceiling)


class Podman:
    def __init__(self, state_dir, log):
        self.state = os.path.abspath(state_dir)
        self.log = log  # callable(str)
        self.env = dict(os.environ,
                        CONTAINERS_CONF=os.path.join(self.state, "containers.conf"),
                        CONTAINERS_STORAGE_CONF=os.path.join(self.state, "storage.conf"),
                        CONTAINERS_REGISTRIES_CONF=os.path.join(self.state, "registries.conf"),
                        # buildah's and mmdebstrap's scratch directories, gone with the state
                        TMPDIR=os.path.join(self.state, "tmp"))
        self.env.pop("CONTAINER_HOST", None)  # always the local engine, never a remote one

    def write_config(self):
        os.makedirs(os.path.join(self.state, "tmp"), exist_ok=True)
        nofile = _cap(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 65536)
        nproc = _cap(resource.getrlimit(resource.RLIMIT_NPROC)[1], 4096)
        files = {
            "containers.conf": f"""\
[containers]
default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]
log_driver = "k8s-file"

[engine]
runtime = "runc"
events_logger = "file"
cgroup_manager = "cgroupfs"
tmp_dir = "{self.state}/libpod"

[network]
network_config_dir = "{self.state}/networks"
""",
            "storage.conf": f"""\
[storage]
driver = "overlay"
graphroot = "{self.state}/storage"
runroot = "{self.state}/run"
""",
            # Nothing is pulled: the base image is made locally, and short names (sluice:0.1.0 in
            # the manifests) resolve to the localhost/ images built here.
            "registries.conf": ('unqualified-search-registries = []\n'
                                'short-name-mode = "permissive"\n'),
        }
        for name, text in files.items():
            with open(os.path.join(self.state, name), "w", encoding="utf-8") as f:
                f.write(text)

    # --- running podman ----------------------------------------------------------------------

    def run(self, *args, check=True, timeout=600, quiet=False, input_text=None):
        """podman ARGS; returns the CompletedProcess (stdout and stderr as text)."""
        cmd = ["podman", *args]
        if not quiet:
            self.log("$ " + " ".join(cmd))
        try:
            proc = subprocess.run(cmd, env=self.env, capture_output=True, text=True,
                                  timeout=timeout, input=input_text, check=False)
        except subprocess.TimeoutExpired as e:
            raise EngineError(f"{' '.join(cmd)}: no result within {timeout}s") from e
        if check and proc.returncode != 0:
            raise EngineError(f"{' '.join(cmd)} exited {proc.returncode}:\n"
                              f"{proc.stdout[-4000:]}{proc.stderr[-4000:]}")
        return proc

    def out(self, *args, **kwargs):
        return self.run(*args, **kwargs).stdout.strip()

    def streamed(self, args, logfile, timeout):
        """A long podman command (a build) with its output in `logfile`; raises on failure with
        the log's tail."""
        cmd = ["podman", *args]
        self.log("$ " + " ".join(cmd) + f"  (log: {logfile})")
        with open(logfile, "w", encoding="utf-8") as f:
            try:
                code = subprocess.run(cmd, env=self.env, stdout=f, stderr=subprocess.STDOUT,
                                      timeout=timeout, check=False).returncode
            except subprocess.TimeoutExpired as e:
                raise EngineError(f"{' '.join(cmd)}: not done within {timeout}s") from e
        if code != 0:
            with open(logfile, encoding="utf-8", errors="replace") as f:
                tail = f.read()[-6000:]
            raise EngineError(f"{' '.join(cmd)} exited {code}; end of {logfile}:\n{tail}")

    def popen(self, args, **kwargs):
        return subprocess.Popen(["podman", *args], env=self.env, **kwargs)

    # --- state -------------------------------------------------------------------------------

    def reset(self):
        """Removes every pod, container, network and image of this state, then the directory.
        A killed run can leave processes behind (a build step's container, conmon): those are
        ended first."""
        if os.path.isdir(os.path.join(self.state, "storage")):
            self.remove_containers()
            proc = self.run("system", "reset", "--force", check=False, timeout=300, quiet=True)
            if proc.returncode != 0:
                self.log(f"(podman system reset: {proc.stderr.strip()[-500:]})")
        else:
            _kill_processes_of(self.state)
        _unmount_below(os.path.join(self.state, "storage"))
        _unmount_below(os.path.join(self.state, "run"))
        shutil.rmtree(self.state, ignore_errors=True)
        if os.path.exists(self.state):
            raise EngineError(f"could not remove {self.state}")

    def remove_containers(self):
        """Every pod and container of this state, and any process a killed run left in one;
        images and the build cache stay."""
        _kill_processes_of(self.state)
        self.write_config()  # the files may be from an older run
        for args in (("pod", "rm", "--all", "--force", "--time", "0"),
                     ("rm", "--all", "--force", "--time", "0")):
            proc = self.run(*args, check=False, timeout=300, quiet=True)
            if proc.returncode != 0:
                self.log(f"(podman {' '.join(args)}: {proc.stderr.strip()[-500:]})")

    def wait_for(self, what, predicate, timeout, interval=0.25):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise EngineError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(interval)


def _kill_processes_of(state):
    """SIGKILL for every process running inside a container of `state` (its root filesystem is
    an overlay of the state's layers) or serving one (conmon names the state's paths on its
    command line)."""
    prefix = state.rstrip("/") + "/"
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (me, os.getppid()):
            continue
        try:
            with open(f"/proc/{entry}/mountinfo", encoding="utf-8", errors="replace") as f:
                root = next((line for line in f if line.split()[4] == "/"), "")
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue  # gone, or a kernel thread
        name = os.path.basename(argv[0].decode(errors="replace")) if argv else ""
        serves = name == "conmon" and any(prefix.encode() in a for a in argv)
        if prefix in root or serves:
            try:
                os.kill(int(entry), signal.SIGKILL)
            except OSError:
                pass


def _unmount_below(path):
    """Overlay and shm mounts a killed run left under `path` (deepest first)."""
    prefix = os.path.abspath(path) + "/"
    try:
        with open("/proc/self/mounts", encoding="utf-8") as f:
            points = [line.split()[1] for line in f]
    except OSError:
        return
    for point in sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)
