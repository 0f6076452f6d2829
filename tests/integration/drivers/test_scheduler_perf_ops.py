"""`python -m bench scheduler_perf`'s ops on a real cluster (etcd, apiserver, scheduler),
with kemu's own tiny workloads of bench/workloads/ops.yaml: churn in both modes, barriers of
stage Attempted and with a label selector, paced and labelled deletions, a collection
window, text templates rendered per object, a threshold and a not-modelled gate.

The bench runs as its own process, as a user runs it, and the tests read its `--json`: in the
test process its event loop would be a second one beside the session's, which grpc.aio's
completion queue can outlive (see tests/integration/drivers/test_bench_scale.py)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Final

import pytest

from kemu.testing.processes import run_python_module

pytestmark = [pytest.mark.integration]


def _run(
    tmp_path: Path,
    name: str,
    bind_only: str = "never",
    extra: tuple[str, ...] = (),
    *,
    may_fail: bool = False,
) -> dict[str, Any]:
    """Runs `python -m bench scheduler_perf --workload name` (seed 1, 8 creators, `extra`
    arguments); its one result from `--json`. A failure shows the tail of its stderr (unless
    `may_fail`: then the result's `error` says why)."""
    out = tmp_path / "result.json"
    args = ["scheduler_perf", "--workload", name, "--seed", "1", "--creators", "8", *extra]
    args += ["--timeout", "60", "--keep-dir", str(tmp_path), "--bind-only-baseline", bind_only]
    done = run_python_module("bench", [*args, "--json", str(out)], timeout=300)
    assert done.returncode == 0 or (may_fail and out.exists()), done.stderr[-3000:]
    (result,) = json.loads(out.read_text())["results"]
    assert isinstance(result, dict)
    return result


POD_GROUP_ATTEMPT: Final = "scheduler_podgroup_scheduling_attempt_duration_seconds"


def _gang_result(tmp_path: Path, name: str, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """A gang workload's result: no error, and the scheduler observed its pod-group attempts
    (the threshold's histogram)."""
    result = _run(tmp_path, name, extra=extra, may_fail=True)
    assert result["error"] == ""
    assert result["threshold_value"] is not None, f"no {POD_GROUP_ATTEMPT} observed"
    return result


OWN_OP_WORKLOADS: Final = (
    "HeldWhileDeleting/2Nodes",
    "ChurnWhileScheduling/5Nodes",
    "IndexedSlots/5Nodes",
    "OneHostPortPerNode/8Nodes",
    "SecretVolumes/5Nodes",
    "CSIVolumesToTheLimit/5Nodes",
    "MigratedEBSVolumesToTheLimit/5Nodes",
    "ResizedToFit/3Nodes",
)
GANGS: Final = "GangsOfThree/5Nodes_2Gangs"


@pytest.fixture(scope="module")
def own_op_results(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    """One bench process runs every workload of OWN_OP_WORKLOADS and GANGS (each on a cluster
    of its own, as a run of one does): their results by workload, and the tail of its stderr
    (a bench process and its fork server's imports cost ~2 CPU-s, once rather than once a
    workload)."""
    tmp_path = tmp_path_factory.mktemp("own-ops")
    out = tmp_path / "result.json"
    args = ["scheduler_perf", "--seed", "1", "--creators", "8"]
    for name in (*OWN_OP_WORKLOADS, GANGS):
        args += ["--workload", name]
    args += ["--timeout", "60", "--keep-dir", str(tmp_path), "--bind-only-baseline", "never"]
    done = run_python_module("bench", [*args, "--json", str(out)], timeout=300 * 3)
    assert out.exists(), done.stderr[-3000:]
    results = {r["workload"]: r for r in json.loads(out.read_text())["results"]}
    return results, done.stderr[-3000:]


@pytest.mark.parametrize("name", OWN_OP_WORKLOADS)
def test_kemus_own_op_workloads_run(own_op_results: tuple[dict[str, Any], str], name: str) -> None:
    results, stderr = own_op_results
    assert name in results, stderr
    result = results[name]
    assert result["workload"] == name
    assert result["error"] == "", stderr
    assert result["measured_pods"] > 0
    throughput = result["throughput"]
    assert throughput["samples"] >= 1 and throughput["average"] is not None
    if name == "HeldWhileDeleting/2Nodes":
        assert result["not_modelled_gates"] == ["SchedulerPopFromBackoffQ"]
    if name == "ResizedToFit/3Nodes":
        # createAny's PriorityClass admitted the pods; none fitted until updateAny resized
        # them through pods/resize, inside the collection window: its pods are all three.
        assert (result["init_pods"], result["measured_pods"]) == (3, 3)
        # The window's API calls: each pod's resize, then its status from the template (as
        # upstream's updateAny), and the three bindings.
        calls = result["api_calls"]
        assert calls["update pods/resize"] == 3 and calls["update_status pods"] == 3
        assert calls["create pods/binding"] == 3
        assert result["attempts"]["scheduled"] == 3
    if name == "IndexedSlots/5Nodes":
        assert result["measured_pods"] == 5  # the collection window's pods, each on its node
    if name == "OneHostPortPerNode/8Nodes":
        assert result["threshold"] == 1.0 and result["threshold_met"] is True
    if name in (
        "SecretVolumes/5Nodes",
        "CSIVolumesToTheLimit/5Nodes",
        "MigratedEBSVolumesToTheLimit/5Nodes",
    ):
        # Every pod bound: with volumes, each to its claim's bound volume, on nodes whose
        # CSINodes allow two of the driver's volumes (ten in all, as many as the pods).
        counts = {
            "SecretVolumes/5Nodes": (5, 10),
            "CSIVolumesToTheLimit/5Nodes": (5, 5),
            "MigratedEBSVolumesToTheLimit/5Nodes": (5, 5),
        }
        assert (result["init_pods"], result["measured_pods"]) == counts[name]
        # No attempt failed; one may have been unschedulable, as in upstream: a pod reaching
        # the scheduler before its volume (another watch) waits for the volume's arrival.
        assert "error" not in result["attempts"]


UPSTREAM_VOLUMES = (
    Path(os.environ.get("KEMU_K8S_CHECKOUT", "/work/k8s/kubernetes"))
    / "test/integration/scheduler_perf/volumes/performance-config.yaml"
)


@pytest.mark.long  # five bench runs of upstream's file, each its own cluster: make test-long
@pytest.mark.skipif(
    not UPSTREAM_VOLUMES.exists(),
    reason="no kubernetes/kubernetes checkout (set KEMU_K8S_CHECKOUT to one; see docs/benchmarks.md)",
)
@pytest.mark.parametrize(
    "name",
    [
        "SchedulingSecrets/5Nodes",
        "SchedulingInTreePVs/5Nodes",
        "SchedulingMigratedInTreePVs/5Nodes",
        "SchedulingCSIPVs/5Nodes",
        "PreemptionPVs/5Nodes",
    ],
)
def test_upstreams_volumes_file_runs_unchanged(tmp_path: Path, name: str) -> None:
    """upstream's volumes/performance-config.yaml, its smallest workloads at the newest
    version their gates allow (SchedulerQueueingHints=false: 1.33)."""
    extra = ("--config", str(UPSTREAM_VOLUMES), "--emulated-version", "1.33")
    result = _run(tmp_path, name, extra=extra)
    assert result["error"] == ""
    # PreemptionPVs: 20 low-priority pods, then 5 high-priority ones with volumes preempting.
    want = (5, 20, 5) if name == "PreemptionPVs/5Nodes" else (5, 5, 10)
    assert (result["nodes"], result["init_pods"], result["measured_pods"]) == want
    assert "error" not in result["attempts"]  # no attempt failed (see above)


def test_preemptionbasic_measures_its_preemption_api_baseline(tmp_path: Path) -> None:
    """PreemptionBasic/10Nodes (--quick) with the default `auto`: after the measured phase,
    the baseline's preemptors make the same pod calls as the scheduler did (create, 3 victim
    PATCHes and DELETEs, the status PATCH, the binding per preemptor), and its rate and the
    ratio are set."""
    result = _run(tmp_path, "PreemptionBasic/10Nodes", bind_only="auto")
    assert result["error"] == ""
    # The scheduler's: create, 3 x (victim PATCH, DELETE), the status PATCH, bind each.
    calls = {"create pods": 10, "create pods/binding": 10, "delete pods": 30, "patch pods": 40}
    baseline_calls = result["baseline_api_calls"]
    pod_calls = {k: v for k, v in baseline_calls.items() if not k.endswith("events")}
    assert pod_calls == calls
    assert result["api_calls"].get("delete pods") == 30  # the measured phase's victims
    assert baseline_calls.get("create events", 0) > 0
    assert (result["preemption_baseline_pods"], result["preemption_baseline_victims"]) == (10, 3)
    baseline = result["preemption_api_baseline"]
    assert baseline > 0
    assert result["scheduler_to_limit"] == pytest.approx(result["created_to_bound"] / baseline)
    assert result["bind_only_baseline"] is None  # not measured (NaN in the bench)
    # Each process's CPU per preemptor, in the phase and in the baseline; the apiserver did
    # work in both, and the ceiling is the rate at which that CPU fills the host's cores.
    cpus = os.cpu_count() or 1
    for per_pod, ceiling in (
        (result["cpu_ms_per_pod"], result["cpu_ceiling"]),
        (result["preemption_baseline_cpu_ms_per_pod"], result["preemption_baseline_cpu_ceiling"]),
    ):
        assert set(per_pod) == {"scheduler", "apiserver", "etcd", "bench"}
        assert per_pod["apiserver"] > 0
        assert ceiling == pytest.approx(cpus * 1000 / math.fsum(per_pod.values()))


def test_gangs_are_scheduled_and_their_attempt_duration_thresholded(
    own_op_results: tuple[dict[str, Any], str],
) -> None:
    """GangsOfThree/5Nodes_2Gangs (bench/workloads/ops.yaml): two PodGroups of minCount 3
    (createPodGroups, waited for), six members (countMultiplierParam), every member bound;
    the threshold is on the pod-group attempt duration's average for result=scheduled, in ms,
    expectLower (1000 ms: met on any machine), and metricsCollectorConfig reports it by
    result."""
    results, stderr = own_op_results
    assert GANGS in results, stderr
    result = results[GANGS]
    assert result["error"] == "", stderr
    assert result["threshold_value"] is not None, f"no {POD_GROUP_ATTEMPT} observed"
    assert (result["nodes"], result["measured_pods"]) == (5, 6)
    assert result["threshold_selector"] == {
        "name": POD_GROUP_ATTEMPT,
        "labels": {"result": "scheduled"},
        "data_bucket": "Average",
        "expect_lower": True,
    }
    # Two group cycles, each a few ms: the value is a mean in ms, and the threshold is met.
    assert 0 < result["threshold_value"] < 1000
    assert result["threshold_met"] is True
    assert result["metrics"][f"{POD_GROUP_ATTEMPT}{{result=scheduled}}"] == pytest.approx(
        result["threshold_value"]
    )


UPSTREAM: Final = (
    Path(os.environ.get("KEMU_K8S_CHECKOUT", "/work/k8s/kubernetes"))
    / "test/integration/scheduler_perf"
)


@pytest.mark.long  # bench runs of upstream's files, each its own cluster: make test-long
@pytest.mark.parametrize(
    ("area", "name", "version", "pods"),
    [
        ("gangscheduling", "GangScheduling/10Nodes_3Gangs", "1.36", 9),
        ("podgroup/gangscheduling", "GangScheduling/10Nodes_3Gangs", None, 9),
        ("podgroup/basicscheduling", "BasicScheduling/10Nodes_3Groups", None, 9),
    ],
)
def test_upstreams_pod_group_files_run_unchanged(
    tmp_path: Path, area: str, name: str, version: str | None, pods: int
) -> None:
    """upstream's gang files, their smallest workloads: every member bound (gangscheduling/
    at 1.36, where its GangScheduling gate exists; podgroup/ at the newest version)."""
    config = UPSTREAM / area / "performance-config.yaml"
    if not config.exists():  # (each file on its own: a checkout may hold some of them)
        pytest.skip(
            f"no kubernetes/kubernetes checkout with {area}/performance-config.yaml (set "
            "KEMU_K8S_CHECKOUT to one; see docs/benchmarks.md)"
        )
    extra: tuple[str, ...] = ("--config", str(config))
    if version is not None:
        extra += ("--emulated-version", version)
    result = _gang_result(tmp_path, name, extra)
    assert result["measured_pods"] == pods
    assert "error" not in result["attempts"]


@pytest.mark.long  # bench runs of upstream's files, each its own cluster: make test-long
@pytest.mark.skipif(
    not (UPSTREAM / "workload_preemption" / "performance-config.yaml").exists(),
    reason="no kubernetes/kubernetes checkout with the pod-group files (set KEMU_K8S_CHECKOUT "
    "to one; see docs/benchmarks.md)",
)
@pytest.mark.parametrize(
    ("name", "pods", "victims"),
    [
        ("GangPreemptionBasic/2Nodes_1PreemptorGang_2Pods_Evicting_10InitPods", 2, 10),
        ("GangPreemptionPodGroups/2Nodes_1PreemptorGang_2Pods_Evicting_2LowPriorityGangs", 2, 4),
    ],
)
def test_upstreams_workload_preemption_file_runs_unchanged(
    tmp_path: Path, name: str, pods: int, victims: int
) -> None:
    """workload_preemption/'s smallest workloads (issue #55): the preemptor gang's members are
    all bound after its victims (the low pods, or whole low gangs) are deleted."""
    extra = ("--config", str(UPSTREAM / "workload_preemption" / "performance-config.yaml"))
    result = _run(tmp_path, name, extra=extra)
    assert result["error"] == ""
    assert result["measured_pods"] == pods
    assert not any(result["pending_end"].values()), result["pending_end"]
    assert result["deleted_pods"] == victims


@pytest.mark.long  # bench runs of upstream's files, each its own cluster: make test-long
@pytest.mark.skipif(
    not (UPSTREAM / "cpg" / "performance-config.yaml").exists(),
    reason="no kubernetes/kubernetes checkout with the cpg/ files (set KEMU_K8S_CHECKOUT "
    "to one; see docs/benchmarks.md)",
)
@pytest.mark.parametrize(
    ("name", "pods", "victims"),
    [
        ("CPGBasicScheduling/10Nodes_3CPGs_6Groups_18Pods", 18, 0),
        ("CPGGangScheduling/10Nodes_3CPGs_6Groups_18Pods", 18, 0),
        ("CPGPreemptionBasic/2Nodes_1PreemptorCPG_2Groups_2Pods_Evicting_10InitPods", 2, 10),
        ("CPGPreemptionCPG/2Nodes_1PreemptorCPG_2Groups_2Pods_Evicting_2LowPriorityCPGs", 2, 4),
        ("CPGTopologyAwareScheduling/10Nodes_3CPGs_6Groups_18Pods", 18, 0),
    ],
)
def test_upstreams_cpg_file_runs_unchanged(
    tmp_path: Path, name: str, pods: int, victims: int
) -> None:
    """cpg/'s short workloads (KEP-6012): every CompositePodGroup tree's members bound, the
    preemptor trees' victims deleted."""
    extra = ("--config", str(UPSTREAM / "cpg" / "performance-config.yaml"))
    result = _run(tmp_path, name, extra=extra)
    assert result["error"] == ""
    assert result["measured_pods"] == pods
    assert not any(result["pending_end"].values()), result["pending_end"]
    assert result["deleted_pods"] == victims


CPG_CONFIG: Final = """
- name: CPGBasicScheduling
  featureGates:
    GenericWorkload: true
    TopologyAwareWorkloadScheduling: true
    CompositePodGroup: true
  workloadTemplate:
  - opcode: createNodes
    countParam: $initNodes
  - opcode: createNamespaces
    prefix: cpg-basic-ns
    count: 1
  - opcode: createCompositePodGroups
    countParam: $initCPGs
    namespace: cpg-basic-ns-0
    templatePath: templates/cpg-basic.yaml
  - opcode: createPodGroups
    countParam: $initPodGroups
    namespace: cpg-basic-ns-0
    templatePath: templates/podgroup-basic.yaml
    templateParams:
      groupsPerCPG: $groupsPerCPG
  - opcode: createPods
    countParam: $initPodGroups
    countMultiplierParam: $podsPerGroup
    namespace: cpg-basic-ns-0
    podTemplatePath: templates/basic-pod.yaml
    collectMetrics: true
    templateParams:
      podsPerGroup: $podsPerGroup
  workloads:
  - name: 10Nodes_3CPGs_6Groups_18Pods
    params: {initNodes: 10, initCPGs: 3, initPodGroups: 6, groupsPerCPG: 2, podsPerGroup: 3}
"""
CPG_TEMPLATES: Final = {
    "cpg-basic.yaml": """apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata: {name: "cpg-{{.Index}}"}
spec:
  workloadRef: {workloadName: cpg-workload, templateName: cpg-template}
  schedulingPolicy: {basic: {}}
""",
    "podgroup-basic.yaml": """apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: "basic-group-{{.Index}}"}
spec:
  parentCompositePodGroupName: "cpg-{{DivideInt .Index .groupsPerCPG}}"
  workloadRef: {workloadName: "test-wl-{{DivideInt .Index .groupsPerCPG}}", templateName: pg}
  schedulingPolicy: {basic: {}}
""",
    "basic-pod.yaml": """apiVersion: v1
kind: Pod
metadata: {name: "test-cpg-basic-pod-{{.Index}}"}
spec:
  schedulingGroup: {podGroupName: "basic-group-{{DivideInt .Index .podsPerGroup}}"}
  containers:
  - {name: pause, image: registry.k8s.io/pause:3.10.1, resources: {requests: {cpu: 100m}}}
""",
}


def test_create_composite_pod_groups_runs_on_a_real_cluster(tmp_path: Path) -> None:
    """upstream's cpg/ CPGBasicScheduling shape (createCompositePodGroups, then child
    PodGroups naming them, then their pods): the CompositePodGroups are created and listed
    before the PodGroups; every pod of the basic groups binds."""
    (tmp_path / "templates").mkdir()
    for name, text in CPG_TEMPLATES.items():
        (tmp_path / "templates" / name).write_text(text)
    config = tmp_path / "performance-config.yaml"
    config.write_text(CPG_CONFIG)
    result = _run(
        tmp_path,
        "CPGBasicScheduling/10Nodes_3CPGs_6Groups_18Pods",
        extra=("--config", str(config)),
    )
    assert result["measured_pods"] == 18
    assert "error" not in result["attempts"]


@pytest.mark.long  # bench runs of upstream's file, each its own cluster: make test-long
@pytest.mark.skipif(
    not (UPSTREAM / "resize_preemption" / "performance-config.yaml").exists(),
    reason="no kubernetes/kubernetes checkout with resize_preemption/ (set KEMU_K8S_CHECKOUT "
    "to one; see docs/benchmarks.md)",
)
@pytest.mark.parametrize(
    ("name", "pods", "victims"),
    [
        ("DeferredResizePreemptionInPlace/5Nodes", 0, 0),
        ("DeferredResizePreemptionScale/5Nodes_AsyncAPICallsEnabled", 5, 15),
        ("DeferredResizePreemptionVictimRatio/5Nodes_2VictimRatio", 5, 5),
        ("DeferredResizePreemptionHighDensity/5Nodes_20PodsPerNode", 5, 0),
    ],
)
def test_upstreams_resize_preemption_file_runs_unchanged(
    tmp_path: Path, name: str, pods: int, victims: int
) -> None:
    """KEP-5836's resize_preemption/ at 1.37, one small workload of each test case. The
    direct preemptors (3 cpu on nodes of 4) preempt the 900m victims they need (none at one
    victim a node, one at two, three at four; the 50m dense ones leave room). InPlace resizes
    the pods pinned to node-<i> from 200m to 3 cpu through pods/resize inside its window: no
    kubelet runs in scheduler_perf, so nothing marks a resize Deferred (PodResizePending) and,
    in upstream's run as in kemu's, the scheduler has nothing to attempt; the window holds the
    five resizes and the five status writes of upstream's updateAny."""
    extra = ("--config", str(UPSTREAM / "resize_preemption" / "performance-config.yaml"))
    result = _run(tmp_path, name, extra=extra)
    assert result["error"] == ""
    assert (result["measured_pods"], result["deleted_pods"]) == (pods, victims)
    assert not any(result["pending_end"].values()), result["pending_end"]
    if pods == 0:
        assert result["attempts"] == {}
        calls = result["api_calls"]
        assert calls["update pods/resize"] == 5 and calls["update_status pods"] == 5
        assert "create pods/binding" not in calls
    else:
        assert result["attempts"]["scheduled"] == pods
        assert result["preemption"]["victims"] == victims
