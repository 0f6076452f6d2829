"""The manager of a write when the request names none (handlers/fieldmanager
managerOrUserAgent)."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest

from apiserver.registry.field_managers import (
    FieldTracker,
    body_sends_empty,
    from_grpc_user_agent,
    from_user_agent,
    json_patch_sends_empty,
    sent_empty,
    serving,
)
from kemu.api.v1 import types_pb2
from kemu.component.featuregate import FeatureGates
from kemu.machinery import podgroups
from kemu.machinery.jsonvalue import JSON
from kemu.machinery.kinds import BY_KIND, Served
from kemu.machinery.runtime_config import RuntimeConfig
from kemu.machinery.strategy import StrategyOptions, strategy_for
from kemu.testing.builders import make_pod

POD: Final = BY_KIND["Pod"]


@pytest.mark.parametrize(
    ("user_agent", "manager"),
    [
        ("kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9", "kubectl"),
        ("kubectl-edit/v1.32.0 (linux/amd64) kubernetes/70d3cc9", "kubectl-edit"),
        ("OpenAPI-Generator/37.0.2/python", "OpenAPI-Generator"),
        ("", ""),
    ],
)
def test_manager_from_user_agent(user_agent: str, manager: str) -> None:
    """prefixFromUserAgent: the part before the first "/"."""
    assert from_user_agent(user_agent) == manager


def test_manager_of_kemus_components_over_grpc() -> None:
    """kemu.client sends the component's upstream name first; gRPC appends its own agent."""
    assert from_grpc_user_agent("kube-scheduler grpc-python/1.66.0 grpc-c/43.0.0") == (
        "kube-scheduler"
    )
    assert from_grpc_user_agent("") == "kube-apiserver"


def _pod() -> types_pb2.Pod:
    pod = make_pod("p").req(cpu="500m").obj()
    strategy_for(POD).prepare_for_create(pod, StrategyOptions(), 0.0)
    return pod


def _entries(obj: types_pb2.Pod) -> dict[tuple[str, str, str], JSON]:
    return {
        (e.manager, e.operation, e.subresource): json.loads(e.fields_v1.raw)
        for e in obj.metadata.managed_fields
    }


def test_tracking_a_create_an_update_and_a_status_write() -> None:
    """A create's manager owns what it set (not status: the main resource's ResetFields); a
    status write by another manager is its own entry with subresource status; a no-op update
    keeps the entries byte for byte; an update with entries of its own keeps them (a client
    may edit them), a status write never takes the entries it was sent."""
    tracker = FieldTracker()
    pod = _pod()
    with serving("kubectl-create"):
        tracker.created(POD, pod, 100.0)
    created = _entries(pod)
    spec = created[("kubectl-create", "Update", "")]
    assert isinstance(spec, dict)
    assert set(spec) == {"f:spec"}  # (metadata.name and namespace: the server's)

    running = types_pb2.Pod()
    running.CopyFrom(pod)
    running.status.phase = "Running"
    running.metadata.ClearField("managed_fields")  # (a status write's entries are ignored)
    with serving("kubelet"):
        tracker.updated(POD, pod, running, "status", 200.0)
    after = _entries(running)
    assert after[("kubelet", "Update", "status")] == {"f:status": {"f:phase": {}}}
    assert after[("kubectl-create", "Update", "")] == spec

    same = types_pb2.Pod()
    same.CopyFrom(running)
    with serving("someone"):
        tracker.updated(POD, running, same, "", 300.0)
    assert list(same.metadata.managed_fields) == list(running.metadata.managed_fields)


