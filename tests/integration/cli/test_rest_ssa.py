"""Server-side apply and managedFields through the REST edge (issue #57 item 2), with the real
kubectl (1.32) and the official Python client's DynamicClient, on one cluster (etcd and an
apiserver): S-API-SSA-*.

Skipped when kubectl is not on PATH (it is on every machine of kemu's CI).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import config, dynamic
from kubernetes.dynamic.exceptions import BadRequestError, ConflictError, UnprocessibleEntityError

from kemu.testing.cluster import Cluster
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]

GROUP = "ssa.example.com"

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx
        ports: [{containerPort: 80}]
"""

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "size": {"type": "integer"},
                                    "color": {"type": "string"},
                                    "ports": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name"],
                                        "items": {
                                            "type": "object",
                                            "required": ["name"],
                                            "properties": {
                                                "name": {"type": "string"},
                                                "port": {"type": "integer"},
                                            },
                                        },
                                    },
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {"ready": {"type": "boolean"}},
                            },
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("rest-ssa")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(rest=True)
        c.write_kubeconfig()
        yield c


@pytest.fixture(scope="module")
def kubectl(cluster: Cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture(scope="module")
def dyn(cluster: Cluster) -> dynamic.DynamicClient:
    api_client = config.new_client_from_config(str(cluster.root / "kubeconfig"))  # type: ignore[no-untyped-call]
    return dynamic.DynamicClient(api_client)  # type: ignore[no-untyped-call]


def _managers(obj: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {
        (e["manager"], e["operation"], e.get("subresource", "")): e["fieldsV1"]
        for e in obj["metadata"]["managedFields"]
    }


def test_s_api_ssa_1_apply_conflict_force_and_removal(kubectl: Kubectl) -> None:
    """S-API-SSA-1..4: `kubectl apply --server-side` creates and records an Apply entry
    (kubectl's manager "kubectl"); another manager changing .spec.replicas gets upstream's
    conflict, `--force-conflicts` takes it; a field the first manager no longer applies is
    removed, one another manager owns is kept; managedFields are hidden by default;
    `kubectl scale` is an Update entry with subresource scale."""
    ns = kubectl.namespace("ssa")
    out = kubectl.run("apply", "--server-side", "-n", ns, "-f", "-", stdin=DEPLOYMENT)
    assert "deployment.apps/web serverside-applied" in out.stdout
    dep = kubectl.json("get", "deploy", "web", "-n", ns, "--show-managed-fields")
    applied = _managers(dep)[("kubectl", "Apply", "")]
    assert applied["f:spec"]["f:selector"] == {}  # LabelSelector: atomic
    container = applied["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"nginx"}']
    assert 'k:{"containerPort":80,"protocol":"TCP"}' in container["f:ports"]
    assert "managedFields" not in kubectl.json("get", "deploy", "web", "-n", ns)["metadata"]

    three = DEPLOYMENT.replace("replicas: 2", "replicas: 3")
    args = ("apply", "--server-side", "--field-manager", "other", "-n", ns, "-f", "-")
    refused = kubectl.run(*args, stdin=three, check=False)
    assert refused.returncode != 0
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas' in (
        refused.stderr
    )
    kubectl.run(*args, "--force-conflicts", stdin=three)
    dep = kubectl.json("get", "deploy", "web", "-n", ns, "--show-managed-fields")
    assert dep["spec"]["replicas"] == 3
    managers = _managers(dep)
    assert "f:replicas" not in managers[("kubectl", "Apply", "")]["f:spec"]
    assert "f:replicas" in managers[("other", "Apply", "")]["f:spec"]

    # kubectl no longer applies the label nor the ports: the label goes (only kubectl owned
    # it... and "other" applies it too: kept), the ports are "other"'s too: kept
    fewer = DEPLOYMENT.replace("        ports: [{containerPort: 80}]\n", "").replace(
        "  replicas: 2\n", ""
    )
    fewer = fewer.replace("metadata: {name: web, labels: {app: web}}", "metadata: {name: web}")
    kubectl.run("apply", "--server-side", "-n", ns, "-f", "-", stdin=fewer)
    dep = kubectl.json("get", "deploy", "web", "-n", ns)
    assert dep["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] == 80
    assert dep["metadata"]["labels"] == {"app": "web"}
    # "other" stops applying the ports too: nobody owns them, they are removed
    kubectl.run(*args, "--force-conflicts", stdin=fewer.replace("name: web}", "name: web}\n"))
    dep = kubectl.json("get", "deploy", "web", "-n", ns)
    assert "ports" not in dep["spec"]["template"]["spec"]["containers"][0]
    assert "labels" not in dep["metadata"]
    # `kubectl scale` writes through deployments/scale: an Update entry naming it takes
    # .spec.replicas from the applier
    kubectl.run("scale", "deploy", "web", "-n", ns, "--replicas=4")
    managers = _managers(kubectl.json("get", "deploy", "web", "-n", ns, "--show-managed-fields"))
    (scaler,) = [m for m in managers if m[2] == "scale"]
    assert scaler[0].startswith("kubectl") and scaler[1] == "Update"
    assert managers[scaler] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in managers[("other", "Apply", "")]["f:spec"]


def test_s_api_ssa_5_update_managers_from_user_agents(kubectl: Kubectl) -> None:
    """S-API-SSA-5: writes other than apply are Update entries named after the client:
    kubectl-create, kubectl-client-side-apply, kubectl-label (upstream's prefix of the
    User-Agent), each owning what it changed."""
    ns = kubectl.namespace("ssa")
    kubectl.run("create", "configmap", "cm", "-n", ns, "--from-literal=a=1")
    kubectl.run("label", "configmap", "cm", "-n", ns, "tier=web")
    cm_yaml = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: csa, namespace: {ns}}}\n"
    kubectl.run("apply", "-f", "-", stdin=cm_yaml + "data: {b: '2'}\n")
    cm = kubectl.json("get", "configmap", "cm", "-n", ns, "--show-managed-fields")
    managers = _managers(cm)
    assert managers[("kubectl-create", "Update", "")] == {"f:data": {".": {}, "f:a": {}}}
    assert managers[("kubectl-label", "Update", "")] == {
        "f:metadata": {"f:labels": {".": {}, "f:tier": {}}}
    }
    csa = kubectl.json("get", "configmap", "csa", "-n", ns, "--show-managed-fields")
    assert ("kubectl-client-side-apply", "Update", "") in _managers(csa)


def test_s_api_ssa_6_python_client_server_side_apply(dyn: dynamic.DynamicClient) -> None:
    """S-API-SSA-6: DynamicClient.server_side_apply with field_manager and force_conflicts
    on a ConfigMap: created, a second manager's conflict is a 409 with a
    FieldManagerConflict cause, force takes the field."""
    api = dyn.resources.get(api_version="v1", kind="ConfigMap")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "py"}}
    api.server_side_apply(
        body={**body, "data": {"a": "1"}}, name="py", namespace="default", field_manager="one"
    )
    with pytest.raises(ConflictError) as e:
        api.server_side_apply(
            body={**body, "data": {"a": "2"}}, name="py", namespace="default", field_manager="two"
        )
    status = json.loads(str(e.value.body))
    assert status["reason"] == "Conflict"
    assert status["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "one"', "field": ".data.a"}
    ]
    got = api.server_side_apply(
        body={**body, "data": {"a": "2"}},
        name="py",
        namespace="default",
        field_manager="two",
        force_conflicts=True,
    )
    got_dict = got.to_dict()
    assert got_dict["data"] == {"a": "2"}
    managers = {e["manager"]: e["fieldsV1"] for e in got_dict["metadata"]["managedFields"]}
    assert "one" not in managers  # its only field taken: its entry goes
    assert managers["two"] == {"f:data": {"f:a": {}}}


