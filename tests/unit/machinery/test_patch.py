"""kemu.machinery.patch: JSON patch and strategic merge patch on objects' JSON."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery import patch
from kemu.machinery.errors import BadRequest, Invalid
from kemu.machinery.kinds import BY_KIND

POD_KIND = BY_KIND["Pod"]
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
    ops: list[Any] = [
        {"op": "add", "path": "/metadata/labels/b", "value": "2"},
        {"op": "replace", "path": "/spec/containers/0/image", "value": "i9"},
        {"op": "remove", "path": "/spec/tolerations"},
        {"op": "test", "path": "/metadata/name", "value": "p"},
        {"op": "copy", "from": "/metadata/labels/a", "path": "/metadata/labels/c"},
        {"op": "move", "from": "/metadata/labels/b", "path": "/metadata/labels/d"},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "y"},
    ]
    out: Any = patch.apply(patch.JSON, POD, ops, POD_KIND)
    assert out["metadata"]["labels"] == {"a": "1", "c": "1", "d": "2"}
    assert out["spec"]["containers"][0]["image"] == "i9"
    assert "tolerations" not in out["spec"]
    assert out["metadata"]["finalizers"] == ["x", "y"]
    assert POD["spec"]["containers"][0]["image"] == "i1"  # the target is not modified


def test_json_patch_errors_name_the_path() -> None:
    with pytest.raises(Invalid, match="testing value failed"):
        patch.apply(
            patch.JSON, POD, [{"op": "test", "path": "/metadata/name", "value": "q"}], POD_KIND
        )
    with pytest.raises(Invalid, match="missing"):
        patch.apply(patch.JSON, POD, [{"op": "remove", "path": "/metadata/nope"}], POD_KIND)
    with pytest.raises(BadRequest):
        patch.apply(patch.JSON, POD, {"op": "add"}, POD_KIND)


def test_strategic_merge_merges_containers_by_name_and_replaces_atomic_lists() -> None:
    p: dict[str, Any] = {
        "spec": {
            "containers": [{"name": "b", "image": "i3"}, {"name": "c", "image": "i4"}],
            "tolerations": [{"key": "other"}],
        },
        "metadata": {"labels": {"a": None, "z": "9"}, "finalizers": ["y"]},
    }
    out: Any = patch.apply(patch.STRATEGIC, POD, p, POD_KIND)
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
    p: dict[str, Any] = {
        "spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
            "containers": [{"name": "a", "$patch": "delete"}],
        },
        "metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]},
    }
    out: Any = patch.apply(patch.STRATEGIC, POD, p, POD_KIND)
    assert [c["name"] for c in out["spec"]["containers"]] == ["b"]
    assert out["metadata"]["finalizers"] == []
    replaced: Any = patch.apply(
        patch.STRATEGIC, POD, {"spec": {"$patch": "replace", "containers": []}}, POD_KIND
    )
    assert replaced["spec"] == {"containers": []}
    with pytest.raises(Invalid, match="merge key"):
        patch.apply(patch.STRATEGIC, POD, {"spec": {"containers": [{"image": "x"}]}}, POD_KIND)


def test_strategic_merge_keys_are_per_type_not_per_field_name() -> None:
    pod: dict[str, Any] = {
        "spec": {
            "containers": [
                {
                    "name": "a",
                    "ports": [{"containerPort": 80, "name": "http"}],
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                }
            ],
            "tolerations": [{"key": "t1"}],
        },
        "status": {
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [{"name": "a", "ready": False}, {"name": "b"}],
        },
    }
    p: dict[str, Any] = {
        "spec": {
            "containers": [
                {
                    "name": "a",
                    "ports": [{"containerPort": 81}],
                    "env": [{"name": "B", "value": "3"}],
                }
            ],
            "tolerations": [{"key": "t2"}],
        },
        "status": {
            "conditions": [{"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [{"name": "a", "ready": True}],
        },
    }
    out: Any = patch.apply(patch.STRATEGIC, pod, p, POD_KIND)
    c = out["spec"]["containers"][0]
    assert [x["containerPort"] for x in c["ports"]] == [80, 81]  # merged by containerPort
    assert c["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}]  # by name
    assert out["spec"]["tolerations"] == [{"key": "t2"}]  # atomic: replaced
    assert [x["type"] for x in out["status"]["conditions"]] == ["Ready", "PodScheduled"]
    assert out["status"]["containerStatuses"] == [{"name": "a", "ready": True}]  # atomic
    svc: dict[str, Any] = {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}}
    out = patch.apply(
        patch.STRATEGIC,
        svc,
        {"spec": {"ports": [{"port": 80, "targetPort": 9090}]}},
        BY_KIND["Service"],
    )
    assert out["spec"]["ports"] == [{"port": 80, "targetPort": 9090}, {"port": 443}]  # by port
    node: dict[str, Any] = {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}}
    out = patch.apply(
        patch.STRATEGIC,
        node,
        {"spec": {"taints": [{"key": "b", "effect": "NoSchedule"}]}},
        BY_KIND["Node"],
    )
    assert [t["key"] for t in out["spec"]["taints"]] == ["b"]  # NodeSpec.taints is atomic


def _desc(msg: Message) -> Descriptor:
    desc: Descriptor = msg.DESCRIPTOR  # type: ignore[assignment]
    return desc


def test_merge_keys_are_upstreams_patch_strategies() -> None:
    """The merge keys come from upstream's OpenAPI (x-kubernetes-patch-merge-key of the lists
    with x-kubernetes-patch-strategy merge), for kemu's messages; what the hand-kept table had
    before them is among them."""
    t = types_pb2
    had = {
        (t.ObjectMeta, "ownerReferences"): "uid",
        (t.PodSpec, "containers"): "name",
        (t.PodSpec, "volumes"): "name",  # merge,retainKeys
        (t.PodSpec, "topologySpreadConstraints"): "topologyKey",
        (t.Container, "ports"): "containerPort",
        (t.Container, "volumeMounts"): "mountPath",
        (t.PodStatus, "conditions"): "type",
        (t.NodeStatus, "conditions"): "type",
        (t.ServiceSpec, "ports"): "port",
        (t.PodDisruptionBudgetStatus, "conditions"): "type",
        (t.ServiceAccount, "secrets"): "name",
        (t.CSINodeSpec, "drivers"): "name",
    }
    for (message, field), key in had.items():
        assert patch._merge_key(_desc(message()), field) == key, (message, field)
    assert patch._merge_key(_desc(t.NodeSpec()), "taints") is None  # atomic
    assert patch._merges_scalars(_desc(t.ObjectMeta()), "finalizers")
    assert patch._merges_scalars(_desc(t.NodeSpec()), "podCIDRs")
    assert not patch._merges_scalars(_desc(t.PodSpec()), "containers")
