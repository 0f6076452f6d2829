# mypy: disable-error-code="union-attr,no-untyped-call,index,arg-type"
# (the kubernetes client types every field Optional)
"""Every kind kemu serves read through the official Python client's TYPED API (its models
raise on a required field that is missing or null: S-API-JSON-*) and through kubectl
(`get -o json`, `explain` with upstream's descriptions: S-API-OPENAPI-*), on one cluster:
real etcd, apiserver, controller-manager (deployment, replicaset, disruption) and a kubelet.

Skipped when kubectl is not on PATH (it is on every machine of kemu's CI).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config

from kemu.component.featuregate import FeatureGates
from kemu.machinery.kinds import KINDS, Kind, Served
from kemu.machinery.runtime_config import RuntimeConfig
from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually_sync
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]
NODE = "n1"
NS = "typed"
# (kemu checks the PEM block's type, not the DER inside: upstream's validateCSR's first rule)
CSR_PEM_B64 = base64.b64encode(
    b"-----BEGIN CERTIFICATE REQUEST-----\nTUlJQg==\n-----END CERTIFICATE REQUEST-----\n"
).decode()
SERVED = Served.at(37, FeatureGates.default().enabled, RuntimeConfig.parse([]))

# One object of each kind a manifest can create (the others are made by the cluster: the
# Node by the kubelet, the ReplicaSet by the deployment controller, Events).
MANIFEST = f"""
apiVersion: v1
kind: Namespace
metadata: {{name: {NS}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: run, namespace: {NS}, labels: {{app: run}}}}
spec:
  nodeName: {NODE}
  terminationGracePeriodSeconds: 0
  containers: [{{name: c, image: nginx}}]
---
apiVersion: v1
kind: Service
metadata: {{name: svc, namespace: {NS}}}
spec:
  selector: {{app: run}}
  ports: [{{port: 80}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: cm, namespace: {NS}}}
data: {{k: v}}
---
apiVersion: v1
kind: Secret
metadata: {{name: s, namespace: {NS}}}
stringData: {{k: v}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: sa, namespace: {NS}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: d, namespace: {NS}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: d}}}}
  template:
    metadata: {{labels: {{app: d}}}}
    spec: {{containers: [{{name: c, image: nginx}}]}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: ds, namespace: {NS}}}
spec:
  selector: {{matchLabels: {{app: ds}}}}
  template:
    metadata: {{labels: {{app: ds}}}}
    spec: {{containers: [{{name: c, image: nginx}}]}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: sts, namespace: {NS}}}
spec:
  serviceName: svc
  replicas: 0
  selector: {{matchLabels: {{app: sts}}}}
  template:
    metadata: {{labels: {{app: sts}}}}
    spec: {{containers: [{{name: c, image: nginx}}]}}
---
apiVersion: batch/v1
kind: Job
metadata: {{name: j, namespace: {NS}}}
spec:
  suspend: true
  template:
    spec: {{restartPolicy: Never, containers: [{{name: c, image: busybox}}]}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {{name: cj, namespace: {NS}}}
spec:
  schedule: "0 0 1 1 *"
  jobTemplate:
    spec:
      template:
        spec: {{restartPolicy: Never, containers: [{{name: c, image: busybox}}]}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: pdb, namespace: {NS}}}
spec:
  minAvailable: 1
  selector: {{matchLabels: {{app: run}}}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: typed-high}}
value: 1000
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {{name: l, namespace: {NS}}}
spec: {{holderIdentity: me}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {{name: typed-pv}}
spec:
  capacity: {{storage: 1Gi}}
  accessModes: [ReadWriteOnce]
  hostPath: {{path: /tmp/typed}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: pvc, namespace: {NS}}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {{requests: {{storage: 1Gi}}}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {{name: typed-sc}}
provisioner: example.com/none
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: gpu.example.com}}
spec:
  selectors: [{{cel: {{expression: 'device.driver == "gpu.example.com"'}}}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: rct, namespace: {NS}}}
spec:
  spec:
    devices:
      requests: [{{name: gpu, exactly: {{deviceClassName: gpu.example.com}}}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: rc, namespace: {NS}}}
spec:
  devices:
    requests: [{{name: gpu, exactly: {{deviceClassName: gpu.example.com}}}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: typed-slice}}
