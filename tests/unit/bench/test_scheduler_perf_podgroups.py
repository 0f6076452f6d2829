"""bench scheduler_perf on upstream's pod-group files (issue #55 item 5): the Go template
renderer, the ops createAny, createPodGroups, waitForPodGroups, updateAny (with
subresources) and countMultiplierParam, thresholdMetricSelector on a scheduler histogram
and metricsCollectorConfig, createCompositePodGroups (KEP-6012); the ops run
against a fake client; and upstream's gangscheduling/, podgroup/*, workload_preemption/,
cpg/ and resize_preemption/ files parsed unchanged when a checkout is at hand."""

from __future__ import annotations

import math
import os
from pathlib import Path

import anyio
import pytest
import yaml

from bench.scheduler_perf import (
    collected_metrics,
    create_any,
    histogram_value_delta,
    parse_metrics,
    update_any,
    wait_for_listed,
    wait_for_pod_groups,
)
from bench.scheduler_perf_template import TemplateError, go_format, render
from bench.scheduler_perf_workloads import (
    ATTEMPTED,
    Barrier,
    CreateAny,
    CreateCompositePodGroups,
    CreatePodGroups,
    CreatePods,
    MetricSelection,
    NotModelled,
    StartCollectingMetrics,
    ThresholdSelector,
    UpdateAny,
    WaitForPodGroups,
    Workload,
    WorkloadError,
    load_workload_file,
    parse_workloads,
    pod_objects,
)
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.component.version import Version

# ---------------------------------------------------------------------- the template renderer


def test_go_template_blocks_parentheses_and_trim_markers() -> None:
    text = (
        "a:{{- if .x }} x={{ .x }}{{- else if gt .n 1 }} big{{ else }} none{{ end }}\n"
        "b: {{ with .p }}{{ . }}{{ else }}-{{ end }}\n"
        "c: {{AddInt 7000 (Mod .Index (DivideInt .pods .nodes))}}\n"
        "{{- /* a comment */ -}}\n"
        'd: {{ or .cpu "100m" }} {{ and .x (eq .x "All") }}'
    )
    env: dict[str, object] = {"Index": 13, "pods": 100, "nodes": 10, "n": 2}
    # (the comment's trim markers join c's and d's lines, as Go's)
    assert render(text, env) == "a: big\nb: -\nc: 7003d: 100m "
    env = {**env, "x": "All", "p": 5, "cpu": "2"}
    assert render(text, env) == "a: x=All\nb: 5\nc: 7003d: 2 true"


def test_go_template_values_print_as_upstreams_html_template_prints_them() -> None:
    # A param the op does not give is Go's nil: falsy, printed as nothing by html/template.
    assert render("{{.missing}}|{{if .missing}}y{{else}}n{{end}}", {}) == "|n"
    # fmt's text, then html/template's escaper (+ included).
    assert render("{{DivideFloat 1 4}} {{MultiplyFloat 1000 1000}} {{AddFloat 1 2}}", {}) == (
        "0.25 1e&#43;06 3"
    )
    assert render("{{.s}}", {"s": "a<b & 'c'"}) == "a&lt;b &amp; &#39;c&#39;"
    assert [go_format(v) for v in (True, None, 123456.0, 1e-05, -2.5)] == [
        "true",
        "<no value>",
        "123456",
        "1e-05",
        "-2.5",
    ]
    # and/or short-circuit (Go 1.18+): eq never sees the nil.
    assert render('{{if and .m (eq .m "All")}}a{{else}}s{{end}}', {}) == "s"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{{if .x}}a", "{{if .x}}: unexpected EOF (no end)"),
        ("{{end}}", "{{end}}: unexpected end"),
        ('{{define "x"}}{{end}}', '{{define "x"}}: not supported by kemu\'s renderer'),
        ("{{$x = 1}}", "assignment to a declared variable is not supported"),
        ("{{$y}}", "undefined variable"),
        ("{{range true}}{{end}}", "range can't iterate over a bool"),
        ("{{Pow 2 3}}", '{{Pow 2 3}}: function "Pow" not defined'),
        ("{{DivideInt .Index .podsPerGroup}}", "cannot cast <nil> to float64"),
        ("{{eq .x 1}}", "error calling eq: invalid type for comparison"),
        ("{{ .x", "unclosed action"),
        ("{{AddInt (AddInt 1 2}}", "unclosed left paren"),
    ],
)
def test_go_template_errors_name_the_action(text: str, message: str) -> None:
    with pytest.raises(TemplateError, match=message.replace("(", r"\(").replace(")", r"\)")):
        render(text, {"Index": 1})


