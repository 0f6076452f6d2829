"""Issue #55's Workload API through the REST edge with the real kubectl, at each emulated
version as upstream serves it (kemu.machinery.podgroups):

- S-PGAPI-1 (1.37, GenericWorkload on): scheduling.k8s.io/v1beta1 Workload and PodGroup
  applied, listed (upstream's printer columns), explained; disruptionMode defaulted to
  {single: {}}; gang.minCount mutable, the workload reference not; a bad minCount refused
  naming the field; the status subresource keeps the spec; a pod's
  spec.schedulingGroup.podGroupName kept.
- S-PGAPI-2 (1.37, the gate off, its default): the resources are not served (not in
  discovery, NotFound).
- S-PGAPI-3 (1.36): scheduling.k8s.io/v1alpha2, podGroupTemplateRef.workload and the
  string disruptionMode "Pod"; the whole scheduling policy immutable; PodGroupWorkloadExists
  refuses a PodGroup whose Workload does not exist.
- S-PGAPI-4 (1.35): scheduling.k8s.io/v1alpha1's Workload with spec.podGroups (no PodGroup
  kind), its immutability error at upstream's path `podGroups`; a pod's spec.workloadRef.

Skipped when kubectl is not on PATH (it is on every machine of kemu's CI).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kemu.testing.cluster import Cluster
from kemu.testing.processes import python_env, run_python_module
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]


@contextmanager
def _kubectl(root: Path, version: str, gates: dict[str, bool]) -> Iterator[Kubectl]:
    """kubectl on a cluster of etcd and one apiserver at `version` with `gates`."""
    with Cluster(root) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(
            rest=True,
            emulated_version=version,
            feature_gates=gates,
            runtime_config={"api/all": "true"},
        )
        c.write_kubeconfig()
        yield Kubectl(c)


def kemuctl(kubectl: Kubectl, *args: str, stdin: str | None = None) -> str:
    """kemuctl over the gRPC edge of the same apiserver; its stdout (a failure raises)."""
    env = python_env({"KEMU_SERVER": kubectl.cluster.server})
    done = run_python_module("kemu.ctl", args, env=env, stdin=stdin)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def at_1_37(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    with _kubectl(tmp_path_factory.mktemp("pg-137"), "1.37", {"GenericWorkload": True}) as k:
        yield k


POD = """
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
spec:
  {ref}
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
"""


def test_s_pgapi_1_workload_and_pod_group_at_1_37(at_1_37: Kubectl) -> None:
    kubectl = at_1_37
    ns = kubectl.namespace("pg")
    manifest = f"""
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata:
  name: training
  namespace: {ns}
spec:
  podGroupTemplates:
  - name: workers
    schedulingPolicy:
      gang:
        minCount: 3
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata:
  name: training-workers
  namespace: {ns}
spec:
  workloadRef:
    workloadName: training
    templateName: workers
  schedulingPolicy:
    gang:
      minCount: 3
