"""NodeResourcesFit: Filter statuses (pkg/scheduler/framework/plugins/noderesources/fit.go), scoring strategies, queueing hints.

Tables ported from upstream noderesources/fit_test.go, least_allocated_test.go and
most_allocated_test.go (node sizes as upstream: 10m cpu, 20 bytes memory, 32 pods, ...).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import POD_LEVEL_RESOURCES, FeatureGates
from kemu.component.version import DEFAULT_VERSION
from kemu.scheduling.columns import NodeColumns
from kemu.scheduling.events import ActionType, ClusterEvent, EventResource, QueueingHint
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import node_resources_fit as fit
from kemu.scheduling.status import Code, Status
from kemu.scheduling.types import NodeInfo
from kemu.testing.builders import PodBuilder, make_node, make_pod
from tests.unit.scheduling.deferred_builders import preemptor, resize_gates, running
from tests.unit.scheduling.plugins.fakes import FakeHandle, node_info

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_IO_A = "kubernetes.io/something"
K8S_IO_B = "subdomain.kubernetes.io/something"
HUGE_PAGE_A = "hugepages-2Mi"


def small_node(pods: int = 32) -> types_pb2.Node:
    return (
        make_node("machine1")
        .allocatable(
            {EXT_A: "5", HUGE_PAGE_A: "5"},
            cpu="10m",
            memory="20",
            pods=str(pods),
            ephemeral_storage="20",
        )
        .obj()
    )


def pod(cpu: int = 0, memory: int = 0, name: str = "p") -> PodBuilder:
    b = make_pod(name)
    res: dict[str, str] = {}
    if cpu:
        res["cpu"] = f"{cpu}m"
    if memory:
        res["memory"] = str(memory)
    return b.req(res)


def plugin(args: dict[str, Any] | None = None) -> fit.Fit:
    return fit.new(args or {}, FakeHandle())


def run_filter(p: fit.Fit, incoming: types_pb2.Pod, ni: NodeInfo) -> Status:
    state = CycleState()
    _, s = p.pre_filter(state, incoming, [ni])
    assert s.is_success()
    return p.filter(state, incoming, ni)


# ---------------------------------------------------------------- Filter


@dataclass
class FitCase:
    name: str
    pod: types_pb2.Pod
    existing: list[types_pb2.Pod] = field(default_factory=list)
    reasons: tuple[str, ...] = ()
    code: Code = Code.SUCCESS
    args: dict[str, Any] = field(default_factory=dict)
    pods_allowed: int = 32


FIT_CASES = [
    FitCase("no resources requested always fits", pod().obj(), [pod(10, 20).obj()]),
    FitCase(
        "too many resources fails",
        pod(1, 1).obj(),
        [pod(10, 20).obj()],
        ("Insufficient cpu", "Insufficient memory"),
        Code.UNSCHEDULABLE,
    ),
    FitCase(
        "too many resources fails due to init container cpu",
        pod(1, 1).init_container("i1").req(cpu="3m", memory="1").obj(),
        [pod(8, 19).obj()],
        ("Insufficient cpu",),
        Code.UNSCHEDULABLE,
    ),
    FitCase(
        "too many resources fails due to highest init container cpu",
        pod(1, 1)
        .init_container("i1")
        .req(cpu="3m", memory="1")
        .init_container("i2")
        .req(cpu="2m", memory="1")
        .obj(),
        [pod(8, 19).obj()],
        ("Insufficient cpu",),
        Code.UNSCHEDULABLE,
    ),
    FitCase(
        "too many resources fails due to init container memory",
        pod(1, 1).init_container("i1").req(cpu="1m", memory="3").obj(),
        [pod(9, 19).obj()],
        ("Insufficient memory",),
        Code.UNSCHEDULABLE,
    ),
    FitCase(
        "init container fits because it's the max, not sum, of containers and init containers",
        pod(1, 1).init_container("i1").req(cpu="1m", memory="1").obj(),
        [pod(9, 19).obj()],
    ),
    FitCase("both resources fit", pod(1, 1).obj(), [pod(5, 5).obj()]),
    FitCase(
        "one resource memory fits",
        pod(2, 1).obj(),
        [pod(9, 5).obj()],
        ("Insufficient cpu",),
        Code.UNSCHEDULABLE,
    ),
    FitCase(
        "one resource cpu fits",
        pod(1, 2).obj(),
        [pod(5, 19).obj()],
        ("Insufficient memory",),
        Code.UNSCHEDULABLE,
    ),
    FitCase("equal edge case", pod(5, 1).obj(), [pod(5, 19).obj()]),
    FitCase(
        "equal edge case for init container",
        pod(4, 1).init_container("i1").req(cpu="5m", memory="1").obj(),
        [pod(5, 19).obj()],
    ),
    FitCase("extended resource fits", pod().req({EXT_A: "1"}).obj(), [pod().obj()]),
    FitCase(
        "extended resource fits for init container",
        pod().init_container("i1").req({EXT_A: "1"}).obj(),
        [pod().obj()],
    ),
    FitCase(
        "extended resource capacity enforced: more than the node has is unresolvable",
        pod().req({EXT_A: "10"}).obj(),
        [pod().obj()],
        (f"Insufficient {EXT_A}",),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ),
    FitCase(
        "extended resource allocatable enforced: used up by another pod is resolvable",
        pod().req({EXT_A: "1"}).obj(),
        [pod().req({EXT_A: "5"}).obj()],
        (f"Insufficient {EXT_A}",),
        Code.UNSCHEDULABLE,
    ),
    FitCase(
        "extended resource allocatable enforced for multiple containers",
        pod().req({EXT_A: "3"}).container("c2").req({EXT_A: "3"}).obj(),
        [pod().obj()],
        (f"Insufficient {EXT_A}",),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ),
    FitCase(
        "extended resource allocatable admits multiple init containers (max, not sum)",
        pod().init_container("i1").req({EXT_A: "3"}).init_container("i2").req({EXT_A: "3"}).obj(),
        [pod().req({EXT_A: "2"}).obj()],
    ),
    FitCase(
        "extended resource unknown to the node is unresolvable",
        pod().req({EXT_B: "1"}).obj(),
        [pod().obj()],
        (f"Insufficient {EXT_B}",),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ),
    FitCase(
        "kubernetes.io resource capacity enforced even if listed in ignoredResources",
        pod().req({K8S_IO_A: "10"}).obj(),
        [pod().obj()],
        (f"Insufficient {K8S_IO_A}",),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        {"ignoredResources": [K8S_IO_A]},
    ),
    FitCase(
        "subdomain kubernetes.io resource capacity enforced",
        pod().req({K8S_IO_B: "10"}).obj(),
        [pod().obj()],
        (f"Insufficient {K8S_IO_B}",),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        {"ignoredResourceGroups": ["subdomain.kubernetes.io"]},
    ),
    FitCase(
        "hugepages resource capacity enforced",
        pod().req({HUGE_PAGE_A: "10"}).obj(),
        [pod().obj()],
        (f"Insufficient {HUGE_PAGE_A}",),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ),
    FitCase(
        "hugepages resource allocatable enforced for multiple containers",
        pod().req({HUGE_PAGE_A: "3"}).container("c2").req({HUGE_PAGE_A: "3"}).obj(),
        [pod().req({HUGE_PAGE_A: "2"}).obj()],
        (f"Insufficient {HUGE_PAGE_A}",),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ),
    FitCase(
        "skip checking ignored extended resource",
        pod().req({EXT_B: "2"}).obj(),
        [pod().obj()],
        args={"ignoredResources": [EXT_B]},
    ),
    FitCase(
        "skip checking extended resource in an ignored resource group",
        pod().req({EXT_B: "2"}).obj(),
        [pod().obj()],
        args={"ignoredResourceGroups": ["example.com"]},
    ),
    FitCase("extended resource with quantity zero is not checked", pod().req({EXT_B: "0"}).obj()),
    FitCase(
        "resources + pod overhead fits",
        pod(1, 1).overhead(cpu="3m", memory="13").obj(),
        [pod(5, 5).obj()],
    ),
    FitCase(
        "requests + overhead does not fit for memory",
        pod(1, 1).overhead(cpu="1m", memory="15").obj(),
        [pod(5, 5).obj()],
        ("Insufficient memory",),
        Code.UNSCHEDULABLE,
    ),
    FitCase(
        "ephemeral storage request exceeds the free amount",
        pod().req(ephemeral_storage="5").obj(),
        [pod().req(ephemeral_storage="16").obj()],
        ("Insufficient ephemeral-storage",),
        Code.UNSCHEDULABLE,
    ),
    FitCase(
        "ephemeral storage request exceeds the node's allocatable",
        pod().req(ephemeral_storage="25").obj(),
        [],
        ("Insufficient ephemeral-storage",),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ),
    FitCase(
        "a request larger than the node on one resource makes every reason unresolvable",
        pod(11, 1).obj(),
        [pod(5, 20).obj()],
        ("Insufficient cpu", "Insufficient memory"),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ),
    FitCase(
        "too many pods",
        pod(1, 1).obj(),
        [pod().obj()],
        ("Too many pods",),
        Code.UNSCHEDULABLE,
        pods_allowed=1,
    ),
    FitCase(
        "too many pods even when the pod requests nothing",
        pod().obj(),
        [pod().obj()],
        ("Too many pods",),
        Code.UNSCHEDULABLE,
        pods_allowed=1,
    ),
    FitCase(
        "too many pods and insufficient cpu together",
        pod(8, 1).obj(),
        [pod(5, 5).obj()],
        ("Too many pods", "Insufficient cpu"),
        Code.UNSCHEDULABLE,
        pods_allowed=1,
    ),
    FitCase(
        "a node with zero pods allowed is unschedulable, not unresolvable",
        pod().obj(),
        [],
        ("Too many pods",),
        Code.UNSCHEDULABLE,
        pods_allowed=0,
    ),
    FitCase(
        "sidecar container requests add to the app containers",
        pod(4, 1).init_container("s", restart_policy="Always").req(cpu="2m", memory="1").obj(),
        [pod(5, 5).obj()],
        ("Insufficient cpu",),
        Code.UNSCHEDULABLE,
    ),
    FitCase(
        "sidecar container fits alongside app containers",
        pod(2, 1).init_container("s", restart_policy="Always").req(cpu="2m", memory="1").obj(),
        [pod(5, 5).obj()],
    ),
    FitCase(
        "an init container after a sidecar runs next to it",
        pod(1, 1)
        .init_container("s", restart_policy="Always")
        .req(cpu="2m", memory="1")
        .init_container("i", restart_policy=None)
        .req(cpu="4m", memory="1")
        .obj(),
        [pod(5, 5).obj()],
        ("Insufficient cpu",),
        Code.UNSCHEDULABLE,
    ),
]


@pytest.mark.parametrize("case", FIT_CASES, ids=lambda c: c.name)
def test_filter(case: FitCase) -> None:
    ni = node_info(small_node(case.pods_allowed), *case.existing)
    got = run_filter(plugin(case.args), case.pod, ni)
    assert got.code == case.code, got
    assert got.reasons == case.reasons


def test_filter_without_prefilter_state_is_an_error() -> None:
    got = plugin().filter(CycleState(), pod(1, 1).obj(), node_info(small_node()))
    assert got.code == Code.ERROR


def test_prefilter_state_is_shared_by_clone() -> None:
    state = CycleState()
    plugin().pre_filter(state, pod(1, 1).obj(), [])
    assert state.clone().read(fit.PRE_FILTER_STATE_KEY) is state.read(fit.PRE_FILTER_STATE_KEY)


# ---------------------------------------------------------------- in-place resize (PodRequests)


def resized(desired_cpu: str, actual_cpu: str, *, infeasible: bool = False) -> types_pb2.Pod:
    """A running pod whose container wants `desired_cpu` and runs at `actual_cpu`."""
    p = make_pod("running").req(cpu=desired_cpu, memory="1")
    if infeasible:
        p.condition("PodResizePending", "True", "Infeasible")
    obj = p.obj()
    obj.status.container_statuses.add(
        name="c",
        resources=types_pb2.ResourceRequirements(requests={"cpu": actual_cpu, "memory": "1"}),
        allocated_resources={"cpu": actual_cpu, "memory": "1"},
    )
    return obj


@pytest.mark.parametrize(
    ("existing", "code"),
    [
        # A pending (Deferred) upsize is reserved at its desired size.
        (resized("8m", "2m"), Code.UNSCHEDULABLE),
        # An Infeasible resize never happens: the pod counts at what it runs with.
        (resized("8m", "2m", infeasible=True), Code.SUCCESS),
        # A pending downsize still counts at the larger, actual size until actuated.
        (resized("2m", "8m"), Code.UNSCHEDULABLE),
    ],
    ids=["pending-upsize-reserved", "infeasible-counts-actual", "pending-downsize-counts-actual"],
)
def test_filter_counts_resized_pods_per_in_place_resize_rules(
    existing: types_pb2.Pod, code: Code
) -> None:
    got = run_filter(plugin(), pod(4, 1).obj(), node_info(small_node(), existing))
    assert got.code == code


# ---------------------------------------------------------------- Score


def big_node(name: str, cpu: str, memory: str, extra: dict[str, str] | None = None) -> NodeInfo:
    return NodeInfo(make_node(name).allocatable(extra or {}, cpu=cpu, memory=memory).obj())


def scores(p: fit.Fit, incoming: types_pb2.Pod, nodes: list[NodeInfo]) -> list[int]:
    state = CycleState()
    assert p.pre_score(state, incoming, nodes).is_success()
    out = []
    for ni in nodes:
        s, status = p.score(state, incoming, ni)
        assert status.is_success()
        out.append(s)
    return out


def with_pods(ni: NodeInfo, *pods: types_pb2.Pod) -> NodeInfo:
    for i, p in enumerate(pods):
        p.metadata.uid = f"{ni.name}-{i}"
        ni.add_pod(p)
    return ni


def cpu_and_memory() -> PodBuilder:
    """Two containers: 1000m/2000 and 2000m/3000, so 3000m cpu and 5000 bytes in all."""
    b = make_pod("cpu-and-memory").req(cpu="1000m", memory="2000")
    return b.container("c2").req(cpu="2000m", memory="3000")


@pytest.mark.parametrize(
    ("strategy", "nodes", "existing", "expected"),
    [
        # (4000-3000)*100/4000 = 25, (10000-5000)*100/10000 = 50 -> 37; 50 and 50 -> 50
        ("LeastAllocated", [("4000m", "10000"), ("6000m", "10000")], [], [37, 50]),
        # 3000*100/4000 = 75, 50 -> 62; 50 and 50 -> 50
        ("MostAllocated", [("4000m", "10000"), ("6000m", "10000")], [], [62, 50]),
        # node1 already has 3000m/0 requested (memory counted at the 200Mi non-zero default,
        # over capacity): cpu (4000-6000) < 0 -> 0, memory 0 -> 0; node2 empty -> 50
        ("LeastAllocated", [("4000m", "10000"), ("6000m", "10000")], [(0, "3000m")], [0, 50]),
        # Most allocated caps at capacity: cpu 100, memory 100 -> 100
        ("MostAllocated", [("4000m", "10000"), ("6000m", "10000")], [(0, "3000m")], [100, 50]),
    ],
    ids=["least-differently-sized", "most-differently-sized", "least-full", "most-capped"],
)
def test_score_strategies(
    strategy: str,
    nodes: list[tuple[str, str]],
    existing: list[tuple[int, str]],
    expected: list[int],
) -> None:
    infos = [big_node(f"n{i}", cpu, mem) for i, (cpu, mem) in enumerate(nodes)]
    for index, cpu in existing:
        with_pods(infos[index], make_pod("e").req(cpu=cpu).obj())
    p = plugin({"scoringStrategy": {"type": strategy}})
    assert scores(p, cpu_and_memory().obj(), infos) == expected


def test_least_allocated_counts_best_effort_pods_at_the_non_zero_defaults() -> None:
    # 100m of 4000m used -> 97; 200Mi of 1Gi -> (1024-200)*100/1024 = 80; (97+80)/2 = 88
    ni = big_node("n", "4000m", "1Gi")
    assert scores(plugin(), make_pod("be").obj(), [ni]) == [88]


def test_least_allocated_scores_an_explicit_zero_request_at_zero() -> None:
    # Behaviour change: the non-zero defaults stand in only for a request that is absent
    # (upstream NonMissingContainerRequests); "cpu: 0, memory: 0" used to score as 100m/200Mi.
    ni = big_node("n", "4000m", "1Gi")
    assert scores(plugin(), make_pod("z").req(cpu="0", memory="0").obj(), [ni]) == [100]


def test_least_allocated_weights() -> None:
    # cpu 25 * 3 + memory 50 * 1 = 125, / 4 = 31
    p = plugin(
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
            }
        }
    )
    assert scores(p, cpu_and_memory().obj(), [big_node("n", "4000m", "10000")]) == [31]


def test_scalar_resources_are_scored_only_when_requested_and_present() -> None:
    args = {
        "scoringStrategy": {
            "type": "MostAllocated",
            "resources": [
                {"name": "cpu", "weight": 1},
                {"name": "memory", "weight": 1},
                {"name": "nvidia.com/gpu", "weight": 2},
            ],
        }
    }
    p = plugin(args)
    with_gpu = big_node("gpu", "4000m", "10000", {"nvidia.com/gpu": "4"})
    without = big_node("plain", "4000m", "10000")
    # No gpu requested: gpu left out -> (75 + 50) / 2 = 62 on both.
    assert scores(p, cpu_and_memory().obj(), [with_gpu, without]) == [62, 62]
    # 1 of 4 gpus: (75 + 50 + 25*2) / 4 = 43; the node without gpus ignores it.
    gpu_pod = cpu_and_memory().req({"nvidia.com/gpu": "1"}).obj()
    assert scores(p, gpu_pod, [with_gpu, without]) == [43, 62]


def test_requested_to_capacity_ratio_default_shape_behaves_like_least_allocated() -> None:
    p = plugin({"scoringStrategy": {"type": "RequestedToCapacityRatio"}})
    # utilization 75% -> 10 - 7.5 = 2.5 -> 25 (int) ; 50% -> 50; round((25+50)/2) = 38
    assert scores(p, cpu_and_memory().obj(), [big_node("n", "4000m", "10000")]) == [38]


def test_requested_to_capacity_ratio_bin_packing_shape() -> None:
    p = plugin(
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                },
            }
        }
    )
    # 75 and 50 -> round(62.5) = 63 (half away from zero, as Go's math.Round)
    assert scores(p, cpu_and_memory().obj(), [big_node("n", "4000m", "10000")]) == [63]


def test_score_without_prescore_computes_the_request() -> None:
    p = plugin()
    s, status = p.score(CycleState(), cpu_and_memory().obj(), big_node("n", "4000m", "10000"))
    assert (s, status.is_success()) == (37, True)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"scoringStrategy": {"type": "Nope"}}, "scoringStrategy.type"),
        (
            {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 0}]}},
            "scoringStrategy.resources[0].weight",
        ),
        (
            {"scoringStrategy": {"resources": [{"name": "cpu"}, {"name": "cpu"}]}},
            "scoringStrategy.resources[1].name",
        ),
        ({"ignoredResourceGroups": ["example.com/x"]}, "ignoredResourceGroups"),
        ({"ignoredResources": "example.com/x"}, "ignoredResources"),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 50, "score": 1}, {"utilization": 40, "score": 2}]
                    },
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
        ),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_invalid_args_name_the_field(args: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
        plugin(args)


@pytest.mark.parametrize("strategy", ["LeastAllocated", "MostAllocated"])
def test_inlined_cpu_memory_scorer_matches_the_generic_one(strategy: str) -> None:
    rng = random.Random(1234)
    p = plugin(
        {
            "scoringStrategy": {
                "type": strategy,
                "resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 3}],
            }
        }
    )
    for _ in range(300):
        ni = big_node("n", f"{rng.choice([0, 1, 1000, 4000])}m", str(rng.choice([0, 10, 10000])))
        for i in range(rng.randrange(3)):
            with_pods(ni, pod(rng.randrange(3000), rng.randrange(20000), f"e{i}").obj())
        reqs = (rng.randrange(5000), rng.randrange(20000))
        assert p.scorer.score(ni, reqs) == p.scorer.generic_score(ni, reqs), (ni, reqs)


# ---------------------------------------------------------------- queueing hints


def test_events_to_register() -> None:
    events = plugin().events_to_register()
    by_resource = {e.event.resource: e.event.action for e in events}
    assert by_resource[EventResource.POD] == ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN
    assert by_resource[EventResource.NODE] == ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE


def node_with(cpu: str, memory: str = "1Gi", pods: str = "110") -> types_pb2.Node:
    return make_node("n").allocatable(cpu=cpu, memory=memory, pods=pods).obj()


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        (None, node_with("1"), QueueingHint.SKIP),  # added, too small even when empty
        (None, node_with("4"), QueueingHint.QUEUE),  # added, big enough
        (node_with("1"), node_with("1500m"), QueueingHint.SKIP),  # grew, still too small
        (node_with("2"), node_with("4"), QueueingHint.QUEUE),  # cpu grew, now fits
        (node_with("4", "1Gi"), node_with("4", "2Gi"), QueueingHint.QUEUE),  # memory grew
        (node_with("4"), node_with("4"), QueueingHint.SKIP),  # nothing the pod needs grew
        (node_with("4", pods="10"), node_with("4", pods="20"), QueueingHint.QUEUE),  # pods grew
    ],
    ids=[
        "add-too-small",
        "add-fits",
        "update-still-too-small",
        "update-cpu-grew",
        "update-memory-grew",
        "update-nothing-grew",
        "update-pods-grew",
    ],
)
def test_node_change_hint(
    old: types_pb2.Node | None, new: types_pb2.Node, hint: QueueingHint
) -> None:
    target = make_pod("t").req(cpu="2", memory="512Mi").obj()
    assert plugin().is_schedulable_after_node_change(target, old, new) == hint


def _bound(p: types_pb2.Pod, node: str = "n1", uid: str = "other") -> types_pb2.Pod:
    p.spec.node_name = node
    p.metadata.uid = uid
    return p


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        (make_pod("x").req(cpu="1").obj(), None, QueueingHint.SKIP),  # unscheduled deleted
        (make_pod("x").nominated("n1").req(cpu="1").obj(), None, QueueingHint.QUEUE),
        (_bound(make_pod("x").req(cpu="1").obj()), None, QueueingHint.QUEUE),
        (
            _bound(make_pod("x").req(cpu="2").obj()),
            _bound(make_pod("x").req(cpu="1").obj()),
            QueueingHint.QUEUE,
        ),
        (
            _bound(make_pod("x").req(cpu="1", memory="2Gi").obj()),
            _bound(make_pod("x").req(cpu="1", memory="1Gi").obj()),
            QueueingHint.SKIP,  # the target asks no memory
        ),
        (
            make_pod("x").uid("other").req(cpu="2").obj(),
            make_pod("x").uid("other").req(cpu="1").obj(),
            QueueingHint.SKIP,  # an unscheduled pod scaled down
        ),
        (
            make_pod("t").uid("target").req(cpu="8").obj(),
            make_pod("t").uid("target").req(cpu="2").obj(),
            QueueingHint.QUEUE,  # the target itself scaled down
        ),
    ],
    ids=[
        "deleted-unscheduled",
        "deleted-nominated",
        "deleted-bound",
        "bound-scaled-down-cpu",
        "bound-scaled-down-unrelated",
        "unscheduled-scaled-down",
        "target-scaled-down",
    ],
)
def test_pod_event_hint(old: types_pb2.Pod, new: types_pb2.Pod | None, hint: QueueingHint) -> None:
    target = make_pod("t").uid("target").req(cpu="2").obj()
    assert plugin().is_schedulable_after_pod_event(target, old, new) == hint


# ---------------------------------------------------------------- KEP-5836 delta (KEP-5836's fit.go)


def resize_plugin(on: bool = True) -> fit.Fit:
    h = FakeHandle()
    h.fake_gates = resize_gates(on)
    return fit.new({}, h)


def rpe_node(name: str = "node1", cpu: str = "300m", memory: str = "300") -> types_pb2.Node:
    return make_node(name).allocatable(cpu=cpu, memory=memory, pods="10").obj()


def on_node(node: types_pb2.Node, *pods: types_pb2.Pod) -> NodeInfo:
    """The node as the cache has it: every pod (the deferred one too) at its PodRequests size."""
    ni = NodeInfo(node)
    for p in pods:
        ni.add_pod(p)
    return ni


def test_s_rpe_1_delta_over_a_node_the_cache_already_overcommits_is_resolvable() -> None:
    # cache: victim 200m + preemptor max(300, 100, 100) = 500m > 300m.
    me = preemptor()
    ni = on_node(rpe_node(), running("victim-1", "node1", cpu="200m", priority=0), me)
    st = run_filter(resize_plugin(), me, ni)
    assert (st.code, st.reasons) == (Code.UNSCHEDULABLE, ("Insufficient cpu",))


def test_s_rpe_1_without_the_victim_the_resize_fits() -> None:
    me = preemptor()
    assert run_filter(resize_plugin(), me, on_node(rpe_node(), me)).is_success()


def test_the_delta_is_what_the_spec_adds_to_the_cached_copy() -> None:
    # The queue's copy asks 400m; the cache still holds the older 300m: 100m more must fit.
    me = preemptor()
    newer = preemptor(cpu="400m")
    ni = on_node(rpe_node(cpu="450m"), me)
    assert run_filter(resize_plugin(), newer, ni).is_success()  # 300 + 100 <= 450
    ni = on_node(rpe_node(cpu="399m"), me)
    st = run_filter(resize_plugin(), newer, ni)
    assert st.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE  # 400m > 399m allocatable


def test_a_smaller_request_than_the_cached_copy_gives_no_room_back() -> None:
    # max(0, ...): a pending scale-down does not free what the kubelet still holds.
    me = preemptor()
    smaller = preemptor(cpu="150m")
    ni = on_node(rpe_node(), running("other", "node1", cpu="100m"), me)  # 400m on 300m
    assert run_filter(resize_plugin(), smaller, ni).code is Code.UNSCHEDULABLE


def test_unresolvable_only_when_the_request_exceeds_allocatable() -> None:
    # The cache counts 301m on a 300m node: delta 0 does not fit in -1m, and no victim helps.
    me = preemptor(cpu="301m")
    st = run_filter(resize_plugin(), me, on_node(rpe_node(), me))
    assert (st.code, st.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient cpu",))


def test_with_the_gate_off_the_pod_counts_twice_as_before() -> None:
    me = preemptor()
    st = run_filter(resize_plugin(on=False), me, on_node(rpe_node(cpu="500m"), me))
    assert st.code is Code.UNSCHEDULABLE  # 300m cached + 300m again > 500m


def test_the_delta_applies_only_on_the_pods_own_node_and_when_the_node_holds_it() -> None:
    me = preemptor()
    elsewhere = on_node(rpe_node("node2", cpu="500m"), running("x", "node2", cpu="300m"))
    assert run_filter(resize_plugin(), me, elsewhere).code is Code.UNSCHEDULABLE
    missing = on_node(rpe_node(cpu="500m"), running("x", "node1", cpu="300m"))
    assert run_filter(resize_plugin(), me, missing).code is Code.UNSCHEDULABLE


def test_scalar_resources_use_the_delta_too() -> None:
    me = preemptor()
    me.spec.containers[0].resources.requests[EXT_A] = "2"
    me.status.container_statuses[0].allocated_resources[EXT_A] = "2"
    node = make_node("node1").allocatable({EXT_A: "2"}, cpu="300m", memory="300", pods="10").obj()
    assert run_filter(resize_plugin(), me, on_node(node, me)).is_success()
    st = run_filter(resize_plugin(on=False), me, on_node(node, me))
    assert (st.code, st.reasons) == (
        Code.UNSCHEDULABLE,
        ("Insufficient cpu", f"Insufficient {EXT_A}"),
    )


def test_ordinary_pods_never_look_for_themselves_on_the_node() -> None:
    state = CycleState()
    resize_plugin().pre_filter(state, pod(4, 1).obj(), [])
    s = state.read(fit.PRE_FILTER_STATE_KEY)
    assert isinstance(s, fit.PreFilterState) and s.assigned_node == ""
    state = CycleState()
    resize_plugin(on=False).pre_filter(state, preemptor(), [])
    s = state.read(fit.PRE_FILTER_STATE_KEY)
    assert isinstance(s, fit.PreFilterState) and s.assigned_node == ""


# ---------------------------------------------------------------- kemuKubeletLikeResizeAccounting


def kubelet_like_plugin(on: bool = True, gate: bool = True) -> fit.Fit:
    h = FakeHandle()
    h.fake_gates = resize_gates(gate)
    return fit.new({fit.KUBELET_LIKE_RESIZE_ACCOUNTING: on}, h)


def test_kubelet_like_accounting_is_off_by_default() -> None:
    assert resize_plugin().kubelet_like_resize_accounting is False
    assert (
        plugin({fit.KUBELET_LIKE_RESIZE_ACCOUNTING: None}).kubelet_like_resize_accounting is False
    )
    assert kubelet_like_plugin().kubelet_like_resize_accounting is True
    assert kubelet_like_plugin(on=False).kubelet_like_resize_accounting is False


@pytest.mark.parametrize("value", ["true", 1, 0, [True], {"on": True}])
def test_kubelet_like_accounting_must_be_a_boolean(value: object) -> None:
    with pytest.raises(ValueError, match="kemuKubeletLikeResizeAccounting: must be a boolean"):
        plugin({fit.KUBELET_LIKE_RESIZE_ACCOUNTING: value})


def test_kubelet_like_accounting_counts_the_other_pods_at_what_they_hold() -> None:
    # S-RPE-1 shape, the victim itself Deferred 100m -> 200m: the default counts it at 200m
    # (200 + 300 > 300), the kubelet-like accounting at its 100m (100 + 300 > 300 still).
    me = preemptor()
    other = preemptor("other", cpu="200m", actual_cpu="100m", priority=0)
    ni = on_node(rpe_node(cpu="400m"), other, me)
    assert run_filter(resize_plugin(), me, ni).code is Code.UNSCHEDULABLE  # 200 + 300 > 400
    assert run_filter(kubelet_like_plugin(), me, ni).is_success()  # 100 + 300 <= 400
    # Off, the arg leaves today's arithmetic.
    assert run_filter(kubelet_like_plugin(on=False), me, ni).code is Code.UNSCHEDULABLE


def test_kubelet_like_accounting_counts_the_pod_itself_at_its_whole_request() -> None:
    # The deferred pod is at max(desired, allocated, actual) = 300m, not at its 100m held.
    me = preemptor()
    ni = on_node(rpe_node(cpu="399m"), running("other", "node1", cpu="100m"), me)
    st = run_filter(kubelet_like_plugin(), me, ni)
    assert (st.code, st.reasons) == (Code.UNSCHEDULABLE, ("Insufficient cpu",))
    assert run_filter(kubelet_like_plugin(), me, on_node(rpe_node(cpu="400m"), me)).is_success()
    st = run_filter(kubelet_like_plugin(), me, on_node(rpe_node(cpu="299m"), me))
    assert st.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE  # 300m > 299m allocatable


def test_kubelet_like_accounting_sees_pods_removed_from_the_node_in_the_same_cycle() -> None:
    # The dry run's pattern: one PreFilter, then Filter on a copy it removes pods from.
    me = preemptor()
    victim = preemptor("victim", cpu="400m", actual_cpu="100m", priority=0)
    ni = on_node(rpe_node(), victim, me)
    p, state = kubelet_like_plugin(), CycleState()
    p.pre_filter(state, me, [ni])
    assert p.filter(state, me, ni).code is Code.UNSCHEDULABLE  # 100 + 300 > 300
    copy = ni.clone()
    assert copy.remove_pod(victim)
    assert p.filter(state.clone(), me, copy).is_success()
    copy.add_pod_info(ni.pods[0])
    assert p.filter(state.clone(), me, copy).code is Code.UNSCHEDULABLE
    # Filter leaves the node's own sums alone (the cache's: victim 400m + preemptor 300m).
    assert (ni.requested.milli_cpu, copy.requested.milli_cpu) == (700, 700)


def test_kubelet_like_accounting_applies_only_to_the_deferred_pods_own_node() -> None:
    me = preemptor()
    other = preemptor("other", "node2", cpu="200m", actual_cpu="100m", priority=0)
    elsewhere = on_node(rpe_node("node2"), other)  # 200 + 300 > 300 as for any pod
    assert run_filter(kubelet_like_plugin(), me, elsewhere).code is Code.UNSCHEDULABLE
    state = CycleState()
    kubelet_like_plugin().pre_filter(state, pod(4, 1).obj(), [])
    s = state.read(fit.PRE_FILTER_STATE_KEY)
    assert isinstance(s, fit.PreFilterState) and s.held is None and s.assigned_node == ""


def test_kubelet_like_accounting_does_nothing_without_the_gate() -> None:
    me = preemptor()
    other = preemptor("other", cpu="200m", actual_cpu="100m", priority=0)
    ni = on_node(rpe_node(cpu="1000m"), other, me)  # 200 + 300 cached + 300 again
    for p in (kubelet_like_plugin(gate=False), resize_plugin(on=False)):
        state = CycleState()
        p.pre_filter(state, me, [ni])
        s = state.read(fit.PRE_FILTER_STATE_KEY)
        assert isinstance(s, fit.PreFilterState) and s.held is None
    ni = on_node(rpe_node(cpu="700m"), other, me)
    assert run_filter(kubelet_like_plugin(gate=False), me, ni).code is Code.UNSCHEDULABLE


def test_kubelet_like_accounting_checks_scalar_resources_the_same_way() -> None:
    me = preemptor()
    me.spec.containers[0].resources.requests[EXT_A] = "2"
    me.status.container_statuses[0].allocated_resources[EXT_A] = "1"
    me.status.container_statuses[0].resources.requests[EXT_A] = "1"
    other = preemptor("other", cpu="100m", actual_cpu="100m", priority=0)
    other.spec.containers[0].resources.requests[EXT_A] = "3"
    other.status.container_statuses[0].allocated_resources[EXT_A] = "1"
    other.status.container_statuses[0].resources.requests[EXT_A] = "1"
    node = make_node("node1").allocatable({EXT_A: "3"}, cpu="400m", memory="300", pods="10")
    ni = on_node(node.obj(), other, me)
    assert run_filter(kubelet_like_plugin(), me, ni).is_success()  # 1 + 2 <= 3
    st = run_filter(resize_plugin(), me, ni)  # 3 + 2 cached, +0 > 3
    assert (st.code, st.reasons) == (Code.UNSCHEDULABLE, (f"Insufficient {EXT_A}",))


# ---------------------------------------------------------------- KEP-5836 hints (S-RPE-6)


def scaled(p: types_pb2.Pod, cpu: str) -> types_pb2.Pod:
    out = types_pb2.Pod()
    out.CopyFrom(p)
    out.spec.containers[0].resources.requests["cpu"] = cpu
    held = out.status.container_statuses[0]
    held.allocated_resources["cpu"] = cpu
    held.resources.requests["cpu"] = cpu
    return out


DEFERRED = preemptor("deferred", cpu="100m", actual_cpu="50m")
OTHER = running("other-pod", "node1", cpu="200m", priority=2000)
IRRELEVANT = running("irrelevant-pod", "node2", cpu="200m")


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(IRRELEVANT, scaled(IRRELEVANT, "100m"), "SKIP", id="other-node-scale-down"),
        pytest.param(OTHER, scaled(OTHER, "100m"), "QUEUE", id="same-node-scale-down"),
        pytest.param(IRRELEVANT, None, "SKIP", id="other-node-delete"),
        pytest.param(OTHER, None, "QUEUE", id="same-node-delete"),
        pytest.param(DEFERRED, scaled(DEFERRED, "80m"), "QUEUE", id="own-scale-down"),
    ],
)
def test_s_rpe_6_pod_event_hints_look_at_the_deferred_pods_node_only(
    old: types_pb2.Pod, new: types_pb2.Pod | None, expected: str
) -> None:
    assert resize_plugin().is_schedulable_after_pod_event(DEFERRED, old, new).name == expected


PENDING_POD = make_pod("pending").uid("pending").req(cpu="100m").obj()


@pytest.mark.parametrize(
    ("target", "old", "new", "expected"),
    [
        pytest.param(DEFERRED, OTHER, scaled(OTHER, "250m"), "QUEUE", id="same-node-scale-up"),
        pytest.param(
            DEFERRED, IRRELEVANT, scaled(IRRELEVANT, "300m"), "SKIP", id="other-node-scale-up"
        ),
        pytest.param(DEFERRED, DEFERRED, scaled(DEFERRED, "450m"), "QUEUE", id="own-scale-up"),
        pytest.param(PENDING_POD, OTHER, scaled(OTHER, "250m"), "SKIP", id="not-deferred"),
    ],
)
def test_s_rpe_6_scale_up_hints_as_merged(
    target: types_pb2.Pod, old: types_pb2.Pod, new: types_pb2.Pod, expected: str
) -> None:
    """kubernetes#140000's fit.go: isSchedulableAfterAssignedPodScaleUp (same node only) and
    isSchedulableAfterTargetPodScaleUp, for deferred-resize pods only."""
    assert resize_plugin().is_schedulable_after_pod_scale_up(target, old, new).name == expected


def test_s_rpe_6_scale_up_is_registered_only_with_the_gate() -> None:
    def registers_scale_up(plugin: fit.Fit) -> bool:
        up = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_UP)
        return any(e.event.covers(up) for e in plugin.events_to_register())

    assert registers_scale_up(resize_plugin())
    assert not registers_scale_up(resize_plugin(on=False))


def test_s_rpe_6_without_the_gate_other_nodes_still_count() -> None:
    p = resize_plugin(on=False)
    assert p.is_schedulable_after_pod_event(DEFERRED, IRRELEVANT, None).name == "QUEUE"
    assert (
        p.is_schedulable_after_pod_event(DEFERRED, IRRELEVANT, scaled(IRRELEVANT, "100m")).name
        == "QUEUE"
    )


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(rpe_node(cpu="200m"), rpe_node(cpu="1000m"), "QUEUE", id="own-grew"),
        pytest.param(rpe_node(cpu="200m"), rpe_node(cpu="200m"), "SKIP", id="own-unchanged"),
        pytest.param(
            rpe_node("node2", cpu="500m"), rpe_node("node2", cpu="1000m"), "SKIP", id="other-grew"
        ),
        pytest.param(None, rpe_node("node2"), "SKIP", id="other-added"),
        pytest.param(None, rpe_node(), "QUEUE", id="own-added"),
    ],
)
def test_s_rpe_6_node_hints_look_at_the_deferred_pods_node_only(
    old: types_pb2.Node | None, new: types_pb2.Node, expected: str
) -> None:
    assert resize_plugin().is_schedulable_after_node_change(DEFERRED, old, new).name == expected


# ---------------------------------------------------------------- pod-level resources


def pod_level_plugin(enabled: bool) -> fit.Fit:
    handle = FakeHandle()
    handle.fake_gates = FeatureGates.for_version(DEFAULT_VERSION, {POD_LEVEL_RESOURCES: enabled})
    return fit.new({}, handle)


@pytest.mark.parametrize("enabled", [True, False])
def test_filter_counts_pod_level_requests_with_the_gate(enabled: bool) -> None:
    """KEP-2837 (noderesources fit.go computePodResourceRequest with
    SkipPodLevelResources: !EnablePodLevelResources): spec.resources requests replace the
    containers' sum, so a pod asking 3 cpu at pod level does not fit 2 cpu."""
    incoming = make_pod("p").req(cpu="1").pod_req(cpu="3").obj()
    node = big_node("n", "2", "1Gi", {"pods": "10"})
    status = run_filter(pod_level_plugin(enabled), incoming, node)
    if enabled:
        assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == ("Insufficient cpu",)
    else:
        assert status.is_success()


