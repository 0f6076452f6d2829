"""The framework runtime with fake plugins: order, Skip, statuses, scores, permit, binding."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.scheduling.interface import CycleState, NodeToStatus
from kemu.scheduling.plugins.registry import Registry
from kemu.scheduling.runtime import MAX_PERMIT_TIMEOUT, Framework, FrameworkOptions
from kemu.scheduling.status import (
    SKIP,
    SUCCESS,
    Code,
    Status,
    as_error,
    unresolvable,
    unschedulable,
    wait,
)
from kemu.scheduling.types import (
    NodeInfo,
    NodeScore,
    PodInfo,
    PostFilterResult,
    PreFilterResult,
)
from kemu.scheduling.waiting_pods import WaitingPodsMap
from kemu.testing.builders import make_node, make_pod
from tests.unit.scheduling.fakes import (
    FakeBatchScore,
    FakeFilter,
    FakeNominator,
    FakePermit,
    FakePostBind,
    FakePostFilter,
    FakePreBind,
    FakePreEnqueue,
    FakePreFilter,
    FakeReserve,
    FakeScore,
    make_profile,
    registry,
)

POD = make_pod("p").uid("uid-p").obj()


def node(name: str = "n1", **labels: str) -> NodeInfo:
    return NodeInfo(make_node(name).capacity(cpu="4", pods=10).labels(labels).obj())


def framework(
    reg: Registry,
    multi_point: list[Any],
    *,
    args: dict[str, dict[str, Any]] | None = None,
    points: dict[str, Any] | None = None,
    calls: list[str] | None = None,
    **kwargs: Any,
) -> Framework:
    """`kwargs`: FrameworkOptions' fields, `nominator`, `snapshot`."""
    profile = make_profile(reg, multi_point, args=args, points=points, calls=calls)
    names = {f.name for f in dataclasses.fields(FrameworkOptions)}
    options = FrameworkOptions(**{k: kwargs.pop(k) for k in list(kwargs) if k in names})
    return Framework(profile, reg, options=options, **kwargs)


def boom(*_: Any) -> Status:
    raise RuntimeError("kaboom")


# ---------------------------------------------------------------- construction and handle


def test_one_instance_per_plugin_even_when_it_serves_several_points() -> None:
    reg = registry(Both=FakePreFilter)
    fwk = framework(reg, ["Both"])
    assert fwk.list_plugins()["preFilter"] == ("Both",)
    assert fwk.list_plugins()["filter"] == ("Both",)
    plugin = fwk.plugin("Both")
    assert plugin is not None
    # (each method is wrapped once by the runtime's exception guard: functools.wraps)
    assert getattr(inspect.unwrap(fwk._points.pre_filter[0][1]), "__self__", None) is plugin
    assert getattr(inspect.unwrap(fwk._points.filter[0][1]), "__self__", None) is plugin
    assert getattr(plugin, "handle", None) is fwk


def test_a_factory_that_refuses_its_args_is_a_startup_error() -> None:
    class Picky(FakeFilter):
        def __init__(self, args: Any, handle: Any) -> None:
            raise ValueError("scoringStrategy.type: unknown 'Fastest'")

    reg = registry()
    reg["Picky"] = Picky
    profile = make_profile(reg, ["Picky"])
    with pytest.raises(ValueError, match=r"initializing plugin \"Picky\": scoringStrategy"):
        Framework(profile, reg)


def test_handle_accessors() -> None:
    factory = object()
    fwk = framework(registry(), [], informer_factory=factory)
    assert fwk.profile_name() == "test"
    assert fwk.informer_factory() is factory
    assert fwk.nominator() is None
    with pytest.raises(RuntimeError, match="no API client"):
        _ = fwk.client
    with pytest.raises(RuntimeError, match="snapshot"):
        fwk.snapshot_shared_lister()
    snapshot: Any = object()
    fwk.set_snapshot(snapshot)
    assert fwk.snapshot_shared_lister() is snapshot
    assert not fwk.has_filter_plugins()
    assert not fwk.has_score_plugins()
    assert not fwk.has_post_filter_plugins()


def test_queue_sort_func_is_the_plugins_less() -> None:
    from kemu.scheduling.interface import QueuedPodInfo

    fwk = framework(registry(), [])
    hi = QueuedPodInfo(PodInfo(make_pod("hi").priority(10).obj()), timestamp=0)
    lo = QueuedPodInfo(PodInfo(make_pod("lo").priority(1).obj()), timestamp=0)
    less = fwk.queue_sort_func()
    assert less(hi, lo) and not less(lo, hi)


