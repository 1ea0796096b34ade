"""One measured run of a scenario: a fresh test upstream, sluice in front of it unless the run is
direct, the load generator(s) under the sampler; both processes are stopped afterwards."""

import json
import os
import threading

from loadgen import run_loadgen
from procs import Sluice, Upstream, died, sluice_yaml
from sampler import Sampler


def spare_capacity_policies(budget, slo):
    """The policies the capacity-to-spare scenarios compare: no filter, and the queue-wait
    budget in front of each adaptive limiter with no capacity hint."""
    qwb = {"type": "queue_wait_budget", "budget": budget}
    return {
        "no_filter": [],
        "rtt_gradient": [qwb, {"type": "rtt_gradient"}],
        "aimd": [qwb, {"type": "aimd", "latency_slo": slo}],
    }


def run_target(bins, work, tag, filters, phases, loadgen_args, upstream_opts, *,
               sample_upstream=True, admin_port=0, sluice_name=None, timeout=900,
               on_sluice_started=None, listener_extra=None, sluice_workers=1):
    """filters None: the load generator talks to the upstream directly; a list (possibly empty):
    through sluice with that filter chain. upstream_opts go to Upstream (workers, delay,
    schedule, extra). listener_extra: more keys of sluice's listener (e.g. criticality).
    Returns (run, sampler, dead), dead naming the processes that exited during it."""
    runs, sampler, dead = run_target_clients(
        bins, work, tag, filters, [(None, phases, loadgen_args)], upstream_opts,
        sample_upstream=sample_upstream, admin_port=admin_port, sluice_name=sluice_name,
        timeout=timeout, on_sluice_started=on_sluice_started, listener_extra=listener_extra,
        sluice_workers=sluice_workers)
    return runs[None], sampler, dead


def run_target_clients(bins, work, tag, filters, clients, upstream_opts, *,
                       sample_upstream=True, admin_port=0, sluice_name=None, timeout=900,
                       on_sluice_started=None, listener_extra=None, sluice_workers=1):
    """Like run_target, with several load generators at once against the same target:
    clients = [(name, phases, loadgen_args)], each its own sluice-loadgen process started
    together (e.g. two methods, or two criticality classes, each with its own rate plan).
    Returns ({name: run}, sampler, dead); sampler.final_limits is sluice's /limits at the end
    (also written to <work>/<tag>.limits.json), None when direct."""
    up = Upstream(bins, work, name=f"up.{tag}", **upstream_opts)
    sl = None
    try:
        target = up.target
        if filters is not None:
            config = sluice_yaml(up.target, filters, workers=sluice_workers,
                                 extra_listener=listener_extra, admin_port=admin_port)
            sl = Sluice(bins, work, config, name=sluice_name or f"sluice.{tag}")
            target = sl.target
            if on_sluice_started:
                on_sluice_started(sl)
        watched = {"pids": {"upstream": up.proc.pid}, "upstream": up} if sample_upstream else {}
        runs, errors = {}, []

        def one(name, phases, args):
            client_tag = tag if name is None else f"{tag}.{name}"
            try:
                runs[name] = run_loadgen(bins, work, client_tag, target, phases, args,
                                         timeout=timeout)
            except Exception as e:  # noqa: BLE001 - re-raised below, after the others end
                errors.append(e)

        with Sampler(os.path.join(work, f"{tag}.samples.csv"), sluice=sl, **watched) as sampler:
            if len(clients) == 1:
                one(*clients[0])
            else:
                threads = [threading.Thread(target=one, args=c) for c in clients]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
        if errors:
            raise errors[0]
        dead = died(upstream=up.proc, sluice=sl.proc if sl else None)
        # The last /limits (baselines, recent decisions) for a report or a diagnosis afterwards.
        sampler.final_limits = None
        if sl and not dead:
            try:
                sampler.final_limits = sl.admin("/limits", timeout=2)
                with open(os.path.join(work, f"{tag}.limits.json"), "w") as f:
                    json.dump(sampler.final_limits, f, indent=1)
            except Exception:  # noqa: BLE001 - a missing snapshot only loses detail
                pass
    finally:
        if sl:
            sl.stop()
        up.stop()
    return runs, sampler, dead
