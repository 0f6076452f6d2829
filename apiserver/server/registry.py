"""The REST semantics of every resource: what create, update, patch, delete and the pod
subresources (binding, resize, eviction) do to stored objects.

Mirrors upstream's generic registry plus the per-kind strategies of pkg/registry: defaulting and
admission on create, status and spec kept apart between update and updateStatus, graceful
deletion of pods, and GuaranteedUpdate-style modify-CAS loops that retry on Conflict when the
caller did not pin a resourceVersion.

As upstream's Cacher and etcd3 store, a write starts from the watch cache's object for the key
(when the cache has it) instead of reading etcd: the compare-and-swap checks that guess, and a
failed one returns the key as it stands, on which the retry runs. So an uncontended write costs
one etcd transaction. An outcome that a stale guess could have caused (an error from the
mutation or a precondition, or nothing to write) is confirmed on the current state, read from
etcd, before it is returned.
"""

from __future__ import annotations

import copy
import functools
import logging
import secrets
import string
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from apiserver.server import admission, fencing, services
from apiserver.server.dry_run import DryRunStore, Store
from apiserver.server.eviction import EvictionREST
from apiserver.server.namespaces import NamespaceLifecycle, check_deletable
from apiserver.storage import encoding
from apiserver.storage.etcd import EtcdStore, GuardFailed, KeyValue, StaleRevision
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import api_pb2, types_pb2
from kemu.component.clock import Clock, RealClock
from kemu.component.featuregate import (
    CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING,
    IN_PLACE_POD_VERTICAL_SCALING,
    POD_OBSERVED_GENERATION_TRACKING,
    FeatureGates,
)
from kemu.component.strategy_options import strategy_options
from kemu.component.version import DEFAULT_VERSION, Version
from kemu.component.version_rules import VersionRules
from kemu.machinery import convert, jsonutil
from kemu.machinery import namespaces as ns_rules
from kemu.machinery import patch as patches
from kemu.machinery.defaults import set_defaults
from kemu.machinery.delete_options import check_preconditions
from kemu.machinery.deletion import DeleteOptions, Outcome, plan_delete, should_delete_during_update
from kemu.machinery.errors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Invalid,
    NotFound,
)
from kemu.machinery.kinds import BY_KIND, Kind, kind_for_resource, kind_of
from kemu.machinery.pod_conditions import set_scheduled
from kemu.machinery.pod_strategy import (
    check_bindable,
    check_binding_preconditions,
)
from kemu.machinery.qos import compute_qos_class
from kemu.machinery.strategy import strategy_for
from kemu.machinery.update_strategy import (
    apply_status_update_metadata,
    backfill_qos_class,
    bumps_generation,
    check_update_uid,
)
from kemu.machinery.validation import validate_object
from kemu.machinery.validation.meta import validate_object_size

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=Message)

_CAS_RETRIES: Final = 16
_POD: Final = BY_KIND["Pod"]
_NAMESPACE: Final = BY_KIND["Namespace"]


def object_key(kind: Kind, namespace: str, name: str) -> str:
    if kind.namespaced:
        return f"/registry/{kind.resource}/{namespace}/{name}"
    return f"/registry/{kind.resource}/{name}"


def _meta(obj: Message) -> types_pb2.ObjectMeta:
    meta: types_pb2.ObjectMeta = obj.metadata  # type: ignore[attr-defined]
    return meta


def _copy(obj: M) -> M:
    out = obj.__class__()
    out.CopyFrom(obj)
    return out


@dataclass(frozen=True)
class Stored:
    """An object read from etcd with its mod revision."""

    obj: Message
    revision: int


@dataclass(frozen=True)
class _Guess:
    """Where a write loop stands: `stored` is the watch cache's object (shared with the cache:
    never mutated nor returned) until `current`, i.e. read from etcd (by a read or by a failed
    compare-and-swap), as upstream's origState and origStateIsCurrent."""

    stored: Stored
    current: bool


