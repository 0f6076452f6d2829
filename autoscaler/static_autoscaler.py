"""The autoscaler's loop (upstream core/static_autoscaler.go RunOnce), scale-up half:

1. the cloud's groups and instances (failed instances deleted, their groups backed off);
2. a ClusterSnapshot of the Nodes and the pods bound to them (informers) but the expendable
   ones (priority below --expendable-pods-priority-cutoff: their room is free), the pods with
   a nominatedNodeName added on their nodes as the emulated version says (autoscaler/pods.py),
   and one template node per upcoming node (asked for, not registered), each with the pods of
   the DaemonSets that would run on it (autoscaler/templates.py);
3. the unschedulable pods, minus the expendable ones (priority below the cutoff), the
   nominated ones (per version) and those younger than --new-pod-scale-up-delay;
4. the pods that fit an existing or upcoming node in simulation are placed there, in the
   snapshot (FilterOutSchedulable: `last_placements` remembers where, for scale-down);
5. a scale-up for the rest (autoscaler/scale_up.py);
6. when no scale-up happened in this loop, scale-down (autoscaler/scaledown/) on the same
   snapshot: a pod nominated to a node (as counted in step 2) or placed on it in step 4
   counts in its utilization and must fit elsewhere for the node to go, as a bound one.

Deletions (drains) run in the background, in run()'s task group, while later loops go on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Never

import anyio
import anyio.lowlevel

from autoscaler.backoff import Backoff
from autoscaler.clusterstate import CloudApi, ClusterState, GroupState
from autoscaler.config import AutoscalingOptions
from autoscaler.decisions import LoopDecisionLog
from autoscaler.dra import filter_out_nodes_with_unready_devices
from autoscaler.expander import Expander
from autoscaler.metrics import Metrics
from autoscaler.pods import PodSets, is_expendable, sort_pods
from autoscaler.scale_up import Recorder, ScaleUpOrchestrator, ScaleUpResult
from autoscaler.scaledown.actuation import Task
from autoscaler.scaledown.scale_down import ScaleDown, ScaleDownSummary
from autoscaler.status import StatusWriter
from autoscaler.templates import TemplateNodeInfo, template_name, template_node_info
from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock
from kemu.component.clock_steps import StepOrder
from kemu.component.virtual_clock import take_step
from kemu.machinery.errors import ApiError
from kemu.machinery.keys import object_key
from kemu.machinery.node_conditions import is_node_ready
from kemu.scheduling.dra_snapshot import DraSnapshot
from kemu.scheduling.runtime import Framework
from kemu.scheduling.simulator import ClusterSnapshot, PredicateChecker
from kemu.scheduling.types import pod_priority

logger = logging.getLogger(__name__)


def _nothing() -> Sequence[Never]:
    return ()


@dataclass(frozen=True)
class ListerRegistry:
    """What the loop reads of the cluster, from the informers (upstream's
    utils/kubernetes/listers.go ListerRegistry)."""

    nodes: Callable[[], Sequence[types_pb2.Node]]
    pods: Callable[[], Sequence[types_pb2.Pod]]
    pdbs: Callable[[], Sequence[types_pb2.PodDisruptionBudget]] = _nothing
    daemonsets: Callable[[], Sequence[types_pb2.DaemonSet]] = _nothing
    resource_claims: Callable[[], Sequence[types_pb2.ResourceClaim]] = _nothing
    resource_slices: Callable[[], Sequence[types_pb2.ResourceSlice]] = _nothing
    device_classes: Callable[[], Sequence[types_pb2.DeviceClass]] = _nothing


@dataclass(frozen=True)
class Reporting:
    """Where the loop tells what it did: Events, metrics, the status ConfigMap
    (--write-status-configmap; None: not written) and the decision record
    (--record-decisions; None: nowhere)."""

    recorder: Recorder
    metrics: Metrics
    status: StatusWriter | None = None
    decisions: LoopDecisionLog | None = None


@dataclass
class LoopResult:
    groups: dict[str, GroupState] = field(default_factory=dict)
    pods: PodSets = field(default_factory=PodSets)
    placements: dict[str, str] = field(default_factory=dict)
    """Unschedulable pods that fit an existing or upcoming node: pod key -> node."""
    scale_up: ScaleUpResult | None = None
    scale_down: ScaleDownSummary | None = None
    """None when scale-down did not run (disabled, or a scale-up happened in this loop)."""


class StaticAutoscaler:
    def __init__(
        self,
        options: AutoscalingOptions,
        cloud: CloudApi,
        framework: Framework,
        listers: ListerRegistry,
        reporting: Reporting,
        *,
        clock: Clock,
        expander: Expander | None = None,
        client: ApiClient | None = None,
    ) -> None:
        """`expander`: the one of `options.expander` by default (its random choices unseeded).
        `client` writes taints and evictions: without one there is no scale-down."""
        self._decisions = reporting.decisions
        self.options = options
        self._listers = listers
        self._metrics = metrics = reporting.metrics
        recorder = reporting.recorder
        self._clock = clock
        self.checker = PredicateChecker(framework)
        backoff = Backoff(
            initial=options.initial_node_group_backoff_duration,
            maximum=options.max_node_group_backoff_duration,
            reset_timeout=options.node_group_backoff_reset_timeout,
        )
        self.cluster_state = ClusterState(
            cloud, clock, backoff, metrics, max_node_provision_time=options.max_node_provision_time
        )
        self.expander = expander or Expander(options.expander)
        self._scale_up = ScaleUpOrchestrator(
            cloud, self.cluster_state, self.checker, self.expander, metrics, recorder, clock
        )
        self.last_snapshot: ClusterSnapshot | None = None
        self.last_placements: dict[str, str] = {}
        self._status = reporting.status
        """Writes kube-system/cluster-autoscaler-status after every loop (autoscaler/status.py)."""
        self.last_scale_up: float | None = None
        """Monotonic time of the last successful scale-up (upstream lastScaleUpTime)."""
        self.scale_down: ScaleDown | None = None
        if client is not None:
            self.scale_down = ScaleDown(
                options,
                self.checker,
                client,
                cloud,
                list_pods=listers.pods,
                recorder=recorder,
                metrics=metrics,
                clock=clock,
            )

    @contextmanager
    def _timed(self, function: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self._metrics.function_duration.labels(function).observe(time.perf_counter() - start)

    async def run(self) -> None:
        """Runs a loop every --scan-interval (from the start of one to the next) until
        cancelled; a loop that fails on an API or cloud error is logged and retried. Node
        deletions run in this task group."""
        async with anyio.create_task_group() as tg:
            if self.scale_down is not None:

                def spawn(fn: Task) -> None:
                    tg.start_soon(fn)

                self.scale_down.actuator.spawn = spawn
            while True:
                start = self._clock.monotonic()
                # (a loop is a step of the cluster: it reads what every process did at the
                # instant, whichever timer ran first; kemu.component.clock_steps)
                await take_step(self._clock, StepOrder.LOOP)
                try:
                    await self.run_once()
                except ApiError as e:
                    logger.warning("autoscaling loop failed: %s", e)
                await self._clock.sleep(
                    self.options.scan_interval - (self._clock.monotonic() - start)
                )

    async def run_once(self) -> LoopResult:
        self._metrics.last_activity.labels("main").set(self._clock.now())
        with self._timed("main"):
            result = await self._run_once()
            if self._decisions is not None:
                self._record(result)
            if self._status is not None:
                await self._status.write(
                    result.groups,
                    self.cluster_state.backoff,
                    scale_up=result.scale_up,
                    scale_down=result.scale_down,
                )
        return result

    async def _run_once(self) -> LoopResult:
        opts = self.options
        result = LoopResult()
        with self._timed("updateClusterState"):
            nodes = list(self._listers.nodes())
            result.groups = groups = await self.cluster_state.update(nodes)
            self._count_nodes(nodes, groups)
            pods = result.pods = sort_pods(
                self._listers.pods(),
                {n.metadata.name for n in nodes},
                rules=opts.rules,
                expendable_cutoff=opts.expendable_pods_priority_cutoff,
                now=self._clock.now(),
                new_pod_scale_up_delay=opts.new_pod_scale_up_delay,
            )
            # Expendable pods are invisible to the simulation (upstream RunOnce:
            # FilterOutExpendablePods before initializeClusterSnapshot): their room is free,
            # to a pending pod (the scheduler will preempt them) and to a drained one.
            templates = await self._templates(groups)
            dra = self._dra_snapshot()
            if dra is not None:
                nodes = filter_out_nodes_with_unready_devices(nodes, groups, templates, dra)
            snapshot = ClusterSnapshot.from_objects(
                [
                    p
                    for p in pods.scheduled
                    if not is_expendable(p, opts.expendable_pods_priority_cutoff)
                ],
                nodes,
                opts.counting,
                dra,
            )
            for pod, node in pods.nominated:
                snapshot.add_pod(pod, node)
                logger.info(
                    "pod %s is nominated to node %s: counted there, no scale-up for it",
                    object_key(pod),
                    node,
                )
            for pod in pods.nominated_elsewhere:
                logger.info(
                    "pod %s is nominated to node %s, which is gone: no scale-up for it",
                    object_key(pod),
                    pod.status.nominated_node_name,
                )
            for pod in pods.expendable:
                logger.info(
                    "pod %s is expendable (priority %d < cutoff %d): no scale-up for it",
                    object_key(pod),
                    pod_priority(pod),
                    opts.expendable_pods_priority_cutoff,
                )
            self._add_upcoming_nodes(snapshot, groups, templates)
        self._metrics.unschedulable_pods_count.labels("unschedulable").set(
            len(pods.unschedulable) + len(pods.too_young) + len(pods.nominated_elsewhere)
        )
        self._metrics.last_activity.labels("autoscaling").set(self._clock.now())
        with self._timed("filterOutSchedulable"):
            remaining = await self._filter_out_schedulable(snapshot, pods.unschedulable, result)
        self.last_snapshot = snapshot
        self.last_placements = result.placements
        if remaining:
            with self._timed("scaleUp"):
                result.scale_up = await self._scale_up.scale_up(
                    remaining, snapshot, groups, templates
                )
            if result.scale_up.option is not None:
                self.last_scale_up = self._clock.monotonic()
                # No scale-down in a loop that scaled up (upstream RunOnce).
                return result
        if opts.scale_down_enabled and self.scale_down is not None:
            with self._timed("scaleDown"):
                result.scale_down = await self.scale_down.run(
                    snapshot,
                    nodes,
                    groups,
                    self._listers.pdbs(),
                    last_scale_up=self.last_scale_up,
                )
        return result

    def _record(self, result: LoopResult) -> None:
        pods = result.pods
        left_out = {object_key(p): "expendable" for p in pods.expendable}
        left_out.update(
            (object_key(p), "younger than --new-pod-scale-up-delay") for p in pods.too_young
        )
        left_out.update((object_key(p), f"nominated to {n}") for p, n in pods.nominated)
        left_out.update(
            (object_key(p), "nominated to a node that is gone") for p in pods.nominated_elsewhere
        )
        assert self._decisions is not None
        self._decisions.record(
            time=self._clock.now(),
            considered=tuple(object_key(p) for p in pods.unschedulable),
            left_out=left_out,
            placements=result.placements,
            scale_up=result.scale_up,
            expander=self.expander.name,
            scale_down=result.scale_down,
        )

    def _count_nodes(self, nodes: Sequence[types_pb2.Node], groups: dict[str, GroupState]) -> None:
        ready = sum(1 for n in nodes if is_node_ready(n))
        unregistered = sum(g.upcoming for g in groups.values())
        self._metrics.nodes_count.labels("ready").set(ready)
        self._metrics.nodes_count.labels("unready").set(len(nodes) - ready)
        self._metrics.nodes_count.labels("notStarted").set(unregistered)

    async def _templates(self, groups: dict[str, GroupState]) -> dict[str, TemplateNodeInfo]:
        """Every group's template node with the pods of the DaemonSets that would run on it
        and, with DRA, its ResourceSlices, built anew each loop (the DaemonSets change; the
        cloud's template is asked once)."""
        daemonsets = self._listers.daemonsets()
        out = {}
        for g in groups:
            t = await self.cluster_state.template(g)
            slices = t.resource_slices if self.checker.simulates_dra else ()
            out[g] = template_node_info(g, t.node, daemonsets, slices)
        return out

    def _dra_snapshot(self) -> DraSnapshot | None:
        """The claims, slices and classes of the informers (None without DRA: upstream's
        --enable-dynamic-resource-allocation, here the DynamicResourceAllocation gate)."""
        if not self.checker.simulates_dra:
            return None
        listers = self._listers
        return DraSnapshot(
            listers.resource_claims(), listers.resource_slices(), listers.device_classes()
        )

    @staticmethod
    def _add_upcoming_nodes(
        snapshot: ClusterSnapshot,
        groups: dict[str, GroupState],
        templates: dict[str, TemplateNodeInfo],
    ) -> None:
        for g in groups.values():
            for i in range(g.upcoming):
                templates[g.id].add_copy(snapshot, f"{template_name(g.id)}-upcoming-{i}")

    async def _filter_out_schedulable(
        self, snapshot: ClusterSnapshot, pods: Sequence[types_pb2.Pod], result: LoopResult
    ) -> list[types_pb2.Pod]:
        """Places, highest priority first, every pod that fits a node of the snapshot there;
        returns the others (upstream FilterOutSchedulable)."""
        remaining: list[types_pb2.Pod] = []
        for pod in sorted(pods, key=pod_priority, reverse=True):
            await anyio.lowlevel.checkpoint()  # (a long list does not hold the event loop)
            node, _ = self.checker.schedule_pod_on_any_node_matching(snapshot, pod)
            if node is None:
                remaining.append(pod)
                continue
            result.placements[object_key(pod)] = node
        if result.placements:
            logger.info(
                "%d pod(s) marked unschedulable fit existing or upcoming nodes, no scale-up "
                "for them: %s",
                len(result.placements),
                ", ".join(f"{k} -> {n}" for k, n in sorted(result.placements.items())),
            )
        return remaining
