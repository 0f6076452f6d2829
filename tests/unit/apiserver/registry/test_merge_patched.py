"""A merge PATCH converts only the top-level fields it names (registry.merge_patched): every
outcome (the object, the first Invalid field, the unknown fields found, a strict error) must be
what the whole JSON round trip gives."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.protobuf.message import Message

from apiserver.registry.patch import merge_patched
from apiserver.registry.subresources import StatusREST
from kemu.api.v1 import types_pb2
from kemu.machinery import convert
from kemu.machinery import patch as patches
from kemu.machinery.errors import ApiError
from kemu.machinery.kinds import BY_KIND, Kind
from tests.unit.apiserver.registry.test_cached_update import POD_KEY, Env, _pod

POD = BY_KIND["Pod"]
NODE = BY_KIND["Node"]

RICH_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "p",
        "namespace": "ns",
        "uid": "u-1",
        "resourceVersion": "42",
        "generation": 3,
        "creationTimestamp": "2026-01-02T03:04:05Z",
        "labels": {"app": "a", "tier": "t"},
        "annotations": {"x": "1"},
        "finalizers": ["f/one"],
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "o-1"}
        ],
    },
    "spec": {
        "nodeName": "n1",
        "priority": 0,
        "schedulerName": "default-scheduler",
        "containers": [
            {
                "name": "c",
                "image": "img",
                "resources": {"requests": {"cpu": "100m"}, "limits": {"memory": "1Gi"}},
                "ports": [{"containerPort": 80}],
                "readinessProbe": {"httpGet": {"path": "/", "port": 8080}},
                "livenessProbe": {"tcpSocket": {"port": "http"}},
            }
        ],
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {"nodeAffinity": {}},
        "volumes": [{"name": "v", "emptyDir": {}}],
    },
    "status": {
        "phase": "Pending",
        "qosClass": "Burstable",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "lastTransitionTime": "2026-01-02T03:04:06Z",
            }
        ],
    },
}

PATCHES: list[dict[str, Any]] = [
    # the scheduler's and the preemption's status PATCHes
    {
        "metadata": {"resourceVersion": "42"},
        "status": {
            "conditions": [
                {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
            ]
        },
    },
    {"status": {"nominatedNodeName": "n2", "conditions": None}},
    {"metadata": {"labels": {"app": None, "new": "v"}, "annotations": None}},
    {"spec": {"containers": [{"name": "c", "image": "other"}]}},
    {"status": None},
    {"metadata": {"finalizers": []}, "spec": {"nodeName": "n3"}, "status": {"phase": "Running"}},
    {"status": {}},
    {"spec": {"ephemeralContainers": [{"name": "e", "image": "i"}]}},
    # a field not set on the pod is added after the set ones
    {"status": {"phase": "Failed"}, "metadata": {"labels": {"z": "z"}}},
    # errors: the first bad field, in the whole object's order
    {"status": {"phase": 5}, "metadata": {"labels": {"a": 1}}},
    {"status": {"conditions": "x"}},
    {"spec": 5},
    {"metadata": {"creationTimestamp": "not a time"}},
    # unknown fields
    {"status": {"bogus": 1}, "metadata": {"alsoBogus": {"x": 1}}},
    # strings only: set without the round trip (also on a field the pod does not have)
    {"metadata": {"resourceVersion": "7", "name": ""}, "status": {"phase": "Running"}},
    {"metadata": {"resourceVersion": 7}},
    {"metadata": {"resourceVersion": "7", "labels": {"x": "y"}}},
    {"spec": {"nodeName": "n9", "hostname": "h"}},
    {"status": {"nominatedNodeName": "n", "reason": None}},
    {"status": {"message": "m"}, "spec": {"priorityClassName": ""}},
    # keys the shortcut leaves to the whole round trip
    {"kind": "Pod", "status": {"phase": "Running"}},
    {"apiVersion": "v2"},
    {"bogusTopLevel": 1, "status": {"phase": "Running"}},
]


def _whole(kind: Kind, current: Message, patch: dict[str, Any], unknown: Any) -> Message:
    return convert.from_dict(
        kind, patches.apply(patches.MERGE, convert.to_dict(current), patch, kind), unknown
    )


def _outcome(fn: Any, kind: Kind, current: Message, patch: dict[str, Any], mode: str) -> Any:
    unknown = None
    if mode != "invalid":
        unknown = convert.UnknownFields(strict=mode == "strict", warn=mode == "warn")
    try:
        obj = fn(kind, current, patch, unknown)
    except ApiError as e:
        return ("error", type(e).__name__, e.message, [(c.field, c.message) for c in e.causes])
    found = list(unknown.found) if unknown is not None else []
    return ("ok", obj.SerializeToString(deterministic=True), found)


@pytest.mark.parametrize("mode", ["invalid", "warn", "strict"])
@pytest.mark.parametrize("patch", PATCHES, ids=range(len(PATCHES)))
def test_same_outcome_as_the_whole_round_trip(patch: dict[str, Any], mode: str) -> None:
    current = convert.from_dict(POD, RICH_POD)
    before = current.SerializeToString(deterministic=True)
    assert _outcome(merge_patched, POD, current, patch, mode) == _outcome(
        _whole, POD, current, patch, mode
    )
    assert current.SerializeToString(deterministic=True) == before  # never mutated


def test_a_node_status_patch() -> None:
    current = convert.from_dict(
        NODE,
        {
            "metadata": {"name": "n", "labels": {"l": "v"}},
            "spec": {"unschedulable": True},
            "status": {"capacity": {"cpu": "4"}, "conditions": [{"type": "Ready"}]},
        },
    )
    patch = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert _outcome(merge_patched, NODE, current, patch, "invalid") == _outcome(
        _whole, NODE, current, patch, "invalid"
    )


def test_the_shortcut_changes_only_the_patched_field() -> None:
    """The shortcut is taken: the spec is not converted, so it is the current one, where the
    round trip gives back its JSON reading (an empty IntOrString is lost: the test sees which
    path ran). Hence the registry takes it for the status subresource only, whose strategy
    keeps the stored spec."""
    current = convert.from_dict(POD, RICH_POD)
    assert isinstance(current, types_pb2.Pod)
    current.spec.containers[0].readiness_probe.http_get.port.Clear()  # empty IntOrString
    out = merge_patched(POD, current, {"status": {"phase": "Running"}})
    assert isinstance(out, types_pb2.Pod)
    assert out.spec.containers[0].readiness_probe.http_get.HasField("port")
    assert out.status.phase == "Running"
    whole = _whole(POD, current, {"status": {"phase": "Running"}}, None)
    assert isinstance(whole, types_pb2.Pod)
    assert not whole.spec.containers[0].readiness_probe.http_get.HasField("port")


@pytest.mark.anyio
@pytest.mark.parametrize("patch", [p for i, p in enumerate(PATCHES[:9]) if i != 7])
async def test_a_status_patch_stores_what_the_whole_round_trip_stored(
    patch: dict[str, Any],
) -> None:
    env = Env()
    await env.start(_pod(a="1"))
    current = env.stored_pod()
    patch = {k: v for k, v in patch.items() if k != "metadata"} | {
        "metadata": {"resourceVersion": current.metadata.resource_version}
    }
    sent = _whole(POD, current, patch, None)
    assert isinstance(sent, types_pb2.Pod)
    sent.metadata.resource_version = current.metadata.resource_version
    expected = StatusREST(
        env.registry._strategy_options, env.registry.now, lambda _name: None
    ).write(POD, current, sent)
    assert isinstance(expected, types_pb2.Pod)
    await env.registry.patch("pods", "default", "p", json.dumps(patch), "status")
    stored = env.stored_pod()
    stored.metadata.resource_version = expected.metadata.resource_version  # (the write's)
    for obj in (stored, expected):  # (the status patch's managedFields entry: the tracker's)
        obj.metadata.ClearField("managed_fields")
    assert stored == expected


@pytest.mark.anyio
async def test_an_update_that_changes_nothing_writes_nothing_whatever_the_map_order() -> None:
    """The no-op check compares the bytes it would write, map entries in key order: the same
    labels set in another order are no change (no etcd write, the same resourceVersion); one
    changed label is written, as those bytes."""
    env = Env()
    await env.start(_pod(a="1", b="2", c="3"))
    current = env.stored_pod()
    same = types_pb2.Pod()
    same.CopyFrom(current)
    same.metadata.labels.clear()
    for k in ("c", "b", "a"):
        same.metadata.labels[k] = current.metadata.labels[k]
    out = await env.registry.update(same)
    assert env.ops() == [("range", True)]  # the no-op confirmed on etcd, not written
    assert out.metadata.resource_version == current.metadata.resource_version  # type: ignore[attr-defined]
    same.metadata.labels["b"] = "x"
    env.store.calls.clear()
    await env.registry.update(same)
    assert env.ops() == [("update", True)]
    assert env.stored_pod().metadata.labels["b"] == "x"
    stored = env.store.kvs[POD_KEY].value
    assert types_pb2.Pod.FromString(stored).SerializeToString(deterministic=True) == stored
