"""Named pass/fail checks and timed steps, reported as they happen and summed up at the end."""

import contextlib
import sys
import time


class Checks:
    def __init__(self):
        self.passed = []
        self.failed = []
        self.steps = []  # (name, seconds)

    def expect(self, ok, what, detail=""):
        """Records one check; returns ok so callers can skip what depends on it."""
        (self.passed if ok else self.failed).append(what)
        line = f"  {'ok  ' if ok else 'FAIL'} {what}"
        if detail and not ok:
            line += f"\n         {detail}"
        print(line, flush=True)
        return ok

    @contextlib.contextmanager
    def step(self, name):
        print(f"== container-test: {name}", flush=True)
        start = time.monotonic()
        try:
            yield
        finally:
            took = time.monotonic() - start
            self.steps.append((name, took))
            print(f"== container-test: {name}: {took:.0f} s", flush=True)

    def summary(self, out=sys.stdout):
        print("== container-test: durations", file=out)
        for name, took in self.steps:
            print(f"  {took:6.0f} s  {name}", file=out)
        print(f"  {sum(t for _, t in self.steps):6.0f} s  total", file=out)
        for what in self.failed:
            print(f"FAILED: {what}", file=out)
        # The plain closing line CI reads.
        print(f"{len(self.passed)} passed, {len(self.failed)} failed", file=out, flush=True)
