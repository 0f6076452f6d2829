"""Issue #57's RBAC, networking, certificates, apiregistration, LimitRange and ResourceQuota
kinds through the REST edge with the real kubectl (1.32), on one cluster (an apiserver and a
controller-manager running only the resourcequota controller): one object of each kind
created from YAML, listed (tables and -o wide), a pod defaulted by a LimitRange and one
refused by a ResourceQuota with upstream's message, a CSR approved with `kubectl certificate
approve`, the Local APIServices, and `kubectl api-resources`.

Skipped when kubectl is not on PATH (it is on every machine of kemu's CI).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kemu.testing.cluster import Cluster
from kemu.testing.processes import python_env, run_python_module
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]

_CSR_PEM = (
    b"-----BEGIN CERTIFICATE REQUEST-----\n"
    + base64.encodebytes(b"\x30\x82\x01\x00" + b"kemu-test-request" * 8)
    + b"-----END CERTIFICATE REQUEST-----\n"
)


def manifest(ns: str) -> str:
    request = base64.b64encode(_CSR_PEM).decode()
    return f"""---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: pod-reader, namespace: {ns}}}
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {ns}-aggregate}}
aggregationRule:
  clusterRoleSelectors:
  - matchLabels: {{rbac.example.com/aggregate-to-{ns}: "true"}}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: read-pods, namespace: {ns}}}
subjects:
- kind: User
  name: jane
- kind: ServiceAccount
  name: default
  namespace: {ns}
roleRef: {{kind: Role, name: pod-reader, apiGroup: rbac.authorization.k8s.io}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {ns}-admins}}
subjects:
- kind: Group
  name: admins
  apiGroup: rbac.authorization.k8s.io
