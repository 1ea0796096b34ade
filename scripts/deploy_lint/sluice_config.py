"""What the deployment files need to know about a sluice config, and `sluice validate`.

The binary is the authority on whether a config is valid; this module only reads the two facts
the manifests must agree with (the admin address and drain_timeout), using the defaults
documented in docs/configuration.md for absent fields.
"""

import os
import re
import subprocess
import tempfile

DEFAULT_ADMIN = "127.0.0.1:9901"
DEFAULT_DRAIN_TIMEOUT_S = 5.0
LOOPBACK_HOSTS = ("localhost", "::1", "[::1]")

_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(ns|us|ms|s|m|h)$")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text):
    """Seconds for '15s', '500ms', '1m' (sluice's units); None when it is not one."""
    m = _DURATION.match(str(text).strip())
    return float(m.group(1)) * _UNIT_S[m.group(2)] if m else None


def parse_address(text):
    """(host, port) from 'host:port' or '[v6]:port'; None when malformed."""
    text = str(text)
    m = re.match(r"^\[([^\]]+)\]:([0-9]+)$", text) or re.match(r"^([^:\[\]]+):([0-9]+)$", text)
    return (m.group(1), int(m.group(2))) if m else None


def is_loopback(host):
    return host in LOOPBACK_HOSTS or host.startswith("127.")


class SluiceConfig:
    """Facts read from one config that `sluice validate` accepted (admin is None, and
    drain_timeout the default, where a config it was not run on has them malformed)."""

    def __init__(self, doc):
        doc = doc if isinstance(doc, dict) else {}
        admin = doc.get("admin") if isinstance(doc.get("admin"), dict) else {}
        self.admin = parse_address(admin.get("address", DEFAULT_ADMIN))
        drain = parse_duration(doc.get("drain_timeout", ""))
        self.drain_timeout_s = DEFAULT_DRAIN_TIMEOUT_S if drain is None else drain

    @property
    def admin_port(self):
        return self.admin[1] if self.admin else None


class Validator:
    """Runs `sluice validate`; without a binary, says so once and validates nothing."""

    def __init__(self, binary, report):
        self.binary = binary
        self.report = report
        self._said_skipped = False
        self._results = {}  # realpath -> verdict: a file two checks reach is validated once

    def validate_file(self, path, display=None, line_offset=0, col_offset=0):
        """True if sluice accepts the file. Its errors (FILE:L:C: ...) are reported against
        `display`, shifted by the offsets when the config is embedded in another file."""
        if not self.binary:
            if not self._said_skipped:
                self.report.note(path, "no sluice binary given (--sluice): configs not validated")
                self._said_skipped = True
            return True
        if not os.access(self.binary, os.X_OK):
            self.report.error(self.binary, None, "the sluice binary is missing or not executable")
            return False
        if os.path.realpath(path) in self._results:
            return self._results[os.path.realpath(path)]
        proc = subprocess.run([self.binary, "validate", path], capture_output=True, text=True,
                              timeout=60, check=False)
        if proc.returncode == 0:
            self._results[os.path.realpath(path)] = True
            return True
        display = display or path
        self._results[os.path.realpath(path)] = False
        message = (proc.stderr.strip() or proc.stdout.strip() or
                   f"sluice validate exited {proc.returncode}")
        m = re.match(r"^(.*?):([0-9]+):([0-9]+): (.*)$", message, re.S)
        if m and os.path.realpath(m.group(1)) == os.path.realpath(path):
            line = int(m.group(2)) + line_offset
            col = int(m.group(3)) + col_offset
            self.report.error(display, f"{line}:{col}", f"sluice validate: {m.group(4)}")
        else:
            self.report.error(display, None, f"sluice validate: {message}")
        return False

    def validate_text(self, text, display, line_offset, col_offset):
        with tempfile.TemporaryDirectory(prefix="lint-deploy-") as tmp:
            path = os.path.join(tmp, "sluice.yaml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            return self.validate_file(path, display, line_offset, col_offset)
