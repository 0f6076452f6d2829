"""The plugins of one profile per extension point, as the runtime runs them (kemu's split of
upstream's frameworkImpl construction, pkg/scheduler/framework/runtime/framework.go
NewFramework): each point's (name, bound method) list, checked against the point's protocol
and bound once (no attribute lookups in hot loops), every method wrapped by the one guard that
turns a plugin's exception into an Error status naming the plugin (`guarded`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, ParamSpec, TypeVar

from kemu.api.v1 import types_pb2
from kemu.machinery.keys import object_key
from kemu.scheduling.interface import (
    BatchScorePlugin,
    BindPlugin,
    CycleState,
    FilterFn,
    FilterPlugin,
    NodeToStatus,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueuedPodInfo,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from kemu.scheduling.status import Code, Status
from kemu.scheduling.types import NodeInfo, NodeScore, PodInfo, PostFilterResult, PreFilterResult

logger = logging.getLogger(__name__)

__all__ = [
    "BIND",
    "FILTER",
    "PERMIT",
    "POST_BIND",
    "POST_FILTER",
    "PRE_BIND",
    "PRE_BIND_PRE_FLIGHT",
    "PRE_ENQUEUE",
    "PRE_FILTER",
    "PRE_SCORE",
    "RESERVE",
    "SCORE",
    "UNRESERVE",
    "PointPlugins",
    "guarded",
    "guarded_async",
]

# Upstream's extension_point label values (pkg/scheduler/metrics).
PRE_ENQUEUE: Final = "PreEnqueue"
PRE_FILTER: Final = "PreFilter"
FILTER: Final = "Filter"
POST_FILTER: Final = "PostFilter"
PRE_SCORE: Final = "PreScore"
SCORE: Final = "Score"
RESERVE: Final = "Reserve"
UNRESERVE: Final = "Unreserve"
PERMIT: Final = "Permit"
PRE_BIND_PRE_FLIGHT: Final = "PreBindPreFlight"
PRE_BIND: Final = "PreBind"
BIND: Final = "Bind"
POST_BIND: Final = "PostBind"

LessFunc = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
# The bound extension-point methods the runtime keeps per point.
PreEnqueueFn = Callable[[types_pb2.Pod], Status]
PreFilterFn = Callable[
    [CycleState, types_pb2.Pod, list[NodeInfo]], tuple[PreFilterResult | None, Status]
]
PostFilterFn = Callable[
    [CycleState, types_pb2.Pod, NodeToStatus], Awaitable[tuple[PostFilterResult | None, Status]]
]
NodesFn = Callable[[CycleState, types_pb2.Pod, list[NodeInfo]], Status]
ScoreFn = Callable[[CycleState, types_pb2.Pod, NodeInfo], tuple[int, Status]]
ScoreNodesFn = Callable[[CycleState, types_pb2.Pod, list[NodeInfo]], tuple[list[int], Status]]
NodeNameFn = Callable[[CycleState, types_pb2.Pod, str], Status]
UnreserveFn = Callable[[CycleState, types_pb2.Pod, str], None]
PermitFn = Callable[[CycleState, types_pb2.Pod, str], tuple[Status, float]]
AsyncNodeNameFn = Callable[[CycleState, types_pb2.Pod, str], Awaitable[Status]]
PodChangeFn = Callable[[CycleState, types_pb2.Pod, PodInfo, NodeInfo], Status]
NormalizeFn = Callable[[CycleState, types_pb2.Pod, list[NodeScore]], tuple[list[NodeScore], Status]]
P = TypeVar("P", bound=Plugin)
R = TypeVar("R")
Args = ParamSpec("Args")


def _plugin_error(plugin: str, err: Exception) -> Status:
    """The Error status an exception from `plugin` becomes: its message (or its type's name)
    and the exception itself, naming the plugin. The runner then handles it as any Error the
    plugin returned: wrapped in the point's context (`running "X" filter plugin: <error>`)."""
    return Status(Code.ERROR, (str(err) or type(err).__name__,), plugin, err)


def _pod_of(args: tuple[object, ...]) -> str:
    """The pod a plugin call was about, for the log line of its failure."""
    pod = next((a for a in args if isinstance(a, types_pb2.Pod)), None)
    return "" if pod is None else object_key(pod)


def guarded(
    point: str, plugin: str, fn: Callable[Args, R], failed: Callable[[Status], R]
) -> Callable[Args, R]:
    """`fn`, a plugin's method at extension point `point`, so that an exception from it (a bug
    in the plugin) is logged and becomes an Error status naming the plugin (`_plugin_error`,
    shaped as the method's result by `failed`) instead of propagating: the one place the
    runtime turns exceptions into Statuses. Every plugin method the Framework runs is wrapped
    once, when the profile is built. Cancellation is not an Exception: it goes through."""

    @functools.wraps(fn)
    def call(*args: Args.args, **kwargs: Args.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except Exception as err:
            logger.exception("%s plugin %s failed for pod %s", point, plugin, _pod_of(args))
            return failed(_plugin_error(plugin, err))

    return call


def guarded_async(
    point: str,
    plugin: str,
    fn: Callable[Args, Awaitable[R]],
    failed: Callable[[Status], R],
) -> Callable[Args, Awaitable[R]]:
    """`guarded` for the asynchronous points (PostFilter, PreBind, Bind)."""

    @functools.wraps(fn)
    async def call(*args: Args.args, **kwargs: Args.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except Exception as err:
            logger.exception("%s plugin %s failed for pod %s", point, plugin, _pod_of(args))
            return failed(_plugin_error(plugin, err))

    return call


def _status(s: Status) -> Status:
    return s


def _none(_: Status) -> None:
    return None


def _with_none(s: Status) -> tuple[None, Status]:
    return None, s


def _with_zero(s: Status) -> tuple[int, Status]:
    return 0, s


def _with_empty(s: Status) -> tuple[list[Any], Status]:
    return [], s


def _permit_failed(s: Status) -> tuple[Status, float]:
    return s, 0.0


def _enabled_at(
    enabled: Mapping[str, Sequence[str]],
    instances: Mapping[str, Plugin],
    point: str,
    proto: type[P],
) -> list[tuple[str, P]]:
    """The plugins enabled at `point`, checked against its protocol `proto`."""
    out: list[tuple[str, P]] = []
    for name in enabled[point]:
        plugin = instances[name]
        if not isinstance(plugin, proto):
            raise ValueError(f'plugin "{name}" does not extend {point} plugin')
        out.append((name, plugin))
    return out


@dataclass(frozen=True, slots=True)
class PointPlugins:
    """Each extension point's plugins of one profile, in the order they run: (name, guarded
    bound method), and the Filter and Score plugins themselves (for their column forms)."""

    pre_enqueue: list[tuple[str, PreEnqueueFn]]
    queue_sort: list[tuple[str, LessFunc]]
    pre_filter: list[tuple[str, PreFilterFn]]
    pre_filter_extensions: list[tuple[str, PodChangeFn, PodChangeFn]]
    """(name, AddPod, RemovePod) of the PreFilter plugins with extensions."""
    filter: list[tuple[str, FilterFn]]
    filter_plugins: list[tuple[str, FilterPlugin]]
    post_filter: list[tuple[str, PostFilterFn]]
    pre_score: list[tuple[str, NodesFn]]
    score: list[tuple[str, ScoreFn]]
    score_plugins: list[tuple[str, ScorePlugin]]
    score_nodes: dict[str, ScoreNodesFn]
    """kemu's optional batch form of Score (see ScorePlugin): one call per plugin per cycle
    instead of one per node, for plugins whose per-node work is a few integer operations."""
    normalize_score: dict[str, NormalizeFn]
    reserve: list[tuple[str, NodeNameFn]]
    unreserve: list[tuple[str, UnreserveFn]]
    """In reverse order of Reserve."""
    permit: list[tuple[str, PermitFn]]
    pre_bind_pre_flight: list[tuple[str, NodeNameFn]]
    pre_bind: list[tuple[str, AsyncNodeNameFn]]
    bind: list[tuple[str, AsyncNodeNameFn]]
    post_bind: list[tuple[str, UnreserveFn]]

    @staticmethod
    def of(enabled: Mapping[str, Sequence[str]], instances: Mapping[str, Plugin]) -> PointPlugins:
        """The lists for `enabled` (plugin names per point, a profile's) over `instances`
        (one per plugin); ValueError when a plugin lacks a point it is enabled at."""
        plugins = functools.partial(_enabled_at, enabled, instances)
        pre_filter = plugins("preFilter", PreFilterPlugin)
        filters = plugins("filter", FilterPlugin)
        score = plugins("score", ScorePlugin)
        reserve = plugins("reserve", ReservePlugin)
        pre_bind = plugins("preBind", PreBindPlugin)
        extensions = [
            (n, ext) for n, p in pre_filter if (ext := p.pre_filter_extensions()) is not None
        ]
        return PointPlugins(
            pre_enqueue=[
                (n, guarded(PRE_ENQUEUE, n, p.pre_enqueue, _status))
                for n, p in plugins("preEnqueue", PreEnqueuePlugin)
            ],
            queue_sort=[(n, p.less) for n, p in plugins("queueSort", QueueSortPlugin)],
            pre_filter=[
                (n, guarded(PRE_FILTER, n, p.pre_filter, _with_none)) for n, p in pre_filter
            ],
            pre_filter_extensions=[
                (
                    n,
                    guarded(PRE_FILTER, n, ext.add_pod, _status),
                    guarded(PRE_FILTER, n, ext.remove_pod, _status),
                )
                for n, ext in extensions
            ],
            filter=[(n, guarded(FILTER, n, p.filter, _status)) for n, p in filters],
            filter_plugins=filters,
            post_filter=[
                (n, guarded_async(POST_FILTER, n, p.post_filter, _with_none))
                for n, p in plugins("postFilter", PostFilterPlugin)
            ],
            pre_score=[
                (n, guarded(PRE_SCORE, n, p.pre_score, _status))
                for n, p in plugins("preScore", PreScorePlugin)
            ],
            score=[(n, guarded(SCORE, n, p.score, _with_zero)) for n, p in score],
            score_plugins=score,
            score_nodes={
                n: guarded(SCORE, n, p.score_nodes, _with_empty)
                for n, p in score
                if isinstance(p, BatchScorePlugin)
            },
            normalize_score={
                n: guarded(SCORE, n, sext.normalize_score, _with_empty)
                for n, p in score
                if (sext := p.score_extensions()) is not None
            },
            reserve=[(n, guarded(RESERVE, n, p.reserve, _status)) for n, p in reserve],
            unreserve=[
                (n, guarded(UNRESERVE, n, p.unreserve, _none)) for n, p in reversed(reserve)
            ],
            permit=[
                (n, guarded(PERMIT, n, p.permit, _permit_failed))
                for n, p in plugins("permit", PermitPlugin)
            ],
            pre_bind_pre_flight=[
                (n, guarded(PRE_BIND_PRE_FLIGHT, n, p.pre_bind_pre_flight, _status))
                for n, p in pre_bind
            ],
            pre_bind=[(n, guarded_async(PRE_BIND, n, p.pre_bind, _status)) for n, p in pre_bind],
            bind=[
                (n, guarded_async(BIND, n, p.bind, _status)) for n, p in plugins("bind", BindPlugin)
            ],
            post_bind=[
                (n, guarded(POST_BIND, n, p.post_bind, _none))
                for n, p in plugins("postBind", PostBindPlugin)
            ],
        )