def test_enqueue_plugins_are_those_that_can_reject_each_once() -> None:
    reg = registry(Gate=FakePreEnqueue, Both=FakePreFilter, Sc=FakeScore, Res=FakeReserve)
    fwk = framework(reg, ["Gate", "Both", "Sc", "Res"])
    assert [p.name() for p in fwk.enqueue_plugins()] == ["Gate", "Both", "Res"]


# ---------------------------------------------------------------- PreEnqueue


def test_pre_enqueue_first_refusal_names_plugin_and_gating_plugin_runs_first() -> None:
    calls: list[str] = []
    reg = registry(A=FakePreEnqueue, B=FakePreEnqueue)
    gated = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("waiting for gates",))
    fwk = framework(reg, ["A", "B"], args={"B": {"pre_enqueue": gated}}, calls=calls)
    s = fwk.run_pre_enqueue_plugins(POD)
    assert s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and s.plugin == "B"
    assert calls == ["A.pre_enqueue", "B.pre_enqueue"]
    calls.clear()
    fwk.run_pre_enqueue_plugins(POD, gating_plugin="B")
    assert calls == ["B.pre_enqueue"]


# ---------------------------------------------------------------- PreFilter / Filter


def test_pre_filter_skip_skips_that_plugins_filter_and_extensions() -> None:
    calls: list[str] = []
    reg = registry(A=FakePreFilter, B=FakePreFilter)
    fwk = framework(reg, ["A", "B"], args={"A": {"pre_filter": SKIP}}, calls=calls)
    state = CycleState()
    result, status, plugins = fwk.run_pre_filter_plugins(state, POD, [node()])
    assert status.is_success() and result is None and plugins == set()
    assert state.skip_filter_plugins == {"A"}
    calls.clear()
    assert fwk.run_filter_plugins(state, POD, node()).is_success()
    assert calls == ["B.filter"]
    calls.clear()
    other = PodInfo(make_pod("o").uid("o").obj())
    assert fwk.run_pre_filter_extension_add_pod(state, POD, other, node()).is_success()
    assert fwk.run_pre_filter_extension_remove_pod(state, POD, other, node()).is_success()
    assert calls == ["B.add_pod", "B.remove_pod"]


def test_pre_filter_unschedulable_runs_the_others_and_records_the_plugin() -> None:
    calls: list[str] = []
    reg = registry(A=FakePreFilter, B=FakePreFilter)
    fwk = framework(
        reg, ["A", "B"], args={"A": {"pre_filter": unschedulable("too big")}}, calls=calls
    )
    _, status, plugins = fwk.run_pre_filter_plugins(CycleState(), POD, [node()])
    assert status.code == Code.UNSCHEDULABLE and status.plugin == "A"
    assert status.message() == "too big"
    assert plugins == {"A"}
    assert calls == ["A.pre_filter", "B.pre_filter"]


def test_pre_filter_unresolvable_stops_at_once() -> None:
    calls: list[str] = []
    reg = registry(A=FakePreFilter, B=FakePreFilter)
    fwk = framework(reg, ["A", "B"], args={"A": {"pre_filter": unresolvable("no")}}, calls=calls)
    _, status, plugins = fwk.run_pre_filter_plugins(CycleState(), POD, [node()])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and status.plugin == "A"
    assert plugins == {"A"}
    assert calls == ["A.pre_filter"]


@pytest.mark.parametrize(
    ("a", "b", "expected_nodes", "message"),
    [
        (None, None, None, ""),
        (frozenset({"n1", "n2"}), None, frozenset({"n1", "n2"}), ""),
        (frozenset({"n1", "n2"}), frozenset({"n2", "n3"}), frozenset({"n2"}), ""),
        (frozenset(), None, frozenset(), "node(s) didn't satisfy plugin A"),
        (
            frozenset({"n1"}),
            frozenset({"n2"}),
            frozenset(),
            "node(s) didn't satisfy plugin(s) [A B] simultaneously",
        ),
    ],
)
def test_pre_filter_results_are_intersected(
    a: frozenset[str] | None,
    b: frozenset[str] | None,
    expected_nodes: frozenset[str] | None,
    message: str,
) -> None:
    reg = registry(A=FakePreFilter, B=FakePreFilter)
    fwk = framework(
        reg,
        ["A", "B"],
        args={
            "A": {"pre_filter_result": PreFilterResult(a)},
            "B": {"pre_filter_result": PreFilterResult(b)},
        },
    )
    result, status, plugins = fwk.run_pre_filter_plugins(CycleState(), POD, [node()])
    if expected_nodes is None:
        assert result is None or result.all_nodes()
    else:
        assert result is not None and result.node_names == expected_nodes
    if message:
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.message() == message
    else:
        assert status.is_success()
    assert plugins == {n for n, v in (("A", a), ("B", b)) if v is not None}


