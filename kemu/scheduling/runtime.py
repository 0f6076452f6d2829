"""The framework runtime: one `Framework` per profile runs the plugins at each extension point
(upstream framework/runtime/framework.go), and is the `Handle` plugins get.

Built from a `Profile` (kemu.scheduling.config: plugin names per extension point, after multiPoint
expansion, and score weights) and a registry: each plugin is instantiated once, with its
pluginConfig args and this framework as its handle, even when it serves several points.

Contracts, as upstream:
- A plugin exception is a bug: it becomes an Error status naming the plugin
  (`running "X" filter plugin: <error>`) and never propagates; one guard (`guarded`) wraps
  every plugin method once, when the profile is built. Cancellation is not caught.
- The snapshot is set by the scheduler at the start of each cycle (`set_snapshot`); the
  nominator may come later (`set_nominator`), as upstream's SetPodNominator.
- Skip: a PreFilter Skip skips the plugin's Filter and PreFilter extensions (recorded in
  CycleState.skip_filter_plugins); a PreScore Skip skips its Score; a PreBindPreFlight Skip
  skips its PreBind; Bind plugins are tried in order until one does not Skip.
- Metrics: `observe(extension_point, status, profile, seconds)` is called once per extension
  point run (upstream scheduler_framework_extension_point_duration_seconds, with upstream's
  extension point labels); Filter is not timed per node.
"""

from __future__ import annotations

import bisect
import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TypeVar

import anyio

from kemu.api.v1 import types_pb2
from kemu.component.version import Version
from kemu.scheduling.column_runner import ColumnRunner
from kemu.scheduling.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
from kemu.scheduling.framework_handle import (
    NO_OPTIONS,
    ExtensionPointObserver,
    FrameworkHandle,
    FrameworkOptions,
)
from kemu.scheduling.interface import (
    EXTENSION_POINTS,
    CycleState,
    EnqueueExtensions,
    FilterFn,
    LabelledObserver,
    NodeToStatus,
    ObserverMetric,
    PlacementGeneratePlugin,
    PlacementScorePlugin,
    Plugin,
    PodNominator,
    SharedLister,
)
from kemu.scheduling.placement import AT_MOST_ONE_GENERATOR
from kemu.scheduling.plugin_points import (
    BIND,
    PERMIT,
    POST_BIND,
    POST_FILTER,
    PRE_BIND,
    PRE_BIND_PRE_FLIGHT,
    PRE_ENQUEUE,
    PRE_FILTER,
    PRE_SCORE,
    RESERVE,
    SCORE,
    UNRESERVE,
    LessFunc,
    PointPlugins,
)
from kemu.scheduling.plugins.registry import Registry
from kemu.scheduling.status import SKIP, SUCCESS, Code, Status
from kemu.scheduling.types import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    NodeInfo,
    NodeScore,
    PodInfo,
    PostFilterResult,
    PreFilterResult,
    pod_priority,
)
from kemu.scheduling.waiting_pods import WaitingPod

if TYPE_CHECKING:
    from kemu.scheduling.profile import Profile

logger = logging.getLogger(__name__)

# A Permit plugin may not make a pod wait longer than this (upstream maxTimeout).
MAX_PERMIT_TIMEOUT: Final = 15 * 60.0


_REJECTED: Final = frozenset(
    {Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING}
)
# Only these points' plugins can make a pod unschedulable, so only they register events.
_ENQUEUE_POINTS: Final = ("preEnqueue", "preFilter", "filter", "reserve", "permit")
_ALL_EVENTS: Final = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "*")


def observer_from_histogram(histogram: LabelledObserver) -> ExtensionPointObserver:
    """An observer for a prometheus Histogram labelled (extension_point, status, profile).
    Each label combination's child is looked up once (`labels` takes a lock and validates
    the values: a few microseconds on every extension point of every cycle)."""
    children: dict[tuple[str, str, str], Callable[[float], None]] = {}

    def observe(extension_point: str, status: str, profile: str, seconds: float) -> None:
        key = (extension_point, status, profile)
        child = children.get(key)
        if child is None:
            child = children[key] = fast_observer(
                histogram.labels(extension_point, status, profile)
            )
        child(seconds)

    return observe


