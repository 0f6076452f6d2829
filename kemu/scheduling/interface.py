"""The scheduling framework's extension points (upstream framework/interface.go).

One Protocol per extension point; a plugin class subclasses the protocols it implements and
has a `NAME`. Per-node hot paths (PreFilter, Filter, PreScore, Score, Reserve, Permit,
PreBindPreFlight) are synchronous and do no I/O; PostFilter, PreBind and Bind are async.

Each method carries its contract, in kemu's words, as upstream's interface.go does: what each
Status code means at that point, what Skip does, the score range, Unreserve's idempotence,
Permit's Wait, PreBindPreFlight. The runtime (kemu.scheduling.runtime) enforces them: an
exception or an unexpected code becomes an Error status naming the plugin.
"""

from __future__ import annotations

import builtins
import random
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, TypeVar, runtime_checkable

import numpy as np
from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.resources import SCHEDULER_DEFAULTS, PodResourcesOptions
from kemu.scheduling.arrays import IntArray
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
    from kemu.scheduling.dra_manager import DraManager
    from kemu.scheduling.pod_group_state import PodGroupKey, PodGroupStates
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
        "pod_group_scheduling_cycle",
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
        # Set while the pod-group cycle tries the pod with its group (upstream
        # CycleState.SetPodGroupSchedulingCycle): Permit's Wait then parks no waiting pod.
        self.pod_group_scheduling_cycle: object | None = None

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
        c.pod_group_scheduling_cycle = self.pod_group_scheduling_cycle
        return c


class _CyclePodInfo:
    """The PodInfo of the cycle's pod, computed once per cycle (`cycle_pod_info`)."""

    __slots__ = ("counting", "info", "pod")

    def __init__(self, pod: types_pb2.Pod, info: PodInfo, counting: PodResourcesOptions) -> None:
        self.pod = pod
        self.info = info
        self.counting = counting

    def clone(self) -> _CyclePodInfo:
        return self  # PodInfo is never mutated


CYCLE_POD_INFO_KEY: Final = "kemu/CyclePodInfo"


def cycle_pod_info(
    state: CycleState, pod: types_pb2.Pod, counting: PodResourcesOptions | None = None
) -> PodInfo:
    """`PodInfo(pod, counting)`, shared by the plugins of one cycle: its requests and terms
    are computed once instead of in each plugin's PreFilter and PreScore. `counting` is how
    the requesting plugin counts pods (its gates', kemu.component.pod_resources, as upstream
    hands NodeResourcesFit and BalancedAllocation their `feature.Features`); None: a plugin
    that reads no requests (the terms only), which any counting's PodInfo serves (built with
    SCHEDULER_DEFAULTS when there is none yet). Never mutate it (clone the Resources to
    change them)."""
    d = state.read(CYCLE_POD_INFO_KEY)
    if (
        isinstance(d, _CyclePodInfo)
        and d.pod is pod
        and (counting is None or d.counting is counting or d.counting == counting)
    ):
        return d.info
    counting = SCHEDULER_DEFAULTS if counting is None else counting
    info = PodInfo(pod, counting)
    state.write(CYCLE_POD_INFO_KEY, _CyclePodInfo(pod, info, counting))
    return info


def set_cycle_pod_info(state: CycleState, info: PodInfo, counting: PodResourcesOptions) -> None:
    """Makes `info` the cycle's PodInfo for `info.pod` (what `cycle_pod_info` returns), for a
    caller that has one already, built with `counting` (the scheduler's queue: its cache's)."""
    state.write(CYCLE_POD_INFO_KEY, _CyclePodInfo(info.pod, info, counting))


def cycle_pod_requests(
    state: CycleState, pod: types_pb2.Pod, counting: PodResourcesOptions = SCHEDULER_DEFAULTS
) -> tuple[Resource, Resource]:
    """`types.pod_requests(pod, counting)` through `cycle_pod_info` (copies the caller may
    change)."""
    info = cycle_pod_info(state, pod, counting)
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


@dataclass(frozen=True, slots=True)
class StatusBlock:
    """Rejections known in bulk (the batch path's): `nodes[positions[i]]` has
    `table[which[i]]`."""

    nodes: Sequence[NodeInfo]
    positions: IntArray
    which: IntArray
    table: Sequence[Status]