spec:
  driver: gpu.example.com
  nodeName: {NODE}
  pool: {{name: {NODE}, generation: 1, resourceSliceCount: 1}}
  devices: [{{name: gpu-0}}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {{name: typed-taint}}
spec:
  deviceSelector: {{driver: gpu.example.com}}
  taint: {{key: example.com/broken, value: "yes", effect: NoSchedule}}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {{name: {NODE}}}
spec:
  drivers: [{{name: csi.example.com, nodeID: {NODE}}}]
---
apiVersion: v1
kind: Node
metadata: {{name: typed-extra}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: r, namespace: {NS}}}
rules: [{{apiGroups: [""], resources: [pods], verbs: [get]}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: rb, namespace: {NS}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}}
subjects: [{{kind: ServiceAccount, name: default, namespace: {NS}}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: typed-cr}}
rules: [{{apiGroups: [""], resources: [nodes], verbs: [list]}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: typed-crb}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: typed-cr}}
subjects: [{{kind: ServiceAccount, name: default, namespace: {NS}}}]
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {{name: typed-ic}}
spec: {{controller: example.com/ingress}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{name: ing, namespace: {NS}}}
spec:
  ingressClassName: typed-ic
  defaultBackend: {{service: {{name: svc, port: {{number: 80}}}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: np, namespace: {NS}}}
spec: {{podSelector: {{}}}}
---
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {{name: typed-csr}}
spec:
  request: {CSR_PEM_B64}
  signerName: example.com/signer
  usages: [digital signature]
---
apiVersion: v1
kind: LimitRange
metadata: {{name: lr, namespace: {NS}}}
spec: {{limits: [{{type: Container, max: {{cpu: "64"}}}}]}}
---
apiVersion: v1
kind: ResourceQuota
metadata: {{name: rq, namespace: {NS}}}
spec: {{hard: {{pods: "100"}}}}
---
apiVersion: v1
kind: ReplicationController
metadata: {{name: rc, namespace: {NS}}}
spec:
  replicas: 0
  selector: {{app: rc}}
  template:
    metadata: {{labels: {{app: rc}}}}
    spec: {{containers: [{{name: c, image: nginx}}]}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: hpa, namespace: {NS}}}
spec:
  scaleTargetRef: {{apiVersion: v1, kind: ReplicationController, name: rc}}
  minReplicas: 1
  maxReplicas: 2
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: widgets.typed.example.com}}
spec:
  group: typed.example.com
  scope: Namespaced
  names: {{plural: widgets, singular: widget, kind: Widget}}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {{openAPIV3Schema: {{type: object}}}}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("typed")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        # upstream's admission chain, ServiceAccount included, and the controllers that
        # make what its pods reference (the default account, kube-root-ca.crt)
        c.start_apiserver(rest=True, disable_admission_plugins=())
        c.start_controllermanager(
            extra_args=[
                "--controllers",
                "nodeipam,deployment,replicaset,disruption,serviceaccount,root-ca-cert-publisher",
            ]
        )
        c.start_kubelet(NODE)
        c.write_kubeconfig()
        kubectl = Kubectl(c)
        # the namespace's default account first: the plugin waits for it only 1-2 s, as
        # upstream's, and the controller-manager may be slower on a loaded CI machine
        kubectl.run("create", "namespace", NS)
        eventually_sync(
            lambda: kubectl.run("get", "-n", NS, "sa/default", check=False).returncode == 0,
            message="the default ServiceAccount",
        )
        kubectl.run("apply", "-f", "-", stdin=MANIFEST)
        kubectl.run("wait", "-n", NS, "--for=condition=Ready", "pod/run", "--timeout=20s")
        yield c


@pytest.fixture(scope="module")
def api_client(cluster: Cluster) -> k8s.ApiClient:
    api_client: k8s.ApiClient = config.new_client_from_config(str(cluster.root / "kubeconfig"))
    return api_client


@pytest.fixture
def kubectl(cluster: Cluster) -> Kubectl:
    return Kubectl(cluster)


_API_PREFIX = {
    "rbac.authorization.k8s.io": "RbacAuthorization",
    "flowcontrol.apiserver.k8s.io": "FlowcontrolApiserver",
}
"""The client's API class prefix where it is not the group's first word capitalized."""


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _typed(api_client: k8s.ApiClient, kind: Kind) -> tuple[Any, str]:
    """The client's API class of the kind's served version and the kind's snake name
    (CoreV1Api, "pod"; StorageV1Api, "csi_node")."""
    group, _, version = SERVED.api_versions[kind.kind][0].rpartition("/")
    prefix = _API_PREFIX.get(group) or (group.split(".")[0].capitalize() if group else "Core")
    cls = prefix + version.capitalize() + "Api"
    return getattr(k8s, cls)(api_client), _snake(kind.kind)


def _served() -> list[Kind]:
    return [k for k in KINDS if SERVED.serves(k)]


