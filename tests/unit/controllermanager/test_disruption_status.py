"""The disruption controller's arithmetic, without a client: pure functions of PDB and pods."""

from __future__ import annotations

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from controllermanager.disruption import (
    DELETION_TIMEOUT,
    DISRUPTION_ALLOWED_CONDITION,
    INSUFFICIENT_PODS_REASON,
    SUFFICIENT_PODS_REASON,
    SYNC_FAILED_REASON,
    compute_counts,
    desired_status,
    fail_safe_status,
)
from kemu.api.v1 import types_pb2
from kemu.machinery.apps import scaled_value
from kemu.testing.builders import make_pdb, make_pod

NOW = 1_700_000_000.0


def ready(name: str) -> types_pb2.Pod:
    return make_pod(name).labels(app="web").condition("Ready").obj()


def not_ready(name: str) -> types_pb2.Pod:
    return make_pod(name).labels(app="web").condition("Ready", "False").obj()


def terminating(name: str) -> types_pb2.Pod:
    pod = ready(name)
    pod.metadata.deletion_timestamp.FromSeconds(int(NOW) - 1)
    return pod


def ts(seconds: float) -> Timestamp:
    t = Timestamp()
    t.FromMicroseconds(int(seconds * 1_000_000))
    return t


def counts(pdb: types_pb2.PodDisruptionBudget, pods: list[types_pb2.Pod]) -> tuple[int, ...]:
    c = compute_counts(pdb, pods, NOW)
    return c.expected_pods, c.desired_healthy, c.current_healthy, c.disruptions_allowed


@pytest.mark.parametrize(
    ("value", "total", "expected"),
    [(3, 10, 3), ("50%", 5, 3), ("50%", 4, 2), ("1%", 10, 1), ("0%", 10, 0), ("100%", 7, 7)],
)
def test_scaled_values_are_integers_or_percentages_rounded_up(
    value: int | str, total: int, expected: int
) -> None:
    v = (
        types_pb2.IntOrString(int_val=value)
        if isinstance(value, int)
        else types_pb2.IntOrString(str_val=value)
    )
    assert scaled_value(v, total, round_up=True) == expected


@pytest.mark.parametrize("text", ["50", "fifty%", "5.5%", "%"])
def test_a_string_that_is_not_a_percentage_is_an_error(text: str) -> None:
    with pytest.raises(ValueError, match="percentage"):
        scaled_value(types_pb2.IntOrString(str_val=text), 10, round_up=True)


def test_min_available_integer() -> None:
    pdb = make_pdb("p").selector(app="web").min_available(2).obj()
    pods = [ready("a"), ready("b"), ready("c"), not_ready("d")]
    assert counts(pdb, pods) == (4, 2, 3, 1)


def test_min_available_percentage_rounds_up() -> None:
    pdb = make_pdb("p").selector(app="web").min_available("50%").obj()
    pods = [ready("a"), ready("b"), ready("c"), not_ready("d"), ready("e")]
    # ceil(2.5) = 3 desired of 5 expected; 4 healthy.
    assert counts(pdb, pods) == (5, 3, 4, 1)


def test_max_unavailable_integer() -> None:
    pdb = make_pdb("p").selector(app="web").max_unavailable(1).obj()
    pods = [ready("a"), ready("b"), ready("c")]
    assert counts(pdb, pods) == (3, 2, 3, 1)
    assert counts(pdb, [ready("a"), ready("b"), not_ready("c")]) == (3, 2, 2, 0)


def test_max_unavailable_percentage_rounds_the_unavailable_count_up() -> None:
    pdb = make_pdb("p").selector(app="web").max_unavailable("30%").obj()
    pods = [ready(f"p{i}") for i in range(5)]
    # ceil(1.5) = 2 may be unavailable: 3 desired.
    assert counts(pdb, pods) == (5, 3, 5, 2)


def test_max_unavailable_larger_than_the_pods_desires_zero() -> None:
    pdb = make_pdb("p").selector(app="web").max_unavailable(5).obj()
    assert counts(pdb, [ready("a"), ready("b")]) == (2, 0, 2, 2)


def test_no_matching_pods_allows_no_disruption() -> None:
    assert counts(make_pdb("p").min_available(0).obj(), []) == (0, 0, 0, 0)
    assert counts(make_pdb("p").max_unavailable(1).obj(), []) == (0, 0, 0, 0)


