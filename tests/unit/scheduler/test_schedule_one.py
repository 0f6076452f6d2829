"""The scheduling cycle's pure parts: how many nodes to search, the FailedScheduling message,
host selection; and one whole cycle over the real plugins with an in-memory cache."""

from __future__ import annotations

import random

import pytest

from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGates
from kemu.machinery.resources import SCHEDULER_DEFAULTS
from kemu.scheduling.config import default_config
from kemu.scheduling.interface import CycleState, NodeToStatus
from kemu.scheduling.plugins.registry import in_tree_registry
from kemu.scheduling.runtime import Framework, FrameworkOptions
from kemu.scheduling.select_host import select_host_by_walk
from kemu.scheduling.status import Code, unresolvable, unschedulable
from kemu.testing import make_node, make_pod
from scheduler.cache.cache import Cache
from scheduler.metrics import SchedulerMetrics
from scheduler.schedule_one import (
    CycleSettings,
    FitError,
    NoNodesAvailable,
    Scheduler,
    num_feasible_nodes_to_find,
)


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        (0, 10, 10),  # fewer than 100 nodes: all of them
        (0, 99, 99),
        (0, 100, 100),  # adaptive 50 - 0 = 50% of 100 = 50, but at least 100
        (0, 1000, 420),  # 50 - 1000/125 = 42%
        (0, 5000, 500),  # 50 - 40 = 10%
        (0, 6000, 300),  # 50 - 48 = 2% -> floor 5%
        (100, 5000, 5000),
        (30, 1000, 300),
        (1, 5000, 100),  # never fewer than 100
    ],
)
def test_percentage_of_nodes_to_score(percentage: int, nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def test_fit_error_message_is_upstreams_sorted_histogram() -> None:
    statuses = NodeToStatus()
    statuses.set("a", unschedulable("Insufficient cpu", plugin="NodeResourcesFit"))
    statuses.set("b", unschedulable("Insufficient cpu", "Insufficient memory"))
    statuses.set("c", unresolvable("node(s) didn't match Pod's node affinity/selector"))
    err = FitError(make_pod("p").obj(), 3, statuses)
    assert str(err) == (
        "0/3 nodes are available: 1 Insufficient memory, 1 node(s) didn't match Pod's node "
        "affinity/selector, 2 Insufficient cpu."
    )
    # PostFilter's message gets its own " %s." as upstream, hence the double period that real
    # FailedScheduling events show.
    err.post_filter_msg = (
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )
    assert str(err).endswith(
        ". preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.."
    )


def test_fit_error_counts_nodes_without_a_status_with_the_absent_status() -> None:
    statuses = NodeToStatus(unresolvable("Preemption is not helpful for scheduling"))
    statuses.set("a", unresolvable("No preemption victims found for incoming pod"))
    err = FitError(make_pod("p").obj(), 3, statuses)
    assert str(err) == (
        "0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling."
    )


def test_fit_error_after_a_pre_filter_rejection_names_it_once() -> None:
    statuses = NodeToStatus(unresolvable("node(s) didn't match pod affinity rules"))
    statuses.pre_filter_rejected = True
    err = FitError(make_pod("p").obj(), 5, statuses, pre_filter_msg=statuses.absent.message())
    assert str(err) == "0/5 nodes are available: node(s) didn't match pod affinity rules."


def _scheduler(
    seed: int = 0, nodes: int = 3, **node_capacity: str
) -> tuple[Scheduler, Framework, Cache]:
    clock = FakeClock()
    cache = Cache(clock, counting=SCHEDULER_DEFAULTS)
    for i in range(nodes):
        cache.add_node(
            make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods="110", **node_capacity).obj()
        )
    fwk = Framework(
        default_config().profiles[0],
        in_tree_registry(),
        options=FrameworkOptions(clock=clock, rng=random.Random(seed)),
    )
    sched = Scheduler(
        client=None,  # type: ignore[arg-type]
        cache=cache,
        queue=None,  # type: ignore[arg-type]
        profiles={"default-scheduler": fwk},
        clock=clock,
        settings=CycleSettings.of(FeatureGates.default()),
        metrics=SchedulerMetrics(None),
        pod_lister=None,  # type: ignore[arg-type]
    )
    return sched, fwk, cache


