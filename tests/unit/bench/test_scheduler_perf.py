"""The pure parts of bench.scheduler_perf: workload files, throughput samples, metric deltas,
the bind tracker, py-spy stack summaries and the table."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from bench import scheduler_perf as sp
from bench.common import summarize_stacks
from bench.scheduler_perf import (
    BindTracker,
    NominatedFigures,
    PreemptionFigures,
    Result,
    api_calls,
    build_parser,
    by_label,
    comparison_pairs,
    comparison_rows,
    delta_by_label,
    expected_min_victims,
    histogram_mean_delta,
    metric_delta,
    metric_sum,
    nominated_figures,
    parse_metrics,
    pod_requests,
    preemption_figures,
    render,
    render_comparison,
    throughput_samples,
    throughput_stats,
    victims_per_preemptor,
)
from bench.scheduler_perf_workloads import (
    WORKLOADS_FILE,
    Barrier,
    CreateNodes,
    CreatePods,
    WorkloadError,
    load_workloads,
    node_objects,
    parse_workloads,
    pod_objects,
    priority_class_name,
    priority_class_objects,
    select_workloads,
)
from kemu.component.client_connection import ClientConnection
from kemu.scheduling.config import API_VERSION, KIND, parse_config
from kemu.testing.builders import make_pod

BASIC = """
- name: SchedulingBasic
  labels: [base]
  workloadTemplate:
  - opcode: createNodes
    countParam: $initNodes
  - opcode: createPods
    countParam: $initPods
  - opcode: barrier
  - opcode: createPods
    countParam: $measurePods
    collectMetrics: true
  workloads:
  - name: 5Nodes
    labels: [quick]
    params: {initNodes: 5, initPods: 3, measurePods: 7}
  - name: 50Nodes
    params: {initNodes: 50, initPods: 30, measurePods: 70}
"""


def _parse(text: str) -> Any:
    return parse_workloads(yaml.safe_load(text))


def _error(text: str) -> str:
    with pytest.raises(WorkloadError) as e:
        _parse(text)
    return str(e.value)


# ---------------------------------------------------------------------- workloads


def test_workloads_expand_the_template_with_each_workloads_params() -> None:
    small, big = _parse(BASIC)
    assert small.full_name == "SchedulingBasic/5Nodes"
    assert small.labels == ("base", "quick")
    nodes, init, barrier, measured = small.ops
    assert isinstance(nodes, CreateNodes) and nodes.count == 5
    assert isinstance(init, CreatePods) and init.count == 3 and not init.collect_metrics
    assert init.namespace == "namespace-1"
    assert barrier == Barrier(())
    assert isinstance(measured, CreatePods) and measured.count == 7 and measured.collect_metrics
    assert measured.namespace == "namespace-3"
    assert small.measured is measured
    assert (small.count(CreateNodes), small.count(CreatePods, measured=False)) == (5, 3)
    assert small.count(CreatePods, measured=True) == 7
    assert [op.count for op in big.ops if not isinstance(op, Barrier)] == [50, 30, 70]


def test_default_templates_are_upstreams_node_and_pod() -> None:
    (w, _) = _parse(BASIC)
    nodes = node_objects(w.ops[0], 0)
    assert [n.metadata.name for n in nodes[:2]] == ["scheduler-perf-0-0", "scheduler-perf-0-1"]
    node = nodes[0]
    assert dict(node.status.capacity) == {"pods": "110", "cpu": "4", "memory": "32Gi"}
    assert dict(node.status.allocatable) == dict(node.status.capacity)
    assert node.metadata.labels["kubernetes.io/hostname"] == "scheduler-perf-0-0"
    assert [(c.type, c.status) for c in node.status.conditions] == [("Ready", "True")]
    pods = pod_objects(w.ops[3], 3)
    assert len(pods) == 7 and len({p.metadata.name for p in pods}) == 7
    pod = pods[0]
    assert (pod.metadata.namespace, pod.metadata.name) == ("namespace-3", "pod-3-0")
    (c,) = pod.spec.containers
    assert dict(c.resources.requests) == {"cpu": "100m", "memory": "500Mi"}
    assert dict(c.resources.limits) == {"cpu": "100m", "memory": "500Mi"}


def test_inline_and_file_templates_and_an_explicit_namespace(tmp_path: Path) -> None:
    (tmp_path / "pod.yaml").write_text(
        "metadata: {generateName: big-}\n"
        "spec: {containers: [{name: c, resources: {requests: {cpu: '2'}}}]}\n"
    )
    config = tmp_path / "perf.yaml"
    config.write_text(
        """
- name: Custom
  workloadTemplate:
  - opcode: createNodes
    count: 2
    nodeTemplate:
      metadata: {generateName: n-, labels: {zone: a}}
      status: {capacity: {cpu: "8", pods: "10"}, allocatable: {cpu: "7"}}
  - opcode: createPods
    count: 1
    podTemplatePath: pod.yaml
    namespace: sched-0
    skipWaitToCompletion: true
  workloads:
  - name: one