def test_s_api_ssa_7_pod_status_write_is_its_managers(
    kubectl: Kubectl, dyn: dynamic.DynamicClient
) -> None:
    """S-API-SSA-7: a status write through pods/status is an entry with subresource status;
    an apply of the status subresource owns the condition by its type (list-map key)."""
    ns = kubectl.namespace("ssa")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": ns},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    pods = dyn.resources.get(api_version="v1", kind="Pod")
    pods.create(body=pod, namespace=ns, field_manager="creator")
    status = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": ns},
        "status": {"conditions": [{"type": "Example", "status": "True"}]},
    }
    pods.status.server_side_apply(body=status, name="p", namespace=ns, field_manager="checker")
    got = kubectl.json("get", "pod", "p", "-n", ns, "--show-managed-fields")
    managers = _managers(got)
    assert ("creator", "Update", "") in managers
    conditions = managers[("checker", "Apply", "status")]["f:status"]["f:conditions"]
    assert 'k:{"type":"Example"}' in conditions
    assert {"type": "Example", "status": "True"} in got["status"]["conditions"]


def test_s_api_ssa_8_custom_resource(kubectl: Kubectl, dyn: dynamic.DynamicClient) -> None:
    """S-API-SSA-8: a custom resource applied by two managers: its CRD's list-map keys merge
    their ports, a conflict on spec.size, the apply that no longer names a port removes it."""
    kubectl.run("apply", "-f", "-", stdin=json.dumps(CRD))
    kubectl.run("wait", "--for=condition=Established", f"crd/widgets.{GROUP}", "--timeout=10s")
    ns = kubectl.namespace("ssa")
    widget = f"""apiVersion: {GROUP}/v1
kind: Widget
metadata: {{name: w, namespace: {ns}}}
spec:
  size: 1
  ports: [{{name: http, port: 80}}]
"""
    kubectl.run("apply", "--server-side", "-f", "-", stdin=widget)
    widgets = dyn.resources.get(api_version=f"{GROUP}/v1", kind="Widget")
    body = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": ns},
        "spec": {"ports": [{"name": "metrics", "port": 9090}]},
    }
    widgets.server_side_apply(body=body, name="w", namespace=ns, field_manager="sidecar")
    got = kubectl.json("get", f"widgets.{GROUP}", "w", "-n", ns)
    assert [p["name"] for p in got["spec"]["ports"]] == ["http", "metrics"]
    refused = kubectl.run(
        "apply",
        "--server-side",
        "--field-manager",
        "sidecar",
        "-f",
        "-",
        stdin=widget.replace("size: 1", "size: 2"),
        check=False,
    )
    assert 'conflict with "kubectl": .spec.size' in refused.stderr
    kubectl.run(
        "apply",
        "--server-side",
        "-f",
        "-",
        stdin=widget.replace("  ports: [{name: http, port: 80}]\n", ""),
    )
    got = kubectl.json("get", f"widgets.{GROUP}", "w", "-n", ns, "--show-managed-fields")
    assert [p["name"] for p in got["spec"]["ports"]] == ["metrics"]
    assert got["spec"]["size"] == 1
    assert {e["manager"] for e in got["metadata"]["managedFields"]} == {"kubectl", "sidecar"}


