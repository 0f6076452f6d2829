"""The dry run's resource shortcuts (DefaultPreemption(resource_shortcuts=): nodes ruled out by
NodeResourcesFit's arithmetic are not dry-run, and a reprieve that the arithmetic rejects skips
its AddPod/Filter/RemovePod) give upstream's outcome exactly: on random clusters, the same
Evaluation (node, victims in order, PDB violations, status and message) as the steps upstream
takes, and the same statuses of every node when there is no candidate."""

from __future__ import annotations

import random

import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.interface import CycleState, NodeToStatus
from kemu.scheduling.plugins.default_preemption import DefaultPreemption
from kemu.scheduling.preemption import Evaluation
from kemu.scheduling.types import NodeInfo, PodInfo
from kemu.testing.builders import make_node
from tests.unit.scheduling.preemption_builders import names, pdb, pod
from tests.unit.scheduling.test_preemption import Sim


def _plugin(c: Sim, shortcuts: bool) -> DefaultPreemption:
    """The profile's DefaultPreemption (the shortcuts on, as the scheduler has them), or one
    built the same way over the same framework with them off."""
    if shortcuts:
        return c.plugin
    return DefaultPreemption(c.fwk, rng=random.Random(), resource_shortcuts=False)


def _cluster(seed: int) -> tuple[Sim, types_pb2.Pod, list[types_pb2.PodDisruptionBudget]]:
    rng = random.Random(seed)
    c = Sim()
    n_nodes = rng.randint(1, 8)
    for i in range(n_nodes):
        c.node(f"n{i}", cpu=str(rng.choice([2, 3, 4, 6])), pods=str(rng.choice([3, 4, 32])))
    k = 0
    for i in range(n_nodes):
        for _ in range(rng.randint(0, 5)):
            k += 1
            started = 1_699_990_000 + rng.randint(0, 5000) if rng.random() < 0.8 else None
            c.add(
                pod(
                    f"p{k}",
                    rng.choice([0, 1, 5, 10, 20]),
                    cpu=rng.choice(["100m", "500m", "900m", "1", "1500m"]),
                    node=f"n{i}",
                    started=started,
                    labels={"app": rng.choice(["a", "b"])},
                )
            )
    # Pods nominated to some nodes, of the preemptor's priority or not.
    for j in range(rng.randint(0, 4)):
        nominated = pod(f"nom{j}", rng.choice([5, 10, 20]), cpu=rng.choice(["500m", "1", "2"]))
        nominated.status.nominated_node_name = f"n{rng.randrange(n_nodes)}"
        c.nominate(nominated)
    preemptor = c.add(pod("preemptor", 10, cpu=rng.choice(["1", "2", "3", "5"])))
    pdbs = [pdb("guard", rng.randint(0, 2), app="a")] if rng.random() < 0.5 else []
    return c, preemptor, pdbs


def _evaluate(
    c: Sim, p: types_pb2.Pod, pdbs: list[types_pb2.PodDisruptionBudget], shortcuts: bool
) -> tuple[Evaluation, NodeToStatus] | None:
    state, statuses = _cycle(c, p)
    if state is None:
        return None
    plugin = _plugin(c, shortcuts)
    plugin._rng.seed(7)  # the same random offset both ways
    return plugin.evaluator.evaluate(state, p, statuses, pdbs), statuses


def _cycle(c: Sim, p: types_pb2.Pod) -> tuple[CycleState | None, NodeToStatus]:
    """Sim.cycle, or (None, ...) when the pod fits somewhere (nothing to preempt for)."""
    c.refresh()
    state = CycleState()
    statuses = NodeToStatus()
    nodes = c.snapshot.list()
    _, status, _ = c.fwk.run_pre_filter_plugins(state, p, nodes)
    assert status.is_success()
    for ni in nodes:
        status = c.fwk.run_filter_plugins_with_nominated_pods(state, p, ni)
        if status.is_success():
            return None, statuses
        statuses.set(ni.name, status)
    return state, statuses


def _outcome(e: Evaluation) -> tuple[object, ...]:
    cand = e.candidate
    return (
        e.result,
        e.status.code,
        e.status.message(),
        None
        if cand is None
        else (cand.name, names(cand.victims.pods), cand.victims.num_pdb_violations),
    )


