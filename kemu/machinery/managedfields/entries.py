"""An object's metadata.managedFields and the field manager of a write (k8s.io/apimachinery
pkg/util/managedfields/internal: managedfields.go, stripmeta.go, managedfieldsupdater.go,
capmanagers.go, conflict.go; the apiserver's handlers/fieldmanager).

`FieldManager` keeps the entries of one kind's objects: `update` after every write that is not
an apply (the manager takes what it changed), `apply` for server-side apply. Objects are read
as their JSON (kemu.machinery.convert), without the fields the server owns (stripmeta).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.machinery.managedfields import fieldpath as fp
from kemu.machinery.managedfields.fieldpath import FieldSet
from kemu.machinery.managedfields.schema import Node
from kemu.machinery.managedfields.updater import (
    Conflicts,
    ManagedFields,
    Others,
    Updater,
    VersionedSet,
)

APPLY: Final = "Apply"
UPDATE: Final = "Update"
FIELDS_V1: Final = "FieldsV1"
MAX_UPDATE_MANAGERS: Final = 10
"""DefaultMaxUpdateManagers: older Update entries merge into "ancient-changes"."""
ANCIENT_CHANGES: Final = "ancient-changes"

_STRIPPED_META: Final = (
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "clusterName",
    "generation",
    "managedFields",
    "resourceVersion",
)
_STRIP: Final = FieldSet.of(
    ("f:apiVersion",),
    ("f:kind",),
    ("f:metadata",),
    *((fp.field("metadata"), fp.field(n)) for n in _STRIPPED_META),
)


def strip(obj: JSONObject) -> JSONObject:
    """`obj` without apiVersion, kind and the metadata the server owns (stripmeta.go)."""
    out = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    meta = out.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = {k: v for k, v in meta.items() if k not in _STRIPPED_META}
    return out


@dataclass(frozen=True)
class Manager:
    """Who writes: upstream's manager identifier without the fields and time."""

    manager: str
    operation: str
    api_version: str = ""
    subresource: str = ""

    def identifier(self) -> str:
        """BuildManagerIdentifier: JSON of the entry without fields and time (and without the
        apiVersion for an applier, which keeps one entry across versions)."""
        return _identifier(self)

    @classmethod
    def from_identifier(cls, ident: str) -> Manager:
        return _manager_of(ident)


# (A write reads and writes each of its object's entries' identifiers several times, and an
# apiserver has few managers: each identifier is built and read once.)
@functools.lru_cache(maxsize=1024)
def _identifier(m: Manager) -> str:
    out: JSONObject = {"manager": m.manager, "operation": m.operation}
    if m.api_version and m.operation != APPLY:
        out["apiVersion"] = m.api_version
    if m.subresource:
        out["subresource"] = m.subresource
    return json.dumps(out, separators=(",", ":"))


@functools.lru_cache(maxsize=1024)
def _manager_of(ident: str) -> Manager:
    try:
        d = json.loads(ident)
    except ValueError:
        return Manager(ident, UPDATE)
    if not isinstance(d, dict):
        return Manager(ident, UPDATE)
    return Manager(
        str(d.get("manager", "")),
        str(d.get("operation", "")),
        str(d.get("apiVersion", "")),
        str(d.get("subresource", "")),
    )


def describe(ident: str, times: dict[str, Timestamp] | None = None) -> str:
    """A manager as a conflict names it (conflict.go printManager)."""
    m = Manager.from_identifier(ident)
    out = json.dumps(m.manager)
    if m.subresource:
        out += f" with subresource {json.dumps(m.subresource)}"
    if m.operation == UPDATE:
        t = (times or {}).get(ident)
        if t is None or not t.seconds:
            return f"{out} using {m.api_version}"
        when = t.ToDatetime().strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"{out} using {m.api_version} at {when}"
    return out


def conflict_message(conflicts: Conflicts, times: dict[str, Timestamp]) -> str:
    """getConflictMessage: one conflict on one line, several grouped by manager."""
    cs = conflicts.conflicts
    if len(cs) == 1:
        c = cs[0]
        return (
            f"Apply failed with 1 conflict: conflict with {describe(c.manager, times)}: "
            f"{fp.path_string(c.path)}"
        )
    lines: list[str] = []
    for manager in sorted({c.manager for c in cs}):
        lines.append(f"conflicts with {describe(manager, times)}:")
        lines.extend(f"- {fp.path_string(c.path)}" for c in cs if c.manager == manager)
    return f"Apply failed with {len(cs)} conflicts: " + "\n".join(lines)


# ---------------------------------------------------------------- the entries


@dataclass
class Managed:
    fields: ManagedFields
    times: dict[str, Timestamp]


def decode(entries: Sequence[types_pb2.ManagedFieldsEntry]) -> Managed:
    """The entries as sets by manager identifier (DecodeManagedFields); ValueError when one
    does not read."""
    out = Managed({}, {})
    for e in entries:
        if e.fields_type and e.fields_type != FIELDS_V1:
            raise ValueError(f"invalid fieldsType {e.fields_type!r}")
        if e.operation not in (APPLY, UPDATE):
            raise ValueError(f"invalid operation {e.operation!r}")
        ident = Manager(e.manager, e.operation, e.api_version, e.subresource).identifier()
        out.fields[ident] = VersionedSet(
            _fields_of(e.fields_v1.raw), e.api_version, e.operation == APPLY
        )
        if e.HasField("time"):
            t = Timestamp()
            t.CopyFrom(e.time)
            out.times[ident] = t
    return out


@functools.lru_cache(maxsize=4096)
def _fields_of(raw: bytes) -> FieldSet:
    """The set of a FieldsV1 text, read once a text: a set is only read once built, so every
    write of an object (and the objects written alike) share it, and the text it is written
    back as, once computed (ValueError when it does not read: not kept)."""
    trie: JSON = json.loads(raw) if raw else {}
    return FieldSet.from_fields_v1(trie)


