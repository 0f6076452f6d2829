"""The bind-only baseline of bench.scheduler_perf: which runs measure it, the pods it creates,
and its plumbing (creates, round-robin bindings, the rate, the ratio in the table and JSON),
against a fake client that feeds the bind tracker as a watch would."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from bench.common import jsonable
from bench.scheduler_perf import (
    BIND_ONLY_NAMESPACE,
    BIND_ONLY_SCHEDULER,
    BindTracker,
    Result,
    bind_only_baseline,
    bind_only_pods,
    build_parser,
    render,
    wants_bind_only_baseline,
)
from bench.scheduler_perf_workloads import parse_workloads
from kemu.api.v1 import types_pb2
from kemu.machinery.errors import NotFound
from kemu.testing.builders import make_pod
from tests.unit.scheduler.harness import Recorder

WORKLOADS = """
- name: SchedulingBasic
  labels: [base]
  workloadTemplate:
  - opcode: createNodes
    countParam: $initNodes
  - opcode: createPods
    countParam: $measurePods
    collectMetrics: true
  workloads:
  - name: 5Nodes
    params: {initNodes: 5, measurePods: 7}
- name: SchedulingPodAffinity
  labels: [base]
  workloadTemplate:
  - opcode: createNodes
    countParam: $initNodes
  - opcode: createPods
    countParam: $measurePods
    collectMetrics: true
  workloads:
  - name: 5Nodes
    params: {initNodes: 5, measurePods: 7}
- name: SchedulingBasicNoMeasure
  labels: [base]
  workloadTemplate:
  - opcode: createNodes
    countParam: $initNodes
  workloads:
  - name: 5Nodes
    params: {initNodes: 5}
"""


class Clock:
    def __init__(self) -> None:
        self.now = 10.0

    def __call__(self) -> float:
        return self.now


class FakeClient:
    """create assigns a uid; bind records (name, node, uid), advances the clock by a
    second and delivers the bound pod to the tracker, as the bench's watch would."""

    def __init__(self, tracker: BindTracker, clock: Clock, *, fail_bind: str = "") -> None:
        self.tracker = tracker
        self.clock = clock
        self.created: list[types_pb2.Pod] = []
        self.bound: list[tuple[str, str, str]] = []
        self.fail_bind = fail_bind

    async def create(self, obj: types_pb2.Pod) -> types_pb2.Pod:
        out = types_pb2.Pod()
        out.CopyFrom(obj)
        out.metadata.uid = f"uid-{len(self.created)}"
        self.created.append(out)
        return out

    async def bind(self, namespace: str, name: str, node_name: str, *, uid: str = "") -> None:
        if name == self.fail_bind:
            raise NotFound(f"pods {name!r} not found")
        self.bound.append((name, node_name, uid))
        self.clock.now += 1.0
        pod = next(p for p in self.created if p.metadata.name == name)
        bound = types_pb2.Pod()
        bound.CopyFrom(pod)
        bound.spec.node_name = node_name
        self.tracker.observe(bound)


def test_only_schedulingbasic_measures_the_baseline_unless_told() -> None:
    basic, affinity, no_measure = parse_workloads(yaml.safe_load(WORKLOADS))
    assert wants_bind_only_baseline(basic, "auto")
    assert not wants_bind_only_baseline(affinity, "auto")
    assert wants_bind_only_baseline(affinity, "always")
    assert not wants_bind_only_baseline(basic, "never")
    assert not wants_bind_only_baseline(no_measure, "always")  # nothing measured to copy
    with pytest.raises(ValueError, match="bind-only mode: 'sometimes'"):
        wants_bind_only_baseline(basic, "sometimes")


def test_the_cli_option_is_checked() -> None:
    assert build_parser().parse_args([]).bind_only_baseline == "auto"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--bind-only-baseline", "sometimes"])


def test_baseline_pods_are_renamed_copies_no_scheduler_serves() -> None:
    pod = make_pod("pod-0").namespace("namespace-2").req(cpu="100m").obj()
    (copy,) = bind_only_pods([pod])
    assert copy.metadata.name == "bind-only-pod-0"
    assert copy.metadata.namespace == BIND_ONLY_NAMESPACE
    assert copy.spec.scheduler_name == BIND_ONLY_SCHEDULER
    assert not copy.spec.node_name
    assert copy.spec.containers == pod.spec.containers
    assert pod.metadata.name == "pod-0"  # the original is left alone