@pytest.mark.parametrize("seed", range(300))
def test_shortcuts_give_upstreams_evaluation(seed: int) -> None:
    c, p, pdbs = _cluster(seed)
    with_shortcuts = _evaluate(c, p, pdbs, True)
    without = _evaluate(c, p, pdbs, False)
    if with_shortcuts is None or without is None:
        assert with_shortcuts is None and without is None
        return
    assert _outcome(with_shortcuts[0]) == _outcome(without[0])


def test_a_node_whose_nominated_pod_leaves_no_room_is_ruled_out_without_a_dry_run() -> None:
    c = Sim()
    c.node("n0", cpu="4")
    c.add(pod("low", 0, cpu="1", node="n0"))
    nominated = pod("nom", 10, cpu="3")
    nominated.status.nominated_node_name = "n0"
    c.nominate(nominated)
    p = c.add(pod("p", 10, cpu="3"))
    state, _ = c.cycle(p)
    node = c.node_info("n0")
    assert c.plugin.cannot_fit_on_node(state, p, node)
    assert not _plugin(c, False).cannot_fit_on_node(state, p, node)
    # Without the nominated pod (or with a lower-priority one) the node could be a candidate.
    c.nominator.delete_nominated_pod_if_exists(nominated)
    assert not c.plugin.cannot_fit_on_node(state, p, node)
    lower = pod("lower", 5, cpu="3")
    lower.status.nominated_node_name = "n0"
    c.nominator.add_nominated_pod(PodInfo(lower), None)
    assert not c.plugin.cannot_fit_on_node(state, p, node)


def test_no_candidate_reports_every_nodes_status_as_upstream() -> None:
    c = Sim()
    for i in range(3):
        c.node(f"n{i}", cpu="3")
        c.add(pod(f"low{i}", 0, cpu="1", node=f"n{i}"))
        c.add(pod(f"high{i}", 20, cpu="1", node=f"n{i}"))
    p = c.add(pod("p", 10, cpu="3"))  # fits nowhere even with every victim gone
    state, statuses = c.cycle(p)
    e = c.plugin.evaluator.evaluate(state, p, statuses, [])
    assert e.candidate is None
    assert "0/3 nodes are available: 3 Insufficient cpu." in e.status.message()


@pytest.mark.parametrize("seed", range(50))
def test_fit_filter_plain_status_is_fits_requests(seed: int) -> None:
    """NodeResourcesFit's Filter on a failing node (the whole failed pass of a preemptor) gives
    the Status fits_request's list makes: the same code and reasons in the same order."""
    from kemu.scheduling.plugins import node_resources_fit as fit
    from kemu.scheduling.types import NodeInfo
    from kemu.testing.builders import make_node

    rng = random.Random(seed)
    node = NodeInfo(
        make_node("n")
        .capacity(
            cpu=rng.choice(["1", "2", "4"]),
            memory=rng.choice(["1Gi", "4Gi"]),
            pods=rng.choice(["1", "2", "8"]),
            **{"ephemeral-storage": rng.choice(["1Gi", "10Gi"])},
        )
        .obj()
    )
    for i in range(rng.randint(0, 3)):
        node.add_pod(pod(f"p{i}", 0, cpu=rng.choice(["500m", "1", "2"]), node="n"))
    p = pod("p", 0, cpu=rng.choice(["0", "100m", "1", "3", "5"]))
    state = CycleState()
    plugin = fit.Fit()
    plugin.pre_filter(state, p, [node])
    s = state.read(fit.PRE_FILTER_STATE_KEY)
    assert isinstance(s, fit.PreFilterState)
    got = plugin.filter(state, p, node)
    insufficient = fit.fits_request(s, node)
    if not insufficient:
        assert got.is_success()
        return
    want = fit._status_of(insufficient)
    assert (got.code, got.reasons) == (want.code, want.reasons)