def test_one_empty_entry_resets_the_entries() -> None:
    """isResetManagedFields: an update whose managedFields is one empty entry clears them;
    with a change too: skipNonApplied tracks no update of an object without entries."""
    tracker = FieldTracker()
    pod = _pod()
    with serving("kubectl-create"):
        tracker.created(POD, pod, 100.0)
    reset = types_pb2.Pod()
    reset.CopyFrom(pod)
    del reset.metadata.managed_fields[:]
    reset.metadata.managed_fields.add()
    with serving("kubectl-replace"):
        tracker.updated(POD, pod, reset, "", 200.0)
    assert list(reset.metadata.managed_fields) == []
    labelled = types_pb2.Pod()
    labelled.CopyFrom(pod)
    del labelled.metadata.managed_fields[:]
    labelled.metadata.managed_fields.add()
    labelled.metadata.labels["a"] = "b"
    with serving("kubectl-label"):
        tracker.updated(POD, pod, labelled, "", 200.0)
    assert list(labelled.metadata.managed_fields) == []
    # and the next update of the untracked object tracks nothing either
    again = types_pb2.Pod()
    again.CopyFrom(labelled)
    again.metadata.labels["c"] = "d"
    with serving("kubectl-label"):
        tracker.updated(POD, labelled, again, "", 300.0)
    assert list(again.metadata.managed_fields) == []


def test_an_empty_list_resets_the_entries_when_the_edge_says_it_was_sent() -> None:
    """`"managedFields": []` in a JSON body (sent_empty) resets them as upstream's
    isResetManagedFields; absent (the same protobuf) keeps them."""
    tracker = FieldTracker()
    pod = _pod()
    with serving("kubectl-create"):
        tracker.created(POD, pod, 100.0)
    labelled = types_pb2.Pod()
    labelled.CopyFrom(pod)
    del labelled.metadata.managed_fields[:]
    labelled.metadata.labels["a"] = "b"
    kept = types_pb2.Pod()
    kept.CopyFrom(labelled)
    with serving("kubectl-label"):
        tracker.updated(POD, pod, kept, "", 200.0)
    assert set(_entries(kept)) == {
        ("kubectl-create", "Update", ""),
        ("kubectl-label", "Update", ""),
    }
    with serving("kubectl-label"), sent_empty(True):
        tracker.updated(POD, pod, labelled, "", 200.0)
    assert list(labelled.metadata.managed_fields) == []


def test_which_bodies_send_an_empty_list() -> None:
    assert body_sends_empty({"metadata": {"managedFields": []}})
    assert not body_sends_empty({"metadata": {"managedFields": [{}]}})
    assert not body_sends_empty({"metadata": {}})
    assert json_patch_sends_empty(
        [{"op": "replace", "path": "/metadata/managedFields", "value": []}]
    )
    assert not json_patch_sends_empty(
        [
            {"op": "replace", "path": "/metadata/managedFields", "value": []},
            {"op": "add", "path": "/metadata/managedFields", "value": [{"manager": "m"}]},
        ]
    )


@pytest.mark.parametrize(("served", "kept"), [(None, True), (37, False)])
def test_an_entry_in_a_version_the_apiserver_does_not_serve_goes_at_the_next_write(
    served: int | None, kept: bool
) -> None:
    """Upstream's converter cannot convert to a group version its apiserver does not serve:
    a manager's entry in one (a ResourceClaim's resource.k8s.io/v1alpha3, served at 1.31-1.32
    only) is a missing version, and goes at the next write that compares with it. What is
    served is the apiserver's emulated version's (Served), not every version kemu has."""
    claim_kind = BY_KIND["ResourceClaim"]
    tracker = FieldTracker(
        Served.at(served, FeatureGates.default().enabled, RuntimeConfig.parse([]))
        if served is not None
        else None
    )
    claim = types_pb2.ResourceClaim(metadata=types_pb2.ObjectMeta(name="c", namespace="d"))
    claim.metadata.labels["old"] = "1"
    old = types_pb2.ManagedFieldsEntry(
        manager="old-tool",
        operation="Update",
        api_version="resource.k8s.io/v1alpha3",
        fields_type="FieldsV1",
    )
    old.fields_v1.raw = json.dumps({"f:metadata": {"f:labels": {"f:old": {}}}})
    claim.metadata.managed_fields.append(old)
    labelled = types_pb2.ResourceClaim()
    labelled.CopyFrom(claim)
    labelled.metadata.labels["new"] = "2"
    with serving("kubectl-label"):
        tracker.updated(claim_kind, claim, labelled, "", 100.0)
    managers = {e.manager for e in labelled.metadata.managed_fields}
    assert managers == ({"old-tool", "kubectl-label"} if kept else {"kubectl-label"})