def fast_observer(child: ObserverMetric) -> Callable[[float], None]:
    """`child.observe` of a labelled prometheus_client Histogram child, done directly: the
    first bucket whose upper bound is >= the value (a bisection instead of the library's
    walk over the bounds) and the sum, through the same value objects, so the exposition is
    the same. Any other observer (a test's, another library's) keeps its own `observe`."""
    bounds = getattr(child, "_upper_bounds", None)
    buckets = getattr(child, "_buckets", None)
    total = getattr(child, "_sum", None)
    if (
        not isinstance(bounds, list)
        or not isinstance(buckets, list)
        or len(bounds) != len(buckets)
        or not bounds
        or bounds[-1] != math.inf
        or total is None
    ):
        return child.observe
    incs: list[Callable[[float], None]] = [b.inc for b in buckets]
    add: Callable[[float], None] = total.inc
    where = bisect.bisect_left

    def observe(amount: float) -> None:
        add(amount)
        # prometheus_client: the first bound with amount <= bound (NaN: none).
        if amount == amount:
            incs[where(bounds, amount)](1)

    return observe


def _error(what: str, plugin: str, detail: Status | BaseException) -> Status:
    """An Error status `<what>: <detail>` naming `plugin`, keeping the original exception."""
    if isinstance(detail, BaseException):
        cause: BaseException = detail
        message = str(detail) or type(detail).__name__
    else:
        cause = detail.error or RuntimeError(detail.message())
        message = detail.message() or detail.code_name()
    return Status(Code.ERROR, (f"{what}: {message}",), plugin, cause)


# What a plugin returns once its context is cancelled (Go's context.Canceled): a PreBind
# cancelled by a preemption (kemu.scheduling.pods_in_pre_bind).
CONTEXT_CANCELED: Final = "context canceled"


class NodePluginScores:
    """Scores of one node: the weighted score of each plugin and their total."""

    __slots__ = ("_index", "_per_plugin", "name", "total_score")

    def __init__(
        self,
        name: str,
        total_score: int,
        index: int = 0,
        per_plugin: tuple[tuple[str, list[int]], ...] = (),
    ) -> None:
        self.name = name
        self.total_score = total_score
        self._index = index
        self._per_plugin = per_plugin

    @property
    def scores(self) -> dict[str, int]:
        """Each plugin's weighted score (built on demand: only logs and tests read it)."""
        return {name: weighted[self._index] for name, weighted in self._per_plugin}

    def __repr__(self) -> str:
        return f"NodePluginScores({self.name}, total={self.total_score}, {self.scores})"