def test_pre_filter_exception_or_error_becomes_error_naming_plugin() -> None:
    reg = registry(A=FakePreFilter)
    fwk = framework(reg, ["A"], args={"A": {"pre_filter": boom}})
    _, status, _ = fwk.run_pre_filter_plugins(CycleState(), POD, [node()])
    assert status.is_error() and status.plugin == "A"
    assert status.message() == 'running PreFilter plugin "A": kaboom'
    assert isinstance(status.error, RuntimeError)


def test_first_filter_rejection_wins_and_names_its_plugin() -> None:
    calls: list[str] = []
    reg = registry(A=FakeFilter, B=FakeFilter, C=FakeFilter)
    fwk = framework(
        reg,
        ["A", "B", "C"],
        args={"B": {"filter": unschedulable("no room")}, "C": {"filter": unresolvable("x")}},
        calls=calls,
    )
    s = fwk.run_filter_plugins(CycleState(), POD, node())
    assert s.code == Code.UNSCHEDULABLE and s.plugin == "B" and s.message() == "no room"
    assert calls == ["A.filter", "B.filter"]


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        (boom, 'running "A" filter plugin: kaboom'),
        (as_error("bad state"), 'running "A" filter plugin: bad state'),
        (wait(), 'running "A" filter plugin: Wait'),
    ],
)
def test_filter_failures_become_error_statuses_naming_the_plugin(
    behaviour: Any, message: str
) -> None:
    reg = registry(A=FakeFilter)
    fwk = framework(reg, ["A"], args={"A": {"filter": behaviour}})
    s = fwk.run_filter_plugins(CycleState(), POD, node())
    assert s.is_error() and s.plugin == "A" and s.message() == message


# ---------------------------------------------------------------- nominated pods (RunFilterPluginsWithNominatedPods)


class PodCount(FakePreFilter):
    """Filter: at most `max` pods on the node (stands in for NodeResourcesFit)."""

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        self.calls.append(f"{self.NAME}.filter:{len(node.pods)}")
        return SUCCESS if len(node.pods) < self.args["max"] else unschedulable("Too many pods")


class NeedsBuddy(FakePreFilter):
    """Filter: the node must run a pod labelled app=buddy (stands in for pod affinity)."""

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        self.calls.append(f"{self.NAME}.filter:{len(node.pods)}")
        if any(p.pod.metadata.labels.get("app") == "buddy" for p in node.pods):
            return SUCCESS
        return unresolvable("node(s) didn't match pod affinity rules")


def nominated(name: str, priority: int, **labels: str) -> PodInfo:
    return PodInfo(make_pod(name).uid(f"uid-{name}").priority(priority).labels(labels).obj())


@pytest.mark.parametrize(
    ("nominated_pods", "fits"),
    [
        ([], True),
        ([nominated("hi", 20)], False),  # higher priority nominated pod takes the last slot
        ([nominated("eq", 10)], False),  # equal priority too
        ([nominated("lo", 5)], True),  # lower priority ones are ignored
    ],
)
def test_nominated_pods_of_at_least_the_pods_priority_count_as_running(
    nominated_pods: list[PodInfo], fits: bool
) -> None:
    reg = registry(Count=PodCount)
    nominator = FakeNominator({"n1": nominated_pods})
    fwk = framework(reg, ["Count"], args={"Count": {"max": 1}}, nominator=nominator)
    pod = make_pod("p").uid("uid-p").priority(10).obj()
    s = fwk.run_filter_plugins_with_nominated_pods(CycleState(), pod, node())
    assert s.is_success() == fits
    if not fits:
        assert s.plugin == "Count"


def test_the_pod_itself_nominated_to_the_node_is_not_counted() -> None:
    reg = registry(Count=PodCount)
    pod = make_pod("p").uid("uid-p").priority(10).obj()
    fwk = framework(
        reg,
        ["Count"],
        args={"Count": {"max": 1}},
        nominator=FakeNominator({"n1": [PodInfo(pod)]}),
    )
    assert fwk.run_filter_plugins_with_nominated_pods(CycleState(), pod, node()).is_success()


