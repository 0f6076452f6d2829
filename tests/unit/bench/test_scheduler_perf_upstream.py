"""bench.scheduler_perf_workloads and the runner on upstream's scheduler_perf format as
upstream's files use it: churn, barrier stages and selectors, metrics collection windows,
thresholds, text templates, not-modelled gates and test cases skipped with their reasons
while the others run; and upstream's own files when a checkout is at hand."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
import yaml

from bench.scheduler_perf import (
    BarrierCounts,
    Result,
    attempted,
    barrier_by_listing,
    churn,
    churn_object,
    render,
    render_skipped,
    run_failure,
    throughput_stats,
)
from bench.scheduler_perf_workloads import (
    Barrier,
    Churn,
    CreateNodes,
    CreatePods,
    NotModelled,
    Skipped,
    StartCollectingMetrics,
    StopCollectingMetrics,
    WorkloadError,
    load_workload_file,
    node_objects,
    parse_file,
    parse_workloads,
    pod_objects,
    render_template,
)
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.component.version import Version
from kemu.testing.builders import make_pod

ONE = """
- name: T
  workloadTemplate:
  - opcode: createNodes
    count: 2
  - opcode: createPods
    count: 1
    collectMetrics: true
  workloads:
  - name: w
    params: {}
"""


def _file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _ops(tmp_path: Path, ops: str, extra_files: dict[str, str] | None = None) -> list[object]:
    for name, text in (extra_files or {}).items():
        _file(tmp_path, name, text)
    text = f"""
- name: T
  workloadTemplate:
{ops}
  workloads:
  - name: w
    params: {{n: 3}}
