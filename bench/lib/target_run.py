"""One measured run of a scenario: a fresh test upstream, sluice in front of it unless the run is
direct, the load generator under the sampler; both processes are stopped afterwards."""

import os

from loadgen import run_loadgen
from procs import Sluice, Upstream, died, sluice_yaml
from sampler import Sampler


def run_target(bins, work, tag, filters, phases, loadgen_args, upstream_opts, *,
               sample_upstream=True, admin_port=0, sluice_name=None, timeout=900,
               on_sluice_started=None):
    """filters None: the load generator talks to the upstream directly; a list (possibly empty):
    through sluice with that filter chain. upstream_opts go to Upstream (workers, delay,
    schedule). Returns (run, sampler, dead), dead naming the processes that exited during it."""
    up = Upstream(bins, work, name=f"up.{tag}", **upstream_opts)
    sl = None
    try:
        target = up.target
        if filters is not None:
            sl = Sluice(bins, work, sluice_yaml(up.target, filters, admin_port=admin_port),
                        name=sluice_name or f"sluice.{tag}")
            target = sl.target
            if on_sluice_started:
                on_sluice_started(sl)
        watched = {"pids": {"upstream": up.proc.pid}, "upstream": up} if sample_upstream else {}
        with Sampler(os.path.join(work, f"{tag}.samples.csv"), sluice=sl, **watched) as sampler:
            run = run_loadgen(bins, work, tag, target, phases, loadgen_args, timeout=timeout)
        dead = died(upstream=up.proc, sluice=sl.proc if sl else None)
    finally:
        if sl:
            sl.stop()
        up.stop()
    return run, sampler, dead
