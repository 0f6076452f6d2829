"""kemu.machinery.deletion: what a DELETE does to an object (graceful pods, finalizers, the
garbage collector's finalizers) and when an update removes one."""

from __future__ import annotations

from typing import TypeVar

import pytest
from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.delete_options import gc_finalizers
from kemu.machinery.deletion import (
    DeleteOptions,
    Outcome,
    plan_delete,
    should_delete_during_update,
)
from kemu.machinery.errors import Conflict, Invalid
from kemu.machinery.validation.meta import (
    validate_finalizers,
    validate_no_new_finalizers,
    validate_owner_references,
)
from kemu.testing import make_pdb, make_pod
from kemu.testing.builders import make_job, make_lease, owned, owner_reference

NOW = 1000.0
M = TypeVar("M", bound=Message)


def _stored(obj: M) -> M:
    meta = obj.metadata  # type: ignore[attr-defined]
    meta.uid = "u1"
    meta.generation = 1
    meta.resource_version = "5"
    return obj


def test_an_object_without_finalizers_goes_at_once() -> None:
    lease = _stored(make_lease("l"))
    plan = plan_delete(lease, DeleteOptions(), NOW)
    assert plan.outcome is Outcome.DELETE and plan.obj is lease


def test_finalizers_keep_a_deleted_object_marked_with_grace_0_and_a_generation_bump() -> None:
    lease = _stored(owned(make_lease("l"), finalizers=["example.com/x"]))
    plan = plan_delete(lease, DeleteOptions(), NOW)
    assert plan.outcome is Outcome.UPDATE
    meta = plan.obj.metadata  # type: ignore[attr-defined]
    assert meta.deletion_timestamp.ToSeconds() == NOW
    assert meta.deletion_grace_period_seconds == 0
    assert meta.generation == 2
    again = plan_delete(plan.obj, DeleteOptions(), NOW + 5)
    assert again.outcome is Outcome.UPDATE
    assert again.obj == plan.obj  # nothing changes: no second bump, the first timestamp stays


@pytest.mark.parametrize(
    ("policy", "orphan", "want"),
    [
        ("Foreground", None, ["foregroundDeletion"]),
        ("Orphan", None, ["orphan"]),
        (None, True, ["orphan"]),
        (None, False, None),
        ("Background", None, None),
        (None, None, None),
    ],
)
def test_the_propagation_policy_adds_its_finalizer(
    policy: str | None, orphan: bool | None, want: list[str] | None
) -> None:
    pdb = _stored(make_pdb("p").obj())
    plan = plan_delete(pdb, DeleteOptions(propagation_policy=policy, orphan_dependents=orphan), NOW)
    if want is None:
        assert plan.outcome is Outcome.DELETE
    else:
        assert plan.outcome is Outcome.UPDATE
        assert list(plan.obj.metadata.finalizers) == want  # type: ignore[attr-defined]


def test_gc_finalizers_follow_the_request_then_the_object() -> None:
    assert gc_finalizers(["a/b", "orphan"], None, None) is None  # the object's policy stays
    assert gc_finalizers(["a/b", "orphan"], "Foreground", None) == ["a/b", "foregroundDeletion"]
    assert gc_finalizers(["foregroundDeletion"], "Background", None) == []
    assert gc_finalizers(["foregroundDeletion"], None, True) == ["orphan"]


@pytest.mark.parametrize(
    ("policy", "want"),
    [(None, ["orphan"]), ("Background", None), ("Foreground", ["foregroundDeletion"])],
)
def test_a_batch_v1_job_orphans_its_pods_unless_the_delete_says_otherwise(
    policy: str | None, want: list[str] | None
) -> None:
    """upstream jobStrategy.DefaultGarbageCollectionPolicy: OrphanDependents for batch/v1."""
    job = _stored(make_job("j").obj())
    plan = plan_delete(job, DeleteOptions(propagation_policy=policy), NOW)
    if want is None:
        assert plan.outcome is Outcome.DELETE
    else:
        assert plan.outcome is Outcome.UPDATE
        assert list(plan.obj.metadata.finalizers) == want  # type: ignore[attr-defined]
    assert gc_finalizers(["orphan"], None, None, orphan_by_default=True) is None
    assert gc_finalizers(["foregroundDeletion"], None, None, orphan_by_default=True) is None


def test_a_bound_pod_terminates_gracefully_and_its_finalizers_outlive_the_kubelets_delete() -> None:
    pod = _stored(owned(make_pod("p").node("n1").obj(), finalizers=["example.com/x"]))
    graceful = plan_delete(pod, DeleteOptions(propagation_policy="Foreground"), NOW)
    assert graceful.outcome is Outcome.UPDATE
    meta = graceful.obj.metadata  # type: ignore[attr-defined]
    assert (meta.deletion_grace_period_seconds, meta.generation) == (30, 2)
    assert list(meta.finalizers) == ["example.com/x", "foregroundDeletion"]
    # A pending graceful deletion is not changed by a DELETE without a shorter grace.
    assert plan_delete(graceful.obj, DeleteOptions(), NOW + 1).outcome is Outcome.KEEP
    killed = plan_delete(graceful.obj, DeleteOptions(grace_period=0, uid="u1"), NOW + 2)
    assert killed.outcome is Outcome.UPDATE
    km = killed.obj.metadata  # type: ignore[attr-defined]
    assert km.deletion_grace_period_seconds == 0
    assert km.deletion_timestamp.ToSeconds() == NOW  # counted from the start
    assert km.generation == 2


