"""Collects findings as compiler-style lines, so editors and CI logs can jump to them."""

import os
import sys


class Report:
    """Errors fail the lint; notes only explain what was skipped and why."""

    def __init__(self, repo):
        self.repo = repo
        self.errors = []
        self.notes = []
        self.checked = []

    def where(self, path, line=None):
        """path:line (line may be "L:C", or None for the file as a whole)."""
        rel = os.path.relpath(path, self.repo) if os.path.isabs(path) else path
        return f"{rel}:{line}" if line else rel

    def error(self, path, line, message):
        self.errors.append(f"{self.where(path, line)}: error: {message}")

    def note(self, path, message):
        self.notes.append(f"{self.where(path)}: note: {message}")

    def checked_file(self, path, what):
        self.checked.append(f"{self.where(path)} ({what})")

    def print(self, out=sys.stdout):
        for line in self.checked:
            print(f"checked {line}", file=out)
        for line in self.notes:
            print(line, file=out)
        for line in self.errors:
            print(line, file=out)
        verdict = "FAILED" if self.errors else "OK"
        print(f"lint-deploy: {verdict}: {len(self.checked)} file(s), {len(self.errors)} error(s)",
              file=out)
