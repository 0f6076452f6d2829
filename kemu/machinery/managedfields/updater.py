"""Field ownership through updates and applies (structured-merge-diff merge/update.go).

Managers are keyed by their identifier (entries.manager_identifier); each owns a set of fields
at an API version, and an applier's set is what it last applied. kemu serves each kind in one
version (a custom resource's served versions share one schema, conversion None), so the
conversions upstream's Updater makes between versions are identities here.
"""

from __future__ import annotations

from dataclasses import dataclass

from kemu.machinery.jsonvalue import JSON
from kemu.machinery.managedfields.fieldpath import FieldSet, Path
from kemu.machinery.managedfields.schema import Node
from kemu.machinery.managedfields.typed import (
    Comparison,
    compare,
    ensure_named_fields_are_members,
    merge,
    remove_items,
    to_field_set,
)


@dataclass
class VersionedSet:
    fields: FieldSet
    api_version: str
    applied: bool


ManagedFields = dict[str, VersionedSet]


@dataclass(frozen=True)
class Conflict:
    manager: str
    path: Path


class Conflicts(Exception):
    """An apply that changes fields other managers own (merge/conflict.go)."""

    def __init__(self, conflicts: list[Conflict]) -> None:
        super().__init__(f"{len(conflicts)} conflicts")
        self.conflicts = conflicts


def _conflicts(by_manager: ManagedFields) -> Conflicts:
    out = [
        Conflict(manager, path)
        for manager in sorted(by_manager)
        for path in by_manager[manager].fields.paths()
    ]
    return Conflicts(out)


class Updater:
    """Updates and applies on objects of one type, with the fields its strategy resets
    (`ignored`: upstream's ResetFields, e.g. a main resource's status) left out of every set."""

    def __init__(self, node: Node, ignored: FieldSet | None = None) -> None:
        self.node = node
        self.ignored = ignored if ignored is not None else FieldSet()

    def filter(self, s: FieldSet) -> FieldSet:
        return s.recursive_difference(self.ignored) if not self.ignored.empty() else s

    def _update(
        self,
        old: JSON,
        new: JSON,
        managers: ManagedFields,
        workflow: str,
        force: bool,
    ) -> tuple[ManagedFields, Comparison]:
        cmp = compare(old, new, self.node)
        if not self.ignored.empty():
            cmp = Comparison(
                self.filter(cmp.added), self.filter(cmp.modified), self.filter(cmp.removed)
            )
        changed = cmp.modified.union(cmp.added)
        conflicts: ManagedFields = {}
        for manager, vs in managers.items():
            if manager == workflow:
                continue
            clash = vs.fields.intersection(changed)
            if not clash.empty():
                conflicts[manager] = VersionedSet(clash, vs.api_version, False)
        if conflicts and not force:
            raise _conflicts(conflicts)
        out: ManagedFields = {}
        for manager, vs in managers.items():
            fields = vs.fields
            if manager != workflow:
                if manager in conflicts:
                    fields = fields.difference(conflicts[manager].fields)
                if not cmp.removed.empty():
                    fields = fields.difference(cmp.removed)
            if not fields.empty():
                out[manager] = VersionedSet(fields, vs.api_version, vs.applied)
        return out, cmp

    def update(
        self, live: JSON, new: JSON, api_version: str, managers: ManagedFields, manager: str
    ) -> ManagedFields:
        """An update by `manager` (never conflicts): it takes every field it changed, others
        lose them, and fields removed leave every set."""
        managers, cmp = self._update(live, new, dict(managers), manager, True)
        mine = managers.get(manager, VersionedSet(FieldSet(), api_version, False)).fields
        fields = self.filter(mine.difference(cmp.removed).union(cmp.modified).union(cmp.added))
        if fields.empty():
            managers.pop(manager, None)
        else:
            managers[manager] = VersionedSet(fields, api_version, False)
        return managers

    def apply(
        self,
        live: JSON,
        config: JSON,
        api_version: str,
        managers: ManagedFields,
        manager: str,
        force: bool,
    ) -> tuple[JSON | None, ManagedFields]:
        """An apply of `config` by `manager`: merged into `live`; what it applied before and
        no longer applies removed unless another manager owns it; Conflicts when it changes
        another manager's fields (unless `force`, which takes them). Returns the new object
        (None when nothing changed) and the managers."""
        managers = dict(managers)
        merged = merge(live, config, self.node)
        last = managers.get(manager)
        applied = self.filter(to_field_set(config, self.node))
        managers[manager] = VersionedSet(applied, api_version, True)
        merged = self._prune(merged, managers, manager, last)
        managers, _ = self._update(live, merged, managers, manager, force)
        return (None if merged == live else merged), managers

    def _prune(
        self, merged: JSON, managers: ManagedFields, applier: str, last: VersionedSet | None
    ) -> JSON:
        if last is None or last.fields.empty():
            return merged
        node = self.node
        pruned = remove_items(merged, ensure_named_fields_are_members(last.fields, node), node)
        # add back what other managers (or this apply) own
        managed = FieldSet()
        for vs in managers.values():
            managed = managed.union(vs.fields)
        merged_set = ensure_named_fields_are_members(to_field_set(merged, node), node)
        pruned_set = ensure_named_fields_are_members(to_field_set(pruned, node), node)
        owned = ensure_named_fields_are_members(managed, node)
        pruned = remove_items(merged, merged_set.difference(pruned_set.union(owned)), node)
        # add back what was never this applier's (dangling items)
        pruned_set = ensure_named_fields_are_members(to_field_set(pruned, node), node)
        last_set = ensure_named_fields_are_members(last.fields, node)
        return remove_items(merged, merged_set.difference(pruned_set).intersection(last_set), node)
