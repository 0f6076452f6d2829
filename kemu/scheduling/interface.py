"""The scheduling framework's extension points (upstream framework/interface.go).

One Protocol per extension point; a plugin class subclasses the protocols it implements and
has a `NAME`. Per-node hot paths (PreFilter, Filter, PreScore, Score, Reserve, Permit,
PreBindPreFlight) are synchronous and do no I/O; PostFilter, PreBind and Bind are async.

Semantics, as upstream:
- PreEnqueue: all must succeed for the pod to enter activeQ; otherwise it waits "gated".
- QueueSort: exactly one plugin orders activeQ.
- PreFilter: runs once per cycle; may return a PreFilterResult narrowing the candidate nodes;
  Skip means its Filter is skipped for this pod; a rejection marks every node with it.
  PreFilterExtensions.add_pod/remove_pod update the plugin's CycleState when a pod is added to
  or removed from a node in a what-if (nominated pods, preemption).
- Filter: all must succeed for a node to be feasible; the first rejection wins.
- PostFilter: runs when no node is feasible (preemption); the first that succeeds or returns
  UnschedulableAndUnresolvable ends the chain.
- PreScore / Score / NormalizeScore: Skip at PreScore skips that plugin's Score; scores are
  0..100 per plugin after normalisation, multiplied by the plugin's weight and summed.
- Reserve / Unreserve: Reserve in order; on failure Unreserve runs for all in reverse order.
- Permit: Success, Wait (with a timeout; the pod waits in the binding cycle until allowed or
  rejected) or a rejection.
- PreBindPreFlight: Success when the plugin will do work at PreBind, Skip when it will not
  (KEP-5278 uses this to decide whether to set the expected NNN).
- PreBind / Bind / PostBind: PreBind all must succeed; the first Bind that does not Skip binds;
  PostBind is informational.
"""

from __future__ import annotations

import builtins
import random
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, TypeVar, runtime_checkable

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.scheduling.events import ClusterEventWithHint
from kemu.scheduling.status import Code, Status
from kemu.scheduling.types import (
    NodeInfo,
    NodeScore,
    PodInfo,
    PostFilterResult,
    PreFilterResult,
    Resource,
)

if TYPE_CHECKING:
    from kemu.component.clock import Clock
    from kemu.component.featuregate import FeatureGates
    from kemu.scheduling.preemption import Candidate


# ---------------------------------------------------------------- cycle state


class StateData(Protocol):
    """What a plugin keeps in CycleState; `clone` must copy whatever add_pod/remove_pod mutate."""

    def clone(self) -> StateData: ...


# A Filter plugin's bound `filter` method.
FilterFn = Callable[["CycleState", types_pb2.Pod, NodeInfo], Status]


class CycleState:
    """Per-cycle plugin state. `clone()` for preemption's what-if runs."""

    __slots__ = (
        "_data",
        "filter_plan",
        "skip_filter_plugins",
        "skip_pre_bind_plugins",
        "skip_score_plugins",
    )

    def __init__(self) -> None:
        self._data: dict[str, StateData] = {}
        self.skip_filter_plugins: set[str] = set()
        # The runtime's Filter plugins not skipped at PreFilter, computed once per cycle.
        self.filter_plan: list[tuple[str, FilterFn]] | None = None
        self.skip_score_plugins: set[str] = set()
        # PreBind plugins whose PreBindPreFlight returned Skip: RunPreBindPlugins skips them.
        self.skip_pre_bind_plugins: set[str] = set()

    def read(self, key: str) -> StateData | None:
        return self._data.get(key)

    def write(self, key: str, value: StateData) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        c = CycleState()
        c._data = {k: v.clone() for k, v in self._data.items()}
        c.skip_filter_plugins = set(self.skip_filter_plugins)
        c.filter_plan = self.filter_plan
        c.skip_score_plugins = set(self.skip_score_plugins)
        c.skip_pre_bind_plugins = set(self.skip_pre_bind_plugins)
        return c


