"""The scheduler's cache debugger (upstream pkg/scheduler/backend/cache/debugger): on SIGUSR2
the scheduler compares its cache and queue with what they mirror and dumps them to its log.

The comparison itself is kemu.client.comparer's (timing rules, differences, the report at
GET /debug/caches); this module gives it the scheduler's caches as sources:
- the cache's nodes (those with a Node: a NodeInfo kept only for the pods of a deleted node is
  not a node), against the node informer and against a fresh list;
- the pods of the cache and of the queue (active, backoff, unschedulable pods and the ones in
  flight), against the pod informer and against a fresh list of the pods the scheduler watches
  (upstream's field selector: not finished), of which it is responsible for the assigned ones
  (the cache) and the unassigned ones of its profiles (the queue). As upstream's
  CacheComparer.ComparePods, a pod counts wherever it is (cache or queue); a pod in both (a
  KEP-5836 deferred resize) is judged by its older copy. Set aside (present, not judged): the
  assumed pods (in their binding cycle the cache holds them ahead of the API), and the
  unassigned pods being deleted (a finalizer keeps them in the API; the queue holds one until
  it is popped and skipped, upstream's skipPodSchedule, and never again).
Upstream compares names only (comparer.go CompareNodes, ComparePods by UID); kemu compares
resourceVersions too, so that a missed update, not only a missed add or delete, shows.

`CacheDumper` is upstream's dumper.go: every NodeInfo (requested, allocatable, its pods and the
pods nominated to it) and the queue's pending pods, one log line each.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from kemu.api.v1 import types_pb2
from kemu.client.comparer import APISERVER, INFORMERS, Source, Truth, View, older
from kemu.client.informer import Informer
from kemu.machinery.keys import object_key
from kemu.scheduling.types import PodInfo, Resource
from scheduler.cache.cache import CacheDump

logger = logging.getLogger(__name__)


class DumpableCache(Protocol):
    def dump(self) -> CacheDump: ...


class PendingPods(Protocol):
    """What the debugger reads of the scheduling queue."""

    def pending_pods(self) -> tuple[list[types_pb2.Pod], str]: ...

    def in_flight_pods(self) -> list[types_pb2.Pod]: ...

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...


def node_view(cache: DumpableCache) -> View:
    return {
        name: ni.node.metadata.resource_version
        for name, ni in cache.dump().nodes.items()
        if ni.node is not None
    }


def pod_view(cache: DumpableCache, queue: PendingPods) -> View:
    """Every pod of the cache and the queue (see the module docstring)."""
    view: dict[str, str | None] = {}

    def put(key: str, rv: str | None) -> None:
        if key in view:
            held = view[key]
            if held is None or rv is None:
                rv = None
            elif older(held, rv):
                rv = held
        view[key] = rv

    dump = cache.dump()
    for ni in dump.nodes.values():
        for pi in ni.pods:
            key = object_key(pi.pod)
            put(key, None if key in dump.assumed_pods else pi.pod.metadata.resource_version)
    pending, _ = queue.pending_pods()
    for pod in [*pending, *queue.in_flight_pods()]:
        put(object_key(pod), None if _unassigned_deleting(pod) else pod.metadata.resource_version)
    return view


def _unassigned_deleting(pod: types_pb2.Pod) -> bool:
    return not pod.spec.node_name and pod.metadata.HasField("deletion_timestamp")


def _responsible(scheduler_names: frozenset[str]) -> Callable[[types_pb2.Pod], bool]:
    """Whether the cache or the queue must hold the pod (see the module docstring)."""

    def responsible(pod: types_pb2.Pod) -> bool:
        if pod.spec.node_name:
            return True
        return pod.spec.scheduler_name in scheduler_names and not pod.metadata.HasField(
            "deletion_timestamp"
        )

    return responsible


def _truth(objects: Iterable[types_pb2.Pod] | Iterable[types_pb2.Node], rv: str) -> Truth:
    return Truth({object_key(o): o.metadata.resource_version for o in objects}, rv)


def cache_sources(
    cache: DumpableCache,
    queue: PendingPods,
    pods: Informer[types_pb2.Pod],
    nodes: Informer[types_pb2.Node],
    scheduler_names: Iterable[str],
) -> list[Source]:
    """The cache's nodes and the cache's and queue's pods, each against the informers and
    against the apiserver; none before both informers have synced."""
    if not (pods.has_synced() and nodes.has_synced()):
        return []
    responsible = _responsible(frozenset(scheduler_names))

    async def listed_nodes() -> Truth:
        return _truth(nodes.lister.list(), nodes.last_resource_version)

    async def listed_pods() -> Truth:
        return _truth(filter(responsible, pods.lister.list()), pods.last_resource_version)

    async def fresh_nodes() -> Truth:
        return _truth(*await nodes.list_fresh())

    async def fresh_pods() -> Truth:
        items, rv = await pods.list_fresh()
        return _truth(filter(responsible, items), rv)

    def nodes_of_cache() -> View:
        return node_view(cache)

    def pods_of_cache_and_queue() -> View:
        return pod_view(cache, queue)

    node_cache, pod_cache = "scheduler cache nodes", "scheduler cache and queue pods"
    return [
        Source(node_cache, INFORMERS, nodes_of_cache, listed_nodes),
        Source(pod_cache, INFORMERS, pods_of_cache_and_queue, listed_pods),
        Source(node_cache, APISERVER, nodes_of_cache, fresh_nodes),
        Source(pod_cache, APISERVER, pods_of_cache_and_queue, fresh_pods),
    ]


def _resources(r: Resource) -> str:
    text = f"cpu={r.milli_cpu}m memory={r.memory} pods={r.allowed_pod_number}"
    if r.ephemeral_storage:
        text += f" ephemeral-storage={r.ephemeral_storage}"
    for name, value in sorted(r.scalar.items()):
        text += f" {name}={value}"
    return text


def _pod(pod: types_pb2.Pod) -> str:
    text = f"{object_key(pod)} (uid {pod.metadata.uid}, phase {pod.status.phase or '-'}"
    if pod.status.nominated_node_name:
        text += f", nominated to {pod.status.nominated_node_name}"
    return text + ")"


class CacheDumper:
    """Writes the cache's nodes and the queue's pending pods to the log (upstream dumper.go)."""

    def __init__(self, cache: DumpableCache, queue: PendingPods) -> None:
        self._cache = cache
        self._queue = queue

    def dump_all(self) -> None:
        self.dump_nodes()
        self.dump_scheduling_queue()

    def dump_nodes(self) -> None:
        dump = self._cache.dump()
        logger.info("Dump of cached NodeInfo: %d nodes", len(dump.nodes))
        for name, ni in dump.nodes.items():
            nominated = self._queue.nominated_pods_for_node(name)
            logger.info(
                "Node %s%s: requested %s; allocatable %s; %d pods: %s; %d nominated pods: %s",
                name,
                " (deleted)" if ni.node is None else "",
                _resources(ni.requested),
                _resources(ni.allocatable),
                len(ni.pods),
                ", ".join(_pod(pi.pod) for pi in ni.pods) or "-",
                len(nominated),
                ", ".join(_pod(pi.pod) for pi in nominated) or "-",
            )

    def dump_scheduling_queue(self) -> None:
        pending, summary = self._queue.pending_pods()
        logger.info(
            "Dump of scheduling queue: %s; pods: %s",
            summary,
            ", ".join(_pod(p) for p in pending) or "-",
        )
