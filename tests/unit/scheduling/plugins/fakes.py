"""Fakes for the plugin unit tests: a Handle with a FakeClient, a FakeClock, default feature
gates, a map of waiting pods, and an informer factory whose pod informer the test drives by
hand. Independent of the framework runtime."""

from __future__ import annotations

import builtins
import random
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGates
from kemu.scheduling.dra_manager import DraManager
from kemu.scheduling.interface import (
    CycleState,
    EventRecorder,
    NodeInfoLister,
    PodInPreBind,
    PodNominator,
    PreemptionExecutor,
    SharedLister,
    WaitingPod,
)
from kemu.scheduling.pod_group_state import PodGroupStates
from kemu.scheduling.status import Status
from kemu.scheduling.types import NodeInfo, PodInfo


@dataclass
class FakeWaitingPod:
    """Records who allowed or rejected it."""

    pod_obj: types_pb2.Pod
    plugins: builtins.list[str] = field(default_factory=list)
    allowed_by: builtins.list[str] = field(default_factory=list)
    rejected: builtins.list[tuple[str, str]] = field(default_factory=list)

    @property
    def pod(self) -> types_pb2.Pod:
        return self.pod_obj

    def allow(self, plugin: str) -> None:
        self.allowed_by.append(plugin)

    def reject(self, plugin: str, message: str) -> None:
        self.rejected.append((plugin, message))

    def preempt(self, plugin: str, message: str) -> bool:
        self.rejected.append((plugin, message))
        return True

    def pending_plugins(self) -> builtins.list[str]:
        return [p for p in self.plugins if p not in self.allowed_by]


