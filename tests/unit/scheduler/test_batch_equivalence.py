"""The batch path (kemu.scheduling.columns, kemu.scheduling.filter_score) against the per-node path, on
random clusters and pods (hypothesis): the same feasible nodes in the same order, the same
Status for every rejected node, the same scores, the same host for the same seed, the same
rotating start index and Filter count, and the same errors; with nodes that have nominated
pods, taints, unschedulable nodes, full nodes, extended resources, narrowed node lists, node
selectors and required node affinity, host ports, and required pod (anti-)affinity; and the
nominated pods' first pass over columns with their requests added (many nominated nodes,
counted or not, the pod's own nomination), which must leave no node to the per-node path
where every plugin opts in."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGates
from kemu.scheduling.columns import NodeColumns
from kemu.scheduling.config import default_config
from kemu.scheduling.filter_score import ColumnPaths
from kemu.scheduling.interface import CycleState, FitError, NodeToStatus
from kemu.scheduling.plugins.registry import in_tree_registry
from kemu.scheduling.runtime import Framework, FrameworkOptions
from kemu.scheduling.status import Status
from kemu.scheduling.types import NodeInfo, PodInfo
from kemu.testing.builders import make_node, make_pod
from scheduler.app import new_cache
from scheduler.metrics import SchedulerMetrics
from scheduler.queue.scheduling_queue import PriorityQueue
from scheduler.schedule_one import CycleSettings, Scheduler, SchedulingError

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TAINT_KEYS = ("a", "b")


@dataclass(frozen=True)
class NodeSpec:
    cpu: int  # millicores; 0: no cpu allocatable
    memory: int  # Mi
    pods: int
    unschedulable: bool
    taints: tuple[tuple[str, str], ...]  # (key, effect)
    gpu: int
    fpga: int = 0  # a second extended resource


@dataclass(frozen=True)
class PodSpec:
    cpu: int
    memory: int
    gpu: int
    tolerations: tuple[tuple[str, str], ...]  # (key, effect); key "" with Exists: all
    tolerates_unschedulable: bool
    priority: int
    zone: str = ""  # a nodeSelector on the zone label (NodeAffinity)
    anti: bool = False  # labelled app=db, required anti-affinity to app=db per node
    # required node affinity on the zone label: "notin-z0", "exists", "gt" (per node), ""
    node_affinity: str = ""
    host_port: bool = False  # hostPort 8080 (NodePorts)
    affinity: bool = False  # labelled app=web, required affinity to app=web per zone
    fpga: int = 0


nodes_st = st.builds(
    NodeSpec,
    cpu=st.sampled_from([0, 500, 1000, 2000, 4000]),
    memory=st.sampled_from([0, 512, 1024, 4096]),
    pods=st.integers(0, 6),
    unschedulable=st.sampled_from([False, False, True]),
    taints=st.lists(st.tuples(st.sampled_from(TAINT_KEYS), st.sampled_from(EFFECTS)), max_size=2)
    .map(tuple),
    gpu=st.sampled_from([0, 0, 0, 1, 2]),
    fpga=st.sampled_from([0, 0, 1]),
)  # fmt: skip
pods_st = st.builds(
    PodSpec,
    cpu=st.sampled_from([0, 100, 250, 700, 1500]),
    memory=st.sampled_from([0, 64, 300, 1000]),
    gpu=st.sampled_from([0, 0, 0, 0, 1]),
    tolerations=st.lists(
        st.tuples(st.sampled_from(("", *TAINT_KEYS)), st.sampled_from(("", *EFFECTS))),
        max_size=2,
    ).map(tuple),
    tolerates_unschedulable=st.booleans(),
    priority=st.sampled_from([0, 10]),
    zone=st.sampled_from(["", "", "", "z0", "z1"]),
    anti=st.sampled_from([False, False, True]),
    node_affinity=st.sampled_from(["", "", "", "notin-z0", "exists", "gt"]),
    host_port=st.sampled_from([False, False, True]),
    affinity=st.sampled_from([False, False, False, True]),
    fpga=st.sampled_from([0, 0, 0, 1]),
)


def node_obj(i: int, spec: NodeSpec) -> types_pb2.Node:
    b = make_node(f"n{i}").capacity(cpu=f"{spec.cpu}m", memory=f"{spec.memory}Mi", pods=spec.pods)
    scalars = {"example.com/gpu": spec.gpu, "example.com/fpga": spec.fpga}
    if spec.gpu or spec.fpga:
        b = b.capacity(cpu=f"{spec.cpu}m", memory=f"{spec.memory}Mi", pods=spec.pods,
                       **{k: str(v) for k, v in scalars.items() if v})  # fmt: skip
    for key, effect in spec.taints:
        b = b.taint(key, "v", effect)
    if spec.unschedulable:
        b = b.unschedulable()
    if i % 3 == 0:
        b = b.label("topology.kubernetes.io/zone", f"z{i % 2}")
    b = b.label("kubernetes.io/hostname", f"n{i}").label("rank", str(i % 4))
    return b.obj()


def pod_obj(name: str, spec: PodSpec, node: str = "") -> types_pb2.Pod:
    b = make_pod(name).uid(f"uid-{name}").priority(spec.priority)
    req: dict[str, str] = {}
    if spec.cpu:
        req["cpu"] = f"{spec.cpu}m"
    if spec.memory:
        req["memory"] = f"{spec.memory}Mi"
    if spec.gpu:
        req["example.com/gpu"] = str(spec.gpu)
    if spec.fpga:
        req["example.com/fpga"] = str(spec.fpga)
    if req:
        b = b.req(req)
    for key, effect in spec.tolerations:
        b = b.toleration(key, "v" if key else "", effect, "Equal" if key else "Exists")
    if spec.tolerates_unschedulable:
        b = b.toleration("node.kubernetes.io/unschedulable", "", "NoSchedule", "Exists")
    if spec.zone:
        b = b.node_selector({"topology.kubernetes.io/zone": spec.zone})
    if spec.anti:
        b = b.label("app", "db").anti_affinity({"app": "db"}, "kubernetes.io/hostname")
    if node:
        b = b.node(node)
    pod = b.obj()
    if spec.affinity:
        pod.metadata.labels["web"] = "yes"
        term = (
            pod.spec.affinity.pod_affinity.required_during_scheduling_ignored_during_execution.add()
        )
        term.label_selector.match_labels["web"] = "yes"
        term.topology_key = "topology.kubernetes.io/zone"
    if spec.node_affinity:
        required = (
            pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
        )
        e = required.node_selector_terms.add().match_expressions.add()
        e.key = "topology.kubernetes.io/zone"
        if spec.node_affinity == "notin-z0":
            e.operator, e.values[:] = "NotIn", ["z0"]
        elif spec.node_affinity == "exists":
            e.operator = "Exists"
        else:
            e.key, e.operator, e.values[:] = "rank", "Gt", ["1"]
    if spec.host_port:
        port = pod.spec.containers[0].ports.add()
        port.container_port = 8080
        port.host_port = 8080
        port.protocol = "TCP"
    pod.spec.scheduler_name = "default-scheduler"
    return pod


@dataclass
class World:
    scheduler: Scheduler
    fwk: Framework
    queue: PriorityQueue
    registry: CollectorRegistry
    """The scheduler's metrics."""