def test_nominated_pods_are_added_to_copies_and_reported_to_pre_filter_extensions() -> None:
    calls: list[str] = []
    reg = registry(Count=PodCount)
    fwk = framework(
        reg,
        ["Count"],
        args={"Count": {"max": 5}},
        nominator=FakeNominator({"n1": [nominated("hi", 20)]}),
        calls=calls,
    )
    state, info = CycleState(), node()
    s = fwk.run_filter_plugins_with_nominated_pods(state, POD, info)
    assert s.is_success()
    # First pass with the nominated pod (AddPod told), second pass without it.
    assert calls == ["Count.add_pod", "Count.filter:1", "Count.filter:0"]
    assert info.pods == []


def test_a_pod_that_needs_a_nominated_pod_must_also_pass_without_it() -> None:
    calls: list[str] = []
    reg = registry(Buddy=NeedsBuddy)
    fwk = framework(
        reg,
        ["Buddy"],
        nominator=FakeNominator({"n1": [nominated("buddy", 20, app="buddy")]}),
        calls=calls,
    )
    s = fwk.run_filter_plugins_with_nominated_pods(CycleState(), POD, node())
    assert s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and s.plugin == "Buddy"
    assert calls == ["Buddy.add_pod", "Buddy.filter:1", "Buddy.filter:0"]


def test_one_pass_when_first_pass_fails_or_no_nominator() -> None:
    calls: list[str] = []
    reg = registry(Count=PodCount)
    fwk = framework(
        reg,
        ["Count"],
        args={"Count": {"max": 1}},
        nominator=FakeNominator({"n1": [nominated("hi", 20)]}),
        calls=calls,
    )
    assert not fwk.run_filter_plugins_with_nominated_pods(CycleState(), POD, node()).is_success()
    assert calls == ["Count.add_pod", "Count.filter:1"]
    calls.clear()
    fwk.set_nominator(None)
    assert fwk.run_filter_plugins_with_nominated_pods(CycleState(), POD, node()).is_success()
    assert calls == ["Count.filter:0"]


def test_add_pod_failure_is_an_error() -> None:
    reg = registry(Count=PodCount)
    fwk = framework(
        reg,
        ["Count"],
        args={"Count": {"max": 5, "add_pod": boom}},
        nominator=FakeNominator({"n1": [nominated("hi", 20)]}),
    )
    s = fwk.run_filter_plugins_with_nominated_pods(CycleState(), POD, node())
    assert s.is_error() and s.message() == 'running AddPod on PreFilter plugin "Count": kaboom'


# ---------------------------------------------------------------- PostFilter


@pytest.mark.anyio
async def test_post_filter_stops_at_first_success() -> None:
    calls: list[str] = []
    reg = registry(A=FakePostFilter, B=FakePostFilter, C=FakePostFilter)
    fwk = framework(
        reg,
        ["A", "B", "C"],
        args={
            "A": {"post_filter": unschedulable("no victims")},
            "B": {"post_filter_result": PostFilterResult("n2")},
        },
        calls=calls,
    )
    result, s = await fwk.run_post_filter_plugins(CycleState(), POD, NodeToStatus())
    assert s.is_success() and result == PostFilterResult("n2")
    assert calls == ["A.post_filter", "B.post_filter"]


@pytest.mark.anyio
async def test_post_filter_rejections_collect_reasons_and_name_the_first() -> None:
    reg = registry(A=FakePostFilter, B=FakePostFilter)
    fwk = framework(
        reg,
        ["A", "B"],
        args={
            "A": {"post_filter": unschedulable("a")},
            "B": {"post_filter": unschedulable("b"), "post_filter_result": PostFilterResult("")},
        },
    )
    result, s = await fwk.run_post_filter_plugins(CycleState(), POD, NodeToStatus())
    assert s.code == Code.UNSCHEDULABLE and s.reasons == ("a", "b") and s.plugin == "A"
    assert result == PostFilterResult("")


@pytest.mark.anyio
async def test_post_filter_exception_is_an_error() -> None:
    reg = registry(A=FakePostFilter)
    fwk = framework(reg, ["A"], args={"A": {"post_filter": boom}})
    result, s = await fwk.run_post_filter_plugins(CycleState(), POD, NodeToStatus())
    assert result is None and s.is_error() and s.plugin == "A"