"""
    )
    (w,) = load_workloads(config)
    nodes_op = w.ops[0]
    assert isinstance(nodes_op, CreateNodes)
    (node, _) = node_objects(nodes_op, 0)
    assert node.metadata.name == "n-0-0" and node.metadata.labels["zone"] == "a"
    assert dict(node.status.allocatable) == {"cpu": "7"}  # given: not copied from capacity
    op = w.ops[1]
    assert isinstance(op, CreatePods) and op.skip_wait and op.namespace == "sched-0"
    (pod,) = pod_objects(op, 1)
    assert (pod.metadata.namespace, pod.metadata.name) == ("sched-0", "big-1-0")
    assert dict(pod.spec.containers[0].resources.requests) == {"cpu": "2"}


def test_the_shipped_workloads_file_has_the_issues_workloads() -> None:
    workloads = {w.full_name: w for w in load_workloads(WORKLOADS_FILE)}
    expected = {
        "SchedulingBasic/50Nodes": (50, 50, 200),
        "SchedulingBasic/500Nodes": (500, 500, 1000),
        "SchedulingBasic/5000Nodes": (5000, 1000, 5000),
    }
    for name, (nodes, init, measured) in expected.items():
        w = workloads[name]
        assert w.count(CreateNodes) == nodes
        assert w.count(CreatePods, measured=False) == init
        assert w.count(CreatePods, measured=True) == measured
    quick = select_workloads(list(workloads.values()), [], "quick")
    assert [w.full_name for w in quick] == [
        "SchedulingBasic/50Nodes",
        "PreemptionBasic/10Nodes",
        "PreferNominatedNodeAB/20Nodes",
        "NominatedNodeNameForExpectationOverhead/50Nodes",
        "NominatedNodeNameForExpectationSlowPreBind/50Nodes",
    ]
    assert [w.full_name for w in select_workloads(list(workloads.values()), [], "performance")] == [
        "SchedulingBasic/500Nodes",
        "SchedulingBasic/5000Nodes",
    ]


def test_the_shipped_workloads_file_has_the_nominated_node_workloads() -> None:
    workloads = {w.full_name: w for w in load_workloads(WORKLOADS_FILE)}
    sizes = {
        "PreemptionBasic/500Nodes": (500, 2000, 500, "preemption"),
        "PreferNominatedNodeAB/1000Nodes": (1000, 4000, 1000, "kep1923"),
        "NominatedNodeNameForExpectationOverhead/500Nodes": (500, 500, 1000, "kep5278"),
        "NominatedNodeNameForExpectationSlowPreBind/500Nodes": (500, 500, 1000, "kep5278"),
    }
    for name, (nodes, init, count, label) in sizes.items():
        w = workloads[name]
        assert (w.count(CreateNodes), w.count(CreatePods, measured=False)) == (nodes, init)
        assert w.count(CreatePods, measured=True) == count
        assert w.labels == (label,)

    preemption = workloads["PreemptionBasic/500Nodes"]
    assert preemption.compare_gate is None and preemption.emulated_version is None
    assert preemption.priorities() == [10]
    assert expected_min_victims(preemption) == 3  # 400m free + 3 x 900m >= 3000m
    low_op, high_op = preemption.ops[1], preemption.ops[2]
    assert isinstance(low_op, CreatePods) and isinstance(high_op, CreatePods)
    low, high = pod_objects(low_op, 1)[0], pod_objects(high_op, 2)[0]
    assert low.spec.termination_grace_period_seconds == 0  # bare nodes: victims go at once
    assert not low.spec.priority_class_name
    assert high.spec.priority_class_name == "scheduler-perf-priority-10"
    assert not high.spec.HasField("priority")  # admission computes it from the class

    ab = workloads["PreferNominatedNodeAB/1000Nodes"]
    assert (ab.emulated_version, ab.compare_gate) == ("1.23", "PreferNominatedNode")
    assert expected_min_victims(ab) == 3
    assert [(v.name, dict(v.feature_gates)) for v in ab.variants()] == [
        ("PreferNominatedNode=true", {"PreferNominatedNode": True}),
        ("PreferNominatedNode=false", {"PreferNominatedNode": False}),
    ]

    plain = workloads["NominatedNodeNameForExpectationOverhead/500Nodes"]
    slow = workloads["NominatedNodeNameForExpectationSlowPreBind/500Nodes"]
    assert plain.compare_gate == slow.compare_gate == "NominatedNodeNameForExpectation"
    assert plain.scheduler_config is None and expected_min_victims(plain) is None
    assert slow.scheduler_config is not None
    (profile,) = slow.scheduler_config["profiles"]
    assert profile["plugins"]["multiPoint"]["enabled"] == [{"name": "SlowPreBind"}]
    measured = slow.measured
    assert measured is not None
    assert measured.template.metadata.annotations["scheduling.kemu.io/prebind-delay"] == "0s"


def test_workloads_are_selected_by_full_name_test_case_or_all() -> None:
    ws = _parse(BASIC)
    assert select_workloads(ws, ["SchedulingBasic/50Nodes"], "x") == [ws[1]]
    assert select_workloads(ws, ["SchedulingBasic"], "x") == ws
    assert select_workloads(ws, ["all", "SchedulingBasic/5Nodes"], "x") == ws
    assert select_workloads(ws, [], "quick") == [ws[0]]
    with pytest.raises(KeyError, match="no workload 'Nope'.*SchedulingBasic/5Nodes"):
        select_workloads(ws, ["Nope"], "x")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("countParam: $initPods", "countParam: $missing"), "workloadTemplate[1].countParam: workload 5Nodes has no param 'missing'"),
        (("countParam: $initPods", "countParam: initPods"), "workloadTemplate[1].countParam: expected $name"),
        (("countParam: $initPods", "count: -1"), "workloadTemplate[1].count: expected a non-negative integer"),
        (("countParam: $initPods", "countParam: $initPods\n    count: 3"), "workloadTemplate[1].countParam: give count or countParam"),
        (("opcode: barrier", "opcode: nap"), "workloadTemplate[2].opcode: expected one of allocResourceClaims, barrier, churn, createAny, createCompositePodGroups, createNamespaces, createNodes, createPodGroups, createPodSets, createPods, createResourceDriver, deletePods, sleep, startCollectingMetrics, stopCollectingMetrics, updateAny, waitForPodGroups, got 'nap'"),
        (("opcode: barrier", "opcode: barrier\n    colour: red"), "workloadTemplate[2].colour: unknown field"),
        (("collectMetrics: true", "collectMetrics: yes please"), "workloadTemplate[3].collectMetrics: expected true or false"),
        (("collectMetrics: true", "collectMetrics: true\n    skipWaitToCompletion: true"), "workloadTemplate[3].skipWaitToCompletion"),
        (("  - opcode: barrier", "  - opcode: createPods\n    count: 1\n    collectMetrics: true"), "workloadTemplate[3].collectMetrics: only one op"),
        (("params: {initNodes: 5,", "params: {initNodes: many,"), "workloadTemplate[0].countParam: param 'initNodes' of workload 5Nodes is a count: expected a non-negative integer, got 'many'"),
        (("params: {initNodes: 5,", "params: {initNodes: [5],"), "workloadTemplate[0].countParam: param 'initNodes' of workload 5Nodes is a count: expected a non-negative integer, got [5]"),
        (("- name: 50Nodes", "- name: 5Nodes"), "workloads[1].name: duplicate workload SchedulingBasic/5Nodes"),
        (("- name: 50Nodes", "- nom: 50Nodes"), "workloads[1].nom: unknown field"),
    ],
)  # fmt: skip
def test_workload_errors_name_the_field(change: tuple[str, str], message: str) -> None:
    old, new = change
    assert old in BASIC
    text = BASIC.replace(old, new, 1)
    error = _error(text)
    assert message in error
    assert error.startswith("[0] SchedulingBasic") or "[0]" in error


def test_template_errors_name_the_template_field() -> None:
    text = BASIC.replace(
        "    countParam: $initNodes\n",
        "    countParam: $initNodes\n    nodeTemplate: {spec: {unschedulable: 3}}\n",
    )
    error = _error(text)
    assert "workloadTemplate[0].nodeTemplate: " in error and "unschedulable" in error


def test_the_root_must_be_a_list_of_test_cases() -> None:
    with pytest.raises(WorkloadError, match="<root>: expected a list"):
        parse_workloads({"name": "x"})
    with pytest.raises(WorkloadError, match=r"\[0\]\.name: expected a non-empty string"):
        parse_workloads([{"workloadTemplate": []}])
    with pytest.raises(WorkloadError, match="X.workloads: expected a non-empty list"):
        parse_workloads([{"name": "X", "workloadTemplate": [{"opcode": "barrier"}]}])


def test_a_missing_template_file_is_an_error_naming_the_field(tmp_path: Path) -> None:
    config = tmp_path / "perf.yaml"
    config.write_text(
        "- name: T\n  workloadTemplate:\n  - {opcode: createPods, count: 1, podTemplatePath: no.yaml}\n"
        "  workloads: [{name: w}]\n"
    )
    with pytest.raises(
        WorkloadError, match=r"perf.yaml: \[0\] T.workloadTemplate\[0\].podTemplatePath"
    ):
        load_workloads(config)


# ---------------------------------------------------------------------- throughput samples


def test_samples_count_bindings_per_second_window() -> None:
    # 3 s phase: 2 bound in [0, 1), 0 in [1, 2), 4 in [2, 3] (the end itself included).
    times = [10.1, 10.9, 12.0, 12.5, 12.7, 13.0]
    assert throughput_samples(times, 10.0, 13.0) == [2.0, 0.0, 4.0]


def test_a_long_partial_last_window_is_divided_by_its_length() -> None:
    times = [0.2, 0.4, 1.1, 1.2, 1.3]  # phase 0 .. 1.5: last window is 0.5 s with 3 pods
    assert throughput_samples(times, 0.0, 1.5) == [2.0, 6.0]


def test_a_short_partial_last_window_is_merged_into_the_previous_one() -> None:
    times = [0.5, 1.5, 2.1, 2.2]  # phase 0 .. 2.25: [1, 2.25) has 3 pods over 1.25 s
    assert throughput_samples(times, 0.0, 2.25) == [1.0, 3 / 1.25]


def test_a_phase_shorter_than_a_window_is_one_sample() -> None:
    assert throughput_samples([0.1, 0.2], 0.0, 0.25) == [8.0]
    assert throughput_samples([], 5.0, 5.0) == []
    assert throughput_samples([1.0], 2.0, 1.0) == []


def test_times_outside_the_phase_are_ignored_and_the_mean_matches_the_overall_rate() -> None:
    times = [-1.0, *[i * 0.01 for i in range(400)], 99.0]  # 100 pods/s over [0, 3.99]
    samples = throughput_samples(times, 0.0, 4.0)
    assert samples == [100.0] * 4
    stats = throughput_stats(samples)
    assert (stats.average, stats.p50, stats.p99, stats.samples) == (100.0, 100.0, 100.0, 4)


def test_throughput_stats_are_nearest_rank_over_the_samples() -> None:
    stats = throughput_stats([float(v) for v in range(1, 11)])
    assert stats.average == 5.5
    assert (stats.p50, stats.p90, stats.p99) == (5.0, 9.0, 10.0)
    assert math.isnan(throughput_stats([]).average)
    with pytest.raises(ValueError):
        throughput_samples([], 0.0, 1.0, interval=0)


# ---------------------------------------------------------------------- metrics


BEFORE = """\
# TYPE scheduler_scheduling_algorithm_duration_seconds histogram
scheduler_scheduling_algorithm_duration_seconds_bucket{le="0.001"} 2.0
scheduler_scheduling_algorithm_duration_seconds_bucket{le="+Inf"} 10.0
scheduler_scheduling_algorithm_duration_seconds_sum 0.05
scheduler_scheduling_algorithm_duration_seconds_count 10.0
# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 10.0
scheduler_schedule_attempts_total{profile="other",result="scheduled"} 1.0
# TYPE scheduler_pending_pods gauge
scheduler_pending_pods{queue="active"} 4.0
scheduler_pending_pods{queue="backoff"} 0.0
"""

AFTER = """\
# TYPE scheduler_scheduling_algorithm_duration_seconds histogram
scheduler_scheduling_algorithm_duration_seconds_bucket{le="0.001"} 2.0
scheduler_scheduling_algorithm_duration_seconds_bucket{le="+Inf"} 110.0
scheduler_scheduling_algorithm_duration_seconds_sum 0.85
scheduler_scheduling_algorithm_duration_seconds_count 110.0
# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 108.0
scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"} 3.0
scheduler_schedule_attempts_total{profile="other",result="scheduled"} 3.0
# TYPE scheduler_pending_pods gauge
scheduler_pending_pods{queue="active"} 0.0
scheduler_pending_pods{queue="unschedulable"} 3.0
"""


def test_the_mean_algorithm_duration_is_the_delta_of_sum_over_delta_of_count() -> None:
    before, after = parse_metrics(BEFORE), parse_metrics(AFTER)
    mean = histogram_mean_delta(before, after, "scheduler_scheduling_algorithm_duration_seconds")
    assert mean == pytest.approx(0.8 / 100)
    assert math.isnan(
        histogram_mean_delta(after, after, "scheduler_scheduling_algorithm_duration_seconds")
    )
    assert math.isnan(histogram_mean_delta(before, after, "no_such_histogram"))


def test_counter_deltas_by_label_and_label_matching() -> None:
    before, after = parse_metrics(BEFORE), parse_metrics(AFTER)
    name = "scheduler_schedule_attempts_total"
    assert delta_by_label(before, after, name, "result") == {
        "scheduled": 100.0,
        "unschedulable": 3.0,
    }
    assert metric_delta(before, after, name, result="scheduled", profile="other") == 2.0
    assert metric_sum(after, name) == 114.0
    assert metric_sum(after, "absent_total") == 0.0
    assert by_label(after, "scheduler_pending_pods", "queue") == {
        "active": 0.0,
        "unschedulable": 3.0,
    }


def test_unreadable_metrics_text_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unreadable metrics"):
        parse_metrics('metric{label="unterminated} 1\n')


# ---------------------------------------------------------------------- bind tracker


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.anyio
async def test_the_tracker_records_the_first_time_each_expected_pod_is_seen_bound() -> None:
    clock = FakeClock()
    tracker = BindTracker(clock)
    pods = [make_pod(f"p{i}").namespace("ns").obj() for i in range(2)]
    tracker.expect(3, pods)
    assert not tracker.op_done(3) and tracker.pending() == 2

    tracker.observe(pods[0])  # not bound yet
    bound = make_pod("p0").namespace("ns").node("n1").obj()
    clock.now = 101.0
    tracker.observe(bound)
    clock.now = 102.0
    tracker.observe(bound)  # a later update of a bound pod: not a new binding
    tracker.observe(make_pod("stranger").namespace("ns").node("n1").obj())  # not expected
    assert tracker.bound_at[3] == [101.0]
    assert not tracker.op_done(3)

    tracker.observe(make_pod("p1").namespace("ns").node("n2").obj())
    assert tracker.bound_at[3] == [101.0, 102.0]
    assert tracker.op_done(3) and tracker.pending() == 0
    assert tracker.events == 5
    await tracker.wait_op(3, within=0.1)  # already done: returns at once
    # The scheduler bound both; a pod created with spec.nodeName was never scheduled.
    assert tracker.scheduler_bound == 2
    pinned = make_pod("pinned").namespace("ns").node("n1").obj()
    tracker.expect(4, [pinned])
    tracker.observe(pinned, "ADDED")
    assert tracker.op_done(4) and tracker.scheduler_bound == 2


@pytest.mark.anyio
async def test_the_tracker_catches_up_with_the_pods_a_barrier_listed_bound() -> None:
    """A barrier's list may run ahead of the tracker's watch: the window it closes must count
    every pod the barrier saw bound (upstream's barrier and collector read one informer)."""
    tracker = BindTracker(FakeClock())
    pods = [make_pod(f"p{i}").namespace("ns").obj() for i in range(2)]
    tracker.expect(0, pods)
    tracker.observe(make_pod("p0").namespace("ns").node("n1").obj())
    with pytest.raises(TimeoutError):
        await tracker.wait_seen(["ns/p0", "ns/p1"], within=0.05)
    async with anyio.create_task_group() as tg:
        tg.start_soon(tracker.wait_seen, ["ns/p0", "ns/p1"], 2.0)
        await anyio.sleep(0.01)
        tracker.observe(make_pod("p1").namespace("ns").obj(), "DELETED")  # deleted counts too
    await tracker.wait_seen([], within=0.01)


@pytest.mark.anyio
async def test_waiting_for_pods_that_are_never_bound_times_out_with_the_count() -> None:
    tracker = BindTracker(FakeClock())
    tracker.expect(1, [make_pod("p").namespace("a").obj()])
    with pytest.raises(TimeoutError, match="1 pods not bound"):
        await tracker.wait_op(1, within=0.01)


# ---------------------------------------------------------------------- py-spy and the table


def test_stacks_are_summarised_per_function_self_and_inclusive() -> None:
    raw = (
        "<module> (run.py:1);main (app.py:10);filter (fit.py:5) 6\n"
        "<module> (run.py:1);main (app.py:12);filter (fit.py:7) 2\n"
        "<module> (run.py:1);main (app.py:10);score (score.py:3);score (score.py:9) 2\n"
        "\n"
        "garbage line\n"
    )
    total, own, inclusive = summarize_stacks(raw, top=3)
    assert total == 10
    assert own == [("filter (fit.py)", 8), ("score (score.py)", 2)]
    # <module> and main are in every sample: the spine, left out of the inclusive list.
    assert inclusive == [("filter (fit.py)", 8), ("score (score.py)", 2)]  # recursion counts once
    assert summarize_stacks(raw, spine=1.01)[2][:2] == [
        ("<module> (run.py)", 10),
        ("main (app.py)", 10),
    ]


def test_the_table_has_a_column_per_workload_and_shows_failures() -> None:
    ok = Result("SchedulingBasic/500Nodes", nodes=500, init_pods=500, measured_pods=1000)
    ok.created_to_bound = 123.4
    ok.algorithm_ms = 3.21
    ok.attempts = {"scheduled": 1000.0}
    ok.event_calls = {"create events": 1000.0}
    ok.rss_kib = {"scheduler": 100 * 1024}
    failed = Result("SchedulingBasic/5000Nodes", error="TimeoutError: too slow")
    text = render([ok, failed])
    header = next(line for line in text.splitlines() if "SchedulingBasic/500Nodes" in line)
    assert "SchedulingBasic/5000Nodes" in header
    assert "123.4" in text and "3.21" in text and "scheduled=1000" in text
    event_row = next(line for line in text.splitlines() if line.startswith("api event calls"))
    assert "event=1000" in event_row  # (whether the scheduler's events kept up)
    assert "SchedulingBasic/5000Nodes: FAILED: TimeoutError: too slow" in text


def test_a_profile_is_rendered_under_the_process_it_sampled() -> None:
    r = Result("SchedulingBasic/500Nodes", nodes=500, init_pods=500, measured_pods=1000)
    r.profile = {
        "process": "apiserver", "file": "/tmp/p.txt", "samples": 200,
        "self": [("create (servicer.py)", 50)], "inclusive": [("serve (servicer.py)", 120)],
    }  # fmt: skip
    text = render([r])
    assert "py-spy of the apiserver (200 GIL samples, /tmp/p.txt)" in text
    assert " 25.0%  create (servicer.py)" in text and " 60.0%  serve (servicer.py)" in text
    assert build_parser().parse_args(["--py-spy-process", "apiserver"]).py_spy_process == (
        "apiserver"
    )


# ---------------------------------------------------------------------- priorities and the control plane


PREEMPTION = """
- name: Preemption
  emulatedVersion: "1.33"
  featureGates: {SchedulerAsyncPreemption: false}
  workloadTemplate:
  - opcode: createNodes
    countParam: $nodes
  - opcode: createPods
    countParam: $low
    podTemplate:
      spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
  - opcode: createPods
    countParam: $high
    priority: 10
    collectMetrics: true
    podTemplate:
      spec: {containers: [{name: c, resources: {requests: {cpu: "3"}}}]}
  workloads:
  - name: small
    params: {nodes: 5, low: 20, high: 5}
  - name: other
    emulatedVersion: "1.35"
    featureGates: {SchedulerAsyncPreemption: true, NominatedNodeNameForExpectation: false}
    params: {nodes: 5, low: 20, high: 5}
"""


def test_the_op_priority_becomes_a_priority_class_the_run_creates() -> None:
    small, _ = _parse(PREEMPTION)
    low, high = small.ops[1], small.ops[2]
    assert isinstance(low, CreatePods) and low.priority is None
    assert isinstance(high, CreatePods) and high.priority == 10
    (pc,) = priority_class_objects(small)
    assert (pc.metadata.name, pc.value) == ("scheduler-perf-priority-10", 10)
    (pod, *_) = pod_objects(high, 2)
    assert pod.spec.priority_class_name == "scheduler-perf-priority-10"
    assert priority_class_name(-5) == "scheduler-perf-priority-minus-5"


def test_a_template_spec_priority_is_the_ops_priority_as_in_upstreams_templates() -> None:
    text = PREEMPTION.replace("    priority: 10\n", "").replace(
        'spec: {containers: [{name: c, resources: {requests: {cpu: "3"}}}]}',
        'spec: {priority: 7, containers: [{name: c, resources: {requests: {cpu: "3"}}}]}',
    )
    (small, _) = _parse(text)
    assert small.priorities() == [7]
    conflicting = PREEMPTION.replace("    priority: 10\n", "    priority: 10\n").replace(
        'spec: {containers: [{name: c, resources: {requests: {cpu: "3"}}}]}',
        'spec: {priority: 7, containers: [{name: c, resources: {requests: {cpu: "3"}}}]}',
    )
    assert "workloadTemplate[2].priority: 10 differs from the template's spec.priority 7" in (
        _error(conflicting)
    )


def test_control_plane_settings_come_from_the_test_case_and_the_workload() -> None:
    small, other = _parse(PREEMPTION)
    assert small.emulated_version == "1.33"
    assert dict(small.feature_gates) == {"SchedulerAsyncPreemption": False}
    assert [v.name for v in small.variants()] == [""]
    assert other.emulated_version == "1.35"  # the workload's wins
    assert dict(other.feature_gates) == {  # merged, the workload's wins
        "SchedulerAsyncPreemption": True,
        "NominatedNodeNameForExpectation": False,
    }
    assert small.scheduler_config is None and small.compare_gate is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('emulatedVersion: "1.33"', "emulatedVersion: 1.33"), 'Preemption.emulatedVersion: expected a quoted string such as "1.23"'),
        (('emulatedVersion: "1.33"', 'emulatedVersion: "1.99"'), "Preemption.emulatedVersion: emulated version 1.99 is not supported"),
        (("featureGates: {SchedulerAsyncPreemption: false}", "featureGates: {NoSuchGate: true}"), 'Preemption.featureGates: unrecognized feature gate "NoSuchGate"'),
        (("featureGates: {SchedulerAsyncPreemption: false}", "featureGates: {SchedulerAsyncPreemption: maybe}"), "Preemption.featureGates: expected a mapping of gate names to true/false"),
        (("featureGates: {SchedulerAsyncPreemption: false}", "compareFeatureGate: SchedulerAsyncPreemption\n  featureGates: {SchedulerAsyncPreemption: false}"), "compareFeatureGate: SchedulerAsyncPreemption is also set by featureGates"),
        (("    priority: 10\n", "    priority: high\n"), "workloadTemplate[2].priority: expected an integer"),
        (("    priority: 10\n", "    priority: 2000000000\n"), "workloadTemplate[2].priority: 2000000000 is outside"),
        (("  workloadTemplate:", "  schedulerConfig: {profiles: [{schedulerName: x, plugins: {score: {enabled: [{name: NoSuchPlugin}]}}}]}\n  workloadTemplate:"), "Preemption.schedulerConfig: "),
    ],
)  # fmt: skip
def test_control_plane_errors_name_the_field(change: tuple[str, str], message: str) -> None:
    old, new = change
    assert old in PREEMPTION
    text = PREEMPTION.replace(old, new, 1)
    assert message in _error(text)