def _mixed_cluster(seed: int) -> tuple[Sim, types_pb2.Pod, list[types_pb2.PodDisruptionBudget]]:
    """_cluster with the node-level plugins in play (taints, unschedulable nodes, a node
    selector, tolerated or not) and, in some clusters, pods that bring a pod-reading plugin
    into the cycle (host ports, required anti-affinity): then the victims are found by the
    plain steps, not by NodeResourcesFit's arithmetic."""
    rng = random.Random(10_000 + seed)
    c, preemptor, pdbs = _cluster(seed)
    for name, node in list(c._nodes.items()):
        b = make_node(name).capacity(
            cpu=node.status.capacity["cpu"], memory="64Gi", pods=node.status.capacity["pods"]
        )
        b = b.label("zone", rng.choice(["a", "b"]))
        if rng.random() < 0.2:
            b = b.taint("dedicated", "x")
        if rng.random() < 0.1:
            b = b.unschedulable()
        c._nodes[name] = b.obj()
    if rng.random() < 0.5:
        preemptor.spec.tolerations.add(key="dedicated", operator="Exists")
    if rng.random() < 0.3:
        preemptor.spec.node_selector["zone"] = "a"
    if rng.random() < 0.3:
        victim = rng.choice([p for p in c._pods.values() if p.spec.node_name] or [preemptor])
        if victim is not preemptor:
            if rng.random() < 0.5:
                port = victim.spec.containers[0].ports.add()
                port.container_port, port.host_port, port.protocol = 80, 8080, "TCP"
                port = preemptor.spec.containers[0].ports.add()
                port.container_port, port.host_port, port.protocol = 80, 8080, "TCP"
            else:
                term = (
                    victim.spec.affinity.pod_anti_affinity
                ).required_during_scheduling_ignored_during_execution.add()
                term.topology_key = "kubernetes.io/hostname"
                term.label_selector.match_labels["app"] = "guarded"
                preemptor.metadata.labels["app"] = "guarded"
    c._pods[preemptor.metadata.name] = preemptor
    return c, preemptor, pdbs


@pytest.mark.parametrize("seed", range(200))
def test_arithmetic_victims_give_upstreams_evaluation_with_node_level_plugins(seed: int) -> None:
    c, p, pdbs = _mixed_cluster(seed)
    with_shortcuts = _evaluate(c, p, pdbs, True)
    without = _evaluate(c, p, pdbs, False)
    if with_shortcuts is None or without is None:
        assert with_shortcuts is None and without is None
        return
    assert _outcome(with_shortcuts[0]) == _outcome(without[0])


def _clones_in_dry_run(c: Sim, p: types_pb2.Pod, monkeypatch: pytest.MonkeyPatch) -> int:
    clones = 0
    plain = NodeInfo.clone_without

    def counted(self: NodeInfo, pods: list[PodInfo]) -> NodeInfo:
        nonlocal clones
        clones += 1
        return plain(self, pods)

    monkeypatch.setattr(NodeInfo, "clone_without", counted)
    state, statuses = c.cycle(p)
    e = c.plugin.evaluator.evaluate(state, p, statuses, [])
    assert e.candidate is not None and names(e.candidate.victims.pods) == ["low1"]
    return clones


def test_victims_by_arithmetic_when_only_node_level_plugins_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NodeUnschedulable, TaintToleration and NodeResourcesFit: no copy of a node is made,
    and the cycle's state is not cloned."""
    c = Sim()
    c.node("n0", cpu="2")
    c.add(pod("low0", 0, cpu="1", node="n0"))
    c.add(pod("low1", 0, cpu="500m", node="n0"))
    p = c.add(pod("p", 10, cpu="1"))
    state_clones = 0
    plain_clone = CycleState.clone

    def counted(self: CycleState) -> CycleState:
        nonlocal state_clones
        state_clones += 1
        return plain_clone(self)

    monkeypatch.setattr(CycleState, "clone", counted)
    assert _clones_in_dry_run(c, p, monkeypatch) == 0
    assert state_clones == 0


def test_victims_by_the_steps_when_a_pod_reading_plugin_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pod on the node whose required anti-affinity selects the preemptor brings
    InterPodAffinity (and its PreFilter extensions) into the cycle: the node is copied as upstream's steps do."""
    c = Sim()
    c.node("n0", cpu="2")
    c.add(pod("low0", 0, cpu="1", node="n0"))
    guarded = pod("low1", 0, cpu="500m", node="n0")
    term = guarded.spec.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution.add()
    term.topology_key = "kubernetes.io/hostname"
    term.label_selector.match_labels["app"] = "guarded"
    c.add(guarded)
    p = c.add(pod("p", 10, cpu="1", labels={"app": "guarded"}))
    assert _clones_in_dry_run(c, p, monkeypatch) == 1