class Framework(FrameworkHandle):
    """The plugins of one profile, and the Handle they get (FrameworkHandle, what it gives
    them). See the module docstring."""

    def __init__(
        self,
        profile: Profile,
        registry: Registry,
        *,
        options: FrameworkOptions = NO_OPTIONS,
        nominator: PodNominator | None = None,
        snapshot: SharedLister | None = None,
    ) -> None:
        super().__init__(profile.scheduler_name, options, nominator=nominator, snapshot=snapshot)
        self._percentage = profile.percentage_of_nodes_to_score
        if options.preemption_executor is not None:
            self._preemption_executor = options.preemption_executor(self)

        # One instance per plugin, whatever the number of points it serves.
        self._plugins: dict[str, Plugin] = {}
        for name in profile.plugin_names():
            if name not in registry:
                raise ValueError(f'plugin "{name}" of profile {self._profile_name!r} not found')
            try:
                self._plugins[name] = registry[name](profile.args(name), self)
            except Exception as err:
                raise ValueError(f'initializing plugin "{name}": {err}') from err

        self._points = points = PointPlugins.of(profile.enabled, self._plugins)
        self._score_weights = {n: profile.score_weights.get(n, 1) for n in profile.enabled["score"]}
        # The batch forms over node columns (kemu.scheduling.columns).
        self._column_runner = ColumnRunner(
            filters=points.filter_plugins,
            scores=points.score_plugins,
            score_weights=self._score_weights,
            normalized=frozenset(points.normalize_score),
            pre_filter_extensions=frozenset(n for n, _, _ in points.pre_filter_extensions),
            nominator=self.nominator,
            filter_plan=self._filter_plan,
            observe_score=self._observe_score,
        )
        self._enabled = {point: tuple(profile.enabled[point]) for point in EXTENSION_POINTS}
        # The pod-group cycle's placement points (KEP-5732; kemu.scheduling.placement runs
        # them): plugin instances, the scorers with their placementScore weights.
        self._placement_generate = [
            _as(self._plugins[n], PlacementGeneratePlugin, "placementGenerate")
            for n in profile.enabled["placementGenerate"]
        ]
        if len(self._placement_generate) > 1 and self.gates.version < Version(1, 37):
            raise ValueError(AT_MOST_ONE_GENERATOR)
        self._placement_score = [
            (
                _as(self._plugins[n], PlacementScorePlugin, "placementScore"),
                profile.placement_score_weights.get(n, 1),
            )
            for n in profile.enabled["placementScore"]
        ]

    # ------------------------------------------------------------ about the profile

    def profile_name(self) -> str:
        return self._profile_name

    def percentage_of_nodes_to_score(self) -> int:
        """The profile's percentageOfNodesToScore (0: adaptive, see schedule_one)."""
        return self._percentage

    def has_filter_plugins(self) -> bool:
        return bool(self._points.filter)

    def has_post_filter_plugins(self) -> bool:
        return bool(self._points.post_filter)

    def has_score_plugins(self) -> bool:
        return bool(self._points.score)

    def list_plugins(self) -> dict[str, tuple[str, ...]]:
        """Plugin names per extension point, in the order they run."""
        return dict(self._enabled)

    def plugin(self, name: str) -> Plugin | None:
        return self._plugins.get(name)

    def placement_generate_plugins(self) -> list[PlacementGeneratePlugin]:
        return self._placement_generate

    def placement_score_plugins(self) -> list[tuple[PlacementScorePlugin, int]]:
        """The placementScore plugins with their weights."""
        return self._placement_score

    def enqueue_plugins(self) -> list[Plugin]:
        """The plugins that can make a pod unschedulable (PreEnqueue, PreFilter, Filter,
        Reserve, Permit), each once: the queue builds its queueing hint map from their
        EnqueueExtensions (upstream frameworkImpl.EnqueueExtensions)."""
        names: dict[str, None] = {}
        for point in _ENQUEUE_POINTS:
            names.update(dict.fromkeys(self._enabled[point]))
        return [self._plugins[name] for name in names]

    def enqueue_extensions(self) -> dict[str, list[ClusterEventWithHint]]:
        """{plugin: the events (with hints) that may make a pod it rejected schedulable}.

        A plugin that does not implement EnqueueExtensions is registered for every event, as
        upstream does: we cannot know what it waits for."""
        out: dict[str, list[ClusterEventWithHint]] = {}
        for plugin in self.enqueue_plugins():
            if isinstance(plugin, EnqueueExtensions):
                out[plugin.name()] = list(plugin.events_to_register())
            else:
                out[plugin.name()] = [ClusterEventWithHint(_ALL_EVENTS)]
        return out

    def column_runner(self) -> ColumnRunner:
        """The batch forms of this profile's Filter and Score plugins (kemu.scheduling.
        column_runner), for the scheduler's batch path."""
        return self._column_runner

    # ------------------------------------------------------------ metrics

    def _observed(self, point: str, status: Status, start: float) -> None:
        if self._observe is not None:
            self._observe(
                point, status.code_name(), self._profile_name, time.perf_counter() - start
            )

    def _observe_score(self, status: Status, start: float) -> None:
        self._observed(SCORE, status, start)

    # ------------------------------------------------------------ queue

    def run_pre_enqueue_plugins(self, pod: types_pb2.Pod, gating_plugin: str = "") -> Status:
        """Success when every PreEnqueue plugin lets the pod into activeQ; otherwise the first
        refusal, naming its plugin. `gating_plugin` (the one that gated it last time) runs
        first, as upstream's queue does."""
        start = time.perf_counter()
        status = SUCCESS
        plugins = self._points.pre_enqueue
        if gating_plugin:
            plugins = sorted(plugins, key=lambda p: p[0] != gating_plugin)
        for name, fn in plugins:
            s = fn(pod)
            if s.code is Code.ERROR:
                status = _error(f'running PreEnqueue plugin "{name}"', name, s)
                break
            if s.code is not Code.SUCCESS:
                status = s.with_plugin(name)
                break
        self._observed(PRE_ENQUEUE, status, start)
        return status

    def queue_sort_func(self) -> LessFunc:
        """The one QueueSort plugin's `less`."""
        less: LessFunc = self._points.queue_sort[0][1]
        return less

    # ------------------------------------------------------------ filter

    def run_pre_filter_plugins(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status, set[str]]:
        """Runs every PreFilter plugin. Returns the merged PreFilterResult (None: all nodes),
        the status (Success; Unschedulable after running all of them; the first
        UnschedulableAndUnresolvable; or Error), and the plugins that narrowed the nodes or
        rejected the pod (for the queue's hints). Skips go to state.skip_filter_plugins."""
        start = time.perf_counter()
        skip: set[str] = set()
        result: PreFilterResult | None = None
        with_nodes: set[str] = set()
        rejectors: set[str] = set()
        status = SUCCESS
        try:
            for name, fn in self._points.pre_filter:
                r, s = fn(state, pod, nodes)
                if s.code is Code.SKIP:
                    skip.add(name)
                    continue
                if s.code is not Code.SUCCESS:
                    if s.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                        # Preemption cannot help: no need to run the others.
                        status = s.with_plugin(name)
                        return None, status, {name}
                    if s.code is Code.UNSCHEDULABLE:
                        # Preemption may help: the others still run, for their state. The
                        # last rejection is the status (as upstream); all go to the set.
                        status = s.with_plugin(name)
                        rejectors.add(name)
                        continue
                    status = _error(f'running PreFilter plugin "{name}"', name, s)
                    return None, status, set()
                if r is not None and not r.all_nodes():
                    with_nodes.add(name)
                    result = r if result is None else result.merge(r)
                    if not result.node_names:
                        names = sorted(with_nodes)
                        if len(names) == 1:
                            msg = f"node(s) didn't satisfy plugin {names[0]}"
                        else:
                            msg = f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                        status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,))
                        return result, status, with_nodes
            return result, status, with_nodes | rejectors
        finally:
            state.skip_filter_plugins = skip
            state.filter_plan = None
            self._observed(PRE_FILTER, status, start)

    def filter_plan(self, state: CycleState) -> list[tuple[str, FilterFn]]:
        """The Filter plugins that run in the cycle of `state` (not skipped at PreFilter), in
        order: computed once per cycle, after PreFilter."""
        return self._filter_plan(state)

    def runs_pre_filter_extensions(self, state: CycleState) -> bool:
        """Whether a PreFilter extension (AddPod, RemovePod) runs in the cycle of `state`:
        one of a plugin not skipped at PreFilter."""
        skip = state.skip_filter_plugins
        return any(n not in skip for n, _, _ in self._points.pre_filter_extensions)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status:
        """Tells every PreFilter plugin (not skipped) that `pod_to_add` is now on `node`."""
        return self._run_pre_filter_extension("AddPod", state, pod, pod_to_add, node)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status:
        """Tells every PreFilter plugin (not skipped) that `pod_to_remove` left `node`."""
        return self._run_pre_filter_extension("RemovePod", state, pod, pod_to_remove, node)

    def _run_pre_filter_extension(
        self,
        which: str,
        state: CycleState,
        pod: types_pb2.Pod,
        other: PodInfo,
        node: NodeInfo,
    ) -> Status:
        skip = state.skip_filter_plugins
        for name, add_pod, remove_pod in self._points.pre_filter_extensions:
            if name in skip:
                continue
            call = add_pod if which == "AddPod" else remove_pod
            s = call(state, pod, other, node)
            if s.code is not Code.SUCCESS:
                return _error(f'running {which} on PreFilter plugin "{name}"', name, s)
        return SUCCESS

    def run_filter_plugins(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        """Success if every Filter plugin (not skipped at PreFilter) accepts the node; else the
        first rejection, naming its plugin; any other code becomes an Error."""
        return self._run_filter_plan(self._filter_plan(state), state, pod, node)

    def _filter_plan(self, state: CycleState) -> list[tuple[str, FilterFn]]:
        plan = state.filter_plan
        if plan is None:
            skip = state.skip_filter_plugins
            plan = state.filter_plan = [(n, fn) for n, fn in self._points.filter if n not in skip]
        return plan

    def _run_filter_plan(
        self,
        plan: list[tuple[str, FilterFn]],
        state: CycleState,
        pod: types_pb2.Pod,
        node: NodeInfo,
    ) -> Status:
        for name, fn in plan:
            s = fn(state, pod, node)
            if s.code is not Code.SUCCESS:
                if s.code not in _REJECTED:
                    return _error(f'running "{name}" filter plugin', name, s)
                return s.with_plugin(name)
        return SUCCESS

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo
    ) -> Status:
        """Filter with the pods nominated to the node that have at least the pod's priority
        counted as running, and, if that passes, again without them (pkg/scheduler/framework/runtime/framework.go RunFilterPluginsWithNominatedPods): the pod
        must fit beside them (resources, anti-affinity) and must not depend on them
        (affinity)."""
        nominator = self._nominator
        if nominator is None or node.node is None:
            return self.run_filter_plugins(state, pod, node)
        nominated = nominator.nominated_pods_for_node(node.name)
        if not nominated:
            return self.run_filter_plugins(state, pod, node)
        priority = pod_priority(pod)
        uid = pod.metadata.uid
        node_out: NodeInfo | None = None
        state_out: CycleState | None = None
        for pi in nominated:
            if pi.priority < priority or pi.uid == uid:
                continue
            if node_out is None or state_out is None:
                self._filter_plan(state)  # computed once, on the cycle's state, not the copy
                node_out, state_out = node.clone(), state.clone()
            node_out.add_pod_info(pi)
            s = self.run_pre_filter_extension_add_pod(state_out, pod, pi, node_out)
            if s.code is not Code.SUCCESS:
                return s
        if node_out is None or state_out is None:
            return self.run_filter_plugins(state, pod, node)
        status = self.run_filter_plugins(state_out, pod, node_out)
        if status.code is not Code.SUCCESS:
            return status
        return self.run_filter_plugins(state, pod, node)

    def run_filter_plan(
        self,
        plan: list[tuple[str, FilterFn]],
        state: CycleState,
        pod: types_pb2.Pod,
        node: NodeInfo,
    ) -> Status:
        """run_filter_plugins with only the Filter plugins of `plan` (for the batch path:
        ColumnRunner.filter_rest_plan's, on a node every batch-form plugin passed, which gives
        the same Status, the others returning Success)."""
        return self._run_filter_plan(plan, state, pod, node)

    async def run_post_filter_plugins(
        self, state: CycleState, pod: types_pb2.Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """Runs PostFilter plugins until one succeeds, returns UnschedulableAndUnresolvable or
        fails; otherwise Unschedulable with every plugin's reasons, naming the first."""
        start = time.perf_counter()
        result: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        status = SUCCESS
        try:
            for name, fn in self._points.post_filter:
                r, s = await fn(state, pod, statuses)
                if s.code is Code.SUCCESS:
                    status = s
                    return r, s
                if s.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    status = s.with_plugin(name)
                    return r, status
                if s.code not in _REJECTED:
                    status = _error(f'running PostFilter plugin "{name}"', name, s)
                    return None, status
                if r is not None and r.nominated_node_name is not None:
                    result = r
                reasons.extend(s.reasons)
                rejector = rejector or name
            status = Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)
            return result, status
        finally:
            self._observed(POST_FILTER, status, start)

    # ------------------------------------------------------------ score

    def run_pre_score_plugins(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> Status:
        """Runs PreScore plugins; Skip goes to state.skip_score_plugins; anything but
        Success/Skip is an Error."""
        start = time.perf_counter()
        skip: set[str] = set()
        status = SUCCESS
        try:
            for name, fn in self._points.pre_score:
                s = fn(state, pod, nodes)
                if s.code is Code.SKIP:
                    skip.add(name)
                elif s.code is not Code.SUCCESS:
                    status = _error(f'running PreScore plugin "{name}"', name, s)
                    return status
            return status
        finally:
            state.skip_score_plugins = skip
            self._observed(PRE_SCORE, status, start)

    def run_score_plugins(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[list[NodePluginScores], Status]:
        """Scores every node with every Score plugin not skipped at PreScore: raw scores,
        NormalizeScore, a check that each is in [0, 100], times the plugin's weight, summed.
        Returns one NodePluginScores per node, in `nodes` order."""
        start = time.perf_counter()
        status = SUCCESS
        try:
            skip = state.skip_score_plugins
            plugins = [(n, fn) for n, fn in self._points.score if n not in skip]
            per_plugin: list[tuple[str, list[int]]] = []
            for name, fn in plugins:
                raw: list[int] = []
                batch = self._points.score_nodes.get(name)
                if batch is not None:
                    raw, s = batch(state, pod, nodes)
                    if s.code is not Code.SUCCESS:
                        status = _error("running Score plugins", name, _wrap(name, s))
                        return [], status
                for node in nodes if batch is None else ():
                    score, s = fn(state, pod, node)
                    if s.code is not Code.SUCCESS:
                        status = _error("running Score plugins", name, _wrap(name, s))
                        return [], status
                    raw.append(score)
                normalize = self._points.normalize_score.get(name)
                if normalize is not None:
                    node_scores = [NodeScore(n.name, v) for n, v in zip(nodes, raw, strict=True)]
                    normalized, s = normalize(state, pod, node_scores)
                    if s.code is not Code.SUCCESS:
                        status = _error("running Normalize on Score plugins", name, _wrap(name, s))
                        return [], status
                    raw = [ns.score for ns in normalized]
                weight = self._score_weights[name]
                for v in raw:
                    if v > MAX_NODE_SCORE or v < MIN_NODE_SCORE:
                        status = Status(
                            Code.ERROR,
                            (
                                "applying score defaultWeights on Score plugins: "
                                f'plugin "{name}" returns an invalid score {v}, it should in '
                                f"the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after "
                                "normalizing",
                            ),
                            name,
                        )
                        return [], status
                per_plugin.append((name, [v * weight for v in raw]))
            shared = tuple(per_plugin)
            totals = (
                [sum(t) for t in zip(*(w for _, w in shared), strict=True)]
                if shared
                else [0] * len(nodes)
            )
            out = [
                NodePluginScores(node.name, total, i, shared)
                for i, (node, total) in enumerate(zip(nodes, totals, strict=True))
            ]
            return out, status
        finally:
            self._observed(SCORE, status, start)

    # ------------------------------------------------------------ reserve, permit

    def run_reserve_plugins_reserve(
        self, state: CycleState, pod: types_pb2.Pod, node_name: str
    ) -> Status:
        """Reserve in order; stops at the first failure (the caller then runs Unreserve)."""
        start = time.perf_counter()
        status = SUCCESS
        for name, fn in self._points.reserve:
            s = fn(state, pod, node_name)
            if s.code is not Code.SUCCESS:
                if s.code in _REJECTED:
                    status = s.with_plugin(name)
                else:
                    status = _error(f'running Reserve plugin "{name}"', name, s)
                break
        self._observed(RESERVE, status, start)
        return status

    def run_reserve_plugins_unreserve(
        self, state: CycleState, pod: types_pb2.Pod, node_name: str
    ) -> None:
        """Unreserve on every Reserve plugin, in reverse order; failures are logged."""
        start = time.perf_counter()
        for _, fn in self._points.unreserve:
            fn(state, pod, node_name)
        self._observed(UNRESERVE, SUCCESS, start)

    def run_permit_plugins(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        """Success, a rejection (naming the plugin), an Error, or Wait: then the pod is in the
        waiting pods map, with each waiting plugin's timeout (at most 15 minutes)."""
        start = time.perf_counter()
        status = SUCCESS
        waits: dict[str, float] = {}
        for name, fn in self._points.permit:
            s, timeout = fn(state, pod, node_name)
            if s.code is Code.SUCCESS:
                continue
            if s.code in _REJECTED:
                status = s.with_plugin(name)
                break
            if s.code is Code.WAIT:
                waits[name] = min(float(timeout), MAX_PERMIT_TIMEOUT)
                continue
            status = _error(f'running Permit plugin "{name}"', name, s)
            break
        else:
            if waits:
                if state.pod_group_scheduling_cycle is None:
                    # (a pod-group cycle only asks whether the pod would wait)
                    self._waiting_pods.add(WaitingPod(pod, waits, self._clock))
                status = Status(
                    Code.WAIT,
                    (
                        "one or more plugins asked to wait and no plugin rejected pod "
                        f'"{pod.metadata.name}"',
                    ),
                )
        self._observed(PERMIT, status, start)
        return status

    def will_wait_on_permit(self, pod: types_pb2.Pod) -> bool:
        return self._waiting_pods.get(pod.metadata.uid) is not None

    async def wait_on_permit(self, pod: types_pb2.Pod) -> Status:
        """Success at once if the pod is not waiting; otherwise waits until every waiting
        plugin allowed it (Success), someone rejected it or a timeout expired (Unschedulable,
        naming the plugin). The pod leaves the waiting map either way."""
        uid = pod.metadata.uid
        wp = self._waiting_pods.get(uid)
        if wp is None:
            return SUCCESS
        try:
            s = await wp.wait()
        finally:
            self._waiting_pods.remove(uid)
        if s.code is Code.SUCCESS or s.code in _REJECTED:
            return s
        return _error("waiting on permit for pod", s.plugin, s)

    # ------------------------------------------------------------ binding

    def run_pre_bind_pre_flights(
        self, state: CycleState, pod: types_pb2.Pod, node_name: str
    ) -> Status:
        """Success if at least one PreBind plugin will do work for the pod, Skip if none will,
        an Error if one fails or answers anything else. Plugins that Skip are recorded in
        state.skip_pre_bind_plugins so that run_pre_bind_plugins does not run them."""
        start = time.perf_counter()
        skip: set[str] = set()
        status: Status = SKIP
        for name, fn in self._points.pre_bind_pre_flight:
            s = fn(state, pod, node_name)
            if s.code is Code.SUCCESS:
                status = SUCCESS
            elif s.code is Code.SKIP:
                skip.add(name)
            elif s.code is Code.ERROR:
                status = _error(f'running PreBindPreFlight "{name}"', name, s)
                break
            else:
                status = Status(
                    Code.ERROR,
                    (
                        f"PreBindPreFlight {name} returned {s.code_name()!r}, which is "
                        "unsupported. It is supposed to return Success, Skip, or Error status",
                    ),
                    name,
                )
                break
        else:
            state.skip_pre_bind_plugins = skip
        self._observed(PRE_BIND_PRE_FLIGHT, status, start)
        return status

    async def run_pre_bind_plugins(
        self, state: CycleState, pod: types_pb2.Pod, node_name: str
    ) -> Status:
        """Every PreBind plugin (except those whose pre-flight skipped) must succeed. A pod
        registered in PreBind (`add_pod_in_pre_bind`, 1.36+) runs them in its cancel scope: a
        preemption that cancels it fails the plugin at work with "context canceled" (what
        upstream's plugins return from their cancelled context); once every plugin succeeded
        the pod is marked prebound, and a cancellation that came first fails it the same way."""
        start = time.perf_counter()
        status = SUCCESS
        skip = state.skip_pre_bind_plugins
        entry = self._pods_in_pre_bind.get(pod.metadata.uid)
        scope = entry.scope if entry is not None else anyio.CancelScope()
        current = ""
        try:
            with scope:
                for name, fn in self._points.pre_bind:
                    if name in skip:
                        continue
                    current = name
                    s = await fn(state, pod, node_name)
                    if s.code is not Code.SUCCESS:
                        if s.code in _REJECTED:
                            status = s.with_plugin(name)
                        else:
                            status = _error(f'running PreBind plugin "{name}"', name, s)
                        return status
            if entry is not None and (scope.cancelled_caught or not entry.mark_prebound()):
                status = _error(
                    f'running PreBind plugin "{current}"',
                    current,
                    Status(Code.ERROR, (CONTEXT_CANCELED,)),
                )
            return status
        finally:
            self._observed(PRE_BIND, status, start)

    async def run_bind_plugins(
        self, state: CycleState, pod: types_pb2.Pod, node_name: str
    ) -> Status:
        """Bind plugins in order until one does not Skip; Skip if all do (or there are none)."""
        start = time.perf_counter()
        status: Status = SKIP
        try:
            for name, fn in self._points.bind:
                s = await fn(state, pod, node_name)
                if s.code is Code.SKIP:
                    status = s
                    continue
                if s.code is Code.SUCCESS:
                    status = s.with_plugin(name)
                elif s.code in _REJECTED:
                    status = s.with_plugin(name)
                else:
                    status = _error(f'running Bind plugin "{name}"', name, s)
                return status
            return status
        finally:
            self._observed(BIND, status, start)

    def run_post_bind_plugins(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> None:
        """Informational; failures are logged."""
        start = time.perf_counter()
        for _, fn in self._points.post_bind:
            fn(state, pod, node_name)
        self._observed(POST_BIND, SUCCESS, start)

    def __repr__(self) -> str:
        return f"Framework({self._profile_name})"


def _wrap(plugin: str, detail: Status | BaseException) -> Status:
    """upstream's `plugin %q failed with: %w` inner message, as a Status to wrap again."""
    if isinstance(detail, BaseException):
        message = str(detail) or type(detail).__name__
        return Status(Code.ERROR, (f'plugin "{plugin}" failed with: {message}',), plugin, detail)
    return Status(
        Code.ERROR,
        (f'plugin "{plugin}" failed with: {detail.message() or detail.code_name()}',),
        plugin,
        detail.error,
    )


if TYPE_CHECKING:
    # The Framework is the Handle plugins get (checked by mypy).
    from kemu.scheduling.interface import Handle

    _framework_is_a_handle: type[Handle] = Framework


__all__ = [
    "MAX_PERMIT_TIMEOUT",
    "NO_OPTIONS",
    "ExtensionPointObserver",
    "Framework",
    "FrameworkOptions",
    "LessFunc",
    "NodePluginScores",
    "fast_observer",
    "observer_from_histogram",
]


_P = TypeVar("_P")


def _as(plugin: Plugin, proto: type[_P], point: str) -> _P:
    if not isinstance(plugin, proto):
        raise ValueError(f'plugin "{plugin.name()}" does not extend {point} plugin')
    return plugin
