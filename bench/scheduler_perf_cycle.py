"""The scheduling cycle in-process, per-node vs batch, and the differential check.

    python -m bench scheduler_perf --differential [--workload NAME ...] [--seed N]

For each workload (its createNodes and createPods ops; a workload with other ops that change
placements is refused, naming the op), two schedulers are built in this process as
`python -m scheduler` builds them (the cache, the default profile or the workload's
scheduler configuration, the queue's nominator, the same --seed), one on the per-node path
(`ColumnPaths(enabled=False)`, the scheduler's --no-batch) and one on the batch path. Every pod of
every createPods op, in order, goes through `Scheduler.schedule_pod` on both and, when it
fits, is assumed on its node, as the scheduling cycle does (no API, no binding, no
preemption). Every outcome is compared: the node chosen, or the FitError's message and every
node's Status, or the error. The first difference is reported and the exit code is 1.

The two schedulers alternate pod by pod, so the mean scheduling_algorithm time of each
(schedule_pod, what the scheduler's histogram times) is measured under the same load. Each
cycle starts as the scheduler's does (`Scheduler.new_cycle_state` with the PodInfo the queue
would hold, built before the timer).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from bench.common import fmt, format_table, ratio
from bench.scheduler_perf_workloads import (
    CreateNamespaces,
    CreateNodes,
    CreatePods,
    Workload,
    node_objects,
    pod_objects,
)
from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGates
from kemu.machinery.defaults import set_defaults
from kemu.machinery.pod_strategy import default_requests_from_limits
from kemu.scheduling.config import config_from_dict, default_config, scheduler_registry
from kemu.scheduling.filter_score import ColumnPaths
from kemu.scheduling.interface import FitError, NodeToStatus
from kemu.scheduling.runtime import Framework, FrameworkOptions
from scheduler.app import new_cache
from scheduler.metrics import SchedulerMetrics
from scheduler.queue.scheduling_queue import PriorityQueue
from scheduler.schedule_one import CycleSettings, Scheduler, SchedulingError

DEFAULT_SCHEDULER = "default-scheduler"


@dataclass
class PathRun:
    """One path's scheduler and its timings."""

    scheduler: Scheduler
    fwk: Framework
    seconds: dict[int, float] = field(default_factory=dict)  # per op index: schedule_pod time
    cpu_seconds: dict[int, float] = field(default_factory=dict)  # the same in CPU time
    pods: dict[int, int] = field(default_factory=dict)


@dataclass
class DifferentialResult:
    workload: str
    nodes: int = 0
    pods: int = 0
    scheduled: int = 0
    unschedulable: int = 0
    mismatch: str = ""  # the first difference, "" when every outcome matched
    skipped: str = ""  # why the workload was not run (an op the run cannot do)
    compared: bool = True  # False: one path alone ran (--paths batch / per-node)
    per_node_ms: float = math.nan  # mean schedule_pod time of the measured op (wall)
    batch_ms: float = math.nan
    per_node_cpu_ms: float = math.nan  # the same in this process's CPU time
    batch_cpu_ms: float = math.nan


def outcome(run: PathRun, pod: types_pb2.Pod, op_index: int) -> tuple[object, ...]:
    """One scheduling cycle's algorithm on `run`'s scheduler: ("host", node) after assuming
    the pod there, ("fit", message, statuses) or ("error", message)."""
    sched = run.scheduler
    # As the scheduler: the queue built the pod's PodInfo when the pod arrived, and the cycle
    # starts with it (Scheduler.new_cycle_state); the histogram times schedule_pod.
    state = sched.new_cycle_state(sched.cache.pod_info(pod))
    start = time.perf_counter()
    cpu_start = time.process_time()
    try:
        result = sched.schedule_pod(run.fwk, state, pod)
    except FitError as fit:
        return ("fit", str(fit), _statuses(fit.statuses))
    except SchedulingError as e:
        return ("error", str(e))
    run.seconds[op_index] = run.seconds.get(op_index, 0.0) + time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    run.cpu_seconds[op_index] = run.cpu_seconds.get(op_index, 0.0) + cpu
    run.pods[op_index] = run.pods.get(op_index, 0) + 1
    assumed = types_pb2.Pod()
    assumed.CopyFrom(pod)
    assumed.spec.node_name = result.suggested_host
    sched.cache.assume_pod(assumed)
    return ("host", result.suggested_host, sched.next_start_node_index)