def entry(
    manager: Manager, fields: FieldSet, api_version: str, time: Timestamp
) -> types_pb2.ManagedFieldsEntry:
    """One entry (EncodeObjectManagedFields of one manager)."""
    e = types_pb2.ManagedFieldsEntry(
        manager=manager.manager,
        operation=manager.operation,
        api_version=api_version,
        fields_type=FIELDS_V1,
        subresource=manager.subresource,
    )
    e.fields_v1.raw = fp.fields_v1_text(fields)
    e.time.CopyFrom(time)
    return e


def encode(managed: Managed) -> list[types_pb2.ManagedFieldsEntry]:
    """The entries in upstream's order: Apply before Update, then by time, manager, version,
    subresource (sortEncodedManagedFields)."""
    out: list[types_pb2.ManagedFieldsEntry] = []
    for ident, vs in managed.fields.items():
        m = Manager.from_identifier(ident)
        e = types_pb2.ManagedFieldsEntry(
            manager=m.manager,
            operation=m.operation,
            api_version=vs.api_version,
            fields_type=FIELDS_V1,
            subresource=m.subresource,
        )
        e.fields_v1.raw = fp.fields_v1_text(vs.fields)
        t = managed.times.get(ident)
        if t is not None:
            e.time.CopyFrom(t)
        out.append(e)
    out.sort(key=lambda e: (e.operation, e.time.seconds, e.manager, e.api_version, e.subresource))
    return out


def _cap(managed: Managed, api_version: str) -> None:
    """Keeps at most MAX_UPDATE_MANAGERS Update entries: the oldest merge into
    "ancient-changes" (capmanagers.go)."""
    updaters = [
        i
        for i in managed.fields
        if Manager.from_identifier(i).operation == UPDATE
        and Manager.from_identifier(i).manager != ANCIENT_CHANGES
    ]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda i: managed.times[i].seconds if i in managed.times else 0)
    ancient = Manager(ANCIENT_CHANGES, UPDATE, api_version).identifier()
    for ident in updaters[: len(updaters) - MAX_UPDATE_MANAGERS + 1]:
        vs = managed.fields.pop(ident)
        managed.times.pop(ident, None)
        prev = managed.fields.get(ancient)
        fields = prev.fields.union(vs.fields) if prev is not None else vs.fields
        managed.fields[ancient] = VersionedSet(fields, vs.api_version, False)


# ---------------------------------------------------------------- the field manager


class FieldManager:
    """The field manager of one kind's objects (upstream's FieldManager for a resource and
    subresource), over JSON objects as kemu.machinery.convert writes them."""

    def __init__(self, node: Node, api_version: str, ignored: FieldSet | None = None) -> None:
        self.api_version = api_version
        self.updater = Updater(node, ignored)

    def created(self, fields: FieldSet) -> FieldSet:
        """The fields a create gives its manager, from every path of the object (typed or
        messages all_paths): all but the top-level structs upstream's zero value has
        (metadata, spec, status), the metadata the server owns, and the fields the kind's
        strategy resets."""
        for name in ("metadata", "spec", "status"):
            fields.members.discard("f:" + name)
        return self.updater.filter(fields).difference(_STRIP)

    def update(
        self,
        live: JSONObject,
        new: JSONObject,
        managed: Managed,
        manager: Manager,
        now: Timestamp,
        others: Others | None = None,
    ) -> Managed:
        """The entries after an update of `live` into `new` by `manager`: when it changed
        anything, its entry takes the fields and the time (managedfieldsupdater.go).
        `others`: the write compared in another version, for the managers of other
        versions."""
        current = "current-operation"
        fields = self.updater.update(
            strip(live), strip(new), self.api_version, managed.fields, current, others
        )
        times = dict(managed.times)
        mine = fields.pop(current, None)
        if mine is not None:
            mine = VersionedSet(mine.fields.difference(_STRIP), mine.api_version, False)
        ident = manager.identifier()
        if mine is not None and not mine.fields.empty():
            prev = fields.get(ident)
            union = mine.fields.union(prev.fields) if prev is not None else mine.fields
            fields[ident] = VersionedSet(union, self.api_version, False)
            times[ident] = now
        out = Managed(fields, times)
        _cap(out, self.api_version)
        return out

    def apply(
        self,
        live: JSONObject,
        config: JSONObject,
        managed: Managed,
        manager: Manager,
        force: bool,
        now: Timestamp,
        others: Others | None = None,
    ) -> tuple[JSONObject, Managed]:
        """`config` applied to `live` by `manager`: the object and the entries; Conflicts."""
        head: JSONObject = {k: live[k] for k in ("apiVersion", "kind") if k in live}
        meta = live.get("metadata")
        kept = (
            {k: v for k, v in meta.items() if k in _STRIPPED_META and k != "managedFields"}
            if isinstance(meta, dict)
            else {}
        )
        new, fields = self.updater.apply(
            strip(live),
            strip(config),
            self.api_version,
            managed.fields,
            manager.identifier(),
            force,
            others,
        )
        ident = manager.identifier()
        mine = fields.get(ident)
        if mine is not None:
            mine.fields = mine.fields.difference(_STRIP)
            if mine.fields.empty():
                del fields[ident]
        times = dict(managed.times)
        result = strip(live) if new is None else new
        if new is not None or ident not in times:
            times[ident] = now
        assert isinstance(result, dict)
        result = {**head, **result}
        result_meta = result.get("metadata")
        result["metadata"] = {**kept, **(result_meta if isinstance(result_meta, dict) else {})}
        out = Managed(fields, times)
        _cap(out, self.api_version)
        return result, out