# ---------------------------------------------------------------------- parsing the ops

PODGROUP = """apiVersion: scheduling.k8s.io/{version}
kind: PodGroup
metadata:
  name: gang-{{{{.Index}}}}
spec:
  schedulingPolicy:
    gang:
      minCount: {{{{.podsPerGroup}}}}
"""
GANG_POD = """apiVersion: v1
kind: Pod
metadata:
  name: pod-{{.Index}}
spec:
  schedulingGroup:
    podGroupName: gang-{{DivideInt .Index .podsPerGroup}}
  containers:
  - {name: pause, image: pause}
"""
GANGS = """
- name: Gangs
  featureGates: {GenericWorkload: true}
  metricsCollectorConfig:
    metrics:
      scheduler_podgroup_scheduling_attempt_duration_seconds:
      - {label: result, values: [scheduled, unschedulable]}
      scheduler_schedule_attempts_total:
  thresholdMetricSelector: {name: SchedulingThroughput}
  workloadTemplate:
  - {opcode: createNodes, countParam: $nodes}
  - {opcode: createNamespaces, prefix: gang, count: 1}
  - opcode: createAny
    countParam: $groups
    namespace: gang-0
    templatePath: t/podgroup.yaml
    templateParams: {podsPerGroup: $podsPerGroup}
  - {opcode: waitForPodGroups, namespace: gang-0, countParam: $groups}
  - opcode: createPodGroups
    count: 1
    namespace: gang-0
    templatePath: t/podgroup-alpha.yaml
    templateParams: {podsPerGroup: 2}
  - opcode: createPods
    countParam: $groups
    countMultiplierParam: $podsPerGroup
    namespace: gang-0
    podTemplatePath: t/gang-pod.yaml
    collectMetrics: true
    templateParams: {podsPerGroup: $podsPerGroup}
  workloads:
  - name: small
    params: {nodes: 2, groups: 2, podsPerGroup: 3}
  - name: thresholded
    threshold: 8
    thresholdMetricSelector:
      name: scheduler_podgroup_scheduling_attempt_duration_seconds
      labels: {result: scheduled}
      dataBucket: Perc90
      expectLower: true
    params: {nodes: 2, groups: 2, podsPerGroup: 3}
"""