def world(
    nodes: list[NodeSpec],
    bound: list[tuple[int, PodSpec]],
    nominated: list[tuple[int, PodSpec]],
    *,
    batch: bool,
    seed: int,
    start: int,
    percentage: int,
) -> World:
    clock = FakeClock()
    gates = FeatureGates.default()
    cache = new_cache(clock, gates)
    for i, node_spec in enumerate(nodes):
        cache.add_node(node_obj(i, node_spec))
    for k, (i, pod_spec) in enumerate(bound):
        cache.add_pod(pod_obj(f"bound-{k}", pod_spec, f"n{i % len(nodes)}"))
    profile = replace(default_config().profiles[0], percentage_of_nodes_to_score=percentage)
    rng = random.Random(seed)
    fwk = Framework(
        profile, in_tree_registry(), options=FrameworkOptions(clock=clock, gates=gates, rng=rng)
    )
    queue = PriorityQueue(clock=clock, less=fwk.queue_sort_func())
    fwk.set_nominator(queue.nominator)
    for k, (i, pod_spec) in enumerate(nominated):
        pod = pod_obj(f"nominated-{k}", pod_spec)
        queue.nominator.add_nominated_pod(PodInfo(pod), f"n{i % len(nodes)}")
    registry = CollectorRegistry()
    sched = Scheduler(
        client=None,  # type: ignore[arg-type]  # schedule_pod makes no API call
        cache=cache,
        queue=queue,
        profiles={profile.scheduler_name: fwk},
        clock=clock,
        settings=CycleSettings.of(gates, paths=ColumnPaths(enabled=batch, min_nodes=0)),
        metrics=SchedulerMetrics(registry),
        pod_lister=None,  # type: ignore[arg-type]
    )
    sched.next_start_node_index = start
    return World(sched, fwk, queue, registry)


