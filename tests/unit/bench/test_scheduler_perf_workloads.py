"""bench.scheduler_perf_workloads: upstream's ops for namespaces, pod sets, node labels,
sleep and deletePods, kemu's own shipped workload files and templates; and the runner's
helpers for those ops (namespaces, deletions) on a FakeClient."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from bench.scheduler_perf import (
    BindTracker,
    create_namespaces,
    delete_pods,
    pods_to_delete,
)
from bench.scheduler_perf_workloads import (
    DEFAULT_POD_TEMPLATE_PATH,
    WORKLOAD_FILES,
    Barrier,
    Churn,
    CreateNamespaces,
    CreateNodes,
    CreatePods,
    DeletePods,
    NodeLabels,
    Sleep,
    UpdateAny,
    WorkloadError,
    load_workload_files,
    namespace_objects,
    node_objects,
    parse_workloads,
    pod_objects,
    select_workloads,
)
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.testing.builders import make_pod

NS_SELECTOR = """
- name: WithNS
  workloadTemplate:
  - opcode: createNodes
    countParam: $initNodes
    labelNodePrepareStrategy:
      labelKey: topology.kubernetes.io/zone
      labelValues: [zone1, zone2]
  - opcode: createNamespaces
    prefix: init-ns
    countParam: $initNamespaces
    namespaceTemplate:
      metadata: {labels: {team: devops}}
  - opcode: createNamespaces
    prefix: measure-ns
    count: 1
  - opcode: createPodSets
    countParam: $initNamespaces
    namespacePrefix: init-ns
    createPodsOp:
      opcode: createPods
      countParam: $initPodsPerNamespace
  - opcode: createPods
    count: 2
  - opcode: barrier
    namespaces: [init-ns-1]
  - opcode: sleep
    duration: 1m500ms
  - opcode: deletePods
    namespace: init-ns-0
    labelSelector: {color: green}
    deletePodsPerSecond: 50
    skipWaitToCompletion: true
  - opcode: createPods
    countParam: $measurePods
    collectMetrics: true
    namespace: measure-ns-0
  workloads:
  - name: small
    params: {initNodes: 3, initNamespaces: 3, initPodsPerNamespace: 2, measurePods: 4}
