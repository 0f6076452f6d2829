"""What the scheduler's cycles and event handlers need of the scheduler cache (upstream
internal/cache Cache). scheduler.cache.cache.Cache is the implementation."""

from __future__ import annotations

from typing import Protocol

from kemu.api.v1 import types_pb2
from kemu.machinery.resources import PodResourcesOptions
from kemu.scheduling.snapshot import Snapshot
from kemu.scheduling.types import PodInfo


class SchedulerCache(Protocol):
    # Informer events; a call that finds the cache inconsistent raises CacheError.
    def add_node(self, node: types_pb2.Node) -> None: ...

    def update_node(self, old: types_pb2.Node, new: types_pb2.Node) -> None: ...

    def remove_node(self, node: types_pb2.Node) -> None: ...

    def add_pod(self, pod: types_pb2.Pod) -> None: ...

    def update_pod(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None: ...

    def remove_pod(self, pod: types_pb2.Pod) -> None: ...

    # The scheduling and binding cycles.
    def assume_pod(self, pod: types_pb2.Pod, node_name: str | None = None) -> types_pb2.Pod: ...

    def finish_binding(self, pod: types_pb2.Pod) -> None: ...

    def forget_pod(self, pod: types_pb2.Pod) -> bool:
        """False when the pod is no longer in the cache (nothing to forget)."""
        ...

    def is_assumed_pod(self, pod: types_pb2.Pod) -> bool: ...

    def get_pod(self, pod: types_pb2.Pod) -> types_pb2.Pod | None:
        """The cache's own object for `pod`'s uid (assumed: with its node), or None."""
        ...

    def pod_info(self, pod: types_pb2.Pod) -> PodInfo:
        """A PodInfo counted as this cache counts pods."""
        ...

    @property
    def counting(self) -> PodResourcesOptions:
        """How `pod_info` counts a pod's requests (the InPlacePodVerticalScaling gate, the
        emulated version's aggregation rule)."""
        ...

    def update_snapshot(self, snapshot: Snapshot) -> None: ...
