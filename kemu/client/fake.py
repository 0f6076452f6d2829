"""An in-memory ApiClient for unit tests of controllers, the scheduler and kubelets.

Faithful where callers depend on it, and held to the apiserver by
tests/integration/harness/test_fake_contract.py (same calls, same outcomes and error messages):
resourceVersions increase across all kinds (one counter, like etcd's revision) and a write that
changes nothing keeps it; create sets uid, creationTimestamp, generation 1; update and
update_status check a non-empty resourceVersion (Conflict) and keep the other half of the object
(status, resp. everything but status) and the deletion fields; patch is a JSON merge patch through
kemu.machinery.convert (a metadata.resourceVersion in it is a precondition); delete follows
kemu.machinery.deletion as the apiserver does: a bound, unfinished pod is graceful
(deletionTimestamp and deletionGracePeriodSeconds; a shorter grace replaces the deadline, grace
0 removes it), an object with finalizers (or a Foreground/Orphan propagationPolicy, which adds
one) stays, being deleted, until an update or patch removes its last finalizer, anything else
goes at once, with the uid and resourceVersion preconditions of the apiserver (a Namespace, as
there, is first marked Terminating and goes once the `finalize` subresource has emptied
spec.finalizers); an object being deleted takes no new finalizers; bind refuses bound,
terminating and gated pods,
sets spec.nodeName and PodScheduled=True and clears status.nominatedNodeName iff
ClearingNominatedNodeNameAfterBinding is enabled in `gates`; evict deletes the pod (no
PodDisruptionBudget check).

The writes mean what the apiserver's do where the rules are pure: an update and a status update
go through the kinds' strategies (kemu.machinery.strategy: before_update, what a status update
may change), and a subresource is looked up in the one table (kemu.machinery.subresources).
Simple where the apiserver runs admission or needs its store: create does no defaulting, no
Priority admission, no NamespaceLifecycle (objects may live in namespaces that do not exist,
immortal namespaces may be deleted), no status reset and no validation, so tests can store
objects in any state (as client-go's fake clientset stores what it is given).

List and watch filter by namespace, label selector and field selector, parsed and matched by
the apiserver's own code (kemu.machinery.selection), so the same selectors are refused; a watch from a
resourceVersion replays the buffered history after it. For failure tests:
`compact()` makes older resourceVersions Gone, `drop_watches()` ends (or fails) every open
watch as a server restart would, `hold_watches(resource)` delays one resource's watch events
until `release_watches` (an informer lagging behind the others), `fail(verb, error)` makes
calls raise. `actions` records
every call.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import string
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import cast

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from google.protobuf.message import Message

from kemu.api.v1 import api_pb2, clock_pb2, types_pb2
from kemu.client.interface import (
    ADDED,
    BOOKMARK,
    DEFAULT_NAMESPACE,
    DELETED,
    MODIFIED,
    ListResult,
    M,
    WatchEvent,
)
from kemu.client.pager import list_pages
from kemu.component.clock import Clock, RealClock
from kemu.component.featuregate import (
    CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING,
    POD_OBSERVED_GENERATION_TRACKING,
    FeatureGates,
)
from kemu.component.strategy_options import strategy_options
from kemu.component.version import DEFAULT_VERSION
from kemu.machinery import convert, kinds, subresources
from kemu.machinery import namespaces as ns_rules
from kemu.machinery.convert import timestamp
from kemu.machinery.delete_options import check_delete_preconditions, check_preconditions
from kemu.machinery.deletion import (
    DeleteOptions,
    Outcome,
    plan_delete,
    should_delete_during_update,
)
from kemu.machinery.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    Subject,
)
from kemu.machinery.eviction import add_disruption_target
from kemu.machinery.keys import object_meta
from kemu.machinery.kinds import INITIAL_EVENTS_END_ANNOTATION
from kemu.machinery.pod_conditions import set_scheduled
from kemu.machinery.pod_strategy import check_bindable, check_binding_preconditions
from kemu.machinery.selection import RequestFilter
from kemu.machinery.strategy import before_update, strategy_for
from kemu.machinery.update_strategy import (
    bumps_generation,
    check_update_uid,
    has_generation,
)
from kemu.machinery.validation.meta import validate_no_new_finalizers
from kemu.machinery.virtual_time import REAL_TIME_CLOCK

_Key = tuple[str, str, str]  # resource, namespace, name


@dataclass(frozen=True)
class Action:
    """One call made to the fake. `object` is a copy of the object sent (create, update, ...)."""

    verb: str  # create get list watch update update_status patch delete bind resize evict version
    resource: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    object: Message | None = None
    patch: str = ""
    node_name: str = ""  # bind
    uid: str = ""  # bind
    resource_version: str = ""  # list, watch
    label_selector: str = ""  # list, watch


@dataclass
class _Failure:
    verb: str
    error: ApiError
    resource: str | None
    times: int | None


@dataclass(frozen=True)
class _Change:
    rv: int
    type: str
    resource: str
    obj: Message
    old: Message | None


# ---------------------------------------------------------------- helpers


def _copy(obj: M) -> M:
    out = type(obj)()
    out.CopyFrom(obj)
    return out


def _kind(cls: type[Message]) -> kinds.Kind:
    return kinds.kind_of(cls())


def _ns(kind: kinds.Kind, namespace: str) -> str:
    return (namespace or DEFAULT_NAMESPACE) if kind.namespaced else ""


def _not_found(kind: kinds.Kind, name: str) -> NotFound:
    return NotFound(
        f'{kind.qualified_resource} "{name}" not found',
        subject=Subject(name, kind.group, kind.resource),
    )


class _Watch:
    def __init__(
        self,
        resource: str,
        namespace: str,
        selection: RequestFilter,
    ) -> None:
        self.resource = resource
        self.namespace = namespace
        self.selection = selection
        self.send: MemoryObjectSendStream[WatchEvent[Message] | ApiError]
        self.receive: MemoryObjectReceiveStream[WatchEvent[Message] | ApiError]
        self.send, self.receive = anyio.create_memory_object_stream[WatchEvent[Message] | ApiError](
            math.inf
        )

    def matches(self, obj: Message) -> bool:
        meta = object_meta(obj)
        if self.namespace and meta.namespace != self.namespace:
            return False
        return self.selection.matches(obj)

    def event_for(self, change: _Change) -> WatchEvent[Message] | None:
        """The event this watcher sees: an object entering or leaving its selection is
        ADDED or DELETED, as the apiserver's watch cache does."""
        if change.resource != self.resource:
            return None
        now = self.matches(change.obj)
        before = change.old is not None and self.matches(change.old)
        typ = change.type
        if typ == MODIFIED:
            if now and not before:
                typ = ADDED
            elif before and not now:
                typ = DELETED
                now = True
        if not now:
            return None
        return WatchEvent(typ, _copy(change.obj))