def test_a_gate_locked_at_the_emulated_version_cannot_be_compared() -> None:
    text = PREEMPTION.replace('emulatedVersion: "1.33"', 'emulatedVersion: "1.24"').replace(
        "featureGates: {SchedulerAsyncPreemption: false}", "compareFeatureGate: PreferNominatedNode"
    )
    error = _error(text)
    assert "Preemption.compareFeatureGate: " in error and "PreferNominatedNode" in error


def test_a_comparison_runs_the_gate_on_then_off_over_the_other_gates() -> None:
    (w,) = _parse(
        """
- name: AB
  emulatedVersion: "1.34"
  compareFeatureGate: NominatedNodeNameForExpectation
  featureGates: {SchedulerAsyncPreemption: false}
  workloadTemplate: [{opcode: createNodes, count: 1}]
  workloads: [{name: w}]
"""
    )
    assert [(v.name, dict(v.feature_gates)) for v in w.variants()] == [
        (
            "NominatedNodeNameForExpectation=true",
            {"SchedulerAsyncPreemption": False, "NominatedNodeNameForExpectation": True},
        ),
        (
            "NominatedNodeNameForExpectation=false",
            {"SchedulerAsyncPreemption": False, "NominatedNodeNameForExpectation": False},
        ),
    ]


def test_a_scheduler_config_file_is_read_relative_to_the_workloads_file(tmp_path: Path) -> None:
    (tmp_path / "sched.yaml").write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: default-scheduler\n"
        "  plugins: {multiPoint: {enabled: [{name: SlowPreBind}]}}\n"
    )
    config = tmp_path / "perf.yaml"
    config.write_text(
        "- name: T\n  schedulerConfigPath: sched.yaml\n"
        "  workloadTemplate: [{opcode: createNodes, count: 1}]\n  workloads: [{name: w}]\n"
    )
    (w,) = load_workloads(config)
    assert w.scheduler_config is not None
    assert w.scheduler_config["profiles"][0]["schedulerName"] == "default-scheduler"


