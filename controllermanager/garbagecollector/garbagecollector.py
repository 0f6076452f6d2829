"""The garbage collector (upstream pkg/controller/garbagecollector/garbagecollector.go),
registered as "garbagecollector".

It watches every kind kemu serves (kemu.machinery.kinds.KINDS, except Events, which upstream
ignores by default) and keeps a graph of owners and dependents from metadata.ownerReferences
(graph_builder.py). Its workers then, per object uid:

- attemptToDelete: an object whose owners are all gone (NotFound, or another uid under the
  name) is deleted with uid and resourceVersion preconditions, in the foreground if an owner
  waits for its dependents and it has dependents itself, else with the policy of its own
  orphan/foregroundDeletion finalizer (Background without one); an object that still has a
  live owner loses the references to the gone owners (and to owners deleting in the
  foreground, which must not wait for it); an owner with the foregroundDeletion finalizer has
  its dependents deleted, and loses the finalizer once no dependent with blockOwnerDeletion
  is left; a virtual owner (seen only in a reference) is looked up, and removed from the
  graph if it does not exist (which makes its dependents garbage).
- attemptToOrphan: an owner with deletionTimestamp and the orphan finalizer has its references
  removed from every dependent, then loses the finalizer. A dependent the graph shows only
  after that (its informer lagged behind the owner's) but created before the owner's
  deletionTimestamp loses the reference in attemptToDelete instead of being collected
  (graph.OrphanedOwners; upstream has this race and its tests wait for the graph).

Custom resources are watched too (upstream's graph builder monitors every resource discovery
lists that supports list/watch/delete, and resyncs its monitors when discovery changes): each
established CustomResourceDefinition gets a monitor (controllermanager.custom_resources) as
soon as the collector's CRD informer sees it, with no restart; a CRD gone takes its monitor
with it.

Every decision re-reads the object (and its owners) from the apiserver, so a graph that lags
behind is never a reason to delete; owners found absent are remembered (by uid) in an LRU.
A collector that restarts rebuilds the graph from its informers' lists, and the first list
replays the transitions it may have missed (objects already waiting for their dependents).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

import anyio
from google.protobuf.message import Message

from controllermanager.config import GarbageCollectorOptions
from controllermanager.controller import ControllerContext
from controllermanager.custom_resources import CustomResourceInformers
from controllermanager.garbagecollector.graph import (
    Node,
    ObjectReference,
    ReferenceCache,
    has_delete_dependents_finalizer,
    has_orphan_finalizer,
)
from controllermanager.garbagecollector.graph_builder import GraphBuilder
from controllermanager.garbagecollector.operations import (
    Operations,
    UnknownKind,
    resolve_kind,
)
from kemu.api.v1 import types_pb2
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.delete_options import (
    BACKGROUND,
    FINALIZER_DELETE_DEPENDENTS,
    FINALIZER_ORPHAN_DEPENDENTS,
    FOREGROUND,
    ORPHAN,
)
from kemu.machinery.errors import ApiError, NotFound
from kemu.machinery.keys import object_meta
from kemu.machinery.kinds import KINDS, Kind

logger = logging.getLogger(__name__)

NAME: Final = "garbagecollector"
IGNORED_RESOURCES: Final = frozenset({"events"})
"""Resources the collector does not watch (upstream's default GC ignored resources)."""


class _VirtualDeleteEnqueued(Exception):
    """The object is gone; the graph was told (upstream enqueuedVirtualDeleteEventErr)."""


class _NamespacedOwnerOfClusterScopedObject(Exception):
    """A cluster-scoped object names a namespaced owner: never resolvable, never retried."""


class GarbageCollector:
    """See the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        options: GarbageCollectorOptions | None = None,
        kinds: Sequence[Kind] = KINDS,
    ) -> None:
        self._client = client
        self.options = options or GarbageCollectorOptions()
        self.attempt_to_delete = WorkQueue(clock, name="garbage_collector_attempt_to_delete")
        self.attempt_to_orphan = WorkQueue(clock, name="garbage_collector_attempt_to_orphan")
        self._ops = Operations(client)
        self.absent_owner_cache = ReferenceCache()
        self.builder = GraphBuilder(
            self.attempt_to_delete, self.attempt_to_orphan, self.absent_owner_cache
        )
        self._informers: list[Informer[Message]] = []
        for k in kinds:
            if k.resource not in IGNORED_RESOURCES and not k.custom:
                self._informers.append(informers.informer(k.message))
                self._monitor(k, self._informers[-1])
        self.custom: CustomResourceInformers | None = None
        if any(k.kind == "CustomResourceDefinition" for k in kinds):
            self.custom = CustomResourceInformers(
                client, informers, clock, self._monitor, owner=NAME
            )

    def _monitor(self, kind: Kind, informer: Informer[Message]) -> None:
        """Feeds the graph from `informer`'s events (upstream's monitor of a resource)."""
        b = self.builder
        informer.add_event_handler(
            FuncHandler(
                lambda obj: b.on_add(kind, obj),
                lambda old, new: b.on_update(kind, old, new),
                lambda obj: b.on_delete(kind, obj),
            )
        )

    @property
    def name(self) -> str:
        return NAME

    @property
    def graph(self) -> dict[str, Node]:
        return self.builder.uid_to_node

    # ------------------------------------------------------------ attemptToDelete

    async def is_dangling(
        self, ref: types_pb2.OwnerReference, item: Node
    ) -> tuple[bool, Message | None]:
        """Whether the owner `ref` names is gone, and the owner if not (upstream isDangling)."""
        cluster_key = ObjectReference.of_owner(ref, "")
        namespaced_key = ObjectReference.of_owner(ref, item.identity.namespace)
        if self.absent_owner_cache.has(cluster_key) or self.absent_owner_cache.has(namespaced_key):
            return True, None
        kind = resolve_kind(ref.api_version, ref.kind)
        if kind is None:
            raise UnknownKind(f"unable to get REST mapping for {ref.api_version}/{ref.kind}")
        if kind.namespaced and not item.identity.namespace:
            raise _NamespacedOwnerOfClusterScopedObject(
                f"cluster-scoped {item.identity} names namespaced owner {ref.kind}/{ref.name}"
            )
        key = namespaced_key if kind.namespaced else cluster_key
        try:
            owner = await self._ops.get(kind, ref.name, key.namespace)
        except NotFound:
            self.absent_owner_cache.add(key)
            logger.debug("item %s's owner %s is not found", item.identity, key)
            return True, None
        if object_meta(owner).uid != ref.uid:
            self.absent_owner_cache.add(key)
            logger.debug("item %s's owner %s is not found, uid mismatch", item.identity, key)
            return True, None
        return False, owner

    async def classify_references(
        self, item: Node, refs: Sequence[types_pb2.OwnerReference]
    ) -> tuple[
        list[types_pb2.OwnerReference],
        list[types_pb2.OwnerReference],
        list[types_pb2.OwnerReference],
    ]:
        """solid (a live owner), dangling (gone), waiting (an owner deleting its dependents in
        the foreground)."""
        solid, dangling, waiting = [], [], []
        for ref in refs:
            gone, owner = await self.is_dangling(ref, item)
            if gone:
                dangling.append(ref)
                continue
            assert owner is not None
            om = object_meta(owner)
            if om.HasField("deletion_timestamp") and has_delete_dependents_finalizer(om):
                waiting.append(ref)
            else:
                solid.append(ref)
        return solid, dangling, waiting

    async def attempt_to_delete_item(self, item: Node) -> None:
        if item.being_deleted and not item.deleting_dependents:
            return  # on its way out: its dependents are dealt with once it is gone
        try:
            latest = await self._ops.get_object(item.identity)
        except NotFound:
            self.builder.virtual_delete(item.identity)
            raise _VirtualDeleteEnqueued from None
        meta = object_meta(latest)
        if meta.uid != item.identity.uid:
            self.builder.virtual_delete(item.identity)
            raise _VirtualDeleteEnqueued
        if item.deleting_dependents:
            await self.process_deleting_dependents_item(item)
            return
        refs = list(meta.owner_references)
        if not refs:
            return
        solid, dangling, waiting = await self.classify_references(item, refs)
        # A gone owner that was deleted with the Orphan policy after this object was made:
        # the orphan worker did not see it in the graph in time. It orphans, it does not own.
        orphaned = [r for r in dangling if self.builder.orphaned_owners.orphans(r.uid, meta)]
        dangling = [r for r in dangling if r not in orphaned]
        if solid or (orphaned and not dangling and not waiting):
            if not dangling and not waiting and not orphaned:
                return
            # An owner deleting in the foreground must not wait for a dependent that another
            # owner keeps: drop the reference, as the dangling ones.
            uids = {r.uid for r in (*dangling, *waiting, *orphaned)}
            logger.info("removing references to %s from %s", sorted(uids), item.identity)
            await self._ops.remove_owner_references(item, uids)
        elif waiting and item.dependents:
            if any(dep.deleting_dependents for dep in item.dependents):
                # A dependent waits for us while we wait for it: break the cycle.
                await self._ops.unblock_owner_references(item)
            await self._ops.delete_object(item.identity, meta.resource_version, refs, FOREGROUND)
        else:
            if has_orphan_finalizer(meta):
                policy = ORPHAN
            elif has_delete_dependents_finalizer(meta):
                policy = FOREGROUND
            else:
                policy = BACKGROUND
            await self._ops.delete_object(item.identity, meta.resource_version, refs, policy)

    async def process_deleting_dependents_item(self, item: Node) -> None:
        blocking = item.blocking_dependents()
        if not blocking:
            await self._ops.remove_finalizer(item, FINALIZER_DELETE_DEPENDENTS)
            return
        for dep in blocking:
            if not dep.deleting_dependents:
                self.builder.enqueue_delete(dep)

    # ------------------------------------------------------------ attemptToOrphan

    async def orphan_dependents(self, owner: Node) -> None:
        for dep in list(owner.dependents):
            await self._ops.remove_owner_references(dep, {owner.identity.uid})
        await self._ops.remove_finalizer(owner, FINALIZER_ORPHAN_DEPENDENTS)

    # ------------------------------------------------------------ workers

    async def _delete_worker(self) -> None:
        queue = self.attempt_to_delete
        while (uid := await queue.get()) is not None:
            try:
                node = self.graph.get(uid)
                if node is None:
                    queue.forget(uid)
                    continue
                await self.attempt_to_delete_item(node)
            except (_VirtualDeleteEnqueued, _NamespacedOwnerOfClusterScopedObject) as e:
                if isinstance(e, _NamespacedOwnerOfClusterScopedObject):
                    logger.warning("%s", e)
                queue.forget(uid)
            except (ApiError, UnknownKind) as e:
                logger.warning("error syncing item %s, requeuing: %s", uid, e)
                queue.add_rate_limited(uid)
            else:
                if node.virtual:
                    queue.add_rate_limited(uid)  # not observed yet: look again
                else:
                    queue.forget(uid)
            finally:
                queue.done(uid)

    async def _orphan_worker(self) -> None:
        queue = self.attempt_to_orphan
        while (uid := await queue.get()) is not None:
            try:
                node = self.graph.get(uid)
                if node is not None:
                    await self.orphan_dependents(node)
            except (ApiError, UnknownKind) as e:
                logger.warning("orphaning the dependents of %s failed, requeuing: %s", uid, e)
                queue.add_rate_limited(uid)
            else:
                queue.forget(uid)
            finally:
                queue.done(uid)

    async def run(self) -> None:
        """Collects garbage until cancelled; the informers must be running."""
        for informer in self._informers:
            await informer.wait_for_sync()
        logger.info(
            "starting the garbage collector (%d kinds, %d objects in the graph)",
            len(self._informers),
            len(self.graph),
        )
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.attempt_to_delete.run, name="gc attemptToDelete timer")
                tg.start_soon(self.attempt_to_orphan.run, name="gc attemptToOrphan timer")
                if self.custom is not None:
                    tg.start_soon(self.custom.run, tg, name="gc custom resource monitors")
                for i in range(self.options.concurrent_gc_syncs):
                    tg.start_soon(self._delete_worker, name=f"gc attemptToDelete worker {i}")
                    tg.start_soon(self._orphan_worker, name=f"gc attemptToOrphan worker {i}")
        finally:
            self.attempt_to_delete.shut_down()
            self.attempt_to_orphan.shut_down()
            logger.info("the garbage collector stopped")


def new_controller(
    ctx: ControllerContext, options: GarbageCollectorOptions | None = None
) -> GarbageCollector:
    """The init function registered as "garbagecollector" (app.py binds the flags' options)."""
    return GarbageCollector(ctx.client, ctx.informers, ctx.clock, options=options)
