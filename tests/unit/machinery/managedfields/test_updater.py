"""The apply and update algorithms against structured-merge-diff's own cases (merge/*_test.go,
named after them: TestUpdateLeaf, TestUpdateSet, TestMultipleAppliersSet,
TestMultipleAppliersFieldUnsetting), each run as upstream's test State does: a sequence of
applies and updates on one object, then the object and every manager's set compared."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.machinery.managedfields import fieldpath as fp
from kemu.machinery.managedfields.fieldpath import FieldSet
from kemu.machinery.managedfields.schema import Node, from_json_schema
from kemu.machinery.managedfields.updater import (
    Conflict,
    Conflicts,
    ManagedFields,
    Updater,
    VersionedSet,
)

LEAF = from_json_schema(
    {
        "type": "object",
        "properties": {
            "numeric": {"type": "number"},
            "string": {"type": "string"},
            "bool": {"type": "boolean"},
        },
    }
)
SETS = from_json_schema(
    {
        "type": "object",
        "properties": {
            "list": {
                "type": "array",
                "x-kubernetes-list-type": "set",
                "items": {"type": "string"},
            }
        },
    }
)
ASSOCIATIVE = from_json_schema(
    {
        "type": "object",
        "properties": {
            "list": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "value": {"type": "number"}},
                },
            }
        },
    }
)
STRUCT = from_json_schema(
    {
        "type": "object",
        "properties": {
            "struct": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "scalarField_v1": {"type": "string"},
                    "scalarField_v2": {"type": "string"},
                    "complexField_v1": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                    },
                },
            }
        },
    }
)


@dataclass
class Apply:
    manager: str
    obj: str
    conflicts: tuple[Conflict, ...] = ()
    force: bool = False


@dataclass
class Update:
    manager: str
    obj: str


class State:
    """merge/ internal/fixture State: the live object and its managers."""

    def __init__(self, node: Node) -> None:
        self.updater = Updater(node)
        self.live: JSON = {}
        self.managers: ManagedFields = {}

    def run(self, op: Apply | Update) -> None:
        obj: JSON = yaml.safe_load(op.obj) or {}
        if isinstance(op, Update):
            self.managers = self.updater.update(self.live, obj, "v1", self.managers, op.manager)
            self.live = obj
            return
        try:
            new, managers = self.updater.apply(
                self.live, obj, "v1", self.managers, op.manager, op.force
            )
        except Conflicts as e:
            assert set(e.conflicts) == set(op.conflicts), e.conflicts
            return
        assert not op.conflicts, f"expected conflicts {op.conflicts}"
        self.managers = managers
        if new is not None:
            self.live = new


def _sets(state: State) -> dict[str, list[fp.Path]]:
    return {m: list(vs.fields.paths()) for m, vs in state.managers.items()}


def P(*names: str | fp.Path) -> fp.Path:
    return tuple(
        n if isinstance(n, str) and n[:2] in ("f:", "k:", "v:") else fp.field(str(n)) for n in names
    )


def _case(
    node: Node, ops: list[Apply | Update], obj: str, managed: dict[str, list[fp.Path]]
) -> None:
    s = State(node)
    for op in ops:
        s.run(op)
    assert s.live == (yaml.safe_load(obj) or {})
    want = {m: list(FieldSet.of(*paths).paths()) for m, paths in managed.items()}
    assert _sets(s) == want


def test_update_leaf_apply_twice() -> None:
    _case(
        LEAF,
        [
            Apply("default", "numeric: 1\nstring: string"),
            Apply("default", "numeric: 2\nstring: string\nbool: false"),
        ],
        "numeric: 2\nstring: string\nbool: false",
        {"default": [P("numeric"), P("string"), P("bool")]},
    )


def test_update_leaf_apply_update_apply_no_conflict() -> None:
    _case(
        LEAF,
        [
            Apply("default", "numeric: 1\nstring: string"),
            Update("controller", "numeric: 1\nstring: string\nbool: true"),
            Apply("default", "numeric: 2\nstring: string"),
        ],
        "numeric: 2\nstring: string\nbool: true",
        {"default": [P("numeric"), P("string")], "controller": [P("bool")]},
    )


def test_update_leaf_apply_update_apply_with_conflict() -> None:
    _case(
        LEAF,
        [
            Apply("default", "numeric: 1\nstring: string"),
            Update("controller", "numeric: 1\nstring: controller string\nbool: true"),
            Apply(
                "default",
                "numeric: 2\nstring: user string",
                conflicts=(Conflict("controller", P("string")),),
            ),
            Apply("default", "numeric: 2\nstring: user string", force=True),
        ],
        "numeric: 2\nstring: user string\nbool: true",
        {"default": [P("numeric"), P("string")], "controller": [P("bool")]},
    )


def test_update_leaf_apply_twice_remove() -> None:
    _case(
        LEAF,
        [
            Apply("default", "numeric: 1\nstring: string\nbool: false"),
            Apply("default", "string: new string"),
        ],
        "string: new string",
        {"default": [P("string")]},
    )


def test_update_leaf_update_apply_omits() -> None:
    _case(
        LEAF,
        [Apply("default", "numeric: 2"), Update("controller", "numeric: 1"), Apply("default", "")],
        "numeric: 1",
        {"controller": [P("numeric")]},
    )


def _v(x: Any) -> str:
    return fp.value(x)


def test_update_set_apply_update_apply_with_overlap() -> None:
    _case(
        SETS,
        [
            Apply("default", "list: [a, c]"),
            Update("controller", "list: [a, b, c, d]"),
            Apply("default", "list: [a, b, c]"),
        ],
        "list: [a, b, c, d]",
        {
            "default": [P("list", _v("a")), P("list", _v("b")), P("list", _v("c"))],
            "controller": [P("list", _v("b")), P("list", _v("d"))],
        },
    )


def test_update_set_apply_twice_reorder() -> None:
    _case(
        SETS,
        [Apply("default", "list: [a, b, c, d]"), Apply("default", "list: [a, d, c, b]")],
        "list: [a, d, c, b]",
        {"default": [P("list", _v(x)) for x in "abcd"]},
    )


def test_update_set_apply_twice_remove() -> None:
    _case(
        SETS,
        [Apply("default", "list: [a, b, c, d]"), Apply("default", "list: [a, c]")],
        "list: [a, c]",
        {"default": [P("list", _v("a")), P("list", _v("c"))]},
    )


def _k(name: str) -> str:
    return fp.key({"name": name})


def test_multiple_appliers_set_remove_one() -> None:
    _case(
        ASSOCIATIVE,
        [
            Apply("apply-one", "list: [{name: a}, {name: b}]"),
            Apply("apply-two", "list: [{name: c}]"),
            Apply("apply-one", "list: [{name: a}]"),
        ],
        "list: [{name: a}, {name: c}]",
        {
            "apply-one": [P("list", _k("a")), P("list", _k("a"), "name")],
            "apply-two": [P("list", _k("c")), P("list", _k("c"), "name")],
        },
    )


def test_multiple_appliers_set_same_value_no_conflict() -> None:
    both = [P("list", _k("a")), P("list", _k("a"), "name"), P("list", _k("a"), "value")]
    _case(
        ASSOCIATIVE,
        [
            Apply("apply-one", "list: [{name: a, value: 0}]"),
            Apply("apply-two", "list: [{name: a, value: 0}]"),
        ],
        "list: [{name: a, value: 0}]",
        {"apply-one": both, "apply-two": both},
    )


def test_multiple_appliers_set_change_value_yes_conflict() -> None:
    _case(
        ASSOCIATIVE,
        [
            Apply("apply-one", "list: [{name: a, value: 0}]"),
            Apply(
                "apply-two",
                "list: [{name: a, value: 1}]",
                conflicts=(Conflict("apply-one", P("list", _k("a"), "value")),),
            ),
        ],
        "list: [{name: a, value: 0}]",
        {
            "apply-one": [
                P("list", _k("a")),
                P("list", _k("a"), "name"),
                P("list", _k("a"), "value"),
            ]
        },
    )


def test_multiple_appliers_field_unsetting_unset_scalar_sole_owner() -> None:
    _case(
        STRUCT,
        [
            Apply("apply-one", "struct: {name: a, scalarField_v1: a}"),
            Apply("apply-one", "struct: {name: a}"),
        ],
        "struct: {name: a}",
        {"apply-one": [P("struct", "name")]},
    )


def test_multiple_appliers_field_unsetting_unset_scalar_shared_with_applier() -> None:
    _case(
        STRUCT,
        [
            Apply("apply-one", "struct: {name: a, scalarField_v1: a}"),
            Apply("apply-two", "struct: {scalarField_v1: a}"),
            Apply("apply-one", "struct: {name: a}"),
        ],
        "struct: {name: a, scalarField_v1: a}",
        {"apply-one": [P("struct", "name")], "apply-two": [P("struct", "scalarField_v1")]},
    )


def test_multiple_appliers_field_unsetting_unset_complex_sole_owner() -> None:
    _case(
        STRUCT,
        [
            Apply("apply-one", "struct: {name: a, complexField_v1: {name: b}}"),
            Apply("apply-one", "struct: {name: a}"),
        ],
        "struct: {name: a}",
        {"apply-one": [P("struct", "name")]},
    )


# ---------------------------------------------------------------- FieldsV1


@pytest.mark.parametrize(
    "trie",
    [
        {"f:data": {".": {}, "f:a": {}}},
        {
            "f:spec": {
                "f:containers": {
                    'k:{"name":"nginx"}': {".": {}, "f:image": {}, "f:name": {}},
                },
                "f:replicas": {},
            }
        },
        {"f:finalizers": {'v:"a"': {}, 'v:"b"': {}}},
    ],
)
def test_fields_v1_round_trip(trie: JSONObject) -> None:
    """serialize.go: a set read from FieldsV1 writes the same trie ("." for a member with
    children)."""
    assert FieldSet.from_fields_v1(trie).to_fields_v1() == trie


def test_conflict_paths_are_printed_as_upstream() -> None:
    """fieldpath.Path.String: .spec.replicas, [name="nginx"], [=value]."""
    assert fp.path_string(P("spec", "replicas")) == ".spec.replicas"
    path = P("spec", "containers", _k("nginx"), "image")
    assert fp.path_string(path) == '.spec.containers[name="nginx"].image'
    assert fp.path_string(P("finalizers", _v("a"))) == '.finalizers[="a"]'


def test_fields_v1_text_is_the_tries_json() -> None:
    """The text written from each subtree is the compact JSON of to_fields_v1."""
    s = FieldSet.of(
        P("spec", "replicas"),
        P("spec", "containers", _k("a")),
        P("spec", "containers", _k("a"), "image"),
        P("metadata", "labels", "x"),
        P("finalizers", _v("f")),
    )
    assert fp.fields_v1_text(s) == json.dumps(s.to_fields_v1(), separators=(",", ":"))


def _renaming(obj: JSON, version: str, source: str = "", /) -> tuple[JSON, Node] | None:
    """v1 of LEAF's type calls `numeric` `number` (v2's is LEAF); v0 is no longer served."""
    if not isinstance(obj, dict):
        return None
    if version == "v1" and source in ("", "v2"):
        return {("number" if k == "numeric" else k): v for k, v in obj.items()}, V1_LEAF
    if version == "v2" and source == "v1":
        return {("numeric" if k == "number" else k): v for k, v in obj.items()}, LEAF
    return None


V1_LEAF = from_json_schema(
    {
        "type": "object",
        "properties": {"number": {"type": "number"}, "string": {"type": "string"}},
    }
)


def test_managers_of_another_version_are_compared_in_it() -> None:
    """merge/update.go update: each manager's set is checked against the write converted to
    its version (Converter.Convert); a manager of a version not served goes."""
    updater = Updater(LEAF)
    managers: ManagedFields = {
        "old": VersionedSet(FieldSet.of((fp.field("number"),)), "v1", True),
        "gone": VersionedSet(FieldSet.of((fp.field("string"),)), "v0", False),
    }
    live: JSONObject = {"numeric": 1, "string": "a"}
    config: JSONObject = {"numeric": 2}
    with pytest.raises(Conflicts) as e:
        updater.apply(live, config, "v2", managers, "new", False, _renaming)
    assert e.value.conflicts == [Conflict("old", (fp.field("number"),))]
    merged, after = updater.apply(live, config, "v2", managers, "new", True, _renaming)
    assert merged == {"numeric": 2, "string": "a"}
    assert set(after) == {"new"}  # "old" lost its field, "gone" its version
    # without a converter the sets are compared as they are (one shape): no conflict
    _, plain = updater.apply(live, config, "v2", managers, "new", False)
    assert set(plain) == {"new", "old", "gone"}


def test_an_applier_changing_version_prunes_in_its_last_version() -> None:
    """update.go prune: what the applier applied last (in v1, `number`) and no longer applies
    (in v2, where the field is `numeric`) is removed in v1's terms; what it applies again and
    what another manager owns stay."""
    updater = Updater(LEAF)
    managers: ManagedFields = {
        "a": VersionedSet(FieldSet.of((fp.field("number"),)), "v1", True),
    }
    live: JSONObject = {"numeric": 1, "string": "x"}
    merged, after = updater.apply(live, {"string": "y"}, "v2", managers, "a", False, _renaming)
    assert merged == {"string": "y"}
    assert set(after) == {"a"}
    kept = {**managers, "b": VersionedSet(FieldSet.of((fp.field("numeric"),)), "v2", False)}
    merged, _ = updater.apply(live, {"string": "y"}, "v2", kept, "a", False, _renaming)
    assert merged == {"numeric": 1, "string": "y"}