"""
    (w,) = parse_workloads(yaml.safe_load(text), base_dir=tmp_path)
    return list(w.ops)


POD = "apiVersion: v1\nkind: Pod\nmetadata: {generateName: p-}\nspec:\n  priority: 7\n  containers: [{name: c, image: i}]\n"
SERVICE = (
    "apiVersion: v1\nkind: Service\nmetadata: {generateName: s-}\nspec: {ports: [{port: 80}]}\n"
)


def test_churn_barrier_and_collection_ops_parse(tmp_path: Path) -> None:
    ops = _ops(
        tmp_path,
        """  - opcode: churn
    mode: recreate
    number: 2
    intervalMilliseconds: 250
    templatePaths: [t/pod.yaml, t/svc.yaml]
  - opcode: churn
    mode: create
    namespace: extra
    templatePaths: [t/pod.yaml]
  - opcode: startCollectingMetrics
    name: window
    namespaces: [ns]
    labelSelector: {a: b}
  - opcode: createPods
    countParam: $n
    namespace: ns
    skipWaitToCompletion: true
  - opcode: barrier
    namespaces: [ns]
    labelSelector: {a: b}
    stageRequirement: Attempted
  - opcode: stopCollectingMetrics""",
        {"t/pod.yaml": POD, "t/svc.yaml": SERVICE},
    )
    recreate, create, start, _, barrier, stop = ops
    assert isinstance(recreate, Churn) and isinstance(create, Churn)
    assert (recreate.mode, recreate.number, recreate.interval) == ("recreate", 2, 0.25)
    assert recreate.namespace == "namespace-0"  # upstream's default: namespace-<op index>
    assert [type(t).__name__ for t in recreate.templates] == ["Pod", "Service"]
    assert (create.mode, create.number, create.interval, create.namespace) == (
        "create",
        0,
        0.5,  # upstream's default interval
        "extra",
    )
    assert start == StartCollectingMetrics("window", ("ns",), {"a": "b"})
    assert barrier == Barrier(("ns",), {"a": "b"}, "Attempted")
    assert isinstance(stop, StopCollectingMetrics)


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ("  - {opcode: churn, mode: sometimes, templatePaths: [t/pod.yaml]}", "workloadTemplate[0].mode: expected create or recreate"),
        ("  - {opcode: churn, mode: recreate, templatePaths: [t/pod.yaml]}", "workloadTemplate[0].number: must be positive"),
        ("  - {opcode: churn, mode: create, number: -1, templatePaths: [t/pod.yaml]}", "workloadTemplate[0].number: expected a non-negative"),
        ("  - {opcode: churn, mode: create, intervalMilliseconds: x, templatePaths: [t/pod.yaml]}", "workloadTemplate[0].intervalMilliseconds"),
        ("  - {opcode: churn, mode: create, templatePaths: []}", "workloadTemplate[0].templatePaths: expected a non-empty"),
        ("  - {opcode: churn, mode: create, templatePaths: [t/ns.yaml]}", "workloadTemplate[0].templatePaths[0]: kind 'Namespace'"),
        ("  - {opcode: barrier, stageRequirement: Bound}", "workloadTemplate[0].stageRequirement: expected Scheduled or Attempted"),
        ("  - {opcode: barrier, labelSelector: [a]}", "workloadTemplate[0].labelSelector: expected a mapping"),
        ("  - {opcode: startCollectingMetrics, namespaces: []}", "workloadTemplate[0].namespaces: expected a non-empty"),
        ("  - {opcode: startCollectingMetrics, namespaces: [a]}", "workloadTemplate[0].opcode: no stopCollectingMetrics op after it"),
        ("  - {opcode: stopCollectingMetrics}", "workloadTemplate[0].opcode: no startCollectingMetrics op before it"),
        ("  - {opcode: createPods, count: 1, templateParams: {X: $nope}, podTemplatePath: t/pod.yaml}", "workloadTemplate[0].templateParams.X: no param 'nope'"),
        ("  - {opcode: createPods, count: 1, podTemplatePath: t/bad.yaml}", "workloadTemplate[0].podTemplatePath: template {{AddInt .Missing 1}}: cannot cast <nil> to float64"),
        ("  - {opcode: createPods, count: 1, podTemplatePath: t/func.yaml}", "workloadTemplate[0].podTemplatePath: template {{Pow .Index 2}}: function \"Pow\" not defined"),
        ("  - {opcode: createPods, count: 1, podTemplatePath: t/none.yaml}", "workloadTemplate[0].podTemplatePath: [Errno 2]"),
    ],
)  # fmt: skip
def test_errors_of_the_upstream_ops_name_the_field(tmp_path: Path, ops: str, message: str) -> None:
    files = {
        "t/pod.yaml": POD,
        "t/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n",
        "t/bad.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: 'p{{AddInt .Missing 1}}'}\n",
        "t/func.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: 'p{{Pow .Index 2}}'}\n",
    }
    with pytest.raises(WorkloadError) as e:
        _ops(tmp_path, ops, files)
    assert message in str(e.value)
    assert str(e.value).startswith("[0] T.")


def test_go_template_actions_as_upstreams_functions() -> None:
    env = {"Index": 7, "Count": 10, "Name": "x", "Half": 0.5}
    assert render_template("{{.Index}}/{{ .Count }}-{{.Name}}", env, "w") == "7/10-x"
    assert (
        render_template("{{AddInt .Index 3 1}} {{SubtractInt .Count .Index}}", env, "w") == "11 3"
    )
    assert (
        render_template(
            "{{MultiplyInt .Index 2}} {{DivideInt .Index 2}} {{Mod .Index 4}}", env, "w"
        )
        == "14 3 3"
    )
    assert (
        render_template(
            "{{AddFloat .Half 1}} {{DivideFloat .Index 2}} {{MultiplyFloat .Half 4}}", env, "w"
        )
        == "1.5 3.5 2"
    )
    assert render_template("{{Mod -7 3}}", env, "w") == "-1"  # Go's %: truncated
    with pytest.raises(WorkloadError, match="w: template {{DivideInt 1 0}}: division by zero"):
        render_template("{{DivideInt 1 0}}", env, "w")
    with pytest.raises(
        WorkloadError,
        match="w: template {{SubtractInt 1}}: wrong number of args for SubtractInt: want 2 got 1",
    ):
        render_template("{{SubtractInt 1}}", env, "w")


def test_a_named_pod_template_rendered_per_pod_keeps_its_names(tmp_path: Path) -> None:
    _file(
        tmp_path,
        "p.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: r-{{.Index}}\nspec:\n  containers:\n"
        "  - name: c\n    image: i\n    resources: {requests: {example.com/r-{{.Index}}: 1}}\n",
    )
    (op,) = _ops(tmp_path, "  - {opcode: createPods, countParam: $n, podTemplatePath: p.yaml}")
    assert isinstance(op, CreatePods) and op.text is not None
    pods = pod_objects(op, 0)
    assert [p.metadata.name for p in pods] == ["r-0", "r-1", "r-2"]
    assert dict(pods[2].spec.containers[0].resources.requests) == {"example.com/r-2": "1"}


def test_a_node_template_gets_index_count_and_template_params(tmp_path: Path) -> None:
    _file(
        tmp_path,
        "n.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  generateName: n-\n  labels: {k: '{{.K}}-{{.Index}}of{{.Count}}'}\n"
        "status: {capacity: {cpu: '4'}}\n",
    )
    (op,) = _ops(
        tmp_path,
        "  - {opcode: createNodes, countParam: $n, nodeTemplatePath: n.yaml, templateParams: {K: $n}}",
    )
    assert isinstance(op, CreateNodes)
    nodes = node_objects(op, 4)
    assert [n.metadata.name for n in nodes] == ["n-4-0", "n-4-1", "n-4-2"]
    assert [n.metadata.labels["k"] for n in nodes] == ["3-0of3", "3-1of3", "3-2of3"]


MIXED = """
- name: Good
  workloadTemplate:
  - {opcode: createNodes, count: 1}
  - {opcode: createPods, count: 1, collectMetrics: true}
  workloads:
  - {name: a, threshold: 35, featureGates: {SchedulerPopFromBackoffQ: true, SchedulerAsyncAPICalls: true}}
  - {name: locked, featureGates: {NodeDeclaredFeatures: false}}
  - {name: bad, params: [-1]}