"""
    kubectl.run("apply", "-f", "-", stdin=manifest)
    again = kubectl.run("apply", "-f", "-", stdin=manifest).stdout
    assert again.count("unchanged") == 2, again
    resources = kubectl.run("api-resources", "--api-group", "scheduling.k8s.io").stdout
    assert "workloads" in resources and "podgroups" in resources
    assert "scheduling.k8s.io/v1beta1" in resources

    table = kubectl.run("get", "podgroups", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "POLICY", "WORKLOAD", "STATUS", "AGE"]
    assert table[1].split()[:4] == ["training-workers", "Gang", "training", "Pending"]
    assert kubectl.run("get", "workloads", "-n", ns).stdout.split()[:3] == [
        "NAME",
        "AGE",
        "training",
    ]

    pg = kubectl.json("get", "podgroup", "training-workers", "-n", ns)
    assert pg["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert pg["spec"]["disruptionMode"] == {"single": {}}  # the 1.37 default
    explained = kubectl.run("explain", "podgroup.spec").stdout
    assert "workloadRef" in explained and "schedulingPolicy" in explained
    assert "podGroupTemplateRef" not in explained

    # gang.minCount is mutable at 1.37; the workload reference is not
    kubectl.run(
        "patch", "podgroup", "training-workers", "-n", ns, "--type", "merge",
        "-p", '{"spec":{"schedulingPolicy":{"gang":{"minCount":2}}}}',
    )  # fmt: skip
    pg = kubectl.json("get", "podgroup", "training-workers", "-n", ns)
    assert pg["spec"]["schedulingPolicy"]["gang"]["minCount"] == 2
    refused = kubectl.run(
        "patch", "podgroup", "training-workers", "-n", ns, "--type", "merge",
        "-p", '{"spec":{"workloadRef":{"workloadName":"other"}}}',
        check=False,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "spec.workloadRef" in refused.stderr and "immutable" in refused.stderr

    bad = manifest.split("---")[1].replace("minCount: 3", "minCount: 0")
    bad = bad.replace("training-workers", "bad")
    refused = kubectl.run("apply", "-f", "-", stdin=bad, check=False)
    assert refused.returncode != 0
    assert "spec.schedulingPolicy.gang.minCount" in refused.stderr

    # the status subresource writes the status and keeps the spec
    condition = {
        "type": "PodGroupInitiallyScheduled",
        "status": "True",
        "reason": "Scheduled",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    kubectl.run(
        "patch", "podgroup", "training-workers", "-n", ns, "--subresource", "status",
        "--type", "merge",
        "-p", json.dumps({"spec": {"priority": 5}, "status": {"conditions": [condition]}}),
    )  # fmt: skip
    pg = kubectl.json("get", "podgroup", "training-workers", "-n", ns)
    assert pg["status"]["conditions"][0]["type"] == "PodGroupInitiallyScheduled"
    assert pg["spec"]["priority"] == 0  # (the Priority admission's, not the status write's)
    assert kubectl.run("get", "podgroups", "-n", ns).stdout.split()[8] == "Scheduled"

    pod = POD.format(name="member", ns=ns, ref="schedulingGroup: {podGroupName: training-workers}")
    kubectl.run("apply", "-f", "-", stdin=pod)
    got = kubectl.json("get", "pod", "member", "-n", ns)
    assert got["spec"]["schedulingGroup"] == {"podGroupName": "training-workers"}
    # kemuctl, over the gRPC edge: upstream's columns, and a describe
    table = kemuctl(kubectl, "get", "podgroups", "-n", ns).splitlines()
    assert table[0].split() == ["NAME", "POLICY", "WORKLOAD", "STATUS", "AGE"]
    assert table[1].split()[:4] == ["training-workers", "Gang", "training", "Scheduled"]
    described = kemuctl(kubectl, "describe", "podgroup", "training-workers", "-n", ns)
    assert "Workload Ref" in described and "PodGroupInitiallyScheduled" in described

    # 1.35's field is unknown at 1.37
    old = POD.format(name="old", ns=ns, ref="workloadRef: {name: training, podGroup: workers}")
    refused = kubectl.run("apply", "--validate=strict", "-f", "-", stdin=old, check=False)
    assert refused.returncode != 0 and "workloadRef" in refused.stderr


def test_s_pgapi_2_not_served_without_generic_workload(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with _kubectl(tmp_path_factory.mktemp("pg-off"), "1.37", {}) as kubectl:
        resources = kubectl.run("api-resources").stdout
        assert "podgroups" not in resources and "workloads" not in resources
        refused = kubectl.run("get", "workloads", check=False)
        assert refused.returncode != 0
        assert "the server doesn't have a resource type" in refused.stderr
        refused = kubectl.run(
            "get", "--raw", "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups",
            check=False,
        )  # fmt: skip
        assert refused.returncode != 0 and "NotFound" in refused.stderr
        # the gRPC edge too: a write of an unserved kind is NotFound
        env = python_env({"KEMU_SERVER": kubectl.cluster.server})
        manifest = """
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {name: w, namespace: default}
spec: {podGroupTemplates: [{name: a, schedulingPolicy: {basic: {}}}]}
"""
        done = run_python_module("kemu.ctl", ("apply", "-f", "-"), env=env, stdin=manifest)
        assert done.returncode != 0
        assert "could not find the requested resource (workloads" in done.stderr


def test_s_pgapi_3_v1alpha2_at_1_36(tmp_path_factory: pytest.TempPathFactory) -> None:
    gates = {"GenericWorkload": True, "WorkloadAwarePreemption": True}
    with _kubectl(tmp_path_factory.mktemp("pg-136"), "1.36", gates) as kubectl:
        ns = kubectl.namespace("pg")
        kubectl.run(
            "apply",
            "-f",
            "-",
            stdin=f"""
apiVersion: scheduling.k8s.io/v1alpha2
kind: Workload
metadata:
  name: job
  namespace: {ns}
spec:
  podGroupTemplates:
  - name: workers
    schedulingPolicy:
      gang:
        minCount: 2
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata:
  name: job-workers
  namespace: {ns}
spec:
  podGroupTemplateRef:
    workload:
      workloadName: job
      podGroupTemplateName: workers
  schedulingPolicy:
    gang:
      minCount: 2