def _files(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir(exist_ok=True)
    (tmp_path / "t/podgroup.yaml").write_text(PODGROUP.format(version="v1beta1"))
    (tmp_path / "t/podgroup-alpha.yaml").write_text(PODGROUP.format(version="v1alpha2"))
    (tmp_path / "t/gang-pod.yaml").write_text(GANG_POD)
    (tmp_path / "t/pc.yaml").write_text(
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n"
        "  name: pc-{{.Index}}\nvalue: {{AddInt 10 .Index}}\n"
    )
    (tmp_path / "t/resize.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: pod-{{.Index}}}\nspec:\n  containers:\n"
        "  - {name: pause, resources: {requests: {cpu: 500m}}}\n"
    )
    (tmp_path / "t/pg-plain.yaml").write_text(
        "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: g}\n"
    )
    (tmp_path / "t/podtemplate.yaml").write_text(
        "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: i}\n"
    )


def _gangs(tmp_path: Path) -> list[Workload]:
    _files(tmp_path)
    return parse_workloads(yaml.safe_load(GANGS), base_dir=tmp_path)


def test_the_pod_group_ops_parse_with_upstreams_fields(tmp_path: Path) -> None:
    small, thresholded = _gangs(tmp_path)
    create, wait, pod_groups, pods = small.ops[2:]
    assert isinstance(create, CreateAny) and isinstance(wait, WaitForPodGroups)
    assert (create.count, create.namespace, create.kind.kind) == (2, "gang-0", "PodGroup")
    assert wait == WaitForPodGroups("gang-0", 2)
    # createPodGroups: the PodGroups, then the wait for them; a v1alpha2 template is read in
    # the shape kemu serves (its fields are the same).
    assert isinstance(pod_groups, CreatePodGroups)
    assert pod_groups.wait == WaitForPodGroups("gang-0", 1)
    # countMultiplierParam: groups x podsPerGroup pods, each naming its group.
    assert isinstance(pods, CreatePods) and pods.count == 6
    groups = [p.spec.scheduling_group.pod_group_name for p in pod_objects(pods, 5)]
    assert groups == ["gang-0"] * 3 + ["gang-1"] * 3
    objects = create.text.objects(create.count, create.kind)
    assert [o.metadata.name for o in objects] == ["gang-0", "gang-1"]  # type: ignore[attr-defined]
    assert all(isinstance(o, types_pb2.PodGroup) for o in objects)
    assert objects[0].spec.scheduling_policy.gang.min_count == 3  # type: ignore[attr-defined]
    # The selector: the workload's, else the test case's; metricsCollectorConfig kept.
    assert small.threshold_selector == ThresholdSelector()
    assert thresholded.threshold_selector == ThresholdSelector(
        "scheduler_podgroup_scheduling_attempt_duration_seconds",
        {"result": "scheduled"},
        "Perc90",
        expect_lower=True,
    )
    assert thresholded.threshold_selector.bound(8) == (
        "< 8 ms scheduler_podgroup_scheduling_attempt_duration_seconds{result=scheduled} Perc90"
    )
    assert ThresholdSelector().bound(100) == "100 pods/s"
    assert small.metrics == (
        MetricSelection(
            "scheduler_podgroup_scheduling_attempt_duration_seconds",
            (("result", ("scheduled", "unschedulable")),),
        ),
        MetricSelection("scheduler_schedule_attempts_total"),
    )


def test_expect_lower_is_met_strictly_under_the_threshold() -> None:
    # upstream's valueWithinThreshold: value < threshold (expectLower), else value > threshold.
    lower = ThresholdSelector("h", expect_lower=True)
    assert lower.met(7.9, 8.0) and not lower.met(8.0, 8.0)
    assert ThresholdSelector().met(10.1, 10.0) and not ThresholdSelector().met(10.0, 10.0)


def test_a_test_cases_default_selector_under_either_name(tmp_path: Path) -> None:
    selector = "{name: h, labels: {result: scheduled}, dataBucket: Perc99, expectLower: true}"
    for key in ("thresholdMetricSelector", "defaultThresholdMetricSelector"):
        op = f"{key}: {selector}"
        text = f"""
- name: T
  {op}
  workloadTemplate:
  - {{opcode: createNodes, count: 1}}
  workloads:
  - {{name: w, threshold: 5}}
  - {{name: own, threshold: 5, thresholdMetricSelector: {{name: g, dataBucket: Average}}}}
"""
        w, own = parse_workloads(yaml.safe_load(text), base_dir=tmp_path)
        assert w.threshold_selector == ThresholdSelector(
            "h", {"result": "scheduled"}, "Perc99", True
        )
        assert own.threshold_selector == ThresholdSelector("g")
    both = f"""
- name: T
  thresholdMetricSelector: {selector}
  defaultThresholdMetricSelector: {selector}
  workloadTemplate:
  - {{opcode: createNodes, count: 1}}
  workloads:
  - {{name: w}}
"""
    with pytest.raises(WorkloadError, match="give thresholdMetricSelector or default"):
        parse_workloads(yaml.safe_load(both), base_dir=tmp_path)


def _one(tmp_path: Path, op: str, extra: str = "") -> object:
    _files(tmp_path)
    text = f"""
- name: T
  {extra}
  workloadTemplate:
  - {{opcode: createNamespaces, prefix: ns, count: 1}}
  - {op}
  workloads:
  - {{name: w, params: {{n: 2, x: -1}}}}
"""
    return parse_workloads(yaml.safe_load(text), base_dir=tmp_path)[0].ops[1]


def test_create_any_defaults_and_update_any_subresources(tmp_path: Path) -> None:
    op = _one(tmp_path, "{opcode: createAny, templatePath: t/pc.yaml}")
    assert isinstance(op, CreateAny) and (op.count, op.namespace) == (1, "")  # count: 1
    upd = _one(
        tmp_path,
        "{opcode: updateAny, countParam: $n, namespace: ns-0, templatePath: t/resize.yaml, "
        "subresources: [resize], updatePerSecond: 5}",
    )
    assert isinstance(upd, UpdateAny)
    assert (upd.count, upd.subresources, upd.per_second, upd.kind.kind) == (
        2,
        ("resize",),
        5,
        "Pod",
    )


@pytest.mark.parametrize(
    ("op", "message"),
    [
        ("{opcode: createAny, namespace: ns-0, templatePath: t/pc.yaml}",
         "workloadTemplate[1].namespace: 'ns-0' set, but PriorityClass is cluster-scoped"),
        ("{opcode: createAny, templatePath: t/podgroup.yaml, templateParams: {podsPerGroup: 1}}",
         "workloadTemplate[1].namespace: required, PodGroup is namespaced"),
        ("{opcode: createAny}", "workloadTemplate[1].templatePath: required"),
        ("{opcode: createPodGroups, templatePath: t/pc.yaml}",
         "workloadTemplate[1].templatePath: expected a PodGroup, got PriorityClass"),
        ("{opcode: createPods, count: 1, countMultiplierParam: $x}",
         "workloadTemplate[1].countMultiplierParam: param 'x' of workload w is a count"),
        ("{opcode: createPods, count: 1, countMultiplierParam: n}",
         "workloadTemplate[1].countMultiplierParam: expected $name"),
        ("{opcode: waitForPodGroups, count: 1}", "workloadTemplate[1].namespace: expected a non"),
        ("{opcode: updateAny, namespace: ns-0, templatePath: t/pg-plain.yaml, subresources: [resize]}",
         "workloadTemplate[1].subresources: resize is a subresource of pods, not PodGroup"),
        ("{opcode: updateAny, namespace: ns-0, templatePath: t/resize.yaml, updatePerSecond: -1}",
         "workloadTemplate[1].updatePerSecond: expected a non-negative integer"),
    ],
)  # fmt: skip
def test_errors_of_the_pod_group_ops_name_the_field(tmp_path: Path, op: str, message: str) -> None:
    with pytest.raises(WorkloadError) as e:
        _one(tmp_path, op)
    assert message in str(e.value)


@pytest.mark.parametrize(
    ("op", "extra", "message"),
    [
        ("{opcode: createAny, templatePath: t/podtemplate.yaml}", "",
         "templatePath: kind PodTemplate: kemu does not serve it"),
        ("{opcode: updateAny, namespace: ns-0, templatePath: t/resize.yaml, subresources: [x]}",
         "", "subresources: 'x': kemu's client updates through resize and status"),
        ("{opcode: createNodes, count: 1}", "thresholdMetricSelector: {dataBucket: Perc90}",
         "kemu reports the SchedulingThroughput threshold against its Average only"),
    ],
)  # fmt: skip
def test_what_kemu_does_not_model_is_skipped_with_the_reason(
    tmp_path: Path, op: str, extra: str, message: str
) -> None:
    with pytest.raises(NotModelled, match=message.replace("(", r"\(")):
        _one(tmp_path, op, extra)


def test_a_selector_field_upstream_lacks_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match=r"thresholdMetricSelector.dataBucket: expected one"):
        _one(
            tmp_path, "{opcode: createNodes, count: 1}", "thresholdMetricSelector: {dataBucket: P}"
        )
    with pytest.raises(WorkloadError, match=r"thresholdMetricSelector.bucket: unknown field"):
        _one(tmp_path, "{opcode: createNodes, count: 1}", "thresholdMetricSelector: {bucket: P}")