- name: Dra
  workloadTemplate:
  - {opcode: createResourceClaims, templatePath: t.yaml}
  workloads:
  - {name: a}
  - {name: b}
- name: SteadyState
  workloadTemplate:
  - {opcode: createPods, count: 1, steadyState: true}
  workloads:
  - {name: a}
- name: OtherMetric
  thresholdMetricSelector: {dataBucket: Perc90}
  workloadTemplate:
  - {opcode: createNodes, count: 1}
  workloads:
  - {name: a}
- name: Broken
  workloadTemplate: []
  workloads:
  - {name: a}
- name: AlsoGood
  workloadTemplate:
  - {opcode: createNodes, count: 1}
  workloads:
  - {name: a}
"""


def test_one_bad_test_case_does_not_refuse_the_others() -> None:
    parsed = parse_file(yaml.safe_load(MIXED))
    assert [w.full_name for w in parsed.workloads] == ["Good/a", "AlsoGood/a"]
    good = parsed.workloads[0]
    assert good.threshold == 35.0
    assert good.not_modelled_gates == ("SchedulerPopFromBackoffQ",)  # (the other modelled)
    by_name = {s.name: s for s in parsed.skipped}
    assert set(by_name) == {
        "Good/locked",
        "Good/bad",
        "Dra",
        "SteadyState/a",
        "OtherMetric",
        "Broken",
    }
    locked = by_name["Good/locked"]
    assert locked.refused and "[0] Good.workloads[1].featureGates" in locked.reason
    assert "locked to true" in locked.reason
    # The refusal names the newest version where the settings are valid, and the flag.
    assert locked.reason.endswith(
        "every gate setting of the workload is valid at emulated version 1.36: "
        "run with --emulated-version 1.36"
    )
    assert by_name["Good/bad"].refused and "workloads[2].params: expected a mapping" in (
        by_name["Good/bad"].reason
    )
    # Not modelled: skipped with the reason, named at the test case when every workload is.
    assert by_name["Dra"] == Skipped(
        "Dra",
        "[1] Dra.workloadTemplate[0].opcode: createResourceClaims: not run by kemu (no "
        "upstream file of 1.33+ uses it)",
    )
    # upstream's createPodsOp.isValid: a steady state needs a duration.
    assert by_name["SteadyState/a"].refused
    assert "duration: when creating pods in a steady state, the test duration must be > 0" in (
        by_name["SteadyState/a"].reason
    )
    assert not by_name["OtherMetric"].refused
    assert "thresholdMetricSelector" in by_name["OtherMetric"].reason
    assert by_name["Broken"].refused and "[4] Broken.workloadTemplate" in by_name["Broken"].reason
    text = render_skipped(parsed.skipped)
    assert "Dra: not modelled: " in text and "Good/bad: refused: " in text


def test_strict_parsing_refuses_the_first_bad_one() -> None:
    with pytest.raises(WorkloadError, match="workloads\\[1\\].featureGates"):
        parse_workloads(yaml.safe_load(MIXED))
    with pytest.raises(NotModelled, match="createResourceClaims"):
        parse_workloads(yaml.safe_load(MIXED.split("- name: Volumes")[0].replace(
            "  - {name: locked, featureGates: {NodeDeclaredFeatures: false}}\n  - {name: bad, params: [-1]}\n", ""
        )))  # fmt: skip


def test_threshold_errors_name_the_field() -> None:
    text = ONE.replace("params: {}", "threshold: fast")
    with pytest.raises(
        WorkloadError, match=r"\[0\] T.workloads\[0\].threshold: expected a non-negative number"
    ):
        parse_workloads(yaml.safe_load(text))  # fmt: skip


# ---------------------------------------------------------------------- the runner's ops


@pytest.mark.anyio
async def test_churn_create_makes_one_of_each_template_a_round_up_to_number() -> None:
    fake = FakeClient()
    pod = types_pb2.Pod()
    pod.metadata.generate_name = "p-"
    svc = types_pb2.Service()
    svc.metadata.generate_name = "s-"
    op = Churn("create", 3, 0.01, "ch", (pod, svc))
    with anyio.fail_after(5):
        await churn(fake, op, 2)
    pods = sorted(p.metadata.name for p in (await fake.list(types_pb2.Pod, "ch")).items)
    services = (await fake.list(types_pb2.Service, "ch")).items
    assert pods == ["p-2-0", "p-2-2", "p-2-4"] and len(services) == 3


@pytest.mark.anyio
async def test_churn_recreate_alternates_create_and_delete_per_slot() -> None:
    fake = FakeClient()
    node = types_pb2.Node()
    node.metadata.generate_name = "n-"
    op = Churn("recreate", 2, 0.02, "ch", (node,))
    seen: list[int] = []

    async def sample_until(done: Callable[[int], bool]) -> None:
        # (every few milliseconds, until `done`, within a deadline: a loaded machine slows
        # the churn and the sampling alike)
        with anyio.fail_after(10):
            while True:
                seen.append(len((await fake.list(types_pb2.Node)).items))
                if done(seen[-1]):
                    return
                await anyio.sleep(0.002)

    async with anyio.create_task_group() as tg:
        tg.start_soon(churn, fake, op, 0)
        await sample_until(lambda n: n == 2)  # both slots created
        await sample_until(lambda n: n < 2)  # then one deleted to be re-created
        tg.cancel_scope.cancel()
    assert max(seen) <= 2, seen  # at most `number` objects live


@pytest.mark.anyio
async def test_a_barrier_of_stage_attempted_counts_pods_the_scheduler_tried() -> None:
    fake = FakeClient()
    pods = [make_pod(f"p{i}").namespace("ns").label("a", "b").obj() for i in range(2)]
    await fake.create(pods[0])  # untried, and pods[1] not there yet
    op = Barrier(("ns",), {"a": "b"}, "Attempted")
    with pytest.raises(TimeoutError):
        await barrier_by_listing(fake, {"ns": 2}, op, within=0.3)
    await fake.delete(types_pb2.Pod, "p0", "ns")
    tried, bound = pods
    cond = tried.status.conditions.add()
    cond.type, cond.status, cond.reason = "PodScheduled", "False", "SchedulingGated"
    bound.spec.node_name = "n1"
    for p in pods:
        p.metadata.resource_version = ""
        await fake.create(p)
    assert attempted(tried) and attempted(bound)
    assert not attempted(make_pod("new").obj())
    # It returns the bound pods its lists saw, for the tracker's watch to catch up with.
    assert await barrier_by_listing(fake, {"ns": 2}, op, within=2) == ["ns/p1"]
    with pytest.raises(TimeoutError):  # stage Scheduled: one is not bound
        await barrier_by_listing(fake, {"ns": 2}, Barrier(("ns",)), within=0.3)


@pytest.mark.anyio
async def test_a_barrier_with_a_selector_waits_for_as_many_matching_pods_as_were_created() -> None:
    """upstream's want count is every pod the ops created in the namespace, the selector
    only chooses which bound pods count towards it."""
    fake = FakeClient()
    for i, app in enumerate(["x", "x", "y"]):
        await fake.create(make_pod(f"p{i}").namespace("ns").label("app", app).node("n1").obj())
    op = Barrier(("ns",), {"app": "x"})
    with pytest.raises(TimeoutError):  # 3 created, 2 of them match
        await barrier_by_listing(fake, {"ns": 3}, op, within=0.3)
    await fake.create(make_pod("p3").namespace("ns").label("app", "x").node("n2").obj())
    await barrier_by_listing(fake, {"ns": 3}, op, within=2)
    await barrier_by_listing(fake, {"ns": 0}, op, within=0.1)  # nothing to wait for


def test_barrier_counts_follow_upstreams_pods_per_namespace() -> None:
    counts = BarrierCounts()
    counts.namespaces_created(["a-0", "a-1"])
    counts.pods_created(CreatePods(3, types_pb2.Pod(), namespace="a-0", skip_wait=True))
    counts.pods_created(CreatePods(5, types_pb2.Pod(), namespace="a-0"))  # waited: not counted
    counts.pods_created(CreatePods(2, types_pb2.Pod(), namespace="b", skip_wait=True))
    counts.pods_created(CreatePods(4, types_pb2.Pod(), namespace="b", skip_wait=True))
    counts.pods_created(CreatePods(1, types_pb2.Pod(), namespace="c"))
    assert counts.targets(Barrier()) == {"a-0": 3, "a-1": 0, "b": 6}
    with pytest.raises(ValueError, match="unknown namespace c"):
        counts.targets(Barrier(("c",)))
    counts.passed(Barrier(("b",), stage="Attempted"))  # Attempted forgets nothing
    assert counts.targets(Barrier(("b",))) == {"b": 6}
    counts.passed(Barrier(("b",)))  # Scheduled forgets what it waited on
    with pytest.raises(ValueError, match="unknown namespace b"):
        counts.targets(Barrier(("b",)))
    counts.pods_created(CreatePods(1, types_pb2.Pod(), namespace="b", skip_wait=True))
    assert counts.targets(Barrier(("b",))) == {"b": 1}
    counts.passed(Barrier())  # with no namespaces: all of them
    assert counts.targets(Barrier()) == {}


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        # createPods that waits for its pods does not make its namespace known
        (
            "  - {opcode: createPods, count: 1, namespace: w}\n  - {opcode: barrier, namespaces: [w]}",
            "workloadTemplate[1].namespaces: no op before the barrier creates 'w'",
        ),
        # a barrier of stage Scheduled forgets the namespace, one of stage Attempted does not
        (
            "  - {opcode: createPods, count: 1, namespace: w, skipWaitToCompletion: true}\n  - {opcode: barrier, namespaces: [w]}\n  - {opcode: barrier, namespaces: [w]}",
            "workloadTemplate[2].namespaces: no op before the barrier creates 'w'",
        ),
        (
            "  - {opcode: createPods, count: 1, namespace: w, skipWaitToCompletion: true}\n  - {opcode: barrier}\n  - {opcode: barrier, namespaces: [w]}",
            "workloadTemplate[2].namespaces: no op before the barrier creates 'w'",
        ),
    ],
)
def test_a_barrier_names_only_namespaces_upstream_would_know(ops: str, message: str) -> None:
    text = f"""
