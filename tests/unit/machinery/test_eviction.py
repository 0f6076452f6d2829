"""kemu.machinery.eviction: the pods/eviction decisions (upstream eviction.go)."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Forbidden, InternalError, TooManyRequests
from kemu.machinery.eviction import (
    add_disruption_target,
    can_ignore_pdb,
    check_and_decrement,
    only_pdb,
    should_enforce_resource_version,
    unhealthy_pod_may_go,
)
from kemu.testing import make_pdb, make_pod

NOW = 1000.0


def _pdb(
    *, allowed: int, healthy: int = 2, desired: int = 2, policy: str = ""
) -> types_pb2.PodDisruptionBudget:
    pdb = make_pdb("b").selector(app="x").min_available(desired).obj()
    pdb.metadata.namespace, pdb.metadata.generation = "default", 1
    pdb.status.observed_generation = 1
    pdb.status.disruptions_allowed = allowed
    pdb.status.current_healthy, pdb.status.desired_healthy = healthy, desired
    pdb.spec.unhealthy_pod_eviction_policy = policy
    return pdb


def _pod(phase: str = "Running", *, ready: bool = True) -> types_pb2.Pod:
    pod = make_pod("p").labels(app="x").node("n1").obj()
    pod.metadata.namespace = "default"
    pod.status.phase = phase
    pod.status.conditions.add(type="Ready", status="True" if ready else "False")
    return pod


def test_pending_ended_or_deleting_pods_skip_budgets() -> None:
    assert can_ignore_pdb(_pod("Pending")) and can_ignore_pdb(_pod("Failed"))
    assert not can_ignore_pdb(_pod())
    deleting = _pod()
    deleting.metadata.deletion_timestamp.FromSeconds(1)
    assert can_ignore_pdb(deleting) and not should_enforce_resource_version(deleting)
    assert should_enforce_resource_version(_pod("Pending"))


def test_only_one_pdb_may_match_and_an_empty_selector_matches_nothing() -> None:
    pod = _pod()
    empty = _pdb(allowed=1)
    empty.spec.selector.Clear()
    assert only_pdb(pod, [empty]) is None
    assert only_pdb(pod, [_pdb(allowed=1)]) is not None
    with pytest.raises(InternalError, match="more than one PodDisruptionBudget"):
        only_pdb(pod, [_pdb(allowed=1), _pdb(allowed=2)])


def test_unready_pods_go_by_the_unhealthy_pod_eviction_policy() -> None:
    unready = _pod(ready=False)
    assert not unhealthy_pod_may_go(_pod(), _pdb(allowed=0), honour_policy=True)
    assert unhealthy_pod_may_go(unready, _pdb(allowed=0, healthy=2, desired=2), honour_policy=True)
    assert not unhealthy_pod_may_go(unready, _pdb(allowed=0, healthy=1), honour_policy=True)
    always = _pdb(allowed=0, healthy=0, policy="AlwaysAllow")
    assert unhealthy_pod_may_go(unready, always, honour_policy=True)
    assert not unhealthy_pod_may_go(unready, always, honour_policy=False)  # before 1.27


def test_check_and_decrement_takes_one_disruption_or_refuses() -> None:
    pdb = _pdb(allowed=1)
    check_and_decrement(pdb, "p", NOW, dry_run=False)
    assert pdb.status.disruptions_allowed == 0 and "p" in pdb.status.disrupted_pods
    (cond,) = pdb.status.conditions
    assert (cond.type, cond.status, cond.reason) == (
        "DisruptionAllowed",
        "False",
        "InsufficientPods",
    )
    with pytest.raises(TooManyRequests) as e:
        check_and_decrement(pdb, "q", NOW, dry_run=False)
    assert e.value.message == "Cannot evict pod as it would violate the pod's disruption budget."
    assert (
        e.value.causes[0].message
        == "The disruption budget b needs 2 healthy pods and has 2 currently"
    )
    stale = _pdb(allowed=1)
    stale.metadata.generation = 2
    with pytest.raises(TooManyRequests):
        check_and_decrement(stale, "p", NOW, dry_run=False)
    with pytest.raises(Forbidden, match="negative"):
        check_and_decrement(_pdb(allowed=-1), "p", NOW, dry_run=False)
    dry = _pdb(allowed=2)
    check_and_decrement(dry, "p", NOW, dry_run=True)
    assert not dry.status.disrupted_pods


def test_the_disruption_target_condition() -> None:
    pod = _pod()
    add_disruption_target(pod, NOW)
    add_disruption_target(pod, NOW + 5)
    (c,) = [c for c in pod.status.conditions if c.type == "DisruptionTarget"]
    assert (c.status, c.reason, c.message) == (
        "True",
        "EvictionByEvictionAPI",
        "Eviction API: evicting",
    )
    assert c.last_transition_time.seconds == NOW