class _WatchIterator(AsyncIterator[WatchEvent[M]]):
    def __init__(self, watch: _Watch, error: ApiError | None) -> None:
        self._watch = watch
        self._error = error

    async def __anext__(self) -> WatchEvent[M]:
        if self._error is not None:
            err, self._error = self._error, None
            raise err
        try:
            item = await self._watch.receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None
        if isinstance(item, ApiError):
            raise item
        return cast(WatchEvent[M], item)


class FakeClient:
    """An in-memory ApiClient. Objects handed in and out are copies."""

    def __init__(
        self,
        *objects: Message,
        clock: Clock | None = None,
        history_limit: int = 10_000,
        gates: FeatureGates | None = None,
    ) -> None:
        self.clock: Clock = clock or RealClock()
        self.gates = gates or FeatureGates.for_version(DEFAULT_VERSION)
        """The apiserver's gates (ClearingNominatedNodeNameAfterBinding for bind, and those
        the strategies read)."""
        self._strategy = strategy_options(self.gates)
        self.history_limit = history_limit
        self.actions: list[Action] = []
        self.version_info = api_pb2.VersionInfo(
            server=api_pb2.ComponentVersion(
                component="kube-apiserver",
                identity="fake",
                emulated_version="1.37",
                binary_version="1.37",
            )
        )
        self._rv = 0
        self._objects: dict[_Key, Message] = {}
        self._history: list[_Change] = []
        self._compacted = 0
        self._watches: list[_Watch] = []
        self._held: dict[str, list[tuple[_Watch, WatchEvent[Message]]]] = {}
        self._failures: list[_Failure] = []
        for obj in objects:
            self.add(obj)

    # ------------------------------------------------------------ test controls

    @property
    def resource_version(self) -> str:
        """The current revision (of the last change to any object)."""
        return str(self._rv)

    def add(self, obj: Message) -> Message:
        """Stores an object as create would, without recording an action; returns the copy."""
        return self._create(obj)

    def compact(self, resource_version: str | None = None) -> None:
        """Forgets the history up to `resource_version` (default: now): watches from an older
        one get Gone."""
        rv = self._rv if resource_version is None else int(resource_version)
        self._compacted = max(self._compacted, rv)
        self._history = [c for c in self._history if c.rv > self._compacted]

    def drop_watches(self, error: ApiError | None = None) -> int:
        """Ends every open watch: cleanly, or by raising `error` from its iteration (e.g.
        Unavailable for a server that went away). Returns how many were dropped."""
        dropped = self._watches
        self._watches = []
        for w in dropped:
            if error is not None:
                w.send.send_nowait(error)
            w.send.close()
        return len(dropped)

    def hold_watches(self, resource: str) -> None:
        """Holds back the events of `resource`'s watches (a lagging watch stream: the
        informers of that kind fall behind the others) until `release_watches`."""
        self._held.setdefault(resource, [])

    def release_watches(self, resource: str) -> None:
        """Delivers the held events, in order, to the watches still open."""
        for w, event in self._held.pop(resource, []):
            if w in self._watches:
                w.send.send_nowait(event)

    @property
    def open_watches(self) -> int:
        return len(self._watches)

    def fail(
        self,
        verb: str,
        error: ApiError,
        *,
        resource: str | None = None,
        times: int | None = None,
    ) -> None:
        """Makes calls of `verb` (optionally only on `resource`) raise `error`, `times` times
        or until `heal()`."""
        self._failures.append(_Failure(verb, error, resource, times))

    def heal(self) -> None:
        self._failures.clear()

    def clear_actions(self) -> None:
        self.actions.clear()

    def verbs(self, resource: str | None = None) -> list[str]:
        """The verbs called so far, in order (optionally on one resource)."""
        return [a.verb for a in self.actions if resource is None or a.resource == resource]

    # ------------------------------------------------------------ internals

    async def _enter(self, action: Action) -> None:
        await anyio.lowlevel.checkpoint()
        self.actions.append(action)
        for f in self._failures:
            if f.verb == action.verb and (f.resource is None or f.resource == action.resource):
                if f.times is not None:
                    f.times -= 1
                    if f.times <= 0:
                        self._failures.remove(f)
                raise type(f.error)(f.error.message, list(f.error.causes))

    def _record(self, typ: str, resource: str, obj: Message, old: Message | None) -> None:
        change = _Change(self._rv, typ, resource, _copy(obj), old)
        self._history.append(change)
        if len(self._history) > self.history_limit:  # as etcd compaction: older RVs are Gone
            dropped = self._history.pop(0)
            self._compacted = max(self._compacted, dropped.rv)
        held = self._held.get(resource)
        for w in self._watches:
            event = w.event_for(change)
            if event is None:
                continue
            if held is not None:
                held.append((w, event))
            else:
                w.send.send_nowait(event)

    def _stored(self, kind: kinds.Kind, namespace: str, name: str) -> Message:
        obj = self._objects.get((kind.resource, namespace, name))
        if obj is None:
            raise _not_found(kind, name)
        return obj

    def _create(self, obj: Message) -> Message:
        kind = kinds.kind_of(obj)
        new = _copy(obj)
        meta = object_meta(new)
        meta.namespace = _ns(kind, meta.namespace)
        if not meta.name:
            if not meta.generate_name:
                raise Invalid.field("metadata.name", "name or generateName is required")
            suffix = "".join(random.choices(string.ascii_lowercase + string.digits, k=5))
            meta.name = meta.generate_name + suffix
        key = (kind.resource, meta.namespace, meta.name)
        if key in self._objects:
            raise AlreadyExists(
                f'{kind.qualified_resource} "{meta.name}" already exists',
                subject=Subject(meta.name, kind.group, kind.resource),
            )
        self._rv += 1
        meta.uid = str(uuid.uuid4())
        meta.resource_version = str(self._rv)
        meta.generation = 1 if has_generation(obj) else 0
        meta.creation_timestamp.CopyFrom(timestamp(self.clock.now()))
        meta.ClearField("deletion_timestamp")
        self._objects[key] = new
        self._record(ADDED, kind.resource, new, None)
        return _copy(new)

    def _check_rv(self, kind: kinds.Kind, stored: Message, wanted: str) -> None:
        if wanted and wanted != object_meta(stored).resource_version:
            raise Conflict(
                f"Operation cannot be fulfilled on {kind.qualified_resource} "
                f'"{object_meta(stored).name}": '
                "the object has been modified; please apply your changes to the latest "
                "version and try again"
            )

    def _store(
        self,
        kind: kinds.Kind,
        old: Message,
        new: Message,
        *,
        deleting: bool = False,
        bump_generation: bool = True,
    ) -> Message:
        """Writes `new` over `old` (same key): keeps identity fields, bumps the revision unless
        nothing changed. An update keeps the deletion fields, takes no new finalizers once
        deleting and removes the object when it leaves none (kemu.machinery.deletion); a
        DELETE's write (`deleting`) takes the deletion fields and generation from `new`."""
        meta, old_meta = object_meta(new), object_meta(old)
        meta.name, meta.namespace = old_meta.name, old_meta.namespace
        meta.uid = old_meta.uid
        meta.creation_timestamp.CopyFrom(old_meta.creation_timestamp)
        if not deleting:
            if old_meta.HasField("deletion_timestamp"):
                meta.deletion_timestamp.CopyFrom(old_meta.deletion_timestamp)
                meta.deletion_grace_period_seconds = old_meta.deletion_grace_period_seconds
            else:
                meta.ClearField("deletion_timestamp")
                meta.ClearField("deletion_grace_period_seconds")
            meta.generation = old_meta.generation
            if bump_generation and bumps_generation(old, new):
                meta.generation += 1
            causes = validate_no_new_finalizers(meta, old_meta)
            if causes:
                raise Invalid.from_causes(
                    f'{kind.qualified_kind} "{meta.name}"',
                    causes,
                    Subject(meta.name, kind.group, kind.kind),
                )
            if should_delete_during_update(old, new):
                deleted = self._delete(kind, meta.namespace, meta.name)
                meta.resource_version = object_meta(deleted).resource_version
                return _copy(new)
        meta.resource_version = old_meta.resource_version
        if new.SerializeToString(deterministic=True) == old.SerializeToString(deterministic=True):
            return _copy(old)  # a no-op write keeps the resourceVersion, as the apiserver
        self._rv += 1
        meta.resource_version = str(self._rv)
        self._objects[(kind.resource, meta.namespace, meta.name)] = new
        self._record(MODIFIED, kind.resource, new, old)
        return _copy(new)

    def _update(self, obj: Message, *, status: bool) -> Message:
        kind = kinds.kind_of(obj)
        meta = object_meta(obj)
        old = self._stored(kind, _ns(kind, meta.namespace), meta.name)
        self._check_rv(kind, old, meta.resource_version)
        if status:
            subresources.check(kind, subresources.STATUS.name, subresources.UPDATE)
            written = strategy_for(kind).prepare_for_status_update(
                obj, old, self._strategy, self.clock.now()
            )
            return self._store(kind, old, written, bump_generation=False)
        return self._store(kind, old, before_update(kind, old, obj, self._strategy))

    def _resize(self, pod: types_pb2.Pod) -> types_pb2.Pod:
        kind = kinds.kind_of(pod)
        old = cast(
            types_pb2.Pod, self._stored(kind, _ns(kind, pod.metadata.namespace), pod.metadata.name)
        )
        self._check_rv(kind, old, pod.metadata.resource_version)
        new = _copy(old)
        wanted = {c.name: c for c in pod.spec.containers}
        for c in new.spec.containers:
            if c.name in wanted:
                c.resources.CopyFrom(wanted[c.name].resources)
                del c.resize_policy[:]
                c.resize_policy.extend(wanted[c.name].resize_policy)
        return cast(types_pb2.Pod, self._store(kind, old, new))

    def _delete_namespace(self, kind: kinds.Kind, stored: types_pb2.Namespace) -> Message:
        """The apiserver's namespace REST rules: Terminating first, removed once finalized."""
        if not stored.metadata.HasField("deletion_timestamp"):
            new = _copy(stored)
            ns_rules.begin_deletion(new, timestamp(self.clock.now()))
            return self._store(kind, stored, new, deleting=True)
        if stored.spec.finalizers or stored.metadata.finalizers:
            return _copy(stored)
        return self._delete(kind, "", stored.metadata.name)

    def _finalize(self, stored: types_pb2.Namespace, new: types_pb2.Namespace) -> Message:
        kind = kinds.kind_of(stored)
        written = self._store(kind, stored, ns_rules.prepare_for_finalize(new, stored))
        assert isinstance(written, types_pb2.Namespace)
        meta = written.metadata
        if meta.HasField("deletion_timestamp") and not written.spec.finalizers:
            if not meta.finalizers:
                return self._delete(kind, "", meta.name)
        return written

    def _delete(self, kind: kinds.Kind, namespace: str, name: str) -> Message:
        old = self._stored(kind, namespace, name)
        del self._objects[(kind.resource, namespace, name)]
        self._rv += 1
        gone = _copy(old)
        object_meta(gone).resource_version = str(self._rv)
        self._record(DELETED, kind.resource, gone, old)
        return _copy(gone)

    # ------------------------------------------------------------ ApiClient

    async def close(self) -> None:
        self.drop_watches()

    async def __aenter__(self) -> FakeClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def wait_ready(self, timeout: float | None = None) -> api_pb2.VersionInfo:  # noqa: ASYNC109
        return await self.version()

    async def version(self) -> api_pb2.VersionInfo:
        await self._enter(Action("version", ""))
        out = api_pb2.VersionInfo()
        out.CopyFrom(self.version_info)
        return out

    async def clock_status(self) -> clock_pb2.ClockStatus:
        """The apiserver's in real time (`clock`'s time)."""
        await self._enter(Action("clock_status", ""))
        return clock_pb2.ClockStatus(mode="real", now=self.clock.now())

    async def set_clock_rate(self, rate: float) -> clock_pb2.ClockStatus:
        await self._enter(Action("set_clock_rate", ""))
        raise BadRequest(REAL_TIME_CLOCK)

    async def advance_clock(
        self,
        seconds: float,
        timeout: float = 0.0,  # noqa: ASYNC109
    ) -> clock_pb2.ClockStatus:
        await self._enter(Action("advance_clock", ""))
        raise BadRequest(REAL_TIME_CLOCK)

    async def create(self, obj: M) -> M:
        kind = kinds.kind_of(obj)
        meta = object_meta(obj)
        await self._enter(
            Action("create", kind.resource, _ns(kind, meta.namespace), meta.name, object=_copy(obj))
        )
        return cast(M, self._create(obj))

    async def get(self, kind: type[M], name: str, namespace: str = "") -> M:
        k = _kind(kind)
        ns = _ns(k, namespace)
        await self._enter(Action("get", k.resource, ns, name))
        return cast(M, _copy(self._stored(k, ns, name)))

    async def list(
        self,
        kind: type[M],
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
        limit: int = 0,
        continue_: str = "",
    ) -> ListResult[M]:
        k = _kind(kind)
        ns = namespace if k.namespaced else ""
        await self._enter(
            Action(
                "list",
                k.resource,
                ns,
                resource_version=resource_version,
                label_selector=label_selector,
            )
        )
        selection = RequestFilter(k.resource, label_selector, field_selector)
        keys = sorted(
            key
            for key, obj in self._objects.items()
            if key[0] == k.resource and (not ns or key[1] == ns) and selection.matches(obj)
        )
        if continue_:
            after = tuple(json.loads(continue_))
            keys = [key for key in keys if key > after]
        token = ""
        if limit and len(keys) > limit:
            keys = keys[:limit]
            token = json.dumps(list(keys[-1]))
        items = [cast(M, _copy(self._objects[key])) for key in keys]
        return ListResult(items, str(self._rv), token)

    async def list_all(
        self,
        kind: type[M],
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> ListResult[M]:
        return await list_pages(
            self,
            kind,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
        )

    def watch(
        self,
        kind: type[M],
        namespace: str = "",
        *,
        resource_version: str = "",
        label_selector: str = "",
        field_selector: str = "",
        allow_watch_bookmarks: bool = False,
        send_initial_events: bool | None = None,
        resource_version_match: str = "",
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent[M]]]:
        return self._watch(
            kind,
            namespace,
            resource_version,
            label_selector,
            field_selector,
            initial_events_end=bool(send_initial_events),
        )

    @asynccontextmanager
    async def _watch(
        self,
        kind: type[M],
        namespace: str,
        resource_version: str,
        label_selector: str,
        field_selector: str,
        *,
        initial_events_end: bool = False,
    ) -> AsyncIterator[AsyncIterator[WatchEvent[M]]]:
        k = _kind(kind)
        ns = namespace if k.namespaced else ""
        await self._enter(
            Action(
                "watch",
                k.resource,
                ns,
                resource_version=resource_version,
                label_selector=label_selector,
            )
        )
        w = _Watch(k.resource, ns, RequestFilter(k.resource, label_selector, field_selector))
        error: ApiError | None = None
        # Registration and replay happen without a checkpoint in between: nothing is missed.
        if resource_version in ("", "0") or initial_events_end:
            for key in sorted(self._objects):
                obj = self._objects[key]
                if key[0] == k.resource and w.matches(obj):
                    w.send.send_nowait(WatchEvent(ADDED, _copy(obj)))
            if initial_events_end:
                mark = k.message()
                object_meta(mark).resource_version = str(self._rv)
                object_meta(mark).annotations[INITIAL_EVENTS_END_ANNOTATION] = "true"
                w.send.send_nowait(WatchEvent(BOOKMARK, mark))
        else:
            since = int(resource_version)
            if since < self._compacted:
                error = Gone(f"too old resource version: {since} ({self._compacted})")
            else:
                for change in self._history:
                    if change.rv > since:
                        event = w.event_for(change)
                        if event is not None:
                            w.send.send_nowait(event)
        if error is None:
            self._watches.append(w)
        else:
            w.send.close()
        try:
            yield _WatchIterator(w, error)
        finally:
            if w in self._watches:
                self._watches.remove(w)
            w.send.close()
            w.receive.close()

    async def update(self, obj: M) -> M:
        kind = kinds.kind_of(obj)
        meta = object_meta(obj)
        ns = _ns(kind, meta.namespace)
        await self._enter(Action("update", kind.resource, ns, meta.name, object=_copy(obj)))
        check_update_uid(kind, self._stored(kind, ns, meta.name), obj)
        return cast(M, self._update(obj, status=False))

    async def update_status(self, obj: M) -> M:
        kind = kinds.kind_of(obj)
        meta = object_meta(obj)
        ns = _ns(kind, meta.namespace)
        await self._enter(
            Action("update_status", kind.resource, ns, meta.name, "status", object=_copy(obj))
        )
        check_update_uid(kind, self._stored(kind, ns, meta.name), obj)
        return cast(M, self._update(obj, status=True))

    async def patch(
        self,
        kind: type[M],
        name: str,
        patch: Mapping[str, object] | str,
        namespace: str = "",
        *,
        subresource: str = "",
    ) -> M:
        k = _kind(kind)
        ns = _ns(k, namespace)
        body = patch if isinstance(patch, str) else json.dumps(dict(patch))
        await self._enter(Action("patch", k.resource, ns, name, subresource, patch=body))
        try:
            data = json.loads(body)
        except ValueError as e:
            raise BadRequest(f"the patch is not valid JSON: {e}") from None
        if not isinstance(data, dict):
            raise BadRequest("a merge patch must be a JSON object")
        sub = subresources.check(k, subresource, subresources.PATCH)
        if sub is subresources.SCALE:
            raise BadRequest(f"{k.resource}/scale is served by the REST edge only")
        stored = self._stored(k, ns, name)
        patch_meta = data.get("metadata")
        if isinstance(patch_meta, dict) and patch_meta.get("resourceVersion"):
            self._check_rv(k, stored, str(patch_meta["resourceVersion"]))
        merged = convert.merge_patch(convert.to_dict(stored), data)
        obj = convert.from_dict(k, merged)
        object_meta(obj).resource_version = object_meta(stored).resource_version
        if sub is None:
            return cast(M, self._update(obj, status=False))
        if sub is subresources.STATUS:
            return cast(M, self._update(obj, status=True))
        if sub is subresources.FINALIZE:
            assert isinstance(obj, types_pb2.Namespace) and isinstance(stored, types_pb2.Namespace)
            return cast(M, self._finalize(stored, obj))
        assert isinstance(obj, types_pb2.Pod)
        return cast(M, self._resize(obj))

    async def list_custom(
        self, resource: str, namespace: str = ""
    ) -> tuple[types_pb2.CustomObject, ...]:
        """The fake serves no custom resources (no CRDs are established in it)."""
        return ()

    async def list_all_custom(
        self, resource: str, namespace: str = ""
    ) -> ListResult[types_pb2.CustomObject]:
        return ListResult([], str(self._rv), "")

    def watch_custom(
        self,
        resource: str,
        namespace: str = "",
        *,
        resource_version: str = "",
        allow_watch_bookmarks: bool = False,
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent[types_pb2.CustomObject]]]:
        raise NotFound(f"the server could not find the requested resource ({resource})")

    async def get_custom(
        self, resource: str, name: str, namespace: str = ""
    ) -> types_pb2.CustomObject:
        raise NotFound(f'{resource} "{name}" not found')

    async def patch_custom(
        self, resource: str, name: str, patch: Mapping[str, object], namespace: str = ""
    ) -> types_pb2.CustomObject:
        raise NotFound(f'{resource} "{name}" not found')

    async def delete_custom(
        self,
        resource: str,
        name: str,
        namespace: str,
        *,
        uid: str,
        propagation_policy: str,
        resource_version: str | None = None,
    ) -> None:
        raise NotFound(f'{resource} "{name}" not found')

    async def delete(
        self,
        kind: type[M],
        name: str,
        namespace: str = "",
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation_policy: str | None = None,
        orphan_dependents: bool | None = None,
    ) -> M:
        k = _kind(kind)
        ns = _ns(k, namespace)
        await self._enter(Action("delete", k.resource, ns, name))
        options = DeleteOptions(
            grace_period=grace_period_seconds,
            uid=uid,
            resource_version=resource_version,
            propagation_policy=propagation_policy,
            orphan_dependents=orphan_dependents,
        )
        options.validate()
        stored = self._stored(k, ns, name)
        if isinstance(stored, types_pb2.Namespace):
            check_preconditions(object_meta(stored), uid=uid, resource_version=resource_version)
            return cast(M, self._delete_namespace(k, stored))
        return cast(M, self._delete_with(k, ns, name, options))

    def _delete_with(self, k: kinds.Kind, ns: str, name: str, options: DeleteOptions) -> Message:
        stored = self._stored(k, ns, name)
        plan = plan_delete(stored, options, self.clock.now())
        if plan.outcome is Outcome.DELETE:
            return self._delete(k, ns, name)
        if plan.outcome is Outcome.KEEP:
            return _copy(stored)  # a graceful deletion is pending
        written = self._store(k, stored, plan.obj, deleting=True)
        if plan.outcome is Outcome.UPDATE_AND_DELETE:
            return self._delete(k, ns, name)
        return written

    async def bind(
        self,
        namespace: str,
        name: str,
        node_name: str,
        *,
        annotations: Mapping[str, str] | None = None,
        uid: str = "",
        resource_version: str = "",
    ) -> None:
        ns = namespace or DEFAULT_NAMESPACE
        await self._enter(Action("bind", "pods", ns, name, "binding", node_name=node_name, uid=uid))
        k = kinds.kind_of(types_pb2.Pod())
        old = cast(types_pb2.Pod, self._stored(k, ns, name))
        check_binding_preconditions(old, uid=uid, resource_version=resource_version)
        check_bindable(old)
        new = _copy(old)
        new.spec.node_name = node_name
        new.metadata.annotations.update(annotations or {})
        if self.gates.enabled(CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING):
            new.status.nominated_node_name = ""
        set_scheduled(
            new, self.clock.now(), tracking=self.gates.enabled(POD_OBSERVED_GENERATION_TRACKING)
        )
        self._store(k, old, new, bump_generation=False)  # a binding is not a spec update

    async def resize(self, pod: types_pb2.Pod) -> types_pb2.Pod:
        ns = pod.metadata.namespace or DEFAULT_NAMESPACE
        await self._enter(
            Action("resize", "pods", ns, pod.metadata.name, "resize", object=_copy(pod))
        )
        return self._resize(pod)

    async def evict(
        self,
        namespace: str,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation_policy: str | None = None,
        dry_run: bool = False,
    ) -> None:
        """The apiserver's eviction without PodDisruptionBudgets: the pod gets
        DisruptionTarget, then the DELETE with these options."""
        ns = namespace or DEFAULT_NAMESPACE
        await self._enter(Action("evict", "pods", ns, name, "eviction"))
        k = kinds.kind_of(types_pb2.Pod())
        options = DeleteOptions(
            grace_period=grace_period_seconds,
            uid=uid,
            resource_version=resource_version,
            propagation_policy=propagation_policy,
        )
        options.validate()
        stored = cast(types_pb2.Pod, self._stored(k, ns, name))
        check_delete_preconditions(
            stored.metadata, "Pod", uid=uid, resource_version=resource_version
        )
        if dry_run:
            plan_delete(stored, options, self.clock.now())
            return
        marked = _copy(stored)
        add_disruption_target(marked, self.clock.now())
        written = self._store(k, stored, marked, bump_generation=False)
        if resource_version is not None:
            options = dataclasses.replace(
                options, resource_version=object_meta(written).resource_version
            )
        self._delete_with(k, ns, name, options)
