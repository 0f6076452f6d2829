"""Field ownership through updates and applies (structured-merge-diff merge/update.go).

Managers are keyed by their identifier (entries.manager_identifier); each owns a set of fields
at an API version, and an applier's set is what it last applied. A write compares the old and
new object in its own version; a manager whose set is of another version is checked against
the comparison in that version (`Others`, as upstream's Updater converts the objects with its
Converter), and dropped when the kind is no longer served in it (IsMissingVersionError). A
custom resource's served versions share one schema (conversion None): the same comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

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


class Others(Protocol):
    """An object of the write's version (or of `source`) in another API version, with that
    version's type; None when the kind is not served in it (or the object does not
    convert)."""

    def __call__(self, obj: JSON, target: str, source: str = "", /) -> tuple[JSON, Node] | None: ...


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
        version: str = "",
        others: Others | None = None,
    ) -> tuple[ManagedFields, Comparison]:
        cmp = self._filtered(compare(old, new, self.node))
        in_version: dict[str, Comparison | None] = {}
        conflicts: ManagedFields = {}
        by_manager: dict[str, Comparison] = {}
        for manager, vs in managers.items():
            if manager == workflow:
                continue
            mine: Comparison | None = cmp
            if others is not None and version and vs.api_version != version:
                if vs.api_version not in in_version:
                    in_version[vs.api_version] = self._compare_in(old, new, vs.api_version, others)
                mine = in_version[vs.api_version]
            if mine is None:
                continue  # a version no longer served: the manager goes
            by_manager[manager] = mine
            clash = vs.fields.intersection(mine.modified.union(mine.added))
            if not clash.empty():
                conflicts[manager] = VersionedSet(clash, vs.api_version, False)
        if conflicts and not force:
            raise _conflicts(conflicts)
        out: ManagedFields = {}
        for manager, vs in managers.items():
            fields = vs.fields
            if manager != workflow:
                if manager not in by_manager:
                    continue
                if manager in conflicts:
                    fields = fields.difference(conflicts[manager].fields)
                removed = by_manager[manager].removed
                if not removed.empty():
                    fields = fields.difference(removed)
            if not fields.empty():
                out[manager] = VersionedSet(fields, vs.api_version, vs.applied)
        return out, cmp

    def _compare_in(self, old: JSON, new: JSON, version: str, others: Others) -> Comparison | None:
        converted_old, converted_new = others(old, version), others(new, version)
        if converted_old is None or converted_new is None:
            return None
        return self._filtered(compare(converted_old[0], converted_new[0], converted_new[1]))

    def _filtered(self, cmp: Comparison) -> Comparison:
        if self.ignored.empty():
            return cmp
        return Comparison(
            self.filter(cmp.added), self.filter(cmp.modified), self.filter(cmp.removed)
        )

    def update(
        self,
        live: JSON,
        new: JSON,
        api_version: str,
        managers: ManagedFields,
        manager: str,
        others: Others | None = None,
    ) -> ManagedFields:
        """An update by `manager` (never conflicts), in `api_version`: it takes every field it
        changed, others lose them, and fields removed leave every set."""
        managers, cmp = self._update(live, new, dict(managers), manager, True, api_version, others)
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
        others: Others | None = None,
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
        if last is not None and others is not None and last.api_version != api_version:
            merged = self._prune_across(merged, managers, last, api_version, others)
        else:
            merged = self._prune(merged, managers, manager, last)
        managers, _ = self._update(live, merged, managers, manager, force, api_version, others)
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

    def _prune_across(
        self,
        merged: JSON,
        managers: ManagedFields,
        last: VersionedSet,
        api_version: str,
        others: Others,
    ) -> JSON:
        """prune for an applier whose last apply was in another version (update.go prune,
        addBackOwnedItems, addBackDanglingItems): the merged object converted to the last
        apply's version, what it applied then removed there; then each version's managers'
        fields added back in their version, the pruned version's first; then what was never
        the applier's (dangling) back in the last version; the result converted back. A
        version the kind is not served in leaves the object unpruned (IsMissingVersionError)."""
        if last.fields.empty():
            return merged
        at_last = others(merged, last.api_version)
        if at_last is None:
            return merged
        merged_last, node_last = at_last
        pruned = remove_items(
            merged_last, ensure_named_fields_are_members(last.fields, node_last), node_last
        )
        by_version: dict[str, FieldSet] = {}
        for vs in managers.values():
            by_version[vs.api_version] = by_version.get(vs.api_version, FieldSet()).union(vs.fields)
        order = [last.api_version, *(v for v in by_version if v != last.api_version)]
        cur_merged, cur_node, cur_version = merged_last, node_last, last.api_version
        for version in order:
            owned = by_version.get(version)
            if owned is None:
                continue
            if version != cur_version:
                to_merged = others(cur_merged, version, cur_version)
                to_pruned = others(pruned, version, cur_version)
                if to_merged is None or to_pruned is None:
                    continue
                (cur_merged, cur_node), (pruned, _) = to_merged, to_pruned
                cur_version = version
            merged_set = ensure_named_fields_are_members(
                to_field_set(cur_merged, cur_node), cur_node
            )
            pruned_set = ensure_named_fields_are_members(to_field_set(pruned, cur_node), cur_node)
            keep = pruned_set.union(ensure_named_fields_are_members(owned, cur_node))
            pruned = remove_items(cur_merged, merged_set.difference(keep), cur_node)
        if cur_version != last.api_version:
            back_at_last = others(pruned, last.api_version, cur_version)
            if back_at_last is None:
                return merged
            pruned = back_at_last[0]
        pruned_set = ensure_named_fields_are_members(to_field_set(pruned, node_last), node_last)
        merged_set = ensure_named_fields_are_members(
            to_field_set(merged_last, node_last), node_last
        )
        last_set = ensure_named_fields_are_members(last.fields, node_last)
        dangling_kept = remove_items(
            merged_last, merged_set.difference(pruned_set).intersection(last_set), node_last
        )
        back = others(dangling_kept, api_version, last.api_version)
        return merged if back is None else back[0]
