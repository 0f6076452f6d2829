"""KEP-5836 end to end: resizes the kubelet Deferred, completed by the scheduler preempting
lower-priority pods on the pod's node, on real (hollow) kubelets.

    python -m bench resize_preemption [--nodes N] [--lows K] [--deferred M] [--variants A,B]
                                      [--rounds R] [--quick] [--json FILE]

Each run is on a fresh cluster: etcd, the apiserver, `python -m scheduler` and one hollow
kubelet process serving the N nodes, all with InPlacePodVerticalScalingSchedulerPreemption on.
The workload is upstream's test/integration/scheduler/preemption/deferred_resize_preemption_test.go S-RPE-9 (the KEP's over-preemption example) on every node (see
`Shape`):

- a node of (K+1) cpu holds one high-priority pod and K low-priority pods, 1 cpu each (full);
- setup: M of the K low pods are resized to the node's whole cpu; the kubelet defers them (they
  fit the node, not next to the others), and they stay Deferred: the scheduler finds nothing of
  lower priority to preempt for them;
- measured: the high pod of every node is resized from 1 to 2 cpu. The kubelet defers it (the
  node is full), the scheduler preempts on that node, the kubelet allocates the resize once the
  victims are gone and actuates it after --resize-actuation-delay.

One low pod is enough for the kubelet (it counts every other pod at what it holds). Upstream's
alpha accounting counts the Deferred low pods at their desired size (the whole node), so none of
them can be reprieved and it preempts all M of them; kemu's
`kemuKubeletLikeResizeAccounting: true` (a NodeResourcesFit arg, variant B) counts them as the
kubelet does. Both figures are computed from the shape and printed next to the measured ones.

A watch of the pods gives, per resize, the time it was first seen Deferred, its node's first
victim seen with DisruptionTarget (PreemptionByScheduler), the resize allocated and then actuated
(allocated == actual == desired, no PodResizePending or PodResizeInProgress); victims are
counted per node from DisruptionTarget, from deletions, from the scheduler's Preempted events
and from its scheduler_preemption_victims histogram. CPU and RSS of every process as the other
benchmarks. The cluster is always stopped at the end, also on Ctrl-C. See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import math
import os
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.abc
import yaml

from bench.common import (
    Clock,
    CpuMeter,
    fmt,
    format_table,
    jsonable,
    ratio,
    rss_kib,
    run_concurrent,
)
from bench.kubelet import Distribution, distribution, node_name, start_hollow_kubelet
from bench.scheduler_perf import (
    PREEMPTION_ATTEMPTS,
    PREEMPTION_VICTIMS,
    Samples,
    by_label,
    metric_delta,
    parse_metrics,
)
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.component.featuregate import IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION
from kemu.machinery import quantity
from kemu.machinery.duration import format_duration
from kemu.machinery.errors import ApiError, Conflict, Gone
from kemu.machinery.eviction import DISRUPTION_TARGET
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.cluster import Cluster, add_clock_argument
from kemu.testing.namespaces import ensure_namespace
from kemu.testing.processes import ProcessStartError

logger = logging.getLogger(__name__)

GATE: Final = IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION
GATES: Final = {GATE: True}
KUBELET_LIKE_ARG: Final = "kemuKubeletLikeResizeAccounting"
NAMESPACE: Final = "bench-rpe"
NODE_PREFIX: Final = "rpe"
LOW_CLASS, HIGH_CLASS = "bench-rpe-low", "bench-rpe-high"
LOW_PRIORITY, HIGH_PRIORITY = 100, 1000
CONTAINER: Final = "app"
POD_MEMORY: Final = "256Mi"
NODE_MEMORY: Final = "8Gi"
CPU: Final = "cpu"
RUNNING: Final = "Running"
POD_RESIZE_PENDING: Final = "PodResizePending"
POD_RESIZE_IN_PROGRESS: Final = "PodResizeInProgress"
DEFERRED: Final = "Deferred"
PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"
PREEMPTED_EVENT: Final = "Preempted"
PENDING_PODS: Final = "scheduler_pending_pods"
SETUP_TIMEOUT: Final = 120.0  # pods Running, low resizes Deferred
SCHEDULER_SETTLE_TIMEOUT: Final = 30.0
SEED: Final = 1
EVENTS_TIMEOUT: Final = 20.0  # for the scheduler's Preempted events to be written
EVENTS_QUIET: Final = 3.0
MAX_LOWS: Final = 8


# ---------------------------------------------------------------------- the workload's shape


@dataclass(frozen=True)
class Shape:
    """What every node holds, in milli-cpu (memory is 256Mi per pod on 8Gi nodes and never
    resized). With the defaults (K = M = 3) this is S-RPE-9 with X = 2 cpu: a 4-cpu node, the
    high pod at 1 cpu resized to 2, three low pods at 1 cpu each resized to 4 (Deferred)."""

    nodes: int
    lows: int = 3  # K: low-priority pods per node
    deferred: int = 3  # M of them mid-resize (Deferred) before the measured resizes
    unit_m: int = 1000  # every pod's cpu request when created
    high_to_m: int = 2000  # the measured resize of the high pod

    def validate(self) -> None:
        if self.nodes < 1:
            raise ValueError("--nodes must be at least 1")
        if not 1 <= self.lows <= MAX_LOWS:
            raise ValueError(f"--lows must be between 1 and {MAX_LOWS}")
        if not 0 <= self.deferred <= self.lows:
            raise ValueError("--deferred must be between 0 and --lows")
        if self.node_cpu_m <= self.unit_m:
            raise ValueError("a Deferred low pod's resize would not raise its request")
        if self.high_to_m <= self.unit_m or self.high_to_m > self.node_cpu_m:
            raise ValueError("the high pod's resize must raise its request within the node")

    @property
    def node_cpu_m(self) -> int:
        """Full with K + 1 pods."""
        return (self.lows + 1) * self.unit_m

    @property
    def low_to_m(self) -> int:
        """A Deferred low pod asks for the whole node: it fits the node (Deferred, not
        Infeasible), never next to anything else."""
        return self.node_cpu_m

    @property
    def resizes(self) -> int:
        return self.nodes

    @property
    def pods(self) -> int:
        return self.nodes * (self.lows + 1)

    def describe(self) -> str:
        return (
            f"{self.nodes} nodes of {cpu_text(self.node_cpu_m)} cpu, each: 1 high pod "
            f"{cpu_text(self.unit_m)} -> {cpu_text(self.high_to_m)} cpu (measured), "
            f"{self.lows} low pods {cpu_text(self.unit_m)} cpu, {self.deferred} of them "
            f"Deferred at {cpu_text(self.low_to_m)} cpu"
        )


def cpu_text(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def reprieve_outcomes(allocatable: int, preemptor: int, victims: Sequence[int]) -> set[int]:
    """DefaultPreemption's victims on one node, for every order the reprieve may take: every
    lower-priority pod (`victims`, as the accounting counts them) is removed, then each is
    added back in turn if the preemptor still fits; the ones that are not are the victims.
    Empty if the preemptor does not fit even with all of them gone."""
    if preemptor > allocatable:
        return set()
    out = set()
    for order in set(itertools.permutations(victims)):
        used, evicted = preemptor, 0
        for size in order:
            if used + size <= allocatable:
                used += size
            else:
                evicted += 1
        out.add(evicted)
    return out


@dataclass(frozen=True)
class ExpectedVictims:
    """Victims per resize the shape calls for: the kubelet's minimum (every low pod at what it
    holds) and what upstream's alpha accounting picks (a Deferred low pod at its desired size);
    each a (min, max) over the reprieve orders."""

    kubelet: tuple[int, int]
    alpha: tuple[int, int]


def expected_victims(shape: Shape) -> ExpectedVictims:
    held = [shape.unit_m] * shape.lows
    alpha = [shape.low_to_m] * shape.deferred + [shape.unit_m] * (shape.lows - shape.deferred)

    def span(outcomes: set[int]) -> tuple[int, int]:
        if not outcomes:
            raise ValueError("the resized high pod does not fit the node")
        return min(outcomes), max(outcomes)

    return ExpectedVictims(
        kubelet=span(reprieve_outcomes(shape.node_cpu_m, shape.high_to_m, held)),
        alpha=span(reprieve_outcomes(shape.node_cpu_m, shape.high_to_m, alpha)),
    )


def span_text(span: tuple[int, int]) -> str:
    return str(span[0]) if span[0] == span[1] else f"{span[0]}-{span[1]}"


# ---------------------------------------------------------------------- objects


def high_name(node: int) -> str:
    return f"high-{node}"


def low_name(node: int, j: int) -> str:
    return f"low-{node}-{j}"


def priority_classes() -> list[types_pb2.PriorityClass]:
    out = []
    for name, value in ((LOW_CLASS, LOW_PRIORITY), (HIGH_CLASS, HIGH_PRIORITY)):
        pc = types_pb2.PriorityClass(value=value, description="bench resize_preemption")
        pc.metadata.name = name
        out.append(pc)
    return out


def _pod(name: str, node: str, priority_class: str, cpu_m: int) -> types_pb2.Pod:
    pod = types_pb2.Pod()
    pod.metadata.name = name
    pod.metadata.namespace = NAMESPACE
    pod.spec.node_name = node
    pod.spec.priority_class_name = priority_class
    c = pod.spec.containers.add()
    c.name = CONTAINER
    c.image = "registry.k8s.io/pause:3.10"
    c.resources.requests[CPU] = cpu_text(cpu_m)
    c.resources.requests["memory"] = POD_MEMORY
    return pod


def pod_objects(shape: Shape) -> list[types_pb2.Pod]:
    """Every pod of the run, bound to its node (no scheduling): per node the high pod, then
    its low pods. Requests only (Burstable), default grace period."""
    pods = []
    for i in range(shape.nodes):
        node = node_name(NODE_PREFIX, i)
        pods.append(_pod(high_name(i), node, HIGH_CLASS, shape.unit_m))
        pods.extend(_pod(low_name(i, j), node, LOW_CLASS, shape.unit_m) for j in range(shape.lows))
    return pods


def with_cpu(pod: types_pb2.Pod, cpu_m: int) -> types_pb2.Pod:
    """A copy of `pod` asking for `cpu_m` (for pods/resize)."""
    out = types_pb2.Pod()
    out.CopyFrom(pod)
    out.spec.containers[0].resources.requests[CPU] = cpu_text(cpu_m)
    return out


def scheduler_config(kubelet_like: bool) -> dict[str, Any] | None:
    """Variant B's KubeSchedulerConfiguration (NodeResourcesFit with kemu's kubelet-like
    resize accounting); None for A (the default profile)."""
    if not kubelet_like:
        return None
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "pluginConfig": [{"name": "NodeResourcesFit", "args": {KUBELET_LIKE_ARG: True}}],
            }
        ],
    }


@dataclass(frozen=True)
class Variant:
    name: str
    kubelet_like: bool

    @property
    def accounting(self) -> str:
        return f"{KUBELET_LIKE_ARG}: true" if self.kubelet_like else "upstream alpha (default)"


VARIANTS: Final = {"A": Variant("A", False), "B": Variant("B", True)}


# ---------------------------------------------------------------------- pod state


def _cpu(text: str) -> int | None:
    return quantity.to_int(CPU, text) if text else None


def desired_cpu(pod: types_pb2.Pod) -> int | None:
    return _cpu(pod.spec.containers[0].resources.requests.get(CPU, ""))


def allocated_cpu(pod: types_pb2.Pod) -> int | None:
    s = pod.status.container_statuses
    return _cpu(s[0].allocated_resources.get(CPU, "")) if s else None


def actual_cpu(pod: types_pb2.Pod) -> int | None:
    s = pod.status.container_statuses
    return _cpu(s[0].resources.requests.get(CPU, "")) if s else None


def condition(pod: types_pb2.Pod, kind: str) -> types_pb2.PodCondition | None:
    return next((c for c in pod.status.conditions if c.type == kind), None)


def is_deferred(pod: types_pb2.Pod) -> bool:
    c = condition(pod, POD_RESIZE_PENDING)
    return c is not None and c.status == "True" and c.reason == DEFERRED


def is_preempted(pod: types_pb2.Pod) -> bool:
    c = condition(pod, DISRUPTION_TARGET)
    return c is not None and c.status == "True" and c.reason == PREEMPTION_BY_SCHEDULER


def is_allocated(pod: types_pb2.Pod, target: int) -> bool:
    return desired_cpu(pod) == target and allocated_cpu(pod) == target


def is_actuated(pod: types_pb2.Pod, target: int) -> bool:
    """The resize to `target` is over: desired, allocated and actual agree and the kubelet
    reports neither a pending nor an in-progress resize."""
    return (
        is_allocated(pod, target)
        and actual_cpu(pod) == target
        and condition(pod, POD_RESIZE_PENDING) is None
        and condition(pod, POD_RESIZE_IN_PROGRESS) is None
    )


# ---------------------------------------------------------------------- the watch's record


class Tracker:
    """Fed with every pod event of the namespace: when each pod was first Running and first
    Deferred (at the size it was resized to), when each measured resize was requested,
    allocated and actuated, and which pods the scheduler preempted (DisruptionTarget) or were
    deleted, with their node. Wakes whoever waits on a condition of this record."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self.targets: dict[str, int] = {}  # pod -> the cpu it is being resized to
        self.node: dict[str, str] = {}
        self.running: set[str] = set()
        self.requested: dict[str, float] = {}
        self.deferred: dict[str, float] = {}
        self.allocated: dict[str, float] = {}
        self.actuated: dict[str, float] = {}
        self.preempted: dict[str, float] = {}
        self.deleted: dict[str, float] = {}
        self.events = 0
        self._changed = anyio.Event()

    def resizing(self, name: str, target: int) -> None:
        """A resize of `name` to `target` milli-cpu is about to be requested."""
        self.targets[name] = target
        self.requested[name] = self._clock()

    def observe(self, pod: types_pb2.Pod, event_type: str = "MODIFIED") -> None:
        now = self._clock()
        name = pod.metadata.name
        self.events += 1
        if pod.spec.node_name:
            self.node[name] = pod.spec.node_name
        if event_type == "DELETED":
            self.deleted.setdefault(name, now)
        if pod.status.phase == RUNNING:
            self.running.add(name)
        if is_preempted(pod):
            self.preempted.setdefault(name, now)
        target = self.targets.get(name)
        if target is not None and desired_cpu(pod) == target:
            if is_deferred(pod):
                self.deferred.setdefault(name, now)
            if is_allocated(pod, target):
                self.allocated.setdefault(name, now)
            if is_actuated(pod, target):
                self.actuated.setdefault(name, now)
        self._changed.set()
        self._changed = anyio.Event()

    async def wait(self, done: Callable[[], bool], within: float, what: str) -> None:
        with anyio.move_on_after(within):
            while not done():
                await self._changed.wait()
            return
        raise TimeoutError(f"{what}: not within {within:g} s")

    def first_victim(self, node: str, since: float) -> float | None:
        """When the first pod of `node` was seen preempted at or after `since`."""
        times = [t for n, t in self.preempted.items() if self.node.get(n) == node and t >= since]
        return min(times, default=None)

    def victims_per_node(self, nodes: Iterable[str], since: float) -> dict[str, int]:
        """Pods seen preempted (DisruptionTarget) at or after `since`, per node."""
        counts = dict.fromkeys(nodes, 0)
        for name, t in self.preempted.items():
            node = self.node.get(name, "")
            if t >= since and node in counts:
                counts[node] += 1
        return counts