def test_every_served_kind_lists_and_gets_through_the_typed_python_client(
    api_client: k8s.ApiClient,
) -> None:
    """S-API-JSON-1: the typed client's models accept every object of every served kind
    (upstream's encoder writes fields without omitempty even when zero; the models raise on
    a required field that is missing)."""
    seen: dict[str, int] = {}
    for kind in _served():
        api, snake = _typed(api_client, kind)
        if kind.namespaced:
            items = getattr(api, f"list_{snake}_for_all_namespaces")().items
        else:
            items = getattr(api, f"list_{snake}")().items
        seen[kind.kind] = len(items)
        for item in items[:3]:
            name, ns = item.metadata.name, item.metadata.namespace
            if kind.namespaced:
                got = getattr(api, f"read_namespaced_{snake}")(name, ns)
            else:
                got = getattr(api, f"read_{snake}")(name)
            assert got.metadata.uid == item.metadata.uid
    missing = [k for k, n in seen.items() if n == 0]
    assert missing == [], f"no object of {missing} to read"


def test_the_fields_upstream_always_writes_are_present(api_client: k8s.ApiClient) -> None:
    """S-API-JSON-2: ContainerStatus imageID and restartCount, the ten fields of a Node's
    nodeInfo, a PDB condition's message (required strings written even when empty)."""
    core = k8s.CoreV1Api(api_client)
    pod = core.read_namespaced_pod("run", NS)
    status = pod.status.container_statuses[0]
    assert status.restart_count == 0 and status.image_id is not None
    info = core.read_node(NODE).status.node_info
    assert info.kubelet_version and info.machine_id is not None and info.boot_id is not None
    policy = k8s.PolicyV1Api(api_client)

    def conditions() -> list[Any]:
        return policy.read_namespaced_pod_disruption_budget("pdb", NS).status.conditions or []

    conds = eventually_sync(conditions, timeout=15, message="the PDB's conditions")
    assert all(c.message is not None for c in conds)


def test_every_served_kind_through_kubectl_get_json_and_explain(kubectl: Kubectl) -> None:
    """S-API-OPENAPI-2: kubectl reads every served kind as JSON (one get of them all), each
    kind's OpenAPI schema carries upstream's description, and `explain` prints upstream's
    descriptions (not `<empty>`) and required fields."""
    resources: list[str] = []
    by_doc: dict[str, list[Kind]] = {}
    for kind in _served():
        group, _, version = SERVED.api_versions[kind.kind][0].rpartition("/")
        resources.append(f"{kind.resource}.{group}" if group else kind.resource)
        doc = f"/openapi/v3/apis/{group}/{version}" if group else f"/openapi/v3/api/{version}"
        by_doc.setdefault(doc, []).append(kind)
    body = kubectl.json("get", ",".join(resources), "-A")
    assert {item["kind"] for item in body["items"]} >= {k.kind for k in _served()}
    for doc, kinds in by_doc.items():
        schemas = json.loads(kubectl.run("get", "--raw", doc).stdout)["components"]["schemas"]
        tagged = {
            gvk["kind"]: schema.get("description", "")
            for schema in schemas.values()
            for gvk in schema.get("x-kubernetes-group-version-kind", ())
        }
        for kind in kinds:
            assert tagged.get(kind.kind), (doc, kind.kind)
    out = kubectl.run("explain", "pod.spec.containers").stdout
    assert "List of containers belonging to the pod." in out, out
    out = kubectl.run("explain", "pods.status.containerStatuses").stdout
    assert re.search(r"imageID\s+<string> -required-", out), out
    out = kubectl.run("explain", "deployments.spec").stdout
    assert "DeploymentSpec is the specification of the desired behavior" in out, out


