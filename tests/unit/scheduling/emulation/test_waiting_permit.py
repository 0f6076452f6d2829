from __future__ import annotations

from typing import Any

import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.emulation import waiting_permit
from kemu.scheduling.events import ActionType, EventResource, QueueingHint
from kemu.scheduling.interface import CycleState
from kemu.scheduling.status import Code
from kemu.testing.builders import make_pod
from tests.unit.scheduling.plugins.fakes import FakeHandle, FakeInformerFactory

WAIT = waiting_permit.ANNOTATION_WAIT
DECISION = waiting_permit.ANNOTATION_DECISION
NAME = waiting_permit.NAME


def pod(
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    uid: str = "uid-p",
) -> types_pb2.Pod:
    b = make_pod("p").uid(uid)
    for k, v in (annotations or {}).items():
        b.annotation(k, v)
    for k, v in (labels or {}).items():
        b.label(k, v)
    return b.obj()


def with_decision(p: types_pb2.Pod, value: str) -> types_pb2.Pod:
    new = types_pb2.Pod()
    new.CopyFrom(p)
    new.metadata.annotations[DECISION] = value
    return new


def test_pods_without_the_annotation_are_permitted() -> None:
    pl = waiting_permit.new({}, FakeHandle())
    status, timeout = pl.permit(CycleState(), pod(), "n1")
    assert status.is_success()
    assert timeout == 0


@pytest.mark.parametrize(
    ("args", "annotation", "timeout"),
    [
        ({}, "", 600.0),  # default 10m
        ({}, "30s", 30.0),
        ({"timeout": "2m"}, "", 120.0),
        ({"timeout": "2m"}, "5s", 5.0),  # the annotation wins
    ],
)
def test_annotated_pod_waits_with_its_timeout(
    args: dict[str, Any], annotation: str, timeout: float
) -> None:
    pl = waiting_permit.new(args, FakeHandle())
    status, got = pl.permit(CycleState(), pod({WAIT: annotation}), "n1")
    assert status.code == Code.WAIT
    assert got == timeout


def test_pod_selector_makes_matching_pods_wait() -> None:
    pl = waiting_permit.new(
        {"timeout": "1m", "podSelector": {"matchLabels": {"hold": "yes"}}}, FakeHandle()
    )
    assert pl.permit(CycleState(), pod(labels={"hold": "no"}), "n1")[0].is_success()
    status, timeout = pl.permit(CycleState(), pod(labels={"hold": "yes"}), "n1")
    assert status.is_wait()
    assert timeout == 60.0


def test_a_bad_wait_annotation_is_an_error() -> None:
    pl = waiting_permit.new({}, FakeHandle())
    status, _ = pl.permit(CycleState(), pod({WAIT: "a while"}), "n1")
    assert status.is_error()
    assert WAIT in status.message()


def test_annotation_allow_releases_the_waiting_pod_through_the_informer() -> None:
    informers = FakeInformerFactory()
    handle = FakeHandle(informers=informers)
    pl = waiting_permit.new({}, handle)
    assert informers.requests == [(types_pb2.Pod, waiting_permit.POD_INFORMER_FIELD_SELECTOR)]
    p = pod({WAIT: "10m"})
    assert pl.permit(CycleState(), p, "n1")[0].is_wait()
    waiting = handle.hold(p, NAME)
    informers.pods.update(p, p)  # an unrelated update releases nothing
    assert waiting.allowed_by == [] and waiting.rejected == []
    informers.pods.update(p, with_decision(p, "allow"))
    assert waiting.allowed_by == [NAME]
    assert waiting.rejected == []
    # The same annotation seen again (a resync, another update) does not allow twice.
    informers.pods.update(p, with_decision(p, "allow"))
    assert waiting.allowed_by == [NAME]


def test_annotation_reject_rejects_the_waiting_pod() -> None:
    informers = FakeInformerFactory()
    handle = FakeHandle(informers=informers)
    waiting_permit.new({}, handle)
    p = pod({WAIT: ""})
    waiting = handle.hold(p, NAME)
    informers.pods.update(p, with_decision(p, "reject"))
    assert waiting.rejected == [(NAME, "rejected by annotation")]
    assert waiting.allowed_by == []


def test_a_decision_seen_before_permit_applies_at_permit() -> None:
    """The cycle's copy of the pod may predate the annotation the informer already saw."""
    informers = FakeInformerFactory()
    handle = FakeHandle(informers=informers)
    pl = waiting_permit.new({}, handle)
    stale = pod({WAIT: "10m"})
    informers.pods.update(stale, with_decision(stale, "allow"))
    assert pl.permit(CycleState(), stale, "n1")[0].is_success()
    other = pod({WAIT: "10m"}, uid="uid-q")
    informers.pods.update(other, with_decision(other, "reject"))
    status, _ = pl.permit(CycleState(), other, "n1")
    assert status.code == Code.UNSCHEDULABLE
    assert status.message() == "rejected by annotation"
    # Deleting the pod forgets its decision.
    informers.pods.delete(other)
    assert pl.permit(CycleState(), other, "n1")[0].is_wait()


def test_annotation_already_on_the_pod_at_permit_is_honoured() -> None:
    pl = waiting_permit.new({}, FakeHandle())
    assert pl.permit(CycleState(), pod({WAIT: "1m", DECISION: "allow"}), "n1")[0].is_success()
    status, _ = pl.permit(CycleState(), pod({WAIT: "1m", DECISION: "reject"}), "n1")
    assert status.code == Code.UNSCHEDULABLE


def test_without_informers_a_direct_allow_releases_the_pod() -> None:
    handle = FakeHandle(informers=None)
    pl = waiting_permit.new({}, handle)
    p = pod({WAIT: "10m"})
    assert pl.permit(CycleState(), p, "n1")[0].is_wait()
    waiting = handle.hold(p, NAME)
    found = handle.get_waiting_pod("uid-p")
    assert found is not None
    found.allow(NAME)
    assert waiting.allowed_by == [NAME]


def test_hint_requeues_the_pod_itself_unless_it_is_still_rejected() -> None:
    pl = waiting_permit.new({}, FakeHandle())
    (ev,) = pl.events_to_register()
    assert ev.event.resource == EventResource.POD
    assert ev.event.action == ActionType.UPDATE_POD_OTHER
    p = pod({WAIT: "", DECISION: "reject"})
    assert pl.is_schedulable_after_pod_update(p, p, with_decision(p, "allow")) == (
        QueueingHint.QUEUE
    )
    assert pl.is_schedulable_after_pod_update(p, p, p) == QueueingHint.SKIP
    other = pod({WAIT: ""}, uid="uid-q")
    assert pl.is_schedulable_after_pod_update(p, other, other) == QueueingHint.SKIP


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"timeout": "soon"}, "timeout"),
        ({"timeout": 10}, "timeout"),
        ({"podSelector": []}, "podSelector"),
        ({"wait": "1s"}, "wait"),
    ],
)
def test_invalid_args_name_the_field(args: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        waiting_permit.new(args, FakeHandle())
