"""The dry run's cheaper steps give the same outcome as the plain ones (issue #16 item 3):
NodeInfo.clone_without is clone() then remove_pod of each pod; DefaultPreemption's
select_victim_infos_on_node (the copy made without the lower-priority pods, what a walk shares
computed once) chooses what select_victims_on_node chooses on a plain clone, and leaves the
snapshot's node as it was; pickOneNodeForPreemption decides the same from the victims'
PodInfos as from their pods; cannot_fit_on_node's per-node figures follow the node's changes."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.preemption import (
    CRITERIA,
    ONLY_CANDIDATE,
    NodePick,
    Victims,
    pick_one_node_for_preemption,
)
from kemu.scheduling.types import NodeInfo, PodInfo
from tests.unit.scheduling.preemption_builders import NOW, NOW_NS, names, pod
from tests.unit.scheduling.test_preemption import Sim
from tests.unit.scheduling.test_preemption_shortcuts import _cluster, _cycle


def _node_state(ni: NodeInfo) -> tuple[object, ...]:
    return (
        [pi.uid for pi in ni.pods],
        [pi.uid for pi in ni.pods_with_affinity],
        [pi.uid for pi in ni.pods_with_required_anti_affinity],
        vars_of(ni.requested),
        vars_of(ni.non_zero_requested),
        sorted(ni.used_ports._ports.items()),
    )


def vars_of(r: object) -> tuple[object, ...]:
    return tuple(getattr(r, k) for k in ("milli_cpu", "memory", "ephemeral_storage", "scalar"))


def _random_pod(rng: random.Random, i: int) -> types_pb2.Pod:
    p = pod(f"p{i}", rng.choice([0, 5, 10]), cpu=rng.choice(["100m", "1", "2"]), node="n")
    c = p.spec.containers[0]
    if rng.random() < 0.4:
        c.ports.add(container_port=80, host_port=rng.choice([8080, 8081]), protocol="TCP")
    if rng.random() < 0.3:
        c.resources.requests["example.com/gpu"] = str(rng.randint(1, 2))
    if rng.random() < 0.3:
        term = p.spec.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution.add()
        term.topology_key = "kubernetes.io/hostname"
        term.label_selector.match_labels["app"] = "a"
    if rng.random() < 0.3:
        term = (
            p.spec.affinity.pod_affinity.required_during_scheduling_ignored_during_execution.add()
        )
        term.topology_key = "kubernetes.io/hostname"
        term.label_selector.match_labels["app"] = "b"
    return p


@pytest.mark.parametrize("seed", range(100))
def test_clone_without_is_clone_then_remove_pod(seed: int) -> None:
    rng = random.Random(seed)
    node = NodeInfo()
    for i in range(rng.randint(0, 6)):
        node.add_pod_info(PodInfo(_random_pod(rng, i)))
    before = _node_state(node)
    removed = [pi for pi in node.pods if rng.random() < 0.5]
    rng.shuffle(removed)
    want = node.clone()
    for pi in removed:
        assert want.remove_pod(pi.pod)
    got = node.clone_without(removed)
    assert _node_state(got) == _node_state(want)
    assert _node_state(node) == before  # the original is untouched
    if removed:
        assert got.generation != node.generation


def test_clone_without_a_pod_not_on_the_node_names_it() -> None:
    node = NodeInfo()
    node.add_pod_info(PodInfo(pod("here", 0, node="n")))
    with pytest.raises(KeyError, match="default/elsewhere"):
        node.clone_without([PodInfo(pod("elsewhere", 0, node="m"))])


@pytest.mark.parametrize("seed", range(300))
def test_victim_infos_on_the_snapshot_node_equal_the_plain_removals(seed: int) -> None:
    """Every node of random clusters (PDBs, nominated pods): the same victims in order, PDB
    violations, status code and message; the snapshot's node unchanged."""
    c, p, pdbs = _cluster(seed)
    state, _ = _cycle(c, p)
    if state is None:
        return
    plugin = c.plugin
    for ni in c.snapshot.list():
        before = _node_state(ni)
        with plugin.walk(state, p):
            infos, v1, s1 = plugin.select_victim_infos_on_node(state.clone(), p, ni, pdbs)
        pods, v2, s2 = plugin.select_victims_on_node(state.clone(), p, ni.clone(), pdbs)
        assert names(pi.pod for pi in infos) == names(pods)
        assert (v1, s1.code, s1.message()) == (v2, s2.code, s2.message())
        assert _node_state(ni) == before