def latencies(
    names: Iterable[str], start: Mapping[str, float], end: Mapping[str, float]
) -> list[float]:
    """end - start of every name that has both."""
    return [end[n] - start[n] for n in names if n in start and n in end]


# ---------------------------------------------------------------------- a run


@dataclass
class Result:
    variant: str
    accounting: str
    run: int = 1  # the round
    shape: Shape | None = None
    expected: ExpectedVictims | None = None
    registration_seconds: float = math.nan
    setup_seconds: float = math.nan  # pods created -> every low resize Deferred, scheduler idle
    scheduler_settled: bool = False
    resizes: int = 0
    completed: int = 0  # actuated within the timeout
    not_completed: list[str] = field(default_factory=list)
    phase_seconds: float = math.nan  # first resize requested -> last actuated (or timeout)
    request_to_deferred: Distribution = field(default_factory=lambda: distribution(()))
    deferred_to_preempted: Distribution = field(default_factory=lambda: distribution(()))
    deferred_to_allocated: Distribution = field(default_factory=lambda: distribution(()))
    deferred_to_actuated: Distribution = field(default_factory=lambda: distribution(()))
    request_to_actuated: Distribution = field(default_factory=lambda: distribution(()))
    victims_by_condition: int = 0  # pods seen with DisruptionTarget/PreemptionByScheduler
    victims_histogram: dict[int, int] = field(default_factory=dict)  # victims -> nodes
    deleted_lows: int = 0
    preempted_events: int = 0  # distinct pods with a Preempted event
    metric_victims: float = math.nan  # scheduler_preemption_victims _sum delta
    metric_preemptions: float = math.nan  # ... _count delta
    preemption_attempts: float = math.nan  # scheduler_preemption_attempts_total delta
    pending_end: dict[str, float] = field(default_factory=dict)
    cpu_cores: dict[str, float] = field(default_factory=dict)
    rss_kib: dict[str, int | None] = field(default_factory=dict)
    load_avg_start: list[float] = field(default_factory=list)
    load_avg_end: list[float] = field(default_factory=list)
    error: str = ""

    @property
    def label(self) -> str:
        return f"{self.variant}#{self.run}"

    def victims_per_resize(self) -> dict[str, float]:
        """Victims per resize by each count (NaN without resizes)."""
        return {
            "condition": ratio(self.victims_by_condition, self.resizes),
            "deleted": ratio(self.deleted_lows, self.resizes),
            "events": ratio(self.preempted_events, self.resizes),
            "metric": ratio(self.metric_victims, self.resizes),
        }


