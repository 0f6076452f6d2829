"""Scale-up (upstream core/scaleup/orchestrator): the pods that fit no existing or upcoming node
are tried on every node group's template; each group that could help gets an estimate of the
nodes it needs (bin-packing, at most up to its max size); the expander picks one group and the
cloud grows it. Pods get TriggeredScaleUp or NotTriggerScaleUp events saying why."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

from google.protobuf.message import Message

from autoscaler.clusterstate import CloudApi, ClusterState, GroupState
from autoscaler.estimator import estimate
from autoscaler.expander import Expander, Option
from autoscaler.metrics import Metrics
from autoscaler.templates import TemplateNodeInfo
from kemu.api.v1 import types_pb2
from kemu.component.clock import Clock
from kemu.machinery.errors import ApiError
from kemu.machinery.keys import object_key
from kemu.scheduling.simulator import ClusterSnapshot, PredicateChecker
from kemu.scheduling.status import Code
from kemu.scheduling.types import NodeInfo, Resource

logger = logging.getLogger(__name__)

TRIGGERED_SCALE_UP: Final = "TriggeredScaleUp"
NOT_TRIGGER_SCALE_UP: Final = "NotTriggerScaleUp"
FAILED_TO_SCALE_UP_GROUP: Final = "FailedToScaleUpGroup"


class Recorder(Protocol):
    """kemu.client.events.EventRecorder's `event`."""

    def event(
        self,
        obj: Message,
        event_type: str,
        reason: str,
        action: str,
        message: str,
        *,
        related: Message | None = None,
    ) -> None: ...


@dataclass
class ScaleUpResult:
    option: Option | None = None
    """The group grown (None: no scale-up)."""
    before: int = 0
    reasons: dict[str, Counter[str]] = field(default_factory=dict)
    """Per pod (namespace/name) that no option helps: why, counted over groups."""
    options: list[Option] = field(default_factory=list)
    """Every group that could help, as the expander saw them."""


class ScaleUpOrchestrator:
    def __init__(
        self,
        cloud: CloudApi,
        cluster_state: ClusterState,
        checker: PredicateChecker,
        expander: Expander,
        metrics: Metrics,
        recorder: Recorder,
        clock: Clock,
    ) -> None:
        self._cloud = cloud
        self._state = cluster_state
        self._checker = checker
        self._expander = expander
        self._metrics = metrics
        self._recorder = recorder
        self._clock = clock

    async def _option(
        self,
        g: GroupState,
        template: TemplateNodeInfo,
        snapshot: ClusterSnapshot,
        pods: Sequence[types_pb2.Pod],
        reasons: dict[str, Counter[str]],
    ) -> Option | None:
        def no(pod: types_pb2.Pod, why: str) -> None:
            reasons.setdefault(object_key(pod), Counter())[why] += 1

        backed_off = self._state.backoff.backed_off(g.id, self._clock.monotonic())
        if backed_off is not None:
            for pod in pods:
                no(pod, "in backoff after failed scale-up")
            return None
        room = g.max_size - g.target
        if room <= 0:
            for pod in pods:
                no(pod, "max node group size reached")
            return None
        sim = snapshot.fork()
        template.add_copy(sim, template.name)
        fitting: list[types_pb2.Pod] = []
        for pod in pods:
            s = self._checker.check_predicates(sim, pod, template.name)
            if s.code is Code.SUCCESS:
                fitting.append(pod)
            else:
                no(pod, ", ".join(s.reasons) or s.code.name)
        if not fitting:
            return None
        est = estimate(self._checker, snapshot, template, fitting, max_nodes=room)
        if est.node_count == 0:
            return None
        requests = Resource()
        for pod in est.pods:
            requests.add(snapshot.pod_info(pod).requests)
        helped = {object_key(p) for p in est.pods}
        for pod in fitting:
            if object_key(pod) not in helped:
                no(pod, "max node group size reached")
        return Option(g.id, est.node_count, est.pods, NodeInfo(template.node), requests)

    async def scale_up(
        self,
        pods: Sequence[types_pb2.Pod],
        snapshot: ClusterSnapshot,
        groups: Mapping[str, GroupState],
        templates: Mapping[str, TemplateNodeInfo],
    ) -> ScaleUpResult:
        """`templates`: every group's template with its daemon pods (autoscaler/templates.py)."""
        result = ScaleUpResult()
        options: list[Option] = []
        for g in sorted(groups.values(), key=lambda g: g.id):
            option = await self._option(g, templates[g.id], snapshot, pods, result.reasons)
            if option is not None:
                options.append(option)
        result.options = options
        best = self._expander.best_option(options)
        if best is not None:
            g = groups[best.group]
            result.before = g.target
            logger.info(
                "scale-up: node group %s %d->%d (max %d) for %d pod(s) [%s] (expander %s, %d "
                "option(s))",
                best.group,
                g.target,
                g.target + best.node_count,
                g.max_size,
                len(best.pods),
                ", ".join(object_key(p) for p in best.pods),
                self._expander.name,
                len(options),
            )
            try:
                await self._cloud.increase_size(best.group, best.node_count)
            except ApiError as e:
                now = self._clock.monotonic()
                self._state.backoff.backoff(best.group, str(e), now, "cloudProviderError")
                self._metrics.failed_scale_ups.labels("cloudProviderError").inc()
                logger.warning("scale-up of node group %s failed, backed off: %s", best.group, e)
                for pod in best.pods:
                    result.reasons.setdefault(object_key(pod), Counter())[
                        "failed to increase node group size"
                    ] += 1
            else:
                self._state.register_scale_up(best.group, self._clock.monotonic())
                result.option = best
                self._metrics.scaled_up_nodes.inc(best.node_count)
                self._metrics.last_activity.labels("scaleUp").set(self._clock.now())
                message = (
                    f"pod triggered scale-up: [{{{best.group} {g.target}->"
                    f"{g.target + best.node_count} (max: {g.max_size})}}]"
                )
                for pod in best.pods:
                    result.reasons.pop(object_key(pod), None)
                    self._recorder.event(pod, "Normal", TRIGGERED_SCALE_UP, "ScaleUp", message)
        # A loop that attempts a scale-up (done or failed) emits no NotTriggerScaleUp, as
        # upstream's EventingScaleUpStatusProcessor: the pods left over get it in a later loop.
        for pod in pods if best is None else ():
            why = result.reasons.get(object_key(pod))
            if not why:
                why = result.reasons[object_key(pod)] = Counter({"no node groups": 1})
            text = ", ".join(f"{n} {r}" for r, n in sorted(why.items()))
            self._recorder.event(
                pod,
                "Normal",
                NOT_TRIGGER_SCALE_UP,
                "ScaleUp",
                f"pod didn't trigger scale-up: {text}",
            )
        if result.option is None:
            logger.info(
                "no scale-up for %d pod(s): %s",
                len(pods),
                "; ".join(
                    f"{k}: {', '.join(f'{n} {r}' for r, n in sorted(c.items()))}"
                    for k, c in sorted(result.reasons.items())
                ),
            )
        return result