roleRef: {{kind: ClusterRole, name: {ns}-aggregate, apiGroup: rbac.authorization.k8s.io}}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {{name: {ns}-nginx}}
spec: {{controller: k8s.io/ingress-nginx}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{name: web, namespace: {ns}}}
spec:
  ingressClassName: {ns}-nginx
  rules:
  - host: web.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service: {{name: web, port: {{number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: deny-ingress, namespace: {ns}}}
spec:
  podSelector: {{matchLabels: {{app: web}}}}
  ingress:
  - from:
    - podSelector: {{matchLabels: {{role: frontend}}}}
    ports:
    - port: 80
---
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {{name: {ns}-csr}}
spec:
  request: {request}
  signerName: kubernetes.io/kube-apiserver-client
  expirationSeconds: 86400
  usages: [client auth]
---
apiVersion: v1
kind: LimitRange
metadata: {{name: limits, namespace: {ns}}}
spec:
  limits:
  - type: Container
    default: {{cpu: 500m, memory: 256Mi}}
    defaultRequest: {{cpu: 100m, memory: 64Mi}}
    max: {{cpu: "2"}}
---
apiVersion: v1
kind: ResourceQuota
metadata: {{name: pods-quota, namespace: {ns}}}
spec:
  hard: {{pods: "1", requests.cpu: "1"}}
"""


def pod(name: str) -> str:
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  containers:
  - name: app
    image: nginx
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("rest-kinds-a")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(rest=True)
        c.start_controllermanager(
            extra_args=["--controllers", "resourcequota-controller"], cluster_cidr=None
        )
        c.write_kubeconfig()
        yield c


@pytest.fixture(scope="module")
def kubectl(cluster: Cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture(scope="module")
def ns(kubectl: Kubectl) -> str:
    ns = kubectl.namespace("kinds-a")
    kubectl.run("apply", "-f", "-", stdin=manifest(ns))
    return ns


def _wait(check: Callable[[], object], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g}s")
        time.sleep(0.1)


def test_s_api_rbac_1_kinds_a_in_api_resources(kubectl: Kubectl) -> None:
    """S-API-RBAC-1, S-API-NET-1, S-API-CSR-1, S-API-QUOTA-1, S-API-LIMIT-1: discovery lists
    each kind with upstream's short names and scope."""
    out = kubectl.run("api-resources").stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    expect = {
        "roles": ("rbac.authorization.k8s.io/v1", "true", "Role"),
        "clusterroles": ("rbac.authorization.k8s.io/v1", "false", "ClusterRole"),
        "rolebindings": ("rbac.authorization.k8s.io/v1", "true", "RoleBinding"),
        "clusterrolebindings": ("rbac.authorization.k8s.io/v1", "false", "ClusterRoleBinding"),
        "ingresses": ("networking.k8s.io/v1", "true", "Ingress"),
        "ingressclasses": ("networking.k8s.io/v1", "false", "IngressClass"),
        "networkpolicies": ("networking.k8s.io/v1", "true", "NetworkPolicy"),
        "certificatesigningrequests": (
            "certificates.k8s.io/v1",
            "false",
            "CertificateSigningRequest",
        ),
        "apiservices": ("apiregistration.k8s.io/v1", "false", "APIService"),
        "limitranges": ("v1", "true", "LimitRange"),
        "resourcequotas": ("v1", "true", "ResourceQuota"),
    }
    for resource, (gv, namespaced, kind) in expect.items():
        assert resource in rows, out
        assert rows[resource][-3:] == [gv, namespaced, kind], rows[resource]
    assert rows["ingresses"][1] == "ing"
    assert rows["networkpolicies"][1] == "netpol"
    assert rows["certificatesigningrequests"][1] == "csr"
    assert rows["limitranges"][1] == "limits"
    assert rows["resourcequotas"][1] == "quota"


def test_s_api_rbac_2_get_tables(kubectl: Kubectl, ns: str) -> None:
    """S-API-RBAC-2, S-API-NET-2: each kind's table as upstream's printers (plain, -o wide)."""
    out = kubectl.run("get", "roles", "-n", ns).stdout
    assert out.split("\n")[0].split() == ["NAME", "CREATED", "AT"], out
    assert "pod-reader" in out and "Z" in out.split("\n")[1]
    out = kubectl.run("get", "rolebinding", "read-pods", "-n", ns, "-o", "wide").stdout
    header, line = out.splitlines()[:2]
    assert header.split() == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    assert line.split()[:2] == ["read-pods", "Role/pod-reader"]
    assert "jane" in line and f"{ns}/default" in line
    out = kubectl.run("get", "clusterrolebinding", f"{ns}-admins", "-o", "wide").stdout
    assert f"ClusterRole/{ns}-aggregate" in out and "admins" in out
    cr = kubectl.json("get", "clusterrole", f"{ns}-aggregate")
    assert cr["aggregationRule"]["clusterRoleSelectors"]
    out = kubectl.run("get", "ing", "-n", ns, "-o", "wide").stdout
    header, line = out.splitlines()[:2]
    assert header.split() == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    assert line.split()[:4] == ["web", f"{ns}-nginx", "web.example.com", "80"]
    out = kubectl.run("get", "ingressclass", f"{ns}-nginx").stdout
    assert out.splitlines()[1].split()[:3] == [f"{ns}-nginx", "k8s.io/ingress-nginx", "<none>"]
    out = kubectl.run("get", "netpol", "-n", ns).stdout
    assert out.splitlines()[1].split()[:2] == ["deny-ingress", "app=web"]
    np = kubectl.json("get", "netpol", "deny-ingress", "-n", ns)
    assert np["spec"]["policyTypes"] == ["Ingress"]  # defaulted
    assert np["spec"]["ingress"][0]["ports"][0]["protocol"] == "TCP"


def test_s_api_rbac_3_role_ref_immutable(kubectl: Kubectl, ns: str) -> None:
    """S-API-RBAC-3: a RoleBinding's roleRef cannot change (422 naming roleRef)."""
    proc = kubectl.run(
        "patch",
        "rolebinding",
        "read-pods",
        "-n",
        ns,
        "--type",
        "merge",
        "-p",
        '{"roleRef":{"name":"other"}}',
        check=False,
    )
    assert proc.returncode != 0
    assert "roleRef" in proc.stderr and "cannot change roleRef" in proc.stderr


def test_s_api_csr_1_approve(kubectl: Kubectl, ns: str) -> None:
    """S-API-CSR-1: a CSR is Pending, then `kubectl certificate approve` makes it Approved
    through the /approval subresource."""
    name = f"{ns}-csr"
    out = kubectl.run("get", "csr", name).stdout
    header, line = out.splitlines()[:2]
    assert header.split() == [
        "NAME",
        "AGE",
        "SIGNERNAME",
        "REQUESTOR",
        "REQUESTEDDURATION",
        "CONDITION",
    ]
    assert line.split()[2:] == [
        "kubernetes.io/kube-apiserver-client",
        "system:anonymous",
        "24h",
        "Pending",
    ]
    kubectl.run("certificate", "approve", name)
    csr = kubectl.json("get", "csr", name)
    (cond,) = csr["status"]["conditions"]
    assert cond["type"] == "Approved" and cond["status"] == "True"
    assert cond["lastUpdateTime"] and cond["lastTransitionTime"]
    assert kubectl.run("get", "csr", name).stdout.splitlines()[1].split()[-1] == "Approved"
    proc = kubectl.run("certificate", "deny", name, check=False)
    assert proc.returncode != 0  # kubectl refuses to deny an approved request without --force


def test_s_api_net_3_apiservices_local(kubectl: Kubectl) -> None:
    """S-API-NET-3 (apiregistration): kemu's own group versions as Local, Available."""
    out = kubectl.run("get", "apiservices").stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    for name in ("v1.", "v1.apps", "v1.rbac.authorization.k8s.io", "v1.networking.k8s.io"):
        assert rows[name][1:3] == ["Local", "True"], out


@pytest.fixture(scope="module")
def first_pod(kubectl: Kubectl, ns: str) -> dict[str, Any]:
    """A pod without resources, created once the quota has its status.hard (until then the
    admission refuses with "status unknown for quota")."""
    _wait(
        lambda: kubectl.json("get", "quota", "pods-quota", "-n", ns).get("status", {}).get("hard"),
        "the quota's status.hard",
    )
    kubectl.run("apply", "-n", ns, "-f", "-", stdin=pod("first"))
    got: dict[str, Any] = kubectl.json("get", "pod", "first", "-n", ns)
    return got


def test_s_api_limit_1_pod_defaulted(first_pod: dict[str, Any]) -> None:
    """S-API-LIMIT-1: a pod without resources gets the LimitRange's defaultRequest and
    default (LimitRanger) and its annotation."""
    res = first_pod["spec"]["containers"][0]["resources"]
    assert res["requests"] == {"cpu": "100m", "memory": "64Mi"}
    assert res["limits"] == {"cpu": "500m", "memory": "256Mi"}
    assert first_pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container app; "
        "cpu, memory limit for container app"
    )


def test_s_api_quota_1_refused_over_quota(
    kubectl: Kubectl, ns: str, first_pod: dict[str, Any]
) -> None:
    """S-API-QUOTA-1: the quota's status.used counts the first pod; a second one is refused
    with upstream's "exceeded quota" message; `get quota` prints used/hard."""
    proc = kubectl.run("apply", "-n", ns, "-f", "-", stdin=pod("second"), check=False)
    assert proc.returncode != 0
    assert (
        'pods "second" is forbidden: exceeded quota: pods-quota, requested: pods=1, '
        "used: pods=1, limited: pods=1"
    ) in proc.stderr, proc.stderr
    _wait(
        lambda: "pods: 1/1" in kubectl.run("get", "quota", "-n", ns).stdout,
        "get quota printing pods: 1/1",
    )
    out = kubectl.run("get", "quota", "-n", ns).stdout
    header, line = out.splitlines()[:2]
    assert header.split() == ["NAME", "AGE", "REQUEST", "LIMIT"]
    assert "pods: 1/1, requests.cpu: 100m/1" in line


def test_s_api_rbac_6_kemuctl_get_through_the_grpc_edge(cluster: Cluster, ns: str) -> None:
    """S-API-RBAC-6: kemuctl (gRPC) lists the kinds with the same tables."""
    env = python_env({"KEMU_SERVER": cluster.server})

    def kemuctl(*args: str) -> list[str]:
        done = run_python_module("kemu.ctl", args, env=env)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    assert kemuctl("get", "rolebindings", "-n", ns)[1].split()[:2] == [
        "read-pods",
        "Role/pod-reader",
    ]
    assert kemuctl("get", "netpol", "-n", ns)[1].split()[:2] == ["deny-ingress", "app=web"]
    assert kemuctl("get", "limits", "-n", ns)[1].split()[0] == "limits"
    assert "v1.apps" in "\n".join(kemuctl("get", "apiservices"))


def test_s_api_rbac_7_typed_clients_write_protobuf(kubectl: Kubectl, ns: str) -> None:
    """S-API-RBAC-7, S-API-NET-6, S-API-QUOTA-5: `kubectl create role|rolebinding|ingress|
    quota` send protobuf bodies (kubectl's typed clients), read with upstream's field
    numbers."""
    kubectl.run("create", "role", "cm-reader", "-n", ns, "--verb=get,list", "--resource=configmaps")
    role = kubectl.json("get", "role", "cm-reader", "-n", ns)
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}
    ]
    kubectl.run(
        "create", "rolebinding", "cm", "-n", ns, "--role=cm-reader", f"--serviceaccount={ns}:sa"
    )
    rb = kubectl.json("get", "rolebinding", "cm", "-n", ns)
    assert rb["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "cm-reader",
    }
    assert rb["subjects"] == [{"kind": "ServiceAccount", "name": "sa", "namespace": ns}]
    kubectl.run("create", "ingress", "simple", "-n", ns, "--rule=foo.com/bar=svc1:8080")
    ing = kubectl.json("get", "ingress", "simple", "-n", ns)
    (path,) = ing["spec"]["rules"][0]["http"]["paths"]
    assert path["pathType"] == "Exact"
    assert path["backend"]["service"] == {"name": "svc1", "port": {"number": 8080}}
    kubectl.run("create", "quota", "cm-quota", "-n", ns, "--hard=configmaps=10")
    assert kubectl.json("get", "quota", "cm-quota", "-n", ns)["spec"]["hard"] == {
        "configmaps": "10"
    }


