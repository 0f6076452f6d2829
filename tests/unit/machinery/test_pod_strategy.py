"""The pods resource's deletion rules shared by the apiserver and the fake client (upstream
podStrategy.CheckGracefulDelete and rest.BeforeDelete)."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.delete_options import check_delete_preconditions, check_preconditions
from kemu.machinery.errors import Conflict
from kemu.machinery.pod_strategy import (
    begin_graceful_deletion,
    check_graceful_delete,
    normalize_grace,
    shorten_graceful_deletion,
)
from kemu.testing.builders import make_pod


def test_every_pod_delete_is_graceful_with_0_for_unbound_or_finished_pods() -> None:
    bound = make_pod("p").node("n1").obj()
    assert check_graceful_delete(bound, None) == 30  # the default
    assert check_graceful_delete(bound, 5) == 5
    assert check_graceful_delete(bound, 0) == 0
    bound.spec.termination_grace_period_seconds = 7
    assert check_graceful_delete(bound, None) == 7
    bound.spec.termination_grace_period_seconds = -3
    assert check_graceful_delete(bound, None) == 1  # negative: 1 s
    assert check_graceful_delete(make_pod("q").obj(), 5) == 0  # unbound
    done = make_pod("r").node("n1").obj()
    done.status.phase = "Succeeded"
    assert check_graceful_delete(done, 5) == 0


def test_a_negative_grace_period_means_one_second() -> None:
    assert normalize_grace(-1) == 1
    assert normalize_grace(-100) == 1
    assert normalize_grace(0) == 0
    assert normalize_grace(None) is None


def test_a_shorter_grace_counts_from_when_the_deletion_began_and_a_longer_one_never_applies() -> (
    None
):
    meta = types_pb2.ObjectMeta(name="p", generation=1)
    begin_graceful_deletion(meta, 100.0, 30)
    assert meta.deletion_timestamp.seconds == 130 and meta.deletion_grace_period_seconds == 30
    assert meta.generation == 2
    assert not shorten_graceful_deletion(meta, 60)
    assert not shorten_graceful_deletion(meta, 30)
    assert not shorten_graceful_deletion(meta, None)
    assert meta.deletion_timestamp.seconds == 130
    # asked for 5 s at any later time: the deadline is the start (100) + 5
    assert shorten_graceful_deletion(meta, 5)
    assert meta.deletion_timestamp.seconds == 105 and meta.deletion_grace_period_seconds == 5
    assert shorten_graceful_deletion(meta, 0)
    assert meta.deletion_timestamp.seconds == 100 and meta.deletion_grace_period_seconds == 0
    assert meta.generation == 2


def test_delete_preconditions_use_before_deletes_messages() -> None:
    meta = types_pb2.ObjectMeta(name="p", uid="u1", resource_version="7")
    check_delete_preconditions(meta, "Pod", uid="u1", resource_version="7")
    check_delete_preconditions(meta, "Pod", uid=None, resource_version=None)
    with pytest.raises(Conflict) as e:
        check_delete_preconditions(meta, "Pod", uid="u2", resource_version=None)
    assert e.value.message == (
        'Operation cannot be fulfilled on Pod "p": the UID in the precondition (u2) does not '
        "match the UID in record (u1). The object might have been deleted and then recreated"
    )
    with pytest.raises(Conflict, match=r"the ResourceVersion in the precondition \(6\)"):
        check_delete_preconditions(meta, "Lease", uid=None, resource_version="6")


def test_storage_preconditions_name_what_failed() -> None:
    meta = types_pb2.ObjectMeta(name="p", uid="u1", resource_version="7")
    check_preconditions(meta, uid="u1", resource_version="7")
    with pytest.raises(Conflict, match="UID in precondition: u2, UID in object meta: u1"):
        check_preconditions(meta, uid="u2", resource_version=None)
    with pytest.raises(Conflict, match="ResourceVersion in precondition: 6"):
        check_preconditions(meta, uid=None, resource_version="6")
