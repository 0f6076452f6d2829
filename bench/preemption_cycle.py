"""PreemptionBasic's scheduling cycles in-process: the CPU time of a preemptor's failed cycle.

    python -m bench preemption_cycle [--nodes N] [--preemptors P] [--seed S]

No cluster and no API: a scheduler built as `python -m scheduler` builds it (the cache, the
default profile, the queue's nominator, the batch path) over N nodes of 4 cpu, each holding 4
low pods (priority 0, 900m, started), as PreemptionBasic/500Nodes sets them up. Each of P
preemptors (priority 10, 3000m) goes through `Scheduler.schedule_pod`, which fails on every
node (the failed Filter pass), then through the preemption dry run (`Evaluator.find_candidates`
and `select_candidate`, upstream's candidates from a random offset); it is then nominated to the
chosen node and its victims leave the cache, as the executor's deletions do. The preemptors
that come later see more nodes taken by nominations: the real run's order, where every
preemptor's first attempt comes before any final one.

Reported: the mean process CPU time per preemptor of the failed Filter pass and of the dry run,
the victims chosen (3 per preemptor at these sizes), and a digest of every decision (each
preemptor's node and its victims in order): two trees that decide alike print the same digest
for the same seed. CPU time, not wall time, so that runs
on a loaded machine can be compared side by side (the ratio; absolute times still grow with
the load).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
from collections.abc import Sequence

from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGates
from kemu.machinery.defaults import set_defaults
from kemu.scheduling.config import default_config
from kemu.scheduling.interface import CycleState, FitError
from kemu.scheduling.plugins.default_preemption import NAME as DEFAULT_PREEMPTION
from kemu.scheduling.plugins.default_preemption import DefaultPreemption
from kemu.scheduling.plugins.registry import in_tree_registry
from kemu.scheduling.runtime import Framework, FrameworkOptions
from scheduler.app import new_cache
from scheduler.metrics import SchedulerMetrics
from scheduler.queue.scheduling_queue import PriorityQueue
from scheduler.schedule_one import CycleSettings, Scheduler

SCHEDULER = "default-scheduler"


def _node(name: str) -> types_pb2.Node:
    n = types_pb2.Node()
    n.metadata.name = name
    n.metadata.labels["kubernetes.io/hostname"] = name
    for k, v in (("cpu", "4"), ("memory", "32Gi"), ("pods", "110")):
        n.status.allocatable[k] = v
        n.status.capacity[k] = v
    return n


def _pod(name: str, cpu: str, priority: int, node: str = "") -> types_pb2.Pod:
    p = types_pb2.Pod()
    p.metadata.name = name
    p.metadata.namespace = "default"
    p.metadata.uid = f"uid-{name}"
    c = p.spec.containers.add()
    c.name = "c"
    c.image = "registry.k8s.io/pause:3.10"
    c.resources.requests["cpu"] = cpu
    c.resources.requests["memory"] = "500Mi"
    p.spec.priority = priority
    p.spec.scheduler_name = SCHEDULER
    set_defaults(p)
    if node:
        p.spec.node_name = node
        p.status.start_time.FromSeconds(1_700_000_000)
    return p


def run(nodes: int, preemptors: int, seed: int) -> tuple[float, float, float, str]:
    """(filter ms, dry run ms, victims) per preemptor, and a digest of every decision (each
    preemptor's node and victims in order): equal digests, equal outcomes."""
    clock = FakeClock()
    gates = FeatureGates.default()
    cache = new_cache(clock, gates)
    low: dict[str, types_pb2.Pod] = {}
    for i in range(nodes):
        cache.add_node(_node(f"node-{i}"))
    for j in range(4 * nodes):
        p = _pod(f"low-{j}", "900m", 0, f"node-{j % nodes}")
        cache.add_pod(p)
        low[p.metadata.name] = p
    profile = default_config().profiles[0]
    rng = random.Random(seed)
    fwk = Framework(
        profile, in_tree_registry(), options=FrameworkOptions(clock=clock, gates=gates, rng=rng)
    )
    queue = PriorityQueue(clock=clock, less=fwk.queue_sort_func())
    fwk.set_nominator(queue.nominator)
    sched = Scheduler(
        client=None,  # type: ignore[arg-type]  # schedule_pod makes no API call
        cache=cache,
        queue=queue,
        profiles={SCHEDULER: fwk},
        clock=clock,
        settings=CycleSettings.of(gates),
        metrics=SchedulerMetrics(None),
        pod_lister=None,  # type: ignore[arg-type]  # nor reads the informer
    )
    plugin = fwk.plugin(DEFAULT_PREEMPTION)
    assert isinstance(plugin, DefaultPreemption)
    evaluator = plugin.evaluator
    filter_s = dry_run_s = 0.0
    victims = 0
    digest = hashlib.sha256()
    for i in range(preemptors):
        pod = _pod(f"high-{i}", "3000m", 10)
        state = CycleState()
        t0 = time.process_time()
        try:
            sched.schedule_pod(fwk, state, pod)
        except FitError as fit:
            t1 = time.process_time()
            candidates, _, _ = evaluator.find_candidates(state, pod, fit.statuses, [])
            best = evaluator.select_candidate(candidates)
            t2 = time.process_time()
        else:
            raise SystemExit(f"{pod.metadata.name} fits without preemption")
        if best is None:
            raise SystemExit(f"no preemption candidate for {pod.metadata.name}")
        filter_s += t1 - t0
        dry_run_s += t2 - t1
        victims += len(best.victims.pods)
        chosen = [pod.metadata.name, best.name, *(v.metadata.name for v in best.victims.pods)]
        digest.update(" ".join(chosen).encode() + b"\n")
        pod.status.nominated_node_name = best.name
        queue.add_nominated_pod(cache.pod_info(pod), best.name)
        for v in best.victims.pods:
            cache.remove_pod(low[v.metadata.name])
    n = max(preemptors, 1)
    return 1000 * filter_s / n, 1000 * dry_run_s / n, victims / n, digest.hexdigest()[:16]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench preemption_cycle", description=__doc__)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--preemptors", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.nodes < 1 or not 0 <= args.preemptors <= args.nodes:
        parser.error("--nodes must be at least 1 and --preemptors between 0 and --nodes")
    filter_ms, dry_run_ms, victims, digest = run(args.nodes, args.preemptors, args.seed)
    print(
        f"preemption_cycle: {args.nodes} nodes, {args.preemptors} preemptors: "
        f"failed Filter pass {filter_ms:.2f} ms, dry run {dry_run_ms:.2f} ms, "
        f"total {filter_ms + dry_run_ms:.2f} ms CPU per preemptor; "
        f"victims per preemptor {victims:.2f}; decisions {digest}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