# ---------------------------------------------------------------------- expected victims


def test_the_expected_minimum_of_victims_follows_from_the_sizes() -> None:
    small, _ = _parse(PREEMPTION)  # 4 x 1 cpu on 4 cpu; a 3 cpu preemptor needs 3 of them
    assert expected_min_victims(small) == 3
    # 2 x 1 cpu per node: 2 cpu free, so one victim is enough.
    text = PREEMPTION.replace(
        "params: {nodes: 5, low: 20, high: 5}", "params: {nodes: 5, low: 10, high: 5}", 1
    )
    assert expected_min_victims(_parse(text)[0]) == 1
    # Memory decides when it is the scarcer resource.
    text = PREEMPTION.replace('requests: {cpu: "3"}', 'requests: {cpu: "1", memory: 20Gi}').replace(
        'requests: {cpu: "1"}', 'requests: {cpu: "1", memory: 8Gi}'
    )  # 4 x 8Gi on 32Gi: 20Gi needs 3 of them to go
    assert expected_min_victims(_parse(text)[0]) == 3


@pytest.mark.parametrize(
    ("change"),
    [
        ("params: {nodes: 5, low: 20, high: 5}", "params: {nodes: 5, low: 21, high: 5}"),  # uneven
        ("params: {nodes: 5, low: 20, high: 5}", "params: {nodes: 5, low: 20, high: 6}"),  # > nodes
        ("params: {nodes: 5, low: 20, high: 5}", "params: {nodes: 5, low: 25, high: 5}"),  # 5 don't fit
        ("    priority: 10\n", ""),  # no higher priority
        ('requests: {cpu: "3"}', 'requests: {cpu: "5"}'),  # fits nowhere
    ],
)  # fmt: skip
def test_no_expected_minimum_is_claimed_for_other_shapes(change: tuple[str, str]) -> None:
    old, new = change
    assert old in PREEMPTION
    assert expected_min_victims(_parse(PREEMPTION.replace(old, new, 1))[0]) is None


