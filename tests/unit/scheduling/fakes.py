"""Fake plugins for the framework runtime and configuration tests.

A fake's behaviour comes from its pluginConfig args: `args[point]` is a Status (or a value) or a
callable computing it; every call is appended to `args["calls"]` (a shared list) as
"<plugin>.<method>", so tests can check order. Each fake class is a factory: `fake(Cls, name)`
makes a subclass with that NAME, which the registry maps the name to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from kemu.api.v1 import types_pb2
from kemu.scheduling.config import API_VERSION, KIND, config_from_dict
from kemu.scheduling.interface import (
    BindPlugin,
    CycleState,
    FilterPlugin,
    Handle,
    NodeToStatus,
    PermitPlugin,
    PluginArgs,
    PluginFactory,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueuedPodInfo,
    QueueSortPlugin,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
)
from kemu.scheduling.plugins.registry import Registry
from kemu.scheduling.profile import Profile
from kemu.scheduling.status import SUCCESS, Status
from kemu.scheduling.types import (
    NodeInfo,
    NodeScore,
    PodInfo,
    PostFilterResult,
    PreFilterResult,
    pod_priority,
)


class Fake:
    NAME = "Fake"

    def __init__(self, args: PluginArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.calls: list[str] = args.get("calls", [])

    def name(self) -> str:
        return self.NAME

    def _do(self, key: str, *params: Any, default: Any = SUCCESS) -> Any:
        self.calls.append(f"{self.NAME}.{key}")
        value = self.args.get(key, default)
        if callable(value) and not isinstance(value, Status):
            return value(*params)
        return value


class FakeQueueSort(Fake, QueueSortPlugin):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return pod_priority(a.pod) > pod_priority(b.pod)


class FakeBinder(Fake, BindPlugin):
    async def bind(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        return cast(Status, self._do("bind", pod, node_name))


class FakePreEnqueue(Fake, PreEnqueuePlugin):
    def pre_enqueue(self, pod: types_pb2.Pod) -> Status:
        return cast(Status, self._do("pre_enqueue", pod))


class FakeFilter(Fake, FilterPlugin):
    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        return cast(Status, self._do("filter", state, pod, node))


class FakePreFilter(Fake, PreFilterPlugin, FilterPlugin, PreFilterExtensions):
    """PreFilter + Filter + AddPod/RemovePod extensions."""

    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        status = self._do("pre_filter", state, pod, nodes)
        result = self.args.get("pre_filter_result")
        return result, status

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        return cast(Status, self._do("filter", state, pod, node))

    def add_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status:
        return cast(Status, self._do("add_pod", state, pod, pod_to_add, node))

    def remove_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status:
        return cast(Status, self._do("remove_pod", state, pod, pod_to_remove, node))


class FakePostFilter(Fake, PostFilterPlugin):
    async def post_filter(
        self, state: CycleState, pod: types_pb2.Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        status = self._do("post_filter", state, pod, statuses)
        return self.args.get("post_filter_result"), status


class FakeScore(Fake, PreScorePlugin, ScorePlugin, ScoreExtensions):
    """PreScore + Score; NormalizeScore when args has "normalize"."""

    def pre_score(self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]) -> Status:
        return cast(Status, self._do("pre_score", state, pod, nodes))

    def score(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> tuple[int, Status]:
        value = self._do("score", node, default=0)
        if isinstance(value, tuple):
            return cast(tuple[int, Status], value)
        return int(value), SUCCESS

    def score_extensions(self) -> ScoreExtensions | None:
        return self if "normalize" in self.args else None

    def normalize_score(
        self, state: CycleState, pod: types_pb2.Pod, scores: list[NodeScore]
    ) -> tuple[list[NodeScore], Status]:
        return cast(tuple[list[NodeScore], Status], self._do("normalize", scores))


class FakeBatchScore(FakeScore):
    """Scores all nodes in one score_nodes call (args "score_nodes": nodes -> list or status)."""

    def score_nodes(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[list[int], Status]:
        value = self._do("score_nodes", nodes)
        if isinstance(value, Status):
            return [], value
        return list(value), SUCCESS


class FakeFilterScore(FakePreFilter, PreScorePlugin, ScorePlugin):
    """PreFilter, Filter, PreScore and Score (like NodeResourcesFit)."""

    def pre_score(self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]) -> Status:
        return cast(Status, self._do("pre_score", state, pod, nodes))

    def score(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> tuple[int, Status]:
        return int(self._do("score", node, default=0)), SUCCESS

    def score_extensions(self) -> ScoreExtensions | None:
        return None


class FakeReserve(Fake, ReservePlugin):
    def reserve(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        return cast(Status, self._do("reserve", pod, node_name))

    def unreserve(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> None:
        self._do("unreserve", pod, node_name, default=None)


class FakePermit(Fake, PermitPlugin):
    def permit(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> tuple[Status, float]:
        status = self._do("permit", pod, node_name)
        return status, float(self.args.get("timeout", 0.0))


class FakePreBind(Fake, PreBindPlugin):
    def pre_bind_pre_flight(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        return cast(Status, self._do("pre_flight", pod, node_name))

    async def pre_bind(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        return cast(Status, self._do("pre_bind", pod, node_name))


class FakePostBind(Fake, PostBindPlugin):
    def post_bind(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> None:
        self._do("post_bind", pod, node_name, default=None)


def fake(cls: type[Fake], name: str) -> PluginFactory:
    """A factory (a subclass of `cls`) for a plugin called `name`."""
    return cast(PluginFactory, type(name, (cls,), {"NAME": name}))


def registry(**plugins: type[Fake]) -> Registry:
    """A registry with Sort and Binder (every profile needs them) and the given fakes."""
    out: Registry = {"Sort": fake(FakeQueueSort, "Sort"), "Binder": fake(FakeBinder, "Binder")}
    for name, cls in plugins.items():
        out[name] = fake(cls, name)
    return out


def make_profile(
    reg: Registry,
    multi_point: Iterable[str | tuple[str, int]] = (),
    *,
    points: Mapping[str, Any] | None = None,
    args: Mapping[str, Mapping[str, Any]] | None = None,
    calls: list[str] | None = None,
) -> Profile:
    """A profile with no default plugins: Sort, Binder and `multi_point` (name or (name,
    weight)) enabled by multiPoint, plus the `points` plugin sets; every plugin gets `calls`."""
    enabled: list[dict[str, Any]] = [{"name": "Sort"}, {"name": "Binder"}]
    for entry in multi_point:
        if isinstance(entry, tuple):
            enabled.append({"name": entry[0], "weight": entry[1]})
        else:
            enabled.append({"name": entry})
    plugins: dict[str, Any] = {"multiPoint": {"enabled": enabled, "disabled": [{"name": "*"}]}}
    plugins.update(points or {})
    shared = calls if calls is not None else []
    plugin_config = [
        {"name": name, "args": {"calls": shared, **(args or {}).get(name, {})}} for name in reg
    ]
    data = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "profiles": [{"schedulerName": "test", "plugins": plugins, "pluginConfig": plugin_config}],
    }
    return config_from_dict(data, reg).profiles[0]


class FakeNominator:
    def __init__(self, nominated: Mapping[str, list[PodInfo]] | None = None) -> None:
        self.nominated = dict(nominated or {})

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self.nominated.get(node_name, []))
