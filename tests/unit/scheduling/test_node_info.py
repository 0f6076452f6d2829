"""NodeInfo's pods: upstream's order (a removed pod's place taken by the last pod, NodeInfo.
RemovePod in pkg/scheduler/framework/types.go) kept by the uid index, through adds, removals
and clones."""

from __future__ import annotations

import random

import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.types import NodeInfo
from kemu.testing.builders import make_node, make_pod


def pod(name: str, cpu: str = "100m") -> types_pb2.Pod:
    return make_pod(name).uid(f"uid-{name}").req(cpu=cpu).node("n").obj()


def names(ni: NodeInfo) -> list[str]:
    return [pi.pod.metadata.name for pi in ni.pods]


def test_a_removed_pod_s_place_is_taken_by_the_last_pod() -> None:
    ni = NodeInfo(make_node("n").obj())
    for i in range(5):
        ni.add_pod(pod(f"p{i}"))
    assert ni.remove_pod(pod("p1"))
    assert names(ni) == ["p0", "p4", "p2", "p3"]
    assert ni.remove_pod(pod("p3"))  # the last one: nothing moves
    assert names(ni) == ["p0", "p4", "p2"]
    ni.add_pod(pod("p5"))
    assert ni.remove_pod(pod("p0"))  # the pod added after the removals moves
    assert names(ni) == ["p5", "p4", "p2"]
    assert not ni.remove_pod(pod("p0"))
    assert not ni.remove_pod(pod("nowhere"))
    assert ni.requested.milli_cpu == 300


@pytest.mark.parametrize("seed", range(50))
def test_adds_removals_and_clones_keep_upstream_s_order(seed: int) -> None:
    """Against a plain list with upstream's removal; a clone's removals leave the original
    (and its index) as they were."""
    rng = random.Random(seed)
    ni = NodeInfo(make_node("n").obj())
    model: list[str] = []
    made = 0
    for _ in range(200):
        op = rng.random()
        if op < 0.5 or not model:
            name = f"p{made}"
            made += 1
            ni.add_pod(pod(name))
            model.append(name)
        elif op < 0.85:
            name = rng.choice(model) if rng.random() < 0.9 else "absent"
            removed = ni.remove_pod(pod(name))
            assert removed == (name in model)
            if removed:
                i = model.index(name)
                model[i] = model[-1]
                model.pop()
        else:
            clone = ni.clone()
            for name in rng.sample(model, k=min(len(model), 3)):
                assert clone.remove_pod(pod(name))
            assert len(clone.pods) == max(0, len(model) - 3)
        assert names(ni) == model, f"seed={seed}"
        assert ni.requested.milli_cpu == 100 * len(model)
