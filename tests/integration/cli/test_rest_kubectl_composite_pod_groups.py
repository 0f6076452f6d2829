"""KEP-6012's CompositePodGroup through the REST edge with the real kubectl (and kemuctl over
gRPC), on real processes (kemu.machinery.kinds, kemu.machinery.validation.scheduling):

- S-PGAPI-5 (1.37, GenericWorkload, TopologyAwareWorkloadScheduling and CompositePodGroup
  on): scheduling.k8s.io/v1alpha3 CompositePodGroup served (discovery, explain), a tree
  Workload (compositePodGroupTemplates) → root CompositePodGroup → child CompositePodGroup →
  PodGroup (parentCompositePodGroupName) applied; disruptionMode defaulted to {single: {}},
  the PodGroupProtection finalizer stamped; the printer's columns; the status subresource;
  every spec field immutable; kemuctl get, describe and apply of the kind.
- S-PGAPI-6 (1.37, the gate off, its default): the kind is not served (absent from
  discovery, NotFound on both edges); a PodGroup's parentCompositePodGroupName and a
  Workload's compositePodGroupTemplates are Forbidden naming the field.
- S-PGAPI-7 (1.36): no CompositePodGroup kind (the gate does not exist there).
- S-PGAPI-8 (1.37, gates on): validation errors name the field: a CompositePodGroup without
  workloadRef, minGroupCount 0, two topology constraints; a Workload tree deeper than 4, a
  composite template without children, one name twice in the tree.
- S-PGAPI-9 (1.37, gates on, with the controller-manager): a CompositePodGroup being deleted
  stays while a child names it and is released once the last child is gone
  (pkg/controller/podgroupprotection processCompositePodGroup); a child of a parent being
  deleted is refused (the PodGroupProtection admission plugin's Validate).

Skipped when kubectl is not on PATH (it is on every machine of kemu's CI).
"""

from __future__ import annotations

import json
import time
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

GATES_ON = {
    "GenericWorkload": True,
    "TopologyAwareWorkloadScheduling": True,
    "CompositePodGroup": True,
}
FINALIZER = "scheduling.k8s.io/compositepodgroup-protection"


@contextmanager
def _kubectl(
    root: Path, version: str, gates: dict[str, bool], *, controllers: bool = False
) -> Iterator[Kubectl]:
    """kubectl on a cluster of etcd and one apiserver (and the controller-manager) at
    `version` with `gates`."""
    with Cluster(root) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(
            rest=True,
            emulated_version=version,
            feature_gates=gates,
            runtime_config={"api/all": "true"},
        )
        if controllers:
            c.start_controllermanager(emulated_version=version, feature_gates=gates)
        c.write_kubeconfig()
        yield Kubectl(c)


def kemuctl(kubectl: Kubectl, *args: str, stdin: str | None = None, check: bool = True) -> str:
    """kemuctl over the gRPC edge of the same apiserver; its stdout (and stderr unless
    `check`: a failure then is returned, not raised)."""
    env = python_env({"KEMU_SERVER": kubectl.cluster.server})
    done = run_python_module("kemu.ctl", args, env=env, stdin=stdin)
    if check:
        assert done.returncode == 0, done.stderr
        return done.stdout
    return done.stdout + done.stderr