def filter_evaluations(w: World) -> float:
    """The scheduler's filter_evaluations metric (nodes run through Filter) so far."""
    value = w.registry.get_sample_value(
        "scheduler_kemu_filter_evaluations_total", {"profile": w.fwk.profile_name()}
    )
    return value or 0.0


def statuses_of(s: NodeToStatus) -> dict[str, tuple[str, tuple[str, ...], str]]:
    return {name: (st_.code.name, st_.reasons, st_.plugin) for name, st_ in s.items()}


def outcome(w: World, pods: list[types_pb2.Pod]) -> list[object]:
    """Per pod: the host (and the assume), or the FitError's statuses and message, or the
    error; the start index and Filter count after each."""
    out: list[object] = []
    for pod in pods:
        before = filter_evaluations(w)
        try:
            result = w.scheduler.schedule_pod(w.fwk, CycleState(), pod)
        except FitError as fit:
            out.append(("fit", statuses_of(fit.statuses), str(fit)))
        except SchedulingError as e:
            out.append(("error", str(e)))
        else:
            assumed = types_pb2.Pod()
            assumed.CopyFrom(pod)
            assumed.spec.node_name = result.suggested_host
            w.scheduler.cache.assume_pod(assumed)
            out.append(("host", result))
        out.append((w.scheduler.next_start_node_index, filter_evaluations(w) - before))
    return out


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(nodes_st, min_size=1, max_size=12),
    bound=st.lists(st.tuples(st.integers(0, 200), pods_st), max_size=15),
    nominated=st.lists(st.tuples(st.integers(0, 200), pods_st), max_size=3),
    incoming=st.lists(pods_st, min_size=1, max_size=6),
    seed=st.integers(0, 2**16),
    start=st.integers(0, 50),
    copies=st.sampled_from([1, 1, 12]),
)
def test_batch_and_per_node_paths_place_and_reject_alike(
    nodes: list[NodeSpec],
    bound: list[tuple[int, PodSpec]],
    nominated: list[tuple[int, PodSpec]],
    incoming: list[PodSpec],
    seed: int,
    start: int,
    copies: int,
) -> None:
    # `copies` repeats the nodes to pass 100, where percentageOfNodesToScore stops early.
    all_nodes = nodes * copies
    pods = [pod_obj(f"p{k}", spec) for k, spec in enumerate(incoming)]
    kwargs = {"seed": seed, "start": start, "percentage": 10 if copies > 1 else 0}
    per_node = world(all_nodes, bound, nominated, batch=False, **kwargs)
    batch = world(all_nodes, bound, nominated, batch=True, **kwargs)
    assert outcome(batch, pods) == outcome(per_node, pods)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(nodes_st, min_size=1, max_size=15),
    bound=st.lists(st.tuples(st.integers(0, 200), pods_st), max_size=20),
    pod=pods_st,
)
def test_batch_filter_passes_only_nodes_the_per_node_filter_passes_and_scores_agree(
    nodes: list[NodeSpec], bound: list[tuple[int, PodSpec]], pod: PodSpec
) -> None:
    w = world(nodes, bound, [], batch=True, seed=0, start=0, percentage=0)
    sched, fwk = w.scheduler, w.fwk
    sched.cache.update_snapshot(sched.snapshot)
    fwk.set_snapshot(sched.snapshot)
    p = pod_obj("p", pod)
    state = CycleState()
    infos = sched.snapshot.list()
    _, status, _ = fwk.run_pre_filter_plugins(state, p, infos)
    if not status.is_success():
        return
    columns = sched.snapshot.columns()
    rows = np.arange(len(infos), dtype=np.int64)
    mask = fwk.column_runner().run_filter_columns(state, p, columns, rows)
    per_node = [fwk.run_filter_plugins(state, p, ni).is_success() for ni in infos]
    rest = fwk.column_runner().filter_rest_plan(state)
    if mask is not None:
        for ni, ok, expected in zip(infos, mask.tolist(), per_node, strict=True):
            # True: the plugins with a batch form pass, so the others alone decide.
            assert not ok or expected == fwk.run_filter_plan(rest, state, p, ni).is_success()
        # Where only resources, taints and unschedulable decide, the batch form is exact.
        if not rest:
            assert mask.tolist() == per_node
        # The rejections the batch forms know are the per-node Filter's Statuses.
        failing = rows[~mask]
        which, table = fwk.column_runner().run_reject_columns(state, p, columns, failing)
        for row, k in zip(failing.tolist(), which.tolist(), strict=True):
            if k >= 0:
                assert table[k] == fwk.run_filter_plugins(state, p, infos[row])
    feasible = [ni for ni, ok in zip(infos, per_node, strict=True) if ok]
    if len(feasible) < 2 or not fwk.run_pre_score_plugins(state, p, feasible).is_success():
        return
    scores, score_status = fwk.run_score_plugins(state, p, feasible)
    feasible_rows = np.array([columns.row_of[ni.name] for ni in feasible], dtype=np.int64)
    totals = fwk.column_runner().run_score_columns(state, p, columns, feasible_rows)
    assert score_status.is_success() and totals is not None
    assert totals.tolist() == [s.total_score for s in scores]


