"""The pure parts of bench.scheduler_perf: workload files, throughput samples, metric deltas,
the bind tracker, py-spy stack summaries and the table."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.common import summarize_stacks
from bench.scheduler_perf import (
    WORKLOADS_FILE,
    Barrier,
    BindTracker,
    CreateNodes,
    CreatePods,
    Result,
    WorkloadError,
    by_label,
    delta_by_label,
    histogram_mean_delta,
    load_workloads,
    metric_delta,
    metric_sum,
    node_objects,
    parse_metrics,
    parse_workloads,
    pod_objects,
    render,
    select_workloads,
    throughput_samples,
    throughput_stats,
)
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
    assert [w.name for w in select_workloads(list(workloads.values()), [], "quick")] == ["50Nodes"]
    assert [w.name for w in select_workloads(list(workloads.values()), [], "performance")] == [
        "500Nodes",
        "5000Nodes",
    ]


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
        (("opcode: barrier", "opcode: sleep"), "workloadTemplate[2].opcode: expected one of barrier, createNodes, createPods, got 'sleep'"),
        (("opcode: barrier", "opcode: barrier\n    colour: red"), "workloadTemplate[2].colour: unknown field"),
        (("collectMetrics: true", "collectMetrics: yes please"), "workloadTemplate[3].collectMetrics: expected true or false"),
        (("collectMetrics: true", "collectMetrics: true\n    skipWaitToCompletion: true"), "workloadTemplate[3].skipWaitToCompletion"),
        (("  - opcode: barrier", "  - opcode: createPods\n    count: 1\n    collectMetrics: true"), "workloadTemplate[3].collectMetrics: only one op"),
        (("params: {initNodes: 5,", "params: {initNodes: many,"), "workloads[0].params.initNodes: expected a non-negative integer"),
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
    assert tracker.op_done(3) and tracker.namespaces_done([]) and tracker.pending() == 0
    assert tracker.events == 5
    await tracker.wait_op(3, within=0.1)  # already done: returns at once


@pytest.mark.anyio
async def test_waiting_for_pods_that_are_never_bound_times_out_with_the_count() -> None:
    tracker = BindTracker(FakeClock())
    tracker.expect(1, [make_pod("p").namespace("a").obj()])
    with pytest.raises(TimeoutError, match="1 pods not bound"):
        await tracker.wait_namespaces(["a"], within=0.01)


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
    ok.rss_kib = {"scheduler": 100 * 1024}
    failed = Result("SchedulingBasic/5000Nodes", error="TimeoutError: too slow")
    text = render([ok, failed])
    header = next(line for line in text.splitlines() if "SchedulingBasic/500Nodes" in line)
    assert "SchedulingBasic/5000Nodes" in header
    assert "123.4" in text and "3.21" in text and "scheduled=1000" in text
    assert "SchedulingBasic/5000Nodes: FAILED: TimeoutError: too slow" in text
