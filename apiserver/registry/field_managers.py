"""managedFields on every write (issue #57 item 2): who writes, and the entries kept.

Upstream's handlers build a FieldManager per resource and subresource
(k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager, create.go, update.go, patch.go) and name
the manager of a write from `?fieldManager=` or else from the User-Agent, the part before its
first "/" (`managerOrUserAgent`, `prefixFromUserAgent`): kubectl-create, kubectl-edit,
kubectl-client-side-apply, kube-scheduler, kubelet. The edges serve each request inside
`serving(manager)` (the REST edge from the query and the User-Agent, the gRPC edge from the
user agent kemu.client sends: the component's upstream name); a write made by the apiserver
itself is "kube-apiserver"'s, as its loopback client's.

Tracking reads the two objects' JSON (kemu.machinery.convert); a write that changes none of an
object's top-level protobuf fields (compared as messages, which costs far less than JSON) keeps
its entries as they are, and only the top-level fields that differ are converted and compared.
"""

from __future__ import annotations

import contextlib
import logging
import unicodedata
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Final

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.machinery import convert
from kemu.machinery.apiextensions import custom
from kemu.machinery.errors import Cause, Conflict
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.kinds import Kind
from kemu.machinery.managedfields import entries, fieldpath, messages, schema, typed
from kemu.machinery.managedfields.entries import FieldManager, Managed, Manager
from kemu.machinery.managedfields.fieldpath import FieldSet
from kemu.machinery.managedfields.updater import Conflicts, VersionedSet

logger = logging.getLogger(__name__)

APISERVER: Final = "kube-apiserver"
FIELD_MANAGER_MAX_LENGTH: Final = 128

_MANAGER: ContextVar[str] = ContextVar("kemu_field_manager", default=APISERVER)
_SUBRESOURCE: ContextVar[str | None] = ContextVar("kemu_field_subresource", default=None)


@contextlib.contextmanager
def serving(manager: str) -> Iterator[None]:
    """Serves one request whose writes are `manager`'s."""
    reset = _MANAGER.set(manager)
    try:
        yield
    finally:
        _MANAGER.reset(reset)


@contextlib.contextmanager
def writing_through(subresource: str) -> Iterator[None]:
    """The writes made inside are a subresource's that the registry serves as a write of the
    object (the REST edge's scale: a patch of spec.replicas): their entries name it."""
    reset = _SUBRESOURCE.set(subresource)
    try:
        yield
    finally:
        _SUBRESOURCE.reset(reset)


def current() -> str:
    return _MANAGER.get()


def from_user_agent(user_agent: str) -> str:
    """prefixFromUserAgent: the characters before the first "/", printable ones only, at most
    128 bytes."""
    out = ""
    for ch in user_agent.split("/")[0]:
        if not ch.isprintable() or unicodedata.category(ch).startswith("C"):
            continue
        if len((out + ch).encode()) > FIELD_MANAGER_MAX_LENGTH:
            break
        out += ch
    return out


def from_grpc_user_agent(user_agent: str) -> str:
    """kemu.client's primary user agent is the component ("kube-scheduler"); gRPC appends its
    own ("grpc-python/1.66 grpc-c/..."), which is dropped."""
    return from_user_agent(user_agent.split(" ")[0]) if user_agent else APISERVER


# ---------------------------------------------------------------- per kind


_BUILTIN: Final[dict[tuple[str, str], FieldManager]] = {}


def _builtin_manager(kind: Kind, subresource: str) -> FieldManager:
    key = (kind.resource, subresource)
    fm = _BUILTIN.get(key)
    if fm is None:
        node = schema.for_kind(kind)
        fm = _BUILTIN[key] = FieldManager(node, kind.api_version, _ignored(kind, subresource, node))
    return fm