class _CyclePodInfo:
    """The PodInfo of the cycle's pod, computed once per cycle (`cycle_pod_info`)."""

    __slots__ = ("info", "pod")

    def __init__(self, pod: types_pb2.Pod, info: PodInfo) -> None:
        self.pod = pod
        self.info = info

    def clone(self) -> _CyclePodInfo:
        return self  # PodInfo is never mutated


CYCLE_POD_INFO_KEY: Final = "kemu/CyclePodInfo"


def cycle_pod_info(state: CycleState, pod: types_pb2.Pod) -> PodInfo:
    """`PodInfo(pod)` (the default counting rules), shared by the plugins of one cycle: its
    requests and terms are computed once instead of in each plugin's PreFilter and PreScore.
    Never mutate it (clone the Resources to change them)."""
    d = state.read(CYCLE_POD_INFO_KEY)
    if isinstance(d, _CyclePodInfo) and d.pod is pod:
        return d.info
    info = PodInfo(pod)
    state.write(CYCLE_POD_INFO_KEY, _CyclePodInfo(pod, info))
    return info


def set_cycle_pod_info(state: CycleState, info: PodInfo) -> None:
    """Makes `info` the cycle's PodInfo for `info.pod` (what `cycle_pod_info` returns), for a
    caller that has one already: it must equal `PodInfo(info.pod)` (the default counting
    rules)."""
    state.write(CYCLE_POD_INFO_KEY, _CyclePodInfo(info.pod, info))


def cycle_pod_requests(state: CycleState, pod: types_pb2.Pod) -> tuple[Resource, Resource]:
    """`types.pod_requests(pod)` through `cycle_pod_info` (copies the caller may change)."""
    info = cycle_pod_info(state, pod)
    return info.requests.clone(), info.non_zero_requests.clone()


# ---------------------------------------------------------------- queue view


@dataclass(eq=False)
class QueuedPodInfo:
    """A pod in the scheduling queue, with its scheduling history."""

    pod_info: PodInfo
    timestamp: float  # when it was last added to the queue (for ordering)
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    gating_plugin: str = ""

    @property
    def pod(self) -> types_pb2.Pod:
        return self.pod_info.pod


class NodeToStatus:
    """Why each node was rejected; nodes not listed have `absent` (upstream NodeToStatus)."""

    def __init__(self, absent: Status | None = None) -> None:
        self._map: dict[str, Status] = {}
        self.absent = absent or Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        # True when PreFilter rejected the pod: `absent` then holds that status for every node.
        self.pre_filter_rejected = False

    def set(self, node: str, status: Status) -> None:
        self._map[node] = status

    def get(self, node: str) -> Status:
        return self._map.get(node, self.absent)

    def items(self) -> Iterator[tuple[str, Status]]:
        return iter(self._map.items())

    def __len__(self) -> int:
        return len(self._map)

    def nodes_for_status_code(self, lister: NodeInfoLister, code: Code) -> list[NodeInfo]:
        """The nodes whose status has `code` (absent nodes have `absent`'s), in the order they
        were rejected, then the snapshot's order for absent ones (upstream
        NodesForStatusCode). Nodes no longer in the snapshot are left out."""
        if self.absent.code == code:
            return [n for n in lister.list() if self.get(n.name).code == code]
        out: list[NodeInfo] = []
        for name, status in self._map.items():
            if status.code == code:
                node = lister.get(name)
                if node is not None:
                    out.append(node)
        return out


