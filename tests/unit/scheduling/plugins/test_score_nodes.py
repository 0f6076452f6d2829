"""score_nodes (the batch form of Score) gives exactly what score gives node by node."""

from __future__ import annotations

import random

import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import balanced_allocation, node_resources_fit, taint_toleration
from kemu.scheduling.types import NodeInfo
from kemu.testing import make_node, make_pod

from .fakes import FakeHandle, node_info

FACTORIES = {
    "NodeResourcesFit": node_resources_fit.new,
    "NodeResourcesBalancedAllocation": balanced_allocation.new,
    "TaintToleration": taint_toleration.new,
}


def _nodes(rng: random.Random) -> list[NodeInfo]:
    out = []
    for i in range(60):
        b = make_node(f"n{i}").capacity(
            cpu=str(rng.randint(1, 16)), memory=f"{rng.randint(1, 64)}Gi", pods="110"
        )
        for _ in range(rng.randint(0, 2)):
            b = b.taint(rng.choice(["a", "b"]), "v", rng.choice(["PreferNoSchedule", "NoSchedule"]))
        pods = [
            make_pod(f"p{i}-{j}")
            .req(cpu=f"{rng.randint(0, 2000)}m", memory=f"{rng.randint(0, 4)}Gi")
            .obj()
            for j in range(rng.randint(0, 4))
        ]
        out.append(node_info(b.obj(), *pods))
    return out


@pytest.mark.parametrize("plugin_name", sorted(FACTORIES))
@pytest.mark.parametrize("seed", range(5))
def test_batch_scores_equal_per_node_scores(plugin_name: str, seed: int) -> None:
    rng = random.Random(seed)
    nodes = _nodes(rng)
    pod: types_pb2.Pod = (
        make_pod("incoming")
        .req(cpu=f"{rng.randint(0, 3000)}m", memory=f"{rng.randint(0, 8)}Gi")
        .toleration("a", "v", "PreferNoSchedule")
        .obj()
    )
    plugin = FACTORIES[plugin_name]({}, FakeHandle(nodes=nodes))
    state = CycleState()
    pre = plugin.pre_score(state, pod, nodes)
    if pre.is_skip():
        pytest.skip("the plugin skips this pod")
    one_by_one = [plugin.score(state, pod, n)[0] for n in nodes]  # type: ignore[attr-defined]
    batch, status = plugin.score_nodes(state, pod, nodes)  # type: ignore[attr-defined]
    assert status.is_success()
    assert batch == one_by_one