# ---------------------------------------------------------------- issue #57 gcquota:
# LimitRanger on PersistentVolumeClaims, ResourceQuota charging updates

_UPDATES = """
apiVersion: v1
kind: LimitRange
metadata: {{name: storage, namespace: {ns}}}
spec:
  limits:
  - type: PersistentVolumeClaim
    max: {{storage: 4Gi}}
  - type: Container
    max: {{cpu: "3"}}
---
apiVersion: v1
kind: ResourceQuota
metadata: {{name: updates, namespace: {ns}}}
spec:
  hard: {{requests.storage: 2Gi, services.loadbalancers: "0", requests.cpu: "1"}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: data, namespace: {ns}}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {{requests: {{storage: 1Gi}}}}
"""


@pytest.fixture(scope="module")
def updates_ns(kubectl: Kubectl) -> str:
    """A namespace with a LimitRange (PVC max 4Gi, container max 3 cpu), a quota (requests.storage 2Gi, no load
    balancer, 1 cpu) once computed, and a 1Gi claim made Bound (expandable)."""
    ns = kubectl.namespace("quota-upd")
    limits_and_quota = "---\n".join(_UPDATES.format(ns=ns).split("---\n")[:2])
    kubectl.run("apply", "-f", "-", stdin=limits_and_quota)
    _wait(
        lambda: kubectl.json("get", "quota", "updates", "-n", ns).get("status", {}).get("hard"),
        "the quota's status.hard",
    )
    return ns