# ---------------------------------------------------------------- PreScore / Score


def test_pre_score_skip_skips_that_plugins_score() -> None:
    calls: list[str] = []
    reg = registry(A=FakeScore, B=FakeScore)
    fwk = framework(reg, ["A", "B"], args={"A": {"pre_score": SKIP}}, calls=calls)
    state = CycleState()
    assert fwk.run_pre_score_plugins(state, POD, [node()]).is_success()
    assert state.skip_score_plugins == {"A"}
    calls.clear()
    scores, s = fwk.run_score_plugins(state, POD, [node()])
    assert s.is_success()
    assert calls == ["B.score"]
    assert scores[0].scores == {"B": 0}


def test_pre_score_rejection_is_an_error() -> None:
    reg = registry(A=FakeScore)
    fwk = framework(reg, ["A"], args={"A": {"pre_score": unschedulable("x")}})
    s = fwk.run_pre_score_plugins(CycleState(), POD, [node()])
    assert s.is_error() and s.message() == 'running PreScore plugin "A": x'


def test_scores_are_normalized_then_weighted_and_summed() -> None:
    def halve(scores: list[NodeScore]) -> tuple[list[NodeScore], Status]:
        return [NodeScore(s.name, s.score // 2) for s in scores], SUCCESS

    raw = {"n1": 100, "n2": 40, "n3": 0}
    reg = registry(A=FakeScore, B=FakeScore)
    fwk = framework(
        reg,
        [("A", 2), ("B", 3)],
        args={
            "A": {"score": lambda n: raw[n.name], "normalize": halve},
            "B": {"score": lambda n: 10 if n.name == "n3" else 0},
        },
    )
    nodes = [node("n1"), node("n2"), node("n3")]
    scores, s = fwk.run_score_plugins(CycleState(), POD, nodes)
    assert s.is_success()
    assert [(x.name, x.total_score) for x in scores] == [("n1", 100), ("n2", 40), ("n3", 30)]
    assert scores[2].scores == {"A": 0, "B": 30}


def test_a_plugin_with_score_nodes_is_called_once_for_all_nodes() -> None:
    calls: list[int] = []

    def batch(nodes: list[NodeInfo]) -> list[int]:
        calls.append(len(nodes))
        return [10 * (i + 1) for i in range(len(nodes))]

    fwk = framework(
        registry(A=FakeBatchScore),
        [("A", 1)],
        args={"A": {"score": boom, "score_nodes": batch}},
    )
    nodes = [node("n1"), node("n2"), node("n3")]
    scores, s = fwk.run_score_plugins(CycleState(), POD, nodes)
    assert s.is_success() and calls == [3]
    assert [x.total_score for x in scores] == [10, 20, 30]
    failing = framework(
        registry(A=FakeBatchScore),
        [("A", 1)],
        args={"A": {"score_nodes": lambda nodes: Status(Code.ERROR, ("nope",))}},
    )
    _, s = failing.run_score_plugins(CycleState(), POD, nodes)
    assert s.is_error() and "nope" in s.message()


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        (
            {"score": 101},
            'applying score defaultWeights on Score plugins: plugin "A" returns an invalid '
            "score 101, it should in the range of [0, 100] after normalizing",
        ),
        ({"score": boom}, 'running Score plugins: plugin "A" failed with: kaboom'),
        (
            {"score": (0, as_error("nope"))},
            'running Score plugins: plugin "A" failed with: nope',
        ),
        (
            {"normalize": boom},
            'running Normalize on Score plugins: plugin "A" failed with: kaboom',
        ),
    ],
)
def test_score_failures_are_errors(behaviour: dict[str, Any], message: str) -> None:
    reg = registry(A=FakeScore)
    fwk = framework(reg, ["A"], args={"A": behaviour})
    scores, s = fwk.run_score_plugins(CycleState(), POD, [node()])
    assert scores == [] and s.is_error() and s.plugin == "A" and s.message() == message


# ---------------------------------------------------------------- Reserve / Permit


def test_reserve_in_order_and_unreserve_in_reverse() -> None:
    calls: list[str] = []
    reg = registry(A=FakeReserve, B=FakeReserve, C=FakeReserve)
    fwk = framework(
        reg, ["A", "B", "C"], args={"B": {"reserve": unschedulable("taken")}}, calls=calls
    )
    s = fwk.run_reserve_plugins_reserve(CycleState(), POD, "n1")
    assert s.code == Code.UNSCHEDULABLE and s.plugin == "B"
    assert calls == ["A.reserve", "B.reserve"]
    calls.clear()
    fwk.run_reserve_plugins_unreserve(CycleState(), POD, "n1")
    assert calls == ["C.unreserve", "B.unreserve", "A.unreserve"]


