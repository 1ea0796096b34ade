"""Which Debian packages provide the shared libraries a binary links against.

Used to check that a runtime image installs every package its binary needs: a new dependency
(say, c-ares) otherwise only shows up as "error while loading shared libraries" at container
start, which no CI here would see.
"""

import os
import re
import shutil
import subprocess

# In debian:bookworm-slim already (Essential or required by apt/dpkg): no need to install.
BASE_IMAGE_PACKAGES = frozenset(["libc6", "libgcc-s1", "libstdc++6", "zlib1g"])


class Unavailable(Exception):
    """The tools this check needs (readelf, ldconfig, dpkg) are not on this machine."""


def needed_sonames(binary):
    """DT_NEEDED entries of an ELF file."""
    if not shutil.which("readelf"):
        raise Unavailable("readelf not found")
    out = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True, check=True)
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out.stdout)


def _library_paths():
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    if not os.path.exists(ldconfig):
        raise Unavailable("ldconfig not found")
    out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, check=True)
    paths = {}
    for m in re.finditer(r"^\s*(\S+) \(([^)]*)\) => (\S+)$", out.stdout, re.M):
        # The machine's own architecture first (x86-64 or AArch64), not a 32-bit variant.
        if m.group(1) not in paths or "64" in m.group(2):
            paths[m.group(1)] = m.group(3)
    return paths


def _spellings(path):
    """A library's path as dpkg may have recorded it: with and without the /usr merge."""
    out = {path, os.path.realpath(path)}
    for p in list(out):
        out.add(p[4:] if p.startswith("/usr/") else "/usr" + p)
    return out


def _owners(paths):
    """path -> package for every path dpkg knows, in one dpkg call (it is slow to start)."""
    if not paths:
        return {}
    proc = subprocess.run(["dpkg", "-S"] + sorted(paths), capture_output=True, text=True,
                          check=False)
    owners = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"^([^:,]+)(?::[a-z0-9]+)?(?:, [^:]+)*: (/\S+)$", line)
        if m:
            owners[m.group(2)] = m.group(1)
    return owners


def packages_for(binary):
    """soname -> Debian package (None when no package owns it)."""
    if not shutil.which("dpkg"):
        raise Unavailable("dpkg not found")
    paths = _library_paths()
    sonames = needed_sonames(binary)
    spellings = {soname: _spellings(paths[soname]) for soname in sonames if soname in paths}
    owners = _owners(set().union(*spellings.values()) if spellings else set())
    out = {}
    for soname in sonames:
        found = [owners[p] for p in sorted(spellings.get(soname, ())) if p in owners]
        out[soname] = found[0] if found else None
    return out
