"""PNG plots with Debian's python3-matplotlib (Agg backend, no display needed)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STATUS_STYLE = {
    "0": ("OK", "tab:blue"),
    "8": ("RESOURCE_EXHAUSTED (shed)", "tab:orange"),
    "4": ("DEADLINE_EXCEEDED", "tab:red"),
}


def _grid(n):
    cols = 1 if n == 1 else 2
    rows = (n + cols - 1) // cols
    return rows, cols


def _axes(n, title, height=2.6):
    rows, cols = _grid(n)
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, height * rows + 0.6), squeeze=False,
                             sharex=True)
    fig.suptitle(title)
    flat = [a for row in axes for a in row]
    for a in flat[n:]:
        a.set_visible(False)
    return fig, flat[:n]


def _finish(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def latency_over_time(path, runs, title, phase_marks=(), log_y=True):
    """runs: [(label, LoadgenRun)]. Every call's duration by start time, coloured by status."""
    fig, axes = _axes(len(runs), title)
    for ax, (label, run) in zip(axes, runs):
        groups = {}
        for c in run.calls:
            if c["kind"] != "call":
                continue
            groups.setdefault(c["status"], ([], []))
            groups[c["status"]][0].append(float(c["start_ms"]) / 1000)
            groups[c["status"]][1].append(max(float(c["latency_ms"]), 0.01))
        for status, (xs, ys) in sorted(groups.items()):
            name, color = STATUS_STYLE.get(status, (f"status {status}", "tab:gray"))
            ax.scatter(xs, ys, s=3, color=color, label=f"{name} ({len(xs)})", alpha=0.6)
        for x in phase_marks:
            ax.axvline(x, color="gray", lw=0.8, ls="--")
        if log_y:
            ax.set_yscale("log")
        ax.set_title(label, fontsize=9)
        ax.set_ylabel("call duration ms")
        ax.legend(fontsize=7, loc="upper right", markerscale=3)
    axes[-1].set_xlabel("call start, s")
    _finish(fig, path)


def rates_over_time(path, runs, title, bin_s=0.5, phase_marks=()):
    """Goodput (OK/s), shed/s and timeouts/s by call end time, in bins."""
    fig, axes = _axes(len(runs), title)
    for ax, (label, run) in zip(axes, runs):
        ends = {"0": [], "8": [], "4": []}
        skipped = []
        horizon = 0.0
        for c in run.calls:
            if c["kind"] != "call":
                skipped.append(float(c["scheduled_ms"]) / 1000)
                continue
            t = float(c["end_ms"]) / 1000
            horizon = max(horizon, t)
            if c["status"] in ends:
                ends[c["status"]].append(t)
        nbins = int(horizon / bin_s) + 1
        xs = [i * bin_s for i in range(nbins)]

        def rate(ts):
            counts = [0] * nbins
            for t in ts:
                counts[min(nbins - 1, int(t / bin_s))] += 1
            return [n / bin_s for n in counts]

        ax.plot(xs, rate(ends["0"]), label="goodput OK/s", color="tab:blue")
        ax.plot(xs, rate(ends["8"]), label="shed/s", color="tab:orange")
        ax.plot(xs, rate(ends["4"]), label="timeouts/s", color="tab:red")
        if skipped:
            ax.plot(xs, rate(skipped), label="skipped slots/s", color="tab:gray", ls=":")
        for x in phase_marks:
            ax.axvline(x, color="gray", lw=0.8, ls="--")
        ax.set_title(label, fontsize=9)
        ax.set_ylabel("per s")
        ax.legend(fontsize=7, loc="upper right")
    axes[-1].set_xlabel("time, s")
    _finish(fig, path)


def lines(path, panels, title, xlabel="time, s", log_xy=False, marker=None):
    """panels: [(panel title, ylabel, [(label, [(x, y)...])...])]. log_xy: both axes log (a
    sweep); marker: a matplotlib marker on every point."""
    fig, axes = _axes(len(panels), title)
    for ax, (ptitle, ylabel, series) in zip(axes, panels):
        for label, points in series:
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], label=label, lw=1.2,
                        marker=marker, ms=4)
        if log_xy:
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_title(ptitle, fontsize=9)
        ax.set_ylabel(ylabel)
        if any(points for _, points in series):
            ax.legend(fontsize=7, loc="upper right")
    axes[-1].set_xlabel(xlabel)
    _finish(fig, path)


def bars(path, title, labels, groups, ylabel):
    """groups: [(series label, [value per label])]."""
    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / max(1, len(groups))
    for i, (name, values) in enumerate(groups):
        xs = [j + i * width for j in range(len(labels))]
        ax.bar(xs, [v or 0 for v in values], width=width, label=name)
    ax.set_xticks([j + width * (len(groups) - 1) / 2 for j in range(len(labels))])
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7)
    _finish(fig, path)