def test_pick_one_node_decides_alike_from_pod_infos() -> None:
    rng = random.Random(11)
    for _ in range(200):
        by_node: dict[str, Victims] = {}
        plain: dict[str, Victims] = {}
        for n in range(rng.randint(1, 5)):
            pods = tuple(
                pod(
                    f"v{n}-{k}",
                    rng.choice([0, 1, 2]),
                    started=rng.choice([None, NOW - 100, NOW - 50]),
                )
                for k in range(rng.randint(1, 3))
            )
            violations = rng.choice([0, 0, 1])
            plain[f"n{n}"] = Victims(pods, violations)
            by_node[f"n{n}"] = Victims(pods, violations, tuple(PodInfo(x) for x in pods))
        assert pick_one_node_for_preemption(by_node, NOW_NS) == pick_one_node_for_preemption(
            plain, NOW_NS
        )


def test_cannot_fit_follows_the_nodes_changes() -> None:
    """The per-node figures are kept by the node's generation: a node that changes is
    computed again."""
    c = Sim()
    c.node("n0", cpu="4")
    c.add(pod("high", 20, cpu="2", node="n0"))
    c.add(pod("low", 0, cpu="1", node="n0"))
    p = c.add(pod("p", 10, cpu="3"))
    state, _ = c.cycle(p)
    assert c.plugin.cannot_fit_on_node(state, p, c.node_info("n0"))  # high keeps 2 of 4 cpu
    c._pods.pop("high")
    c.add(pod("low2", 0, cpu="2", node="n0"))  # the same room taken, now by a victim
    state, _ = c.cycle(p)
    assert not c.plugin.cannot_fit_on_node(state, p, c.node_info("n0"))


def _pick_one_step_by_step(nodes_to_victims: dict[str, Victims], now_ns: int) -> NodePick:
    """upstream pickOneNodeForPreemption's steps: each criterion in turn keeps the nodes with
    its best score, until one is left; then the first remaining. The criterion is the one
    after which a single node was left."""
    from kemu.scheduling.preemption import pod_start_time_ns
    from kemu.scheduling.types import pod_priority

    def latest_start(v: Victims) -> int:
        top = max(pod_priority(p) for p in v.pods)
        return min(pod_start_time_ns(p, now_ns) for p in v.pods if pod_priority(p) == top)

    criteria: tuple[Callable[[Victims], int], ...] = (
        lambda v: -v.num_pdb_violations,
        lambda v: -pod_priority(v.pods[0]),
        lambda v: -sum(pod_priority(p) + 2**31 for p in v.pods),
        lambda v: -len(v.pods),
        latest_start,
    )
    candidates = list(nodes_to_victims)
    if len(candidates) == 1:
        return NodePick(candidates[0], ONLY_CANDIDATE)
    for name, score in zip(CRITERIA, criteria, strict=False):
        scores = {n: score(nodes_to_victims[n]) for n in candidates}
        best = max(scores.values())
        candidates = [n for n in candidates if scores[n] == best]
        if len(candidates) == 1:
            return NodePick(candidates[0], name)
    return NodePick(candidates[0], CRITERIA[-1])


@pytest.mark.parametrize("seed", range(20))
def test_pick_one_node_is_upstreams_criteria_in_turn(seed: int) -> None:
    """Many ties on every criterion: the lexicographic comparison picks the node the
    criteria applied one after the other pick."""
    rng = random.Random(seed)
    for _ in range(100):
        by_node: dict[str, Victims] = {}
        for n in range(rng.randint(1, 8)):
            pods = sorted(
                (
                    pod(
                        f"v{n}-{k}",
                        rng.choice([0, 1, 2, -5]),
                        started=rng.choice([None, NOW - 100, NOW - 50]),
                    )
                    for k in range(rng.randint(1, 3))
                ),
                key=lambda p: -p.spec.priority,
            )
            infos = tuple(PodInfo(x) for x in pods) if rng.random() < 0.5 else ()
            by_node[f"n{n}"] = Victims(tuple(pods), rng.choice([0, 0, 1]), infos)
        assert pick_one_node_for_preemption(by_node, NOW_NS) == _pick_one_step_by_step(
            by_node, NOW_NS
        )
