"""What-if scheduling for the autoscaler: "does this pod fit this node" on a snapshot that the
caller changes as it simulates (upstream cluster-autoscaler's simulator/clustersnapshot and
its SchedulerBasedPredicateChecker).

`ClusterSnapshot` is a Snapshot that can take extra nodes (template nodes of node groups,
upcoming nodes) and extra pods (a pod placed in simulation, a pod force-added on its nominated
node), and be forked cheaply: NodeInfos are shared between forks and never mutated, a change
replaces the node's NodeInfo with a changed clone (the Snapshot contract).

`PredicateChecker` runs the PreFilter and Filter plugins of a Framework (the default profile's,
in the autoscaler) on a ClusterSnapshot: nothing here knows what a Filter checks, so the
simulation says what the scheduler would say. Only those two run, but for DynamicResources'
Reserve (below): no PreBind, so VolumeBinding assumes and writes nothing (its Filter reads the
handle's storage listers; a template node is checked by its labels, as upstream's binder checks
provisioning).

Dynamic Resource Allocation (upstream cluster-autoscaler simulator/dynamicresources, its
PredicateSnapshot.SchedulePod): a ClusterSnapshot may carry a DraSnapshot
(kemu.scheduling.dra_snapshot) with the claims, slices and classes; the framework's
DynamicResources plugin then reads that snapshot (a framework built with a SimulationDraManager
as its shared DRA manager: FrameworkOptions.dra_manager), and
`schedule_pod` / `schedule_pod_on_any_node_matching` run its Reserve after Filter, which writes
the claims' allocation into the snapshot, and reserve the claims for the pod. A node added with
slices brings them; a node removed takes them, and its pods give up their claims.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from kemu.api.v1 import types_pb2
from kemu.machinery.resources import SCHEDULER_DEFAULTS, PodResourcesOptions
from kemu.scheduling.dra_snapshot import DraSnapshot, SimulationDraManager
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins.dynamic_resources import NAME as DYNAMIC_RESOURCES
from kemu.scheduling.plugins.dynamic_resources import DynamicResources
from kemu.scheduling.runtime import Framework
from kemu.scheduling.snapshot import Snapshot
from kemu.scheduling.status import SUCCESS, Code, Status
from kemu.scheduling.types import NodeInfo, PodInfo, next_generation


class ClusterSnapshot:
    """Nodes and the pods counted on them, for simulations. See the module docstring."""

    __slots__ = ("_counting", "_snapshot", "dra")

    def __init__(
        self,
        snapshot: Snapshot,
        counting: PodResourcesOptions = SCHEDULER_DEFAULTS,
        dra: DraSnapshot | None = None,
    ) -> None:
        self._snapshot = snapshot
        self._counting = counting
        self.dra = dra
        """The DRA objects (None: DynamicResourceAllocation is off, no claims are simulated)."""

    @classmethod
    def from_objects(
        cls,
        pods: Iterable[types_pb2.Pod],
        nodes: Iterable[types_pb2.Node],
        counting: PodResourcesOptions = SCHEDULER_DEFAULTS,
        dra: DraSnapshot | None = None,
    ) -> ClusterSnapshot:
        """Nodes with the pods bound to them (spec.nodeName; pods of unknown nodes ignored),
        counted by `counting` (the scheduler's rules)."""
        return cls(Snapshot.from_objects(pods, nodes, counting), counting, dra)

    @property
    def snapshot(self) -> Snapshot:
        """The scheduling Snapshot (read it; change it only through this object)."""
        return self._snapshot

    def pod_info(self, pod: types_pb2.Pod) -> PodInfo:
        """The pod counted as this snapshot counts pods."""
        return PodInfo(pod, self._counting)

    def get(self, name: str) -> NodeInfo | None:
        return self._snapshot.get(name)

    def node_names(self) -> list[str]:
        return [ni.name for ni in self._snapshot.list()]

    def fork(self) -> ClusterSnapshot:
        """An independent copy: changes to either are not seen by the other."""
        s = Snapshot()
        infos = self._snapshot.list()
        s.reset({ni.name: ni for ni in infos}, [ni.name for ni in infos])
        s.generation = self._snapshot.generation
        return ClusterSnapshot(s, self._counting, None if self.dra is None else self.dra.fork())

    def add_node(
        self, node: types_pb2.Node, slices: Sequence[types_pb2.ResourceSlice] = ()
    ) -> NodeInfo:
        """Adds a node without pods, with its node-local ResourceSlices (ValueError if a node of
        that name exists)."""
        name = node.metadata.name
        if self._snapshot.get(name) is not None:
            raise ValueError(f"node {name} is already in the snapshot")
        if self.dra is not None:
            self.dra.add_node_slices(name, slices)
        ni = NodeInfo(node)
        order = [*self.node_names(), name]
        self._snapshot.replace(name, ni)
        self._snapshot.rebuild_lists(order)
        self._snapshot.generation = ni.generation
        return ni

    def remove_node(self, name: str) -> None:
        """Removes the node, its slices and the pods counted on it, which give up their claims
        (KeyError if not in the snapshot)."""
        old = self._snapshot.get(name)
        if old is None:
            raise KeyError(name)
        if self.dra is not None:
            self.dra.remove_node_slices(name)
            for pi in old.pods:
                self.dra.unreserve_pod_claims(pi.pod)
        infos = [ni for ni in self._snapshot.list() if ni.name != name]
        self._snapshot.reset({ni.name: ni for ni in infos}, [ni.name for ni in infos])
        self._snapshot.generation = next_generation()

    def add_pod(self, pod: types_pb2.Pod, node_name: str) -> None:
        """Counts `pod` on `node_name` whether it fits or not (upstream ForceAddPod); KeyError
        for a node not in the snapshot."""
        old = self._snapshot.get(node_name)
        if old is None:
            raise KeyError(node_name)
        clone = old.clone()
        clone.add_pod_info(self.pod_info(pod))
        _, aff, anti = self._snapshot.replace(node_name, clone)
        if aff or anti:
            self._snapshot.rebuild_affinity_lists()
        self._snapshot.generation = clone.generation


class PredicateChecker:
    """PreFilter + Filter of `framework` for one pod on a ClusterSnapshot (upstream
    SchedulerBasedPredicateChecker). The framework's snapshot is switched to the one checked."""

    def __init__(self, framework: Framework) -> None:
        self._framework = framework
        self._dra: SimulationDraManager | None = None
        self._dra_plugin: DynamicResources | None = None
        plugin = framework.plugin(DYNAMIC_RESOURCES)
        manager = framework.shared_dra_manager()
        if (
            isinstance(plugin, DynamicResources)
            and plugin.enabled
            and isinstance(manager, SimulationDraManager)
        ):
            # The plugin reads the simulation's snapshot through the framework's manager.
            self._dra = manager
            self._dra_plugin = plugin

    @property
    def simulates_dra(self) -> bool:
        """Whether the framework's DynamicResources plugin runs (DynamicResourceAllocation)."""
        return self._dra is not None

    def _pre_filter(
        self, snapshot: ClusterSnapshot, pod: types_pb2.Pod
    ) -> tuple[CycleState, set[str] | None, Status]:
        fwk = self._framework
        fwk.set_snapshot(snapshot.snapshot)
        if self._dra is not None:
            self._dra.use(snapshot.dra if snapshot.dra is not None else DraSnapshot())
        state = CycleState()
        result, status, _ = fwk.run_pre_filter_plugins(state, pod, snapshot.snapshot.list())
        allowed = None if result is None or result.all_nodes() else set(result.node_names or ())
        return state, allowed, status

    def _filter_on(
        self, snapshot: ClusterSnapshot, pod: types_pb2.Pod, node_name: str
    ) -> tuple[CycleState, Status]:
        ni = snapshot.get(node_name)
        if ni is None:
            return CycleState(), Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"node {node_name} not found",)
            )
        state, allowed, status = self._pre_filter(snapshot, pod)
        if status.code is not Code.SUCCESS:
            return state, status
        if allowed is not None and node_name not in allowed:
            return state, Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't satisfy PreFilter result",)
            )
        return state, self._framework.run_filter_plugins(state, pod, ni)

    def check_predicates(
        self, snapshot: ClusterSnapshot, pod: types_pb2.Pod, node_name: str
    ) -> Status:
        """Success when `pod` fits `node_name` as the snapshot stands; else the rejection
        (naming its plugin) or UnschedulableAndUnresolvable for a node not in the snapshot."""
        return self._filter_on(snapshot, pod, node_name)[1]

    def schedule_pod(self, snapshot: ClusterSnapshot, pod: types_pb2.Pod, node_name: str) -> Status:
        """Counts `pod` on `node_name` if it fits there (check_predicates), its claims
        allocated and reserved in the snapshot; else the rejection, the snapshot unchanged
        (upstream SchedulePod)."""
        state, status = self._filter_on(snapshot, pod, node_name)
        if status.code is not Code.SUCCESS:
            return status
        return self._reserve(snapshot, state, pod, node_name)

    def _first_fit(
        self,
        snapshot: ClusterSnapshot,
        pod: types_pb2.Pod,
        node_matches: Callable[[NodeInfo], bool] | None,
        then: Callable[[CycleState, str], Status],
    ) -> tuple[str | None, Status]:
        state, allowed, status = self._pre_filter(snapshot, pod)
        if status.code is not Code.SUCCESS:
            return None, status
        last = Status(Code.UNSCHEDULABLE, ("no node matches",))
        for ni in snapshot.snapshot.list():
            if allowed is not None and ni.name not in allowed:
                continue
            if node_matches is not None and not node_matches(ni):
                continue
            s = self._framework.run_filter_plugins(state, pod, ni)
            if s.code is Code.SUCCESS:
                s = then(state, ni.name)
                if s.code is Code.SUCCESS:
                    return ni.name, SUCCESS
            last = s
        return None, last

    def fits_any_node(
        self,
        snapshot: ClusterSnapshot,
        pod: types_pb2.Pod,
        node_matches: Callable[[NodeInfo], bool] | None = None,
    ) -> tuple[str | None, Status]:
        """The first node (in the snapshot's order, among those `node_matches` accepts) that
        `pod` fits, and SUCCESS; or None and the reason (the PreFilter rejection, or the last
        Filter rejection)."""
        return self._first_fit(snapshot, pod, node_matches, lambda _state, _node: SUCCESS)

    def schedule_pod_on_any_node_matching(
        self,
        snapshot: ClusterSnapshot,
        pod: types_pb2.Pod,
        node_matches: Callable[[NodeInfo], bool] | None = None,
    ) -> tuple[str | None, Status]:
        """fits_any_node, then the pod counted on the node found, its claims allocated and
        reserved there (upstream SchedulePodOnAnyNodeMatching)."""
        return self._first_fit(
            snapshot,
            pod,
            node_matches,
            lambda state, node: self._reserve(snapshot, state, pod, node),
        )

    def _reserve(
        self, snapshot: ClusterSnapshot, state: CycleState, pod: types_pb2.Pod, node_name: str
    ) -> Status:
        """After Filter said `node_name`: DynamicResources' Reserve (the claims' allocation
        written into the snapshot), then the pod counted there, its claims reserved for it
        (upstream PredicateSnapshot.SchedulePod)."""
        plugin = self._dra_plugin
        if plugin is not None and pod.spec.resource_claims and snapshot.dra is not None:
            status = plugin.reserve(state, pod, node_name)
            if status.code is not Code.SUCCESS:
                return status
            why = snapshot.dra.reserve_pod_claims(pod)
            if why:
                return Status(Code.ERROR, (why,))
        snapshot.add_pod(pod, node_name)
        return SUCCESS