def test_columns_follow_the_snapshot_as_pods_are_assumed() -> None:
    spec = NodeSpec(1000, 1024, 5, False, (), 0)
    w = world([spec, spec], [], [], batch=True, seed=0, start=0, percentage=0)
    cache, snap = w.scheduler.cache, w.scheduler.snapshot
    cache.update_snapshot(snap)
    columns = snap.columns()
    assert columns.req_cpu.tolist() == [0, 0]
    cache.assume_pod(pod_obj("x", PodSpec(300, 64, 0, (), False, 0), "n1"))
    cache.update_snapshot(snap)
    assert snap.columns() is columns  # updated in place, row by row
    assert columns.req_cpu.tolist() == [0, 300] and columns.pods.tolist() == [0, 1]
    cache.add_node(node_obj(2, spec))
    cache.update_snapshot(snap)
    assert len(snap.columns()) == 3  # rebuilt when the node list changes


def test_columns_follow_scalar_resources_as_pods_are_assumed_and_nodes_change() -> None:
    """Extended resources over columns: free follows the assumed pods, a node that gains or
    loses one is followed, and more names than are kept dense are built again when asked."""
    w = world([NodeSpec(1000, 1024, 5, False, (), 2), NodeSpec(1000, 1024, 5, False, (), 0)],
              [], [], batch=True, seed=0, start=0, percentage=0)  # fmt: skip
    cache, snap = w.scheduler.cache, w.scheduler.snapshot
    cache.update_snapshot(snap)
    columns = snap.columns()
    gpu = columns.scalar("example.com/gpu")
    assert gpu.allocatable.tolist() == [2, 0] and gpu.free.tolist() == [2, 0]
    cache.assume_pod(pod_obj("x", PodSpec(100, 64, 1, (), False, 0), "n0"))
    cache.update_snapshot(snap)
    assert columns.scalar("example.com/gpu").free.tolist() == [1, 0]
    for k in range(20):  # more names than CACHED: the gpu column is dropped, then rebuilt
        assert columns.scalar(f"example.com/other-{k}").allocatable.tolist() == [0, 0]
    cache.update_node(node_obj(0, NodeSpec(1000, 1024, 5, False, (), 2)),
                      node_obj(0, NodeSpec(1000, 1024, 5, False, (), 0, fpga=3)))  # fmt: skip
    cache.update_snapshot(snap)
    assert columns.scalar("example.com/gpu").allocatable.tolist() == [0, 0]
    fpga = columns.scalar("example.com/fpga")
    assert fpga.allocatable.tolist() == [3, 0] and fpga.free.tolist() == [3, 0]  # x asks gpu