# ---------------------------------------------------------------------- the ops on a fake client


def test_create_any_wait_for_pod_groups_and_update_any_run(tmp_path: Path) -> None:
    small, _ = _gangs(tmp_path)
    create = small.ops[2]
    assert isinstance(create, CreateAny)
    upd = _one(
        tmp_path,
        "{opcode: updateAny, countParam: $n, namespace: ns-0, templatePath: t/resize.yaml, "
        "subresources: [resize]}",
    )
    assert isinstance(upd, UpdateAny)

    async def main() -> None:
        async with FakeClient() as client:
            await create_any(client, create, creators=4)
            listed = await client.list(types_pb2.PodGroup, namespace="gang-0")
            assert sorted(g.metadata.name for g in listed.items) == ["gang-0", "gang-1"]
            await wait_for_pod_groups(client, WaitForPodGroups("gang-0", 2), within=1)
            with pytest.raises(TimeoutError, match="2 of 3 PodGroups in gang-0"):
                await wait_for_pod_groups(client, WaitForPodGroups("gang-0", 3), within=0.3)
            # updateAny through pods/resize: the stored pods get the template's resources.
            for i in range(2):
                pod = types_pb2.Pod()
                pod.metadata.name, pod.metadata.namespace = f"pod-{i}", "ns-0"
                pod.spec.node_name = "node-0"
                c = pod.spec.containers.add(name="pause", image="pause")
                c.resources.requests["cpu"] = "2"
                created = await client.create(pod)
                created.status.phase = "Pending"
                created.status.nominated_node_name = "node-1"
                await client.update_status(created)
            client.actions.clear()
            await update_any(client, upd)
            pods = await client.list(types_pb2.Pod, namespace="ns-0")
            cpus = [p.spec.containers[0].resources.requests["cpu"] for p in pods.items]
            assert cpus == ["500m", "500m"]
            # Each object's write, then its status from the template (upstream's update.go
            # does both every time): the template has none, so the stored status is cleared.
            verbs = [(a.verb, a.name) for a in client.actions if a.verb != "list"]
            assert verbs == [
                ("resize", "pod-0"), ("update_status", "pod-0"),
                ("resize", "pod-1"), ("update_status", "pod-1"),
            ]  # fmt: skip
            assert [p.status.phase for p in pods.items] == ["", ""]
            assert [p.status.nominated_node_name for p in pods.items] == ["", ""]
            assert [p.spec.node_name for p in pods.items] == ["node-0", "node-0"]

    anyio.run(main)


