"""kemu.machinery.patch: JSON patch and strategic merge patch on objects' JSON."""

from __future__ import annotations

from typing import Any

import pytest

from kemu.machinery import patch
from kemu.machinery.errors import BadRequest, Invalid

POD: dict[str, Any] = {
    "metadata": {"name": "p", "labels": {"a": "1"}, "finalizers": ["x"]},
    "spec": {
        "containers": [
            {"name": "a", "image": "i1", "env": [{"name": "E", "value": "1"}]},
            {"name": "b", "image": "i2"},
        ],
        "tolerations": [{"key": "k"}],
    },
}


def test_json_patch_add_replace_remove_test_move_copy() -> None:
    ops = [
        {"op": "add", "path": "/metadata/labels/b", "value": "2"},
        {"op": "replace", "path": "/spec/containers/0/image", "value": "i9"},
        {"op": "remove", "path": "/spec/tolerations"},
        {"op": "test", "path": "/metadata/name", "value": "p"},
        {"op": "copy", "from": "/metadata/labels/a", "path": "/metadata/labels/c"},
        {"op": "move", "from": "/metadata/labels/b", "path": "/metadata/labels/d"},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "y"},
    ]
    out = patch.apply(patch.JSON, POD, ops)
    assert out["metadata"]["labels"] == {"a": "1", "c": "1", "d": "2"}
    assert out["spec"]["containers"][0]["image"] == "i9"
    assert "tolerations" not in out["spec"]
    assert out["metadata"]["finalizers"] == ["x", "y"]
    assert POD["spec"]["containers"][0]["image"] == "i1"  # the target is not modified


def test_json_patch_errors_name_the_path() -> None:
    with pytest.raises(Invalid, match="testing value failed"):
        patch.apply(patch.JSON, POD, [{"op": "test", "path": "/metadata/name", "value": "q"}])
    with pytest.raises(Invalid, match="missing"):
        patch.apply(patch.JSON, POD, [{"op": "remove", "path": "/metadata/nope"}])
    with pytest.raises(BadRequest):
        patch.apply(patch.JSON, POD, {"op": "add"})


def test_strategic_merge_merges_containers_by_name_and_replaces_atomic_lists() -> None:
    p = {
        "spec": {
            "containers": [{"name": "b", "image": "i3"}, {"name": "c", "image": "i4"}],
            "tolerations": [{"key": "other"}],
        },
        "metadata": {"labels": {"a": None, "z": "9"}, "finalizers": ["y"]},
    }
    out = patch.apply(patch.STRATEGIC, POD, p)
    assert [(c["name"], c["image"]) for c in out["spec"]["containers"]] == [
        ("a", "i1"),
        ("b", "i3"),
        ("c", "i4"),
    ]
    assert out["spec"]["containers"][0]["env"] == [{"name": "E", "value": "1"}]
    assert out["spec"]["tolerations"] == [{"key": "other"}]
    assert out["metadata"]["labels"] == {"z": "9"}
    assert out["metadata"]["finalizers"] == ["x", "y"]


def test_strategic_merge_directives() -> None:
    p = {
        "spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
            "containers": [{"name": "a", "$patch": "delete"}],
        },
        "metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]},
    }
    out = patch.apply(patch.STRATEGIC, POD, p)
    assert [c["name"] for c in out["spec"]["containers"]] == ["b"]
    assert out["metadata"]["finalizers"] == []
    replaced = patch.apply(patch.STRATEGIC, POD, {"spec": {"$patch": "replace", "containers": []}})
    assert replaced["spec"] == {"containers": []}
    with pytest.raises(Invalid, match="merge key"):
        patch.apply(patch.STRATEGIC, POD, {"spec": {"containers": [{"image": "x"}]}})