def test_a_pod_without_finalizers_is_marked_then_removed_even_with_grace_0() -> None:
    for pod, options in [
        (_stored(make_pod("p").node("n1").obj()), DeleteOptions(grace_period=0)),
        (_stored(make_pod("q").obj()), DeleteOptions()),  # unbound
    ]:
        plan = plan_delete(pod, options, NOW)
        assert plan.outcome is Outcome.UPDATE_AND_DELETE
        meta = plan.obj.metadata  # type: ignore[attr-defined]
        assert meta.deletion_timestamp.ToSeconds() == NOW
        assert (meta.deletion_grace_period_seconds, meta.generation) == (0, 2)


def test_a_negative_grace_is_one_second_and_a_terminating_pod_ignores_a_delete_without_grace() -> (
    None
):
    pod = _stored(make_pod("p").node("n1").obj())
    pod.spec.termination_grace_period_seconds = 10
    plan = plan_delete(pod, DeleteOptions(grace_period=-5), NOW)
    assert plan.outcome is Outcome.UPDATE
    assert plan.obj.metadata.deletion_grace_period_seconds == 1  # type: ignore[attr-defined]
    long = plan_delete(pod, DeleteOptions(grace_period=60), NOW).obj
    # its own 10 s would be earlier than the pending 60 s, but a DELETE without grace waits
    assert plan_delete(long, DeleteOptions(), NOW + 1).outcome is Outcome.KEEP
    assert plan_delete(long, DeleteOptions(grace_period=60), NOW + 1).outcome is Outcome.KEEP
    shorter = plan_delete(long, DeleteOptions(grace_period=20), NOW + 30)
    assert shorter.outcome is Outcome.UPDATE
    assert shorter.obj.metadata.deletion_timestamp.ToSeconds() == NOW + 20  # type: ignore[attr-defined]


def test_preconditions_and_options_are_checked() -> None:
    pdb = _stored(make_pdb("p").obj())
    with pytest.raises(Conflict, match="the UID in the precondition"):
        plan_delete(pdb, DeleteOptions(uid="other"), NOW)
    with pytest.raises(Invalid, match="propagationPolicy: Unsupported value"):
        DeleteOptions(propagation_policy="Sideways").validate()
    with pytest.raises(Invalid, match="cannot be both set"):
        DeleteOptions(propagation_policy="Orphan", orphan_dependents=True).validate()


def test_an_update_removing_the_last_finalizer_deletes_only_when_the_grace_is_over() -> None:
    held = _stored(owned(make_lease("l"), finalizers=["example.com/x"]))
    deleting = plan_delete(held, DeleteOptions(), NOW).obj
    emptied = types_pb2.Lease()
    emptied.CopyFrom(deleting)  # type: ignore[arg-type]
    del emptied.metadata.finalizers[:]
    assert should_delete_during_update(deleting, emptied)
    assert not should_delete_during_update(held, emptied)  # not being deleted
    assert not should_delete_during_update(deleting, deleting)  # a finalizer remains
    pod = _stored(owned(make_pod("p").node("n1").obj(), finalizers=["example.com/x"]))
    terminating = plan_delete(pod, DeleteOptions(), NOW).obj
    released = types_pb2.Pod()
    released.CopyFrom(terminating)  # type: ignore[arg-type]
    del released.metadata.finalizers[:]
    assert not should_delete_during_update(terminating, released)  # the kubelet deletes it


def test_finalizer_and_owner_reference_validation() -> None:
    assert validate_finalizers(["example.com/x", "orphan"], "metadata.finalizers") == []
    causes = validate_finalizers(["orphan", "foregroundDeletion", "bad name!"], "f")
    assert [c.field for c in causes] == ["f", "f"]
    assert "cannot be both set" in causes[1].message
    old = types_pb2.ObjectMeta(finalizers=["a/b"])
    old.deletion_timestamp.FromSeconds(1)
    new = types_pb2.ObjectMeta(finalizers=["a/b", "c/d"])
    assert validate_no_new_finalizers(new, types_pb2.ObjectMeta()) == []
    assert "no new finalizers" in validate_no_new_finalizers(new, old)[0].message
    owner = _stored(make_pod("o").obj())
    good = owner_reference(owner, controller=True)
    assert validate_owner_references([good], "r") == []
    two = validate_owner_references([good, owner_reference(owner, controller=True)], "r")
    assert "Only one reference can have Controller set to true" in two[0].message
    empty = validate_owner_references([types_pb2.OwnerReference()], "r")
    assert [c.field for c in empty] == ["r.apiVersion", "r.kind", "r.name", "r.uid"]
    event = types_pb2.OwnerReference(api_version="v1", kind="Event", name="e", uid="x")
    assert "disallowed" in validate_owner_references([event], "r")[0].message