- name: T
  workloadTemplate:
{ops}
  - {{opcode: createPods, count: 1, collectMetrics: true}}
  workloads:
  - {{name: w}}
"""
    with pytest.raises(WorkloadError, match=re.escape(message)):
        parse_workloads(yaml.safe_load(text))
    attempted_first = text.replace(
        "  - {opcode: barrier, namespaces: [w]}\n  - {opcode: barrier",
        "  - {opcode: barrier, namespaces: [w], stageRequirement: Attempted}\n  - {opcode: barrier",
    )
    if attempted_first != text and "skipWaitToCompletion" in text:
        parse_workloads(yaml.safe_load(attempted_first))


def test_the_threshold_is_reported_met_or_not() -> None:
    met = Result("T/a", threshold=10.0, throughput=throughput_stats([12.0, 14.0]))
    met.threshold_met = met.throughput.average >= 10.0
    missed = Result(
        "T/b", threshold=100.0, throughput=throughput_stats([12.0]), threshold_met=False
    )
    text = render([met, missed])
    row = next(line for line in text.splitlines() if line.startswith("upstream threshold"))
    assert "10 (met, 1.30x)" in row and "100 (NOT met, 0.12x)" in row
    assert not math.isnan(met.throughput.average)


# ---------------------------------------------------------------------- upstream's files

UPSTREAM = (
    Path(os.environ.get("KEMU_K8S_CHECKOUT", "/work/k8s/kubernetes"))
    / "test/integration/scheduler_perf"
)


@pytest.mark.skipif(
    not (UPSTREAM / "misc" / "performance-config.yaml").exists(),
    reason="no kubernetes/kubernetes checkout (set KEMU_K8S_CHECKOUT to one; see docs/benchmarks.md)",
)
@pytest.mark.parametrize(
    ("area", "version"), [("misc", None), ("default_preemption", None), ("affinity", "1.33")]
)
def test_upstreams_files_parse_unchanged(area: str, version: str | None) -> None:
    at = Version.parse(version) if version else None
    parsed = load_workload_file(UPSTREAM / area / "performance-config.yaml", emulated_version=at)
    names = {w.full_name for w in parsed.workloads}
    assert names
    # Every test case runs at least one workload or is listed with its reason.
    cases = {w.test_case for w in parsed.workloads} | {s.name.split("/")[0] for s in parsed.skipped}
    data = yaml.safe_load((UPSTREAM / area / "performance-config.yaml").read_text())
    assert cases == {case["name"] for case in data}
    for s in parsed.skipped:
        assert s.reason.startswith("[")  # names the field
    smallest = [w for w in parsed.workloads if "integration-test" in w.labels]
    assert smallest
    for w in smallest:
        for index, op in enumerate(w.ops):
            if isinstance(op, CreatePods):
                assert len(pod_objects(op, index)) == op.count
            elif isinstance(op, CreateNodes):
                assert len(node_objects(op, index)) == op.count
    if area == "default_preemption":
        assert "PreemptionAsync/5000Nodes" in names
        churn_op = next(op for op in parsed.workloads[4].ops if isinstance(op, Churn))
        assert churn_op.interval == 0.2 and churn_op.mode == "create"


@pytest.mark.skipif(
    not (UPSTREAM / "misc" / "performance-config.yaml").exists(),
    reason="no kubernetes/kubernetes checkout (set KEMU_K8S_CHECKOUT to one; see docs/benchmarks.md)",
)
@pytest.mark.parametrize("area", ["misc", "default_preemption", "affinity"])
def test_every_workload_refused_for_its_gates_runs_at_the_version_its_refusal_names(
    area: str,
) -> None:
    path = UPSTREAM / area / "performance-config.yaml"
    refused = [s for s in load_workload_file(path).skipped if s.refused]
    by_version: dict[str, set[str]] = {}
    for s in refused:
        found = re.search(r"run with --emulated-version (1\.\d+)$", s.reason)
        assert found, s.reason
        by_version.setdefault(found.group(1), set()).add(s.name)
    for version, names in by_version.items():
        at = load_workload_file(path, emulated_version=Version.parse(version))
        ran = {w.full_name: w for w in at.workloads}
        assert names <= set(ran)
        assert {ran[n].emulated_version for n in names} == {version}


def test_a_churned_pod_gets_its_priority_through_the_runs_priority_class(tmp_path: Path) -> None:
    _file(tmp_path, "t/pod.yaml", POD)
    text = """