"""


def _parse(text: str) -> Any:
    return parse_workloads(yaml.safe_load(text))


def _error(text: str) -> str:
    with pytest.raises(WorkloadError) as e:
        _parse(text)
    return str(e.value)


def test_pod_sets_are_unrolled_into_one_create_pods_per_namespace() -> None:
    (w,) = _parse(NS_SELECTOR)
    kinds = [type(op).__name__ for op in w.ops]
    assert kinds == [
        "CreateNodes", "CreateNamespaces", "CreateNamespaces",
        "CreatePods", "CreatePods", "CreatePods",  # the pod set, one op per namespace
        "CreatePods", "Barrier", "Sleep", "DeletePods", "CreatePods",
    ]  # fmt: skip
    sets = [op for op in w.ops[3:6] if isinstance(op, CreatePods)]
    assert [(op.namespace, op.count) for op in sets] == [
        ("init-ns-0", 2),
        ("init-ns-1", 2),
        ("init-ns-2", 2),
    ]
    # Op indices count the unrolled ops, as upstream's default namespace does.
    plain = w.ops[6]
    assert isinstance(plain, CreatePods) and plain.namespace == "namespace-6"
    assert w.count(CreatePods, measured=False) == 8
    assert w.measured is w.ops[10]
    assert w.ops[7] == Barrier(("init-ns-1",))
    assert w.ops[8] == Sleep(60.5)
    assert w.ops[9] == DeletePods(
        "init-ns-0", label_selector={"color": "green"}, skip_wait=True, per_second=50
    )


def test_namespaces_are_the_template_named_prefix_index() -> None:
    (w,) = _parse(NS_SELECTOR)
    init, measure = w.ops[1], w.ops[2]
    assert isinstance(init, CreateNamespaces) and isinstance(measure, CreateNamespaces)
    namespaces = namespace_objects(init)
    assert [n.metadata.name for n in namespaces] == ["init-ns-0", "init-ns-1", "init-ns-2"]
    assert all(dict(n.metadata.labels) == {"team": "devops"} for n in namespaces)
    (plain,) = namespace_objects(measure)
    assert plain.metadata.name == "measure-ns-0" and not plain.metadata.labels


def test_node_labels_go_round_robin_and_a_named_node_keeps_its_name() -> None:
    (w,) = _parse(NS_SELECTOR)
    op = w.ops[0]
    assert isinstance(op, CreateNodes)
    assert op.labels == NodeLabels("topology.kubernetes.io/zone", ("zone1", "zone2"))
    zones = [n.metadata.labels["topology.kubernetes.io/zone"] for n in node_objects(op, 0)]
    assert zones == ["zone1", "zone2", "zone1"]

    named = _parse(
        NS_SELECTOR.replace(
            "    countParam: $initNodes\n",
            "    count: 1\n    nodeTemplate:\n      metadata: {name: scheduler-perf-node}\n"
            "      status: {capacity: {pods: '90000'}}\n",
            1,
        )
    )[0].ops[0]
    (node,) = node_objects(named, 0)
    assert node.metadata.name == "scheduler-perf-node"
    assert node.metadata.labels["kubernetes.io/hostname"] == "scheduler-perf-node"
    assert node.metadata.labels["topology.kubernetes.io/zone"] == "zone1"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("    prefix: init-ns\n", ""), "workloadTemplate[1].prefix: expected a non-empty string"),
        (("    prefix: init-ns\n", "    prefix: init-ns\n    colour: red\n"), "workloadTemplate[1].colour: unknown field"),
        (("namespaceTemplate:\n      metadata: {labels: {team: devops}}", "namespaceTemplate: {spec: 3}"), "workloadTemplate[1].namespaceTemplate: "),
        (("    namespacePrefix: init-ns\n", ""), "workloadTemplate[3].namespacePrefix: expected a non-empty string"),
        (("      opcode: createPods\n", "      opcode: createNodes\n"), "workloadTemplate[3].createPodsOp.opcode: expected createPods, got 'createNodes'"),
        (("      countParam: $initPodsPerNamespace\n", "      countParam: $initPodsPerNamespace\n      namespace: x\n"), "workloadTemplate[3].createPodsOp.namespace: the pods of set i go to namespace init-ns-<i>"),
        (("      countParam: $initPodsPerNamespace\n", "      countParam: $nope\n"), "workloadTemplate[3].createPodsOp.countParam: workload small has no param 'nope'"),
        (("labelValues: [zone1, zone2]", "labelValues: []"), "workloadTemplate[0].labelNodePrepareStrategy.labelValues: expected a non-empty list"),
        (("labelKey: topology.kubernetes.io/zone", "key: zone"), "workloadTemplate[0].labelNodePrepareStrategy.key: unknown field"),
        (("namespaces: [init-ns-1]", "namespaces: [nowhere]"), "workloadTemplate[5].namespaces: no op before the barrier creates 'nowhere'"),
        (("duration: 1m500ms", "duration: 5 seconds"), 'workloadTemplate[6].duration: time: unknown unit'),
        (("duration: 1m500ms", "duration: 5"), 'workloadTemplate[6].duration: expected a duration such as "5s"'),
        (("    namespace: init-ns-0\n", ""), "workloadTemplate[7].namespace: expected a non-empty string"),
        (("deletePodsPerSecond: 50", "deletePodsPerSecond: -1"), "workloadTemplate[7].deletePodsPerSecond: expected a non-negative integer"),
        (("labelSelector: {color: green}", "labelSelector: [color]"), "workloadTemplate[7].labelSelector: expected a mapping"),
        (("deletePodsPerSecond: 50", "deletePodsPerSecond: 50\n    stageRequirement: Attempted"), "workloadTemplate[7].stageRequirement: unknown field"),
    ],
)  # fmt: skip
def test_errors_in_the_new_ops_name_the_field(change: tuple[str, str], message: str) -> None:
    old, new = change
    assert old in NS_SELECTOR
    assert message in _error(NS_SELECTOR.replace(old, new, 1))


def test_a_node_template_with_a_name_makes_one_node() -> None:
    text = NS_SELECTOR.replace(
        "    countParam: $initNodes\n",
        "    countParam: $initNodes\n    nodeTemplate: {metadata: {name: only}}\n",
        1,
    )
    assert "workloadTemplate[0].count: the node template names its node (only)" in _error(text)


def test_a_workload_name_must_be_unique_over_the_files(tmp_path: Path) -> None:
    body = "- name: T\n  workloadTemplate: [{opcode: createNodes, count: 1}]\n  workloads: [{name: w}]\n"
    (tmp_path / "a.yaml").write_text(body)
    (tmp_path / "b.yaml").write_text(body)
    with pytest.raises(WorkloadError, match=r"b.yaml: workload T/w is also in .*a.yaml"):
        load_workload_files([tmp_path / "a.yaml", tmp_path / "b.yaml"])


# ---------------------------------------------------------------------- the shipped files


def _shipped() -> dict[str, Any]:
    return {w.full_name: w for w in load_workload_files(WORKLOAD_FILES)}


def test_the_shipped_files_are_kemus_own_and_name_no_upstream_test_case() -> None:
    ws = _shipped()
    upstream = {
        "SchedulingPodAntiAffinity",
        "SchedulingDaemonset",
        "HostPortConflict",
        "SchedulingDeletedPodsWithFinalizers",
        "SchedulingRequiredPodAntiAffinityWithNSSelector",
    }
    assert not upstream & {w.test_case for w in ws.values()}
    assert not any(p.parent.name in ("affinity", "misc", "batching") for p in WORKLOAD_FILES)


def test_the_shipped_tenant_workload_selects_namespaces_by_label() -> None:
    w = _shipped()["TenantsBySelector/500Nodes"]
    namespaces = [op for op in w.ops if isinstance(op, CreateNamespaces)]
    assert [(op.prefix, op.count) for op in namespaces] == [("tenant", 10), ("measured", 1)]
    assert all(dict(op.template.metadata.labels) == {"tier": "tenant"} for op in namespaces)
    assert w.count(CreatePods, measured=False) == 40  # 4 pods in each of 10 namespaces
    measured = w.measured
    assert measured is not None and measured.namespace == "measured-0"
    (pod,) = pod_objects(measured, 0)[:1]
    (term,) = (
        pod.spec.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution
    )
    assert dict(term.namespace_selector.match_labels) == {"tier": "tenant"}


def test_the_shipped_pinned_workload_pins_every_pod_to_the_named_node() -> None:
    w = _shipped()["PinnedToOneNode/1500Nodes"]
    named, others = (op for op in w.ops if isinstance(op, CreateNodes))
    (node,) = node_objects(named, 0)
    assert node.metadata.name == "kemu-pinned-node"
    assert others.count == 1500 and w.count(CreatePods, measured=True) == 3000
    measured = w.measured
    assert measured is not None
    (term,) = (
        measured.template.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
    )
    (field,) = term.match_fields
    assert (field.key, list(field.values)) == ("metadata.name", ["kemu-pinned-node"])


def test_the_shipped_ops_file_exercises_every_op_and_field() -> None:
    ws = list(_shipped().values())
    ops = [op for w in ws for op in w.ops]
    kinds = {type(op).__name__ for op in ops}
    assert kinds == {
        "CreateNodes",
        "CreateNamespaces",
        "CreatePods",
        "Barrier",
        "Sleep",
        "DeletePods",
        "Churn",
        "StartCollectingMetrics",
        "StopCollectingMetrics",
        "CreateAny",
        "CreatePodGroups",
        "UpdateAny",
        "CreateResourceDriver",
        "AllocResourceClaims",
    }
    assert any(isinstance(op, CreatePods) and op.steady_state for op in ops)
    churns = [op for op in ops if isinstance(op, Churn)]
    assert {c.mode for c in churns} == {"create", "recreate"}
    assert {type(t).__name__ for c in churns for t in c.templates} == {"Node", "Pod", "Service"}
    barriers = [op for op in ops if isinstance(op, Barrier)]
    assert {b.stage for b in barriers} == {"Scheduled", "Attempted"}
    assert any(b.label_selector for b in barriers)
    deletes = [op for op in ops if isinstance(op, DeletePods)]
    assert any(d.per_second and d.skip_wait for d in deletes)
    assert any(d.label_selector and not d.per_second for d in deletes)
    assert any(isinstance(op, CreatePods) and op.text is not None for op in ops)
    assert any(isinstance(op, CreateNodes) and op.text is not None for op in ops)
    assert any(isinstance(op, CreateNodes) and op.labels is not None for op in ops)
    assert any(w.threshold is not None for w in ws)
    assert any(w.not_modelled_gates for w in ws)
    assert any(w.scheduler_config is not None for w in ws)
    assert any(isinstance(op, UpdateAny) and op.subresources == ("resize",) for op in ops)
    assert any(w.threshold_selector.expect_lower and w.metrics for w in ws)


def test_the_indexed_templates_render_per_object() -> None:
    w = _shipped()["IndexedSlots/5Nodes"]
    nodes_op = w.ops[0]
    pods_op = next(op for op in w.ops if isinstance(op, CreatePods))
    assert isinstance(nodes_op, CreateNodes)
    nodes = node_objects(nodes_op, 0)
    assert [dict(n.status.capacity).get(f"example.com/slot-{i}") for i, n in enumerate(nodes)] == [
        "1"
    ] * 5
    assert {n.metadata.labels["rack"] for n in nodes} == {"r1"}
    pods = pod_objects(pods_op, 3)
    assert [p.metadata.name for p in pods][:2] == ["slot-pod-0-of-5", "slot-pod-1-of-5"]
    assert dict(pods[4].spec.containers[0].resources.requests) == {"example.com/slot-4": "1"}


def test_the_default_pod_has_its_port_and_requests() -> None:
    data = yaml.safe_load(DEFAULT_POD_TEMPLATE_PATH.read_text())
    assert data["spec"]["containers"][0]["ports"] == [{"containerPort": 80}]
    (w,) = _parse(NS_SELECTOR)
    plain = w.ops[6]
    assert isinstance(plain, CreatePods)
    (c,) = plain.template.spec.containers
    assert c.ports[0].container_port == 80 and c.resources.requests["cpu"] == "100m"


def test_every_test_case_has_a_quick_workload_and_the_labels_select_kemus_cases() -> None:
    ws = list(_shipped().values())
    quick = {w.test_case for w in select_workloads(ws, [], "quick")}
    cases = {w.test_case for w in ws}
    assert cases == quick
    assert {w.test_case for w in select_workloads(ws, [], "gang")} == {"GangsOfThree"}
    assert {w.test_case for w in select_workloads(ws, [], "dra")} == {"DRAClaimTemplates"}
    assert {w.full_name for w in select_workloads(ws, [], "performance")} == {
        "SchedulingBasic/500Nodes",
        "SchedulingBasic/5000Nodes",
    }
    assert {w.test_case for w in select_workloads(ws, [], "affinity")} == {
        "AntiAffinityPerHost",
        "AffinityInZone",
        "NodeAffinityTwoZones",
        "TenantsBySelector",
    }
    assert len(select_workloads(ws, [], "misc")) == 7
    for label in ("preemption", "kep1923", "kep5278"):
        assert select_workloads(ws, [], label)


# ---------------------------------------------------------------------- the runner's helpers


@pytest.mark.anyio
async def test_namespaces_are_created_and_an_existing_one_is_fine() -> None:
    fake = FakeClient()
    op = CreateNamespaces("sched", 2, types_pb2.Namespace())
    (first, _) = namespace_objects(op)
    await fake.create(first)
    await create_namespaces(fake, op, creators=4)
    names = sorted(n.metadata.name for n in (await fake.list(types_pb2.Namespace)).items)
    assert names == ["sched-0", "sched-1"]


@pytest.mark.anyio
async def test_delete_pods_deletes_the_matching_pods_of_the_namespace_at_the_rate() -> None:
    pods = [
        make_pod(f"p{i}").namespace("ns").labels(color="green" if i < 4 else "red").obj()
        for i in range(6)
    ]
    other = make_pod("p0").namespace("elsewhere").labels(color="green").obj()
    fake = FakeClient(types_pb2.Namespace(metadata={"name": "ns"}), *pods, other)
    op = DeletePods("ns", label_selector={"color": "green"}, per_second=40)
    victims = await pods_to_delete(fake, op)
    assert sorted(p.metadata.name for p in victims) == ["p0", "p1", "p2", "p3"]
    start = time.monotonic()
    await delete_pods(fake, op, victims, creators=4)
    elapsed = time.monotonic() - start
    assert elapsed >= 3 / 40 * 0.9  # paced: the 4th delete is due 75 ms after the first
    left = {(p.metadata.namespace, p.metadata.name) for p in (await fake.list(types_pb2.Pod)).items}
    assert left == {("ns", "p4"), ("ns", "p5"), ("elsewhere", "p0")}
    # Deleting again (the pods are gone) is not an error.
    with anyio.fail_after(5):
        await delete_pods(fake, DeletePods("ns"), victims, creators=4)


@pytest.mark.anyio
async def test_deletions_the_workload_asked_for_are_not_counted_as_victims() -> None:
    tracker = BindTracker(clock=lambda: 1.0)
    asked, victim = make_pod("a").namespace("n").obj(), make_pod("b").namespace("n").obj()
    tracker.expect(0, [asked, victim])
    tracker.expect_deletion([asked])
    tracker.observe(asked, "DELETED")
    tracker.observe(victim, "DELETED")
    assert tracker.deleted() == 1
    assert tracker.op_done(0)  # both gone before binding: done for the waits