@dataclass(frozen=True)
class Options:
    shape: Shape
    variants: tuple[str, ...]
    rounds: int
    actuation_delay: float
    shutdown: float
    timeout: float
    settle: float
    creators: int
    seed: int
    json_path: str | None
    keep_dir: str | None
    clock: ClockMode = ClockMode.REAL


class Runner:
    def __init__(self, cluster: Cluster, opts: Options, result: Result) -> None:
        self.cluster = cluster
        self.opts = opts
        self.result = result
        self.pids: dict[str, int | None] = {}

    async def run(self) -> None:
        opts, r, shape = self.opts, self.result, self.opts.shape
        async with Client(self.cluster.server, user_agent="bench-resize-preemption") as client:
            await client.wait_ready(timeout=30)
            args = [
                "--capacity", f"cpu={cpu_text(shape.node_cpu_m)},memory={NODE_MEMORY},pods=110",
                "--pod-startup-delay", "0s",
                "--pod-shutdown-duration", format_duration(opts.shutdown),
                "--resize-actuation-delay", format_duration(opts.actuation_delay),
            ]  # fmt: skip
            r.registration_seconds = await start_hollow_kubelet(
                self.cluster, client, shape.nodes, NODE_PREFIX, args, feature_gates=GATES
            )
            self.pids = {
                name: self.cluster.processes[name].pid
                for name in ("scheduler", "kubelet", "apiserver", "etcd")
            }
            self.pids["bench"] = os.getpid()
            for pc in priority_classes():
                await client.create(pc)
            tracker = Tracker()
            async with anyio.create_task_group() as tg:
                await tg.start(self.watch, client, tracker)
                await self.setup(client, tracker)
                await self.measure(client, tracker)
                tg.cancel_scope.cancel()
        r.rss_kib = {n: rss_kib(p) for n, p in self.pids.items() if p is not None}

    async def watch(
        self,
        client: Client,
        tracker: Tracker,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Watches the namespace's pods from a list's resourceVersion until cancelled; a watch
        that ends or fails is resumed from the last resourceVersion seen."""
        rv = (await client.list(types_pb2.Pod, NAMESPACE, limit=1)).resource_version
        task_status.started()
        while True:
            try:
                async with client.watch(types_pb2.Pod, NAMESPACE, resource_version=rv) as events:
                    async for event in events:
                        rv = event.object.metadata.resource_version or rv
                        if event.type != "BOOKMARK":
                            tracker.observe(event.object, event.type)
            except Gone:
                raise
            except ApiError as e:
                logger.warning("the pod watch failed (%s); resuming from %s", e, rv)
                await anyio.sleep(0.1)

    async def setup(self, client: Client, tracker: Tracker) -> None:
        """Every pod Running on its node, then M low pods per node Deferred, then the
        scheduler idle with those in its unschedulable pool."""
        opts, r, shape = self.opts, self.result, self.opts.shape
        start = time.monotonic()
        await ensure_namespace(client, NAMESPACE)
        pods = pod_objects(shape)
        logger.info("creating %d pods on %d nodes", len(pods), shape.nodes)
        res = await run_concurrent(len(pods), opts.creators, lambda i: client.create(pods[i]))
        if res.errors:
            raise RuntimeError(f"{res.errors} pod creates failed; the first: {res.first_error}")
        names = [p.metadata.name for p in pods]
        await tracker.wait(
            lambda: tracker.running.issuperset(names), SETUP_TIMEOUT, "every pod Running"
        )
        lows = [low_name(i, j) for i in range(shape.nodes) for j in range(shape.deferred)]
        logger.info("resizing %d low pods to %s cpu", len(lows), cpu_text(shape.low_to_m))
        res = await run_concurrent(
            len(lows),
            opts.creators,
            lambda i: self.resize(client, tracker, lows[i], shape.low_to_m),
        )
        if res.errors:
            raise RuntimeError(f"{res.errors} low resizes failed; the first: {res.first_error}")
        await tracker.wait(
            lambda: all(n in tracker.deferred for n in lows),
            SETUP_TIMEOUT,
            "every low pod's resize Deferred",
        )
        r.scheduler_settled = await self.scheduler_settled(len(lows))
        r.setup_seconds = time.monotonic() - start
        logger.info("setup done in %.1fs", r.setup_seconds)

    async def scheduler_settled(self, deferred: int) -> bool:
        """Waits until the scheduler holds the `deferred` low pods in its unschedulable pool
        and nothing in activeQ or backoffQ (they have had their cycle and found nothing to
        preempt). False if that did not happen within SCHEDULER_SETTLE_TIMEOUT."""
        scheduler = self.cluster.component("scheduler")
        with anyio.move_on_after(SCHEDULER_SETTLE_TIMEOUT):
            while True:
                pending = by_label(
                    parse_metrics(await anyio.to_thread.run_sync(scheduler.scrape)),
                    PENDING_PODS,
                    "queue",
                )
                if (
                    pending.get("unschedulable", 0) >= deferred
                    and pending.get("active", 0) == 0
                    and pending.get("backoff", 0) == 0
                ):
                    return True
                await anyio.sleep(0.2)
        logger.warning("the scheduler did not settle: pending pods %s", pending)
        return False

    async def resize(self, client: Client, tracker: Tracker, name: str, cpu_m: int) -> None:
        """pods/resize of `name` to `cpu_m`, on the pod as read just before (retried on a
        Conflict with the kubelet's status writes)."""
        tracker.resizing(name, cpu_m)
        for _ in range(10):
            pod = await client.get(types_pb2.Pod, name, NAMESPACE)
            try:
                await client.resize(with_cpu(pod, cpu_m))
                return
            except Conflict:
                continue
        raise RuntimeError(f"the resize of {name} kept conflicting")

    async def measure(self, client: Client, tracker: Tracker) -> None:
        opts, r, shape = self.opts, self.result, self.opts.shape
        scheduler = self.cluster.component("scheduler")
        before = parse_metrics(await anyio.to_thread.run_sync(scheduler.scrape))
        highs = [high_name(i) for i in range(shape.nodes)]
        nodes = [node_name(NODE_PREFIX, i) for i in range(shape.nodes)]
        deleted_before = set(tracker.deleted)
        r.resizes = len(highs)
        meter = CpuMeter(self.pids)
        meter.start()
        start = time.monotonic()
        logger.info("resizing %d high pods to %s cpu", len(highs), cpu_text(shape.high_to_m))
        res = await run_concurrent(
            len(highs),
            opts.creators,
            lambda i: self.resize(client, tracker, highs[i], shape.high_to_m),
        )
        if res.errors:
            raise RuntimeError(f"{res.errors} high resizes failed; the first: {res.first_error}")
        try:
            await tracker.wait(
                lambda: all(n in tracker.actuated for n in highs),
                opts.timeout,
                "every high pod's resize actuated",
            )
        except TimeoutError as e:
            logger.warning("%s", e)
        end = max((tracker.actuated[n] for n in highs if n in tracker.actuated), default=start)
        r.cpu_cores = meter.stop()
        r.phase_seconds = end - start
        # Preemptions after the last actuation (double preemption) still count: wait a little.
        await anyio.sleep(opts.settle)
        after = parse_metrics(await anyio.to_thread.run_sync(scheduler.scrape))
        self.figures(tracker, highs, nodes, start, deleted_before, before, after)
        r.preempted_events = await self.preempted_events(client, r.victims_by_condition)

    async def preempted_events(self, client: Client, victims: int) -> int:
        """The distinct pods with a Preempted event. The scheduler writes its events one at a
        time behind the preemptions, so this lists until every victim has one, or the count
        has not grown for EVENTS_QUIET seconds (EVENTS_TIMEOUT at most)."""
        count, last_change = -1, time.monotonic()
        with anyio.move_on_after(EVENTS_TIMEOUT):
            while True:
                events = await client.list_all(types_pb2.Event, NAMESPACE)
                now = len(
                    {e.involved_object.name for e in events.items if e.reason == PREEMPTED_EVENT}
                )
                if now != count:
                    count, last_change = now, time.monotonic()
                if count >= victims or time.monotonic() - last_change >= EVENTS_QUIET:
                    break
                await anyio.sleep(0.25)
        return max(count, 0)

    def figures(
        self,
        tracker: Tracker,
        highs: Sequence[str],
        nodes: Sequence[str],
        start: float,
        deleted_before: set[str],
        before: Samples,
        after: Samples,
    ) -> None:
        r = self.result
        r.completed = sum(1 for n in highs if n in tracker.actuated)
        r.not_completed = [n for n in highs if n not in tracker.actuated]
        deferred = {n: tracker.deferred[n] for n in highs if n in tracker.deferred}
        first_victim: dict[str, float] = {}
        for n in highs:
            node, since = tracker.node.get(n, ""), deferred.get(n)
            if since is not None:
                t = tracker.first_victim(node, start)
                if t is not None:
                    first_victim[n] = t
        r.request_to_deferred = distribution(latencies(highs, tracker.requested, deferred))
        r.deferred_to_preempted = distribution(latencies(highs, deferred, first_victim))
        r.deferred_to_allocated = distribution(latencies(highs, deferred, tracker.allocated))
        r.deferred_to_actuated = distribution(latencies(highs, deferred, tracker.actuated))
        r.request_to_actuated = distribution(latencies(highs, tracker.requested, tracker.actuated))
        per_node = tracker.victims_per_node(nodes, start)
        r.victims_by_condition = sum(per_node.values())
        r.victims_histogram = dict(sorted(Counter(per_node.values()).items()))
        r.deleted_lows = sum(
            1 for n in tracker.deleted if n.startswith("low-") and n not in deleted_before
        )
        r.metric_victims = metric_delta(before, after, PREEMPTION_VICTIMS + "_sum")
        r.metric_preemptions = metric_delta(before, after, PREEMPTION_VICTIMS + "_count")
        r.preemption_attempts = metric_delta(before, after, PREEMPTION_ATTEMPTS)
        r.pending_end = by_label(after, PENDING_PODS, "queue")


def run_variant(opts: Options, variant: Variant, round_: int) -> Result:
    """One run on a fresh cluster; the cluster is stopped on return, error or Ctrl-C."""
    result = Result(
        variant.name,
        variant.accounting,
        run=round_,
        shape=opts.shape,
        expected=expected_victims(opts.shape),
        load_avg_start=list(os.getloadavg()),
    )
    with contextlib.ExitStack() as stack:
        if opts.keep_dir is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="kemu-bench-rpe-"))
        else:
            tmp = str(Path(opts.keep_dir) / f"{variant.name}-{round_}")
            shutil.rmtree(tmp, ignore_errors=True)
            Path(tmp).mkdir(parents=True)
        cluster = stack.enter_context(Cluster(Path(tmp), clock=opts.clock))
        try:
            config_path: str | None = None
            config = scheduler_config(variant.kubelet_like)
            if config is not None:
                path = Path(tmp) / "scheduler-config.yaml"
                path.write_text(yaml.safe_dump(config))
                config_path = str(path)
            cluster.start_etcd()
            cluster.start_apiserver(feature_gates=GATES)
            cluster.start_scheduler(
                config=config_path, feature_gates=GATES, extra_args=["--seed", str(opts.seed)]
            )
            anyio.run(Runner(cluster, opts, result).run)
        except (ProcessStartError, RuntimeError, TimeoutError, ApiError) as e:
            result.error = f"{type(e).__name__}: {e}"
            logger.error("run %s failed: %s\n%s", result.label, result.error, cluster.dump_logs(20))
    result.load_avg_end = list(os.getloadavg())
    return result


