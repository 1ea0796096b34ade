"""The one Dockerfile check no container engine makes: every shared library a shipped binary
links (its DT_NEEDED entries) comes from a Debian package its runtime stage installs.

`podman build` proves the file builds, and scripts/container-test.sh starts both images; but a
library that only one code path of a binary loads, or a binary the test does not start, would
only fail at a user's container start. This reads just enough of the Dockerfile to know, per
stage, what `apt-get install` installs and which build outputs `COPY --from` brings in.
"""

import posixpath
import re

from . import libraries

# scripts/build.sh builds into ${BUILD_DIR:-build} under the build stage's WORKDIR, and every
# binary the images carry is named after its CMake target.
_BUILD_OUTPUT = re.compile(r"^/src/build/")


class Stage:
    def __init__(self, name, line):
        self.name = name
        self.line = line
        self.packages = set()
        self.apt_line = None
        self.binaries = []  # (image path, CMake target)


def _logical_lines(text):
    """(first line number, instruction text) with continuations joined and comments dropped."""
    out, current, start = [], "", None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if current and line.startswith("#"):
            continue  # comment lines inside a continuation are dropped by the parser too
        start = start or number
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        out.append((start, current + line))
        current, start = "", None
    if current:
        out.append((start, current))
    return out


def _apt_installs(run_text):
    packages = set()
    for segment in re.split(r"&&|\|\||;|\|", run_text):
        words = segment.split()
        if "install" in words and any(w in ("apt-get", "apt") for w in words):
            packages.update(w for w in words[words.index("install") + 1:] if not w.startswith("-"))
    return packages


def stages(text):
    found = []
    for line, instruction in _logical_lines(text):
        keyword, _, args = instruction.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            words = args.split()
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            found.append(Stage(name, line))
        elif not found:
            continue
        elif keyword == "RUN":
            installed = _apt_installs(args)
            if installed:
                found[-1].packages |= installed
                found[-1].apt_line = line
        elif keyword == "COPY" and "--from=" in args:
            words = [w for w in args.split() if not w.startswith("--")]
            dest = words[-1]
            for src in words[:-1]:
                if _BUILD_OUTPUT.match(src):
                    target = posixpath.basename(src)
                    into = dest if dest.endswith("/") or len(words) > 2 else None
                    found[-1].binaries.append((posixpath.join(into, target) if into else dest,
                                               target))
    return found


def check(path, report, binaries):
    """Reports each library a runtime stage's binary needs that no installed package provides.
    `binaries` maps a CMake target to the binary built on this machine."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    report.checked_file(path, "Dockerfile runtime packages")
    for stage in stages(text):
        for image_path, target in stage.binaries:
            binary = binaries.get(target)
            if not binary:
                report.note(path, f"stage {stage.name}: {target} is not built here; its shared "
                            "libraries were not checked")
                continue
            try:
                owners = libraries.packages_for(binary)
            except libraries.Unavailable as e:
                report.note(path, f"shared-library check skipped: {e}")
                return
            for soname, package in sorted(owners.items()):
                if package is None:
                    report.error(path, stage.line, f"stage {stage.name}: {image_path} needs "
                                 f"{soname}, which no Debian package provides")
                elif (package not in stage.packages and
                      package not in libraries.BASE_IMAGE_PACKAGES):
                    report.error(path, stage.apt_line or stage.line, f"stage {stage.name}: "
                                 f"{image_path} needs {soname}: install {package}")