class FakePodInformer:
    """Handlers registered by plugins; the test calls update()/add()/delete()."""

    def __init__(self) -> None:
        self.handlers: list[Any] = []

    def add_event_handler(self, handler: Any) -> None:
        self.handlers.append(handler)

    def add(self, pod: types_pb2.Pod) -> None:
        for h in self.handlers:
            h.on_add(pod)

    def update(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        for h in self.handlers:
            h.on_update(old, new)

    def delete(self, pod: types_pb2.Pod) -> None:
        for h in self.handlers:
            h.on_delete(pod)


class FakeNamespaces:
    """A Namespace informer's lister over the namespaces a test gives."""

    def __init__(self, *namespaces: types_pb2.Namespace) -> None:
        self.by_name = {ns.metadata.name: ns for ns in namespaces}
        self.handlers: list[Any] = []

    @property
    def lister(self) -> FakeNamespaces:
        return self

    def get(self, name: str, namespace: str = "") -> types_pb2.Namespace | None:
        return self.by_name.get(name)

    def list(self, namespace: str | None = None) -> builtins.list[types_pb2.Namespace]:
        return list(self.by_name.values())

    def add_event_handler(self, handler: Any) -> None:
        self.handlers.append(handler)


class FakeObjects:
    """A namespaced kind's informer and lister over the objects a test gives."""

    def __init__(self, *objs: Any) -> None:
        self.objs = list(objs)

    @property
    def lister(self) -> FakeObjects:
        return self

    def get(self, name: str, namespace: str = "") -> Any | None:
        ns = namespace or "default"
        return next(
            (o for o in self.objs if o.metadata.name == name and o.metadata.namespace == ns),
            None,
        )

    def list(self, namespace: str | None = None) -> builtins.list[Any]:
        return [o for o in self.objs if namespace is None or o.metadata.namespace == namespace]

    def add_event_handler(self, handler: Any) -> None:
        pass


class FakeInformerFactory:
    def __init__(
        self,
        *namespaces: types_pb2.Namespace,
        services: Iterable[types_pb2.Service] = (),
        replica_sets: Iterable[types_pb2.ReplicaSet] = (),
        workloads: Iterable[types_pb2.Workload] = (),
        pod_groups: Iterable[types_pb2.PodGroup] = (),
        claims: Iterable[types_pb2.PersistentVolumeClaim] = (),
    ) -> None:
        self.pods = FakePodInformer()
        self.claims = FakeObjects(*claims)
        # the other storage kinds: none (cluster-scoped volumes, classes, CSINodes)
        self.storage = FakeObjects()
        self.workloads = FakeObjects(*workloads)
        self.pod_groups = FakeObjects(*pod_groups)
        self.namespaces = FakeNamespaces(*namespaces)
        self.services = FakeObjects(*services)
        self.replica_sets = FakeObjects(*replica_sets)
        self.requests: list[tuple[type[Any], str]] = []

    def informer(self, kind: type[Any], *, field_selector: str = "") -> Any:
        self.requests.append((kind, field_selector))
        if kind is types_pb2.Namespace:
            return self.namespaces
        if kind is types_pb2.Service:
            return self.services
        if kind is types_pb2.ReplicaSet:
            return self.replica_sets
        if kind is types_pb2.Workload:
            return self.workloads
        if kind is types_pb2.PodGroup:
            return self.pod_groups
        if kind is types_pb2.PersistentVolumeClaim:
            return self.claims
        if kind in (types_pb2.PersistentVolume, types_pb2.StorageClass, types_pb2.CSINode):
            return self.storage
        assert kind is types_pb2.Pod, kind
        return self.pods


class _Lister(NodeInfoLister):
    def __init__(self, nodes: Iterable[NodeInfo]) -> None:
        self._nodes = list(nodes)

    def list(self) -> builtins.list[NodeInfo]:
        return self._nodes

    def get(self, name: str) -> NodeInfo | None:
        return next((n for n in self._nodes if n.name == name), None)

    def have_pods_with_affinity_list(self) -> builtins.list[NodeInfo]:
        return [n for n in self._nodes if n.pods_with_affinity]

    def have_pods_with_required_anti_affinity_list(self) -> builtins.list[NodeInfo]:
        return [n for n in self._nodes if n.pods_with_required_anti_affinity]


class _SharedLister(SharedLister):
    def __init__(self, nodes: Iterable[NodeInfo]) -> None:
        self._lister = _Lister(nodes)

    def node_infos(self) -> NodeInfoLister:
        return self._lister


class _Recorder(EventRecorder):
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

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
        self.events.append((event_type, reason, message))


class FakeHandle:
    """A Handle for plugin tests. `waiting_pods` maps uid -> FakeWaitingPod."""

    def __init__(
        self,
        *,
        client: FakeClient | None = None,
        clock: FakeClock | None = None,
        nodes: Iterable[NodeInfo] = (),
        informers: FakeInformerFactory | None = None,
    ) -> None:
        self.fake_clock = clock or FakeClock()
        self.fake_client = client or FakeClient(clock=self.fake_clock)
        self.fake_gates = FeatureGates.default()
        self.recorder = _Recorder()
        self.shared_lister = _SharedLister(nodes)
        self.informers = informers
        self.waiting_pods: dict[str, FakeWaitingPod] = {}
        self.activated: list[types_pb2.Pod] = []
        self.spawned: list[tuple[str, Callable[[], Coroutine[Any, Any, None]]]] = []
        self.fake_rng = random.Random(0)
        self.pod_groups: PodGroupStates | None = None

    @property
    def client(self) -> FakeClient:
        return self.fake_client

    @property
    def clock(self) -> FakeClock:
        return self.fake_clock

    @property
    def gates(self) -> FeatureGates:
        return self.fake_gates

    @property
    def event_recorder(self) -> EventRecorder:
        return self.recorder

    def snapshot_shared_lister(self) -> SharedLister:
        return self.shared_lister

    def nominator(self) -> PodNominator | None:
        return None

    def informer_factory(self) -> Any | None:
        return self.informers

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status:
        raise NotImplementedError

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status:
        raise NotImplementedError

    def run_filter_plugins(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        raise NotImplementedError

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo
    ) -> Status:
        raise NotImplementedError

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def iterate_over_waiting_pods(self) -> Iterable[WaitingPod]:
        return list(self.waiting_pods.values())

    def get_pod_in_pre_bind(self, uid: str) -> PodInPreBind | None:
        return None

    def preemption_executor(self) -> PreemptionExecutor | None:
        return None

    def shared_dra_manager(self) -> DraManager | None:
        return None

    def pod_group_states(self) -> PodGroupStates | None:
        return self.pod_groups

    def reject_waiting_pod(self, uid: str) -> bool:
        wp = self.waiting_pods.get(uid)
        if wp is None:
            return False
        wp.reject("", "rejected")
        return True

    def activate(self, pods: Iterable[types_pb2.Pod]) -> None:
        self.activated.extend(pods)

    def spawn(self, fn: Callable[[], Coroutine[Any, Any, None]], name: str) -> None:
        self.spawned.append((name, fn))

    @property
    def metrics(self) -> Any | None:
        return None

    @property
    def rng(self) -> random.Random:
        return self.fake_rng

    def hold(self, pod: types_pb2.Pod, *plugins: str) -> FakeWaitingPod:
        """Puts `pod` in the waiting map, as the runtime does when Permit says Wait."""
        wp = FakeWaitingPod(pod, list(plugins))
        self.waiting_pods[pod.metadata.uid] = wp
        return wp


def node_info(node: types_pb2.Node, *pods: types_pb2.Pod) -> NodeInfo:
    """A NodeInfo for `node` holding `pods` (their spec.nodeName is set to the node)."""
    ni = NodeInfo(node)
    for p in pods:
        bound = types_pb2.Pod()
        bound.CopyFrom(p)
        bound.spec.node_name = node.metadata.name
        if not bound.metadata.uid:
            bound.metadata.uid = f"uid-{bound.metadata.namespace}-{bound.metadata.name}"
        ni.add_pod(bound)
    return ni