def _until(check: object, what: str, timeout: float = 20) -> None:
    """Polls `check()` until true, or fails naming `what` after `timeout` seconds."""
    assert callable(check)
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def gates_on(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    with _kubectl(tmp_path_factory.mktemp("cpg-137"), "1.37", GATES_ON, controllers=True) as k:
        yield k


def tree(ns: str) -> str:
    """A Workload of composite templates and its runtime tree: root → mid → leaf PodGroup."""
    return f"""
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {{name: train, namespace: {ns}}}
spec:
  compositePodGroupTemplates:
  - name: root
    schedulingPolicy: {{gang: {{minGroupCount: 1}}}}
    compositePodGroupTemplates:
    - name: replica
      schedulingPolicy: {{basic: {{}}}}
      podGroupTemplates:
      - name: workers
        schedulingPolicy: {{gang: {{minCount: 2}}}}
---
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata: {{name: root, namespace: {ns}}}
spec:
  workloadRef: {{workloadName: train, templateName: root}}
  schedulingPolicy: {{gang: {{minGroupCount: 1}}}}
  schedulingConstraints:
    topology: [{{key: topology.kubernetes.io/zone}}]
---
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata: {{name: mid, namespace: {ns}}}
spec:
  parentCompositePodGroupName: root
  workloadRef: {{workloadName: train, templateName: replica}}
  schedulingPolicy: {{basic: {{}}}}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {{name: leaf, namespace: {ns}}}
spec:
  parentCompositePodGroupName: mid
  workloadRef: {{workloadName: train, templateName: workers}}
  schedulingPolicy: {{gang: {{minCount: 2}}}}
"""


def test_s_pgapi_5_composite_pod_group_tree_at_1_37(gates_on: Kubectl) -> None:
    kubectl = gates_on
    ns = kubectl.namespace("cpg")
    kubectl.run("apply", "-f", "-", stdin=tree(ns))
    again = kubectl.run("apply", "-f", "-", stdin=tree(ns)).stdout
    assert again.count("unchanged") == 4, again
    resources = kubectl.run("api-resources", "--api-group", "scheduling.k8s.io").stdout
    rows = [line.split() for line in resources.splitlines() if "compositepodgroups" in line]
    assert rows and rows[0][1:] == ["scheduling.k8s.io/v1alpha3", "true", "CompositePodGroup"]
    raw = kubectl.run("get", "--raw", "/apis/scheduling.k8s.io/v1beta1").stdout
    assert "compositepodgroups" not in raw  # v1alpha3 only

    root = kubectl.json("get", "compositepodgroup", "root", "-n", ns)
    assert root["apiVersion"] == "scheduling.k8s.io/v1alpha3"
    assert root["spec"]["disruptionMode"] == {"single": {}}  # +default={"single": {}}
    assert root["metadata"]["finalizers"] == [FINALIZER]  # PodGroupProtection admission
    assert root["spec"]["priority"] == 0  # the Priority admission's
    leaf = kubectl.json("get", "podgroup", "leaf", "-n", ns)
    assert leaf["spec"]["parentCompositePodGroupName"] == "mid"
    w = kubectl.json("get", "workload", "train", "-n", ns)
    assert (
        w["spec"]["compositePodGroupTemplates"][0]["compositePodGroupTemplates"][0][
            "podGroupTemplates"
        ][0]["name"]
        == "workers"
    )

    table = kubectl.run("get", "compositepodgroups", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "POLICY", "WORKLOAD", "STATUS", "AGE"]
    assert [r.split()[:4] for r in table[1:]] == [
        ["mid", "Basic", "train", "Pending"],
        ["root", "Gang", "train", "Pending"],
    ]
    explained = kubectl.run("explain", "compositepodgroup.spec").stdout
    for name in ("parentCompositePodGroupName", "workloadRef", "schedulingPolicy",
                 "schedulingConstraints", "disruptionMode", "priorityClassName"):  # fmt: skip
        assert name in explained, name
    assert (
        "minGroupCount"
        in kubectl.run("explain", "compositepodgroup.spec.schedulingPolicy.gang").stdout
    )

    # the status subresource writes the status, keeps the spec
    condition = {
        "type": "CompositePodGroupInitiallyScheduled",
        "status": "True",
        "reason": "Scheduled",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    kubectl.run(
        "patch", "compositepodgroup", "root", "-n", ns, "--subresource", "status",
        "--type", "merge",
        "-p", json.dumps({"spec": {"priorityClassName": "x"}, "status": {"conditions": [condition]}}),
    )  # fmt: skip
    root = kubectl.json("get", "compositepodgroup", "root", "-n", ns)
    assert root["status"]["conditions"][0]["reason"] == "Scheduled"
    assert "priorityClassName" not in root["spec"]
    # every spec field immutable, minGroupCount too
    refused = kubectl.run(
        "patch", "compositepodgroup", "root", "-n", ns, "--type", "merge",
        "-p", '{"spec":{"schedulingPolicy":{"gang":{"minGroupCount":2}}}}', check=False,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "spec.schedulingPolicy: Forbidden: field is immutable" in refused.stderr
    refused = kubectl.run(
        "patch", "compositepodgroup", "mid", "-n", ns, "--type", "merge",
        "-p", '{"spec":{"parentCompositePodGroupName":"other"}}', check=False,
    )  # fmt: skip
    assert refused.returncode != 0 and "spec.parentCompositePodGroupName" in refused.stderr

    # kemuctl over gRPC: the columns, describe in v1alpha3, apply
    table = kemuctl(kubectl, "get", "compositepodgroups", "-n", ns).splitlines()
    assert table[0].split() == ["NAME", "POLICY", "WORKLOAD", "STATUS", "AGE"]
    assert table[2].split()[:4] == ["root", "Gang", "train", "Scheduled"]
    described = kemuctl(kubectl, "describe", "compositepodgroup", "mid", "-n", ns)
    assert "scheduling.k8s.io/v1alpha3" in described and "Parent Composite Pod Group Name:" in (
        described
    )
    applied = kemuctl(
        kubectl,
        "apply",
        "-f",
        "-",
        stdin=f"""
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata: {{name: other-root, namespace: {ns}}}
spec:
  workloadRef: {{workloadName: train, templateName: root}}
  schedulingPolicy: {{basic: {{}}}}
""",
    )
    assert "compositepodgroup.scheduling.k8s.io/other-root created" in applied
    assert (
        kemuctl(kubectl, "describe", "podgroup", "leaf", "-n", ns).count(
            "scheduling.k8s.io/v1beta1"
        )
        == 1
    )


def test_s_pgapi_8_validation_names_the_field(gates_on: Kubectl) -> None:
    kubectl = gates_on
    ns = kubectl.namespace("cpg-bad")
    refused = kubectl.run(
        "apply",
        "-f",
        "-",
        stdin=f"""
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata: {{name: bad, namespace: {ns}}}
spec:
  schedulingPolicy: {{gang: {{minGroupCount: 0}}}}
  schedulingConstraints:
    topology: [{{key: a}}, {{key: b}}]
""",
        check=False,
    )
    assert refused.returncode != 0
    for message in (
        "spec.workloadRef: Required value",
        "spec.schedulingPolicy.gang.minGroupCount: Required value",
        "spec.schedulingConstraints.topology: Too many: 2: must have at most 1 items",
    ):
        assert message in refused.stderr, refused.stderr
    deep = f"""
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {{name: deep, namespace: {ns}}}
spec:
  compositePodGroupTemplates:
  - name: a
    schedulingPolicy: {{basic: {{}}}}
    compositePodGroupTemplates:
    - name: b
      schedulingPolicy: {{basic: {{}}}}
      compositePodGroupTemplates:
      - name: c
        schedulingPolicy: {{basic: {{}}}}
        compositePodGroupTemplates:
        - name: d
          schedulingPolicy: {{basic: {{}}}}
          podGroupTemplates: [{{name: a, schedulingPolicy: {{basic: {{}}}}}}]
  - name: empty
    schedulingPolicy: {{basic: {{}}}}
"""
    refused = kubectl.run("apply", "-f", "-", stdin=deep, check=False)
    assert refused.returncode != 0
    for message in (
        "spec.compositePodGroupTemplates[0]: Invalid value",
        "maximum template hierarchy depth is 4",
        'spec.compositePodGroupTemplates[1]: Invalid value: "empty": must have at least one '
        "child PodGroupTemplate or CompositePodGroupTemplate",
        'podGroupTemplates[0].name: Duplicate value: "a"',
    ):
        assert message in refused.stderr, refused.stderr


def test_s_pgapi_9_protection_releases_the_tree_bottom_up(gates_on: Kubectl) -> None:
    kubectl = gates_on
    ns = kubectl.namespace("cpg-del")
    kubectl.run("apply", "-f", "-", stdin=tree(ns))
    kubectl.run("delete", "compositepodgroup", "root", "mid", "-n", ns, "--wait=false")
    time.sleep(1)  # (a release would be quick: the controller acts on the delete's event)
    for name in ("root", "mid"):
        kept = kubectl.json("get", "compositepodgroup", name, "-n", ns)
        assert kept["metadata"]["deletionTimestamp"] and kept["metadata"]["finalizers"]
    refused = kubectl.run(
        "apply",
        "-f",
        "-",
        stdin=f"""
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {{name: late, namespace: {ns}}}
spec:
  parentCompositePodGroupName: mid
  workloadRef: {{workloadName: train, templateName: workers}}
  schedulingPolicy: {{basic: {{}}}}
""",
        check=False,
    )
    assert refused.returncode != 0
    assert (
        'cannot create PodGroup referencing CompositePodGroup "mid" because it is being deleted'
        in (refused.stderr)
    )
    kubectl.run("delete", "podgroup", "leaf", "-n", ns)

    def gone() -> bool:
        listed = kubectl.json("get", "compositepodgroups", "-n", ns)
        return not listed["items"]

    _until(gone, "the CompositePodGroups released bottom-up")


def test_s_pgapi_6_not_served_without_the_gate(tmp_path_factory: pytest.TempPathFactory) -> None:
    gates = {"GenericWorkload": True}
    with _kubectl(tmp_path_factory.mktemp("cpg-off"), "1.37", gates) as kubectl:
        resources = kubectl.run("api-resources").stdout
        assert "compositepodgroups" not in resources and "podgroups" in resources
        refused = kubectl.run("get", "compositepodgroups", check=False)
        assert refused.returncode != 0
        assert "the server doesn't have a resource type" in refused.stderr
        refused = kubectl.run(
            "get", "--raw",
            "/apis/scheduling.k8s.io/v1alpha3/namespaces/default/compositepodgroups",
            check=False,
        )  # fmt: skip
        assert refused.returncode != 0 and "NotFound" in refused.stderr
        out = kemuctl(
            kubectl,
            "apply",
            "-f",
            "-",
            stdin="""
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata: {name: c, namespace: default}
spec:
  workloadRef: {workloadName: w, templateName: t}
  schedulingPolicy: {basic: {}}
""",
            check=False,
        )
        assert "could not find the requested resource (compositepodgroups" in out
        refused = kubectl.run(
            "apply",
            "-f",
            "-",
            stdin="""
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: child, namespace: default}
spec:
  parentCompositePodGroupName: root
  workloadRef: {workloadName: w, templateName: t}
  schedulingPolicy: {basic: {}}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {name: w, namespace: default}
spec:
  compositePodGroupTemplates:
  - name: root
    schedulingPolicy: {basic: {}}
    podGroupTemplates: [{name: t, schedulingPolicy: {basic: {}}}]
""",
            check=False,
        )
        assert refused.returncode != 0
        assert "spec.parentCompositePodGroupName: Forbidden" in refused.stderr
        assert "spec.compositePodGroupTemplates: Forbidden" in refused.stderr


def test_s_pgapi_7_no_composite_pod_group_at_1_36(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with _kubectl(tmp_path_factory.mktemp("cpg-136"), "1.36", {"GenericWorkload": True}) as k:
        assert "compositepodgroups" not in k.run("api-resources").stdout
        refused = k.run("explain", "compositepodgroup", check=False)
        assert refused.returncode != 0