def _ignored(kind: Kind, subresource: str, node: schema.Node) -> FieldSet:
    """The fields a write of the main resource or of the status subresource does not own
    (the strategies' GetResetFields): a kind with a status subresource keeps status out of
    the main resource's sets, and everything but status and metadata out of status'."""
    if subresource == "status":
        return FieldSet.of(*((f"f:{n}",) for n in node.fields() if n not in ("status", "metadata")))
    if subresource == "" and "status" in node.fields() and kind.has_status:
        return FieldSet.of(("f:status",))
    return FieldSet()


def field_manager(kind: Kind, obj: Message, subresource: str) -> FieldManager:
    if not kind.custom:
        return _builtin_manager(kind, subresource)
    definition = custom.definition_for(kind)
    node = schema.for_custom(definition.storage.schema if definition is not None else None)
    ignored = FieldSet()
    if definition is not None and definition.storage.status:
        ignored = _ignored(kind, subresource, node)
    return FieldManager(node, kind.api_version, ignored)


def _meta(obj: Message) -> types_pb2.ObjectMeta:
    meta = obj.metadata  # type: ignore[attr-defined]
    assert isinstance(meta, types_pb2.ObjectMeta)
    return meta


def _meta_without_managed(meta: types_pb2.ObjectMeta) -> types_pb2.ObjectMeta:
    out = types_pb2.ObjectMeta()
    out.CopyFrom(meta)
    out.ClearField("managed_fields")
    out.resource_version = ""
    return out


def _changed_top_fields(old: Message, new: Message) -> list[str]:
    """The top-level fields that differ between two objects of a kind, compared as messages
    (metadata without managedFields and resourceVersion); their protobuf names."""
    out = []
    for fd in new.DESCRIPTOR.fields:
        a, b = getattr(old, fd.name), getattr(new, fd.name)
        if fd.name == "metadata":
            assert isinstance(a, types_pb2.ObjectMeta) and isinstance(b, types_pb2.ObjectMeta)
            if _meta_without_managed(a) != _meta_without_managed(b):
                out.append(fd.name)
        elif a != b:
            out.append(fd.name)
    return out


def _json(obj: Message, only: list[str]) -> JSONObject:
    """The JSON of `obj`'s fields `only` (a custom resource's whole: its content is one
    field)."""
    if isinstance(obj, types_pb2.CustomObject):
        return convert.to_dict(obj)
    partial = type(obj)()
    partial.CopyFrom(obj)
    for fd in obj.DESCRIPTOR.fields:
        if fd.name not in only:
            partial.ClearField(fd.name)
    return convert.to_dict(partial)


def _now(seconds: float) -> Timestamp:
    return convert.timestamp(float(int(seconds)))


_EMPTY_ENTRY: Final = types_pb2.ManagedFieldsEntry()


