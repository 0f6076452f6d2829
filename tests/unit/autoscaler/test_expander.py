"""Expanders (least-waste, most-pods, priority, random), the bin-packing estimate and the
exponential back-off."""

from __future__ import annotations

import random

import pytest

from autoscaler.backoff import Backoff
from autoscaler.estimator import estimate
from autoscaler.expander import Expander, Option, parse_priorities
from autoscaler.templates import TemplateNodeInfo
from kemu.api.v1 import types_pb2
from kemu.scheduling.plugins.registry import in_tree_registry
from kemu.scheduling.profile import default_profile
from kemu.scheduling.runtime import Framework
from kemu.scheduling.simulator import ClusterSnapshot, PredicateChecker
from kemu.scheduling.types import NodeInfo, Resource
from kemu.testing.builders import make_pod
from tests.unit.autoscaler.fakes import template


def option(group: str, cpu: str, nodes: int, pods: int, req_cpu: int) -> Option:
    return Option(
        group,
        nodes,
        [types_pb2.Pod() for _ in range(pods)],
        NodeInfo(template(group, cpu=cpu, memory="4Gi")),
        Resource.from_amounts({"cpu": req_cpu, "memory": 0}),
    )


def test_least_waste_picks_the_group_that_leaves_least_unused() -> None:
    small, big = option("small", "2", 1, 1, 1500), option("big", "8", 1, 1, 1500)
    assert Expander("least-waste").best_option([big, small]) is small


def test_most_pods_picks_the_group_that_helps_most_pods() -> None:
    one, three = option("one", "2", 1, 1, 1000), option("three", "8", 1, 3, 1000)
    assert Expander("most-pods").best_option([one, three]) is three


def test_priority_uses_the_configmap_and_falls_back_to_every_option() -> None:
    a, b = option("pool-a", "2", 1, 1, 1000), option("pool-b", "2", 1, 1, 1000)
    config = "10:\n- pool-a\n50:\n- pool-b.*\n"
    assert Expander("priority", priority_config=lambda: config).best_option([a, b]) is b
    nothing = Expander("priority", rng=random.Random(0), priority_config=lambda: None)
    assert nothing.best_option([a, b]) in (a, b)
    with pytest.raises(ValueError, match="priorities: 'x' is not an integer"):
        parse_priorities("x: [a]")


def test_random_and_unknown_expanders() -> None:
    a, b = option("a", "2", 1, 1, 1000), option("b", "2", 1, 1, 1000)
    picks = {Expander("random", rng=random.Random(s)).best_option([a, b]) is a for s in range(20)}
    assert picks == {True, False}
    assert Expander("random").best_option([]) is None
    with pytest.raises(ValueError, match="unknown expander 'cheapest'"):
        Expander("cheapest")


def test_binpacking_estimate_counts_nodes_up_to_the_limit() -> None:
    registry = in_tree_registry()
    checker = PredicateChecker(Framework(default_profile(registry), registry))
    snap = ClusterSnapshot.from_objects([], [])
    tmpl = TemplateNodeInfo(template("g", cpu="2"))
    pods = [
        make_pod(f"p{i}").uid(f"u{i}").req(cpu=c).obj()
        for i, c in enumerate(["1500m", "500m", "1", "1", "1500m"])
    ]
    # Largest first: 1500+500 | 1500 | 1+1 -> 3 nodes.
    est = estimate(checker, snap, tmpl, pods, max_nodes=10)
    assert est.node_count == 3
    assert len(est.pods) == 5
    capped = estimate(checker, snap, tmpl, pods, max_nodes=2)
    assert capped.node_count == 2
    # 1500m, 1500m open the two nodes; the 1-cpu pods fit neither; 500m goes beside a 1500m.
    assert sorted(p.metadata.name for p in capped.pods) == ["p0", "p1", "p4"]
    # The estimate never touches the snapshot it was given.
    assert snap.node_names() == []


def test_backoff_doubles_up_to_the_maximum_and_resets() -> None:
    b = Backoff(initial=300, maximum=1000, reset_timeout=3600)
    assert b.backoff("g", "timeout", 0) == 300
    assert b.backed_off("g", 299) == "timeout"
    assert b.backed_off("g", 300) is None
    assert b.backoff("g", "timeout", 400) == 400 + 600
    assert b.backoff("g", "timeout", 1100) == 1100 + 1000
    # A failure long after the last one starts over.
    assert b.backoff("g", "timeout", 1100 + 3601) == 1100 + 3601 + 300
    b.remove("g")
    assert b.backed_off("g", 1100 + 3602) is None