def _statuses(statuses: NodeToStatus) -> tuple[tuple[str, str, tuple[str, ...], str], ...]:
    return tuple((n, s.code.name, s.reasons, s.plugin) for n, s in statuses.items())


def new_path(
    workload: Workload, nodes: Sequence[types_pb2.Node], seed: int, batch: bool
) -> PathRun:
    clock = FakeClock()
    gates = FeatureGates.default()
    cache = new_cache(clock, gates)
    for node in nodes:
        cache.add_node(node)
    config = (
        config_from_dict(dict(workload.scheduler_config))
        if workload.scheduler_config is not None
        else default_config()
    )
    profile = config.profiles[0]  # the top-level percentageOfNodesToScore is its default
    rng = random.Random(seed)
    fwk = Framework(
        profile, scheduler_registry(), options=FrameworkOptions(clock=clock, gates=gates, rng=rng)
    )
    queue = PriorityQueue(clock=clock, less=fwk.queue_sort_func())
    fwk.set_nominator(queue.nominator)
    sched = Scheduler(
        client=None,  # type: ignore[arg-type]  # schedule_pod makes no API call
        cache=cache,
        queue=queue,
        profiles={profile.scheduler_name: fwk},
        clock=clock,
        settings=CycleSettings.of(gates, paths=ColumnPaths(enabled=batch)),
        metrics=SchedulerMetrics(None),
        pod_lister=None,  # type: ignore[arg-type]  # nor reads the informer
    )
    return PathRun(sched, fwk)  # batch_min_nodes as the scheduler has it


def created_pods(op: CreatePods, index: int, first_uid: int) -> list[types_pb2.Pod]:
    """The op's pods as the apiserver would store them (defaults, a uid, the default
    scheduler, the priority of the op's PriorityClass)."""
    pods = pod_objects(op, index)
    for i, pod in enumerate(pods):
        set_defaults(pod)
        default_requests_from_limits(pod.spec)
        pod.metadata.uid = f"uid-{first_uid + i}"
        if not pod.spec.scheduler_name:
            pod.spec.scheduler_name = DEFAULT_SCHEDULER
        if op.priority is not None:
            pod.spec.priority = op.priority
    return pods


def run_differential(
    workload: Workload, seed: int, *, only: bool | None = None
) -> DifferentialResult:
    """Both paths over the workload; see the module docstring. `only`: the batch (True) or
    the per-node (False) path alone, timed, nothing compared (its cycles then run back to
    back, as the scheduler's do, instead of alternating with the other path's)."""
    r = DifferentialResult(workload.full_name)
    nodes: list[types_pb2.Node] = []
    for index, op in enumerate(workload.ops):
        if isinstance(op, CreateNodes):
            nodes.extend(node_objects(op, index))
        elif not isinstance(op, CreatePods | CreateNamespaces):
            r.skipped = (
                f"op {index} ({type(op).__name__}): only createNodes, createNamespaces and "
                "createPods are run in-process"
            )
            return r
    r.nodes = len(nodes)
    if only is not None:
        return _run_one_path(workload, nodes, seed, only, r)
    runs = (new_path(workload, nodes, seed, False), new_path(workload, nodes, seed, True))
    uid = 0
    measured = -1
    for index, op in enumerate(workload.ops):
        if not isinstance(op, CreatePods):
            continue
        if op.collect_metrics:
            measured = index
        pods = created_pods(op, index, uid)
        uid += len(pods)
        for k, pod in enumerate(pods):
            # Alternate which path goes first, so that neither always runs on a warm cache.
            a, b = (runs[0], runs[1]) if k % 2 == 0 else (runs[1], runs[0])
            first = outcome(a, pod, index)
            second = outcome(b, pod, index)
            per_node, batch = (first, second) if a is runs[0] else (second, first)
            r.pods += 1
            if per_node != batch:
                r.mismatch = (
                    f"op {index}, pod {pod.metadata.name}: per-node {_short(per_node)}, "
                    f"batch {_short(batch)}"
                )
                return r
            if per_node[0] == "host":
                r.scheduled += 1
            else:
                r.unschedulable += 1
    if measured >= 0:
        r.per_node_ms = _mean_ms(runs[0].seconds, runs[0].pods, measured)
        r.batch_ms = _mean_ms(runs[1].seconds, runs[1].pods, measured)
        r.per_node_cpu_ms = _mean_ms(runs[0].cpu_seconds, runs[0].pods, measured)
        r.batch_cpu_ms = _mean_ms(runs[1].cpu_seconds, runs[1].pods, measured)
    return r


