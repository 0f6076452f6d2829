"""The horizontal-pod-autoscaler controller (upstream pkg/controller/podautoscaler/
horizontal.go): every HorizontalPodAutoscaler is reconciled every sync period (15 s,
--horizontal-pod-autoscaler-sync-period, on the cluster's clock) and on its own changes.

A reconcile reads the target (a Deployment, ReplicaSet, StatefulSet or ReplicationController:
what has the scale subresource; kemu's gRPC edge has no scale call, so the controller reads
the object's spec.replicas and selector and writes spec.replicas with a merge patch, which is
what a Scale write stores), computes each Resource or ContainerResource metric's proposal
(replica_calculator), takes the largest, stabilizes it (without spec.behavior: the highest
recommendation of the last 300 s, --horizontal-pod-autoscaler-downscale-stabilization, and a
scale-up limit of max(2 x current, 4); with it: its windows and rate policies), bounds it by
min/maxReplicas, rescales the target when it differs (event SuccessfulRescale) and writes the
status (currentReplicas, desiredReplicas, currentMetrics, lastScaleTime, the AbleToScale,
ScalingActive and ScalingLimited conditions) when it changed. Pods, Object and External
metrics need a custom or external metrics API, which kemu does not serve: such a metric fails
as upstream's does without that API (ScalingActive False)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from google.protobuf.message import Message

from controllermanager.config import HPAControllerOptions
from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from controllermanager.controller_utils import owner_selector
from controllermanager.podautoscaler.replica_calculator import (
    DEFAULT_OPTIONS,
    CalculatorOptions,
    MetricsError,
    resource_replicas,
)
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.autoscaling import (
    DEFAULT_SCALE_DOWN_STABILIZATION,
    default_scale_down_rules,
    default_scale_up_rules,
)
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import ApiError, NotFound
from kemu.machinery.keys import object_key
from kemu.machinery.quantity import format_resource

logger = logging.getLogger(__name__)

NAME: Final = "horizontalpodautoscaling"
EVENT_SOURCE: Final = "horizontal-pod-autoscaler"
SYNC_PERIOD: Final = 15.0
DEFAULT_WORKERS: Final = 5
"""--concurrent-horizontal-pod-autoscaler-syncs' default."""
SCALABLE: Final[dict[str, type[Message]]] = {
    "Deployment": types_pb2.Deployment,
    "ReplicaSet": types_pb2.ReplicaSet,
    "StatefulSet": types_pb2.StatefulSet,
    "ReplicationController": types_pb2.ReplicationController,
}
ABLE_TO_SCALE: Final = "AbleToScale"
SCALING_ACTIVE: Final = "ScalingActive"
SCALING_LIMITED: Final = "ScalingLimited"


@dataclass
class _History:
    """Per HPA: recommendations (time, replicas) and scale events (time, change), kept
    within the longest window they are read over."""

    recommendations: list[tuple[float, int]] = field(default_factory=list)
    scale_up_events: list[tuple[float, int]] = field(default_factory=list)
    scale_down_events: list[tuple[float, int]] = field(default_factory=list)


def stabilize(history: _History, desired: int, now: float, window: float) -> int:
    """stabilizeRecommendation (no behavior): the highest recommendation within the window,
    this one recorded."""
    cutoff = now - window
    history.recommendations = [r for r in history.recommendations if r[0] >= cutoff]
    best = max([desired, *(r for _, r in history.recommendations)])
    history.recommendations.append((now, desired))
    return best


def convert_desired_with_rules(
    current: int, desired: int, min_replicas: int, max_replicas: int
) -> tuple[int, str, str]:
    """convertDesiredReplicasWithRules: (replicas, reason, message)."""
    scale_up_limit = max(2 * current, 4)
    maximum = min(max_replicas, scale_up_limit)
    if desired < min_replicas:
        return (
            min_replicas,
            "TooFewReplicas",
            "the desired replica count is less than the minimum replica count",
        )
    if desired > maximum:
        if scale_up_limit < max_replicas:
            return (
                maximum,
                "ScaleUpLimit",
                "the desired replica count is increasing faster than the maximum scale rate",
            )
        return (
            maximum,
            "TooManyReplicas",
            "the desired replica count is more than the maximum replica count",
        )
    return desired, "DesiredWithinRange", "the desired count is within the acceptable range"


def _changes_in(events: list[tuple[float, int]], period: int, now: float) -> int:
    return sum(change for at, change in events if at > now - period)