def _refused(kubectl: Kubectl, *args: str, stdin: str | None = None) -> str:
    proc = kubectl.run(*args, check=False, stdin=stdin)
    assert proc.returncode != 0, proc.stdout
    return proc.stderr.strip()


def test_s_api_limit_pvc_3_claims_bounded_on_create_and_expansion(
    kubectl: Kubectl, updates_ns: str
) -> None:
    """S-API-LIMIT-PVC-3, S-API-QUOTA-UPD-4: a claim over the LimitRange's max is refused at
    create; a Bound claim expanded past the quota is refused with the delta as requested,
    past the max by LimitRanger (first)."""
    ns = updates_ns
    big = _UPDATES.format(ns=ns).split("---\n")[2].replace("name: data", "name: big")
    err = _refused(kubectl, "apply", "-f", "-", stdin=big.replace("1Gi", "5Gi"))
    assert (
        'persistentvolumeclaims "big" is forbidden: '
        "maximum storage usage per PersistentVolumeClaim is 4Gi, but request is 5Gi"
    ) in err
    kubectl.run("apply", "-f", "-", stdin=_UPDATES.format(ns=ns).split("---\n")[2])
    kubectl.run(
        "patch", "pvc", "data", "-n", ns, "--subresource=status", "--type=merge",
        "-p", '{"status":{"phase":"Bound"}}',
    )  # fmt: skip

    def expand(size: str) -> str:
        patch = json.dumps({"spec": {"resources": {"requests": {"storage": size}}}})
        return _refused(kubectl, "patch", "pvc", "data", "-n", ns, "--type=merge", "-p", patch)

    assert (
        'persistentvolumeclaims "data" is forbidden: exceeded quota: updates, '
        "requested: requests.storage=2Gi, used: requests.storage=1Gi, "
        "limited: requests.storage=2Gi"
    ) in expand("3Gi")
    assert "maximum storage usage per PersistentVolumeClaim is 4Gi, but request is 5Gi" in (
        expand("5Gi")
    )
    patch = '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}'
    kubectl.run("patch", "pvc", "data", "-n", ns, "--type=merge", "-p", patch)
    used = kubectl.json("get", "quota", "updates", "-n", ns)["status"]["used"]
    assert used["requests.storage"] == "2Gi"


