"""The pods resource's deletion rules shared by the apiserver and the fake client."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.delete_options import check_preconditions, validate_grace_period
from kemu.machinery.errors import Conflict, Invalid
from kemu.machinery.pod_strategy import begin_graceful_deletion, graceful_deletion_period
from kemu.testing.builders import make_node, make_pod


def test_only_a_bound_unfinished_pod_terminates_gracefully() -> None:
    bound = make_pod("p").node("n1").obj()
    assert graceful_deletion_period(bound, None) == 30  # the default
    assert graceful_deletion_period(bound, 5) == 5
    assert graceful_deletion_period(bound, 0) is None  # grace 0: at once
    bound.spec.termination_grace_period_seconds = 7
    assert graceful_deletion_period(bound, None) == 7
    assert graceful_deletion_period(make_pod("q").obj(), 5) is None  # unbound
    done = make_pod("r").node("n1").obj()
    done.status.phase = "Succeeded"
    assert graceful_deletion_period(done, 5) is None
    assert graceful_deletion_period(make_node("n1").obj(), 5) is None  # not a pod


def test_a_shorter_grace_replaces_the_deadline_and_a_longer_one_never_does() -> None:
    meta = types_pb2.ObjectMeta(name="p")
    assert begin_graceful_deletion(meta, 100.0, 30)
    assert meta.deletion_timestamp.seconds == 130 and meta.deletion_grace_period_seconds == 30
    assert not begin_graceful_deletion(meta, 101.0, 60)
    assert meta.deletion_timestamp.seconds == 130
    assert begin_graceful_deletion(meta, 101.0, 5)
    assert meta.deletion_timestamp.seconds == 106 and meta.deletion_grace_period_seconds == 5


def test_delete_preconditions_and_options_name_what_failed() -> None:
    meta = types_pb2.ObjectMeta(name="p", uid="u1", resource_version="7")
    check_preconditions(meta, uid="u1", resource_version="7")
    check_preconditions(meta, uid=None, resource_version=None)
    with pytest.raises(Conflict, match="UID in precondition: u2, UID in object meta: u1"):
        check_preconditions(meta, uid="u2", resource_version=None)
    with pytest.raises(Conflict, match="ResourceVersion in precondition: 6"):
        check_preconditions(meta, uid=None, resource_version="6")
    validate_grace_period(0)
    with pytest.raises(Invalid, match="gracePeriodSeconds"):
        validate_grace_period(-1)