def scale_up_limit(
    current: int, history: _History, rules: types_pb2.HPAScalingRules, now: float
) -> int:
    """calculateScaleUpLimitWithScalingRules."""
    if rules.select_policy == "Disabled":
        return current
    results = []
    for p in rules.policies:
        start = (
            current
            - _changes_in(history.scale_up_events, p.period_seconds, now)
            + _changes_in(history.scale_down_events, p.period_seconds, now)
        )
        if p.type == "Pods":
            results.append(start + p.value)
        else:
            results.append(-(-start * (100 + p.value) // 100))
    if not results:
        return current
    return min(results) if rules.select_policy == "Min" else max(results)


def scale_down_limit(
    current: int, history: _History, rules: types_pb2.HPAScalingRules, now: float
) -> int:
    """calculateScaleDownLimitWithBehaviors."""
    if rules.select_policy == "Disabled":
        return current
    results = []
    for p in rules.policies:
        start = (
            current
            - _changes_in(history.scale_up_events, p.period_seconds, now)
            + _changes_in(history.scale_down_events, p.period_seconds, now)
        )
        if p.type == "Pods":
            results.append(start - p.value)
        else:
            results.append(int(start * (100 - p.value) / 100))
    if not results:
        return current
    return max(results) if rules.select_policy == "Min" else min(results)


def _rules(
    behavior: types_pb2.HorizontalPodAutoscalerBehavior, downscale_window: float
) -> tuple[types_pb2.HPAScalingRules, types_pb2.HPAScalingRules]:
    """The behavior's rules with the defaults filled in; a scale-down window left unset is the
    controller's --horizontal-pod-autoscaler-downscale-stabilization
    (maybeInitScaleDownStabilizationWindow)."""
    up, down = default_scale_up_rules(), default_scale_down_rules()
    down.stabilization_window_seconds = int(downscale_window)
    if behavior.HasField("scale_up"):
        up.MergeFrom(behavior.scale_up)
        if behavior.scale_up.policies:
            del up.policies[:]
            up.policies.extend(behavior.scale_up.policies)
    if behavior.HasField("scale_down"):
        down.MergeFrom(behavior.scale_down)
        if behavior.scale_down.policies:
            del down.policies[:]
            down.policies.extend(behavior.scale_down.policies)
    return up, down


def normalize_with_behaviors(
    history: _History,
    behavior: types_pb2.HorizontalPodAutoscalerBehavior,
    current: int,
    desired: int,
    min_replicas: int,
    max_replicas: int,
    now: float,
    downscale_window: float = float(DEFAULT_SCALE_DOWN_STABILIZATION),
) -> tuple[int, str, str, str, str]:
    """normalizeDesiredReplicasWithBehaviors: stabilizeRecommendationWithBehaviors, then
    convertDesiredReplicasWithBehaviorRate. (replicas, stabilization reason and message,
    limit reason and message)."""
    up_rules, down_rules = _rules(behavior, downscale_window)
    up_cut = now - up_rules.stabilization_window_seconds
    down_cut = now - down_rules.stabilization_window_seconds
    up_rec = down_rec = desired
    for at, rec in history.recommendations:
        if at > up_cut:
            up_rec = min(up_rec, rec)
        if at > down_cut:
            down_rec = max(down_rec, rec)
    history.recommendations = [r for r in history.recommendations if r[0] >= min(up_cut, down_cut)]
    history.recommendations.append((now, desired))
    stabilized = max(current, up_rec)
    stabilized = min(stabilized, down_rec)
    if desired >= current:
        reason, message = (
            "ScaleUpStabilized",
            "recent recommendations were lower than current one, applying the lowest recent "
            "recommendation",
        )
    else:
        reason, message = (
            "ScaleDownStabilized",
            "recent recommendations were higher than current one, applying the highest "
            "recent recommendation",
        )
    if stabilized > current:
        limit = max(scale_up_limit(current, history, up_rules, now), current)
        if max_replicas > limit:
            maximum, lr, lm = (
                limit,
                "ScaleUpLimit",
                "the desired replica count is increasing faster than the maximum scale rate",
            )
        else:
            maximum, lr, lm = (
                max_replicas,
                "TooManyReplicas",
                "the desired replica count is more than the maximum replica count",
            )
        if stabilized > maximum:
            return maximum, reason, message, lr, lm
    elif stabilized < current:
        limit = min(scale_down_limit(current, history, down_rules, now), current)
        if min_replicas < limit:
            minimum, lr, lm = (
                limit,
                "ScaleDownLimit",
                "the desired replica count is decreasing faster than the maximum scale rate",
            )
        else:
            minimum, lr, lm = (
                min_replicas,
                "TooFewReplicas",
                "the desired replica count is less than the minimum replica count",
            )
        if stabilized < minimum:
            return minimum, reason, message, lr, lm
    return (
        stabilized,
        reason,
        message,
        "DesiredWithinRange",
        "the desired count is within the acceptable range",
    )


def set_condition(
    status: types_pb2.HorizontalPodAutoscalerStatus,
    type_: str,
    value: str,
    reason: str,
    message: str,
    now: float,
) -> None:
    """setCondition: the transition time changes only with the status."""
    for c in status.conditions:
        if c.type == type_:
            if c.status != value:
                c.last_transition_time.CopyFrom(timestamp(now))
            c.status, c.reason, c.message = value, reason, message
            return
    c = status.conditions.add(type=type_, status=value, reason=reason, message=message)
    c.last_transition_time.CopyFrom(timestamp(now))


def _metric_name(spec: types_pb2.MetricSpec) -> str:
    if spec.type == "Resource":
        return f"{spec.resource.name} resource utilization (percentage of request)"
    return f"{spec.container_resource.name} container resource utilization (percentage of request)"


class InvalidMetrics(MetricsError):
    """computeReplicasForMetrics' error when no replica count can be computed: "invalid
    metrics (N invalid out of M), first error is: ...", with the ScalingActive condition of
    the first invalid metric (its reason and message)."""

    def __init__(self, message: str, reason: str, condition_message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.condition_message = condition_message


_FAILED_REASON: Final = {
    "Resource": "FailedGetResourceMetric",
    "ContainerResource": "FailedGetContainerResourceMetric",
    "Pods": "FailedGetPodsMetric",
    "Object": "FailedGetObjectMetric",
    "External": "FailedGetExternalMetric",
}
"""getUnableComputeReplicaCountCondition's reason per metric type."""


class HorizontalController:
    """See the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        sync_period: float = SYNC_PERIOD,
        downscale_stabilization: float = float(DEFAULT_SCALE_DOWN_STABILIZATION),
        workers: int = DEFAULT_WORKERS,
        calculator: CalculatorOptions = DEFAULT_OPTIONS,
        recorder: EventRecorder | None = None,
    ) -> None:
        self._client = client
        self._calculator = calculator
        self._clock = clock
        self._sync_period = sync_period
        self._downscale_window = downscale_stabilization
        self._workers = workers
        self._recorder = recorder or EventRecorder(client, EVENT_SOURCE, clock=clock)
        self.queue = WorkQueue(clock, name=NAME)
        self._history: dict[str, _History] = {}
        self._hpas: Informer[types_pb2.HorizontalPodAutoscaler] = informers.informer(
            types_pb2.HorizontalPodAutoscaler
        )
        self._pods: Informer[types_pb2.Pod] = informers.informer(types_pb2.Pod)
        self._hpas.add_event_handler(
            FuncHandler(self._enqueue, lambda _old, new: self._enqueue(new), self._on_delete)
        )

    @property
    def name(self) -> str:
        return NAME

    def _enqueue(self, hpa: types_pb2.HorizontalPodAutoscaler) -> None:
        self.queue.add(object_key(hpa))

    def _on_delete(self, hpa: types_pb2.HorizontalPodAutoscaler) -> None:
        self._history.pop(object_key(hpa), None)

    async def sync(self, key: str) -> None:
        namespace, _, name = key.partition("/")
        hpa = self._hpas.lister.get(name, namespace)
        if hpa is None:
            self._history.pop(key, None)
            return
        try:
            await self.reconcile(hpa)
        finally:
            # upstream requeues every HPA after the resync period (its queue's resync)
            self.queue.add_after(key, self._sync_period)

    async def _target(
        self, hpa: types_pb2.HorizontalPodAutoscaler
    ) -> tuple[type[Message], Message] | str:
        ref = hpa.spec.scale_target_ref
        kind = SCALABLE.get(ref.kind)
        if kind is None:
            return (
                f'no matches for kind "{ref.kind}" in group "{ref.api_version.partition("/")[0]}"'
            )
        try:
            return kind, await self._client.get(kind, ref.name, hpa.metadata.namespace)
        except NotFound as e:
            return e.message

    def _target_pods(self, target: Message, namespace: str) -> list[types_pb2.Pod]:
        selector = owner_selector(target)
        if selector is None or selector.empty:
            return []
        return [p for p in self._pods.lister.list(namespace) if selector.matches(p.metadata.labels)]

    def _compute(
        self,
        hpa: types_pb2.HorizontalPodAutoscaler,
        current: int,
        pods: Sequence[types_pb2.Pod],
        now: float,
        status: types_pb2.HorizontalPodAutoscalerStatus,
    ) -> tuple[int, str]:
        """computeReplicasForMetrics: the largest proposal and its metric's name; the
        metrics' statuses written into `status`. A metric that cannot be computed records
        its event (FailedGetResourceMetric, ...: getUnableComputeReplicaCountCondition);
        InvalidMetrics when none could be, or when some could not and the others would
        scale down."""
        best, best_name = -1, ""
        failures: list[tuple[str, str, str]] = []  # (reason, error, wrapped error)
        del status.current_metrics[:]
        for spec in hpa.spec.metrics:
            reason = _FAILED_REASON.get(spec.type, f"FailedGet{spec.type}Metric")
            if spec.type not in ("Resource", "ContainerResource"):
                error = (
                    f"unable to get metric {spec.type}: the {spec.type.lower()} metrics API "
                    "is not served"
                )
                failures.append((reason, error, error))
                self._recorder.event(hpa, "Warning", reason, "", error)
                continue
            src = spec.resource if spec.type == "Resource" else spec.container_resource
            container = spec.container_resource.container if spec.type != "Resource" else ""
            what = "resource" if spec.type == "Resource" else "container resource"
            target = src.target
            try:
                if not target.HasField("average_utilization"):
                    raise MetricsError(
                        f"unable to get metrics for resource {src.name}: only utilization "
                        "targets are computed"
                    )
                result = resource_replicas(
                    current,
                    target.average_utilization,
                    src.name,
                    pods,
                    now,
                    container=container,
                    options=self._calculator,
                )
            except MetricsError as e:
                error = f"failed to get {src.name} utilization: {e}"
                failures.append(
                    (reason, error, f"failed to get {src.name} {what} metric value: {error}")
                )
                self._recorder.event(hpa, "Warning", reason, "", error)
                continue
            ms = status.current_metrics.add(type=spec.type)
            cur_src = ms.resource if spec.type == "Resource" else ms.container_resource
            cur_src.name = src.name
            if spec.type != "Resource":
                ms.container_resource.container = container
            cur_src.current.average_utilization = result.utilization
            cur_src.current.average_value = format_resource(src.name, result.raw_average)
            if result.replicas > best:
                best, best_name = result.replicas, _metric_name(spec)
        if failures and (best < 0 or best < current):
            reason, error, wrapped = failures[0]
            raise InvalidMetrics(
                f"invalid metrics ({len(failures)} invalid out of {len(hpa.spec.metrics)}), "
                f"first error is: {wrapped}",
                reason,
                f"the HPA was unable to compute the replica count: {error}",
            )
        if best < 0:
            raise InvalidMetrics("no metrics", "FailedGetResourceMetric", "no metrics")
        return best, best_name

    async def reconcile(self, hpa: types_pb2.HorizontalPodAutoscaler) -> None:
        """reconcileAutoscaler."""
        key = object_key(hpa)
        now = self._clock.now()
        status = types_pb2.HorizontalPodAutoscalerStatus()
        status.CopyFrom(hpa.status)
        found = await self._target(hpa)
        if isinstance(found, str):
            self._recorder.event(hpa, "Warning", "FailedGetScale", "", found)
            set_condition(
                status,
                ABLE_TO_SCALE,
                "False",
                "FailedGetScale",
                f"the HPA controller was unable to get the target's current scale: {found}",
                now,
            )
            await self._write_status(hpa, status)
            return
        kind, target = found
        set_condition(
            status,
            ABLE_TO_SCALE,
            "True",
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale",
            now,
        )
        current: int = target.spec.replicas  # type: ignore[attr-defined]
        status.current_replicas = current
        min_replicas = hpa.spec.min_replicas if hpa.spec.HasField("min_replicas") else 1
        max_replicas = hpa.spec.max_replicas
        reason = ""
        if current == 0 and min_replicas != 0:
            desired = 0
            set_condition(
                status,
                SCALING_ACTIVE,
                "False",
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero",
                now,
            )
        elif current > max_replicas:
            desired, reason = max_replicas, "Current number of replicas above Spec.MaxReplicas"
        elif current < min_replicas:
            desired, reason = min_replicas, "Current number of replicas below Spec.MinReplicas"
        else:
            pods = self._target_pods(target, hpa.metadata.namespace)
            try:
                proposal, metric = self._compute(hpa, current, pods, now, status)
            except InvalidMetrics as e:
                self._recorder.event(hpa, "Warning", "FailedComputeMetricsReplicas", "", str(e))
                set_condition(status, SCALING_ACTIVE, "False", e.reason, e.condition_message, now)
                status.desired_replicas = current
                await self._write_status(hpa, status)
                return
            set_condition(
                status,
                SCALING_ACTIVE,
                "True",
                "ValidMetricFound",
                f"the HPA was able to successfully calculate a replica count from {metric}",
                now,
            )
            history = self._history.setdefault(key, _History())
            if hpa.spec.HasField("behavior"):
                desired, s_reason, s_msg, l_reason, l_msg = normalize_with_behaviors(
                    history,
                    hpa.spec.behavior,
                    current,
                    proposal,
                    min_replicas,
                    max_replicas,
                    now,
                    self._downscale_window,
                )
            else:
                stabilized = stabilize(history, proposal, now, self._downscale_window)
                if stabilized != proposal:
                    s_reason, s_msg = (
                        "ScaleDownStabilized",
                        "recent recommendations were higher than current one, applying the "
                        "highest recent recommendation",
                    )
                else:
                    s_reason, s_msg = "ReadyForNewScale", "recommended size matches current size"
                desired, l_reason, l_msg = convert_desired_with_rules(
                    current, stabilized, min_replicas, max_replicas
                )
            set_condition(status, ABLE_TO_SCALE, "True", s_reason, s_msg, now)
            set_condition(
                status,
                SCALING_LIMITED,
                "False" if l_reason == "DesiredWithinRange" else "True",
                l_reason,
                l_msg,
                now,
            )
            if desired > current:
                reason = f"{metric} above target"
            elif desired < current:
                reason = "All metrics below target"
        if desired != current:
            ref = hpa.spec.scale_target_ref
            try:
                await self._client.patch(
                    kind, ref.name, {"spec": {"replicas": desired}}, hpa.metadata.namespace
                )
            except ApiError as e:
                self._recorder.event(hpa, "Warning", "FailedRescale", "", str(e))
                set_condition(
                    status,
                    ABLE_TO_SCALE,
                    "False",
                    "FailedUpdateScale",
                    f"the HPA controller was unable to update the target scale: {e}",
                    now,
                )
                await self._write_status(hpa, status)
                raise
            set_condition(
                status,
                ABLE_TO_SCALE,
                "True",
                "SucceededRescale",
                f"the HPA controller was able to update the target scale to {desired}",
                now,
            )
            self._recorder.event(
                hpa, "Normal", "SuccessfulRescale", "", f"New size: {desired}; reason: {reason}"
            )
            history = self._history.setdefault(key, _History())
            events = history.scale_up_events if desired > current else history.scale_down_events
            events.append((now, abs(desired - current)))
            horizon = now - 1800  # the longest policy period
            history.scale_up_events = [e for e in history.scale_up_events if e[0] > horizon]
            history.scale_down_events = [e for e in history.scale_down_events if e[0] > horizon]
            status.last_scale_time.CopyFrom(timestamp(now))
            logger.info(
                "hpa %s: rescaled %s/%s from %d to %d (%s)",
                key,
                ref.kind,
                ref.name,
                current,
                desired,
                reason,
            )
        status.desired_replicas = desired
        await self._write_status(hpa, status)

    async def _write_status(
        self,
        hpa: types_pb2.HorizontalPodAutoscaler,
        status: types_pb2.HorizontalPodAutoscalerStatus,
    ) -> None:
        status.observed_generation = hpa.metadata.generation
        if status == hpa.status:
            return
        new = types_pb2.HorizontalPodAutoscaler()
        new.CopyFrom(hpa)
        new.status.CopyFrom(status)
        await self._client.update_status(new)

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "syncing hpa", logger)

    async def run(self) -> None:
        await run_controller(
            "horizontal pod autoscaler controller",
            logger,
            synced=(self._hpas, self._pods),
            queues=(self.queue,),
            tasks=[
                ("hpa events", self._recorder.run),
                *workers(NAME, self._workers, self._worker),
            ],
        )


def new_controller(
    ctx: ControllerContext, options: HPAControllerOptions | None = None
) -> HorizontalController:
    """The init function registered as "horizontalpodautoscaling" (bound to the flags'
    options by app.configure_controllers)."""
    options = options or HPAControllerOptions()
    return HorizontalController(
        ctx.client,
        ctx.informers,
        ctx.clock,
        sync_period=options.sync_period,
        downscale_stabilization=options.downscale_stabilization,
        workers=options.concurrent_syncs,
        calculator=CalculatorOptions(
            tolerance=options.tolerance,
            cpu_initialization_period=options.cpu_initialization_period,
            initial_readiness_delay=options.initial_readiness_delay,
        ),
    )