def test_s_api_quota_upd_5_service_type_and_pod_resize(kubectl: Kubectl, updates_ns: str) -> None:
    """S-API-QUOTA-UPD-5: a Service turned LoadBalancer under services.loadbalancers=0, and a
    pod resized past requests.cpu, are refused with upstream's messages; a resize past the
    LimitRange's max is LimitRanger's refusal."""
    ns = updates_ns
    kubectl.run("create", "service", "clusterip", "web", "-n", ns, "--tcp=80:80")
    err = _refused(
        kubectl, "patch", "service", "web", "-n", ns, "--type=merge",
        "-p", '{"spec":{"type":"LoadBalancer"}}',
    )  # fmt: skip
    assert (
        'services "web" is forbidden: exceeded quota: updates, requested: '
        "services.loadbalancers=1, used: services.loadbalancers=0, "
        "limited: services.loadbalancers=0"
    ) in err
    pod = (
        '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"r"},"spec":{"containers":'
        '[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"500m"},'
        '"limits":{"cpu":"500m"}}}]}}'
    )
    kubectl.run("create", "-n", ns, "-f", "-", stdin=pod)
    resize = (
        '{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"2"},'
        '"limits":{"cpu":"2"}}}]}}'
    )
    err = _refused(kubectl, "patch", "pod", "r", "-n", ns, "--subresource=resize", "-p", resize)
    assert (
        'pods "r" is forbidden: exceeded quota: updates, requested: requests.cpu=1500m, '
        "used: requests.cpu=500m, limited: requests.cpu=1"
    ) in err
    # LimitRanger checks a resize as a new pod, before the quota
    resize = resize.replace('"2"', '"4"')
    err = _refused(kubectl, "patch", "pod", "r", "-n", ns, "--subresource=resize", "-p", resize)
    assert (
        'pods "r" is forbidden: [maximum cpu usage per Container is 3, but limit is 4, '
        "maximum cpu usage per Container is 3, but request is 4]"
    ) in err


def test_s_api_quota_count_1_every_namespaced_builtin_kind_is_counted(kubectl: Kubectl) -> None:
    """S-API-QUOTA-COUNT-1 (issue #57 item 4): a quota on count/<resource>.<group> of a kind
    beyond the workloads (Roles, Leases) refuses the object past it, and the resourcequota
    controller, which counts every namespaced built-in kind but Events, gives the count back
    when one is deleted."""
    ns = kubectl.namespace("quota-count")
    roles, leases = "count/roles.rbac.authorization.k8s.io", "count/leases.coordination.k8s.io"
    kubectl.run("create", "quota", "q", "-n", ns, f"--hard={roles}=1,{leases}=2")

    def used() -> dict[str, str]:
        status = kubectl.json("get", "quota", "q", "-n", ns).get("status", {})
        return dict(status.get("used", {})) if status.get("hard") else {}

    _wait(lambda: used() == {roles: "0", leases: "0"}, "the quota's first status")
    kubectl.run("create", "role", "r1", "-n", ns, "--verb=get", "--resource=pods")
    refused = kubectl.run(
        "create", "role", "r2", "-n", ns, "--verb=get", "--resource=pods", check=False
    )
    assert refused.returncode == 1
    assert f"exceeded quota: q, requested: {roles}=1, used: {roles}=1" in refused.stderr
    lease = (
        f"apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {{name: l, namespace: {ns}}}\n"
    )
    kubectl.run("apply", "-f", "-", stdin=lease)
    _wait(lambda: used() == {roles: "1", leases: "1"}, "roles 1 and leases 1 used")
    kubectl.run("delete", "role", "r1", "-n", ns)
    _wait(lambda: used() == {roles: "0", leases: "1"}, "the role's count given back")
    kubectl.run("create", "role", "r2", "-n", ns, "--verb=get", "--resource=pods")
