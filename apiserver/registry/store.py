"""The generic store: how any kind's object is read, created, written and deleted in etcd,
whatever its kind's rules (upstream's genericregistry.Store in
staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go over the etcd3 store's
GuaranteedUpdate). The per-kind rules are the strategies (kemu.machinery.strategy) the
registry applies inside the mutations it hands to `guaranteed_update`.

As upstream's Cacher and etcd3 store, a write starts from the watch cache's object for the key
(when the cache has it) instead of reading etcd: the compare-and-swap checks that guess, and a
failed one returns the key as it stands, on which the retry runs. So an uncontended write costs
one etcd transaction. An outcome that a stale guess could have caused (an error from the
mutation or a precondition, or nothing to write) is confirmed on the current state, read from
etcd, before it is returned.

Every write carries the fencing guard of the request being served (apiserver/registry/fencing.py)
in the same etcd transaction. A store over a `DryRunStore` (`dry_run()`) checks and writes
nothing (dryRun=All).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final, TypeVar

from google.protobuf.message import Message

from apiserver.registry import fencing
from apiserver.registry.dry_run import DryRunStore, Store
from apiserver.storage import encoding
from apiserver.storage.etcd import GuardFailed, KeyValue, StaleRevision
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import api_pb2, types_pb2
from kemu.component.clock import Clock
from kemu.machinery.deletion import DeleteOptions, Outcome, plan_delete, should_delete_during_update
from kemu.machinery.errors import AlreadyExists, Conflict, Invalid, NotFound, Subject
from kemu.machinery.kinds import Kind
from kemu.machinery.validation.meta import validate_object_size

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=Message)

_CAS_RETRIES: Final = 16

Mutation = Callable[[Message], Awaitable[Message] | Message]
"""Takes a copy of the stored object and returns what to store (or raises)."""


def object_key(kind: Kind, namespace: str, name: str) -> str:
    if kind.namespaced:
        return f"{kind.storage_prefix}{namespace}/{name}"
    return f"{kind.storage_prefix}{name}"


def meta_of(obj: Message) -> types_pb2.ObjectMeta:
    meta: types_pb2.ObjectMeta = obj.metadata  # type: ignore[attr-defined]
    return meta


def copy_of(obj: M) -> M:
    out = obj.__class__()
    out.CopyFrom(obj)
    return out


@dataclass(frozen=True)
class Stored:
    """An object read from etcd with its mod revision, and the bytes etcd holds for it when
    known (`data`: its value, resourceVersion empty)."""

    obj: Message
    revision: int
    data: bytes | None = None

    def stored_bytes(self) -> bytes:
        """What a write's bytes are compared with to tell a no-op: the bytes read, as
        upstream's GuaranteedUpdate compares with origState.data (etcd3/store.go), else the
        object's own."""
        return self.data if self.data is not None else stored_bytes(self.obj)

    def mutable(self) -> Message:
        """A copy of the object to mutate (`obj` may be the watch cache's): parsed from the
        bytes read when there are some (upb copies a message by serializing it and parsing
        that: half the work)."""
        if self.data is None:
            return copy_of(self.obj)
        return self.obj.FromString(encoding.with_resource_version(self.data, self.revision))


@dataclass(frozen=True)
class _Guess:
    """Where a write loop stands: `stored` is the watch cache's object (shared with the cache:
    never mutated nor returned) until `current`, i.e. read from etcd (by a read or by a failed
    compare-and-swap), as upstream's origState and origStateIsCurrent."""

    stored: Stored
    current: bool


