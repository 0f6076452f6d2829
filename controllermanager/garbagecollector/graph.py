"""The nodes of the garbage collector's graph (upstream graph.go): one per object uid the
informers have shown (observed) or that an ownerReference names before its object was seen
(virtual). A node keeps the owner references of its object and the set of its dependents."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.machinery.delete_options import FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS


@dataclass(frozen=True)
class ObjectReference:
    """An object's coordinates: an ownerReference's plus the namespace (upstream
    objectReference). An owner is in its dependent's namespace or cluster-scoped."""

    api_version: str
    kind: str
    name: str
    uid: str
    namespace: str = ""

    @classmethod
    def of_owner(cls, ref: types_pb2.OwnerReference, namespace: str) -> ObjectReference:
        return cls(ref.api_version, ref.kind, ref.name, ref.uid, namespace)

    def __str__(self) -> str:
        return (
            f"[{self.api_version}/{self.kind}, namespace: {self.namespace or '-'}, "
            f"name: {self.name}, uid: {self.uid}]"
        )


def matches_coordinates(ref: types_pb2.OwnerReference, identity: ObjectReference) -> bool:
    """The reference names the object `identity` (upstream ownerReferenceMatchesCoordinates)."""
    return (ref.uid, ref.name, ref.kind, ref.api_version) == (
        identity.uid,
        identity.name,
        identity.kind,
        identity.api_version,
    )


def is_blocking(ref: types_pb2.OwnerReference) -> bool:
    return ref.HasField("block_owner_deletion") and ref.block_owner_deletion


def being_deleted(meta: types_pb2.ObjectMeta) -> bool:
    return meta.HasField("deletion_timestamp")


def has_orphan_finalizer(meta: types_pb2.ObjectMeta) -> bool:
    return FINALIZER_ORPHAN_DEPENDENTS in meta.finalizers


def has_delete_dependents_finalizer(meta: types_pb2.ObjectMeta) -> bool:
    return FINALIZER_DELETE_DEPENDENTS in meta.finalizers


def copy_refs(refs: Iterable[types_pb2.OwnerReference]) -> list[types_pb2.OwnerReference]:
    """Copies: informer objects are shared and must not be kept by reference."""
    out = []
    for ref in refs:
        c = types_pb2.OwnerReference()
        c.CopyFrom(ref)
        out.append(c)
    return out


@dataclass(eq=False)
class Node:
    """One object in the graph. Nodes compare by identity (the object, not the value)."""

    identity: ObjectReference
    owners: list[types_pb2.OwnerReference] = field(default_factory=list)
    dependents: set[Node] = field(default_factory=set)
    being_deleted: bool = False
    """The object has a deletionTimestamp: it is on its way out, the collector leaves it alone
    unless it waits for its dependents."""
    deleting_dependents: bool = False
    """Being deleted with the foregroundDeletion finalizer: its dependents go first."""
    virtual: bool = False
    """Only known from a dependent's ownerReference; the informers have not shown it (yet)."""

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        flags = [
            f
            for f, on in (
                ("virtual", self.virtual),
                ("beingDeleted", self.being_deleted),
                ("deletingDependents", self.deleting_dependents),
            )
            if on
        ]
        return f"Node({self.identity}{' ' + ','.join(flags) if flags else ''})"

    def blocking_dependents(self) -> list[Node]:
        """Dependents whose reference to this node has blockOwnerDeletion: a foreground
        deletion waits for them."""
        return [
            dep
            for dep in self.dependents
            if any(ref.uid == self.identity.uid and is_blocking(ref) for ref in dep.owners)
        ]


@dataclass(frozen=True)
class ReferenceDiff:
    added: list[types_pb2.OwnerReference]
    removed: list[types_pb2.OwnerReference]
    changed: list[tuple[types_pb2.OwnerReference, types_pb2.OwnerReference]]

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


def references_diffs(
    old: Sequence[types_pb2.OwnerReference], new: Sequence[types_pb2.OwnerReference]
) -> ReferenceDiff:
    """What changed between two lists of owner references, by uid (upstream referencesDiffs)."""
    old_by_uid = {r.uid: r for r in old}
    new_uids = {r.uid for r in new}
    added, changed = [], []
    for ref in new:
        before = old_by_uid.get(ref.uid)
        if before is None:
            added.append(ref)
        elif before != ref:
            changed.append((before, ref))
    removed = [r for r in old if r.uid not in new_uids]
    return ReferenceDiff(added, removed, changed)


ABSENT_OWNER_CACHE_SIZE: Final = 500


class ReferenceCache:
    """An LRU set of owners known to be absent (upstream's absentOwnerCache): uids never come
    back, so an entry never goes stale; the bound only limits memory."""

    def __init__(self, size: int = ABSENT_OWNER_CACHE_SIZE) -> None:
        self._size = size
        self._items: OrderedDict[ObjectReference, None] = OrderedDict()

    def add(self, ref: ObjectReference) -> None:
        self._items[ref] = None
        self._items.move_to_end(ref)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    def has(self, ref: ObjectReference) -> bool:
        if ref in self._items:
            self._items.move_to_end(ref)
            return True
        return False

    def __len__(self) -> int:
        return len(self._items)


def _seconds(ts: Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9


class OrphanedOwners:
    """An LRU of the owners deleted with the orphan finalizer, by uid, with their
    deletionTimestamp. The orphan worker strips the owner's references from the dependents
    the graph holds; an informer that lags behind the owner's may show one only after the
    owner is gone. That dependent existed when the owner was deleted (it was created
    before the deletionTimestamp): it is orphaned too, not collected. Kept in memory (the
    window is an informer's lag); bounded as the absent owner cache."""

    def __init__(self, size: int = ABSENT_OWNER_CACHE_SIZE) -> None:
        self._size = size
        self._items: OrderedDict[str, float] = OrderedDict()

    def add(self, uid: str, meta: types_pb2.ObjectMeta) -> None:
        """The owner `meta` (being deleted with the orphan finalizer) orphans its dependents."""
        self._items[uid] = _seconds(meta.deletion_timestamp)
        self._items.move_to_end(uid)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    def orphans(self, owner_uid: str, dependent: types_pb2.ObjectMeta) -> bool:
        """Whether the owner was deleted with the Orphan policy after `dependent` was made."""
        deleted_at = self._items.get(owner_uid)
        if deleted_at is None:
            return False
        return _seconds(dependent.creation_timestamp) <= deleted_at

    def __len__(self) -> int:
        return len(self._items)