@pytest.mark.anyio
async def test_the_baseline_creates_then_binds_round_robin_and_rates_from_the_watch() -> None:
    clock = Clock()
    tracker = BindTracker(clock)
    client = FakeClient(tracker, clock)
    pods = bind_only_pods([make_pod(f"p{i}").namespace("x").obj() for i in range(5)])
    rate = await bind_only_baseline(
        client, tracker, 9, pods, ["n0", "n1"], creators=2, within=1.0, clock=clock
    )
    assert [p.metadata.name for p in client.created] == [p.metadata.name for p in pods]
    assert sorted(client.bound) == [
        ("bind-only-p0", "n0", "uid-0"),
        ("bind-only-p1", "n1", "uid-1"),
        ("bind-only-p2", "n0", "uid-2"),
        ("bind-only-p3", "n1", "uid-3"),
        ("bind-only-p4", "n0", "uid-4"),
    ]
    assert tracker.op_done(9)
    assert rate == pytest.approx(5 / 5.0)  # five bindings, a second each on the fake clock


@pytest.mark.anyio
async def test_each_binding_is_followed_by_the_schedulers_scheduled_event() -> None:
    """The baseline makes the scheduler's API calls: its Scheduled event too, after the
    binding (none for a binding that failed)."""
    clock = Clock()
    tracker = BindTracker(clock)
    client = FakeClient(tracker, clock, fail_bind="bind-only-p1")
    pods = bind_only_pods([make_pod(f"p{i}").namespace("x").obj() for i in range(3)])
    events = Recorder()
    with pytest.raises(RuntimeError, match="bind-only-p1"):
        await bind_only_baseline(
            client, tracker, 1, pods, ["n0"], 4, 1.0, clock=clock, recorder=events
        )
    assert sorted((m[0], m[2], m[4]) for m in events.messages) == [
        (
            "bind-only-p0",
            "Scheduled",
            f"Successfully assigned {BIND_ONLY_NAMESPACE}/bind-only-p0 to n0",
        ),
        (
            "bind-only-p2",
            "Scheduled",
            f"Successfully assigned {BIND_ONLY_NAMESPACE}/bind-only-p2 to n0",
        ),
    ]


@pytest.mark.anyio
async def test_a_failed_binding_fails_the_baseline_with_the_pod_named() -> None:
    clock = Clock()
    tracker = BindTracker(clock)
    client = FakeClient(tracker, clock, fail_bind="bind-only-p1")
    pods = bind_only_pods([make_pod(f"p{i}").namespace("x").obj() for i in range(3)])
    with pytest.raises(RuntimeError, match="1 bind-only bindings failed; the first: bind-only-p1"):
        await bind_only_baseline(client, tracker, 1, pods, ["n0"], 4, 1.0, clock=clock)


@pytest.mark.anyio
async def test_no_nodes_is_an_error_and_no_pods_no_figure() -> None:
    tracker = BindTracker(Clock())
    client = FakeClient(tracker, Clock())
    assert math.isnan(await bind_only_baseline(client, tracker, 1, [], ["n0"], 1, 1.0))
    pods = bind_only_pods([make_pod("p").obj()])
    with pytest.raises(ValueError, match="needs nodes"):
        await bind_only_baseline(client, tracker, 1, pods, [], 1, 1.0)


def test_the_baseline_and_the_ratio_are_in_the_json_and_the_table() -> None:
    r = Result(
        "SchedulingBasic/5Nodes",
        created_to_bound=150.0,
        bind_only_baseline=300.0,
        bind_only_pods=7,
        scheduler_to_limit=0.5,
    )
    data = json.loads(json.dumps(jsonable([r])))
    assert data[0]["created_to_bound"] == 150.0
    assert data[0]["bind_only_baseline"] == 300.0
    assert data[0]["scheduler_to_limit"] == 0.5
    text = render([r])
    assert "bind-only baseline pods/s" in text and "300.0" in text
    assert "scheduler / bind-only" in text and "0.50" in text
    plain = render([Result("SchedulingPodAffinity/5Nodes", created_to_bound=1.0)])
    assert "bind-only" not in plain
    assert json.loads(json.dumps(jsonable([Result("x")])))[0]["bind_only_baseline"] is None