def test_pod_requests_sum_the_containers_with_limits_standing_for_requests() -> None:
    pod = make_pod("p").req(cpu="500m", memory="1Gi").obj()
    extra = pod.spec.containers.add()
    extra.resources.limits["cpu"] = "250m"
    assert pod_requests(pod) == {"pods": 1, "cpu": 750, "memory": 1024**3}


# ---------------------------------------------------------------------- preemption, nominated, API


SCHED_BEFORE = """\
# TYPE scheduler_preemption_attempts_total counter
scheduler_preemption_attempts_total 2.0
# TYPE scheduler_preemption_victims histogram
scheduler_preemption_victims_bucket{le="+Inf"} 1.0
scheduler_preemption_victims_sum 3.0
scheduler_preemption_victims_count 1.0
# TYPE scheduler_kemu_nominated_pod_filter_evaluations histogram
scheduler_kemu_nominated_pod_filter_evaluations_bucket{le="+Inf",profile="default-scheduler"} 0.0
scheduler_kemu_nominated_pod_filter_evaluations_sum{profile="default-scheduler"} 0.0
scheduler_kemu_nominated_pod_filter_evaluations_count{profile="default-scheduler"} 0.0
"""

SCHED_AFTER = """\
# TYPE scheduler_preemption_attempts_total counter
scheduler_preemption_attempts_total 13.0
# TYPE scheduler_preemption_victims histogram
scheduler_preemption_victims_bucket{le="+Inf"} 11.0
scheduler_preemption_victims_sum 34.0
scheduler_preemption_victims_count 11.0
# TYPE scheduler_kemu_nominated_pod_filter_evaluations histogram
scheduler_kemu_nominated_pod_filter_evaluations_bucket{le="+Inf",profile="default-scheduler"} 10.0
scheduler_kemu_nominated_pod_filter_evaluations_sum{profile="default-scheduler"} 10.0
scheduler_kemu_nominated_pod_filter_evaluations_count{profile="default-scheduler"} 10.0
scheduler_kemu_nominated_pod_filter_evaluations_bucket{le="+Inf",profile="other"} 2.0
scheduler_kemu_nominated_pod_filter_evaluations_sum{profile="other"} 90.0
scheduler_kemu_nominated_pod_filter_evaluations_count{profile="other"} 2.0
# TYPE scheduler_kemu_nominated_pod_scheduling_algorithm_duration_seconds histogram
scheduler_kemu_nominated_pod_scheduling_algorithm_duration_seconds_bucket{le="+Inf",profile="default-scheduler"} 12.0
scheduler_kemu_nominated_pod_scheduling_algorithm_duration_seconds_sum{profile="default-scheduler"} 0.006
scheduler_kemu_nominated_pod_scheduling_algorithm_duration_seconds_count{profile="default-scheduler"} 12.0
"""