def _pod(name: str, cpu: str = "1") -> types_pb2.Pod:
    pod = make_pod(name).req(cpu=cpu).obj()
    pod.metadata.uid = name
    return pod


def test_host_selection_breaks_ties_at_random_and_is_seedable() -> None:
    # (the walk Scheduler.select_host runs on per-node scores, with the profile's rng)
    names = ["a", "b", "c"]
    picks = {names[select_host_by_walk([5, 5, 3], _scheduler(seed)[1].rng)] for seed in range(40)}
    assert picks == {"a", "b"}
    first = [select_host_by_walk([1, 1, 1], _scheduler(7)[1].rng) for _ in range(3)]
    assert len(set(first)) == 1


def test_a_cycle_picks_the_least_allocated_node() -> None:
    sched, fwk, cache = _scheduler()
    busy = make_pod("busy").req(cpu="3").node("n0").obj()
    busy.metadata.uid = "busy"
    cache.add_pod(busy)
    result = sched.schedule_pod(fwk, CycleState(), _pod("p"))
    assert result.suggested_host in {"n1", "n2"}
    assert result.feasible_nodes == 3


def test_a_cycle_that_fits_nowhere_raises_fit_error_with_every_node() -> None:
    sched, fwk, _ = _scheduler()
    with pytest.raises(FitError) as err:
        sched.schedule_pod(fwk, CycleState(), _pod("huge", cpu="8"))
    assert str(err.value) == "0/3 nodes are available: 3 Insufficient cpu."
    assert "NodeResourcesFit" in err.value.unschedulable_plugins | {
        s.plugin for _, s in err.value.statuses.items()
    }


def test_no_nodes_is_unschedulable_not_an_error() -> None:
    sched, fwk, _ = _scheduler(nodes=0)
    with pytest.raises(NoNodesAvailable, match="no nodes available to schedule pods") as err:
        sched.schedule_pod(fwk, CycleState(), _pod("p"))
    # upstream ErrNoNodesAvailable: UnschedulableAndUnresolvable, so reason Unschedulable and
    # result=unschedulable, with no rejecting plugin (retried after backoff).
    assert err.value.status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert err.value.status.is_rejected() and not err.value.status.plugin


def test_the_nominated_node_is_tried_first_and_taken_without_scoring() -> None:
    sched, fwk, cache = _scheduler()
    # n2 is the busiest node: scoring would never pick it, the nomination does.
    busy = make_pod("busy").req(cpu="2").node("n2").obj()
    busy.metadata.uid = "busy"
    cache.add_pod(busy)
    pod = _pod("p")
    pod.status.nominated_node_name = "n2"
    result = sched.schedule_pod(fwk, CycleState(), pod)
    assert (result.suggested_host, result.evaluated_nodes) == ("n2", 1)


def test_a_nominated_node_that_does_not_fit_falls_back_to_the_full_search() -> None:
    sched, fwk, cache = _scheduler()
    busy = make_pod("busy").req(cpu="4").node("n2").obj()
    busy.metadata.uid = "busy"
    cache.add_pod(busy)
    pod = _pod("p")
    pod.status.nominated_node_name = "n2"
    assert sched.schedule_pod(fwk, CycleState(), pod).suggested_host in {"n0", "n1"}


def test_the_search_stops_at_the_feasible_count_and_rotates() -> None:
    sched, fwk, _ = _scheduler(nodes=300)
    seen = set()
    for i in range(3):
        result = sched.schedule_pod(fwk, CycleState(), _pod(f"p{i}"))
        assert result.feasible_nodes == 144  # 300 nodes: adaptive 50 - 300/125 = 48% = 144
        seen.add(sched.next_start_node_index)
    assert len(seen) == 3  # the start index moved each cycle