def test_pods_get_the_default_service_account_and_the_kube_api_access_volume(
    api_client: k8s.ApiClient, kubectl: Kubectl
) -> None:
    """Issue #57 item 5, the ServiceAccount admission plugin as upstream: a pod without an
    account gets `default` and the projected token volume mounted in every container (one
    from kubectl, one from the deployment controller), read back by kubectl and by the
    typed client; a missing account is refused with upstream's message; automount false
    mounts nothing."""
    pod = kubectl.json("get", "-n", NS, "pod/run", "-o", "json")
    spec = pod["spec"]
    assert spec["serviceAccountName"] == "default" and spec["serviceAccount"] == "default"
    [volume] = spec["volumes"]
    assert re.fullmatch(r"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}", volume["name"])
    assert volume["projected"] == {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {
                "configMap": {
                    "name": "kube-root-ca.crt",
                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                }
            },
            {
                "downwardAPI": {
                    "items": [
                        {
                            "path": "namespace",
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                        }
                    ]
                }
            },
        ],
    }
    assert spec["containers"][0]["volumeMounts"] == [
        {
            "name": volume["name"],
            "readOnly": True,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
        }
    ]
    core = k8s.CoreV1Api(api_client)
    typed = core.read_namespaced_pod("run", NS)
    assert (
        typed.spec.volumes[0].projected.sources[0].service_account_token.expiration_seconds == 3607
    )
    eventually_sync(
        lambda: core.list_namespaced_pod(NS, label_selector="app=d").items,
        message="the deployment's pod",
    )
    [made] = core.list_namespaced_pod(NS, label_selector="app=d").items
    assert made.spec.service_account_name == "default"
    assert made.spec.volumes[0].name.startswith("kube-api-access-")
    assert kubectl.json("get", "-n", NS, "configmap/kube-root-ca.crt", "-o", "json")["data"][
        "ca.crt"
    ]

    missing = f"""
apiVersion: v1
kind: Pod
metadata: {{name: nobody, namespace: {NS}}}
spec: {{serviceAccountName: nobody, containers: [{{name: c, image: nginx}}]}}
"""
    done = kubectl.run("apply", "-f", "-", stdin=missing, check=False)
    assert done.returncode == 1
    assert (
        f'pods "nobody" is forbidden: error looking up service account {NS}/nobody: '
        'serviceaccount "nobody" not found'
    ) in done.stderr, done.stderr
    body = k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name="no-token"),
        spec=k8s.V1PodSpec(
            automount_service_account_token=False,
            containers=[k8s.V1Container(name="c", image="nginx")],
        ),
    )
    # (in `default`: the module's ResourceQuota refuses new pods of its namespace until the
    # resourcequota controller, not run here, has computed its usage)
    created = core.create_namespaced_pod("default", body)
    assert created.spec.service_account_name == "default"
    assert not created.spec.volumes and not created.spec.containers[0].volume_mounts
    core.delete_namespaced_pod("no-token", "default", grace_period_seconds=0)


def test_typed_patch_and_delete_of_running_pod_service_and_node(
    api_client: k8s.ApiClient, kubectl: Kubectl
) -> None:
    """S-API-JSON-3: a typed patch and delete of a running object return a valid model (the
    module's last test: it deletes what the others read)."""
    core = k8s.CoreV1Api(api_client)
    labels = {"metadata": {"labels": {"typed": "yes"}}}
    assert core.patch_namespaced_pod("run", NS, labels).metadata.labels["typed"] == "yes"
    assert core.patch_namespaced_service("svc", NS, labels).metadata.labels["typed"] == "yes"
    assert core.patch_node(NODE, labels).metadata.labels["typed"] == "yes"
    deleted = core.delete_namespaced_pod("run", NS, grace_period_seconds=0)
    assert deleted.metadata.name == "run"
    core.delete_namespaced_service("svc", NS)
    core.delete_node("typed-extra")  # (the kubelet's own node stays: it does not register again)
    assert kubectl.run("get", "node", "typed-extra", check=False).returncode == 1


def test_an_account_enforcing_mountable_secrets_limits_the_pods_secrets(
    api_client: k8s.ApiClient, kubectl: Kubectl
) -> None:
    """Issue #57, the ServiceAccount plugin's limitSecretReferences: an account annotated
    kubernetes.io/enforce-mountable-secrets=true lets its pods use only the secrets it lists;
    kubectl's pod naming another is refused in upstream's words, the typed client's pod using
    the listed one through envFrom and a volume is admitted."""
    account = """
apiVersion: v1
kind: ServiceAccount
metadata:
  name: locked
  namespace: default
  annotations: {kubernetes.io/enforce-mountable-secrets: "true"}
secrets: [{name: allowed}]
"""
    kubectl.run("apply", "-f", "-", stdin=account)
    refused = """
apiVersion: v1
kind: Pod
metadata: {name: sneaky, namespace: default}
spec:
  serviceAccountName: locked
  containers:
  - name: c
    image: nginx
    env: [{name: PASSWORD, valueFrom: {secretKeyRef: {name: other, key: k}}}]
"""
    done = kubectl.run("apply", "-f", "-", stdin=refused, check=False)
    assert done.returncode == 1
    assert (
        'pods "sneaky" is forbidden: container c with envVar PASSWORD referencing '
        'secret.secretName="other" is not allowed because service account locked does not '
        "reference that secret"
    ) in done.stderr, done.stderr
    core = k8s.CoreV1Api(api_client)
    body = k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name="listed"),
        spec=k8s.V1PodSpec(
            service_account_name="locked",
            volumes=[
                k8s.V1Volume(name="s", secret=k8s.V1SecretVolumeSource(secret_name="allowed"))
            ],
            containers=[
                k8s.V1Container(
                    name="c",
                    image="nginx",
                    env_from=[
                        k8s.V1EnvFromSource(secret_ref=k8s.V1SecretEnvSource(name="allowed"))
                    ],
                )
            ],
        ),
    )
    created = core.create_namespaced_pod("default", body)
    assert created.spec.service_account_name == "locked"
    core.delete_namespaced_pod("listed", "default", grace_period_seconds=0)
    kubectl.run("delete", "-n", "default", "sa/locked")
