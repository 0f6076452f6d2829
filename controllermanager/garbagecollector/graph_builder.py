"""Keeps the garbage collector's graph from informer events (upstream graph_builder.go's
processGraphChanges), and hands the nodes that need attention to the collector's queues:

- attempt_to_delete: a dependent whose owner went away (or a node whose references look wrong),
  a virtual owner to be verified, an owner deleting its dependents in the foreground (and its
  dependents);
- attempt_to_orphan: an owner that got deletionTimestamp and the orphan finalizer (also
  remembered in `orphaned_owners`, for the dependents the graph sees only once it is gone).

Events are applied synchronously, in the informers' callbacks (one event loop: no lock is
needed); the collector's workers read the graph between their API calls. Keys of both queues
are object uids. A virtual delete event (`virtual_delete`) comes from the collector when the
API says a virtual node's object does not exist.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from google.protobuf.message import Message

from controllermanager.garbagecollector.graph import (
    Node,
    ObjectReference,
    OrphanedOwners,
    ReferenceCache,
    being_deleted,
    copy_refs,
    has_delete_dependents_finalizer,
    has_orphan_finalizer,
    is_blocking,
    matches_coordinates,
    references_diffs,
)
from kemu.api.v1 import types_pb2
from kemu.client.workqueue import WorkQueue
from kemu.machinery.keys import object_meta
from kemu.machinery.kinds import Kind

logger = logging.getLogger(__name__)


def identity_of(kind: Kind, obj: Message) -> ObjectReference:
    meta = object_meta(obj)
    return ObjectReference(kind.api_version, kind.kind, meta.name, meta.uid, meta.namespace)


@dataclass
class GraphBuilder:
    attempt_to_delete: WorkQueue
    attempt_to_orphan: WorkQueue
    absent_owner_cache: ReferenceCache
    orphaned_owners: OrphanedOwners = field(default_factory=OrphanedOwners)

    def __post_init__(self) -> None:
        self.uid_to_node: dict[str, Node] = {}

    # ------------------------------------------------------------ queues

    def enqueue_delete(self, node: Node) -> None:
        self.attempt_to_delete.add(node.identity.uid)

    # ------------------------------------------------------------ informer events

    def on_add(self, kind: Kind, obj: Message) -> None:
        self._add_or_update(kind, None, obj)

    def on_update(self, kind: Kind, old: Message, new: Message) -> None:
        self._add_or_update(kind, old, new)

    def on_delete(self, kind: Kind, obj: Message) -> None:
        meta = object_meta(obj)
        existing = self.uid_to_node.get(meta.uid)
        if existing is None:
            return
        self._observe(existing, identity_of(kind, obj))
        self._remove(existing, identity_of(kind, obj))

    def _add_or_update(self, kind: Kind, old: Message | None, new: Message) -> None:
        meta = object_meta(new)
        identity = identity_of(kind, new)
        existing = self.uid_to_node.get(meta.uid)
        if existing is None:
            node = Node(
                identity,
                owners=copy_refs(meta.owner_references),
                being_deleted=being_deleted(meta),
                deleting_dependents=being_deleted(meta) and has_delete_dependents_finalizer(meta),
            )
            self._insert(node)
            self._process_transitions(old, meta, node)
            return
        self._observe(existing, identity)
        diff = references_diffs(existing.owners, meta.owner_references)
        if diff:
            self._add_unblocked_owners_to_delete_queue(diff.removed, diff.changed)
            existing.owners = copy_refs(meta.owner_references)
            self._add_dependent_to_owners(existing, diff.added)
            self._remove_dependent_from_owners(existing, diff.removed)
        if being_deleted(meta):
            existing.being_deleted = True
        self._process_transitions(old, meta, existing)

    def _observe(self, node: Node, observed: ObjectReference) -> None:
        """A virtual node's object shows up in an informer: it becomes observed, with the
        observed coordinates; dependents that named it otherwise are checked again."""
        if not node.virtual:
            return
        if observed != node.identity:
            for dep in node.dependents:
                if not any(matches_coordinates(r, observed) for r in dep.owners):
                    self.enqueue_delete(dep)
            logger.debug("replacing virtual item %s with observed item %s", node.identity, observed)
            node.identity = observed
        node.virtual = False

    # ------------------------------------------------------------ virtual delete events

    def virtual_delete(self, deleted: ObjectReference) -> None:
        """The collector found that `deleted` does not exist (NotFound, or another uid under
        that name) although the graph has a node for its uid (upstream's virtual delete event:
        coordinates some dependent used may still be right for the uid)."""
        existing = self.uid_to_node.get(deleted.uid)
        if existing is None:
            return
        matching = [
            d for d in existing.dependents if any(matches_coordinates(r, deleted) for r in d.owners)
        ]
        others = [d for d in existing.dependents if d not in matching]
        if existing.virtual and others:
            # Some dependents name this uid with other coordinates: keep the node for them.
            if matching:
                self.absent_owner_cache.add(deleted)
                for dep in matching:
                    self.enqueue_delete(dep)
            if existing.identity == deleted:
                ref = next(r for r in others[0].owners if r.uid == deleted.uid)
                existing.identity = ObjectReference.of_owner(ref, others[0].identity.namespace)
                self.attempt_to_delete.add_rate_limited(deleted.uid)
            return
        if not existing.virtual and existing.identity != deleted:
            # The real object exists under other coordinates: only the dependents that
            # named the verified-absent ones are orphans.
            if matching:
                self.absent_owner_cache.add(deleted)
                for dep in matching:
                    self.enqueue_delete(dep)
            return
        self._remove(existing, deleted)

    # ------------------------------------------------------------ graph changes

    def _insert(self, node: Node) -> None:
        self.uid_to_node[node.identity.uid] = node
        self._add_dependent_to_owners(node, node.owners)

    def _remove(self, node: Node, identity: ObjectReference) -> None:
        """The object is gone: its dependents may be garbage now, and an owner waiting for
        its dependents may be done."""
        self.uid_to_node.pop(node.identity.uid, None)
        self._remove_dependent_from_owners(node, node.owners)
        if node.dependents:
            self.absent_owner_cache.add(identity)
        for dep in node.dependents:
            self.enqueue_delete(dep)
        for ref in node.owners:
            owner = self.uid_to_node.get(ref.uid)
            if owner is not None and owner.deleting_dependents:
                self.enqueue_delete(owner)

    def _add_dependent_to_owners(self, node: Node, owners: list[types_pb2.OwnerReference]) -> None:
        """Links `node` to each owner, creating a virtual node (to be verified) for an owner not
        seen yet; a reference that disagrees with an observed owner gets `node` checked."""
        suspicious = False
        for ref in owners:
            owner = self.uid_to_node.get(ref.uid)
            if owner is None:
                owner = Node(ObjectReference.of_owner(ref, node.identity.namespace), virtual=True)
                self.uid_to_node[ref.uid] = owner
                owner.dependents.add(node)
                logger.debug("add virtual item %s", owner.identity)
                self.enqueue_delete(owner)
                continue
            owner.dependents.add(node)
            if suspicious:
                continue
            namespaced = bool(owner.identity.namespace)
            if namespaced and owner.identity.namespace != node.identity.namespace:
                suspicious = True  # a namespaced owner in another namespace cannot be it
            elif not matches_coordinates(ref, owner.identity):
                suspicious = True
            elif not namespaced and node.identity.namespace and owner.virtual:
                suspicious = True  # maybe a namespaced kind named from a cluster-scoped object
        if suspicious:
            self.enqueue_delete(node)

    def _remove_dependent_from_owners(
        self, node: Node, owners: list[types_pb2.OwnerReference]
    ) -> None:
        for ref in owners:
            owner = self.uid_to_node.get(ref.uid)
            if owner is not None:
                owner.dependents.discard(node)

    def _add_unblocked_owners_to_delete_queue(
        self,
        removed: list[types_pb2.OwnerReference],
        changed: list[tuple[types_pb2.OwnerReference, types_pb2.OwnerReference]],
    ) -> None:
        """An owner deleting its dependents in the foreground may have lost its last blocker."""
        unblocked = [r for r in removed if is_blocking(r)]
        unblocked += [old for old, new in changed if is_blocking(old) and not is_blocking(new)]
        for ref in unblocked:
            owner = self.uid_to_node.get(ref.uid)
            if owner is not None and owner.deleting_dependents:
                self.enqueue_delete(owner)

    def _process_transitions(
        self, old: Message | None, meta: types_pb2.ObjectMeta, node: Node
    ) -> None:
        """An object that just started waiting for its dependents to be orphaned or deleted
        (on the first list too: a restarted collector picks up where it stopped)."""
        old_meta = object_meta(old) if old is not None else None

        def starts(has_finalizer: bool, old_has: bool) -> bool:
            was = old_meta is not None and being_deleted(old_meta) and old_has
            return being_deleted(meta) and has_finalizer and not was

        if starts(
            has_orphan_finalizer(meta), old_meta is not None and has_orphan_finalizer(old_meta)
        ):
            logger.debug("add %s to attemptToOrphan", node.identity)
            self.orphaned_owners.add(node.identity.uid, meta)
            self.attempt_to_orphan.add(node.identity.uid)
            return
        if starts(
            has_delete_dependents_finalizer(meta),
            old_meta is not None and has_delete_dependents_finalizer(old_meta),
        ):
            logger.debug("add %s to attemptToDelete: it waits for its dependents", node.identity)
            node.deleting_dependents = True
            for dep in node.dependents:
                self.enqueue_delete(dep)
            self.enqueue_delete(node)
