"""The preemption API baseline of bench.scheduler_perf (bench.scheduler_perf_baseline): which
runs measure it, the pods it plans, and the calls it makes per preemptor (order, bodies,
events), against kemu's fake client whose pod watch feeds the bind tracker."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import pytest
from google.protobuf.message import Message

from bench.common import jsonable
from bench.scheduler_perf import (
    BIND_ONLY,
    BIND_ONLY_SCHEDULER,
    PREEMPTION_API,
    BindTracker,
    Result,
    baselines,
    preemption_shape,
    render,
    wants_bind_only_baseline,
)
from bench.scheduler_perf_baseline import (
    PREEMPTION_BASELINE_NAMESPACE,
    Calls,
    PreemptionPlan,
    preemption_api_baseline,
    preemption_plan,
    set_up_victims,
)
from bench.scheduler_perf_workloads import WORKLOADS_FILE, Workload, load_workloads
from kemu.api.v1 import types_pb2
from kemu.client.fake import Action, FakeClient
from kemu.testing.builders import make_pod


def _workloads() -> dict[str, Workload]:
    return {w.full_name: w for w in load_workloads(WORKLOADS_FILE)}


def test_auto_measures_the_preemption_baseline_for_preemptionbasic_only() -> None:
    ws = _workloads()
    basic = ws["SchedulingBasic/500Nodes"]
    preemption = ws["PreemptionBasic/10Nodes"]
    ab = ws["PreferNominatedNodeAB/20Nodes"]  # PreemptionBasic's shape, another test case
    assert baselines(basic, "auto") == (BIND_ONLY,)
    assert baselines(preemption, "auto") == (PREEMPTION_API,)
    assert baselines(ab, "auto") == ()
    assert baselines(ab, "always") == (BIND_ONLY, PREEMPTION_API)
    assert baselines(basic, "always") == (BIND_ONLY,)
    assert baselines(preemption, "never") == ()
    assert not wants_bind_only_baseline(preemption, "auto")
    assert wants_bind_only_baseline(preemption, "always")
    with pytest.raises(ValueError, match="bind-only mode: 'maybe'"):
        baselines(preemption, "maybe")


def test_preemptionbasics_shape_names_its_low_op_victims_and_what_a_full_node_lacks() -> None:
    w = _workloads()["PreemptionBasic/500Nodes"]
    shape = preemption_shape(w)
    assert shape is not None
    assert shape.low is w.ops[1] and shape.low_index == 1
    assert shape.victims == 3
    assert shape.insufficient == ("cpu",)  # 4 x 900m + 3000m > 4 cpu; memory and pods fit


def _pods(prefix: str, count: int) -> list[types_pb2.Pod]:
    """Pods as PreemptionBasic's victims: a bound one is removed at once when deleted."""
    out = [make_pod(f"{prefix}{i}").namespace("ns").req(cpu="900m").obj() for i in range(count)]
    for pod in out:
        pod.spec.termination_grace_period_seconds = 0
    return out


def test_the_plan_copies_preemptors_and_victims_for_no_scheduler_round_robin() -> None:
    plan = preemption_plan(_pods("high-", 3), _pods("low-", 4), ["n0", "n1"], 2, "none")
    assert [p.metadata.name for p in plan.preemptors] == [
        "preemptor-high-0",
        "preemptor-high-1",
        "preemptor-high-2",
    ]
    assert plan.nodes == ["n0", "n1", "n0"]
    assert [[v.metadata.name for v in vs] for vs in plan.victims] == [
        ["victim-0-0", "victim-0-1"],
        ["victim-1-0", "victim-1-1"],
        ["victim-2-0", "victim-2-1"],
    ]
    every = plan.preemptors + [v for vs in plan.victims for v in vs]
    assert {p.metadata.namespace for p in every} == {PREEMPTION_BASELINE_NAMESPACE}
    assert {p.spec.scheduler_name for p in every} == {"none"}
    assert plan.message == "0/2 nodes are available: 2 Insufficient cpu."
    with pytest.raises(ValueError, match="needs nodes"):
        preemption_plan(_pods("high-", 1), _pods("low-", 1), [], 1, "none")
    with pytest.raises(ValueError, match="victims per preemptor: 0"):
        preemption_plan(_pods("high-", 1), _pods("low-", 1), ["n0"], 0, "none")