def test_s_api_ssa_9_apply_refusals(kubectl: Kubectl, dyn: dynamic.DynamicClient) -> None:
    """S-API-SSA-9: an apply without fieldManager is 422 (PatchOptions), one carrying
    metadata.managedFields is 400, a dry run changes nothing."""
    ns = kubectl.namespace("ssa")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    api = dyn.resources.get(api_version="v1", kind="ConfigMap")
    with pytest.raises(UnprocessibleEntityError) as e:
        api.server_side_apply(body=body, name="x", namespace=ns)
    assert json.loads(str(e.value.body))["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required '
        "for apply patch"
    )
    with_managed = {**body, "metadata": {"name": "x", "managedFields": [{"manager": "m"}]}}
    with pytest.raises(BadRequestError) as bad:
        api.server_side_apply(body=with_managed, name="x", namespace=ns, field_manager="m")
    assert json.loads(str(bad.value.body))["message"] == "metadata.managedFields must be nil"
    dry = kubectl.run(
        "apply", "--server-side", "--dry-run=server", "-n", ns, "-f", "-", stdin=json.dumps(body)
    )
    assert "serverside-applied (server dry run)" in dry.stdout
    assert kubectl.run("get", "configmap", "x", "-n", ns, check=False).returncode != 0


CSA_CONFIG_MAP = """apiVersion: v1
kind: ConfigMap
metadata: {name: csa, labels: {team: a}}
data: {a: "1", b: "2"}
"""