def test_s_extended_resource_one_node_of_many_fits_without_the_per_node_path() -> None:
    """upstream's SchedulingWithExtendedResource: each node has its own extended resource,
    each pod asks for one node's. The batch forms pass the one node and know every other
    node's Status ("Insufficient foo.com/bar-N"), so no node is filtered per node, and the
    outcome (host, statuses, start index, Filter count) is the per-node path's."""
    n = 40
    node_objs = [
        make_node(f"n{i}").capacity(cpu="4", memory="32Gi", pods=110, **{f"foo.com/bar-{i}": "1"})
        .label("kubernetes.io/hostname", f"n{i}").obj()
        for i in range(n)
    ]  # fmt: skip
    pods = [make_pod(f"p{i}").uid(f"u{i}").req({f"foo.com/bar-{i}": "1"}).obj()
            for i in (7, 7, 31)]  # fmt: skip
    for pod in pods:
        pod.spec.scheduler_name = "default-scheduler"
    outcomes = []
    for batch in (False, True):
        w = world([], [], [], batch=batch, seed=3, start=5, percentage=0)
        for node in node_objs:
            w.scheduler.cache.add_node(node)
        calls = _count_per_node_calls(w.fwk)
        outcomes.append(outcome(w, pods))
        if batch:
            assert calls == []
    per_node, batch_out = outcomes
    assert batch_out == per_node
    assert batch_out[0] == ("host", batch_out[0][1]) and batch_out[0][1].suggested_host == "n7"  # type: ignore[index]
    fit = batch_out[2]  # the second pod asking for n7's: it is taken
    assert isinstance(fit, tuple) and fit[0] == "fit"
    assert fit[1]["n7"] == ("UNSCHEDULABLE", ("Insufficient foo.com/bar-7",), "NodeResourcesFit")
    assert fit[1]["n8"] == (
        "UNSCHEDULABLE_AND_UNRESOLVABLE",
        ("Insufficient foo.com/bar-7",),
        "NodeResourcesFit",
    )


# ------------------------------------------------- the nominated pods' pass over columns

# Pods whose nomination the batch pass can count (no host ports, no pod (anti-)affinity; with
# extended resources, unless the incoming pod requests some too), and now and then one it
# cannot (the per-node path then decides, exactly as before).
countable_pods_st = pods_st.map(lambda p: replace(p, anti=False, affinity=False, host_port=False))
nominated_pods_st = st.one_of(countable_pods_st, countable_pods_st, countable_pods_st, pods_st)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(nodes_st, min_size=1, max_size=12),
    bound=st.lists(st.tuples(st.integers(0, 200), pods_st), max_size=15),
    nominated=st.lists(st.tuples(st.integers(0, 200), nominated_pods_st), max_size=14),
    incoming=st.lists(countable_pods_st, min_size=1, max_size=5),
    self_nominated=st.one_of(st.none(), st.integers(0, 200)),
    seed=st.integers(0, 2**16),
    start=st.integers(0, 50),
    copies=st.sampled_from([1, 1, 12]),
)
def test_nominated_pods_pass_over_columns_agrees_with_the_per_node_path(
    nodes: list[NodeSpec],
    bound: list[tuple[int, PodSpec]],
    nominated: list[tuple[int, PodSpec]],
    incoming: list[PodSpec],
    self_nominated: int | None,
    seed: int,
    start: int,
    copies: int,
) -> None:
    """Many nodes with nominated pods of random priorities (some not counted: lower priority,
    or the incoming pod itself nominated somewhere): the same outcome, statuses, start index
    and Filter count on both paths."""
    all_nodes = nodes * copies
    pods = [pod_obj(f"p{k}", spec) for k, spec in enumerate(incoming)]
    kwargs = {"seed": seed, "start": start, "percentage": 10 if copies > 1 else 0}
    per_node = world(all_nodes, bound, nominated, batch=False, **kwargs)
    batch = world(all_nodes, bound, nominated, batch=True, **kwargs)
    if self_nominated is not None:
        for w in (per_node, batch):
            w.queue.nominator.add_nominated_pod(
                PodInfo(pods[0]), f"n{self_nominated % len(all_nodes)}"
            )
    assert outcome(batch, pods) == outcome(per_node, pods)


