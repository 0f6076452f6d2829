"""Fakes for the resource and inter-pod-affinity plugin tests: a snapshot lister over a fixed
list of NodeInfos and a Handle that exposes only it."""

from __future__ import annotations

import builtins
import random
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kemu.api.v1 import types_pb2
from kemu.scheduling.interface import (
    CycleState,
    NodeInfoLister,
    PodNominator,
    PreemptionExecutor,
    SharedLister,
    WaitingPod,
)
from kemu.scheduling.status import Status
from kemu.scheduling.types import NodeInfo, PodInfo

if TYPE_CHECKING:
    from kemu.client.interface import ApiClient
    from kemu.component.clock import Clock
    from kemu.component.featuregate import FeatureGates
    from kemu.scheduling.interface import EventRecorder


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


class FakeNodeInfoLister(NodeInfoLister):
    def __init__(self, nodes: Iterable[NodeInfo]) -> None:
        self._nodes = list(nodes)
        self._by_name = {ni.name: ni for ni in self._nodes}

    def list(self) -> builtins.list[NodeInfo]:
        return self._nodes

    def get(self, name: str) -> NodeInfo | None:
        return self._by_name.get(name)

    def have_pods_with_affinity_list(self) -> builtins.list[NodeInfo]:
        return [ni for ni in self._nodes if ni.pods_with_affinity]

    def have_pods_with_required_anti_affinity_list(self) -> builtins.list[NodeInfo]:
        return [ni for ni in self._nodes if ni.pods_with_required_anti_affinity]


class FakeSharedLister(SharedLister):
    def __init__(self, nodes: Iterable[NodeInfo]) -> None:
        self._lister = FakeNodeInfoLister(nodes)

    def node_infos(self) -> NodeInfoLister:
        return self._lister


class FakeHandle:
    """A Handle whose snapshot is a fixed list of NodeInfos; everything else is unused here."""

    def __init__(self, nodes: Sequence[NodeInfo] = ()) -> None:
        self.shared_lister = FakeSharedLister(nodes)

    def snapshot_shared_lister(self) -> SharedLister:
        return self.shared_lister

    @property
    def client(self) -> ApiClient:
        raise NotImplementedError

    @property
    def clock(self) -> Clock:
        raise NotImplementedError

    @property
    def gates(self) -> FeatureGates:
        raise NotImplementedError

    @property
    def event_recorder(self) -> EventRecorder:
        raise NotImplementedError

    def nominator(self) -> PodNominator | None:
        return None

    def informer_factory(self) -> Any | None:
        return None

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
        return None

    def preemption_executor(self) -> PreemptionExecutor | None:
        return None

    def iterate_over_waiting_pods(self) -> Iterable[WaitingPod]:
        return ()

    def reject_waiting_pod(self, uid: str) -> bool:
        return False

    def activate(self, pods: Iterable[types_pb2.Pod]) -> None:
        raise NotImplementedError

    def spawn(self, fn: Callable[[], Coroutine[Any, Any, None]], name: str) -> None:
        raise NotImplementedError

    @property
    def metrics(self) -> Any | None:
        return None

    @property
    def rng(self) -> random.Random:
        raise NotImplementedError