# ---------------------------------------------------------------------- histograms

BEFORE = """
# TYPE h histogram
h_bucket{result="scheduled",le="0.001"} 0
h_bucket{result="scheduled",le="0.002"} 1
h_bucket{result="scheduled",le="0.004"} 1
h_bucket{result="scheduled",le="+Inf"} 1
h_sum{result="scheduled"} 0.0015
h_count{result="scheduled"} 1
"""
AFTER = """
# TYPE h histogram
h_bucket{result="scheduled",le="0.001"} 0
h_bucket{result="scheduled",le="0.002"} 3
h_bucket{result="scheduled",le="0.004"} 5
h_bucket{result="scheduled",le="+Inf"} 5
h_sum{result="scheduled"} 0.0115
h_count{result="scheduled"} 5
"""


def test_a_histograms_data_items_over_the_phase() -> None:
    before, after = parse_metrics(BEFORE), parse_metrics(AFTER)
    # 4 observations in the phase, summing to 10 ms: 2 in (1, 2] ms, 2 in (2, 4] ms.
    assert histogram_value_delta(before, after, "h", "Average", result="scheduled") == (
        pytest.approx(0.0025)
    )
    assert histogram_value_delta(before, after, "h", "Perc50") == pytest.approx(0.002)
    assert histogram_value_delta(before, after, "h", "Perc90") == pytest.approx(0.0036)
    assert math.isnan(histogram_value_delta(after, after, "h", "Perc50"))
    w = Workload("T", "w", (), {}, (), metrics=(MetricSelection("h", (("result", ("scheduled",
                 "error")),)),))  # fmt: skip
    got = collected_metrics(w, before, after)
    assert got["h{result=scheduled}"] == pytest.approx(2.5)  # ms
    assert math.isnan(got["h{result=error}"])
    # A metric the scheduler does not expose is NaN, not an increase of 0.
    absent = Workload("T", "w", (), {}, (), metrics=(MetricSelection("nope"),))
    assert math.isnan(collected_metrics(absent, before, after)["nope"])