def _count_per_node_calls(fwk: Framework) -> list[str]:
    calls: list[str] = []
    original = fwk.run_filter_plugins_with_nominated_pods

    def counting(state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        calls.append(node.name)
        return original(state, pod, node)

    fwk.run_filter_plugins_with_nominated_pods = counting  # type: ignore[method-assign]
    return calls


def test_nominated_pods_pass_runs_over_columns_without_the_per_node_path() -> None:
    """Nodes full once their nominated pods count (pass 1 rejects: "Insufficient cpu"), one
    with room beside them (feasible), one too small for the pod alone (pass 1 rejects with the
    node's own shortage): no node goes through the per-node path, and the statuses are the
    per-node path's."""
    big = NodeSpec(2000, 4096, 10, False, (), 0)
    small = NodeSpec(500, 4096, 10, False, (), 0)
    nominee = PodSpec(1500, 64, 0, (), False, 10)
    low = PodSpec(1500, 64, 0, (), False, 0)  # below the pod's priority: not counted
    nodes = [big, big, big, small, big]
    nominated = [(0, nominee), (1, nominee), (3, nominee), (4, low)]
    pod = pod_obj("p", PodSpec(1000, 64, 0, (), False, 10))
    kwargs = {"seed": 1, "start": 0, "percentage": 0}
    per_node = world(nodes, [], nominated, batch=False, **kwargs)
    batch = world(nodes, [], nominated, batch=True, **kwargs)
    calls = _count_per_node_calls(batch.fwk)
    got = outcome(batch, [pod])
    assert got == outcome(per_node, [pod])
    assert calls == []
    assert got[0] == ("host", got[0][1]) and got[0][1].suggested_host in {"n2", "n4"}  # type: ignore[index]
    # With a pod that fits nowhere: every status from the batch forms, as per node.
    greedy = pod_obj("g", PodSpec(1900, 64, 0, (), False, 10))
    everywhere = [(i, nominee) for i in range(len(nodes))]
    per_node = world(nodes, [], everywhere, batch=False, **kwargs)
    batch = world(nodes, [], everywhere, batch=True, **kwargs)
    calls = _count_per_node_calls(batch.fwk)
    got = outcome(batch, [greedy])
    assert got == outcome(per_node, [greedy])
    assert calls == []
    fit = got[0]
    assert isinstance(fit, tuple) and fit[0] == "fit"
    assert fit[1]["n0"] == ("UNSCHEDULABLE", ("Insufficient cpu",), "NodeResourcesFit")
    # The cycle's Filter plan is on its state, as the per-node path leaves it (preemption's
    # dry run reads it to do NodeResourcesFit's arithmetic itself).
    state = CycleState()
    try:
        batch.scheduler.schedule_pod(batch.fwk, state, greedy)
    except FitError:
        pass
    assert state.filter_plan is not None


def test_nominated_pods_pass_falls_back_per_node_for_what_columns_do_not_hold() -> None:
    """A pod with host ports runs NodePorts, which does not opt in: the nodes with nominated
    pods go through the per-node path, with the same outcome."""
    spec = NodeSpec(2000, 4096, 10, False, (), 0)
    nominated = [(0, PodSpec(100, 64, 0, (), False, 10, host_port=True))]
    pod = pod_obj("p", PodSpec(100, 64, 0, (), False, 10, host_port=True))
    kwargs = {"seed": 1, "start": 0, "percentage": 0}
    per_node = world([spec, spec], [], nominated, batch=False, **kwargs)
    batch = world([spec, spec], [], nominated, batch=True, **kwargs)
    calls = _count_per_node_calls(batch.fwk)
    assert outcome(batch, [pod]) == outcome(per_node, [pod])
    assert calls == ["n0"]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(nodes_st, min_size=1, max_size=10),
    bound=st.lists(st.tuples(st.integers(0, 200), pods_st), max_size=10),
    added=st.lists(st.tuples(st.integers(0, 200), pods_st), max_size=8),
)
def test_columns_with_pods_added_are_the_columns_of_the_nodes_with_them(
    nodes: list[NodeSpec], bound: list[tuple[int, PodSpec]], added: list[tuple[int, PodSpec]]
) -> None:
    w = world(nodes, bound, [], batch=True, seed=0, start=0, percentage=0)
    snap = w.scheduler.snapshot
    w.scheduler.cache.update_snapshot(snap)
    columns = snap.columns()
    infos = [ni.clone() for ni in snap.list()]
    sums: dict[int, list[int]] = {}
    for k, (i, spec) in enumerate(added):
        row = i % len(infos)
        pi = PodInfo(pod_obj(f"a{k}", spec))
        infos[row].add_pod_info(pi)
        s = sums.setdefault(row, [0] * 6)
        r, nz = pi.requests, pi.non_zero_requests
        for j, v in enumerate((r.milli_cpu, r.memory, r.ephemeral_storage, nz.milli_cpu,
                               nz.memory, 1)):  # fmt: skip
            s[j] += v
    rows = np.array(sorted(sums), dtype=np.int64)
    adds = np.array([sums[r] for r in sorted(sums)], dtype=np.int64).reshape(len(rows), 6)
    got = columns.with_pods_added(rows, adds)
    expected = NodeColumns(infos, columns.row_of)
    for name in ("alloc_cpu", "req_cpu", "req_memory", "req_ephemeral", "nz_cpu", "nz_memory",
                 "pods", "free_cpu", "free_memory", "free_ephemeral", "free_pods", "has_node",
                 "unschedulable", "tainted"):  # fmt: skip
        assert getattr(got, name).tolist() == getattr(expected, name).tolist(), name
    assert got.infos is columns.infos  # the nodes without them, shared
    # The original columns are untouched.
    assert columns.req_cpu.tolist() == NodeColumns(snap.list(), columns.row_of).req_cpu.tolist()


