"""Name resolution a test controls, for one process: the process runs in a mount namespace of its
own (util-linux `unshare`) in which a temporary hosts file is bind-mounted over /etc/hosts, and a
resolv.conf naming only 127.0.0.1 (where nothing answers) over /etc/resolv.conf, so names the
hosts file lacks fail at once instead of asking a real DNS server. The system's files are never
written: the mounts exist only in that namespace and vanish with the process.

The process resolves with the real getaddrinfo (glibc's files backend reads /etc/hosts on every
lookup), so a test changes what a name resolves to by rewriting the hosts file, in place: a bind
mount follows the file's inode, so set() truncates and rewrites rather than renaming.
"""

import os
import shutil
import subprocess

# The mounts, then the real command in the same process (exec keeps the pid, and the
# PR_SET_PDEATHSIG the harness sets with setpriv).
_SCRIPT = ('mount --bind "$1" /etc/hosts && mount --bind "$2" /etc/resolv.conf && '
           'shift 2 && exec "$@"')


def _unshare_argv():
    unshare = shutil.which("unshare")
    if unshare is None:
        raise AssertionError("unshare (util-linux) is not installed")
    argv = [unshare, "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        argv.append("--map-root-user")  # an unprivileged user namespace grants the mounts
    return argv


class PrivateHosts:
    """A hosts file seen only by processes started with wrapper()."""

    def __init__(self, workdir):
        self.hosts_path = os.path.join(workdir, "hosts")
        self.resolv_path = os.path.join(workdir, "resolv.conf")
        with open(self.resolv_path, "w") as f:
            f.write("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
        self.set({})
        # Fail here, clearly, where the sandbox forbids mount namespaces.
        probe = subprocess.run([*self.wrapper(), "true"], capture_output=True, text=True,
                               timeout=10)
        if probe.returncode != 0:
            raise AssertionError("cannot give a test process its own /etc/hosts (unshare "
                                 f"--mount failed): {probe.stderr.strip()}")

    def set(self, names):
        """`names`: {name: [address, ...]}; the file is rewritten in place."""
        lines = ["127.0.0.1 localhost"]
        for name, addresses in names.items():
            lines += [f"{address} {name}" for address in addresses]
        with open(self.hosts_path, "w") as f:  # same inode: the bind mount sees it
            f.write("\n".join(lines) + "\n")

    def wrapper(self):
        """argv to put before a command so that it runs with this hosts file."""
        return [*_unshare_argv(), "sh", "-c", _SCRIPT, "private-hosts", self.hosts_path,
                self.resolv_path]