class NodeToStatus:
    """Why each node was rejected; nodes not listed have `absent` (upstream NodeToStatus).

    Rejections the batch path knows in bulk are kept as blocks (`add_block`) and written out
    node by node only when they are read (`get`, `items`, ...): a cycle that finds its node
    among thousands that fail does not name each of them. The count and `plugins` do not
    write them out. A node is given a status once per map."""

    def __init__(self, absent: Status | None = None) -> None:
        self._map: dict[str, Status] = {}
        self._blocks: list[StatusBlock] = []
        self._in_blocks = 0
        self.absent = absent or Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        # True when PreFilter rejected the pod: `absent` then holds that status for every node.
        self.pre_filter_rejected = False

    def set(self, node: str, status: Status) -> None:
        if self._blocks:
            self._write_blocks()  # (in the order the nodes were rejected)
        self._map[node] = status

    def add_block(self, block: StatusBlock) -> None:
        """The nodes of `block`, none with a status yet, after those set so far."""
        self._blocks.append(block)
        self._in_blocks += len(block.positions)

    def _write_blocks(self) -> None:
        out = self._map
        for b in self._blocks:
            nodes, table = b.nodes, b.table
            for i, k in zip(b.positions.tolist(), b.which.tolist(), strict=True):
                out[nodes[i].name] = table[k]
        self._blocks.clear()
        self._in_blocks = 0

    def get(self, node: str) -> Status:
        if self._blocks:
            self._write_blocks()
        return self._map.get(node, self.absent)

    def items(self) -> Iterator[tuple[str, Status]]:
        if self._blocks:
            self._write_blocks()
        return iter(self._map.items())

    def plugins(self) -> builtins.set[str]:
        """The plugins named by the statuses set (not `absent`)."""
        out = {st.plugin for st in self._map.values() if st.plugin}
        for b in self._blocks:
            out.update(p for k in np.unique(b.which).tolist() if (p := b.table[k].plugin))
        return out

    def __len__(self) -> int:
        return len(self._map) + self._in_blocks

    def nodes_for_status_code(self, lister: NodeInfoLister, code: Code) -> list[NodeInfo]:
        """The nodes whose status has `code` (absent nodes have `absent`'s), in the order they
        were rejected, then the snapshot's order for absent ones (upstream
        NodesForStatusCode). Nodes no longer in the snapshot are left out."""
        if self._blocks:
            self._write_blocks()
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

    def reasons(self) -> dict[str, int]:
        """Reason -> the number of nodes that gave it (a PreFilter rejection: every node)."""
        if self.pre_filter_msg:
            return {self.pre_filter_msg: self.num_all_nodes}
        histogram: Counter[str] = Counter()
        for _, status in self.statuses.items():
            for reason in status.reasons:
                histogram[reason] += 1
        absent = self.num_all_nodes - len(self.statuses)
        if absent > 0:
            for reason in self.statuses.absent.reasons:
                histogram[reason] += absent
        return dict(histogram)

    def __str__(self) -> str:
        msg = f"0/{self.num_all_nodes} nodes are available:"
        if self.pre_filter_msg:
            msg += f" {self.pre_filter_msg}."
        else:
            reasons = sorted(f"{count} {reason}" for reason, count in self.reasons().items())
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
    def pre_enqueue(self, pod: types_pb2.Pod) -> Status:
        """Called before a pod enters activeQ (on add, and each time it would move there).
        Success lets it in; anything else keeps it in the unschedulable pool, gated by this
        plugin, until an event its EnqueueExtensions register lets it try again. Cheap and
        without I/O: the queue calls it on every such move."""
        ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Whether `a` pops before `b`. Exactly one QueueSort plugin orders activeQ, and
        every profile of a scheduler must use the same one (the queue is shared)."""
        ...


@runtime_checkable
class EnqueueExtensions(Protocol):
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """The cluster events that may make a pod this plugin rejected schedulable, each with
        an optional queueing hint (Queue or Skip for one event and pod). Asked once, when the
        queue is built: the answer must not depend on the cluster's state. A plugin without
        this extension is registered for every event."""
        ...


class PreFilterExtensions(Protocol):
    """Incremental updates of what a plugin's PreFilter computed, for what-if evaluations
    (the pods nominated to a node, preemption's victims). Called only after the plugin's
    PreFilter, possibly on a clone of the cycle's state and several times before the next
    Filter of a node; never for a plugin that returned Skip at PreFilter. Anything but
    Success is an Error."""

    def add_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status:
        """`pod_to_add` now counts on `node` while `pod` is being scheduled."""
        ...

    def remove_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status:
        """`pod_to_remove` no longer counts on `node` while `pod` is being scheduled."""
        ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """Called once at the start of the cycle, with every node of the snapshot; computes
        what the plugin's Filter (and Score) will read, into `state`.

        - Success, with an optional PreFilterResult: None (or one with no node names) keeps
          every node; a set of names restricts the cycle to them (what can be decided in O(1)
          per node). The results of several plugins intersect; a node left out gets
          UnschedulableAndUnresolvable, so preemption never considers it.
        - Unschedulable: the pod does not fit, preemption may help; the other PreFilter
          plugins still run. UnschedulableAndUnresolvable: preemption cannot help; the cycle
          stops there. Either way every node gets that status.
        - Skip: the plugin has nothing to do for this pod; its result is ignored, and its
          Filter and PreFilterExtensions are not called in this cycle.
        - Error (or any other code): the cycle fails; the pod backs off."""
        ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        """The plugin's AddPod/RemovePod, or None when what PreFilter computed does not
        depend on the other pods of a node."""
        ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        """Whether `pod` can run on `node`. Read the node only from `node`: it may be a copy
        with pods added (nominated pods) or removed (preemption's victims), not what the
        snapshot holds.

        - Success: the node fits, as far as this plugin knows.
        - Unschedulable: it does not, but preemption on this node might change that.
        - UnschedulableAndUnresolvable: it does not, and preemption cannot help (a node
          selector, a taint): preemption leaves the node out.
        - Error: something went wrong; the whole cycle fails and the pod backs off.
        Skip is not an answer here (PreFilter's Skip already keeps Filter from being called):
        the runtime takes any other code for an Error. The first plugin to reject a node
        decides its status; the others are not called for it."""
        ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    async def post_filter(
        self, state: CycleState, pod: types_pb2.Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """Called when PreFilter or Filter found no node, with every node's status (even when
        they are all UnschedulableAndUnresolvable: leaving those out is the plugin's job).

        - Success: the pod can be made schedulable (preemption chose a node); the result
          may carry the nominated node name the scheduler then writes. The chain stops.
        - Unschedulable: the plugin ran but cannot help; the next one runs. Informational
          plugins go first and always answer this.
        - UnschedulableAndUnresolvable stops the chain; Error fails it."""
        ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]) -> Status:
        """Called once with the feasible nodes (when there are at least two), before Score,
        to compute what Score reads. Skip: the plugin's Score is not called in this cycle.
        Anything but Success or Skip fails the cycle."""
        ...


class ScoreExtensions(Protocol):
    def normalize_score(
        self, state: CycleState, pod: types_pb2.Pod, scores: list[NodeScore]
    ) -> tuple[list[NodeScore], Status]:
        """Called once with every node's raw score from the same plugin's Score; returns the
        scores, in the same order, brought into [MIN_NODE_SCORE, MAX_NODE_SCORE] (0..100).
        Anything but Success fails the cycle."""
        ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    """A plugin may also define `score_nodes(state, pod, nodes) -> (list[int], Status)`, the
    scores of all `nodes` in order, which the runtime then calls once per cycle instead of
    `score` per node (a kemu extension: same results, less per-node call overhead)."""

    def score(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> tuple[int, Status]:
        """The rank of one feasible node (higher is better). Without NormalizeScore it must
        be in [MIN_NODE_SCORE, MAX_NODE_SCORE] (0..100); with it, NormalizeScore's output
        must be. A score out of range, or anything but Success, fails the cycle. The
        framework multiplies it by the plugin's weight and sums over plugins."""
        ...

    def score_extensions(self) -> ScoreExtensions | None:
        """The plugin's NormalizeScore, or None."""
        ...


@runtime_checkable
class BatchScorePlugin(Protocol):
    """kemu's batch form of Score (see ScorePlugin): the scores of all `nodes` in order."""

    def score_nodes(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[list[int], Status]: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        """Called once the scheduler cache counts the pod on `node_name` (assumed), for the
        plugin to update its own state the same way. Success or Error are the expected
        answers; anything but Success rejects the pod (a rejection keeps its code), and then
        Unreserve runs for every Reserve plugin."""
        ...

    def unreserve(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> None:
        """Undoes Reserve: called, in reverse order, when Reserve or a later point failed,
        Permit rejected or timed out, or the binding cycle failed. Must be idempotent, and
        may be called without this plugin's Reserve having run for the pod."""
        ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> tuple[Status, float]:
        """The last word before binding. Success lets the pod go; a rejection (or Error)
        stops it (Unreserve runs); Wait, with a timeout in seconds (at most 15 minutes),
        holds the pod in the waiting pods map, where the binding cycle waits until every
        waiting plugin allowed it (Handle.get_waiting_pod(uid).allow(name)), someone
        rejects it, or a timeout expires (then it is Unschedulable). A Wait takes effect only
        after the remaining Permit plugins ran and none rejected the pod."""
        ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    def pre_bind_pre_flight(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        """Before PreBind, and cheap (no work such as creating a volume): Success if this
        plugin's PreBind will do something for the pod, Skip if it will not (its PreBind is
        then not called), Error on failure; any other code is an Error. KEP-5278: when at
        least one plugin answers Success, the scheduler writes the expected node as the
        pod's nominatedNodeName before PreBind starts."""
        ...

    async def pre_bind(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        """Work before binding (provisioning, attaching). Every PreBind plugin that did not
        Skip at its pre-flight must succeed, or the pod is not bound: the binding cycle fails
        with an Error (retried after backoff), since nothing after Permit makes a pod
        unschedulable."""
        ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    async def bind(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        """Binds the pod, after every PreBind succeeded. Bind plugins are tried in order: one
        that does not handle the pod returns Skip and the next is tried; the first that does
        not Skip decides (Success: bound; anything else: the binding cycle fails). If every
        plugin skips, binding fails."""
        ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> None:
        """Informational, after a successful Bind (cleaning up what the plugin kept for the
        pod, say); it cannot fail the pod."""
        ...


# ---------------------------------------------------------------- placements (KEP-5732)
#
# The pod-group cycle's placement extension points (TopologyAwareWorkloadScheduling; upstream
# staging/src/k8s.io/kube-scheduler/framework/interface.go PlacementGeneratePlugin and
# PlacementScorePlugin): candidate node sets for a whole group, each tried with the group's
# algorithm, the feasible ones scored. kemu.scheduling.placement runs them.


@dataclass(frozen=True, slots=True)
class Placement:
    """A set of nodes a pod group may be scheduled on (upstream fwk.Placement). `name` is the
    generating plugin's choice (TopologyPlacementGenerator: the topology domain), for logs."""

    name: str
    nodes: tuple[NodeInfo, ...]

    def node_names(self) -> frozenset[str]:
        return frozenset(n.name for n in self.nodes)


@dataclass(frozen=True, slots=True)
class ProposedAssignment:
    """A member and the node the group's algorithm found for it in a placement."""

    pod: types_pb2.Pod
    node_name: str


@dataclass(frozen=True, slots=True)
class PodGroupAssignments:
    """A feasible placement and its members' nodes (upstream fwk.PodGroupAssignments)."""

    placement: Placement
    proposed: tuple[ProposedAssignment, ...]


@dataclass(slots=True)
class PlacementScore:
    """One plugin's score for one placement (upstream fwk.PlacementScore)."""

    placement: Placement
    score: int


@runtime_checkable
class PlacementGeneratePlugin(Plugin, Protocol):
    def generate_placements(
        self, state: CycleState, group: PodGroupKey, parent: Placement
    ) -> tuple[list[Placement], Status]:
        """Candidate placements for `group` within `parent` (its nodes: every node of the
        snapshot, or the enclosing placement's). Placements may overlap; an empty list means
        none fits. A group the plugin has nothing to say about gets `[parent]`. Anything but
        Success fails the group's cycle."""
        ...


class PlacementScoreExtensions(Protocol):
    def normalize_placement_score(
        self, state: CycleState, group: PodGroupKey, scores: list[PlacementScore]
    ) -> Status:
        """Called once with every feasible placement's raw score from the same plugin; brings
        them, in place, into [MIN_NODE_SCORE, MAX_NODE_SCORE]. Anything but Success fails
        the group's cycle."""
        ...


@runtime_checkable
class PlacementScorePlugin(Plugin, Protocol):
    def score_placement(
        self, state: CycleState, group: PodGroupKey, assignments: PodGroupAssignments
    ) -> tuple[int, Status]:
        """The rank of one feasible placement (higher is better), given the nodes the group's
        algorithm found there for its members. Called only when more than one placement is
        feasible. The framework multiplies it (after NormalizePlacementScore) by the
        plugin's placementScore weight and sums over plugins; the highest total wins, ties
        broken at random. Anything but Success fails the group's cycle."""
        ...

    def placement_score_extensions(self) -> PlacementScoreExtensions | None:
        """The plugin's NormalizePlacementScore, or None."""
        ...


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
    "placementGenerate": PlacementGeneratePlugin,
    "placementScore": PlacementScorePlugin,
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

    def preempt(self, plugin: str, message: str) -> bool:
        """Ends the wait with an Error naming `plugin` (a preemption's victim, 1.36+); False
        when the pod already had an outcome."""
        ...

    def pending_plugins(self) -> list[str]: ...


class PodInPreBind(Protocol):
    """A pod whose binding cycle is in PreBind (1.36+, kemu.scheduling.pods_in_pre_bind)."""

    def cancel_pod(self, message: str) -> bool:
        """Cancels its PreBind: the binding cycle fails and the pod backs off. False once it
        is past PreBind (then only a DELETE removes it)."""
        ...


class PodNominator(Protocol):
    """The scheduler's in-memory nominations (pkg/scheduler/backend/queue/nominator.go): kemu.scheduling.nominator."""

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


_Obj = TypeVar("_Obj", bound=Message)


class SchedulingApi(Protocol):
    """The API calls the library's plugins make: DefaultBinder's pods/binding,
    VolumeBinding's updates of PersistentVolumes and claims, DynamicResources' ResourceClaims (the preemption executor, which
    writes to victims, is the scheduler's own). The library never
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

    async def update(self, obj: _Obj) -> _Obj:
        """PUT of the object (its resourceVersion a precondition); the stored object."""
        ...

    async def update_status(self, obj: _Obj) -> _Obj:
        """PUT of the object's status subresource (DynamicResources' claims)."""
        ...

    async def patch(
        self,
        kind: type[_Obj],
        name: str,
        patch: Mapping[str, object] | str,
        namespace: str = "",
        *,
        subresource: str = "",
    ) -> _Obj:
        """A JSON merge patch (DynamicResources' pod extendedResourceClaimStatus, as
        upstream's PatchPodStatus); a metadata.resourceVersion in it is a precondition."""
        ...

    async def get(self, kind: type[_Obj], name: str, namespace: str = "") -> _Obj:
        """The stored object (NotFound when there is none)."""
        ...

    async def create(self, obj: _Obj) -> _Obj:
        """POST (DynamicResources' special claim for extended resources); the stored object."""
        ...

    async def delete(
        self, kind: type[_Obj], name: str, namespace: str = "", *, uid: str | None = None
    ) -> _Obj:
        """DELETE, `uid` a precondition (DynamicResources' special claim)."""
        ...


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
    strictly lower priority nominated to the node (pkg/scheduler/framework/preemption/preemption.go prepareCandidate). Provided by the scheduler
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

    async def prepare_pod_group_preemption(
        self,
        plugin: str,
        victims: Sequence[types_pb2.Pod],
        preemptor: types_pb2.Pod,
        nodes: AbstractSet[str],
    ) -> Status:
        """Workload-aware preemption (KEP-5710): preempts `victims`, on any nodes, for a pod
        group (`preemptor` is one of its members), then clears the nominations of pods of
        lower priority nominated to `nodes` (where the group goes); synchronously."""
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

    def get_pod_in_pre_bind(self, uid: str) -> PodInPreBind | None:
        """The pod's PreBind if it is registered there (from 1.36, while PreBind works)."""
        ...

    def preemption_executor(self) -> PreemptionExecutor | None:
        """The scheduler's preemption executor; None in simulations (nothing is written)."""
        ...

    def iterate_over_waiting_pods(self) -> Iterable[WaitingPod]: ...

    def shared_dra_manager(self) -> DraManager | None:
        """The scheduler's claims (assumed and in flight), slices and classes, shared by its
        profiles (upstream Handle.SharedDRAManager); None in simulations without one."""
        ...

    def pod_group_states(self) -> PodGroupStates | None:
        """The scheduler's pod groups and their members (upstream 1.35's WorkloadManager,
        1.36's PodGroupManager); None when groups are off or in simulations."""
        ...

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