def test_scoring_takes_pod_level_requests_and_defaults_only_what_they_miss() -> None:
    """Scoring's non-zero requests: the pod-level cpu, and the default memory (200Mi) for a
    pod that requests memory nowhere."""
    incoming = make_pod("p").pod_req(cpu="3").obj()
    nodes = [big_node("n", "4", "1Gi")]
    assert scores(pod_level_plugin(True), incoming, nodes) != scores(
        pod_level_plugin(False), incoming, nodes
    )
    state = CycleState()
    p = pod_level_plugin(True)
    assert p.pre_score(state, incoming, nodes).is_success()
    assert p._pod_requests(state, incoming) == (3000, 200 * 1024 * 1024)


def test_s_dra_ext_u1_dra_backed_extended_resource_per_node_and_columns_agree() -> None:
    """DRAExtendedResource: an extended resource a DeviceClass backs is left to
    DynamicResources on a node without it in allocatable; a node that has it (a device
    plugin's) must fit it as before. Filter, filter_columns and reject_columns agree (upstream
    noderesources/fit.go fitsRequest)."""
    gpu = "example.com/gpu"
    nodes = [
        NodeInfo(make_node("none").capacity(cpu="4", memory="8Gi", pods="10").obj()),
        NodeInfo(make_node("full").capacity(cpu="4", memory="8Gi", pods="10", **{gpu: "1"}).obj()),
        NodeInfo(make_node("has").capacity(cpu="4", memory="8Gi", pods="10", **{gpu: "2"}).obj()),
    ]
    taker = make_pod("taker").req({gpu: "1"}).obj()
    nodes[1].add_pod(taker)
    pod = make_pod("p").req({gpu: "1", "cpu": "100m"}).obj()
    backed = fit.Fit(dra_classes=lambda: {gpu: "gpu-class"})
    plain = fit.Fit()
    columns = NodeColumns(nodes, {n.name: i for i, n in enumerate(nodes)})
    rows = np.arange(len(nodes), dtype=np.int64)
    for plugin, want in (
        (backed, [Code.SUCCESS, Code.UNSCHEDULABLE, Code.SUCCESS]),
        (plain, [Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.UNSCHEDULABLE, Code.SUCCESS]),
    ):
        state = CycleState()
        plugin.pre_filter(state, pod, nodes)
        per_node = [plugin.filter(state, pod, n) for n in nodes]
        assert [s.code for s in per_node] == want
        ok = plugin.filter_columns(state, pod, columns, rows)
        assert ok is not None
        assert ok.tolist() == [s.is_success() for s in per_node]
        rejected = plugin.reject_columns(state, pod, columns, rows)
        assert rejected is not None
        which, statuses = rejected
        got = [None if i < 0 else (statuses[i].code, statuses[i].reasons) for i in which.tolist()]
        assert [None if s.is_success() else (s.code, s.reasons) for s in per_node] == got
