"""The scheduling cycle's fast paths (issue #16; host selection's draws in bulk are
tests/unit/scheduling/test_select_host.py's): the node columns' counts that let batch forms skip their columns, the feasible window as slices, the
cycle's PodInfo taken from the queue, and the metrics' label children looked up once. The
batch path's equivalence with the per-node path is test_batch_equivalence.py's."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.resources import PodResourcesOptions
from kemu.scheduling.config import default_config
from kemu.scheduling.interface import (
    CycleState,
    FitError,
    NodeToStatus,
    ObserverMetric,
    cycle_pod_info,
)
from kemu.scheduling.nominator import Nominator
from kemu.scheduling.plugins.registry import in_tree_registry
from kemu.scheduling.runtime import Framework, FrameworkOptions, observer_from_histogram
from kemu.scheduling.types import PodInfo
from kemu.testing.builders import make_pod
from scheduler.decisions import Attempt, record_unschedulable
from tests.unit.scheduler.harness import env
from tests.unit.scheduler.test_batch_equivalence import NodeSpec, node_obj, world
from tests.unit.scheduling.deferred_builders import SCHEDULER


def test_column_counts_follow_nodes_that_change() -> None:
    spec = NodeSpec(1000, 1024, 5, False, (), 0)
    w = world([spec, spec, spec], [], [], batch=True, seed=0, start=0, percentage=0)
    cache, snap = w.scheduler.cache, w.scheduler.snapshot
    cache.update_snapshot(snap)
    columns = snap.columns()
    assert (columns.missing_nodes, columns.unschedulable_nodes, columns.tainted_nodes) == (0, 0, 0)
    assert columns.no_cpu_or_memory_nodes == 0
    assert columns.free_cpu.tolist() == [1000] * 3 and columns.free_pods.tolist() == [5] * 3

    changed = node_obj(1, NodeSpec(0, 1024, 5, True, (("a", "NoSchedule"),), 0))
    cache.update_node(node_obj(1, spec), changed)
    cache.update_snapshot(snap)
    assert snap.columns() is columns  # a row replaced in place
    assert (columns.unschedulable_nodes, columns.tainted_nodes) == (1, 1)
    assert columns.no_cpu_or_memory_nodes == 1
    rows = np.arange(3, dtype=np.int64)
    assert columns.nodes_present(rows).tolist() == [True] * 3

    cache.update_node(changed, node_obj(1, spec))
    cache.update_snapshot(snap)
    assert (columns.unschedulable_nodes, columns.tainted_nodes) == (0, 0)
    assert columns.no_cpu_or_memory_nodes == 0


@pytest.mark.parametrize("start", [0, 37, 149])
def test_the_feasible_window_wraps_around_the_node_list_as_the_per_node_path(start: int) -> None:
    spec = NodeSpec(4000, 4096, 10, False, (), 0)
    nodes = [spec] * 150  # 100 to find (the minimum), from `start` on, wrapping
    pod = make_pod("p").req(cpu="100m").scheduler_name("default-scheduler").obj()
    found: list[list[str]] = []
    for batch in (False, True):
        w = world(nodes, [], [], batch=batch, seed=0, start=start, percentage=0)
        sched, fwk = w.scheduler, w.fwk
        sched.cache.update_snapshot(sched.snapshot)
        fwk.set_snapshot(sched.snapshot)
        state = CycleState()
        _, status, _ = fwk.run_pre_filter_plugins(state, pod, sched.snapshot.list())
        assert status.is_success()
        feasible = sched.find_nodes_that_pass_filters(
            fwk, state, pod, NodeToStatus(), sched.snapshot.list()
        ).nodes
        found.append([ni.name for ni in feasible])
        assert sched.next_start_node_index == (start + 100) % 150
        order = [ni.name for ni in sched.snapshot.list()]
    assert found[0] == found[1]
    assert found[1] == [order[(start + i) % 150] for i in range(100)]


@pytest.mark.parametrize("per_container_max", [False, True])
async def test_the_cycle_takes_the_queues_pod_info_under_any_counting_rules(
    per_container_max: bool,
) -> None:
    async with env(per_container_max=per_container_max) as e:
        e.node("n1", "4")
        e.add(make_pod("p").req(cpu="100m").scheduler_name(SCHEDULER).obj())
        qpi = await e.queue.pop()
        assert qpi is not None
        seen: list[PodInfo] = []
        schedule_pod = e.scheduler.schedule_pod

        def spy(fwk: object, state: CycleState, pod: types_pb2.Pod) -> object:
            seen.append(cycle_pod_info(state, pod))
            return schedule_pod(fwk, state, pod)  # type: ignore[arg-type]

        e.scheduler.schedule_pod = spy  # type: ignore[assignment,method-assign]
        await e.scheduler.schedule_one(qpi)
        assert len(seen) == 1
        # The queue's PodInfo, counted by the cache's rules, is the cycle's (plugins of
        # other rules, which the scheduler's own never are, build theirs: cycle_pod_info).
        assert seen[0] is qpi.pod_info
        assert e.cache.is_assumed_pod(qpi.pod)


def test_the_extension_point_observer_looks_each_label_child_up_once() -> None:
    class Child:
        def __init__(self) -> None:
            self.values: list[float] = []

        def observe(self, amount: float) -> None:
            self.values.append(amount)

    class Histogram:
        def __init__(self) -> None:
            self.lookups = 0
            self.children: dict[tuple[str, ...], Child] = {}

        def labels(self, *values: str) -> ObserverMetric:
            self.lookups += 1
            return self.children.setdefault(values, Child())

    h = Histogram()
    observe = observer_from_histogram(h)
    observe("Filter", "Success", "p", 1.0)
    observe("Filter", "Success", "p", 2.0)
    observe("Score", "Success", "p", 3.0)
    assert h.lookups == 2
    assert h.children["Filter", "Success", "p"].values == [1.0, 2.0]
    assert h.children["Score", "Success", "p"].values == [3.0]


def test_batch_filters_say_every_row_with_the_shared_read_only_mask() -> None:
    spec = NodeSpec(1000, 1024, 5, False, (), 0)
    w = world([spec] * 4, [], [], batch=True, seed=0, start=0, percentage=0)
    sched, fwk = w.scheduler, w.fwk
    sched.cache.update_snapshot(sched.snapshot)
    fwk.set_snapshot(sched.snapshot)
    columns = sched.snapshot.columns()
    rows = np.arange(4, dtype=np.int64)
    every = columns.all_rows(4)
    assert every.tolist() == [True] * 4 and not every.flags.writeable
    assert columns.nodes_present(rows) is every  # no node is missing: nothing gathered
    state = CycleState()
    pod = make_pod("p").scheduler_name("default-scheduler").obj()  # requests nothing
    _, status, _ = fwk.run_pre_filter_plugins(state, pod, sched.snapshot.list())
    assert status.is_success()
    mask = fwk.column_runner().run_filter_columns(state, pod, columns, rows)
    assert mask is not None and mask.tolist() == [True] * 4
    big = make_pod("q").req(cpu="2").scheduler_name("default-scheduler").obj()
    state = CycleState()
    fwk.run_pre_filter_plugins(state, big, sched.snapshot.list())
    mask = fwk.column_runner().run_filter_columns(state, big, columns, rows)
    assert mask is not None and mask.tolist() == [False] * 4 and mask is not every


def test_only_nodes_with_nominated_pods_of_at_least_the_pods_priority_are_filtered_twice() -> None:
    # The batch path sends these nodes through the per-node two-pass filter; on the others
    # that filter is the plain one, which the columns decide.
    fwk = Framework(
        default_config().profiles[0],
        in_tree_registry(),
        options=FrameworkOptions(rng=random.Random(0)),
    )
    nominator = Nominator()
    fwk.set_nominator(nominator)
    pod = make_pod("p").uid("uid-p").priority(10).obj()

    def nominate(name: str, priority: int, node: str) -> None:
        nominator.add_nominated_pod(
            PodInfo(make_pod(name).uid(f"uid-{name}").priority(priority).obj()), node
        )

    assert fwk.column_runner().counted_nominated_pods(pod) == {}
    nominate("low", 5, "n-low")
    nominator.add_nominated_pod(PodInfo(pod), "n-self")
    assert fwk.column_runner().counted_nominated_pods(pod) == {}
    nominate("same", 10, "n-same")
    nominate("high", 20, "n-high")
    nominate("low2", 0, "n-high")
    counted = fwk.column_runner().counted_nominated_pods(pod)
    assert counted is not None
    assert {node: [pi.pod.metadata.name for pi in pis] for node, pis in counted.items()} == {
        "n-same": ["same"],
        "n-high": ["high"],
    }


def test_a_plugin_counting_otherwise_builds_its_own_cycle_pod_info() -> None:
    """cycle_pod_info serves the cycle's PodInfo to a plugin of the same counting rules (or
    one that reads no requests) and builds another for a plugin counting otherwise."""
    pod = make_pod("p").req(cpu="1").pod_req(cpu="3").obj()
    on = PodResourcesOptions(use_status_resources=True, pod_level_resources=True)
    off = PodResourcesOptions(use_status_resources=True, pod_level_resources=False)
    state = CycleState()
    first = cycle_pod_info(state, pod, on)
    assert first.requests.milli_cpu == 3000
    assert cycle_pod_info(state, pod, dataclasses.replace(on)) is first
    assert cycle_pod_info(state, pod) is first, "terms only: any counting serves"
    other = cycle_pod_info(state, pod, off)
    assert other is not first and other.requests.milli_cpu == 1000


def _pinned(name: str, node: str, cpu: str) -> types_pb2.Pod:
    """A DaemonSet controller's pod: required node affinity on metadata.name."""
    pod = make_pod(name).req(cpu=cpu).scheduler_name("default-scheduler").obj()
    terms = pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    terms.node_selector_terms.add().match_fields.add(
        key="metadata.name", operator="In", values=[node]
    )
    return pod