class Registry:
    def __init__(
        self,
        store: EtcdStore,
        caches: dict[str, WatchCache],
        gates: FeatureGates,
        *,
        clock: Clock | None = None,
        version: Version = DEFAULT_VERSION,
        toleration_seconds: admission.DefaultTolerationSeconds = admission.DEFAULT_TOLERATIONS,
    ) -> None:
        self._store: Store = store
        self._dry_run = False
        self._toleration_seconds = toleration_seconds
        self._caches = caches
        self._gates = gates
        self._strategy_options = strategy_options(gates)
        self._clock = clock or RealClock()
        self._now = self._clock.now
        self.lifecycle = NamespaceLifecycle(
            self._cached_namespace, self._live_namespace, clock=self._clock
        )
        self._version = version
        self.eviction = EvictionREST(self, VersionRules.at(version))

    def now(self) -> float:
        return self._now()

    def dry_run(self) -> Registry:
        """This registry with writes checked but not made (dryRun=All): see dry_run.py."""
        clone = copy.copy(self)
        clone._store = DryRunStore(self._store)
        clone._dry_run = True
        clone.eviction = EvictionREST(clone, VersionRules.at(self._version))
        return clone

    def cache(self, kind: Kind) -> WatchCache:
        return self._caches[kind.resource]

    # ------------------------------------------------------------ storage helpers

    def _decode(self, kind: Kind, kv: KeyValue) -> Message:
        return kind.message.FromString(encoding.with_resource_version(kv.value, kv.mod_revision))

    async def read(self, kind: Kind, namespace: str, name: str) -> Stored:
        key = object_key(kind, namespace, name)
        kv = await self._store.get(key)
        if kv is None:
            raise NotFound(_not_found(kind, name))
        return Stored(self._decode(kind, kv), kv.mod_revision)

    def _stored(self, kind: Kind, kv: KeyValue) -> Stored:
        return Stored(self._decode(kind, kv), kv.mod_revision)

    async def _first_guess(self, kind: Kind, namespace: str, name: str) -> _Guess:
        """The watch cache's object for the key when it has one (upstream Cacher's
        cachedExistingObject), else the object read from etcd (NotFound when it is not)."""
        cache = self._caches.get(kind.resource)
        co = cache.get(object_key(kind, namespace, name)) if cache is not None else None
        if co is not None:
            return _Guess(Stored(co.obj, co.revision), current=False)
        return _Guess(await self.read(kind, namespace, name), current=True)

    async def get_bytes(self, kind: Kind, namespace: str, name: str) -> bytes:
        """The Object envelope of one object, straight from etcd without decoding it."""
        kv = await self._store.get(object_key(kind, namespace, name))
        if kv is None:
            raise NotFound(_not_found(kind, name))
        field = api_pb2.Object.DESCRIPTOR.fields_by_name[kind.field].number
        return encoding.envelope(field, encoding.with_resource_version(kv.value, kv.mod_revision))

    async def _write(
        self, kind: Kind, obj: Message, expected: int, data: bytes | None = None
    ) -> Message:
        """Compare-and-swap `obj` (its stored bytes `data` when the caller has them)."""
        meta = _meta(obj)
        if data is None:
            data = _stored_bytes(obj)
        self._check_size(kind, obj, len(data))
        key = object_key(kind, meta.namespace, meta.name)
        what = f"update {_describe(kind, meta)}"
        try:
            rev = await self._store.update(
                key,
                data,
                expected,
                guard=fencing.guard(what),
                companion=fencing.companion(kind, obj),
            )
        except GuardFailed as e:
            raise fencing.refused(what, e) from None
        except NotFound:
            raise NotFound(_not_found(kind, meta.name)) from None
        except StaleRevision as e:
            raise StaleRevision(_conflict(kind, meta.name), e.current) from None
        except Conflict:
            raise Conflict(_conflict(kind, meta.name)) from None
        meta.resource_version = str(rev)
        return obj

    @staticmethod
    def _check_size(kind: Kind, obj: Message, size: int) -> None:
        causes = validate_object_size(size)
        if causes:
            raise Invalid.from_causes(f'{kind.kind} "{_meta(obj).name}"', causes)

    async def guaranteed_update(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        mutate: Callable[[Message], Awaitable[Message] | Message],
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
                    raise Conflict(_conflict(kind, name))
                result = mutate(_copy(state.obj))
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
            data = _stored_bytes(updated)
            if data == _stored_bytes(state.obj):
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
                    return await self._remove(kind, updated, state.revision)
                return await self._write(kind, updated, state.revision, data)
            except StaleRevision as e:
                # The failed compare read the key: retry on that (a pinned resourceVersion
                # no longer matches it, so the precondition above gives the Conflict).
                guess = _Guess(self._stored(kind, e.current), current=True)
        raise Conflict(_conflict(kind, name) + ": too many concurrent writers")

    # ------------------------------------------------------------ namespaces

    def _cached_namespace(self, name: str) -> types_pb2.Namespace | None:
        co = self._caches[_NAMESPACE.resource].get(object_key(_NAMESPACE, "", name))
        return co.obj if co is not None and isinstance(co.obj, types_pb2.Namespace) else None

    async def _live_namespace(self, name: str) -> types_pb2.Namespace | None:
        try:
            obj = (await self.read(_NAMESPACE, "", name)).obj
        except NotFound:
            return None
        assert isinstance(obj, types_pb2.Namespace)
        return obj

    async def _delete_namespace(
        self, name: str, *, uid: str | None, resource_version: str | None
    ) -> Message:
        """The first delete marks the namespace Terminating; once the namespace controller has
        removed its finalizer (see `patch` with the finalize subresource), it is removed."""
        check_deletable(name)
        current = await self.read(_NAMESPACE, "", name)
        ns = current.obj
        assert isinstance(ns, types_pb2.Namespace)
        check_preconditions(ns.metadata, uid=uid, resource_version=resource_version)
        if not ns.metadata.HasField("deletion_timestamp"):

            def mutate(obj: Message) -> Message:
                assert isinstance(obj, types_pb2.Namespace)
                check_preconditions(obj.metadata, uid=uid, resource_version=None)
                ns_rules.begin_deletion(obj, convert.timestamp(self._now()))
                return obj

            result = await self.guaranteed_update(
                _NAMESPACE, "", name, mutate, precondition_rv=resource_version or ""
            )
            if not self._dry_run:
                self.lifecycle.deleting(name)
            return result
        if ns.spec.finalizers or ns.metadata.finalizers:
            return ns
        return await self._remove(_NAMESPACE, ns, current.revision)

    async def _remove(self, kind: Kind, obj: Message, revision: int) -> Message:
        meta = _meta(obj)
        what = f"delete {_describe(kind, meta)}"
        try:
            rev = await self._store.delete(
                object_key(kind, meta.namespace, meta.name),
                revision,
                guard=fencing.guard(what),
                companion=fencing.companion(kind, obj, deleted=True),
            )
        except GuardFailed as e:
            raise fencing.refused(what, e) from None
        except NotFound:
            raise NotFound(_not_found(kind, meta.name)) from None
        except StaleRevision as e:
            raise StaleRevision(_conflict(kind, meta.name), e.current) from None
        except Conflict:
            raise Conflict(_conflict(kind, meta.name)) from None
        meta.resource_version = str(rev)
        return obj

    # ------------------------------------------------------------ create

    async def create(self, obj: Message) -> Message:
        return (await self.create_owned(_copy(obj)))[0]

    async def create_owned(self, obj: Message) -> tuple[Message, bytes]:
        """Creates `obj`, which the caller hands over (it is mutated). Returns the stored object
        and its Object envelope bytes as served, so the gRPC edge need not re-encode it."""
        kind = kind_of(obj)
        meta = _meta(obj)
        if meta.resource_version:
            raise Invalid.field(
                "metadata.resourceVersion",
                "resourceVersion should not be set on objects to be created",
            )
        if kind.namespaced:
            meta.namespace = meta.namespace or "default"
        else:
            meta.namespace = ""
        if not meta.name and meta.generate_name:
            suffix = "".join(
                secrets.choice(string.ascii_lowercase + string.digits) for _ in range(5)
            )
            meta.name = meta.generate_name + suffix
        if kind.namespaced:
            await self.lifecycle.admit_create(kind.resource, meta.name, meta.namespace)
        meta.uid = str(uuid.uuid4())
        meta.creation_timestamp.CopyFrom(convert.timestamp(self._now()))
        meta.ClearField("deletion_timestamp")
        meta.ClearField("deletion_grace_period_seconds")
        meta.generation = 1
        self._prepare_for_create(kind, obj)
        if kind.kind == "Pod":
            assert isinstance(obj, types_pb2.Pod)
            self._admit_pod(obj)
        causes = validate_object(obj)
        if causes:
            raise Invalid.from_causes(f'{kind.kind} "{meta.name}"', causes)
        if isinstance(obj, types_pb2.Pod):
            obj.status.qos_class = compute_qos_class(obj)  # quantities are valid by now
        data = _stored_bytes(obj)
        self._check_size(kind, obj, len(data))
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
            raise AlreadyExists(f'{kind.resource} "{meta.name}" already exists') from None
        meta.resource_version = str(rev) if rev else ""  # 0: a dry run, as upstream
        field = api_pb2.Object.DESCRIPTOR.fields_by_name[kind.field].number
        return obj, encoding.envelope(field, encoding.with_resource_version(data, rev))

    def _prepare_for_create(self, kind: Kind, obj: Message) -> None:
        strategy_for(kind).prepare_for_create(obj, self._strategy_options, self._now())
        if isinstance(obj, types_pb2.Service):
            # The service REST storage's allocators (BeginCreate), after the strategy.
            services.allocate(
                obj,
                (
                    co.obj
                    for co in self._caches["services"].objects()
                    if isinstance(co.obj, types_pb2.Service)
                ),
            )

    def _admit_pod(self, pod: types_pb2.Pod) -> None:
        classes = [co.obj for co in self._caches["priorityclasses"].objects()]
        admission.admit_priority(pod, classes)  # type: ignore[arg-type]
        admission.admit_default_toleration_seconds(pod, self._toleration_seconds)

    # ------------------------------------------------------------ update

    async def update(self, obj: Message, *, status: bool = False) -> Message:
        kind = kind_of(obj)
        meta = _meta(obj)
        namespace = (meta.namespace or "default") if kind.namespaced else ""
        if status and not kind.has_status:
            raise NotFound(
                f"the server could not find the requested resource ({kind.resource}/status)"
            )

        def mutate(current: Message) -> Message:
            check_update_uid(kind, current, obj)
            return self._merge_update(kind, current, obj, status=status)

        return await self.guaranteed_update(
            kind, namespace, meta.name, mutate, precondition_rv=meta.resource_version
        )

    def _merge_update(self, kind: Kind, current: Message, new: Message, *, status: bool) -> Message:
        """The object that an update of `current` to `new` stores (spec/status split)."""
        old_meta = _meta(current)
        if status:
            # updateStatus changes status only (labels and annotations too, as upstream allows
            # for nodes; we keep metadata from the old object for every kind but those whose
            # status updates write annotations: see kemu.machinery.update_strategy). So the
            # result is the stored object with `new`'s status (`new` is only read).
            result = _copy(current)
            result.status.CopyFrom(new.status)  # type: ignore[attr-defined]
            apply_status_update_metadata(result, new)
            if isinstance(result, types_pb2.Pod) and isinstance(current, types_pb2.Pod):
                admission.drop_disabled_pod_status_fields(
                    result,
                    current,
                    observed_generation=self._gates.enabled(POD_OBSERVED_GENERATION_TRACKING),
                )
                backfill_qos_class(result, current)
        else:
            result = _copy(new)
            meta = _meta(result)
            # Identity and server-managed metadata cannot be changed by an update.
            for f in ("name", "namespace", "generation"):
                setattr(meta, f, getattr(old_meta, f))
            # An update without a uid keeps the stored one; a patch that changes it is Invalid.
            meta.uid = meta.uid or old_meta.uid
            meta.creation_timestamp.CopyFrom(old_meta.creation_timestamp)
            if old_meta.HasField("deletion_timestamp"):
                meta.deletion_timestamp.CopyFrom(old_meta.deletion_timestamp)
                meta.deletion_grace_period_seconds = old_meta.deletion_grace_period_seconds
            else:
                meta.ClearField("deletion_timestamp")
                meta.ClearField("deletion_grace_period_seconds")
            meta.resource_version = old_meta.resource_version
            if kind.has_status:
                result.status.CopyFrom(current.status)  # type: ignore[attr-defined]
            set_defaults(result)  # upstream defaults every decoded object
            if isinstance(result, types_pb2.Pod):  # admission runs on create and update
                admission.admit_default_toleration_seconds(result, self._toleration_seconds)
            strategy_for(kind).prepare_for_update(result, current, self._strategy_options)
            if bumps_generation(current, result):
                meta.generation = old_meta.generation + 1
        causes = validate_object(result, old=current)
        if causes:
            raise Invalid.from_causes(f'{kind.kind} "{old_meta.name}"', causes)
        return result

    # ------------------------------------------------------------ patch

    async def patch(
        self,
        resource: str,
        namespace: str,
        name: str,
        patch_text: str,
        subresource: str,
        patch_type: str = patches.MERGE,
        unknown: convert.UnknownFields | None = None,
    ) -> Message:
        """A PATCH of any type (kemu.machinery.patch) on the stored object's JSON, in the
        compare-and-swap loop; then the same rules as an update of the subresource. Unknown
        fields in the result: see convert.UnknownFields (fieldValidation)."""
        kind = kind_for_resource(resource)
        namespace = (namespace or "default") if kind.namespaced else ""
        if patch_type == patches.MERGE:
            patch: Any = admission.parse_patch(patch_text)
        else:
            patch = jsonutil.loads(patch_text, "the patch")
        if subresource not in ("", "status", "resize", ns_rules.FINALIZE_SUBRESOURCE):
            raise BadRequest(f'unknown subresource "{subresource}"')
        if subresource == ns_rules.FINALIZE_SUBRESOURCE and kind is not _NAMESPACE:
            raise NotFound(
                f"the server could not find the requested resource ({resource}/{subresource})"
            )
        if subresource == "status" and not kind.has_status:
            raise NotFound(f"the server could not find the requested resource ({resource}/status)")
        if subresource == "resize" and kind.kind != "Pod":
            raise NotFound(f"the server could not find the requested resource ({resource}/resize)")
        pinned = ""
        meta_patch = patch.get("metadata") if isinstance(patch, dict) else None
        if isinstance(meta_patch, dict) and meta_patch.get("resourceVersion") is not None:
            pinned = str(meta_patch["resourceVersion"])

        def mutate(current: Message) -> Message:
            if unknown is not None:
                unknown.found.clear()  # this attempt's (the loop may retry)
            try:
                if patch_type == patches.MERGE and subresource == "status":
                    # (the status strategy takes every other field from `current`)
                    patched = merge_patched(kind, current, patch, unknown)
                else:
                    patched_dict = patches.apply(patch_type, convert.to_dict(current), patch, kind)
                    patched = convert.from_dict(kind, patched_dict, unknown)
            except Invalid as e:
                raise Invalid(f"the patch is invalid: {e.message}", e.causes) from None
            _meta(patched).resource_version = _meta(current).resource_version
            if subresource == "resize":
                assert isinstance(current, types_pb2.Pod) and isinstance(patched, types_pb2.Pod)
                return self._apply_resize(current, patched)
            if subresource == ns_rules.FINALIZE_SUBRESOURCE:
                assert isinstance(current, types_pb2.Namespace)
                assert isinstance(patched, types_pb2.Namespace)
                return self._finalize(current, patched)
            return self._merge_update(kind, current, patched, status=subresource == "status")

        result = await self.guaranteed_update(kind, namespace, name, mutate, precondition_rv=pinned)
        if subresource == ns_rules.FINALIZE_SUBRESOURCE:
            return await self._remove_if_finalized(result)
        return result

    def _finalize(self, current: types_pb2.Namespace, new: types_pb2.Namespace) -> Message:
        result = ns_rules.prepare_for_finalize(new, current)
        causes = validate_object(result, old=current)
        if causes:
            raise Invalid.from_causes(f'Namespace "{current.metadata.name}"', causes)
        return result

    async def _remove_if_finalized(self, ns: Message) -> Message:
        """Upstream's ShouldDeleteNamespaceDuringUpdate: a terminating namespace whose last
        finalizer is gone is deleted by the write that removed it."""
        assert isinstance(ns, types_pb2.Namespace)
        meta = ns.metadata
        if not meta.HasField("deletion_timestamp") or ns.spec.finalizers or meta.finalizers:
            return ns
        try:
            return await self._remove(_NAMESPACE, ns, int(meta.resource_version))
        except (Conflict, NotFound):
            return ns  # someone else wrote or removed it since: their write decides

    # ------------------------------------------------------------ delete

    async def delete(
        self,
        resource: str,
        namespace: str,
        name: str,
        *,
        grace_period: int | None,
        uid: str | None,
        resource_version: str | None,
        propagation_policy: str | None = None,
        orphan_dependents: bool | None = None,
    ) -> Message:
        """Deletes, or marks deleting (graceful pods, finalizers): see kemu.machinery.deletion.
        Returns the object as it stands after the call."""
        kind = kind_for_resource(resource)
        namespace = (namespace or "default") if kind.namespaced else ""
        options = DeleteOptions(
            grace_period=grace_period,
            uid=uid,
            resource_version=resource_version,
            propagation_policy=propagation_policy,
            orphan_dependents=orphan_dependents,
        )
        options.validate()
        if kind is _NAMESPACE:
            return await self._delete_namespace(name, uid=uid, resource_version=resource_version)
        # As guaranteed_update: from the watch cache's object, confirming on the current
        # state an outcome a stale guess could have caused (upstream conditionalDelete).
        guess = await self._first_guess(kind, namespace, name)
        for _ in range(_CAS_RETRIES):
            current = guess.stored
            try:
                plan = plan_delete(current.obj, options, self._now())
            except Exception:
                if guess.current:
                    raise
                guess = _Guess(await self.read(kind, namespace, name), current=True)
                if guess.stored.revision == current.revision:
                    raise
                continue
            data = None
            if plan.outcome is not Outcome.KEEP and plan.outcome is not Outcome.DELETE:
                data = _stored_bytes(plan.obj)
            if plan.outcome is Outcome.KEEP or (
                data is not None and data == _stored_bytes(current.obj)
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
                    return await self._remove(kind, _copy(plan.obj), current.revision)
                written = await self._write(kind, plan.obj, current.revision, data)
            except StaleRevision as e:
                # retried on what the failed compare read (a pinned resourceVersion then
                # fails its precondition in plan_delete)
                guess = _Guess(self._stored(kind, e.current), current=True)
                continue
            if plan.outcome is Outcome.UPDATE_AND_DELETE:
                return await self._delete_marked(kind, written, pinned=resource_version)
            return written
        raise Conflict(_conflict(kind, name))

    async def _delete_marked(self, kind: Kind, marked: Message, *, pinned: str | None) -> Message:
        """Removes an object this DELETE has just marked with grace 0 (upstream: Storage.Delete
        after the graceful update, with the uid precondition and, when the caller pinned a
        resourceVersion, the one just written). A concurrent writer in between does not stop
        it; someone else removing it first is fine (upstream's ignoreNotFound)."""
        meta = _meta(marked)
        revision = int(meta.resource_version)
        for _ in range(_CAS_RETRIES):
            try:
                return await self._remove(kind, marked, revision)
            except NotFound:
                return marked
            except StaleRevision as e:
                if pinned is not None:
                    raise
                current = self._stored(kind, e.current)  # what the failed compare read
            if _meta(current.obj).uid != meta.uid:
                return marked
            marked, revision = current.obj, current.revision
            meta = _meta(marked)
        raise Conflict(_conflict(kind, meta.name))

    # ------------------------------------------------------------ pods/binding

    async def bind(self, binding: api_pb2.Binding) -> None:
        namespace = binding.metadata.namespace or "default"
        name = binding.metadata.name
        node = binding.target.name
        if not name:
            raise Invalid.field("metadata.name", "Required value")
        if not node:
            raise Invalid.field("target.name", "Required value")
        if binding.target.kind not in ("", "Node"):
            raise Invalid.field("target.kind", f'must be "Node", not "{binding.target.kind}"')
        clear_nnn = self._gates.enabled(CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING)
        await self.lifecycle.admit_create("pods", name, namespace)  # pods/binding is a create
        # The binding's uid and resourceVersion are storage preconditions, as upstream's
        # BindingREST: a pod deleted and re-created under the same name is never bound to
        # the node chosen for the old one.
        # (In the mutation: on a stale guess from the watch cache they are confirmed on the
        # current pod before a Conflict is returned, as upstream's storage preconditions.)
        uid = binding.metadata.uid
        pinned = binding.metadata.resource_version

        def mutate(obj: Message) -> Message:
            assert isinstance(obj, types_pb2.Pod)
            check_binding_preconditions(obj, uid=uid, resource_version=pinned)
            check_bindable(obj)
            obj.spec.node_name = node
            for k, v in binding.metadata.annotations.items():
                obj.metadata.annotations[k] = v
            if clear_nnn:
                obj.status.nominated_node_name = ""
            set_scheduled(
                obj, self._now(), tracking=self._gates.enabled(POD_OBSERVED_GENERATION_TRACKING)
            )
            return obj

        await self.guaranteed_update(_POD, namespace, name, mutate)

    # ------------------------------------------------------------ pods/resize

    async def resize(self, pod: types_pb2.Pod) -> types_pb2.Pod:
        namespace = pod.metadata.namespace or "default"

        def mutate(current: Message) -> Message:
            assert isinstance(current, types_pb2.Pod)
            return self._apply_resize(current, pod)

        result = await self.guaranteed_update(
            _POD,
            namespace,
            pod.metadata.name,
            mutate,
            precondition_rv=pod.metadata.resource_version,
        )
        assert isinstance(result, types_pb2.Pod)
        return result

    def _apply_resize(self, current: types_pb2.Pod, desired: types_pb2.Pod) -> types_pb2.Pod:
        if not self._gates.enabled(IN_PLACE_POD_VERTICAL_SCALING):
            raise NotFound(
                "the server could not find the requested resource (pods/resize): "
                "feature gate InPlacePodVerticalScaling is disabled"
            )
        result = admission.resize_pod(current, desired)
        # Not validated as an update: resize changes what updates may not.
        causes = validate_object(result)
        if causes:
            raise Invalid.from_causes(f'Pod "{current.metadata.name}"', causes)
        admission.check_resize_qos(current, result)
        return result

    # ------------------------------------------------------------ pods/eviction

    async def evict(self, eviction: api_pb2.Eviction) -> None:
        await self.eviction.create(eviction)


@functools.cache
def _patchable_fields(desc: Descriptor) -> dict[str, str]:
    """The top-level fields of a kind that a merge patch can rewrite one at a time: JSON name
    to field name of each singular field of a plain message type (metadata, spec, status)."""
    out = {}
    for fd in sorted(desc.fields, key=lambda fd: fd.number):
        sub = fd.message_type
        if (
            sub is None
            or fd.is_repeated
            or sub.full_name in ("google.protobuf.Timestamp", "kemu.api.v1.IntOrString")
        ):
            continue
        out[fd.json_name] = fd.name
    return out


@functools.cache
def _string_fields(desc: Descriptor) -> dict[str, str]:
    """JSON name to field name of a message's singular string fields."""
    return {
        fd.json_name: fd.name
        for fd in desc.fields
        if fd.type == FieldDescriptor.TYPE_STRING and not fd.is_repeated
    }


def merge_patched(
    kind: Kind,
    current: Message,
    patch: dict[str, Any],
    unknown: convert.UnknownFields | None = None,
) -> Message:
    """`from_dict(kind, merge_patch(to_dict(current), patch), unknown)`, converting only the
    top-level fields the patch names (the status PATCHes of schedulers and kubelets convert
    metadata and status, not the spec): a merge patch leaves every other top-level key as it
    was. The patched fields are filled in the order the whole object's JSON would list them
    (set fields in field order, then new ones in the patch's order), so the first Invalid
    field and the unknown fields found are the same. A patch naming anything else
    (apiVersion, kind, a scalar or unknown field) takes the whole round trip.

    An untouched field is the current one, where the round trip would give back its JSON
    reading: the same but for what the JSON cannot carry (an IntOrString holding neither an
    int nor a string). So the registry uses this for the status subresource only, whose
    strategy takes every field but the status (and the metadata the patch names) from the
    stored object."""
    fields = _patchable_fields(current.DESCRIPTOR)
    if not all(key in fields for key in patch):
        return convert.from_dict(
            kind, patches.apply(patches.MERGE, convert.to_dict(current), patch, kind), unknown
        )
    present = [key for key in fields if key in patch and current.HasField(fields[key])]
    absent = [key for key in patch if key not in present]
    out = _copy(current)
    for key in (*present, *absent):
        name = fields[key]
        value = patch[key]
        if value is None:  # null removes the field
            out.ClearField(name)
            continue
        strings = _string_fields(getattr(current, name).DESCRIPTOR)
        if (
            isinstance(value, dict)
            and value
            and all(k in strings and isinstance(v, str) for k, v in value.items())
        ):
            # Strings set, nothing else (a status PATCH's metadata.resourceVersion): what
            # the round trip would give, without it.
            child = getattr(out, name)
            for k, v in value.items():
                setattr(child, strings[k], v)
            child.SetInParent()
            continue
        before = convert.message_to_dict(getattr(current, name)) if key in present else None
        out.ClearField(name)
        child = getattr(out, name)
        convert.fill_message(child, convert.merge_patch(before, value), key, unknown)
        child.SetInParent()
    if unknown is not None:
        unknown.check()
    return out


def _stored_bytes(obj: Message) -> bytes:
    """The bytes `obj` is stored as, deterministic (map entries in key order) so that equal
    objects give equal bytes: two objects store the same data, resourceVersion aside (etcd's
    mod revision is), when these are equal, as upstream compares the data it would write with
    the data it read."""
    meta = _meta(obj)
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


def _not_found(kind: Kind, name: str) -> str:
    return f'{kind.resource} "{name}" not found'


def _conflict(kind: Kind, name: str) -> str:
    return (
        f'Operation cannot be fulfilled on {kind.resource} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )
