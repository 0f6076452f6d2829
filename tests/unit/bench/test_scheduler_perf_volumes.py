"""bench.scheduler_perf's volume ops, as upstream's volumes/performance-config.yaml uses them:
createPods' persistentVolumeTemplatePath / persistentVolumeClaimTemplatePath (each pod's claim
and volume created bound, upstream's CreatePodWithPersistentVolume), createNodes'
nodeAllocatableStrategy (allocatable and a CSINode per node), in-tree volume sources refused
as not modelled; and string params (upstream's map[string]any)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
import yaml

from bench.scheduler_perf import pod_creator
from bench.scheduler_perf_workloads import (
    CreateNodes,
    CreatePods,
    WorkloadError,
    csinode_objects,
    load_workload_file,
    node_objects,
    parse_file,
    parse_workloads,
    pod_objects,
    volume_objects,
)
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.component.version import Version
from kemu.machinery.storage import ANN_BIND_COMPLETED, ANN_MIGRATED_PLUGINS

PV_CSI = """apiVersion: v1
kind: PersistentVolume
spec:
  accessModes: [ReadOnlyMany]
  capacity: {storage: 1Gi}
  csi: {driver: ebs.csi.aws.com}
  persistentVolumeReclaimPolicy: Retain
"""
PV_AWS = """apiVersion: v1
kind: PersistentVolume
spec:
  accessModes: [ReadOnlyMany]
  awsElasticBlockStore: {volumeID: <volume-id>}
  capacity: {storage: 1Gi}
"""
PVC = """apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  annotations: {pv.kubernetes.io/bind-completed: "true"}
spec:
  accessModes: [ReadOnlyMany]
  resources: {requests: {storage: 1Gi}}
"""
POD_SECRET = """apiVersion: v1
kind: Pod
metadata: {generateName: secret-volume-}
spec:
  containers: [{name: pause, image: pause}]
  volumes: [{name: secret, secret: {secretName: secret}}]
"""
CASE = """
- name: Volumes
  workloadTemplate:
  - opcode: createNodes
    countParam: $nodes
    nodeAllocatableStrategy:
      nodeAllocatable: {attachable-volumes-csi-ebs.csi.aws.com: "39"}
      csiNodeAllocatable:
        ebs.csi.aws.com: {count: 39}
      migratedPlugins: [kubernetes.io/aws-ebs, kubernetes.io/gce-pd]
  - opcode: createPods
    countParam: $pods
    podTemplatePath: pod.yaml
    persistentVolumeTemplatePath: PV
    persistentVolumeClaimTemplatePath: pvc.yaml
    collectMetrics: true
  workloads:
  - name: w
    params: {nodes: 2, pods: 3}
"""


def _case(tmp_path: Path, pv: str = PV_CSI, case: str = CASE) -> str:
    (tmp_path / "pv.yaml").write_text(pv)
    (tmp_path / "pvc.yaml").write_text(PVC)
    (tmp_path / "pod.yaml").write_text(POD_SECRET)
    return case.replace("PV\n", "pv.yaml\n")


def _ops(tmp_path: Path, pv: str = PV_CSI) -> tuple[CreateNodes, CreatePods]:
    (w,) = parse_workloads(yaml.safe_load(_case(tmp_path, pv)), base_dir=tmp_path)
    nodes, pods = w.ops
    assert isinstance(nodes, CreateNodes) and isinstance(pods, CreatePods)
    return nodes, pods


def test_each_pod_gets_its_claim_and_volume_bound_to_each_other(tmp_path: Path) -> None:
    """upstream's CreatePodWithPersistentVolume (bindVolume): claim pvc-<i>, volume
    <namespace>-vol-<i> whose CSI handle is its name, each pointing at the other, both Bound;
    the pod's volumes are replaced by the one claim."""
    _, op = _ops(tmp_path)
    assert op.namespace == "namespace-1"
    claim, volume = volume_objects(op, 2)
    assert (claim.metadata.namespace, claim.metadata.name) == ("namespace-1", "pvc-2")
    assert claim.metadata.annotations[ANN_BIND_COMPLETED] == "true"
    assert claim.spec.volume_name == "namespace-1-vol-2" == volume.metadata.name
    assert claim.status.phase == "Bound" and volume.status.phase == "Bound"
    ref = volume.spec.claim_ref
    assert (ref.kind, ref.namespace, ref.name, ref.api_version) == (
        "PersistentVolumeClaim",
        "namespace-1",
        "pvc-2",
        "v1",
    )
    assert volume.spec.csi.driver == "ebs.csi.aws.com"
    assert volume.spec.csi.volume_handle == "namespace-1-vol-2"
    pods = pod_objects(op, 1)
    assert [[(v.name, v.persistent_volume_claim.claim_name) for v in p.spec.volumes] for p in pods] == [
        [("vol", "pvc-0")],
        [("vol", "pvc-1")],
        [("vol", "pvc-2")],
    ]  # fmt: skip
    # The template itself is unchanged: the next op's objects start from it again.
    assert op.volumes is not None and op.volumes.volume.spec.csi.volume_handle == ""


def test_node_allocatable_strategy_sets_allocatable_and_makes_a_csinode_per_node(
    tmp_path: Path,
) -> None:
    op, _ = _ops(tmp_path)
    nodes = node_objects(op, 0)
    assert [n.metadata.name for n in nodes] == ["scheduler-perf-0-0", "scheduler-perf-0-1"]
    for node in nodes:
        assert node.status.allocatable["attachable-volumes-csi-ebs.csi.aws.com"] == "39"
        assert node.status.allocatable["cpu"] == node.status.capacity["cpu"]
    csinodes = csinode_objects(op, nodes)
    assert [c.metadata.name for c in csinodes] == ["scheduler-perf-0-0", "scheduler-perf-0-1"]
    for csinode, node in zip(csinodes, nodes, strict=True):
        assert csinode.metadata.annotations[ANN_MIGRATED_PLUGINS] == (
            "kubernetes.io/aws-ebs,kubernetes.io/gce-pd"
        )
        (driver,) = csinode.spec.drivers
        assert (driver.name, driver.node_id, driver.allocatable.count) == (
            "ebs.csi.aws.com",
            node.metadata.name,
            39,
        )


def test_a_node_op_without_the_strategy_makes_no_csinodes(tmp_path: Path) -> None:
    op = CreateNodes(2, types_pb2.Node())
    assert csinode_objects(op, node_objects(op, 0)) == []


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("    persistentVolumeTemplatePath: PV\n", "", "workloadTemplate[1].persistentVolumeTemplatePath: required with persistentVolumeClaimTemplatePath"),
        ("    persistentVolumeClaimTemplatePath: pvc.yaml\n", "", "workloadTemplate[1].persistentVolumeClaimTemplatePath: required with persistentVolumeTemplatePath"),
        ("persistentVolumeClaimTemplatePath: pvc.yaml", "persistentVolumeClaimTemplatePath: pod.yaml", "workloadTemplate[1].persistentVolumeClaimTemplatePath: expected kind PersistentVolumeClaim, got 'Pod'"),
        ("persistentVolumeClaimTemplatePath: pvc.yaml", "persistentVolumeClaimTemplatePath: none.yaml", "workloadTemplate[1].persistentVolumeClaimTemplatePath: [Errno 2]"),
        ("{count: 39}", "{count: many}", "workloadTemplate[0].nodeAllocatableStrategy.csiNodeAllocatable.ebs.csi.aws.com.count: expected a non-negative integer, got 'many'"),
        ("{count: 39}", "{count: 39, max: 2}", "workloadTemplate[0].nodeAllocatableStrategy.csiNodeAllocatable.ebs.csi.aws.com.max: unknown field"),
        ('{attachable-volumes-csi-ebs.csi.aws.com: "39"}', "{x: 39}", "workloadTemplate[0].nodeAllocatableStrategy.nodeAllocatable: expected a mapping of resource names to quantities"),
        ("migratedPlugins: [", "migratedPlugin: [", "workloadTemplate[0].nodeAllocatableStrategy.migratedPlugin: unknown field"),
    ],
)  # fmt: skip
def test_volume_op_errors_name_the_field(tmp_path: Path, old: str, new: str, message: str) -> None:
    assert old in CASE
    text = _case(tmp_path, case=CASE.replace(old, new, 1))
    with pytest.raises(WorkloadError) as e:
        parse_workloads(yaml.safe_load(text), base_dir=tmp_path)
    assert message in str(e.value)


def test_an_in_tree_volume_source_kemu_lacks_is_not_modelled_and_says_so(tmp_path: Path) -> None:
    """A gcePersistentDisk volume: kemu's volume has no such source, so the test case is
    skipped (not refused as a bad file) with the reason naming the source."""
    pv_gce = PV_AWS.replace(
        "awsElasticBlockStore: {volumeID: <volume-id>}", "gcePersistentDisk: {pdName: d}"
    )
    parsed = parse_file(yaml.safe_load(_case(tmp_path, pv_gce)), base_dir=tmp_path)
    assert parsed.workloads == ()
    (skipped,) = parsed.skipped
    assert skipped.name == "Volumes" and skipped.refused is False
    assert skipped.reason.startswith(
        "[0] Volumes.workloadTemplate[1].persistentVolumeTemplatePath: spec.gcePersistentDisk: "
        "kemu's PersistentVolume has the awsElasticBlockStore, hostPath, local and csi sources"
    )


def test_an_ebs_volume_gets_its_name_as_volume_id(tmp_path: Path) -> None:
    """upstream's pv-aws.yaml runs: each pod's volume is named per pod and its volumeID is that
    name (upstream getCustomVolumeFactory)."""
    parsed = parse_file(yaml.safe_load(_case(tmp_path, PV_AWS)), base_dir=tmp_path)
    (workload,) = parsed.workloads
    op = next(o for o in workload.ops if isinstance(o, CreatePods) and o.volumes is not None)
    _, volume = volume_objects(op, 3)
    assert volume.spec.aws_elastic_block_store.volume_id == volume.metadata.name


def test_string_params_pass_to_templates_and_counts_must_be_integers(tmp_path: Path) -> None:
    """upstream's params are a map[string]any (default_preemption gives disruptionMode: "")."""
    (tmp_path / "pod.yaml").write_text(
        "kind: Pod\nmetadata: {generateName: 'p-', labels: {mode: 'm{{.mode}}'}}\n"
        "spec: {containers: [{name: c, image: i}]}\n"
    )
    text = """
- name: T
  workloadTemplate:
  - opcode: createNodes
    countParam: $nodes
  - opcode: createPods
    countParam: $pods
    podTemplatePath: pod.yaml
    templateParams: {mode: $mode}
    collectMetrics: true
  workloads:
  - name: w
    params: {nodes: 1, pods: 2, mode: ""}
  - name: bad
    params: {nodes: 1, pods: "2", mode: x}
"""
    parsed = parse_file(yaml.safe_load(text), base_dir=tmp_path)
    (w,) = parsed.workloads
    assert w.params["mode"] == ""
    op = w.ops[1]
    assert isinstance(op, CreatePods)
    assert [p.metadata.labels["mode"] for p in pod_objects(op, 1)] == ["m", "m"]
    (bad,) = parsed.skipped
    assert (
        bad.refused
        and "workloadTemplate[1].countParam: param 'pods' of workload bad is a count"
        in (bad.reason)
    )


@pytest.mark.anyio
async def test_a_pod_with_volumes_is_created_after_its_claim_and_volume_with_their_status(
    tmp_path: Path,
) -> None:
    _, op = _ops(tmp_path)
    fake = FakeClient()
    pods = pod_objects(op, 1)
    create = pod_creator(fake, op, pods)
    with anyio.fail_after(5):
        for i in range(len(pods)):
            await create(i)
    claims = (await fake.list(types_pb2.PersistentVolumeClaim, "namespace-1")).items
    volumes = (await fake.list(types_pb2.PersistentVolume)).items
    assert sorted((c.metadata.name, c.spec.volume_name, c.status.phase) for c in claims) == [
        ("pvc-0", "namespace-1-vol-0", "Bound"),
        ("pvc-1", "namespace-1-vol-1", "Bound"),
        ("pvc-2", "namespace-1-vol-2", "Bound"),
    ]
    assert sorted((v.metadata.name, v.spec.claim_ref.name, v.status.phase) for v in volumes) == [
        ("namespace-1-vol-0", "pvc-0", "Bound"),
        ("namespace-1-vol-1", "pvc-1", "Bound"),
        ("namespace-1-vol-2", "pvc-2", "Bound"),
    ]
    assert len((await fake.list(types_pb2.Pod, "namespace-1")).items) == 3


UPSTREAM_VOLUMES = (
    Path(os.environ.get("KEMU_K8S_CHECKOUT", "/work/k8s/kubernetes"))
    / "test/integration/scheduler_perf/volumes/performance-config.yaml"
)


@pytest.mark.skipif(
    not UPSTREAM_VOLUMES.exists(),
    reason="no kubernetes/kubernetes checkout (set KEMU_K8S_CHECKOUT to one; see docs/benchmarks.md)",
)
def test_upstreams_volumes_file_runs_every_case() -> None:
    parsed = load_workload_file(UPSTREAM_VOLUMES, emulated_version=Version.parse("1.33"))
    cases = {w.test_case for w in parsed.workloads}
    assert cases == {
        "SchedulingSecrets",
        "SchedulingInTreePVs",
        "SchedulingMigratedInTreePVs",
        "SchedulingCSIPVs",
        "PreemptionPVs",
    }
    assert not [s for s in parsed.skipped if not s.refused]  # none for what kemu lacks
    csi = next(w for w in parsed.workloads if w.full_name == "SchedulingCSIPVs/5Nodes")
    nodes, init, measured = csi.ops
    assert isinstance(nodes, CreateNodes) and nodes.allocatable is not None
    assert dict(nodes.allocatable.csi_drivers) == {"ebs.csi.aws.com": 39}
    assert isinstance(init, CreatePods) and init.volumes is not None
    assert isinstance(measured, CreatePods) and measured.collect_metrics
    assert measured.volumes is not None