@pytest.mark.parametrize("batch", [False, True])
def test_a_pod_pinned_to_one_node_is_filtered_on_that_node_alone(batch: bool) -> None:
    # upstream findNodesThatFitPod: the PreFilterResult's nodes from the snapshot and one
    # status for all others (SetAbsentNodesStatus), not a pass over the cluster's nodes
    room, full = NodeSpec(4000, 4096, 10, False, (), 0), NodeSpec(100, 4096, 10, False, (), 0)
    w = world([room] * 7 + [full] + [room] * 52, [], [], batch=batch, seed=0, start=0, percentage=0)
    sched, fwk = w.scheduler, w.fwk
    result = sched.schedule_pod(fwk, CycleState(), _pinned("ds-a", "n3", "500m"))
    assert (result.suggested_host, result.feasible_nodes, result.filter_evaluations) == ("n3", 1, 1)
    assert result.evaluated_nodes == 1  # upstream: 1 + NodeToStatus.Len(), the absent apart
    with pytest.raises(FitError) as raised:
        sched.schedule_pod(fwk, CycleState(), _pinned("ds-b", "n7", "500m"))
    fit = raised.value
    assert [name for name, _ in fit.statuses.items()] == ["n7"]
    assert str(fit) == (
        "0/60 nodes are available: 1 Insufficient cpu, "
        "59 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )
    attempt = Attempt(time=0.0, profile="default-scheduler", cycle="1", nominated="")
    record_unschedulable(attempt, fit, None)
    assert attempt.rejected_by == {"NodeResourcesFit": 1, "PreFilter": 59}
    assert attempt.examples == {"Insufficient cpu": ("n7",)}
    assert sched.snapshot.in_order(["n9", "gone", "n2"]) == [
        sched.snapshot.get("n2"),
        sched.snapshot.get("n9"),
    ]
