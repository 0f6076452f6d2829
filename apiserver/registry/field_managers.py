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
import copy
import json
import logging
import unicodedata
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Final

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.machinery import convert, podgroups
from kemu.machinery.apiextensions import custom
from kemu.machinery.apps import LAST_APPLIED_ANNOTATION
from kemu.machinery.errors import Cause, Conflict
from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.machinery.kinds import Kind, Served
from kemu.machinery.managedfields import entries, fieldpath, messages, schema, typed
from kemu.machinery.managedfields.entries import FieldManager, Managed, Manager
from kemu.machinery.managedfields.fieldpath import FieldSet
from kemu.machinery.managedfields.updater import Conflicts, Others, VersionedSet

logger = logging.getLogger(__name__)

APISERVER: Final = "kube-apiserver"
KUBECTL: Final = "kubectl"
"""The one manager whose applies upgrade from client-side apply (lastAppliedManager,
lastAppliedUpdater: `kubectl apply --server-side`'s default field manager)."""
BEFORE_FIRST_APPLY: Final = "before-first-apply"
"""skipNonApplied's beforeApplyManagerName."""
FIELD_MANAGER_MAX_LENGTH: Final = 128

_MANAGER: ContextVar[str] = ContextVar("kemu_field_manager", default=APISERVER)
_SUBRESOURCE: ContextVar[str | None] = ContextVar("kemu_field_subresource", default=None)
_EMPTY_SENT: ContextVar[bool] = ContextVar("kemu_field_managers_empty_sent", default=False)
_VERSION: ContextVar[str] = ContextVar("kemu_field_managers_version", default="")


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


@contextlib.contextmanager
def writing_in(api_version: str) -> Iterator[None]:
    """The write being served is in `api_version` (the REST edge's request's group version;
    unset: the kind's own, as the gRPC edge writes): its entry records that version and its
    set is of that version's fields, as upstream's field manager of the request's version."""
    reset = _VERSION.set(api_version)
    try:
        yield
    finally:
        _VERSION.reset(reset)


@contextlib.contextmanager
def sent_empty(empty: bool) -> Iterator[None]:
    """The write being served sets metadata.managedFields to an empty list (`"managedFields":
    []` in a JSON body, or a patch that writes it), which a protobuf list cannot tell from an
    absent one: the REST edge, which reads the JSON, says so here."""
    reset = _EMPTY_SENT.set(empty)
    try:
        yield
    finally:
        _EMPTY_SENT.reset(reset)


def body_sends_empty(body: object) -> bool:
    """Whether a JSON object (an update's body, a merge patch) has metadata.managedFields []."""
    if not isinstance(body, dict):
        return False
    meta = body.get("metadata")
    return isinstance(meta, dict) and meta.get("managedFields") == []


def json_patch_sends_empty(patch: object) -> bool:
    """Whether a JSON patch's last write of /metadata/managedFields is an empty list."""
    found = False
    for op in patch if isinstance(patch, list) else []:
        if isinstance(op, dict) and op.get("path") == "/metadata/managedFields":
            found = op.get("op") in ("add", "replace") and op.get("value") == []
    return found


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


_BUILTIN: Final[dict[tuple[str, str, str], FieldManager]] = {}


def _builtin_manager(kind: Kind, subresource: str, version: str) -> FieldManager:
    key = (kind.resource, subresource, version)
    fm = _BUILTIN.get(key)
    if fm is None:
        node = schema.for_kind(kind)
        if version != kind.api_version:
            try:
                node = schema.for_builtin(kind.kind, version)
            except KeyError:
                pass  # (a version upstream's OpenAPI lacks: the kind's own shape)
        fm = _BUILTIN[key] = FieldManager(node, version, _ignored(kind, subresource, node))
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


def field_manager(kind: Kind, obj: Message, subresource: str, version: str = "") -> FieldManager:
    """The field manager of `kind`'s writes in `version` (default: the kind's own)."""
    version = version or kind.api_version
    if not kind.custom:
        return _builtin_manager(kind, subresource, version)
    definition = custom.definition_for(kind)
    node = schema.for_custom(definition.storage.schema if definition is not None else None)
    ignored = FieldSet()
    if definition is not None and definition.storage.status:
        ignored = _ignored(kind, subresource, node)
    return FieldManager(node, version, ignored)


def served_versions(kind: Kind, served: Served | None = None) -> frozenset[str]:
    """The group versions `kind` is served as: by the apiserver's `served` (its emulated
    version, gates and runtime config), or, without one, at any emulated version kemu has."""
    if served is not None:
        return frozenset(served.api_versions.get(kind.kind, ()))
    return frozenset({kind.api_version, *(v for _, vs in kind.versions for v in vs)})