def test_unreserve_goes_on_when_a_plugin_raises() -> None:
    calls: list[str] = []
    reg = registry(A=FakeReserve, B=FakeReserve)
    fwk = framework(reg, ["A", "B"], args={"B": {"unreserve": boom}}, calls=calls)
    fwk.run_reserve_plugins_unreserve(CycleState(), POD, "n1")
    assert calls == ["B.unreserve", "A.unreserve"]


def test_reserve_error_is_wrapped() -> None:
    reg = registry(A=FakeReserve)
    fwk = framework(reg, ["A"], args={"A": {"reserve": boom}})
    s = fwk.run_reserve_plugins_reserve(CycleState(), POD, "n1")
    assert s.is_error() and s.message() == 'running Reserve plugin "A": kaboom'


def permit_framework(
    clock: FakeClock, **plugin_args: dict[str, Any]
) -> tuple[Framework, WaitingPodsMap]:
    names = sorted(plugin_args)
    reg = registry(**dict.fromkeys(names, FakePermit))
    waiting = WaitingPodsMap()
    fwk = framework(reg, names, args=plugin_args, clock=clock, waiting_pods=waiting)
    return fwk, waiting


@pytest.mark.anyio
async def test_permit_success_and_rejection() -> None:
    clock = FakeClock()
    fwk, _ = permit_framework(clock, A={}, B={"permit": unschedulable("not yet")})
    s = fwk.run_permit_plugins(CycleState(), POD, "n1")
    assert s.code == Code.UNSCHEDULABLE and s.plugin == "B"
    assert not fwk.will_wait_on_permit(POD)
    assert (await fwk.wait_on_permit(POD)).is_success()


@pytest.mark.anyio
async def test_permit_wait_then_every_waiting_plugin_allows() -> None:
    clock = FakeClock()
    fwk, _ = permit_framework(
        clock, A={"permit": wait(), "timeout": 10}, B={"permit": wait(), "timeout": 20}
    )
    s = fwk.run_permit_plugins(CycleState(), POD, "n1")
    assert s.is_wait()
    assert s.message() == 'one or more plugins asked to wait and no plugin rejected pod "p"'
    assert fwk.will_wait_on_permit(POD)
    wp = fwk.get_waiting_pod("uid-p")
    assert wp is not None and sorted(wp.pending_plugins()) == ["A", "B"]
    assert [w.pod.metadata.name for w in fwk.iterate_over_waiting_pods()] == ["p"]

    outcome: list[Status] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def waiter() -> None:
                outcome.append(await fwk.wait_on_permit(POD))

            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            wp.allow("A")
            await anyio.wait_all_tasks_blocked()
            assert outcome == []
            wp.allow("B")
    assert outcome == [SUCCESS]
    assert not fwk.will_wait_on_permit(POD)
    assert clock.sleepers == 0  # the timeout sleep went with the wait


@pytest.mark.anyio
async def test_permit_waiting_pod_rejected() -> None:
    clock = FakeClock()
    fwk, _ = permit_framework(clock, A={"permit": wait(), "timeout": 10})
    fwk.run_permit_plugins(CycleState(), POD, "n1")
    outcome: list[Status] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def waiter() -> None:
                outcome.append(await fwk.wait_on_permit(POD))

            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            assert fwk.reject_waiting_pod("uid-p")
    (s,) = outcome
    assert s.code == Code.UNSCHEDULABLE and s.message() == "removed"
    assert not fwk.reject_waiting_pod("uid-p")


@pytest.mark.anyio
async def test_permit_a_decision_before_the_wait_is_kept() -> None:
    clock = FakeClock()
    fwk, _ = permit_framework(clock, A={"permit": wait(), "timeout": 10})
    fwk.run_permit_plugins(CycleState(), POD, "n1")
    wp = fwk.get_waiting_pod("uid-p")
    assert wp is not None
    wp.reject("A", "rejected while waiting on permit")
    wp.allow("A")  # too late: the first outcome wins
    with anyio.fail_after(5):
        s = await fwk.wait_on_permit(POD)
    assert s == Status(Code.UNSCHEDULABLE, ("rejected while waiting on permit",), "A")