- name: T
  workloadTemplate:
  - {opcode: churn, mode: create, templatePaths: [t/pod.yaml]}
  workloads:
  - {name: w}
"""
    (w,) = parse_workloads(yaml.safe_load(text), base_dir=tmp_path)
    assert w.priorities() == [7]
    (op,) = w.ops
    assert isinstance(op, Churn)
    pod = churn_object(op.templates[0], 0, 5)
    assert isinstance(pod, types_pb2.Pod)
    assert pod.metadata.name == "p-0-5" and not pod.metadata.generate_name
    assert pod.spec.priority_class_name == "scheduler-perf-priority-7"
    assert not pod.spec.HasField("priority")


def test_a_timeout_inside_the_runs_task_groups_fails_that_run_only() -> None:
    timeout = TimeoutError("the pods of op 3 were not all bound within 900 s")
    nested = ExceptionGroup("outer", [ExceptionGroup("inner", [timeout])])
    assert run_failure(nested) is timeout
    assert run_failure(timeout) is timeout
    assert run_failure(ExceptionGroup("two", [timeout, ValueError("x")])) is None
    assert run_failure(KeyError("bug")) is None


def test_a_refused_workload_named_with_workload_says_why_and_which_versions_run_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.scheduler_perf import main

    path = tmp_path / "mixed.yaml"
    path.write_text(MIXED)
    assert main(["--config", str(path), "--workload", "Good/locked"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "bench scheduler_perf: Good/locked does not run at emulated version 1.37: "
    )
    assert "locked to true" in err
    # (NodeDeclaredFeatures came in 1.35, and is locked from 1.37)
    assert err.rstrip().endswith("the emulated versions that run it: 1.35 to 1.36"), err
    assert len(err.splitlines()) == 1
    # Not modelled at any version: said so, not "no workload".
    assert main(["--config", str(path), "--workload", "Dra"]) == 2
    err = capsys.readouterr().err
    assert (
        "createResourceClaims" in err
        and "it runs at no emulated version kemu has (1.21 to 1.37)" in err
    )
    # An unknown name is still one.
    assert main(["--config", str(path), "--workload", "Nope"]) == 2
    assert "no workload 'Nope'" in capsys.readouterr().err