def _converter(kind: Kind, version: str, subresource: str, served: Served | None) -> Others | None:
    """How a write in `version` reads in another version, for the managers whose sets are of
    another one (upstream's Updater compares there: its Converter); None for a custom
    resource, whose served versions share one schema (conversion None: the same fields). A
    version the apiserver does not serve is a missing version: upstream's converter cannot
    convert to it (versionconverter.go: the type is unknown to the scheme's served set), and
    the manager's entry goes (IsMissingVersionError)."""
    if kind.custom:
        return None
    versions = served_versions(kind, served)

    def convert(obj: JSON, other: str, source: str = "") -> tuple[JSON, schema.Node] | None:
        if other not in versions or not isinstance(obj, dict):
            return None  # IsMissingVersionError: the manager goes
        source = source or version
        try:
            # (a copy: a conversion rewrites the body it reads, and `obj` is the caller's)
            message = podgroups.from_versioned(
                kind, {**copy.deepcopy(obj), "apiVersion": source, "kind": kind.kind}, source
            )
            out = podgroups.to_versioned(message, other)
        except ValueError:  # (Invalid and InvalidValue are)
            return None
        return entries.strip(out), field_manager(kind, message, subresource, other).updater.node

    return convert


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
    graceful deletion, which upstream makes without a field manager either). `served`: what
    the apiserver serves (a manager's entry in a version it does not serve goes at the next
    write that compares with it); None: every version kemu has."""

    def __init__(self, served: Served | None = None) -> None:
        self._served = served

    def created(self, kind: Kind, obj: Message, now: float) -> None:
        """A create: the manager owns every field it set (and the defaults it got): the
        comparison with a new object of the kind, whose metadata, spec and status are there
        but empty (upstream's create compares with the kind's zero value), so every other
        path is added. Read from the message itself (messages.all_paths: no JSON) for the
        built-in kinds."""
        version = _VERSION.get() or kind.api_version
        fm = field_manager(kind, obj, "", version)
        meta = _meta(obj)
        sent = list(meta.managed_fields)
        del meta.managed_fields[:]
        node = fm.updater.node
        if isinstance(obj, types_pb2.CustomObject):
            every = typed.all_paths(entries.strip(convert.to_dict(obj)), node)
        elif version != kind.api_version:  # (created in another version: its fields)
            every = typed.all_paths(entries.strip(podgroups.to_versioned(obj, version)), node)
        else:
            every = messages.all_paths(obj, node)
        fields = fm.created(every)
        manager = Manager(current(), entries.UPDATE, version)
        if not sent:  # (the common case: one entry, nothing to merge with)
            if not fields.empty():
                meta.managed_fields.append(entries.entry(manager, fields, version, _now(now)))
            return
        managed = _base(sent, None)
        ident = manager.identifier()
        if not fields.empty():
            prev = managed.fields.get(ident)
            union = fields.union(prev.fields) if prev is not None else fields
            managed.fields[ident] = VersionedSet(union, version, False)
            managed.times[ident] = _now(now)
        meta.managed_fields.extend(entries.encode(managed))

    def updated(self, kind: Kind, old: Message, new: Message, subresource: str, now: float) -> None:
        """An update or patch (of the object or a subresource) from `old` to `new`."""
        meta = _meta(new)
        sent = None if subresource else list(meta.managed_fields)
        changed = _changed_top_fields(old, new)
        # isResetManagedFields: an empty list (which only the REST edge's JSON can tell from
        # none: sent_empty) or one empty entry; a subresource's write ignores what it sends
        reset = sent is not None and (sent == [_EMPTY_ENTRY] or (not sent and _EMPTY_SENT.get()))
        if not changed and not reset:  # the entries as they were, byte for byte
            if not sent:
                del meta.managed_fields[:]
                meta.managed_fields.extend(_meta(old).managed_fields)
            return
        base = Managed({}, {}) if reset else _base(_meta(old).managed_fields, sent)
        meta.ClearField("managed_fields")
        if not changed or not base.fields:
            # skipNonApplied (skipnonapplied.go): an update of an object without managed
            # fields (reset, or never tracked) tracks none; the next apply starts them
            return
        version = _VERSION.get() or kind.api_version
        fm = field_manager(kind, new, subresource, version)
        through = _SUBRESOURCE.get()
        named = through if through is not None else subresource
        manager = Manager(current(), entries.UPDATE, version, named)
        others = None
        if any(vs.api_version != version for vs in base.fields.values()):
            others = _converter(kind, version, subresource, self._served)
        if version == kind.api_version or kind.custom:  # (a custom resource: one schema)
            old_json, new_json = _json(old, changed), _json(new, changed)
        else:
            old_json = podgroups.to_versioned(old, version)
            new_json = podgroups.to_versioned(new, version)
        managed = fm.update(old_json, new_json, base, manager, _now(now), others)
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
        version = config.get("apiVersion")
        version = version if isinstance(version, str) and version else kind.api_version
        fm = field_manager(kind, kind.new(), subresource, version)
        if live is None:
            live = {"apiVersion": config.get("apiVersion"), "kind": kind.kind}
            meta = config.get("metadata")
            if isinstance(meta, dict):
                live["metadata"] = {k: v for k, v in meta.items() if k in ("name", "namespace")}
            base = Managed({}, {})
        else:
            base = _base(live_entries, None)
            if not base.fields:
                base = _before_first_apply(kind, fm, live, subresource, now)
        m = Manager(manager, entries.APPLY, subresource=subresource)
        others = None
        if any(vs.api_version != version for vs in base.fields.values()):
            others = _converter(kind, version, subresource, self._served)
        try:
            merged, managed = fm.apply(live, config, base, m, force, _now(now), others)
        except Conflicts as e:
            # lastAppliedManager: kubectl moving an object from client-side to server-side
            # apply conflicts with its own client-side writes; those whose values the
            # last-applied annotation still holds are taken, as a forced apply would
            allowed = _allowed_from_last_applied(fm, live) if manager == KUBECTL else None
            if allowed is None:
                raise
            left = [c for c in e.conflicts if not allowed.has(c.path)]
            if left:
                raise Conflicts(left) from None
            merged, managed = fm.apply(live, config, base, m, True, _now(now), others)
        if manager == KUBECTL:
            _update_last_applied(merged, config)
        return merged, entries.encode(managed)


def _before_first_apply(
    kind: Kind, fm: FieldManager, live: JSONObject, subresource: str, now: float
) -> Managed:
    """skipNonApplied's Apply: an object without managed fields (reset, or never tracked)
    gets, before its first apply, an Update entry of "before-first-apply" owning every field
    it has (the comparison with a new object of the kind: a built-in kind's metadata, spec
    and status are there, empty), so the apply conflicts with the values it changes."""
    empty: JSONObject = {k: live[k] for k in ("apiVersion", "kind") if k in live}
    if not kind.custom:
        empty.update({k: {} for k in ("metadata", "spec", "status") if k in live})
    manager = Manager(BEFORE_FIRST_APPLY, entries.UPDATE, fm.api_version, subresource)
    return fm.update(empty, live, Managed({}, {}), manager, _now(now))


def _allowed_from_last_applied(fm: FieldManager, live: JSONObject) -> FieldSet | None:
    """lastAppliedManager's allowedConflictsFromLastApplied: the fields of the live object's
    last-applied-configuration whose values the live object still has; None without a
    readable annotation."""
    meta = live.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    text = annotations.get(LAST_APPLIED_ANNOTATION) if isinstance(annotations, dict) else None
    if not isinstance(text, str) or not text:
        return None
    try:
        last = json.loads(text)
        if not isinstance(last, dict):
            return None
        node = fm.updater.node
        last_stripped, live_stripped = entries.strip(last), entries.strip(live)
        fields = typed.to_field_set(last_stripped, node)
        modified = typed.compare(last_stripped, live_stripped, node).modified
    except (ValueError, RecursionError):  # (typed.InvalidValue is a ValueError)
        return None
    return fields.difference(modified)


def _update_last_applied(merged: JSONObject, config: JSONObject) -> None:
    """lastAppliedUpdater: kubectl's server-side apply keeps an existing last-applied
    annotation up to date with what it applied (buildLastApplied: the applied object
    without the annotation, as Go's JSON encoder writes it), so that a later client-side
    apply computes its patch from it."""
    meta = merged.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict) or not annotations.get(LAST_APPLIED_ANNOTATION):
        return
    assert isinstance(meta, dict)
    annotations = meta["annotations"] = dict(annotations)  # (shared with the live object's)
    applied = json.loads(json.dumps(config))
    applied_meta = applied.get("metadata")
    if isinstance(applied_meta, dict):
        applied_annotations = applied_meta.get("annotations")
        if isinstance(applied_annotations, dict):
            applied_annotations.pop(LAST_APPLIED_ANNOTATION, None)
    annotations[LAST_APPLIED_ANNOTATION] = go_json(applied) + "\n"


def go_json(value: JSON) -> str:
    """JSON as Go's encoding/json writes a map (json.NewEncoder, runtime.Encode of an
    Unstructured): keys sorted, no spaces, <, > and & escaped, as are U+2028 and U+2029."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for ch, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(ch, escaped)
    return text


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