class GenericStore:
    def __init__(
        self,
        store: Store,
        caches: Mapping[str, WatchCache],
        clock: Clock,
        written: dict[str, int] | None = None,
    ) -> None:
        self._store = store
        self._caches = caches
        self.clock = clock
        self.dry_run = isinstance(store, DryRunStore)
        self.written: dict[str, int] = written if written is not None else {}
        """Per resource, the etcd revision of this apiserver's last write (the event-driven
        clock waits for the watch caches to have seen them)."""

    def dry_run_store(self) -> GenericStore:
        """This store with writes checked but not made (dryRun=All): see dry_run.py."""
        return GenericStore(DryRunStore(self._store), self._caches, self.clock, self.written)

    def _wrote(self, kind: Kind, revision: int) -> None:
        if revision and not self.dry_run:
            self.written[kind.resource] = max(self.written.get(kind.resource, 0), revision)

    def now(self) -> float:
        return self.clock.now()

    def cache(self, kind: Kind) -> WatchCache:
        return self._caches[kind.resource]

    # ------------------------------------------------------------ reads

    def _decode(self, kind: Kind, kv: KeyValue) -> Message:
        return kind.message.FromString(encoding.with_resource_version(kv.value, kv.mod_revision))

    async def read(self, kind: Kind, namespace: str, name: str) -> Stored:
        key = object_key(kind, namespace, name)
        kv = await self._store.get(key)
        if kv is None:
            raise not_found(kind, name)
        return self._stored(kind, kv)

    def _stored(self, kind: Kind, kv: KeyValue) -> Stored:
        return Stored(self._decode(kind, kv), kv.mod_revision, kv.value)

    def cached(self, kind: Kind, namespace: str, name: str) -> Message | None:
        """The watch cache's object for the key (shared with the cache: never mutate it)."""
        cache = self._caches.get(kind.resource)
        co = cache.get(object_key(kind, namespace, name)) if cache is not None else None
        return co.obj if co is not None else None

    async def _first_guess(self, kind: Kind, namespace: str, name: str) -> _Guess:
        """The watch cache's object for the key when it has one (upstream Cacher's
        cachedExistingObject), else the object read from etcd (NotFound when it is not)."""
        cache = self._caches.get(kind.resource)
        co = cache.get(object_key(kind, namespace, name)) if cache is not None else None
        if co is not None:
            return _Guess(Stored(co.obj, co.revision, co.stored_value()), current=False)
        return _Guess(await self.read(kind, namespace, name), current=True)

    async def get_bytes(self, kind: Kind, namespace: str, name: str) -> bytes:
        """The Object envelope of one object, straight from etcd without decoding it."""
        kv = await self._store.get(object_key(kind, namespace, name))
        if kv is None:
            raise not_found(kind, name)
        field = api_pb2.Object.DESCRIPTOR.fields_by_name[kind.field].number
        return encoding.envelope(field, encoding.with_resource_version(kv.value, kv.mod_revision))

    # ------------------------------------------------------------ create

    async def create(self, kind: Kind, obj: Message) -> bytes:
        """Stores a new object (AlreadyExists when the key is taken); sets its
        resourceVersion and returns its Object envelope bytes as served."""
        meta = meta_of(obj)
        data = stored_bytes(obj)
        _check_size(kind, obj, len(data))
        what = f"create {_describe(kind, meta)}"
        try:
            rev = await self._store.create(
                object_key(kind, meta.namespace, meta.name),
                data,
                guard=fencing.guard(what),
                companion=fencing.companion(kind, obj),
            )
        except GuardFailed as e:
            raise fencing.refused(what, e) from None
        except Conflict:
            raise AlreadyExists(
                f'{kind.qualified_resource} "{meta.name}" already exists',
                subject=subject(kind, meta.name),
            ) from None
        self._wrote(kind, rev)
        meta.resource_version = str(rev) if rev else ""  # 0: a dry run, as upstream
        field = api_pb2.Object.DESCRIPTOR.fields_by_name[kind.field].number
        return encoding.envelope(field, encoding.with_resource_version(data, rev))

    # ------------------------------------------------------------ update

    async def _write(
        self, kind: Kind, obj: Message, expected: int, data: bytes | None = None
    ) -> Message:
        """Compare-and-swap `obj` (its stored bytes `data` when the caller has them)."""
        meta = meta_of(obj)
        if data is None:
            data = stored_bytes(obj)
        _check_size(kind, obj, len(data))
        key = object_key(kind, meta.namespace, meta.name)
        what = f"update {_describe(kind, meta)}"
        with _translated(kind, meta.name, what):
            rev = await self._store.update(
                key,
                data,
                expected,
                guard=fencing.guard(what),
                companion=fencing.companion(kind, obj),
            )
        self._wrote(kind, rev)
        meta.resource_version = str(rev)
        return obj

    async def guaranteed_update(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        mutate: Mutation,
        *,
        precondition_rv: str = "",
    ) -> Message:
        """Mutate a copy of the object, compare-and-swap; retried on the current state when the
        object changed, unless the caller pinned a resourceVersion (then the Conflict is
        theirs). Starts from the watch cache's object (see the module docstring)."""
        guess = await self._first_guess(kind, namespace, name)
        for _ in range(_CAS_RETRIES):
            state = guess.stored
            try:
                if precondition_rv and precondition_rv != str(state.revision):
                    raise Conflict(conflict(kind, name), subject=subject(kind, name))
                result = mutate(state.mutable())
                updated = await result if isinstance(result, Awaitable) else result
            except Exception:
                if guess.current:
                    raise
                # The guess may be stale: the error stands only if etcd still holds it.
                guess = _Guess(await self.read(kind, namespace, name), current=True)
                if guess.stored.revision == state.revision:
                    raise
                continue
            # The bytes compared are the bytes written (one serialization, not two).
            data = stored_bytes(updated)
            if data == state.stored_bytes():
                # No-op writes do not bump the resourceVersion, as upstream; a stale guess
                # is confirmed first: when the object moved, the mutation runs again on the
                # current state (it might not be a no-op there).
                if not guess.current:
                    guess = _Guess(await self.read(kind, namespace, name), current=True)
                    if guess.stored.revision != state.revision:
                        continue
                return guess.stored.obj
            try:
                if should_delete_during_update(state.obj, updated):
                    # the last finalizer went: the object goes, the caller gets what it wrote
                    # (upstream deleteWithoutFinalizers)
                    logger.debug("%s %s: last finalizer removed, deleted", kind.kind, name)
                    return await self.remove(kind, updated, state.revision)
                return await self._write(kind, updated, state.revision, data)
            except StaleRevision as e:
                # The failed compare read the key: retry on that (a pinned resourceVersion
                # no longer matches it, so the precondition above gives the Conflict).
                guess = _Guess(self._stored(kind, e.current), current=True)
        raise Conflict(
            conflict(kind, name) + ": too many concurrent writers", subject=subject(kind, name)
        )

    # ------------------------------------------------------------ delete

    async def delete(
        self, kind: Kind, namespace: str, name: str, options: DeleteOptions
    ) -> Message:
        """Deletes, or marks deleting (graceful pods, finalizers): see kemu.machinery.deletion.
        Returns the object as it stands after the call. As guaranteed_update: from the watch
        cache's object, confirming on the current state an outcome a stale guess could have
        caused (upstream conditionalDelete)."""
        guess = await self._first_guess(kind, namespace, name)
        for _ in range(_CAS_RETRIES):
            current = guess.stored
            try:
                plan = plan_delete(current.obj, options, self.now())
            except Exception:
                if guess.current:
                    raise
                guess = _Guess(await self.read(kind, namespace, name), current=True)
                if guess.stored.revision == current.revision:
                    raise
                continue
            data = None
            if plan.outcome is not Outcome.KEEP and plan.outcome is not Outcome.DELETE:
                data = stored_bytes(plan.obj)
            if plan.outcome is Outcome.KEEP or (
                data is not None and data == current.stored_bytes()
            ):
                # a graceful deletion is pending, or already marked
                if not guess.current:
                    guess = _Guess(await self.read(kind, namespace, name), current=True)
                    if guess.stored.revision != current.revision:
                        continue
                return guess.stored.obj
            try:
                if plan.outcome is Outcome.DELETE:
                    # (a copy: the guess may be the watch cache's object)
                    return await self.remove(kind, copy_of(plan.obj), current.revision)
                written = await self._write(kind, plan.obj, current.revision, data)
            except StaleRevision as e:
                # retried on what the failed compare read (a pinned resourceVersion then
                # fails its precondition in plan_delete)
                guess = _Guess(self._stored(kind, e.current), current=True)
                continue
            if plan.outcome is Outcome.UPDATE_AND_DELETE:
                return await self._delete_marked(kind, written, pinned=options.resource_version)
            return written
        raise Conflict(conflict(kind, name), subject=subject(kind, name))

    async def _delete_marked(self, kind: Kind, marked: Message, *, pinned: str | None) -> Message:
        """Removes an object this DELETE has just marked with grace 0 (upstream: Storage.Delete
        after the graceful update, with the uid precondition and, when the caller pinned a
        resourceVersion, the one just written). A concurrent writer in between does not stop
        it; someone else removing it first is fine (upstream's ignoreNotFound)."""
        meta = meta_of(marked)
        revision = int(meta.resource_version)
        for _ in range(_CAS_RETRIES):
            try:
                return await self.remove(kind, marked, revision)
            except NotFound:
                return marked
            except StaleRevision as e:
                if pinned is not None:
                    raise
                current = self._stored(kind, e.current)  # what the failed compare read
            if meta_of(current.obj).uid != meta.uid:
                return marked
            marked, revision = current.obj, current.revision
            meta = meta_of(marked)
        raise Conflict(conflict(kind, meta.name), subject=subject(kind, meta.name))

    async def remove(self, kind: Kind, obj: Message, revision: int) -> Message:
        """Removes the key if it is still at `revision` (StaleRevision when it moved)."""
        meta = meta_of(obj)
        what = f"delete {_describe(kind, meta)}"
        with _translated(kind, meta.name, what):
            rev = await self._store.delete(
                object_key(kind, meta.namespace, meta.name),
                revision,
                guard=fencing.guard(what),
                companion=fencing.companion(kind, obj, deleted=True),
            )
        self._wrote(kind, rev)
        meta.resource_version = str(rev)
        return obj