COUNTER_BEFORE = """
# TYPE q counter
q_total{event="A",queue="active"} 1
q_total{event="B",queue="backoff"} 2
"""
COUNTER_AFTER = """
# TYPE q counter
q_total{event="A",queue="active"} 4
q_total{event="A",queue="unschedulable"} 5
q_total{event="B",queue="backoff"} 2
q_total{event="C",queue="active"} 7
"""


def test_metrics_collector_config_reports_every_combination_of_its_labels() -> None:
    """upstream's uniqueLVCombos: two label lists give one series per pair of values (the
    first label's values outermost), each matching both labels; a counter's increase (upstream
    reports histograms only)."""
    selection = MetricSelection("q_total", (("event", ("A", "B")), ("queue", ("active",
                                "unschedulable", "backoff"))))  # fmt: skip
    assert selection.combinations() == [
        {"event": "A", "queue": "active"}, {"event": "A", "queue": "unschedulable"},
        {"event": "A", "queue": "backoff"}, {"event": "B", "queue": "active"},
        {"event": "B", "queue": "unschedulable"}, {"event": "B", "queue": "backoff"},
    ]  # fmt: skip
    assert MetricSelection("q_total").combinations() == [{}]
    assert MetricSelection("q_total", (("event", ()),)).combinations() == []
    w = Workload("T", "w", (), {}, (), metrics=(selection, MetricSelection("q_total")))
    got = collected_metrics(w, parse_metrics(COUNTER_BEFORE), parse_metrics(COUNTER_AFTER))
    assert got == {
        "q_total{event=A,queue=active}": 3.0,
        "q_total{event=A,queue=unschedulable}": 5.0,
        "q_total{event=A,queue=backoff}": 0.0,
        "q_total{event=B,queue=active}": 0.0,
        "q_total{event=B,queue=unschedulable}": 0.0,
        "q_total{event=B,queue=backoff}": 0.0,
        "q_total": 15.0,
    }


# ---------------------------------------------------------------------- upstream's files

UPSTREAM = (
    Path(os.environ.get("KEMU_K8S_CHECKOUT", "/work/k8s/kubernetes"))
    / "test/integration/scheduler_perf"
)
AREAS = (
    "gangscheduling/performance-config.yaml",
    "podgroup/basicscheduling/performance-config.yaml",
    "podgroup/gangscheduling/performance-config.yaml",
    "podgroup/tas/performance-config.yaml",
    "workload_preemption/performance-config.yaml",
    "cpg/performance-config.yaml",
    "resize_preemption/performance-config.yaml",
)