@pytest.mark.anyio
async def test_permit_the_shortest_pending_timeout_rejects() -> None:
    clock = FakeClock()
    fwk, _ = permit_framework(
        clock, A={"permit": wait(), "timeout": 30}, B={"permit": wait(), "timeout": 5}
    )
    fwk.run_permit_plugins(CycleState(), POD, "n1")
    outcome: list[Status] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def waiter() -> None:
                outcome.append(await fwk.wait_on_permit(POD))

            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            clock.advance(4.9)
            await anyio.wait_all_tasks_blocked()
            assert outcome == []
            clock.advance(0.1)
    (s,) = outcome
    assert s.code == Code.UNSCHEDULABLE and s.plugin == "B"
    assert s.message() == "rejected due to timeout after waiting 5s at plugin B"


@pytest.mark.anyio
async def test_permit_after_the_short_waiter_allows_the_long_timeout_applies() -> None:
    clock = FakeClock()
    fwk, _ = permit_framework(
        clock, A={"permit": wait(), "timeout": 90}, B={"permit": wait(), "timeout": 5}
    )
    fwk.run_permit_plugins(CycleState(), POD, "n1")
    wp = fwk.get_waiting_pod("uid-p")
    assert wp is not None
    outcome: list[Status] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def waiter() -> None:
                outcome.append(await fwk.wait_on_permit(POD))

            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            wp.allow("B")
            clock.advance(60)
            await anyio.wait_all_tasks_blocked()
            assert outcome == []
            clock.advance(30)
    (s,) = outcome
    assert s.plugin == "A"
    assert s.message() == "rejected due to timeout after waiting 1m30s at plugin A"


@pytest.mark.anyio
async def test_permit_timeout_counts_from_permit_and_is_capped() -> None:
    clock = FakeClock()
    fwk, _ = permit_framework(clock, A={"permit": wait(), "timeout": 3600})
    fwk.run_permit_plugins(CycleState(), POD, "n1")
    clock.advance(MAX_PERMIT_TIMEOUT)  # before anyone waits
    with anyio.fail_after(5):
        s = await fwk.wait_on_permit(POD)
    assert s.message() == "rejected due to timeout after waiting 15m0s at plugin A"


def test_permit_exception_is_an_error_naming_plugin() -> None:
    fwk, _ = permit_framework(FakeClock(), A={"permit": boom})
    s = fwk.run_permit_plugins(CycleState(), POD, "n1")
    assert s.is_error() and s.plugin == "A"
    assert not fwk.will_wait_on_permit(POD)


# ---------------------------------------------------------------- PreBind / Bind / PostBind


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("a", "b", "code", "runs"),
    [
        (SKIP, SKIP, Code.SKIP, []),
        (SKIP, SUCCESS, Code.SUCCESS, ["B.pre_bind"]),
        (SUCCESS, SUCCESS, Code.SUCCESS, ["A.pre_bind", "B.pre_bind"]),
        (as_error("broken"), SUCCESS, Code.ERROR, None),
        (unschedulable("no"), SUCCESS, Code.ERROR, None),
    ],
)
async def test_pre_bind_pre_flights(
    a: Status, b: Status, code: Code, runs: list[str] | None
) -> None:
    calls: list[str] = []
    reg = registry(A=FakePreBind, B=FakePreBind)
    fwk = framework(
        reg, ["A", "B"], args={"A": {"pre_flight": a}, "B": {"pre_flight": b}}, calls=calls
    )
    state = CycleState()
    s = fwk.run_pre_bind_pre_flights(state, POD, "n1")
    assert s.code == code
    if runs is None:
        assert s.plugin == "A"
        return
    calls.clear()
    assert (await fwk.run_pre_bind_plugins(state, POD, "n1")).is_success()
    assert calls == runs


@pytest.mark.anyio
async def test_pre_bind_rejection_names_plugin_and_exception_is_error() -> None:
    reg = registry(A=FakePreBind, B=FakePreBind)
    fwk = framework(reg, ["A", "B"], args={"A": {"pre_bind": unschedulable("full")}})
    s = await fwk.run_pre_bind_plugins(CycleState(), POD, "n1")
    assert s.code == Code.UNSCHEDULABLE and s.plugin == "A"
    fwk = framework(reg, ["A", "B"], args={"B": {"pre_bind": boom}})
    s = await fwk.run_pre_bind_plugins(CycleState(), POD, "n1")
    assert s.is_error() and s.message() == 'running PreBind plugin "B": kaboom'