# ---------------------------------------------------------------------- output


def _ms(d: Distribution, key: str) -> str:
    value: float = getattr(d, key)
    return fmt(value * 1000 if not math.isnan(value) else value, 0)


def _dist(d: Distribution) -> str:
    return f"{_ms(d, 'p50')} / {_ms(d, 'p99')} / {_ms(d, 'max')}"


def _mib(kib: int | None) -> str:
    return fmt(kib / 1024 if kib is not None else None, 0)


def histogram_text(histogram: Mapping[int, int]) -> str:
    """{victims: nodes} as `1x48 3x2` (victims x nodes)."""
    return " ".join(f"{v}x{n}" for v, n in sorted(histogram.items())) or "-"


def render(results: Sequence[Result]) -> str:
    """One table: a row per figure, a column per run."""
    if not results:
        return "no runs"
    rows: list[list[str]] = []

    def row(label: str, cell: Callable[[Result], str], *, failed: bool = False) -> None:
        """`failed`: the cell is shown for a failed run too (otherwise '-')."""
        rows.append([label, *(cell(r) if failed or not r.error else "-" for r in results)])

    row("accounting", lambda r: "kubelet-like" if r.variant == "B" else "alpha", failed=True)
    row("resizes (nodes)", lambda r: str(r.resizes))
    row("actuated within the timeout", lambda r: str(r.completed))
    row("never completed", lambda r: str(len(r.not_completed)))
    row("phase s (first resize -> last actuated)", lambda r: fmt(r.phase_seconds, 2))
    row("request -> Deferred p50 / p99 / max ms", lambda r: _dist(r.request_to_deferred))
    row("Deferred -> 1st victim p50 / p99 / max ms", lambda r: _dist(r.deferred_to_preempted))
    row("Deferred -> allocated p50 / p99 / max ms", lambda r: _dist(r.deferred_to_allocated))
    row("**Deferred -> actuated p50 / p99 / max ms**", lambda r: _dist(r.deferred_to_actuated))
    row("request -> actuated p50 / p99 / max ms", lambda r: _dist(r.request_to_actuated))
    row(
        "**victims / resize: DisruptionTarget**",
        lambda r: fmt(r.victims_per_resize()["condition"], 2),
    )
    row("victims / resize: deleted", lambda r: fmt(r.victims_per_resize()["deleted"], 2))
    row("victims / resize: Preempted events", lambda r: fmt(r.victims_per_resize()["events"], 2))
    row("victims / resize: metric", lambda r: fmt(r.victims_per_resize()["metric"], 2))
    row("victims per node (victims x nodes)", lambda r: histogram_text(r.victims_histogram))
    row("expected: kubelet minimum / alpha", _expected_text, failed=True)
    row(
        "preemptions / preemption attempts (metric)",
        lambda r: f"{fmt(r.metric_preemptions, 0)} / {fmt(r.preemption_attempts, 0)}",
    )
    for name in ("scheduler", "kubelet", "apiserver", "etcd"):
        row(f"cpu {name} cores", lambda r, n=name: fmt(r.cpu_cores.get(n), 2))  # type: ignore[misc]
    for name in ("scheduler", "kubelet", "apiserver", "etcd"):
        row(f"rss {name} MiB (end)", lambda r, n=name: _mib(r.rss_kib.get(n)))  # type: ignore[misc]
    row("setup s (scheduler settled)", lambda r: f"{fmt(r.setup_seconds, 1)} ({_yes(r)})")
    row("load average 1 min (start -> end)", _load_text, failed=True)
    shape = results[0].shape
    lines = [
        f"resize preemption (KEP-5836), {os.cpu_count()} cpus: "
        f"{shape.describe() if shape else '-'}; cpu over the measured phase",
        "",
        format_table(["", *(r.label for r in results)], rows),
    ]
    for r in results:
        if r.error:
            lines.append(f"{r.label} FAILED: {short_error(r.error)}")
        elif r.not_completed:
            lines.append(f"{r.label}: never completed: {', '.join(r.not_completed[:10])}")
    summary = render_summary(results)
    if summary:
        lines += ["", summary]
    return "\n".join(lines)