@pytest.mark.parametrize("seed", range(60))
def test_preemptors_one_after_another_decide_as_upstreams_steps(seed: int) -> None:
    """What the dry run keeps per node from one preemptor to the next (the lower-priority
    pods, their order, the victims per request and nominated pods) gives each of a series of
    preemptors over the same snapshot the Evaluation of upstream's steps, while they are
    nominated one after the other."""
    rng = random.Random(20_000 + seed)
    c, first, pdbs = (_mixed_cluster if rng.random() < 0.5 else _cluster)(seed)
    c._pods.pop(first.metadata.name)
    for v in c._pods.values():  # most started: their order is kept from one walk to the next
        if not v.status.HasField("start_time") and rng.random() < 0.7:
            v.status.start_time.FromSeconds(1_699_990_000 + rng.randint(0, 5000))
    c.refresh()
    for i in range(12):
        priority = 10 if i % 4 else rng.choice([5, 20])
        p = pod(f"pre{i}", priority, cpu=rng.choice(["2", "3"]))
        p.spec.tolerations.extend(first.spec.tolerations)
        p.spec.node_selector.update(first.spec.node_selector)
        state, statuses = _cycle_on_snapshot(c, p)
        if state is None:
            continue
        evaluations = []
        for shortcuts in (True, False):
            plugin = _plugin(c, shortcuts)
            plugin._rng.seed(7)
            evaluations.append(plugin.evaluator.evaluate(state, p, statuses, pdbs))
        assert _outcome(evaluations[0]) == _outcome(evaluations[1])
        cand = evaluations[0].candidate
        if cand is not None and rng.random() < 0.3:
            p.status.nominated_node_name = cand.name
            c.nominate(p)


def _cycle_on_snapshot(c: Sim, p: types_pb2.Pod) -> tuple[CycleState | None, NodeToStatus]:
    """_cycle over the Sim's current snapshot (not rebuilt: its nodes keep their
    generations, as a scheduler's snapshot does from one cycle to the next)."""
    state, statuses = CycleState(), NodeToStatus()
    nodes = c.snapshot.list()
    _, status, _ = c.fwk.run_pre_filter_plugins(state, p, nodes)
    assert status.is_success()
    for ni in nodes:
        status = c.fwk.run_filter_plugins_with_nominated_pods(state, p, ni)
        if status.is_success():
            return None, statuses
        statuses.set(ni.name, status)
    return state, statuses


def test_victims_kept_for_a_node_follow_the_pods_nominated_there() -> None:
    """The victims kept per node are kept per nominated pods' sums: a pod nominated to the
    node after the first preemptor leaves less room to the next one, which then has one
    victim more."""
    c = Sim()
    c.node("n0", cpu="4")
    for k, name in enumerate("abcd"):
        c.add(pod(name, 0, cpu="1", node="n0", started=1_699_990_000 + k))
    c.refresh()
    chosen = []
    for name in ("p1", "p2"):
        p = pod(name, 10, cpu="2")
        state, statuses = _cycle_on_snapshot(c, p)
        assert state is not None
        e = c.plugin.evaluator.evaluate(state, p, statuses, [])
        assert e.candidate is not None
        chosen.append(names(e.candidate.victims.pods))
        nominated = pod("nom", 10, cpu="1")
        nominated.status.nominated_node_name = "n0"
        c.nominate(nominated)
    assert chosen == [["c", "d"], ["b", "c", "d"]]
    assert c.plugin._kept["n0"].victims  # both answers came from the arithmetic


def test_the_same_kept_victims_give_the_same_candidate() -> None:
    """A second preemptor finding the node's kept victims gets the Candidate made for the
    first (immutable, equal); a different answer makes a new one."""
    c = Sim()
    c.node("n0", cpu="4")
    for k, name in enumerate("abcd"):
        c.add(pod(name, 0, cpu="1", node="n0", started=1_699_990_000 + k))
    c.refresh()
    found = []
    for name, cpu in (("p1", "2"), ("p2", "2"), ("p3", "3")):
        p = pod(name, 10, cpu=cpu)
        state, statuses = _cycle_on_snapshot(c, p)
        assert state is not None
        e = c.plugin.evaluator.evaluate(state, p, statuses, [])
        assert e.candidate is not None
        found.append(e.candidate)
    assert found[1] is found[0]
    assert names(found[2].victims.pods) == ["b", "c", "d"]
    assert names(found[0].victims.pods) == ["c", "d"]