@pytest.mark.parametrize("area", AREAS)
def test_upstreams_pod_group_files_parse_unchanged(area: str) -> None:
    """Every test case of each file runs at least one workload or is listed with its reason
    naming the field; gangscheduling/ (whose GangScheduling gate is gone at 1.37) at 1.36."""
    path = UPSTREAM / area
    if not path.exists():
        pytest.skip(
            f"no kubernetes/kubernetes checkout with {area} (set KEMU_K8S_CHECKOUT to one; see "
            "docs/benchmarks.md)"
        )
    at = Version(1, 36) if area.startswith("gangscheduling/") else None
    parsed = load_workload_file(path, emulated_version=at)
    data = yaml.safe_load(path.read_text())
    cases = {w.test_case for w in parsed.workloads} | {s.name.split("/")[0] for s in parsed.skipped}
    assert cases == {case["name"] for case in data}
    for s in parsed.skipped:
        assert s.reason.startswith("["), s.reason  # names the field
    names = {w.full_name: w for w in parsed.workloads}
    if area.startswith("cpg/"):
        assert all("createCompositePodGroups" not in s.reason for s in parsed.skipped)
        assert any(isinstance(op, CreateCompositePodGroups) for w in names.values() for op in w.ops)
        return
    if area.startswith("gangscheduling/"):
        small = names["GangScheduling/10Nodes_3Gangs"]
        kinds = [type(op).__name__ for op in small.ops]
        assert kinds == ["CreateNodes", "CreateNamespaces", "CreateAny", "WaitForPodGroups",
                         "CreatePods"]  # fmt: skip
        assert small.count(CreatePods, measured=True) == 9
        big = names["GangScheduling/5000Nodes_1000Gangs_3000Pods"]
        assert big.threshold is not None
        assert big.threshold_selector.bound(big.threshold) == (
            "< 8 ms scheduler_podgroup_scheduling_attempt_duration_seconds{result=scheduled} "
            "Average"
        )
    if area.startswith("podgroup/gangscheduling"):
        small = names["GangScheduling/10Nodes_3Gangs"]
        assert isinstance(small.ops[2], CreatePodGroups) and small.ops[2].create.count == 3
        pods = small.measured
        assert pods is not None and pods.count == 9
        members = [p.spec.scheduling_group.pod_group_name for p in pod_objects(pods, 3)]
        assert members[:4] == ["gang-0", "gang-0", "gang-0", "gang-1"]
    if area.startswith("podgroup/tas"):
        # KEP-5732: every test case runs (the placement plugins, NodePoolPlacement and
        # percentageOfPlacementsToScore of its scheduler configs included).
        assert not parsed.skipped, parsed.skipped
        small = names["TopologyAwareScheduling/10Nodes_3Gangs"]
        assert small.feature_gates["TopologyAwareWorkloadScheduling"]
        pods = small.measured
        assert pods is not None and pods.count == 9
    if area.startswith("resize_preemption/"):
        # KEP-5836's file: nothing refused (its node template is the checkout's own).
        assert not parsed.skipped
        in_place = names["DeferredResizePreemptionInPlace/5Nodes_AsyncAPICallsEnabled"]
        assert in_place.feature_gates == {
            "InPlacePodVerticalScaling": True,
            "InPlacePodVerticalScalingSchedulerPreemption": True,
            "SchedulerAsyncAPICalls": True,
        }
        assert in_place.not_modelled_gates == ()  # (modelled since issue #58)
        window, resize, barrier = in_place.ops[4:7]
        assert isinstance(window, StartCollectingMetrics)
        assert window.namespaces == ("resize-inplace-0",)
        assert isinstance(resize, UpdateAny) and resize.subresources == ("resize",)
        assert (resize.count, resize.namespace) == (5, "resize-inplace-0")
        assert barrier == Barrier(("resize-inplace-0",), {}, ATTEMPTED)
        # The preemptors are pinned to node-<i> of the node template.
        initial = in_place.ops[3]
        assert isinstance(initial, CreatePods)
        assert [p.spec.node_name for p in pod_objects(initial, 3)] == [
            f"node-{i}" for i in range(5)
        ]
        incoming = next(m for m in in_place.metrics if m.name.startswith("scheduler_queue"))
        assert len(incoming.combinations()) == 15  # 5 events x 3 queues


CPG_GANG = """apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata:
  name: cpg-{{.Index}}
spec:
  workloadRef:
    workloadName: test-wl-{{.Index}}
    templateName: cpg-template
  priority: {{.priority}}
  schedulingPolicy:
    gang:
      minGroupCount: {{.minGroupCount}}
"""
PODGROUP_CHILD = """apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata:
  name: gang-group-{{.Index}}
spec:
  parentCompositePodGroupName: cpg-{{DivideInt .Index .groupsPerCPG}}
  workloadRef:
    workloadName: test-wl-{{DivideInt .Index .groupsPerCPG}}
    templateName: pg-template
  priority: {{.priority}}
  schedulingPolicy:
    gang:
      minCount: {{.minCount}}
"""
CPG_CASE = """
- name: CPGGangScheduling
  featureGates:
    GenericWorkload: true
    TopologyAwareWorkloadScheduling: true
    CompositePodGroup: true
  workloadTemplate:
  - opcode: createNodes
    countParam: $initNodes
  - opcode: createNamespaces
    prefix: cpg-gang-ns
    count: 1
  - opcode: createCompositePodGroups
    countParam: $initCPGs
    namespace: cpg-gang-ns-0
    templatePath: t/cpg-gang.yaml
    templateParams:
      minGroupCount: $minGroupCount
      priority: 1000
  - opcode: createPodGroups
    countParam: $initPodGroups
    namespace: cpg-gang-ns-0
    templatePath: t/podgroup-child.yaml
    templateParams:
      groupsPerCPG: $groupsPerCPG
      minCount: $minCount
      priority: 1000
  workloads:
  - name: 10Nodes_3CPGs_6Groups_18Pods
    params: {initNodes: 10, initCPGs: 3, initPodGroups: 6, groupsPerCPG: 2, minGroupCount: 2,
             minCount: 3}
"""


