"""The pool's per-gating-plugin index gives the same pods, in the same order, as upstream's walk
of the whole pool with each gated pod's plugin asked about the event."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from kemu.scheduling.interface import QueuedPodInfo
from kemu.scheduling.types import PodInfo
from kemu.testing.builders import make_pod
from scheduler.queue.unschedulable_pods import UnschedulablePods

PLUGINS = ("SchedulingGates", "GateA", "GateB")


def qpi(name: str, gate: str = "") -> QueuedPodInfo:
    q = QueuedPodInfo(PodInfo(make_pod(name).obj()), 0.0)
    q.gated, q.gating_plugin = bool(gate), gate
    return q


def walk(pool: UnschedulablePods, interested: frozenset[str]) -> list[QueuedPodInfo]:
    return [q for q in pool.values() if not q.gated or q.gating_plugin in interested]


def test_an_event_no_gate_wants_skips_every_gated_pod() -> None:
    pool = UnschedulablePods()
    for i in range(5):
        pool.add(f"g{i}", qpi(f"g{i}", "SchedulingGates"))
    free = qpi("free")
    pool.add("free", free)
    assert pool.candidates(lambda plugin: False) == [free]
    assert [q.pod.metadata.name for q in pool.candidates(lambda plugin: True)] == [
        "g0", "g1", "g2", "g3", "g4", "free"
    ]  # fmt: skip
    assert (pool.count_gated(), pool.count_ungated(), len(pool)) == (5, 1, 6)


def test_a_pod_whose_gate_is_lifted_in_the_pool_is_reindexed() -> None:
    pool = UnschedulablePods()
    q = qpi("p", "SchedulingGates")
    pool.add("p", q)
    assert pool.candidates(lambda plugin: False) == []
    q.gated, q.gating_plugin = False, ""
    pool.reindex("p", q)
    assert pool.candidates(lambda plugin: False) == [q]
    assert pool.pop("p") is q and len(pool) == 0 and pool.candidates(lambda plugin: True) == []


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_candidates_equal_the_walk_of_the_whole_pool(seed: int) -> None:
    rng = random.Random(seed)
    pool = UnschedulablePods()
    pods = {f"p{i}": qpi(f"p{i}") for i in range(12)}
    for _ in range(60):
        key = rng.choice(sorted(pods))
        q = pods[key]
        op = rng.random()
        if op < 0.4:
            gate = rng.choice(("",) + PLUGINS)
            q.gated, q.gating_plugin = bool(gate), gate
            pool.add(key, q)
        elif op < 0.6:
            pool.pop(key)
        else:  # PreEnqueue ran again while it may be in the pool
            gate = rng.choice(("",) + PLUGINS)
            q.gated, q.gating_plugin = bool(gate), gate
            pool.reindex(key, q)
        interested = frozenset(p for p in PLUGINS if rng.random() < 0.5)
        assert pool.candidates(interested.__contains__) == walk(pool, interested)
        assert pool.count_gated() == sum(1 for x in pool.values() if x.gated)