@pytest.mark.anyio
async def test_pre_bind_of_a_registered_pod_is_cancellable_until_prebound() -> None:
    """kemu.scheduling.pods_in_pre_bind: a cancellation that came first fails PreBind as a
    cancelled context would ("context canceled", naming the last plugin run); without one the
    pod is marked prebound and no longer cancellable."""
    reg = registry(A=FakePreBind, B=FakePreBind)
    fwk = framework(reg, ["A", "B"])
    entry = fwk.add_pod_in_pre_bind(POD.metadata.uid)
    assert fwk.get_pod_in_pre_bind(POD.metadata.uid) is entry
    assert entry.cancel_pod("preempted by DefaultPreemption")
    s = await fwk.run_pre_bind_plugins(CycleState(), POD, "n1")
    assert (s.code, s.plugin, s.message()) == (
        Code.ERROR,
        "B",
        'running PreBind plugin "B": context canceled',
    )
    fwk.remove_pod_in_pre_bind(POD.metadata.uid)
    assert fwk.get_pod_in_pre_bind(POD.metadata.uid) is None

    entry = fwk.add_pod_in_pre_bind(POD.metadata.uid)
    assert (await fwk.run_pre_bind_plugins(CycleState(), POD, "n1")).is_success()
    assert not entry.cancel_pod("too late")
    assert entry.cause is None


@pytest.mark.anyio
async def test_bind_first_plugin_that_does_not_skip_binds() -> None:
    calls: list[str] = []
    reg = registry(X=FakeBinderLike, Y=FakeBinderLike)
    fwk = framework(
        reg,
        [],
        points={
            "bind": {"enabled": [{"name": "X"}, {"name": "Y"}], "disabled": [{"name": "Binder"}]}
        },
        args={"X": {"bind": SKIP}},
        calls=calls,
    )
    assert fwk.list_plugins()["bind"] == ("X", "Y")
    s = await fwk.run_bind_plugins(CycleState(), POD, "n1")
    assert s.is_success() and s.plugin == "Y"
    assert calls == ["X.bind", "Y.bind"]


@pytest.mark.anyio
async def test_bind_all_skip_is_skip_and_errors_are_wrapped() -> None:
    reg = registry(X=FakeBinderLike)
    fwk = framework(
        reg,
        [],
        points={"bind": {"enabled": [{"name": "X"}]}},
        args={"X": {"bind": SKIP}, "Binder": {"bind": SKIP}},
    )
    assert (await fwk.run_bind_plugins(CycleState(), POD, "n1")).is_skip()
    fwk = framework(reg, [], args={"Binder": {"bind": boom}})
    s = await fwk.run_bind_plugins(CycleState(), POD, "n1")
    assert s.is_error() and s.message() == 'running Bind plugin "Binder": kaboom'


def test_post_bind_runs_all_even_when_one_raises() -> None:
    calls: list[str] = []
    reg = registry(A=FakePostBind, B=FakePostBind)
    fwk = framework(reg, ["A", "B"], args={"A": {"post_bind": boom}}, calls=calls)
    fwk.run_post_bind_plugins(CycleState(), POD, "n1")
    assert calls == ["A.post_bind", "B.post_bind"]


# ---------------------------------------------------------------- metrics


@pytest.mark.anyio
async def test_extension_points_are_observed_with_status_and_profile() -> None:
    seen: list[tuple[str, str, str]] = []

    def observe(point: str, status: str, profile: str, seconds: float) -> None:
        assert seconds >= 0
        seen.append((point, status, profile))

    reg = registry(A=FakePreFilter, R=FakeReserve)
    fwk = framework(reg, ["A", "R"], args={"R": {"reserve": unschedulable("x")}}, observe=observe)
    state = CycleState()
    fwk.run_pre_filter_plugins(state, POD, [node()])
    fwk.run_filter_plugins(state, POD, node())  # not timed per node
    fwk.run_reserve_plugins_reserve(state, POD, "n1")
    await fwk.run_bind_plugins(state, POD, "n1")
    assert seen == [
        ("PreFilter", "Success", "test"),
        ("Reserve", "Unschedulable", "test"),
        ("Bind", "Success", "test"),
    ]


# A second bind-capable fake, so several binders can be configured at the bind point.
from tests.unit.scheduling.fakes import FakeBinder as FakeBinderLike  # noqa: E402