""",
        )
        pg = kubectl.json("get", "podgroup", "job-workers", "-n", ns)
        assert pg["apiVersion"] == "scheduling.k8s.io/v1alpha2"
        assert pg["spec"]["podGroupTemplateRef"] == {
            "workload": {"workloadName": "job", "podGroupTemplateName": "workers"}
        }
        assert pg["spec"]["disruptionMode"] == "Pod"  # 1.36's string enum and default
        # a watch speaks the version too
        path = f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/podgroups"
        raw = kubectl.run("get", "--raw", f"{path}?watch=1&timeoutSeconds=1").stdout
        event = json.loads(raw.splitlines()[0])
        assert event["type"] == "ADDED"
        assert event["object"]["apiVersion"] == "scheduling.k8s.io/v1alpha2"
        assert "podGroupTemplateRef" in event["object"]["spec"]
        explained = kubectl.run("explain", "podgroup.spec").stdout
        assert "podGroupTemplateRef" in explained and "workloadRef" not in explained
        assert "Gang" in kubectl.run("get", "podgroups", "-n", ns).stdout
        # the whole policy is immutable at 1.36 (minCount too)
        refused = kubectl.run(
            "patch", "podgroup", "job-workers", "-n", ns, "--type", "merge",
            "-p", '{"spec":{"schedulingPolicy":{"gang":{"minCount":3}}}}',
            check=False,
        )  # fmt: skip
        assert refused.returncode != 0 and "spec.schedulingPolicy" in refused.stderr
        refused = kubectl.run(
            "patch", "podgroup", "job-workers", "-n", ns, "--type", "merge",
            "-p", '{"spec":{"disruptionMode":"Workload"}}',
            check=False,
        )  # fmt: skip
        assert refused.returncode != 0 and "spec.disruptionMode" in refused.stderr
        # PodGroupWorkloadExists (1.36 only): the referenced Workload must exist
        refused = kubectl.run(
            "apply",
            "-f",
            "-",
            stdin=f"""
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {{name: orphan, namespace: {ns}}}
spec:
  podGroupTemplateRef: {{workload: {{workloadName: missing, podGroupTemplateName: workers}}}}
  schedulingPolicy: {{basic: {{}}}}
""",
            check=False,
        )
        assert refused.returncode != 0
        assert 'PodGroup rejected: Workload "missing" not found' in refused.stderr
        # kemuctl applies 1.36's shape too (converted before it goes over gRPC)
        applied = kemuctl(
            kubectl,
            "apply",
            "-f",
            "-",
            stdin=f"""
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {{name: by-kemuctl, namespace: {ns}}}
spec:
  podGroupTemplateRef: {{workload: {{workloadName: job, podGroupTemplateName: workers}}}}
  schedulingPolicy: {{basic: {{}}}}
""",
        )
        assert "podgroup.scheduling.k8s.io/by-kemuctl created" in applied
        got = kubectl.json("get", "podgroup", "by-kemuctl", "-n", ns)
        assert got["spec"]["podGroupTemplateRef"]["workload"]["workloadName"] == "job"


def test_s_pgapi_4_v1alpha1_at_1_35(tmp_path_factory: pytest.TempPathFactory) -> None:
    with _kubectl(tmp_path_factory.mktemp("pg-135"), "1.35", {"GenericWorkload": True}) as kubectl:
        ns = kubectl.namespace("pg")
        workload = f"""
apiVersion: scheduling.k8s.io/v1alpha1
kind: Workload
metadata:
  name: job
  namespace: {ns}
spec:
  podGroups:
  - name: workers
    policy:
      gang:
        minCount: 2
"""
        kubectl.run("apply", "-f", "-", stdin=workload)
        got = kubectl.json("get", "workload", "job", "-n", ns)
        assert got["apiVersion"] == "scheduling.k8s.io/v1alpha1"
        assert got["spec"] == {
            "podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 2}}}]
        }
        assert "podGroups" in kubectl.run("explain", "workload.spec").stdout
        refused = kubectl.run("get", "podgroups", check=False)
        assert refused.returncode != 0  # no PodGroup kind at 1.35
        refused = kubectl.run(
            "apply", "-f", "-", stdin=workload.replace("minCount: 2", "minCount: 4"), check=False
        )
        assert refused.returncode != 0
        assert "podGroups: Invalid value" in refused.stderr  # (upstream's path, no `spec.`)
        pod = POD.format(name="member", ns=ns, ref="workloadRef: {name: job, podGroup: workers}")
        kubectl.run("apply", "-f", "-", stdin=pod)
        got = kubectl.json("get", "pod", "member", "-n", ns)
        assert got["spec"]["workloadRef"] == {"name": "job", "podGroup": "workers"}
        assert "podGroupReplicaKey" in kubectl.run("explain", "pod.spec.workloadRef").stdout
        assert kubectl.run("explain", "pod.spec.schedulingGroup", check=False).returncode != 0