def _hpa(api_version: str, spec: dict[str, JSON]) -> dict[str, JSON]:
    return {
        "apiVersion": api_version,
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h", "namespace": "d"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 5,
            **spec,
        },
    }


def test_an_applier_that_changes_version_prunes_in_the_version_it_last_applied() -> None:
    """update.go prune: the merged object is converted to the version of the applier's last
    apply and what it no longer applies is removed there (then owned and dangling fields are
    added back, each in its own version). An HPA's CPU target is
    `targetCPUUtilizationPercentage` in autoscaling/v1 and a Resource metric in v2: applied in
    v1, then applied in v2 without it, it goes. Pruned in v2 with the last set's v1 paths, it
    stayed (they named nothing there)."""
    kind = BY_KIND["HorizontalPodAutoscaler"]
    tracker = FieldTracker()
    first, entries = tracker.applied(
        kind,
        None,
        [],
        _hpa("autoscaling/v1", {"minReplicas": 2, "targetCPUUtilizationPercentage": 50}),
        "tool",
        False,
        "",
        100.0,
    )
    assert [e.api_version for e in entries] == ["autoscaling/v1"]
    stored = podgroups.from_versioned(kind, first, "autoscaling/v1")
    live = podgroups.to_versioned(stored, "autoscaling/v2")
    live_spec: Any = live["spec"]
    assert live_spec["metrics"]
    second, entries = tracker.applied(
        kind, live, entries, _hpa("autoscaling/v2", {"minReplicas": 2}), "tool", False, "", 200.0
    )
    spec: Any = second["spec"]
    assert "metrics" not in spec
    assert (spec["minReplicas"], spec["maxReplicas"]) == (2, 5)
    assert [e.api_version for e in entries] == ["autoscaling/v2"]


def test_a_set_read_from_an_entry_is_shared_and_never_changed_by_later_writes() -> None:
    """Entries are read once per FieldsV1 text (every write of an object reads its entries):
    another manager taking a field away from the creator makes a new set, and the creator's
    entry of the first object, and of a second object created alike, still reads the same."""
    tracker = FieldTracker()
    first, second = _pod(), _pod()
    for pod in (first, second):
        pod.metadata.labels["app"] = "a"
        with serving("kubectl-create"):
            tracker.created(POD, pod, 100.0)
    created = _entries(first)
    assert _entries(second) == created
    relabelled = types_pb2.Pod()
    relabelled.CopyFrom(first)
    relabelled.metadata.labels["app"] = "b"
    with serving("kubectl-label"):
        tracker.updated(POD, first, relabelled, "", 200.0)
    taken = _entries(relabelled)
    assert taken[("kubectl-label", "Update", "")] == {"f:metadata": {"f:labels": {"f:app": {}}}}
    creator = taken[("kubectl-create", "Update", "")]
    assert '"f:app"' not in json.dumps(creator)
    assert '"f:app"' in json.dumps(created[("kubectl-create", "Update", "")])
    assert _entries(first) == _entries(second) == created
    again = types_pb2.Pod()
    again.CopyFrom(second)
    again.status.phase = "Running"
    with serving("kubelet"):
        tracker.updated(POD, second, again, "status", 300.0)
    assert (
        _entries(again)[("kubectl-create", "Update", "")]
        == created[("kubectl-create", "Update", "")]
    )
