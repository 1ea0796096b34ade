"""Markdown reports under bench/results/, and the common command-line flags of every scenario."""

import argparse
import os
import platform
import subprocess
import sys
import time

from procs import REPO

RESULTS = os.path.join(REPO, "bench", "results")


def parse_args(description, extra=None):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--smoke", action="store_true",
                   help="about 10 s: shortened run that keeps the script working (CI)")
    p.add_argument("--build", help="build directory (default: $SLUICE_BUILD_DIR or newest build*)")
    p.add_argument("--sluice", metavar="BINARY",
                   help="the sluice binary to measure (default: $SLUICE_BIN, else DIR/src/sluice)"
                   "; e.g. a newer build's, with this build's load generator and upstream")
    p.add_argument("--out", default=RESULTS, help="where <name>.md and its PNGs go")
    p.add_argument("--direct-only", action="store_true", help="skip every path through sluice")
    if extra:
        extra(p)
    args = p.parse_args()
    if args.sluice:
        os.environ["SLUICE_BIN"] = os.path.abspath(args.sluice)
    os.makedirs(args.out, exist_ok=True)
    return args


def fmt(v, digits=1):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def table(headers, rows):
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for r in rows:
        out.append("| " + " | ".join(fmt(c) for c in r) + " |")
    return "\n".join(out)


def environment():
    def cmd(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=5).stdout.strip()
        except OSError:
            return "?"
    load = os.getloadavg()
    binary = os.environ.get("SLUICE_BENCH_BINARY", "none")
    built = ""
    if os.path.exists(binary):
        built = time.strftime(" built %Y-%m-%d %H:%M", time.gmtime(os.path.getmtime(binary)))
    return (f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}, {platform.node()}, "
            f"{os.cpu_count()} CPUs, kernel {platform.release()}, "
            f"load average {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f} at the end, "
            f"repository at {cmd(['git', '-C', REPO, 'rev-parse', '--short', 'HEAD'])}, "
            f"sluice binary {binary}{built}")


def command_line():
    return "/usr/bin/python3 " + " ".join([os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:])


def write(out_dir, name, title, body, smoke):
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{name}.md")
    header = [f"# {title}", ""]
    if smoke:
        header += ["**Smoke run** (shortened, only checks that the script works; the numbers mean "
                   "nothing).", ""]
    header += [f"Reproduce: `{command_line()}` (from the repository root, after building "
               "`sluice sluice-loadgen sluice-test-upstream sluice_test_py`).", "",
               f"Measured: {environment()}.", ""]
    with open(path, "w") as f:
        f.write("\n".join(header) + body.rstrip() + "\n")
    return path
