"""NodeResourcesBalancedAllocation scores (upstream balanced_allocation_test.go)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import balanced_allocation as ba
from kemu.scheduling.types import NodeInfo
from kemu.testing.builders import make_node, make_pod
from tests.unit.scheduling.plugins.fakes import FakeHandle


def plugin(args: dict[str, Any] | None = None) -> ba.BalancedAllocation:
    return ba.new(args or {}, FakeHandle())


def node(name: str, cpu: str, memory: str, **extra: str) -> NodeInfo:
    return NodeInfo(make_node(name).allocatable(cpu=cpu, memory=memory, **extra).obj())


def add(ni: NodeInfo, *pods: types_pb2.Pod) -> NodeInfo:
    for i, p in enumerate(pods):
        p.metadata.uid = f"{ni.name}-{i}"
        ni.add_pod(p)
    return ni


def scores(p: ba.BalancedAllocation, incoming: types_pb2.Pod, nodes: list[NodeInfo]) -> list[int]:
    state = CycleState()
    assert p.pre_score(state, incoming, nodes).is_success()
    out = []
    for ni in nodes:
        s, status = p.score(state, incoming, ni)
        assert status.is_success()
        out.append(s)
    return out


def cpu_and_memory() -> types_pb2.Pod:
    """3000m cpu and 5000 bytes in two containers."""
    b = make_pod("p").req(cpu="1000m", memory="2000")
    return b.container("c2").req(cpu="2000m", memory="3000").obj()


def test_differently_sized_nodes() -> None:
    # node1: cpu 0.75, memory 0.5 -> std 0.125 -> 87; node2: 0.5 and 0.5 -> 100
    nodes = [node("n1", "4000m", "10000"), node("n2", "6000m", "10000")]
    assert scores(plugin(), cpu_and_memory(), nodes) == [87, 100]


def test_existing_pods_count_at_actual_requests() -> None:
    # Existing 3000m / 0 memory on node1 (actual requests, no non-zero default):
    # cpu (3000+3000)/10000 = 0.6, memory 5000/20000 = 0.25 -> std 0.175 -> 82
    n1 = add(node("n1", "10000m", "20000"), make_pod("e").req(cpu="3000m").obj())
    # Existing 3000m / 5000 on node2: cpu 0.6, memory 0.5 -> std 0.05 -> 95
    n2 = add(node("n2", "10000m", "20000"), make_pod("e").req(cpu="3000m", memory="5000").obj())
    assert scores(plugin(), cpu_and_memory(), [n1, n2]) == [82, 95]


def test_fractions_above_one_are_capped() -> None:
    # cpu (6000+3000)/4000 -> 1, memory 5000/10000 = 0.5 -> std 0.25 -> 75
    n1 = add(node("n1", "4000m", "10000"), make_pod("e").req(cpu="6000m").obj())
    assert scores(plugin(), cpu_and_memory(), [n1]) == [75]


def test_three_resources_use_the_standard_deviation() -> None:
    p = plugin(
        {
            "resources": [
                {"name": "cpu", "weight": 1},
                {"name": "memory", "weight": 1},
                {"name": "ephemeral-storage", "weight": 1},
            ]
        }
    )
    incoming = make_pod("p").req(cpu="2000m", memory="5000", ephemeral_storage="1000").obj()
    # fractions 0.5, 0.5, 0.1: mean 0.3667, std sqrt((2*0.01778 + 0.07111)/3) = 0.18856 -> 81
    assert scores(p, incoming, [node("n", "4000m", "10000", ephemeral_storage="10000")]) == [81]


def test_resource_the_node_lacks_is_left_out() -> None:
    p = plugin(
        {
            "resources": [
                {"name": "cpu", "weight": 1},
                {"name": "memory", "weight": 1},
                {"name": "nvidia.com/gpu", "weight": 1},
            ]
        }
    )
    incoming = make_pod("p").req({"nvidia.com/gpu": "1"}, cpu="3000m", memory="5000").obj()
    # The node has no gpu: only cpu 0.75 and memory 0.5 count -> 87
    assert scores(p, incoming, [node("n", "4000m", "10000")]) == [87]


def test_only_one_resource_scores_full() -> None:
    p = plugin({"resources": [{"name": "cpu", "weight": 1}]})
    assert scores(p, cpu_and_memory(), [node("n", "4000m", "10000")]) == [100]


def test_best_effort_pod_skips_scoring() -> None:
    state = CycleState()
    status = plugin().pre_score(state, make_pod("be").obj(), [node("n", "4000m", "10000")])
    assert status.is_skip()
    # Without PreScore (upstream's fallback), Score says 0 for a best-effort pod.
    s, st = plugin().score(CycleState(), make_pod("be").obj(), node("n", "4000m", "10000"))
    assert (s, st.is_success()) == (0, True)


def test_inlined_cpu_memory_scorer_matches_the_generic_one() -> None:
    rng = random.Random(99)
    p = plugin()
    for _ in range(300):
        ni = node("n", f"{rng.choice([0, 1000, 4000])}m", str(rng.choice([0, 10000, 20000])))
        if rng.random() < 0.7:
            add(ni, make_pod("e").req(cpu=f"{rng.randrange(1, 6000)}m").obj())
        reqs = (rng.randrange(5000), rng.randrange(20000))
        assert p.scorer.score(ni, reqs) == p.scorer.generic_score(ni, reqs), (ni, reqs)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"resources": [{"name": "cpu", "weight": 2}]}, r"resources\[0\]\.weight"),
        ({"resources": [{"name": "cpu"}, {"name": "cpu"}]}, r"resources\[1\]\.name"),
        ({"resources": "cpu"}, "resources"),
        ({"other": 1}, "other"),
    ],
)
def test_invalid_args_name_the_field(args: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        plugin(args)