def _run_one_path(
    workload: Workload, nodes: Sequence[types_pb2.Node], seed: int, batch: bool,
    r: DifferentialResult,
) -> DifferentialResult:  # fmt: skip
    run = new_path(workload, nodes, seed, batch)
    r.compared = False
    uid = 0
    measured = -1
    for index, op in enumerate(workload.ops):
        if not isinstance(op, CreatePods):
            continue
        if op.collect_metrics:
            measured = index
        pods = created_pods(op, index, uid)
        uid += len(pods)
        for pod in pods:
            r.pods += 1
            if outcome(run, pod, index)[0] == "host":
                r.scheduled += 1
            else:
                r.unschedulable += 1
    if measured >= 0:
        ms = _mean_ms(run.seconds, run.pods, measured)
        cpu = _mean_ms(run.cpu_seconds, run.pods, measured)
        if batch:
            r.batch_ms, r.batch_cpu_ms = ms, cpu
        else:
            r.per_node_ms, r.per_node_cpu_ms = ms, cpu
    return r


def _mean_ms(seconds: dict[int, float], pods: dict[int, int], index: int) -> float:
    count = pods.get(index, 0)
    return seconds.get(index, 0.0) / count * 1000 if count else math.nan


def _short(outcome: tuple[object, ...]) -> str:
    text = repr(outcome)
    return text if len(text) < 400 else text[:400] + "..."


def render_differential(results: Sequence[DifferentialResult]) -> str:
    rows = [
        [
            r.workload,
            str(r.nodes),
            str(r.pods),
            f"{r.scheduled} / {r.unschedulable}",
            "skipped"
            if r.skipped
            else "not compared"
            if not r.compared
            else "identical"
            if not r.mismatch
            else "DIFFERENT",
            f"{fmt(r.per_node_ms, 3)} / {fmt(r.per_node_cpu_ms, 3)}",
            f"{fmt(r.batch_ms, 3)} / {fmt(r.batch_cpu_ms, 3)}",
            f"{fmt(ratio(r.per_node_ms, r.batch_ms), 2)} / "
            f"{fmt(ratio(r.per_node_cpu_ms, r.batch_cpu_ms), 2)}",
        ]
        for r in results
    ]
    header = [
        "workload", "nodes", "pods", "scheduled / unschedulable", "outcomes",
        "per-node ms wall / cpu", "batch ms wall / cpu", "per-node/batch wall / cpu",
    ]  # fmt: skip
    lines = [
        "scheduler_perf --differential: every pod of every createPods op through "
        "schedule_pod on both paths (same seed), assumed where it fits; ms: mean "
        "schedule_pod time of the measured op's scheduled pods, wall and this process's CPU, "
        "the two paths alternating",
        "",
        format_table(header, rows),
    ]
    lines += [f"{r.workload}: first difference: {r.mismatch}" for r in results if r.mismatch]
    lines += [f"{r.workload}: skipped: {r.skipped}" for r in results if r.skipped]
    return "\n".join(lines)