def short_error(text: str) -> str:
    """The first line of a run's error and, when it carries a process's log (a component
    that would not start), the last exception line of that log."""
    lines = text.splitlines()
    first = lines[0] if lines else ""
    raised = [ln.strip() for ln in lines[1:] if re.match(r"^\s*\w+(\.\w+)*(Error|Exception): ", ln)]
    return f"{first} ... {raised[-1]}" if raised else first


def _expected_text(r: Result) -> str:
    e = r.expected
    return f"{span_text(e.kubelet)} / {span_text(e.alpha)}" if e else "-"


def _yes(r: Result) -> str:
    return "yes" if r.scheduler_settled else "no"


def _load_text(r: Result) -> str:
    return " -> ".join(f"{a[0]:.2f}" for a in (r.load_avg_start, r.load_avg_end) if a) or "-"


def _mean(values: Iterable[float]) -> float:
    v = [x for x in values if not math.isnan(x)]
    return math.fsum(v) / len(v) if v else math.nan


def render_summary(results: Sequence[Result]) -> str:
    """A vs B: the mean over the successful runs of each variant, when both have one."""
    ok = [r for r in results if not r.error]
    by_variant = {v: [r for r in ok if r.variant == v] for v in ("A", "B")}
    if not all(by_variant.values()):
        return ""
    figures: list[tuple[str, Callable[[Result], float], int]] = [
        ("victims / resize (DisruptionTarget)", lambda r: r.victims_per_resize()["condition"], 2),
        ("victims / resize (metric)", lambda r: r.victims_per_resize()["metric"], 2),
        ("Deferred -> actuated p50 ms", lambda r: r.deferred_to_actuated.p50 * 1000, 0),
        ("Deferred -> actuated p99 ms", lambda r: r.deferred_to_actuated.p99 * 1000, 0),
        ("never completed", lambda r: float(len(r.not_completed)), 1),
        ("cpu scheduler cores", lambda r: r.cpu_cores.get("scheduler", math.nan), 2),
    ]
    rows = []
    for label, get, digits in figures:
        a = _mean(get(r) for r in by_variant["A"])
        b = _mean(get(r) for r in by_variant["B"])
        rows.append([label, fmt(a, digits), fmt(b, digits), fmt(ratio(b, a), 2)])
    runs = f"A: {len(by_variant['A'])} runs, B: {len(by_variant['B'])} runs"
    return f"A (alpha) vs B (kubelet-like), means ({runs})\n" + format_table(
        ["", "A", "B", "B/A"], rows
    )