def test_preemption_and_nominated_figures_are_increases_over_the_phase() -> None:
    before, after = parse_metrics(SCHED_BEFORE), parse_metrics(SCHED_AFTER)
    assert preemption_figures(before, after) == PreemptionFigures(11.0, 10.0, 31.0)
    nominated = nominated_figures(before, after)
    assert nominated.pods == 12.0  # every profile
    assert nominated.filter_nodes == pytest.approx(100 / 12)
    assert nominated.algorithm_ms == pytest.approx(0.5)
    empty = nominated_figures(before, before)
    assert empty.pods == 0 and math.isnan(empty.filter_nodes) and math.isnan(empty.algorithm_ms)


API_BEFORE = """\
# TYPE apiserver_request_total counter
apiserver_request_total{code="OK",resource="pods",verb="create"} 50.0
apiserver_request_total{code="OK",resource="pods/binding",verb="create"} 50.0
apiserver_request_total{code="OK",resource="nodes",verb="create"} 5.0
"""

API_AFTER = """\
# TYPE apiserver_request_total counter
apiserver_request_total{code="OK",resource="pods",verb="create"} 60.0
apiserver_request_total{code="OK",resource="pods/binding",verb="create"} 60.0
apiserver_request_total{code="OK",resource="pods",verb="patch"} 10.0
apiserver_request_total{code="NOT_FOUND",resource="pods",verb="delete"} 1.0
apiserver_request_total{code="OK",resource="pods",verb="delete"} 30.0
apiserver_request_total{code="OK",resource="pods",verb="get"} 0.0
apiserver_request_total{code="OK",resource="events",verb="create"} 99.0
apiserver_request_total{code="OK",resource="nodes",verb="create"} 5.0
"""