def test_s_api_ssa_12_kubectl_moves_from_client_side_to_server_side_apply(
    kubectl: Kubectl, dyn: dynamic.DynamicClient
) -> None:
    """S-API-SSA-12, lastAppliedManager and lastAppliedUpdater: an object made by
    client-side `kubectl apply` (its last-applied annotation, kubectl-client-side-apply's
    fields) is server-side applied by the manager "kubectl" (here the Python client, which
    does not move the entries itself as kubectl 1.32 does): the conflicts with fields whose
    values the annotation still holds are taken, one changed since by another manager
    (kubectl label) stays a conflict; and each of kubectl's applies rewrites the annotation
    to what it applied."""
    ns = kubectl.namespace("csa")
    kubectl.run("apply", "-n", ns, "-f", "-", stdin=CSA_CONFIG_MAP)
    kubectl.run("label", "-n", ns, "configmap/csa", "team=b", "--overwrite")
    api = dyn.resources.get(api_version="v1", kind="ConfigMap")
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "csa", "labels": {"team": "c"}},
        "data": {"a": "9"},
    }
    with pytest.raises(ConflictError) as e:
        api.server_side_apply(body=body, name="csa", namespace=ns, field_manager="kubectl")
    status = json.loads(str(e.value.body))
    # .data.a is kubectl-client-side-apply's and the annotation still says "1": allowed
    assert [c["field"] for c in status["details"]["causes"]] == [".metadata.labels.team"]
    assert 'conflict with "kubectl-label"' in status["message"]

    body["metadata"]["labels"]["team"] = "b"
    got = api.server_side_apply(
        body=body, name="csa", namespace=ns, field_manager="kubectl"
    ).to_dict()
    assert got["data"] == {"a": "9", "b": "2"}
    managers = _managers(got)
    assert managers[("kubectl", "Apply", "")]["f:data"] == {"f:a": {}}
    assert "f:a" not in managers[("kubectl-client-side-apply", "Update", "")]["f:data"]
    annotation = got["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert annotation == (
        '{"apiVersion":"v1","data":{"a":"9"},"kind":"ConfigMap","metadata":{"labels":'
        '{"team":"b"},"name":"csa"}}\n'
    )
    # another manager's apply leaves the annotation alone
    api.server_side_apply(
        body={**body, "data": {"c": "3"}}, name="csa", namespace=ns, field_manager="other"
    )
    again = kubectl.json("get", "-n", ns, "configmap/csa")
    assert (
        again["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        == annotation
    )

    # kubectl itself, moving a client-side applied object to --server-side: no conflict,
    # and the annotation follows what it applies
    kubectl.run("apply", "-n", ns, "-f", "-", stdin=CSA_CONFIG_MAP.replace("csa", "csa2"))
    moved = CSA_CONFIG_MAP.replace("csa", "csa2").replace('a: "1"', 'a: "5"')
    kubectl.run("apply", "--server-side", "-n", ns, "-f", "-", stdin=moved)
    cm = kubectl.json("get", "-n", ns, "configmap/csa2")
    assert cm["data"] == {"a": "5", "b": "2"}
    last = json.loads(
        cm["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    )
    assert last["data"] == {"a": "5", "b": "2"}


def test_s_api_ssa_13_empty_managed_fields_reset_and_before_first_apply(
    kubectl: Kubectl, cluster: Cluster
) -> None:
    """S-API-SSA-13: an update or patch that sends `metadata.managedFields: []` resets the
    entries (isResetManagedFields), one that leaves them out keeps them; an object without
    entries gets none from updates (skipNonApplied), and its first apply meets a
    "before-first-apply" Update entry owning every field it had: a changed value conflicts
    with it, `--force-conflicts` takes it."""
    ns = kubectl.namespace("reset")
    kubectl.run("create", "configmap", "cm", "-n", ns, "--from-literal=a=1")
    cm = kubectl.json("get", "-n", ns, "configmap/cm", "--show-managed-fields")
    cm["metadata"].pop("managedFields")
    cm["data"]["b"] = "2"
    kubectl.run("replace", "-f", "-", stdin=json.dumps(cm))  # absent: kept, and tracked
    managers = _managers(kubectl.json("get", "-n", ns, "configmap/cm", "--show-managed-fields"))
    assert set(managers) == {("kubectl-create", "Update", ""), ("kubectl-replace", "Update", "")}

    # a PUT with [] (the REST edge reads the JSON: protobuf could not tell)
    cm = kubectl.json("get", "-n", ns, "configmap/cm")
    cm["metadata"]["managedFields"] = []
    url = f"{cluster.rest_url}/api/v1/namespaces/{ns}/configmaps/cm"
    request = urllib.request.Request(
        url,
        data=json.dumps(cm).encode(),
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as r:
        assert "managedFields" not in json.loads(r.read())["metadata"]
    kubectl.run("label", "-n", ns, "configmap/cm", "x=y")  # an update: still none
    cm = kubectl.json("get", "-n", ns, "configmap/cm", "--show-managed-fields")
    assert "managedFields" not in cm["metadata"], cm["metadata"]

    config = f"""apiVersion: v1
kind: ConfigMap
metadata: {{name: cm, namespace: {ns}}}
data: {{a: "9"}}
"""
    refused = kubectl.run("apply", "--server-side", "-f", "-", stdin=config, check=False)
    assert refused.returncode != 0
    assert 'conflict with "before-first-apply" using v1' in refused.stderr, refused.stderr
    assert ".data.a" in refused.stderr
    kubectl.run("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=config)
    managers = _managers(kubectl.json("get", "-n", ns, "configmap/cm", "--show-managed-fields"))
    assert set(managers) == {("before-first-apply", "Update", ""), ("kubectl", "Apply", "")}
    assert managers[("kubectl", "Apply", "")] == {"f:data": {"f:a": {}}}
    before = managers[("before-first-apply", "Update", "")]
    # (a ConfigMap's data and labels are absent from a new ConfigMap: their "." too)
    assert before["f:data"] == {".": {}, "f:b": {}}
    assert before["f:metadata"]["f:labels"] == {".": {}, "f:x": {}}

    # a JSON patch writing [] resets them too
    kubectl.run(
        "patch",
        "-n",
        ns,
        "configmap/cm",
        "--type=json",
        "-p",
        '[{"op": "replace", "path": "/metadata/managedFields", "value": []}]',
    )
    cm = kubectl.json("get", "-n", ns, "configmap/cm", "--show-managed-fields")
    assert "managedFields" not in cm["metadata"]


HPA_V1 = """apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: hpa}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  targetCPUUtilizationPercentage: 50
"""

HPA_V2 = """apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: hpa}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}
"""


def test_s_api_ssa_14_managed_fields_per_api_version(kubectl: Kubectl) -> None:
    """S-API-SSA-14: an entry records the version its manager wrote in and owns that
    version's fields (autoscaling/v1's .spec.targetCPUUtilizationPercentage); a write in
    another version (autoscaling/v2's metrics) is compared in each manager's version, as
    upstream's Updater converts: the v2 apply changing the CPU target conflicts with the v1
    applier on its v1 field, `--force-conflicts` takes it from it."""
    ns = kubectl.namespace("versions")
    kubectl.run("apply", "--server-side", "-n", ns, "-f", "-", stdin=HPA_V1)
    hpa = kubectl.json(
        "get", "-n", ns, "horizontalpodautoscalers.v1.autoscaling/hpa", "--show-managed-fields"
    )
    [entry] = [e for e in hpa["metadata"]["managedFields"] if e["manager"] == "kubectl"]
    assert entry["apiVersion"] == "autoscaling/v1"
    assert "f:targetCPUUtilizationPercentage" in entry["fieldsV1"]["f:spec"]

    args = ("apply", "--server-side", "--field-manager", "v2-writer", "-n", ns, "-f", "-")
    refused = kubectl.run(*args, stdin=HPA_V2, check=False)
    assert refused.returncode != 0
    assert (
        'Apply failed with 1 conflict: conflict with "kubectl": '
        ".spec.targetCPUUtilizationPercentage"
    ) in refused.stderr, refused.stderr
    kubectl.run(*args, "--force-conflicts", stdin=HPA_V2)
    hpa = kubectl.json(
        "get", "-n", ns, "horizontalpodautoscalers.v2.autoscaling/hpa", "--show-managed-fields"
    )
    entries = {e["manager"]: e for e in hpa["metadata"]["managedFields"]}
    assert entries["v2-writer"]["apiVersion"] == "autoscaling/v2"
    assert "f:metrics" in entries["v2-writer"]["fieldsV1"]["f:spec"]
    assert entries["kubectl"]["apiVersion"] == "autoscaling/v1"
    assert "f:targetCPUUtilizationPercentage" not in entries["kubectl"]["fieldsV1"]["f:spec"]
    assert "f:maxReplicas" in entries["kubectl"]["fieldsV1"]["f:spec"]  # the same in both