def test_neither_min_available_nor_max_unavailable_expects_nothing() -> None:
    pdb = make_pdb("p").selector(app="web").obj()
    assert counts(pdb, [ready("a")]) == (0, 0, 1, 0)


def test_not_ready_and_terminating_pods_are_not_healthy() -> None:
    pdb = make_pdb("p").selector(app="web").min_available(1).obj()
    pods = [ready("a"), not_ready("b"), terminating("c"), make_pod("d").obj()]
    assert counts(pdb, pods) == (4, 1, 1, 0)


def test_disrupted_pods_are_not_healthy_until_their_entry_expires() -> None:
    pdb = make_pdb("p").selector(app="web").min_available(1).obj()
    evicted_at = NOW - 30
    pdb.status.disrupted_pods["b"].CopyFrom(ts(evicted_at))
    pdb.status.disrupted_pods["gone"].CopyFrom(ts(evicted_at))  # pod no longer exists
    pdb.status.disrupted_pods["c"].CopyFrom(ts(evicted_at))  # pod is being deleted
    pdb.status.disrupted_pods["old"].CopyFrom(ts(NOW - DELETION_TIMEOUT - 1))  # expired
    pods = [ready("a"), ready("b"), terminating("c"), ready("old")]
    c = compute_counts(pdb, pods, NOW)
    assert sorted(c.disrupted_pods) == ["b"]
    assert c.current_healthy == 2  # a and old; b is disrupted, c terminating
    assert c.disruptions_allowed == 1
    assert c.recheck_at == pytest.approx(evicted_at + DELETION_TIMEOUT)
    later = compute_counts(pdb, pods, evicted_at + DELETION_TIMEOUT)
    assert later.disrupted_pods == {} and later.recheck_at is None
    assert later.current_healthy == 3


def test_desired_status_sets_every_field_and_the_condition() -> None:
    pdb = make_pdb("p").selector(app="web").min_available(1).obj()
    pdb.metadata.generation = 3
    new = desired_status(pdb, compute_counts(pdb, [ready("a"), ready("b")], NOW), NOW)
    assert new is not None
    st = new.status
    assert (st.expected_pods, st.desired_healthy, st.current_healthy) == (2, 1, 2)
    assert st.disruptions_allowed == 1 and st.observed_generation == 3
    (cond,) = st.conditions
    assert (cond.type, cond.status, cond.reason) == (
        DISRUPTION_ALLOWED_CONDITION,
        "True",
        SUFFICIENT_PODS_REASON,
    )
    assert cond.observed_generation == 3
    assert cond.last_transition_time.ToSeconds() == int(NOW)
    # Written back, the same pods need no change.
    assert desired_status(new, compute_counts(new, [ready("a"), ready("b")], NOW + 5), NOW) is None
    # One pod fewer: the condition flips, with a new transition time.
    flipped = desired_status(new, compute_counts(new, [ready("a")], NOW + 5), NOW + 5)
    assert flipped is not None
    (cond,) = flipped.status.conditions
    assert (cond.status, cond.reason) == ("False", INSUFFICIENT_PODS_REASON)
    assert cond.last_transition_time.ToSeconds() == int(NOW) + 5


def test_a_new_generation_is_written_even_when_the_numbers_are_the_same() -> None:
    pdb = make_pdb("p").selector(app="web").min_available(1).obj()
    pdb.metadata.generation = 1
    new = desired_status(pdb, compute_counts(pdb, [ready("a")], NOW), NOW)
    assert new is not None
    new.metadata.generation = 2
    again = desired_status(new, compute_counts(new, [ready("a")], NOW), NOW)
    assert again is not None and again.status.observed_generation == 2


def test_fail_safe_allows_no_disruption_and_is_written_once() -> None:
    pdb = make_pdb("p").selector(app="web").min_available(1).obj()
    pdb.status.disruptions_allowed = 2
    failed = fail_safe_status(pdb, "bad selector", NOW)
    assert failed is not None
    assert failed.status.disruptions_allowed == 0
    (cond,) = failed.status.conditions
    assert (cond.status, cond.reason, cond.message) == ("False", SYNC_FAILED_REASON, "bad selector")
    assert fail_safe_status(failed, "bad selector", NOW + 1) is None