@contextmanager
def _translated(kind: Kind, name: str, what: str) -> Iterator[None]:
    """The storage's errors of a write of `name` as the API's, with upstream's messages."""
    try:
        yield
    except GuardFailed as e:
        raise fencing.refused(what, e) from None
    except NotFound:
        raise not_found(kind, name) from None
    except StaleRevision as e:
        raise StaleRevision(conflict(kind, name), e.current) from None
    except Conflict:
        raise Conflict(conflict(kind, name), subject=subject(kind, name)) from None


def _check_size(kind: Kind, obj: Message, size: int) -> None:
    causes = validate_object_size(size)
    if causes:
        name = meta_of(obj).name
        raise Invalid.from_causes(
            f'{kind.qualified_kind} "{name}"', causes, Subject(name, kind.group, kind.kind)
        )


def stored_bytes(obj: Message) -> bytes:
    """The bytes `obj` is stored as, deterministic (map entries in key order) so that equal
    objects give equal bytes: two objects store the same data, resourceVersion aside (etcd's
    mod revision is), when these are equal, as upstream compares the data it would write with
    the data it read."""
    meta = meta_of(obj)
    rv = meta.resource_version
    meta.resource_version = ""
    try:
        return obj.SerializeToString(deterministic=True)
    finally:
        meta.resource_version = rv


def _describe(kind: Kind, meta: types_pb2.ObjectMeta) -> str:
    """A write's object in a log line: "pods ns/name", "nodes name"."""
    name = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
    return f"{kind.resource} {name}"


def subject(kind: Kind, name: str) -> Subject:
    """The details of upstream's NotFound, AlreadyExists and Conflict: the kind is the
    resource (apimachinery pkg/api/errors/errors.go NewNotFound)."""
    return Subject(name, kind.group, kind.resource)


def not_found(kind: Kind, name: str) -> NotFound:
    """Upstream's NotFound: `deployments.apps "x" not found`."""
    return NotFound(f'{kind.qualified_resource} "{name}" not found', subject=subject(kind, name))


def conflict(kind: Kind, name: str) -> str:
    return (
        f'Operation cannot be fulfilled on {kind.qualified_resource} "{name}": the object '
        "has been modified; please apply your changes to the latest version and try again"
    )