def _cpg_case(tmp_path: Path) -> Workload:
    _files(tmp_path)
    (tmp_path / "t/cpg-gang.yaml").write_text(CPG_GANG)
    (tmp_path / "t/podgroup-child.yaml").write_text(PODGROUP_CHILD)
    (workload,) = parse_workloads(yaml.safe_load(CPG_CASE), base_dir=tmp_path)
    return workload


def test_create_composite_pod_groups_parses_upstreams_cpg_case(tmp_path: Path) -> None:
    """upstream's cpg/performance-config.yaml CPGGangScheduling (its templates cpg-gang.yaml
    and podgroup-gang.yaml): the CompositePodGroups, then their child PodGroups naming them."""
    workload = _cpg_case(tmp_path)
    names = [type(op).__name__ for op in workload.ops]
    assert names == ["CreateNodes", "CreateNamespaces", "CreateCompositePodGroups",
                     "CreatePodGroups"]  # fmt: skip
    cpgs = workload.ops[2]
    assert isinstance(cpgs, CreateCompositePodGroups)
    assert (cpgs.create.count, cpgs.create.namespace) == (3, "cpg-gang-ns-0")
    objects = cpgs.create.text.objects(cpgs.create.count, cpgs.create.kind)
    first = objects[0]
    assert isinstance(first, types_pb2.CompositePodGroup)
    assert [o.metadata.name for o in objects] == ["cpg-0", "cpg-1", "cpg-2"]  # type: ignore[attr-defined]
    assert first.spec.scheduling_policy.gang.min_group_count == 2
    assert first.spec.priority == 1000
    groups = workload.ops[3]
    assert isinstance(groups, CreatePodGroups)
    children = groups.create.text.objects(groups.create.count, groups.create.kind)
    parents = [c.spec.parent_composite_pod_group_name for c in children]  # type: ignore[attr-defined]
    assert parents == ["cpg-0", "cpg-0", "cpg-1", "cpg-1", "cpg-2", "cpg-2"]
    with pytest.raises(WorkloadError, match="expected a CompositePodGroup, got PodGroup"):
        _one(tmp_path, "{opcode: createCompositePodGroups, count: 1, namespace: n, "
             "templatePath: t/pg-plain.yaml}")  # fmt: skip


def test_create_composite_pod_groups_runs_on_a_fake_client(tmp_path: Path) -> None:
    """The CompositePodGroups created (their literal priority through the run's
    PriorityClass, as a PodGroup's), then waited for until listed."""
    cpgs = _cpg_case(tmp_path).ops[2]
    assert isinstance(cpgs, CreateCompositePodGroups)

    async def main() -> None:
        async with FakeClient() as client:
            await create_any(client, cpgs.create, creators=2)
            await wait_for_listed(
                client, types_pb2.CompositePodGroup, "cpg-gang-ns-0", 3, 1,
                "createCompositePodGroups",
            )  # fmt: skip
            listed = await client.list(types_pb2.CompositePodGroup, namespace="cpg-gang-ns-0")
            assert sorted(c.metadata.name for c in listed.items) == ["cpg-0", "cpg-1", "cpg-2"]
            assert {c.spec.priority_class_name for c in listed.items} == {
                "scheduler-perf-priority-1000"
            }
            with pytest.raises(TimeoutError, match="3 of 4 CompositePodGroups in cpg-gang-ns-0"):
                await wait_for_listed(
                    client, types_pb2.CompositePodGroup, "cpg-gang-ns-0", 4, 0.3,
                    "createCompositePodGroups",
                )  # fmt: skip

    anyio.run(main)
