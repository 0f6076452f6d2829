"""The scheduler cache: every node and every pod bound or assumed to one (upstream
backend/cache/cache.go).

The scheduler's informer event handlers feed it (add/update/remove of nodes and of assigned
pods); the scheduling cycle assumes a pod on the node it chose before binding it, so the next
cycle already counts it, and forgets it if the binding cycle fails. `update_snapshot` gives each
cycle a consistent view, copying only the nodes that changed since the previous cycle.

Pod states (upstream interface.go), pods keyed by uid:

    Initial --assume_pod--> Assumed --add_pod--> Added --remove_pod--> Deleted
                               |  \\--forget_pod--> Initial
                               \\--finish_binding, then ttl passes--> Expired (removed)

An expired pod that the informer later reports is simply added (Initial -> Added). An assumed
pod expires `ttl` seconds after `finish_binding`; `ttl=0` means never, and pods whose binding
has not finished never expire. The scheduler takes upstream's durationToExpireAssumedPod of its
emulated version (`assumed_pod_ttl_at`, kubernetes#106361): 2 minutes in 1.21 and 1.22 (their
patch releases raised it from 30 s), 15 minutes in 1.23, then 0: upstream's cache never
expires assumed pods (the binding cycle always ends in the informer's Add or a forget), which
matters under load, when the informer lags the bindings by more than a short TTL and an expired
pod would leave its node looking emptier than it is. `DEFAULT_ASSUMED_POD_TTL` (30 s) is the
Cache's own default, for tests of the expiry itself.

Concurrency: every method is synchronous and the process is one event loop, so each call is
atomic with respect to the scheduling cycle, the binding tasks and the informers; no lock.

Objects from the informers are never mutated: `assume_pod` copies before setting nodeName.
Every method that upstream answers with an error raises `CacheError`; event handlers log it.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Final

import anyio
import anyio.abc

from kemu.api.v1 import types_pb2
from kemu.component.clock import Clock
from kemu.component.ticker import Ticker
from kemu.component.version_rules import VersionRules
from kemu.machinery.keys import object_key
from kemu.machinery.resources import PodResourcesOptions
from kemu.scheduling.node_tree import NodeTree
from kemu.scheduling.pod_info import refreshed_pod_info
from kemu.scheduling.snapshot import Snapshot
from kemu.scheduling.types import NodeInfo, PodInfo

logger = logging.getLogger(__name__)

DEFAULT_ASSUMED_POD_TTL: Final = 30.0


def assumed_pod_ttl(rules: VersionRules) -> float:
    """Upstream's durationToExpireAssumedPod at an emulated version, in seconds (0: never):
    2 minutes, 15 minutes in 1.23, never from 1.24 (kemu.component.version_rules)."""
    if rules.assumed_pods_never_expire:
        return 0.0
    if rules.assumed_pod_ttl_15m:
        return 900.0
    return 120.0


CLEANUP_PERIOD: Final = 1.0


class CacheError(Exception):
    """A call that does not fit the pod's or node's state in the cache (a bug or an event
    the informer delivered out of the expected order); the cache is left unchanged."""


class _PodState:
    __slots__ = ("binding_finished", "deadline", "pod", "pod_info")

    def __init__(self, pod: types_pb2.Pod, pod_info: PodInfo) -> None:
        self.pod = pod
        # The PodInfo counted on the pod's node (an update reuses what it computed).
        self.pod_info = pod_info
        # Monotonic time after which an assumed pod expires; set by finish_binding.
        self.deadline: float | None = None
        self.binding_finished = False


@dataclass
class CacheDump:
    """A copy of the cache for debugging: NodeInfo clones (ghost nodes of removed Nodes
    included, with node None) and the keys (namespace/name) of the assumed pods."""

    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    assumed_pods: set[str] = field(default_factory=set)


class Cache:
    """Nodes and the pods on them, for the scheduler.

    `counting` is how a pod's requests are counted (component-helpers resource.PodRequests, staging/src/k8s.io/component-helpers/resource/helpers.go): the scheduler's
    InPlacePodVerticalScaling gate (`use_status_resources`) and its emulated version's
    aggregation rule (`per_container_max`, kemu.component.version_rules). `ttl` is how long an assumed pod lives after
    `finish_binding` without the informer confirming it (0: forever).
    """

    def __init__(
        self,
        clock: Clock,
        *,
        counting: PodResourcesOptions,
        ttl: float = DEFAULT_ASSUMED_POD_TTL,
        cleanup_period: float = CLEANUP_PERIOD,
    ) -> None:
        if ttl < 0:
            raise ValueError("ttl must be >= 0")
        self._clock = clock
        self._counting = counting
        self._ttl = ttl
        self._cleanup = Ticker(
            clock, cleanup_period, self.cleanup_expired_assumed_pods, self._next_expiry
        )
        # Node name -> NodeInfo, ordered by recency of change: the most recently changed node
        # is last. update_snapshot walks it backwards and stops at the first node the snapshot
        # already has, so a cycle costs O(nodes changed), not O(nodes). (Upstream keeps a
        # doubly linked list with the newest at its head; OrderedDict.move_to_end is the same.)
        self._nodes: OrderedDict[str, NodeInfo] = OrderedDict()
        self._tree = NodeTree()
        # Bumped whenever the NodeTree changes (node added or removed, zone changed), so a
        # snapshot knows its node order is stale.
        self._tree_version = 0
        self._pod_states: dict[str, _PodState] = {}
        self._assumed: set[str] = set()

    @property
    def counting(self) -> PodResourcesOptions:
        return self._counting

    def pod_info(self, pod: types_pb2.Pod) -> PodInfo:
        """A PodInfo counted as this cache counts pods (the queue's pod-info factory too)."""
        return PodInfo(pod, self._counting)

    @property
    def ttl(self) -> float:
        return self._ttl

    # ------------------------------------------------------------ nodes

    def add_node(self, node: types_pb2.Node) -> None:
        name = node.metadata.name
        ni = self._nodes.get(name)
        if ni is None:
            ni = self._nodes[name] = NodeInfo()
        if self._tree.add_node(node):
            self._tree_version += 1
        else:
            # Already known (a resync): keep its place, but follow a zone change.
            self._tree_changed(self._tree.update_node(node))
        ni.set_node(node)
        self._nodes.move_to_end(name)

    def update_node(self, old: types_pb2.Node, new: types_pb2.Node) -> None:
        name = new.metadata.name
        ni = self._nodes.get(name)
        if ni is None:
            ni = self._nodes[name] = NodeInfo()
        self._tree_changed(self._tree.update_node(new))
        ni.set_node(new)
        self._nodes.move_to_end(name)

    def remove_node(self, node: types_pb2.Node) -> None:
        """Removes the node. Its pods stay counted on a NodeInfo with node None until their
        own delete events arrive (pod and node events come on different watches, so they may
        arrive later); such a NodeInfo is never in a snapshot."""
        name = node.metadata.name
        ni = self._nodes.get(name)
        if ni is None:
            raise CacheError(f"node {name} is not in the cache")
        ni.remove_node()
        if ni.pods:
            self._nodes.move_to_end(name)
        else:
            del self._nodes[name]
        self._tree_changed(self._tree.remove_node(name))

    def _tree_changed(self, changed: bool) -> None:
        if changed:
            self._tree_version += 1

    # ------------------------------------------------------------ pods

    def assume_pod(self, pod: types_pb2.Pod, node_name: str | None = None) -> types_pb2.Pod:
        """Counts `pod` on a node before its binding is confirmed; returns the assumed pod.

        With `node_name`, the assumed pod is a copy of `pod` with spec.nodeName set to it (the
        informer's object is left alone); without, `pod` must already carry spec.nodeName and
        is stored as it is (the caller hands over its own copy).
        """
        uid = pod.metadata.uid
        if uid in self._pod_states:
            raise CacheError(f"pod {object_key(pod)} is in the cache, so it cannot be assumed")
        if node_name is not None:
            assumed = types_pb2.Pod()
            assumed.CopyFrom(pod)
            assumed.spec.node_name = node_name
        elif not pod.spec.node_name:
            raise CacheError(f"pod {object_key(pod)} has no node to be assumed on")
        else:
            assumed = pod
        self._add_pod(assumed)
        self._assumed.add(uid)
        return assumed

    def finish_binding(self, pod: types_pb2.Pod) -> None:
        """The binding cycle is over (the bind call returned): the assumed pod expires `ttl`
        seconds from now unless the informer confirms it first."""
        ps = self._pod_states.get(pod.metadata.uid)
        if ps is None or pod.metadata.uid not in self._assumed:
            return
        ps.deadline = self._clock.monotonic() + self._ttl
        ps.binding_finished = True
        if self._ttl:
            self._cleanup.wake(ps.deadline)

    def forget_pod(self, pod: types_pb2.Pod) -> bool:
        """Undoes `assume_pod` (the binding cycle failed, or the pod was deleted while
        assumed). A pod no longer in the cache (it expired, or was forgotten already) is
        fine: False, nothing was freed; a pod that is not assumed is an error."""
        uid = pod.metadata.uid
        ps = self._pod_states.get(uid)
        if ps is None:
            return False
        if pod.spec.node_name and ps.pod.spec.node_name != pod.spec.node_name:
            raise CacheError(
                f"pod {object_key(pod)} was assumed on {ps.pod.spec.node_name} "
                f"but forgotten on {pod.spec.node_name}"
            )
        if uid not in self._assumed:
            raise CacheError(f"pod {object_key(pod)} is not assumed, so it cannot be forgotten")
        self._remove_pod(ps.pod)
        return True

    def add_pod(self, pod: types_pb2.Pod) -> None:
        """An assigned pod the informer saw: confirms an assumed pod (now counted as the
        informer's object, on the informer's node), or adds a pod this scheduler did not
        assume (another scheduler's, or one that expired)."""
        if not pod.spec.node_name:
            raise CacheError(f"pod {object_key(pod)} is not assigned to a node")
        uid = pod.metadata.uid
        ps = self._pod_states.get(uid)
        if ps is None:
            self._add_pod(pod)
            return
        if uid not in self._assumed:
            raise CacheError(f"pod {object_key(pod)} was already added to the cache")
        if ps.pod.spec.node_name != pod.spec.node_name:
            logger.info(
                "Pod %s was added on node %s, not on node %s where it was assumed",
                object_key(pod),
                pod.spec.node_name,
                ps.pod.spec.node_name,
            )
        # The bound pod is the assumed one with nodeName set by the apiserver: its PodInfo's
        # values are the assumed pod's (kemu.scheduling.pod_info), unless the spec moved.
        pi = refreshed_pod_info(ps.pod_info, pod, self.pod_info)
        self._remove_pod(ps.pod)
        self._add_pod(pod, pi)

    def update_pod(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        """An assigned pod changed (labels, status, an in-place resize): it is counted again
        as the new object, its PodInfo recomputed (component-helpers resource.PodRequests, staging/src/k8s.io/component-helpers/resource/helpers.go) unless the update changed
        nothing it is computed from (kemu.scheduling.pod_info: then the previous PodInfo's
        values are reused, equal to what recomputing gives)."""
        uid = old.metadata.uid
        ps = self._pod_states.get(uid)
        if ps is None:
            raise CacheError(f"pod {object_key(old)} is not in the cache, so it cannot be updated")
        # An assumed pod gets an Add (confirming it) before any Update.
        if uid in self._assumed:
            raise CacheError(f"assumed pod {object_key(old)} cannot be updated")
        if ps.pod.spec.node_name != new.spec.node_name:
            # nodeName is immutable once set: the cache missed an event.
            logger.error(
                "Pod %s was updated on node %s but is cached on node %s; the cache was corrupted",
                object_key(new),
                new.spec.node_name,
                ps.pod.spec.node_name,
            )
        pi = refreshed_pod_info(ps.pod_info, new, self.pod_info)
        self._remove_pod(ps.pod)
        self._add_pod(new, pi)

    def remove_pod(self, pod: types_pb2.Pod) -> None:
        """The pod was deleted (or is no longer assigned). Removes what the cache holds for its
        uid, wherever that is: a delete event may carry a stale last-known object."""
        ps = self._pod_states.get(pod.metadata.uid)
        if ps is None:
            raise CacheError(f"pod {object_key(pod)} is not in the cache, so it cannot be removed")
        if pod.spec.node_name and ps.pod.spec.node_name != pod.spec.node_name:
            logger.error(
                "Pod %s was removed from node %s but is cached on node %s; the cache was corrupted",
                object_key(pod),
                pod.spec.node_name,
                ps.pod.spec.node_name,
            )
        self._remove_pod(ps.pod)

    def is_assumed_pod(self, pod: types_pb2.Pod) -> bool:
        return pod.metadata.uid in self._assumed

    def get_pod(self, pod: types_pb2.Pod) -> types_pb2.Pod | None:
        """The pod the cache holds for `pod`'s uid (possibly on a removed node), or None."""
        ps = self._pod_states.get(pod.metadata.uid)
        return ps.pod if ps is not None else None

    def _add_pod(self, pod: types_pb2.Pod, pi: PodInfo | None = None) -> None:
        """Counts `pod` on its node, as `pi` (its PodInfo; computed when None)."""
        name = pod.spec.node_name
        ni = self._nodes.get(name)
        if ni is None:
            # The pod's node has not been seen yet: a NodeInfo without a node holds its pods.
            ni = self._nodes[name] = NodeInfo()
        if pi is None:
            pi = self.pod_info(pod)
        ni.add_pod_info(pi)
        self._nodes.move_to_end(name)
        # Keyed by the PodInfo's uid string: every read of pod.metadata.uid makes a new one.
        self._pod_states[pi.uid] = _PodState(pod, pi)

    def _remove_pod(self, pod: types_pb2.Pod) -> None:
        """Removes `pod` (the cache's own object for it) from its node and from the states."""
        name = pod.spec.node_name
        ni = self._nodes.get(name)
        if ni is None:
            logger.error("Node %s of pod %s is not in the cache", name, object_key(pod))
        else:
            if not ni.remove_pod(pod):
                logger.error("Pod %s is not on node %s in the cache", object_key(pod), name)
            if ni.node is None and not ni.pods:
                del self._nodes[name]
            else:
                self._nodes.move_to_end(name)
        uid = pod.metadata.uid
        self._pod_states.pop(uid, None)
        self._assumed.discard(uid)

    # ------------------------------------------------------------ expiry

    def cleanup_expired_assumed_pods(self, now: float | None = None) -> list[types_pb2.Pod]:
        """Removes the assumed pods whose binding finished more than `ttl` seconds before
        `now` (monotonic; default the clock's) and returns them."""
        if self._ttl == 0:
            return []
        if now is None:
            now = self._clock.monotonic()
        expired: list[types_pb2.Pod] = []
        for uid in list(self._assumed):
            ps = self._pod_states[uid]
            if not ps.binding_finished or ps.deadline is None or now <= ps.deadline:
                continue
            logger.warning(
                "Assumed pod %s on node %s expired: its binding was never confirmed",
                object_key(ps.pod),
                ps.pod.spec.node_name,
            )
            expired.append(ps.pod)
            self._remove_pod(ps.pod)
        return expired

    def _next_expiry(self) -> float | None:
        """When an assumed pod can next expire (None: none can)."""
        if self._ttl == 0:
            return None
        deadlines = [
            ps.deadline
            for uid in self._assumed
            if (ps := self._pod_states[uid]).binding_finished and ps.deadline is not None
        ]
        return min(deadlines, default=None)

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Expires assumed pods every `cleanup_period` seconds (on the injected clock; only the
        ticks at which one can have expired, see kemu.component.ticker) until cancelled. Start
        it with `await tg.start(cache.run)`."""
        task_status.started()
        await self._cleanup.run()

    # ------------------------------------------------------------ snapshot

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Brings `snapshot` up to date with the cache, at the start of a scheduling cycle.

        Only NodeInfos changed since the snapshot's generation are cloned (each replaces the
        snapshot's old clone, which is not mutated); removed nodes are dropped; the node list
        is rebuilt only when the set or order of nodes changed, the affinity lists only when a
        node entered or left one of them.
        """
        gen = snapshot.generation
        update_all = snapshot.tree_version != self._tree_version
        update_affinity = False
        for name, ni in reversed(self._nodes.items()):
            if ni.generation <= gen:
                break
            if ni.node is None:
                # A removed node still holding pods; the tree change drops it below.
                continue
            is_new, aff, anti = snapshot.replace(name, ni.clone())
            update_all = update_all or is_new
            update_affinity = update_affinity or aff or anti
        if self._nodes:
            snapshot.generation = max(gen, next(reversed(self._nodes.values())).generation)

        if update_all:
            snapshot.rebuild_lists(self._tree.list())
            snapshot.tree_version = self._tree_version
        elif update_affinity:
            snapshot.rebuild_affinity_lists()

        if snapshot.num_nodes() != self._tree.num_nodes:
            # Cannot happen unless the generations lie; recover with a full copy.
            logger.error(
                "Snapshot has %d nodes but the cache has %d; rebuilding it",
                snapshot.num_nodes(),
                self._tree.num_nodes,
            )
            self._rebuild_snapshot(snapshot)

    def _rebuild_snapshot(self, snapshot: Snapshot) -> None:
        infos = {name: ni.clone() for name, ni in self._nodes.items() if ni.node is not None}
        snapshot.reset(infos, self._tree.list())
        snapshot.tree_version = self._tree_version
        if self._nodes:
            snapshot.generation = next(reversed(self._nodes.values())).generation

    # ------------------------------------------------------------ introspection

    def node_count(self) -> int:
        """NodeInfos in the cache, those of removed nodes that still hold pods included."""
        return len(self._nodes)

    def pod_count(self) -> int:
        """Pods in the cache, assumed ones included."""
        return len(self._pod_states)

    def assumed_pod_count(self) -> int:
        return len(self._assumed)

    def dump(self) -> CacheDump:
        """Clones of everything, for debugging (O(nodes + pods): not for hot paths)."""
        return CacheDump(
            nodes={name: ni.clone() for name, ni in self._nodes.items()},
            assumed_pods={object_key(self._pod_states[uid].pod) for uid in self._assumed},
        )

    def __repr__(self) -> str:
        return (
            f"Cache(nodes={len(self._nodes)}, pods={len(self._pod_states)}, "
            f"assumed={len(self._assumed)})"
        )