def test_api_calls_are_counted_per_verb_and_resource_over_every_code() -> None:
    calls = api_calls(parse_metrics(API_BEFORE), parse_metrics(API_AFTER), ["pods", "pods/binding"])
    assert calls == {
        "create pods": 10.0,
        "create pods/binding": 10.0,
        "delete pods": 31.0,
        "patch pods": 10.0,
    }


# ---------------------------------------------------------------------- deletions


@pytest.mark.anyio
async def test_the_tracker_counts_deleted_pods_and_unbound_deleted_pods_are_done() -> None:
    clock = FakeClock()
    tracker = BindTracker(clock)
    victims = [make_pod(f"v{i}").namespace("low").node("n1").obj() for i in range(2)]
    tracker.expect(1, victims)
    for v in victims:
        tracker.observe(v, "ADDED")
    pending = make_pod("p").namespace("high").obj()
    tracker.expect(2, [pending])
    clock.now = 105.0
    tracker.observe(victims[0], "DELETED")
    tracker.observe(victims[0], "DELETED")  # a repeated event is one deletion
    assert tracker.deleted() == 1 and tracker.deleted_at[1] == [105.0]
    assert tracker.op_done(1) and not tracker.op_done(2)
    tracker.observe(pending, "DELETED")  # never bound: done, and never counted as bound
    tracker.observe(make_pod("p").namespace("high").node("n2").obj())
    assert tracker.op_done(2) and tracker.bound_at[2] == []
    assert tracker.pending() == 0 and tracker.deleted() == 2
    tracker.observe(make_pod("stranger").namespace("x").obj(), "DELETED")
    assert tracker.deleted() == 2
    await tracker.wait_op(1, within=0.1)
    await tracker.wait_op(2, within=0.1)


# ---------------------------------------------------------------------- A/B comparisons


def _ab(variant: str, *, nominated: NominatedFigures | None = None, patches: float = 0) -> Result:
    r = Result("T/w", variant=variant, emulated_version="1.23", measured_pods=100)
    r.feature_gates = {"PreferNominatedNode": variant.endswith("=true")}
    r.created_to_bound = 50.0 if variant.endswith("=true") else 40.0
    r.filter_evaluations = 20000.0
    r.nominated = nominated
    r.preemption = PreemptionFigures(100.0, 100.0, 300.0)
    r.api_calls = {"patch pods": patches} if patches else {}
    return r


def test_comparisons_pair_the_on_and_off_runs_of_each_workload() -> None:
    on, off = _ab("G=true"), _ab("G=false")
    plain = Result("Plain/w")
    failed = Result("U/w", variant="G=true")
    failed_off = Result("U/w", variant="G=false", error="TimeoutError: slow")
    assert comparison_pairs([plain, on, failed, off, failed_off]) == [(on, off)]