class FitError(Exception):
    """No node fits (upstream framework.FitError); its text is the FailedScheduling message:
    `0/N nodes are available: <sorted histogram of reasons>.` with the PostFilter message
    appended as ` <message>.` Nodes without a status of their own count with `absent`'s
    reasons."""

    def __init__(
        self,
        pod: types_pb2.Pod,
        num_all_nodes: int,
        statuses: NodeToStatus,
        *,
        pre_filter_msg: str = "",
        unschedulable_plugins: set[str] | None = None,
    ) -> None:
        super().__init__()
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.statuses = statuses
        self.pre_filter_msg = pre_filter_msg
        self.post_filter_msg = ""
        self.unschedulable_plugins = set(unschedulable_plugins or ())

    def __str__(self) -> str:
        msg = f"0/{self.num_all_nodes} nodes are available:"
        if self.pre_filter_msg:
            msg += f" {self.pre_filter_msg}."
        else:
            histogram: Counter[str] = Counter()
            for _, status in self.statuses.items():
                for reason in status.reasons:
                    histogram[reason] += 1
            absent = self.num_all_nodes - len(self.statuses)
            if absent > 0:
                for reason in self.statuses.absent.reasons:
                    histogram[reason] += absent
            reasons = sorted(f"{count} {reason}" for reason, count in histogram.items())
            if reasons:
                msg += " " + ", ".join(reasons) + "."
        if self.post_filter_msg:
            msg += f" {self.post_filter_msg}."
        return msg


# ---------------------------------------------------------------- listers


class NodeInfoLister(Protocol):
    def list(self) -> list[NodeInfo]: ...

    def get(self, name: str) -> NodeInfo | None: ...

    def have_pods_with_affinity_list(self) -> builtins.list[NodeInfo]: ...

    def have_pods_with_required_anti_affinity_list(self) -> builtins.list[NodeInfo]: ...


class SharedLister(Protocol):
    """The snapshot of one scheduling cycle."""

    def node_infos(self) -> NodeInfoLister: ...


# ---------------------------------------------------------------- plugins


@runtime_checkable
class Plugin(Protocol):
    NAME: str

    def name(self) -> str: ...


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: types_pb2.Pod) -> Status: ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool: ...


@runtime_checkable
class EnqueueExtensions(Protocol):
    def events_to_register(self) -> list[ClusterEventWithHint]: ...


class PreFilterExtensions(Protocol):
    def add_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status: ...

    def remove_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]: ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status: ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    async def post_filter(
        self, state: CycleState, pod: types_pb2.Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]) -> Status: ...


class ScoreExtensions(Protocol):
    def normalize_score(
        self, state: CycleState, pod: types_pb2.Pod, scores: list[NodeScore]
    ) -> tuple[list[NodeScore], Status]: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    """A plugin may also define `score_nodes(state, pod, nodes) -> (list[int], Status)`, the
    scores of all `nodes` in order, which the runtime then calls once per cycle instead of
    `score` per node (a kemu extension: same results, less per-node call overhead)."""

    def score(
        self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo
    ) -> tuple[int, Status]: ...

    def score_extensions(self) -> ScoreExtensions | None: ...