class FieldTracker:
    """Keeps managedFields on the writes the registry makes (not on binding, eviction or
    graceful deletion, which upstream makes without a field manager either)."""

    def created(self, kind: Kind, obj: Message, now: float) -> None:
        """A create: the manager owns every field it set (and the defaults it got): the
        comparison with a new object of the kind, whose metadata, spec and status are there
        but empty (upstream's create compares with the kind's zero value), so every other
        path is added. Read from the message itself (messages.all_paths: no JSON) for the
        built-in kinds."""
        fm = field_manager(kind, obj, "")
        meta = _meta(obj)
        sent = list(meta.managed_fields)
        del meta.managed_fields[:]
        node = fm.updater.node
        if isinstance(obj, types_pb2.CustomObject):
            every = typed.all_paths(entries.strip(convert.to_dict(obj)), node)
        else:
            every = messages.all_paths(obj, node)
        fields = fm.created(every)
        manager = Manager(current(), entries.UPDATE, kind.api_version)
        if not sent:  # (the common case: one entry, nothing to merge with)
            if not fields.empty():
                meta.managed_fields.append(
                    entries.entry(manager, fields, kind.api_version, _now(now))
                )
            return
        managed = _base(sent, None)
        ident = manager.identifier()
        if not fields.empty():
            prev = managed.fields.get(ident)
            union = fields.union(prev.fields) if prev is not None else fields
            managed.fields[ident] = VersionedSet(union, kind.api_version, False)
            managed.times[ident] = _now(now)
        meta.managed_fields.extend(entries.encode(managed))

    def updated(self, kind: Kind, old: Message, new: Message, subresource: str, now: float) -> None:
        """An update or patch (of the object or a subresource) from `old` to `new`."""
        meta = _meta(new)
        sent = None if subresource else list(meta.managed_fields)
        changed = _changed_top_fields(old, new)
        reset = sent is not None and sent == [_EMPTY_ENTRY]
        if not changed and not reset:  # the entries as they were, byte for byte
            if not sent:
                del meta.managed_fields[:]
                meta.managed_fields.extend(_meta(old).managed_fields)
            return
        # one empty entry resets them (isResetManagedFields; kemu's protobuf list cannot
        # tell an empty list from none, so `[]` keeps them)
        base = Managed({}, {}) if reset else _base(_meta(old).managed_fields, sent)
        meta.ClearField("managed_fields")
        if not changed:
            return
        fm = field_manager(kind, new, subresource)
        through = _SUBRESOURCE.get()
        named = through if through is not None else subresource
        manager = Manager(current(), entries.UPDATE, kind.api_version, named)
        managed = fm.update(_json(old, changed), _json(new, changed), base, manager, _now(now))
        meta.managed_fields.extend(entries.encode(managed))

    def applied(
        self,
        kind: Kind,
        live: JSONObject | None,
        live_entries: Sequence[types_pb2.ManagedFieldsEntry],
        config: JSONObject,
        manager: str,
        force: bool,
        subresource: str,
        now: float,
    ) -> tuple[JSONObject, list[types_pb2.ManagedFieldsEntry]]:
        """A server-side apply of `config` (by `manager`, in the version of its apiVersion) to
        `live` (None: there is no object yet): the merged object's JSON and its entries
        (updater.Conflicts when it changes fields other managers own, unless `force`)."""
        fm = field_manager(kind, kind.new(), subresource)
        if live is None:
            live = {"apiVersion": config.get("apiVersion"), "kind": kind.kind}
            meta = config.get("metadata")
            if isinstance(meta, dict):
                live["metadata"] = {k: v for k, v in meta.items() if k in ("name", "namespace")}
            base = Managed({}, {})
        else:
            base = _base(live_entries, None)
        m = Manager(manager, entries.APPLY, subresource=subresource)
        merged, managed = fm.apply(live, config, base, m, force, _now(now))
        version = config.get("apiVersion")
        for vs in managed.fields.values():
            if vs.applied and isinstance(version, str):
                vs.api_version = version
        return merged, entries.encode(managed)


def _base(
    live: Sequence[types_pb2.ManagedFieldsEntry],
    sent: Sequence[types_pb2.ManagedFieldsEntry] | None,
) -> Managed:
    """The entries a write starts from: those sent with an update of the main resource when
    there are any (a client may edit them), else the stored object's (decodeLiveOrNew)."""
    if sent:
        try:
            return entries.decode(sent)
        except ValueError:
            pass
    try:
        return entries.decode(live)
    except ValueError:
        return Managed({}, {})


def apply_conflict(
    conflicts: Conflicts, live_entries: Sequence[types_pb2.ManagedFieldsEntry]
) -> Conflict:
    """The 409 of an apply that changes other managers' fields (conflict.go NewConflictError:
    a FieldManagerConflict cause per field, upstream's message)."""
    times = _base(live_entries, None).times
    causes = [
        Cause(
            fieldpath.path_string(c.path),
            f"conflict with {entries.describe(c.manager, times)}",
            "FieldManagerConflict",
        )
        for c in conflicts.conflicts
    ]
    return Conflict(entries.conflict_message(conflicts, times), causes)