def test_comparison_rows_show_the_kep_1923_saving_and_leave_out_absent_figures() -> None:
    on = _ab("PreferNominatedNode=true", nominated=NominatedFigures(98.0, 1.0, 0.2))
    off = _ab("PreferNominatedNode=false", nominated=NominatedFigures(99.0, 1000.0, 9.0))
    rows = {name: (a, b) for name, a, b in comparison_rows(on, off)}
    assert rows["  filter node evaluations avg"] == (1.0, 1000.0)
    assert rows["  scheduling_algorithm avg ms"] == (0.2, 9.0)
    assert rows["nominated pods' final attempts"] == (98.0, 99.0)
    assert rows["victims per preemptor"] == (3.0, 3.0)
    assert "scheduling_algorithm avg ms" not in rows  # NaN in both runs
    text = render_comparison(on, off)
    assert text.startswith("T/w: PreferNominatedNode on vs off (emulated 1.23")
    line = next(x for x in text.splitlines() if x.startswith("  filter node evaluations avg"))
    assert line.split()[-5:] == ["1.00", "1000.00", "-999.00", "0.001", "1000.000"]


def test_the_kep_5278_comparison_shows_one_extra_patch_per_pod() -> None:
    on, off = _ab("G=true", patches=100.0), _ab("G=false")
    off.preemption = PreemptionFigures(0.0, 0.0, 0.0)
    on.preemption = PreemptionFigures(0.0, 0.0, 0.0)
    rows = {name: (a, b) for name, a, b in comparison_rows(on, off)}
    assert rows["pod PATCHes / measured pod"] == (1.0, 0.0)
    assert "victims per preemptor" not in rows and "nominated pods' final attempts" not in rows
    line = next(x for x in render_comparison(on, off).splitlines() if x.startswith("pod PATCHes /"))
    assert line.split()[-5:] == ["1.00", "0.00", "1.00", "-", "0.000"]
    assert math.isnan(victims_per_preemptor(on))


def test_the_table_shows_preemption_and_nominated_rows_only_when_there_are_any() -> None:
    r = _ab("PreferNominatedNode=true", nominated=NominatedFigures(100.0, 1.0, 0.25))
    r.deleted_pods = 300
    r.expected_min_victims = 3
    text = render([r, _ab("PreferNominatedNode=false")])
    assert "T/w [on]" in text and "T/w [off]" in text
    assert "3.00 / 3.00" in text  # victims per preemptor: metric / deleted
    assert "victims per preemptor: expected minimum" in text
    assert "PreferNominatedNode=true" in text and "emulated version" in text
    assert "T/w: PreferNominatedNode on vs off" in text
    plain = render([Result("SchedulingBasic/50Nodes", measured_pods=10)])
    assert "victims" not in plain and "nominated" not in plain and "emulated" not in plain


def test_the_algorithm_cpu_is_the_counters_delta_per_observed_span() -> None:
    from bench.scheduler_perf import counter_mean_delta

    name = "scheduler_kemu_scheduling_algorithm_cpu_seconds_total"
    histogram = "scheduler_scheduling_algorithm_duration_seconds"
    before = parse_metrics(BEFORE + f"# TYPE {name[:-6]} counter\n{name} 0.1\n")
    after = parse_metrics(AFTER + f"# TYPE {name[:-6]} counter\n{name} 0.4\n")
    assert counter_mean_delta(before, after, name, histogram) == pytest.approx(0.3 / 100 * 1000)
    # An older scheduler without the counter, or no span observed: no figure.
    assert math.isnan(
        counter_mean_delta(parse_metrics(BEFORE), parse_metrics(AFTER), name, histogram)
    )
    assert math.isnan(counter_mean_delta(after, after, name, histogram))


def test_a_bad_html_path_is_refused_in_one_line_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.scheduler_perf import main

    assert main(["--quick", "--html", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"bench scheduler_perf: --html: {tmp_path} is a directory\n"
    assert main(["--quick", "--differential", "--html", str(tmp_path / "t.html")]) == 2
    assert "not with --differential" in capsys.readouterr().err
    assert not (tmp_path / "t.html").exists()


def test_no_workload_selected_says_why_when_the_selection_was_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file of another version (as upstream's gangscheduling/, whose GangScheduling gate is
    gone at 1.37): the labelled workloads are all refused, and the one line says how to run."""
    from bench.scheduler_perf import main

    config = tmp_path / "performance-config.yaml"
    config.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Gangs",
                    "featureGates": {"GenericWorkload": True, "GangScheduling": True},
                    "workloadTemplate": [{"opcode": "createNodes", "count": 1}],
                    "workloads": [{"name": "1Node", "labels": ["short"], "params": {}}],
                }
            ]
        )
    )
    assert main(["--config", str(config), "--label", "short"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bench scheduler_perf: no workload selected (1 skipped; Gangs/1Node: ")
    assert "run with --emulated-version 1.36" in err
    assert err.count("\n") == 1


def test_the_scheduler_runs_with_upstreams_harness_client_settings() -> None:
    """test/integration/scheduler_perf's scheduler has QPS 5000 and burst 5000, whatever its
    configuration says (issue #58 item 2)."""
    opts = sp.Options((), None, None, 1, 1, 60.0, None, "py-spy", 10)
    default = sp.harness_scheduler_config(None, opts)
    assert default["clientConnection"] == {"qps": 5000, "burst": 5000}
    assert parse_config(yaml.safe_dump(default)).client_connection == ClientConnection(5000, 5000)
    own = sp.harness_scheduler_config(
        {"apiVersion": API_VERSION, "kind": KIND, "clientConnection": {"qps": 1}}, opts
    )
    assert own["clientConnection"] == {"qps": 5000, "burst": 5000}
