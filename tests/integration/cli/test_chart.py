# mypy: disable-error-code="union-attr,no-untyped-call,index,arg-type"
# (the kubernetes client types every field Optional)
"""Issue #57's "Done when": a Helm-shaped manifest (tests/data/chart/web.yaml, as `helm
template --include-crds -n web` of a chart made by `helm create` writes it: its crds/ first,
then the templates in Helm's install order, the custom resources last) applied unchanged with
kubectl 1.32 and read back through the official Python client's typed APIs, on one cluster of
real processes: etcd, apiserver, scheduler, controller-manager (the HPA controller on upstream's
flags, shortened) and two kubelets (S-CHART-*). The module takes about 17 s (the
upgrade's rollout, S-CHART-5, 2 s more in `make test-long`); the tests run in file order
(S-CHART-6 deletes the chart, S-CHART-7 uses its CRD once more).

What kubectl does with a custom resource whose CRD is in the same file: it maps every document
to its resource before it sends any (apply's GetObjects), through a discovery cache that it
resets once on an unknown kind; the CRD is not created yet, so the first `kubectl apply` fails
the custom resources with upstream's "resource mapping not found ... ensure CRDs are installed
first" (exit 1, everything else created), and a second one, once the CRD is Established,
creates them (kubernetes/kubectl#1179: by design). `kubectl create` sends each document as it
reads it, so with a discovery cache of an earlier command it resets the cache at the custom
resource and finds the kind the CRD established meanwhile.

Skipped when kubectl is not on PATH (it is on every machine of kemu's CI).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config

from kemu.machinery.usage import CPU_USAGE_ANNOTATION
from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually_sync
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]

CHART = Path(__file__).parents[2] / "data" / "chart" / "web.yaml"
NS = "web"
NAME = "release-web"
SELECTOR = "app.kubernetes.io/name=web,app.kubernetes.io/instance=release"
CRD = "widgets.web.example.com"
DOCS: list[dict[str, Any]] = [d for d in yaml.safe_load_all(CHART.read_text()) if d]
# upstream's HPA flags, shortened so that a scale-up and a scale-down take seconds: a sync
# every second, a 2 s downscale stabilization window, and a ready pod's CPU counted at once
HPA_FLAGS = [
    "--horizontal-pod-autoscaler-sync-period=1s",
    "--horizontal-pod-autoscaler-downscale-stabilization=2s",
    "--horizontal-pod-autoscaler-cpu-initialization-period=0s",
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("chart")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(rest=True)
        # the four after the apiserver start together (the module's start-up is most of it)
        c.start_scheduler(wait=False)
        c.start_controllermanager(extra_args=HPA_FLAGS, wait=False)
        c.start_kubelet("n1", wait=False)
        c.start_kubelet("n2", wait=False)
        for name in ("scheduler", "controllermanager", "kubelet-n1", "kubelet-n2"):
            c.wait_ready(name)
        c.write_kubeconfig()
        Kubectl(c).run("create", "namespace", NS)
        yield c


@pytest.fixture(scope="module")
def kubectl(cluster: Cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture(scope="module")
def api_client(cluster: Cluster) -> k8s.ApiClient:
    api_client: k8s.ApiClient = config.new_client_from_config(str(cluster.root / "kubeconfig"))
    return api_client


def _doc(kind: str, name: str = NAME) -> dict[str, Any]:
    return next(d for d in DOCS if d["kind"] == kind and d["metadata"]["name"] == name)


@pytest.fixture(scope="module")
def applied(kubectl: Kubectl) -> tuple[subprocess.CompletedProcess[str], ...]:
    """The chart applied as a user would: `kubectl apply -f`, the CRD waited for, and
    `kubectl apply -f` again (both runs' results, for S-CHART-1)."""
    first = kubectl.run("apply", "-n", NS, "-f", str(CHART), check=False)
    kubectl.run("wait", "--for=condition=Established", f"crd/{CRD}", "--timeout=10s")
    second = kubectl.run("apply", "-n", NS, "-f", str(CHART), check=False)
    return first, second


def test_s_chart_1_kubectl_apply_twice_creates_everything(
    applied: tuple[subprocess.CompletedProcess[str], ...],
) -> None:
    """The first apply creates every built-in object and fails the two Widgets as upstream's
    kubectl does (their kind is not discovered when kubectl maps the file); the CRD is
    Established at once, and the second apply creates them and leaves the rest unchanged."""
    first, second = applied
    assert first.returncode == 1, first.stdout + first.stderr
    for widget in ("release-web-small", "release-web-large"):
        assert (
            f'resource mapping not found for name: "{widget}" namespace: "" from "{CHART}": '
            'no matches for kind "Widget" in version "web.example.com/v1"\n'
            "ensure CRDs are installed first"
        ) in first.stderr
    created = [line for line in first.stdout.splitlines() if line.endswith(" created")]
    assert len(created) == len(DOCS) - 2, first.stdout
    assert second.returncode == 0, second.stderr
    lines = second.stdout.splitlines()
    assert "widget.web.example.com/release-web-small created" in lines
    assert "widget.web.example.com/release-web-large created" in lines
    changed = [line for line in lines if not line.endswith((" unchanged", " created"))]
    assert changed == [], second.stdout


@pytest.mark.usefixtures("applied")
def test_s_chart_2_every_object_reads_back_through_the_typed_client(
    api_client: k8s.ApiClient, kubectl: Kubectl
) -> None:
    """Each object of the chart through CoreV1Api, AppsV1Api, AutoscalingV2Api,
    NetworkingV1Api, RbacAuthorizationV1Api, ApiextensionsV1Api and CustomObjectsApi (their
    models raise on a required field that is missing), with the chart's labels, and the
    custom resources defaulted and pruned by the CRD's schema."""
    core, apps = k8s.CoreV1Api(api_client), k8s.AppsV1Api(api_client)
    net, rbac = k8s.NetworkingV1Api(api_client), k8s.RbacAuthorizationV1Api(api_client)
    hpa_api, ext = k8s.AutoscalingV2Api(api_client), k8s.ApiextensionsV1Api(api_client)
    reads = {
        "ServiceAccount": lambda: core.read_namespaced_service_account(NAME, NS),
        "ConfigMap": lambda: core.read_namespaced_config_map(NAME, NS),
        "Service": lambda: core.read_namespaced_service(NAME, NS),
        "Deployment": lambda: apps.read_namespaced_deployment(NAME, NS),
        "HorizontalPodAutoscaler": lambda: hpa_api.read_namespaced_horizontal_pod_autoscaler(
            NAME, NS
        ),
        "Ingress": lambda: net.read_namespaced_ingress(NAME, NS),
        "IngressClass": lambda: net.read_ingress_class(NAME),
        "NetworkPolicy": lambda: net.read_namespaced_network_policy(NAME, NS),
        "Role": lambda: rbac.read_namespaced_role(NAME, NS),
        "RoleBinding": lambda: rbac.read_namespaced_role_binding(NAME, NS),
        "ClusterRole": lambda: rbac.read_cluster_role(NAME),
        "ClusterRoleBinding": lambda: rbac.read_cluster_role_binding(NAME),
        "CustomResourceDefinition": lambda: ext.read_custom_resource_definition(CRD),
    }
    assert set(reads) | {"Widget"} == {d["kind"] for d in DOCS}
    for kind, read in reads.items():
        obj: Any = read()
        name = CRD if kind == "CustomResourceDefinition" else NAME
        assert obj.metadata.labels == _doc(kind, name)["metadata"]["labels"], kind
        assert obj.metadata.uid and obj.metadata.creation_timestamp, kind
    deploy = apps.read_namespaced_deployment(NAME, NS)
    spec = deploy.spec.template.spec
    assert spec.service_account_name == NAME
    assert spec.containers[0].resources.requests == {"cpu": "100m", "memory": "64Mi"}
    assert spec.containers[0].ports[0].container_port == 8080
    hpa = hpa_api.read_namespaced_horizontal_pod_autoscaler(NAME, NS)
    assert hpa.spec.metrics[0].resource.target.average_utilization == 50
    assert hpa.spec.scale_target_ref.kind == "Deployment"
    binding = rbac.read_cluster_role_binding(NAME)
    assert binding.subjects[0].namespace == NS and binding.role_ref.name == NAME
    ingress = net.read_namespaced_ingress(NAME, NS)
    assert ingress.spec.rules[0].http.paths[0].backend.service.port.number == 80
    assert ingress.status.load_balancer is not None  # upstream's empty struct, always written
    assert core.read_namespaced_service(NAME, NS).status.load_balancer is not None
    crd = ext.read_custom_resource_definition(CRD)
    assert {c.type: c.status for c in crd.status.conditions}["Established"] == "True"
    custom = k8s.CustomObjectsApi(api_client)
    widgets = custom.list_namespaced_custom_object("web.example.com", "v1", NS, "widgets")
    sizes = {w["metadata"]["name"]: w["spec"]["size"] for w in widgets["items"]}
    assert sizes == {"release-web-small": 1, "release-web-large": 3}
    # an operator's status write (the ClusterRole's widgets/status): through the status
    # subresource only; a status in a write of the resource itself is ignored
    group = ("web.example.com", "v1", NS, "widgets", "release-web-small")
    custom.patch_namespaced_custom_object_status(*group, {"status": {"ready": True}})
    custom.patch_namespaced_custom_object(*group, {"status": {"ready": False}})
    assert custom.get_namespaced_custom_object(*group)["status"] == {"ready": True}
    # kubectl reads them all back too, the Widgets with the CRD's printer column
    body = kubectl.json(
        "get",
        "sa,cm,svc,deploy,hpa,ing,netpol,role,rolebinding,widgets",
        "-n",
        NS,
        "-l",
        "app.kubernetes.io/managed-by=Helm",
    )
    assert len(body["items"]) == len(DOCS) - 4  # all but the four cluster-scoped ones
    table = kubectl.run("get", "widgets", "-n", NS).stdout.splitlines()
    assert table[0].split() == ["NAME", "SIZE", "AGE"]


@pytest.mark.usefixtures("applied")
def test_s_chart_3_the_service_gets_the_ready_pods_endpoints(
    api_client: k8s.ApiClient, kubectl: Kubectl
) -> None:
    """The endpointslice and endpoints controllers: the Service's one EndpointSlice and its
    Endpoints hold the Ready pod's IP at the named target port (http: 8080); the pods, their
    ReplicaSet, the Endpoints and the EndpointSlice read back through the typed client."""

    def ready_ips() -> set[str] | None:
        pods = kubectl.json("get", "pods", "-n", NS, "-l", SELECTOR)["items"]
        ready = {
            p["status"]["podIP"]
            for p in pods
            if any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in p["status"].get("conditions", ())
            )
        }
        return ready or None

    def slice_ips() -> tuple[set[str], set[str]] | None:
        ips = ready_ips()
        slices = kubectl.json(
            "get", "endpointslices", "-n", NS, "-l", f"kubernetes.io/service-name={NAME}"
        )["items"]
        if ips is None or len(slices) != 1:
            return None
        got = {
            a
            for e in slices[0].get("endpoints") or ()
            if e["conditions"].get("ready")
            for a in e["addresses"]
        }
        return (ips, got) if got == ips else None

    found = eventually_sync(slice_ips, timeout=15, message="the Service's EndpointSlice")
    assert found is not None
    ips = found[0]
    eps = kubectl.json("get", "endpoints", NAME, "-n", NS)
    table = kubectl.run("get", "endpoints", NAME, "-n", NS)  # deprecated since 1.33 (S-EPS-8)
    assert table.stderr == (
        "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\n"
    )
    subset = eps["subsets"][0]
    assert {a["ip"] for a in subset["addresses"]} == ips
    assert subset["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    svc = kubectl.json("get", "svc", NAME, "-n", NS)
    assert svc["status"] == {"loadBalancer": {}}
    core, apps = k8s.CoreV1Api(api_client), k8s.AppsV1Api(api_client)
    pods = core.list_namespaced_pod(NS, label_selector=SELECTOR).items
    assert {p.status.pod_ip for p in pods} >= ips
    assert all(p.spec.service_account_name == NAME for p in pods)
    rs = apps.list_namespaced_replica_set(NS, label_selector=SELECTOR).items
    assert [r.metadata.owner_references[0].name for r in rs] == [NAME]
    typed_eps = core.read_namespaced_endpoints(NAME, NS)
    assert {a.ip for a in typed_eps.subsets[0].addresses} == ips
    typed_slices = k8s.DiscoveryV1Api(api_client).list_namespaced_endpoint_slice(
        NS, label_selector=f"kubernetes.io/service-name={NAME}"
    )
    assert typed_slices.items[0].ports[0].port == 8080


def _replicas(kubectl: Kubectl) -> tuple[int, int]:
    d = kubectl.json("get", "deploy", NAME, "-n", NS)
    return d["spec"]["replicas"], d["status"].get("readyReplicas", 0)


@pytest.mark.usefixtures("applied")
def test_s_chart_4_the_hpa_scales_the_deployment_up_and_down(kubectl: Kubectl) -> None:
    """Simulated load (the pods' kubelet.kemu.io/cpu-usage, which metrics.k8s.io serves to
    `kubectl top`): 180m of a 100m request against a 50% target asks for 4 pods (the HPA's
    maxReplicas); then 5m on each asks for 1, held for the downscale stabilization window."""
    eventually_sync(lambda: _replicas(kubectl) == (1, 1), timeout=15, message="1 ready pod")
    kubectl.run(
        "annotate", "pods", "-n", NS, "-l", SELECTOR, f"{CPU_USAGE_ANNOTATION}=180m", "--overwrite"
    )
    eventually_sync(lambda: _replicas(kubectl) == (4, 4), timeout=20, message="4 ready pods")
    top = kubectl.run("top", "pods", "-n", NS, "-l", SELECTOR).stdout
    assert "180m" in top, top
    hpa = kubectl.json("get", "hpa", NAME, "-n", NS)
    assert hpa["status"]["desiredReplicas"] == 4
    kubectl.run(
        "annotate", "pods", "-n", NS, "-l", SELECTOR, f"{CPU_USAGE_ANNOTATION}=5m", "--overwrite"
    )
    eventually_sync(lambda: _replicas(kubectl) == (1, 1), timeout=20, message="back to 1 pod")
    events = kubectl.json(
        "get", "events", "-n", NS, "--field-selector", "reason=SuccessfulRescale"
    )["items"]
    messages = {e["message"].split(";")[0] for e in events}
    assert {"New size: 4", "New size: 1"} <= messages, messages


@pytest.mark.long  # pods replaced: make test-long
@pytest.mark.usefixtures("applied")
def test_s_chart_5_an_upgrade_rolls_the_deployment_out(kubectl: Kubectl) -> None:
    """`helm upgrade` as kubectl apply: the ConfigMap changed and the template's
    checksum/config annotation with it, so the Deployment rolls out a second ReplicaSet
    (revision 2), the old one goes to 0, the Service's endpoints follow the new pod, and the
    rest of the chart is unchanged."""
    # revision 1 rolled out first (run alone, as `make test-long` runs it, the chart was only
    # just applied)
    kubectl.run("rollout", "status", "-n", NS, f"deploy/{NAME}", "--timeout=20s")
    text = CHART.read_text()
    upgraded = text.replace('LOG_LEVEL: "info"', 'LOG_LEVEL: "debug"').replace(
        "checksum/config: 4b2d", "checksum/config: 9f1e"
    )
    assert upgraded.count("debug") == 1 and "9f1e" in upgraded
    out = kubectl.run("apply", "-n", NS, "-f", "-", stdin=upgraded).stdout.splitlines()
    configured = sorted(line for line in out if line.endswith(" configured"))
    assert configured == [
        "configmap/release-web configured",
        "deployment.apps/release-web configured",
    ]
    kubectl.run("rollout", "status", "-n", NS, f"deploy/{NAME}", "--timeout=20s")
    deploy = kubectl.json("get", "deploy", NAME, "-n", NS)
    assert deploy["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    sets = kubectl.json("get", "rs", "-n", NS, "-l", SELECTOR)["items"]
    by_revision = {
        r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: r["spec"]["replicas"]
        for r in sets
    }
    assert by_revision == {"1": 0, "2": deploy["spec"]["replicas"]}

    def endpoints_follow() -> bool:
        pods = kubectl.json("get", "pods", "-n", NS, "-l", SELECTOR)["items"]
        new = {
            p["status"].get("podIP")
            for p in pods
            if p["metadata"]["annotations"]["checksum/config"].startswith("9f1e")
            and not p["metadata"].get("deletionTimestamp")
        }
        eps = kubectl.json("get", "endpoints", NAME, "-n", NS).get("subsets") or [{}]
        return {a["ip"] for a in eps[0].get("addresses", ())} == new

    eventually_sync(endpoints_follow, timeout=15, message="the endpoints of the new pods")


@pytest.mark.usefixtures("applied")
def test_s_chart_6_kubectl_delete_removes_everything(kubectl: Kubectl) -> None:
    """`kubectl delete -f` deletes every object, the custom resources with their CRD (its
    cleanup finalizer deletes them, so kubectl's own deletes of them find them gone, as
    upstream); nothing of the chart is left: no pods, ReplicaSets, endpoints or Widgets."""
    out = kubectl.run("delete", "-n", NS, "-f", str(CHART), "--ignore-not-found")
    assert f'customresourcedefinition.apiextensions.k8s.io "{CRD}" deleted' in out.stdout

    def left() -> list[str]:
        body = kubectl.json(
            "get",
            "all,cm,sa,role,rolebinding,ing,netpol,endpoints,endpointslices",
            "-n",
            NS,
        )
        names = [
            f"{i['kind']}/{i['metadata']['name']}"
            for i in body["items"]
            if i["metadata"]["name"] not in ("default", "kube-root-ca.crt")
        ]
        cluster = kubectl.json(
            "get", "clusterrole,clusterrolebinding,ingressclass,crd", "-l", SELECTOR
        )["items"]
        names += [f"{i['kind']}/{i['metadata']['name']}" for i in cluster]
        return names

    eventually_sync(lambda: not left(), timeout=20, message="nothing of the chart left")
    gone = kubectl.run(
        "get", "--raw", f"/apis/web.example.com/v1/namespaces/{NS}/widgets", check=False
    )
    assert gone.returncode == 1
    assert "the server could not find the requested resource" in gone.stderr


def test_s_chart_7_kubectl_create_streams_a_crd_then_its_custom_resource(
    kubectl: Kubectl,
) -> None:
    """`kubectl create -f` of the CRD and a Widget right after it, with the discovery cache
    of an earlier command: kubectl resets it at the unknown kind and finds the Widget's kind
    served, since the apiserver established the CRD as soon as it was created."""
    kubectl.run("api-resources")  # discovery cached, without widgets
    both = "---\n".join(yaml.safe_dump(d) for d in (DOCS[0], DOCS[-1]))
    out = kubectl.run("create", "-n", NS, "-f", "-", stdin=both)
    assert out.stdout.splitlines() == [
        f"customresourcedefinition.apiextensions.k8s.io/{CRD} created",
        "widget.web.example.com/release-web-large created",
    ]
    widget = json.loads(
        kubectl.run("get", "wdg", "release-web-large", "-n", NS, "-o", "json").stdout
    )
    assert widget["spec"] == {"size": 3, "color": "red"}