@pytest.mark.parametrize("batch", [False, True], ids=["per-node", "batch"])
def test_s_pnn_the_cycle_reports_the_nodes_it_filtered_the_nominated_one_first(
    batch: bool,
) -> None:
    """KEP-1923's figure (kemu's nominated_pod_filter_evaluations): a pod whose nominated node
    fits is filtered on that node alone; one whose nominated node does not fit is filtered
    there and then on every node of the full pass. The count is the cycle's result, not
    scheduler state, and the filter_evaluations metric counts the same nodes."""
    big = NodeSpec(cpu=4000, memory=4096, pods=110, unschedulable=False, taints=(), gpu=0)
    small = NodeSpec(cpu=500, memory=4096, pods=110, unschedulable=False, taints=(), gpu=0)
    w = world([small, big, big, big, big], [], [], batch=batch, seed=1, start=0, percentage=100)
    spec = PodSpec(cpu=1000, memory=64, gpu=0, tolerations=(), tolerates_unschedulable=False,
                   priority=0)  # fmt: skip

    fits = pod_obj("fits", spec)
    fits.status.nominated_node_name = "n3"
    before = filter_evaluations(w)
    result = w.scheduler.schedule_pod(w.fwk, CycleState(), fits)
    assert (result.suggested_host, result.filter_evaluations) == ("n3", 1)
    assert filter_evaluations(w) - before == 1

    misses = pod_obj("misses", spec)
    misses.status.nominated_node_name = "n0"  # 500m: too small
    before = filter_evaluations(w)
    result = w.scheduler.schedule_pod(w.fwk, CycleState(), misses)
    assert result.suggested_host != "n0"
    assert result.filter_evaluations == 1 + 5
    assert filter_evaluations(w) - before == 1 + 5