@runtime_checkable
class BatchScorePlugin(Protocol):
    """kemu's batch form of Score (see ScorePlugin): the scores of all `nodes` in order."""

    def score_nodes(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[list[int], Status]: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(
        self, state: CycleState, pod: types_pb2.Pod, node_name: str
    ) -> tuple[Status, float]: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    def pre_bind_pre_flight(
        self, state: CycleState, pod: types_pb2.Pod, node_name: str
    ) -> Status: ...

    async def pre_bind(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    async def bind(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> None: ...


# The extension points as spelled in KubeSchedulerConfiguration, in the order a pod meets them,
# and the protocol a plugin implements to serve each (upstream's []FilterPlugin etc. lists).
EXTENSION_POINTS: Final[Mapping[str, type]] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}


def _protocol_methods(proto: type) -> frozenset[str]:
    """The methods `proto` declares beyond Plugin's."""
    names: set[str] = set()
    for base in proto.__mro__:
        if base in (Plugin, Protocol, object, Generic):
            continue
        names.update(n for n, v in vars(base).items() if callable(v) and not n.startswith("_"))
    return frozenset(names)


_POINT_METHODS: Final = {
    point: _protocol_methods(proto) for point, proto in EXTENSION_POINTS.items()
}


def implemented_points(cls: type) -> frozenset[str]:
    """The extension points a plugin class implements: those whose protocol's methods it has.
    (A class check, for profiles built before any plugin exists; the runtime checks each
    instance with isinstance.)"""
    return frozenset(
        point
        for point, methods in _POINT_METHODS.items()
        if all(callable(getattr(cls, m, None)) for m in methods)
    )


# ---------------------------------------------------------------- handle


class WaitingPod(Protocol):
    """A pod held at Permit in its binding cycle."""

    @property
    def pod(self) -> types_pb2.Pod: ...

    def allow(self, plugin: str) -> None: ...

    def reject(self, plugin: str, message: str) -> None: ...

    def pending_plugins(self) -> list[str]: ...


class PodNominator(Protocol):
    """The scheduler's in-memory nominations (reference §3.3): kemu.scheduling.nominator."""

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...


class EventRecorder(Protocol):
    """Events about pods (upstream's events.k8s.io recorder: `related` is a second object
    the event is about, e.g. the preemptor of a Preempted event)."""

    def event(
        self,
        obj: types_pb2.Pod,
        event_type: str,
        reason: str,
        action: str,
        message: str,
        *,
        related: types_pb2.Pod | None = None,
    ) -> None: ...


class NoEvents:
    """An EventRecorder that records nothing (a framework without a recorder, a benchmark
    without the scheduler's events)."""

    def event(
        self,
        obj: types_pb2.Pod,
        event_type: str,
        reason: str,
        action: str,
        message: str,
        *,
        related: types_pb2.Pod | None = None,
    ) -> None:
        return None


class SchedulingApi(Protocol):
    """The API calls the library's plugins make: only DefaultBinder's pods/binding (the
    preemption executor, which writes to victims, is the scheduler's own). The library never
    imports a client: the scheduler process passes its kemu.client.Client, which has this
    method (and more); simulations pass none."""

    async def bind(
        self,
        namespace: str,
        name: str,
        node_name: str,
        *,
        annotations: Mapping[str, str] | None = None,
        uid: str = "",
        resource_version: str = "",
    ) -> None: ...


# ---------------------------------------------------------------- informers and metrics
# What plugins need of the scheduler's informers and metrics, declared here so that the library
# names no client and no prometheus: kemu.client's InformerFactory and scheduler.metrics'
# SchedulerMetrics satisfy these structurally.

M = TypeVar("M", bound=Message)
M_co = TypeVar("M_co", bound=Message, covariant=True)
M_contra = TypeVar("M_contra", bound=Message, contravariant=True)


class ObjectLister(Protocol[M_co]):
    """An informer's cache: the current copy of an object, or of many (read only)."""

    def get(self, name: str, namespace: str = "") -> M_co | None: ...

    def list(self, namespace: str | None = None) -> Sequence[M_co]: ...


class ObjectEventHandler(Protocol[M_contra]):
    def on_add(self, obj: M_contra) -> None: ...

    def on_update(self, old: M_contra, new: M_contra) -> None: ...

    def on_delete(self, obj: M_contra) -> None: ...


class SharedInformer(Protocol[M_co]):
    @property
    def lister(self) -> ObjectLister[M_co]: ...

    def add_event_handler(self, handler: ObjectEventHandler[M_co]) -> None: ...


class InformerFactory(Protocol):
    def informer(
        self,
        kind: type[M],
        *,
        namespace: str = "",
        label_selector: str = "",
        field_selector: str = "",
    ) -> SharedInformer[M]: ...


class CounterMetric(Protocol):
    def inc(self, amount: float = 1) -> None: ...


class ObserverMetric(Protocol):
    def observe(self, amount: float) -> None: ...


class LabelledCounter(Protocol):
    def labels(self, *values: str) -> CounterMetric: ...


class LabelledObserver(Protocol):
    def labels(self, *values: str) -> ObserverMetric: ...


class PluginMetrics(Protocol):
    """The scheduler's metrics that plugins record (upstream pkg/scheduler/metrics); the
    preemption executor records the others in the scheduler process."""

    @property
    def preemption_attempts(self) -> CounterMetric: ...


class PreemptionExecutor(Protocol):
    """Carries out a preemption the dry run chose (upstream preemption.Executor): for each
    victim not already being deleted, reject it if it waits at Permit, else set DisruptionTarget
    and DELETE it gracefully; a Preempted event each; and clear the nominations of pods of
    strictly lower priority nominated to the node (reference §3.8). Provided by the scheduler
    process through `Handle.preemption_executor()`; absent in simulations, where PostFilter
    only reports the node it would nominate. `plugin` names the preemption plugin (a waiting
    victim is rejected in its name)."""

    async def prepare_candidate(
        self, plugin: str, candidate: Candidate, preemptor: types_pb2.Pod
    ) -> Status:
        """Preempts now: Success once every deletion is issued and the nominations cleared;
        an Error status if an API call on a victim failed."""
        ...

    def prepare_candidate_async(
        self, plugin: str, candidate: Candidate, preemptor: types_pb2.Pod
    ) -> None:
        """Starts the preemption in a background task that outlives the cycle
        (SchedulerAsyncPreemption); on failure the preemptor is activated again."""
        ...

    def is_pod_running_preemption(self, uid: str) -> bool:
        """Whether the pod's asynchronous preemption has not yet issued every deletion: the
        plugin then holds the pod at PreEnqueue."""
        ...


# Builds a framework's executor from its Handle (the Handle gives it the waiting pods, the
# nominator, Activate and the background task group), as upstream's executor is built from
# framework.Handle.
PreemptionExecutorFactory = Callable[["Handle"], PreemptionExecutor]


class Handle(Protocol):
    """What plugins can reach: the cycle's snapshot, the API, the other plugins' runner."""

    @property
    def client(self) -> SchedulingApi: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def gates(self) -> FeatureGates: ...

    @property
    def event_recorder(self) -> EventRecorder: ...

    def snapshot_shared_lister(self) -> SharedLister: ...

    def nominator(self) -> PodNominator | None: ...

    def informer_factory(self) -> InformerFactory | None:
        """The scheduler's informers, for plugins that watch objects (None in simulations)."""
        ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status: ...

    def run_filter_plugins(
        self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo
    ) -> Status: ...

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo
    ) -> Status: ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def preemption_executor(self) -> PreemptionExecutor | None:
        """The scheduler's preemption executor; None in simulations (nothing is written)."""
        ...

    def iterate_over_waiting_pods(self) -> Iterable[WaitingPod]: ...

    def reject_waiting_pod(self, uid: str) -> bool: ...

    def activate(self, pods: Iterable[types_pb2.Pod]) -> None:
        """Moves the pods from the unschedulable pool or backoffQ to activeQ (upstream
        Handle.Activate); a no-op without a queue (simulations)."""
        ...

    def spawn(self, fn: Callable[[], Coroutine[Any, Any, None]], name: str) -> None:
        """Runs `fn` in the scheduler's background task group, outliving the cycle that
        started it (upstream's goroutines, e.g. asynchronous preemption)."""
        ...

    @property
    def metrics(self) -> PluginMetrics | None:
        """The scheduler's metrics (scheduler.metrics.SchedulerMetrics), None in simulations."""
        ...

    @property
    def rng(self) -> random.Random:
        """The scheduler's random source (seeded by --seed), for plugins' random choices."""
        ...


# The scheduler's pod informer watches the pods that have not finished (upstream's field
# selector); plugins that need the pod lister ask the informer factory for this informer.
SCHEDULER_POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"

# A plugin factory: args from the profile's pluginConfig, and the framework handle.
PluginArgs = Mapping[str, Any]


class PluginFactory(Protocol):
    def __call__(self, args: PluginArgs, handle: Handle) -> Plugin: ...