# ---------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench resize_preemption",
        description="KEP-5836 end to end on hollow kubelets: Deferred resizes completed by "
        "preempting on the pod's node, under upstream's alpha accounting (A) and kemu's "
        "kubelet-like accounting (B)",
    )
    parser.add_argument("--nodes", type=int, help="nodes = measured resizes (default 200; quick 4)")
    parser.add_argument("--lows", type=int, default=3, help="K: low pods per node (default 3)")
    parser.add_argument(
        "--deferred",
        type=int,
        help="M: low pods per node Deferred at the node's whole cpu before the measured "
        "resizes (default K)",
    )
    parser.add_argument(
        "--variants",
        default="A,B",
        help="which runs, in order, each round: A (alpha accounting), B "
        f"({KUBELET_LIKE_ARG}: true); default A,B",
    )
    parser.add_argument(
        "--rounds", type=int, help="run the variants this many times, alternating (2; quick 1)"
    )
    parser.add_argument(
        "--actuation-delay",
        type=float,
        default=0.5,
        help="kubelet --resize-actuation-delay, s (default 0.5, the kubelet's)",
    )
    parser.add_argument(
        "--shutdown",
        type=float,
        default=0.0,
        help="kubelet --pod-shutdown-duration, s: a victim's time to exit (default 0)",
    )
    parser.add_argument(
        "--timeout", type=float, help="s for every measured resize to be actuated (60; quick 30)"
    )
    parser.add_argument(
        "--settle", type=float, default=1.0, help="s waited after the last actuation (default 1)"
    )
    parser.add_argument("--creators", type=int, default=16, help="requests in flight (16)")
    parser.add_argument("--seed", type=int, default=SEED, help="the scheduler's --seed (1)")
    parser.add_argument("--quick", action="store_true", help="4 nodes, 1 round, timeout 30 s")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--keep-dir", metavar="DIR", help="keep each run's cluster (logs) here")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    add_clock_argument(parser)
    return parser


