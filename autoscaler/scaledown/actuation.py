"""Scale-down actuation (upstream core/scaledown/actuation): every node chosen is tainted
ToBeDeletedByClusterAutoscaler in the loop, then, in the background, an empty node is deleted
through the cloud at once (all of a group's in one DeleteNodes), a non-empty one drained
first (drain.py, upstream's drain.go). DaemonSet pods are evicted last, best effort (one try,
not waited for: they go with the node anyway), from drained nodes
(--daemonset-eviction-for-occupied-nodes, true) and empty ones
(--daemonset-eviction-for-empty-nodes, false); a pod's annotation
cluster-autoscaler.kubernetes.io/enable-ds-eviction "true"/"false" overrides the flag. A failed
drain or delete removes the taint again and starts the --scale-down-delay-after-failure
cooldown; but a failed DeleteNodes whose instance the cloud may be deleting anyway (no answer,
or the instance listed as deleting) keeps the taint until the cloud's instances show it gone or
not being deleted (`settle`, each loop): an untainted node about to go would get pods.
Events: ScaleDown on the node and on each evicted pod, ScaleDownEmpty on an empty node, ScaleDownFailed when it fails."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Final

from autoscaler.clusterstate import DELETING, CloudApi, GroupState, instance_name
from autoscaler.config import AutoscalingOptions
from autoscaler.metrics import Metrics
from autoscaler.pods import counted_on_nominated_node
from autoscaler.scale_up import Recorder
from autoscaler.scaledown.drain import SCALE_DOWN as SCALE_DOWN  # the reason of its node events too
from autoscaler.scaledown.drain import DrainFailed, Evictor, pods_to_evict
from autoscaler.scaledown.taints import TO_BE_DELETED_TAINT, add_taint, remove_taint
from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock
from kemu.machinery.errors import ApiError
from kemu.machinery.keys import object_key
from kemu.scheduling.types import pod_priority

logger = logging.getLogger(__name__)

SCALE_DOWN_EMPTY: Final = "ScaleDownEmpty"
SCALE_DOWN_FAILED: Final = "ScaleDownFailed"

Task = Callable[[], Coroutine[object, object, None]]
Spawn = Callable[[Task], None]


class Actuator:
    def __init__(
        self,
        options: AutoscalingOptions,
        client: ApiClient,
        cloud: CloudApi,
        *,
        list_pods: Callable[[], Sequence[types_pb2.Pod]],
        recorder: Recorder,
        metrics: Metrics,
        clock: Clock,
    ) -> None:
        """`options`: its scale-down group, --expendable-pods-priority-cutoff, and whether a
        pod nominated to a node keeps it (the version's NNN handling, from 1.37:
        autoscaler/pods.py)."""
        self._opts = options.scale_down
        self._expendable_cutoff = options.expendable_pods_priority_cutoff
        self._nominated_counts = options.rules.autoscaler_nnn_in_cluster_state
        self._client = client
        self._cloud = cloud
        self._list_pods = list_pods
        self._recorder = recorder
        self._metrics = metrics
        self._clock = clock
        self._evictor = Evictor(self._opts, client, recorder, clock)
        self.spawn: Spawn | None = None
        """Runs a deletion in the background (the loop's task group); None: awaited inline."""
        self.deleting: dict[str, str] = {}
        """Node -> group of the deletions in progress."""
        self.draining: set[str] = set()
        self.unconfirmed: set[str] = set()
        """Nodes (kept in `deleting`) whose DeleteNodes failed while the cloud may have begun
        deleting them (no answer, or it lists their instance as deleting): their taint stays
        until `settle` sees the instance gone or not being deleted."""
        self.last_delete: float | None = None
        """Monotonic time the last deletion started."""
        self.last_delete_wall: float | None = None
        self.last_failure: float | None = None

    async def start_deletion(
        self,
        empty: Sequence[tuple[types_pb2.Node, str]],
        drain: Sequence[tuple[types_pb2.Node, str]],
    ) -> list[str]:
        """Taints the nodes and starts their deletion; returns the nodes whose deletion
        started (a node that could not be tainted is left alone)."""
        started: list[str] = []
        empties: dict[str, list[types_pb2.Node]] = {}
        for batch, is_empty in ((empty, True), (drain, False)):
            for node, group in batch:
                if not await self._taint(node):
                    continue
                started.append(node.metadata.name)
                self.deleting[node.metadata.name] = group
                if is_empty:
                    empties.setdefault(group, []).append(node)
                else:
                    self.draining.add(node.metadata.name)
                    await self._run(self._drain_and_delete_fn(node, group))
        for group, nodes in empties.items():
            await self._run(self._delete_empty_fn(group, nodes))
        if started:
            self.last_delete = self._clock.monotonic()
            self.last_delete_wall = self._clock.now()
        return started

    async def _run(self, fn: Task) -> None:
        if self.spawn is None:
            await fn()
        else:
            self.spawn(fn)

    async def _taint(self, node: types_pb2.Node) -> bool:
        name = node.metadata.name
        try:
            ok = await add_taint(self._client, name, TO_BE_DELETED_TAINT, self._clock.now())
        except ApiError as e:
            ok = False
            self._recorder.event(
                node,
                "Warning",
                SCALE_DOWN,
                "ScaleDown",
                f"failed to mark the node as toBeDeleted/unschedulable: {e}",
            )
        if ok:
            self._recorder.event(
                node,
                "Normal",
                SCALE_DOWN,
                "ScaleDown",
                "marked the node as toBeDeleted/unschedulable",
            )
        return ok

    async def _after_taint(self) -> None:
        """Waits --node-delete-delay-after-taint (upstream deleteNodesAsync): the scheduler's
        cache catches up with the taint, so what it bound without seeing it is in the API
        when the node's pods are read again."""
        await self._clock.sleep(self._opts.node_delete_delay_after_taint)

    def _delete_empty_fn(self, group: str, nodes: list[types_pb2.Node]) -> Task:
        async def delete() -> None:
            going: list[types_pb2.Node] = []
            try:
                await self._after_taint()
                going = [n for n in nodes if await self._still_empty(n.metadata.name)]
                if not going:
                    return
                for n in going:
                    await self._evictor.evict_daemonset_pods(
                        n.metadata.name, self._opts.daemonset_eviction_for_empty_nodes
                    )
                    self._recorder.event(
                        n,
                        "Normal",
                        SCALE_DOWN_EMPTY,
                        "ScaleDown",
                        f"removing empty node {n.metadata.name!r}",
                    )
                logger.info(
                    "scale-down: deleting %d empty node(s) of group %s: %s",
                    len(going),
                    group,
                    ", ".join(n.metadata.name for n in going),
                )
                await self._delete_or_fail(group, going, "empty")
            except ApiError as e:
                # The re-check failed: nothing was asked of the cloud.
                for n in going or nodes:
                    await self._failed(n, f"failed to delete empty node: {e}")
            finally:
                self._done(n.metadata.name for n in nodes)

        return delete

    async def _still_empty(self, name: str) -> bool:
        """Re-checks a node chosen as empty from the API (after its taint and the delay);
        one that is not empty any more loses the taint and is kept."""
        busy = await self._not_empty(name)
        if not busy:
            return True
        logger.info("scale-down: node %s is not empty any more (%s): not deleted", name, busy)
        self.deleting.pop(name, None)
        await self._untaint(name)
        return False

    def _drain_and_delete_fn(self, node: types_pb2.Node, group: str) -> Task:
        async def drain() -> None:
            name = node.metadata.name
            try:
                await self._after_taint()
                await self._evictor.drain_node(node)
                await self._evictor.evict_daemonset_pods(
                    name, self._opts.daemonset_eviction_for_occupied_nodes
                )
            except (DrainFailed, ApiError) as e:
                await self._failed(node, f"failed to drain the node, aborting ScaleDown: {e}")
            else:
                await self._delete_or_fail(group, [node], "underutilized")
            finally:
                self._done([name])
                self.draining.discard(name)

        return drain

    def _done(self, names: Iterable[str]) -> None:
        """The deletions of `names` are over, but for those left unconfirmed."""
        for name in names:
            if name not in self.unconfirmed:
                self.deleting.pop(name, None)

    async def _delete_or_fail(
        self, group: str, nodes: Sequence[types_pb2.Node], reason: str
    ) -> None:
        """DeleteNodes; when it fails, a node whose instance the cloud may be deleting anyway
        (it does not answer, or lists the instance as deleting) keeps its taint, unconfirmed
        until `settle` knows; the others fail as usual (taint removed)."""
        try:
            await self._delete_from_cloud(group, nodes, reason)
        except ApiError as e:
            going = await self._cloud_deleting(group)
            for n in nodes:
                if going is None or n.spec.provider_id in going:
                    self.unconfirmed.add(n.metadata.name)
                    await self._failed(
                        n,
                        f"failed to delete {reason} node: {e} (its instance may be being "
                        "deleted: the taint stays until the cloud tells)",
                        untaint=False,
                    )
                else:
                    await self._failed(n, f"failed to delete {reason} node: {e}")

    async def _cloud_deleting(self, group: str) -> set[str] | None:
        """The providerIDs of the group's instances being deleted; None if the cloud does not
        answer."""
        try:
            instances = await self._cloud.nodes(group)
        except ApiError as e:
            logger.warning("scale-down: node group %s: reading its instances: %s", group, e)
            return None
        return {i.id for i in instances if i.status.instance_state == DELETING}

    async def settle(self, groups: Mapping[str, GroupState]) -> None:
        """Each loop, with the instances just read: an unconfirmed deletion is over once its
        instance is gone; one the cloud is not deleting loses its taint."""
        for name in sorted(self.unconfirmed):
            group = self.deleting.get(name, "")
            state = groups.get(group)
            if state is None:
                continue
            found = [i for i in state.instances if instance_name(i.id) == name]
            if found and found[0].status.instance_state == DELETING:
                continue
            self.unconfirmed.discard(name)
            self.deleting.pop(name, None)
            if found:
                logger.info("scale-down: node %s: the cloud is not deleting it", name)
                await self._untaint(name)

    async def _not_empty(self, node: str) -> str:
        """Why a node chosen as empty is not empty any more, after its taint: a pod bound to
        it since (other than expendable ones), or (from 1.37) one nominated to it and counted
        there (autoscaler/pods.py); "" if still empty."""
        for p in await pods_to_evict(self._client, node):
            if pod_priority(p) >= self._expendable_cutoff:
                return f"pod {object_key(p)} is bound to it"
        if not self._nominated_counts:
            return ""
        unbound = await self._client.list_all(types_pb2.Pod, field_selector="spec.nodeName=")
        for p in unbound.items:
            if p.status.nominated_node_name == node and counted_on_nominated_node(
                p, self._expendable_cutoff
            ):
                return f"pod {object_key(p)} is nominated to it"
        return ""

    async def _untaint(self, name: str) -> None:
        try:
            await remove_taint(self._client, name, TO_BE_DELETED_TAINT)
        except ApiError as e:
            logger.warning(
                "scale-down: node %s: removing taint %s: %s", name, TO_BE_DELETED_TAINT, e
            )

    async def _delete_from_cloud(
        self, group: str, nodes: Sequence[types_pb2.Node], reason: str
    ) -> None:
        await self._cloud.delete_nodes(
            group, [(n.spec.provider_id, n.metadata.name) for n in nodes]
        )
        for n in nodes:
            self._recorder.event(
                n, "Normal", SCALE_DOWN, "ScaleDown", "node removed by cluster autoscaler"
            )
            logger.info(
                "scale-down: node %s of group %s deleted (%s)", n.metadata.name, group, reason
            )
        self._metrics.scaled_down_nodes.labels(reason).inc(len(nodes))
        self._metrics.last_activity.labels("scaleDown").set(self._clock.now())

    async def _failed(self, node: types_pb2.Node, message: str, *, untaint: bool = True) -> None:
        name = node.metadata.name
        logger.warning("scale-down: node %s: %s", name, message)
        self._recorder.event(node, "Warning", SCALE_DOWN_FAILED, "ScaleDown", message)
        self.last_failure = self._clock.monotonic()
        if untaint:
            await self._untaint(name)