class Events:
    """A recorder that keeps (reason, involved object's name, related object's name)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def event(
        self,
        obj: Message,
        event_type: str,
        reason: str,
        action: str,
        message: str,
        *,
        related: Message | None = None,
    ) -> None:
        name = obj.metadata.name  # type: ignore[attr-defined]
        other = related.metadata.name if related is not None else ""  # type: ignore[attr-defined]
        self.seen.append((reason, name, other))


@asynccontextmanager
async def _watched(client: FakeClient, tracker: BindTracker) -> AsyncIterator[None]:
    """The fake's pod watch delivered to the tracker, as the bench's watch does."""

    async def feed(*, task_status: anyio.abc.TaskStatus[None]) -> None:
        async with client.watch(types_pb2.Pod, resource_version=client.resource_version) as ev:
            task_status.started()
            async for e in ev:
                tracker.observe(e.object, e.type)

    async with anyio.create_task_group() as tg:
        await tg.start(feed)
        yield
        tg.cancel_scope.cancel()


async def _run(
    calls: Calls, *, preemptors: int = 2, victims: int = 3, break_victim: str = ""
) -> tuple[FakeClient, PreemptionPlan, list[list[types_pb2.Pod]], Events, float]:
    client = FakeClient()
    plan = preemption_plan(
        _pods("high-", preemptors), _pods("low-", 4), ["n0", "n1"], victims, BIND_ONLY_SCHEDULER
    )
    stored = await set_up_victims(client, plan, creators=4)
    if break_victim:
        await client.delete(types_pb2.Pod, break_victim, PREEMPTION_BASELINE_NAMESPACE)
    client.clear_actions()
    tracker = BindTracker()
    events = Events()
    async with _watched(client, tracker):
        with anyio.fail_after(5):
            rate = await preemption_api_baseline(
                client, tracker, 7, plan, stored, 2, 5.0, calls=calls, recorder=events
            )
    assert tracker.op_done(7)
    return client, plan, stored, events, rate


def _of(actions: list[Action], name: str) -> list[Action]:
    return [a for a in actions if a.name == name and a.verb != "get"]


@pytest.mark.anyio
async def test_victims_are_set_up_bound_to_their_preemptors_node() -> None:
    client = FakeClient()
    plan = preemption_plan(_pods("high-", 2), _pods("low-", 4), ["n0", "n1"], 3, "none")
    stored = await set_up_victims(client, plan, creators=3)
    assert [[(v.metadata.name, v.spec.node_name) for v in vs] for vs in stored] == [
        [("victim-0-0", "n0"), ("victim-0-1", "n0"), ("victim-0-2", "n0")],
        [("victim-1-0", "n1"), ("victim-1-1", "n1"), ("victim-1-2", "n1")],
    ]
    assert all(v.metadata.resource_version and v.metadata.uid for vs in stored for v in vs)


@pytest.mark.anyio
async def test_each_preemptor_makes_the_schedulers_calls_victims_before_its_binding() -> None:
    client, plan, stored, events, rate = await _run(Calls())
    assert rate > 0 and not math.isnan(rate)
    verbs = [a.verb for a in client.actions if a.resource == "pods" and a.verb != "watch"]
    # Per preemptor: create, 3 x (victim PATCH, DELETE), its status PATCH, bind (as the run's
    # "api pod calls": create=500 bind=500 delete=1500 patch=2000 for 500 preemptors).
    assert sorted(verbs) == sorted(["create"] * 2 + ["patch"] * 8 + ["delete"] * 6 + ["bind"] * 2)
    for i, preemptor in enumerate(plan.preemptors):
        name = preemptor.metadata.name
        own = _of(client.actions, name)
        assert [(a.verb, a.subresource) for a in own] == [
            ("create", ""),
            ("patch", "status"),
            ("bind", "binding"),
        ]
        assert own[2].node_name == plan.nodes[i] and own[2].uid
        status = json.loads(own[1].patch)
        assert status["metadata"]["resourceVersion"]  # the compare-and-swap
        assert status["status"]["nominatedNodeName"] == plan.nodes[i]
        (cond,) = status["status"]["conditions"]
        assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
            "PodScheduled",
            "False",
            "Unschedulable",
            "0/2 nodes are available: 2 Insufficient cpu.",
        )
        bind_at = client.actions.index(own[2])
        last_deletes = []
        for victim in stored[i]:
            calls = _of(client.actions, victim.metadata.name)
            assert [(a.verb, a.subresource) for a in calls] == [
                ("patch", "status"),
                ("delete", ""),
            ]
            body = json.loads(calls[0].patch)
            assert body["metadata"]["resourceVersion"] == victim.metadata.resource_version
            by_type = {c["type"]: c for c in body["status"]["conditions"]}
            assert by_type["PodScheduled"]["status"] == "True"  # the binding's, kept
            target = by_type["DisruptionTarget"]
            assert (target["status"], target["reason"], target["message"]) == (
                "True",
                "PreemptionByScheduler",
                "default-scheduler: preempting to accommodate a higher priority pod",
            )
            assert client.actions.index(calls[1]) < bind_at
            last_deletes.append(client.actions.index(calls[1]))
        # Asynchronous preemption: the last victim's PATCH after the others' DELETEs.
        last_patch = client.actions.index(_of(client.actions, stored[i][-1].metadata.name)[0])
        assert last_patch > max(last_deletes[:-1])
        mine = [e for e in events.seen if e[1] == name or e[2] == name]
        assert sorted(mine) == sorted(
            [("FailedScheduling", name, "")]
            + [("Preempted", v.metadata.name, name) for v in stored[i]]
            + [("Scheduled", name, "")]
        )
        assert mine[-1] == ("Scheduled", name, "")
    remaining = await client.list_all(types_pb2.Pod, PREEMPTION_BASELINE_NAMESPACE)
    assert sorted((p.metadata.name, p.spec.node_name) for p in remaining.items) == [
        (p.metadata.name, node) for p, node in zip(plan.preemptors, plan.nodes, strict=True)
    ]


@pytest.mark.anyio
async def test_without_async_preemption_the_victims_go_before_the_status_patch() -> None:
    client, plan, stored, _, _ = await _run(Calls(async_preemption=False), preemptors=1)
    status_patch = client.actions.index(_of(client.actions, plan.preemptors[0].metadata.name)[1])
    deletes = [client.actions.index(_of(client.actions, v.metadata.name)[1]) for v in stored[0]]
    assert max(deletes) < status_patch


@pytest.mark.anyio
async def test_a_victim_already_gone_fails_the_baseline_naming_the_preemptor() -> None:
    with pytest.raises(ExceptionGroup) as raised:  # through the test's watch task group
        await _run(Calls(), preemptors=1, break_victim="victim-0-1")
    (error,) = raised.value.exceptions
    assert isinstance(error, RuntimeError)
    assert str(error) == (
        "1 preemption baseline preemptors failed; the first: preemptor-high-0: "
        "victim victim-0-1 is gone before its preemption"
    )


@pytest.mark.anyio
async def test_no_preemptors_no_figure_and_victims_are_required() -> None:
    client = FakeClient()
    tracker = BindTracker()
    empty = preemption_plan([], _pods("low-", 1), ["n0"], 1, "none")
    assert math.isnan(await preemption_api_baseline(client, tracker, 1, empty, [], 1, 1.0))
    plan = preemption_plan(_pods("high-", 1), _pods("low-", 1), ["n0"], 1, "none")
    with pytest.raises(ValueError, match="needs victims for every preemptor"):
        await preemption_api_baseline(client, tracker, 1, plan, [], 1, 1.0)


def test_the_baseline_and_the_ratio_are_in_the_json_and_the_table() -> None:
    r = Result(
        "PreemptionBasic/500Nodes",
        created_to_bound=20.0,
        preemption_api_baseline=80.0,
        preemption_baseline_pods=500,
        preemption_baseline_victims=3,
        scheduler_to_limit=0.25,
        baseline_api_calls={"create events": 2500.0, "create pods": 500.0},
        event_calls={"create events": 2500.0},
        preemption_baseline_cpu_cores={"apiserver": 0.97},
    )
    data: dict[str, Any] = json.loads(json.dumps(jsonable([r])))[0]
    keys = list(data)
    assert keys.index("preemption_api_baseline") == keys.index("created_to_bound") + 3
    assert data["preemption_api_baseline"] == 80.0 and data["scheduler_to_limit"] == 0.25
    text = render([r])
    assert "preemption API baseline preemptors/s" in text and "80.0" in text
    assert "scheduler / preemption API" in text and "0.25" in text
    assert "of the baseline (with events)" in text and "event=2500 create=500" in text
    assert "baseline events dropped" in text
    assert "preemption API baseline: cpu apiserver" in text and "0.97" in text
    assert "bind-only" not in text
    basic = Result(
        "SchedulingBasic/5Nodes",
        created_to_bound=150.0,
        bind_only_baseline=300.0,
        scheduler_to_limit=0.5,
    )
    both = render([basic, r])
    line = next(x for x in both.splitlines() if x.startswith("scheduler / preemption API"))
    assert line.split()[-2:] == ["-", "0.25"]
    line = next(x for x in both.splitlines() if x.startswith("scheduler / bind-only"))
    assert line.split()[-2:] == ["0.50", "-"]