def options_from_args(args: argparse.Namespace) -> Options:
    """The run's options: --quick changes the defaults, explicit flags win. ValueError if bad."""
    quick = bool(args.quick)
    nodes = args.nodes if args.nodes is not None else (4 if quick else 200)
    lows = args.lows
    shape = Shape(nodes=nodes, lows=lows, deferred=lows if args.deferred is None else args.deferred)
    shape.validate()
    variants = tuple(v.strip().upper() for v in args.variants.split(",") if v.strip())
    unknown = [v for v in variants if v not in VARIANTS]
    if not variants or unknown:
        raise ValueError(f"--variants: {args.variants!r}: each must be A or B")
    timeout = args.timeout if args.timeout is not None else (30.0 if quick else 60.0)
    rounds = args.rounds if args.rounds is not None else (1 if quick else 2)
    for flag, value in (("--timeout", timeout), ("--rounds", rounds)):
        if not value > 0:
            raise ValueError(f"{flag} must be positive")
    for flag, value in (
        ("--actuation-delay", args.actuation_delay),
        ("--shutdown", args.shutdown),
        ("--settle", args.settle),
    ):
        if value < 0:
            raise ValueError(f"{flag} must not be negative")
    if args.creators < 1:
        raise ValueError("--creators must be at least 1")
    return Options(
        clock=ClockMode(args.clock),
        shape=shape,
        variants=variants,
        rounds=rounds,
        actuation_delay=args.actuation_delay,
        shutdown=args.shutdown,
        timeout=timeout,
        settle=args.settle,
        creators=args.creators,
        seed=args.seed,
        json_path=args.json,
        keep_dir=args.keep_dir,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        opts = options_from_args(args)
    except ValueError as e:
        print(f"bench resize_preemption: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    results: list[Result] = []
    try:
        for round_ in range(1, opts.rounds + 1):
            for name in opts.variants:
                variant = VARIANTS[name]
                logger.info("run %s#%d (%s)", name, round_, variant.accounting)
                results.append(run_variant(opts, variant, round_))
    except KeyboardInterrupt:
        print("bench resize_preemption: interrupted; the cluster was stopped", file=sys.stderr)
        return 130
    print(render(results))
    if opts.json_path:
        data = {
            "host": {"cpus": os.cpu_count()},
            "options": jsonable(opts),
            "results": [jsonable({**jsonable(r), "label": r.label}) for r in results],
        }
        Path(opts.json_path).write_text(json.dumps(data, indent=2) + "\n")
    return 1 if any(r.error or r.not_completed for r in results) else 0
