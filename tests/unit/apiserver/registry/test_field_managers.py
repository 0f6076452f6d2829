"""The manager of a write when the request names none (handlers/fieldmanager
managerOrUserAgent)."""

from __future__ import annotations

import json
from typing import Final

import pytest

from apiserver.registry.field_managers import (
    FieldTracker,
    from_grpc_user_agent,
    from_user_agent,
    serving,
)
from kemu.api.v1 import types_pb2
from kemu.machinery.jsonvalue import JSON
from kemu.machinery.kinds import BY_KIND
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
    with a change, the updater's entry is the only one."""
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
    assert set(_entries(labelled)) == {("kubectl-label", "Update", "")}
