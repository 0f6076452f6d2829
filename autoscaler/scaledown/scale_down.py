"""Scale-down of one loop (upstream StaticAutoscaler.RunOnce's scale-down half): the planner
finds the unneeded nodes; unless in cooldown (a scale-up within --scale-down-delay-after-add,
a deletion within --scale-down-delay-after-delete, a failure within
--scale-down-delay-after-failure) the chosen ones are handed to the actuator; when nothing was
deleted the unneeded nodes get the soft DeletionCandidate taint and the others lose it. The
first loop removes the taints a previous autoscaler left (a restart after a SIGKILL resumes
from a clean state), but not those of nodes whose instance the cloud is already deleting. `ScaleDownSummary` is what the loop exposes to the status ConfigMap."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from autoscaler.clusterstate import DELETING, CloudApi, GroupState
from autoscaler.config import AutoscalingOptions
from autoscaler.metrics import Metrics
from autoscaler.scale_up import Recorder
from autoscaler.scaledown.actuation import Actuator
from autoscaler.scaledown.eligibility import UnremovableReason
from autoscaler.scaledown.planner import Plan, Planner
from autoscaler.scaledown.taints import (
    DELETION_CANDIDATE_TAINT,
    TO_BE_DELETED_TAINT,
    add_taint,
    has_taint,
    remove_taint,
)
from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock
from kemu.component.logs import V
from kemu.machinery.errors import ApiError
from kemu.machinery.keys import object_key
from kemu.scheduling.simulator import ClusterSnapshot, PredicateChecker

logger = logging.getLogger(__name__)

_UNREMOVABLE_LOG_LEVELS: Final = {
    # upstream's verbosity for each (core/scaledown/eligibility/eligibility.go,
    # processors/nodes/pre_filtering_processor.go): a node of no autoscaled group at V(5), so
    # that a cluster of static nodes logs nothing per loop; the other reasons at V(4) but
    # for the few below at V(1)
    UnremovableReason.NOT_AUTOSCALED: V(5),
    UnremovableReason.CURRENTLY_BEING_DELETED: V(1),
    UnremovableReason.SCALE_DOWN_DISABLED_ANNOTATION: V(1),
    UnremovableReason.NODE_GROUP_MIN_SIZE_REACHED: V(1),
    UnremovableReason.RECENTLY_UNREMOVABLE: V(1),
}


@dataclass(frozen=True)
class UnneededNode:
    name: str
    group: str
    since: float
    """Unix time it became unneeded."""
    utilization: float
    empty: bool


@dataclass(frozen=True)
class ScaleDownSummary:
    """The scale-down state after one loop (immutable; for the status ConfigMap)."""

    in_cooldown: bool = False
    cooldown_reason: str = ""
    unneeded: tuple[UnneededNode, ...] = ()
    unremovable: tuple[tuple[str, str], ...] = ()
    """(node, upstream UnremovableReason) of the nodes considered and kept."""
    unremovable_messages: tuple[tuple[str, str], ...] = ()
    """(node, why, in words) of the same nodes."""
    started: tuple[str, ...] = ()
    """Nodes whose deletion started this loop."""
    deleting: tuple[str, ...] = ()
    """Nodes being deleted (tainted, draining or going) after this loop."""
    last_scale_down_time: float | None = None
    """Unix time of the last deletion started by this autoscaler."""
    probe_time: float | None = None
    """Unix time the nodes were evaluated (upstream's lastProbeTime)."""


class ScaleDown:
    def __init__(
        self,
        options: AutoscalingOptions,
        checker: PredicateChecker,
        client: ApiClient,
        cloud: CloudApi,
        *,
        list_pods: Callable[[], Sequence[types_pb2.Pod]],
        recorder: Recorder,
        metrics: Metrics,
        clock: Clock,
    ) -> None:
        self._opts = options.scale_down
        self._client = client
        self._clock = clock
        self._metrics = metrics
        self.planner = Planner(options.scale_down, checker)
        self.actuator = Actuator(
            options,
            client,
            cloud,
            list_pods=list_pods,
            recorder=recorder,
            metrics=metrics,
            clock=clock,
        )
        self._cleaned = False

    async def clean_up(
        self, nodes: Sequence[types_pb2.Node], groups: Mapping[str, GroupState]
    ) -> None:
        """Removes every ToBeDeleted and DeletionCandidate taint (upstream cleanUpIfRequired,
        on the first loop), except from the nodes whose instance the cloud is deleting: a
        previous autoscaler asked for it before it died, the node goes anyway, and without its
        taint the scheduler would bind pods to it until it is gone."""
        going = {
            i.id
            for g in groups.values()
            for i in g.instances
            if i.status.instance_state == DELETING
        }
        for node in nodes:
            name = node.metadata.name
            if node.spec.provider_id and node.spec.provider_id in going:
                if has_taint(node, TO_BE_DELETED_TAINT):
                    logger.info("node %s: its instance is being deleted, its taints are kept", name)
                continue
            for key in (TO_BE_DELETED_TAINT, DELETION_CANDIDATE_TAINT):
                if has_taint(node, key):
                    logger.info("removing leftover taint %s from node %s", key, name)
                    await remove_taint(self._client, name, key)

    def _cooldown(self, last_scale_up: float | None) -> str:
        now = self._clock.monotonic()
        a = self.actuator
        opts = self._opts
        if last_scale_up is not None and now - last_scale_up < opts.delay_after_add:
            return f"scale-up {now - last_scale_up:.3g}s ago (--scale-down-delay-after-add {opts.delay_after_add:g}s)"
        if a.last_failure is not None and now - a.last_failure < opts.delay_after_failure:
            return f"scale-down failed {now - a.last_failure:.3g}s ago (--scale-down-delay-after-failure {opts.delay_after_failure:g}s)"
        if a.last_delete is not None and now - a.last_delete < opts.delay_after_delete:
            return f"scale-down {now - a.last_delete:.3g}s ago (--scale-down-delay-after-delete {opts.delay_after_delete:g}s)"
        return ""

    async def run(
        self,
        snapshot: ClusterSnapshot,
        nodes: Sequence[types_pb2.Node],
        groups: Mapping[str, GroupState],
        pdbs: Sequence[types_pb2.PodDisruptionBudget],
        *,
        last_scale_up: float | None,
    ) -> ScaleDownSummary:
        if not self._cleaned:
            await self.clean_up(nodes, groups)
            self._cleaned = True
        a = self.actuator
        await a.settle(groups)
        plan = await self.planner.update(
            snapshot,
            nodes,
            groups,
            pdbs,
            deleting=a.deleting,
            monotonic=self._clock.monotonic(),
            wall=self._clock.now(),
        )
        self._metrics.unneeded_nodes_count.set(len(plan.unneeded))
        cooldown = self._cooldown(last_scale_up)
        started: list[str] = []
        if cooldown:
            logger.info("scale-down in cooldown: %s", cooldown)
        else:
            self.planner.nodes_to_delete(
                plan,
                groups,
                deleting=a.deleting,
                drains_in_progress=len(a.draining),
                monotonic=self._clock.monotonic(),
            )
            for c in plan.empty:
                logger.info("scale-down: removing empty node %s (group %s)", c.name, c.group)
            for c in plan.drain:
                logger.info(
                    "scale-down: removing node %s (group %s), utilization %.3g, its pods fit "
                    "elsewhere: %s",
                    c.name,
                    c.group,
                    c.utilization.value,
                    ", ".join(object_key(p) for p in c.pods.movable),
                )
            started = await a.start_deletion(
                [(c.node, c.group) for c in plan.empty], [(c.node, c.group) for c in plan.drain]
            )
            for name in started:
                self.planner.unneeded.drop(name)
        self._log_unremovable(plan)
        if not started:
            await self._soft_taints(plan, nodes)
        return self._summary(plan, cooldown, started)

    def _log_unremovable(self, plan: Plan) -> None:
        if not logger.isEnabledFor(V(1)):
            return
        for name, (reason, message) in sorted(plan.unremovable.items()):
            level = _UNREMOVABLE_LOG_LEVELS.get(reason, V(4))
            logger.log(level, "node %s is not removable: %s (%s)", name, reason, message)

    async def _soft_taints(self, plan: Plan, nodes: Sequence[types_pb2.Node]) -> None:
        """DeletionCandidate on the unneeded nodes, off the others (UpdateSoftDeletionTaints)."""
        unneeded = {c.name for c in plan.unneeded}
        for node in nodes:
            name = node.metadata.name
            if name in self.actuator.deleting:
                continue
            tainted = has_taint(node, DELETION_CANDIDATE_TAINT)
            try:
                if name in unneeded and not tainted:
                    await add_taint(self._client, name, DELETION_CANDIDATE_TAINT, self._clock.now())
                elif name not in unneeded and tainted:
                    await remove_taint(self._client, name, DELETION_CANDIDATE_TAINT)
            except ApiError as e:
                logger.warning("node %s: updating taint %s: %s", name, DELETION_CANDIDATE_TAINT, e)

    def _summary(self, plan: Plan, cooldown: str, started: list[str]) -> ScaleDownSummary:
        unneeded = []
        for c in plan.unneeded:
            if c.name in started:
                continue
            since = self.planner.unneeded.since(c.name)
            unneeded.append(
                UnneededNode(
                    c.name,
                    c.group,
                    since.wall if since is not None else self._clock.now(),
                    c.utilization.value,
                    c.empty,
                )
            )
        return ScaleDownSummary(
            in_cooldown=bool(cooldown),
            cooldown_reason=cooldown,
            unneeded=tuple(unneeded),
            unremovable=tuple(
                (n, str(r)) for n, (r, _) in sorted(plan.unremovable.items()) if n not in started
            ),
            unremovable_messages=tuple(
                (n, m) for n, (_, m) in sorted(plan.unremovable.items()) if n not in started
            ),
            started=tuple(started),
            deleting=tuple(sorted(self.actuator.deleting)),
            last_scale_down_time=self.actuator.last_delete_wall,
            probe_time=self._clock.now(),
        )
