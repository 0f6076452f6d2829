"""The real kubectl (1.32) against kemu's REST edge: a real etcd, apiserver and kubelet.

Skipped when kubectl is not on PATH (it is on every machine of kemu's CI).
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kemu.component.featuregate import FeatureGates
from kemu.machinery.kinds import KINDS, Served
from kemu.machinery.runtime_config import RuntimeConfig
from kemu.testing.cluster import Cluster
from kemu.testing.names import unique_name
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]
NODE = "n1"
NODE_IP = "172.18.0.2"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("rest")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(rest=True)
        c.start_controllermanager(extra_args=["--controllers", "nodeipam"])
        c.start_kubelet(NODE, extra_args=["--node-ip", NODE_IP])
        c.write_kubeconfig()
        yield c


@pytest.fixture
def kubectl(cluster: Cluster) -> Kubectl:
    return Kubectl(cluster)


def pod_manifest(
    name: str, ns: str, *, node: str = "", labels: dict[str, str] | None = None
) -> str:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": labels or {"app": name}},
            "spec": spec,
        }
    )


def test_kubectl_version_and_api_resources(kubectl: Kubectl) -> None:
    version = json.loads(kubectl.run("version", "-o", "json").stdout)
    assert version["serverVersion"]["major"] == "1"
    resources = kubectl.run("api-resources", "-o", "name").stdout.split()
    # a kind behind a gate off by default (the Workload API: GenericWorkload) is not served;
    # one whose gate is on by default (resource.k8s.io: DynamicResourceAllocation) is
    served = Served.at(37, FeatureGates.default().enabled, RuntimeConfig.parse([]))
    for k in KINDS:
        group = k.api_version.rpartition("/")[0]
        name = f"{k.resource}.{group}" if group else k.resource
        assert (name in resources) == served.serves(k), name


def test_kubectl_uses_aggregated_discovery(kubectl: Kubectl) -> None:
    out = kubectl.run(
        "api-resources", "-v=6", "--cache-dir", str(kubectl.dir / "fresh-cache")
    ).stderr
    gets = [ln.split("GET ", 1)[1].split("?")[0] for ln in out.splitlines() if "GET " in ln]
    assert [g.rsplit("/", 1)[1] for g in gets] == ["api", "apis"], gets  # no per-group GETs


def test_kubectl_get_every_kind_plain_wide_and_yaml(kubectl: Kubectl) -> None:
    for k in KINDS:
        if k.gate:
            continue  # not served with the gate off (test_rest_kubectl_pod_groups.py)
        table = (
            kubectl.run("get", k.resource, "-A").stdout
            + kubectl.run("get", k.resource, "-A", "-o", "wide").stdout
        )
        assert "error" not in table.lower(), table
    nodes = kubectl.run("get", "nodes", "-o", "wide").stdout.splitlines()
    assert nodes[0].split()[:2] == ["NAME", "STATUS"] and nodes[1].startswith(NODE)
    ns = kubectl.namespace("get")
    kubectl.run("apply", "-f", "-", stdin=pod_manifest("p", ns))
    wide = kubectl.run("get", "pods", "-n", ns, "-o", "wide").stdout.splitlines()
    assert wide[0].split() == [
        "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED",
        "NODE", "READINESS", "GATES",
    ]  # fmt: skip
    obj = kubectl.run("get", "pod", "p", "-n", ns, "-o", "yaml").stdout
    assert "kind: Pod" in obj and "name: p" in obj
    missing = kubectl.run("get", "pod", "nope", "-n", ns, check=False)
    assert missing.returncode == 1
    assert 'pods "nope" not found' in missing.stderr


def test_kubectl_apply_creates_then_updates_with_a_three_way_merge(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("apply")
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": ns, "labels": {"a": "1"}},
        "data": {"k": "v1", "gone": "x"},
    }
    assert "created" in kubectl.run("apply", "-f", "-", stdin=json.dumps(cm)).stdout
    kubectl.run("label", "configmap", "cfg", "-n", ns, "manual=yes")  # not in the manifest
    cm["data"] = {"k": "v2"}
    assert "configured" in kubectl.run("apply", "-f", "-", stdin=json.dumps(cm)).stdout
    got = kubectl.json("get", "configmap", "cfg", "-n", ns)
    assert got["data"] == {"k": "v2"}  # "gone" removed: it was in the last applied
    assert got["metadata"]["labels"] == {"a": "1", "manual": "yes"}  # kept: never applied
    assert "unchanged" in kubectl.run("apply", "-f", "-", stdin=json.dumps(cm)).stdout
    dup = kubectl.run("create", "-f", "-", stdin=json.dumps(cm), check=False)
    assert dup.returncode == 1 and "AlreadyExists" in dup.stderr


def test_kubectl_create_reports_invalid_fields(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("invalid")
    bad = json.loads(pod_manifest("bad", ns))
    bad["spec"]["containers"][0]["name"] = "Not_A_Name"
    out = kubectl.run("create", "-f", "-", stdin=json.dumps(bad), check=False)
    assert out.returncode == 1
    assert "spec.containers[0].name" in out.stderr


def test_kubectl_patch_merge_json_strategic_and_status(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("patch")
    kubectl.run("apply", "-f", "-", stdin=pod_manifest("p", ns))
    kubectl.run(
        "patch", "pod", "p", "-n", ns, "--type=merge", "-p", '{"metadata":{"labels":{"m":"1"}}}'
    )
    kubectl.run(
        "patch", "pod", "p", "-n", ns, "--type=json",
        "-p", '[{"op":"add","path":"/metadata/labels/j","value":"2"}]',
    )  # fmt: skip
    # strategic: the container is merged by name (its image changes, nothing is replaced)
    kubectl.run(
        "patch", "pod", "p", "-n", ns,
        "-p", '{"spec":{"containers":[{"name":"c","image":"nginx:2"}]},"metadata":{"labels":{"s":"3"}}}',
    )  # fmt: skip
    kubectl.run(
        "patch", "pod", "p", "-n", ns, "--subresource=status", "--type=merge",
        "-p", '{"status":{"phase":"Running"}}',
    )  # fmt: skip
    pod = kubectl.json("get", "pod", "p", "-n", ns)
    assert {"m": "1", "j": "2", "s": "3"}.items() <= pod["metadata"]["labels"].items()
    assert [c["image"] for c in pod["spec"]["containers"]] == ["nginx:2"]
    assert pod["status"]["phase"] == "Running"


def _wide_rows(kubectl: Kubectl, *args: str) -> list[dict[str, str]]:
    """`kubectl get ARGS -o wide` as one dict per row, by header (upstream's column
    positions: headers and cells are aligned on the same offsets)."""
    header, *rows = kubectl.run("get", *args, "-o", "wide").stdout.splitlines()
    names = header.split("   ")
    starts = [header.index(n.strip()) for n in names if n.strip()]
    ends = [*starts[1:], None]
    return [
        {header[a:b].strip(): row[a:b].strip() for a, b in zip(starts, ends, strict=True)}
        for row in rows
    ]


def test_kubectl_get_wide_shows_node_and_pod_addresses(kubectl: Kubectl) -> None:
    """As on a real cluster: the node's INTERNAL-IP (status.addresses, NodeAddress setter) and
    the pod's IP from the node's podCIDR (nodeipam, generateAPIPodStatus)."""
    (node,) = _wide_rows(kubectl, "nodes")
    assert (node["NAME"], node["INTERNAL-IP"], node["EXTERNAL-IP"]) == (NODE, NODE_IP, "<none>")
    deadline = time.monotonic() + 20
    while not kubectl.json("get", "node", NODE)["spec"].get("podCIDR"):
        assert time.monotonic() < deadline, "the node got no podCIDR"
        time.sleep(0.1)
    spec = kubectl.json("get", "node", NODE)["spec"]
    assert spec["podCIDRs"] == [spec["podCIDR"]]
    ns = kubectl.namespace("wide")
    kubectl.run("apply", "-f", "-", stdin=pod_manifest("p", ns, node=NODE))
    kubectl.run("wait", "--for=condition=Ready", "pod/p", "-n", ns, "--timeout=20s", timeout=30)
    status = kubectl.json("get", "pod", "p", "-n", ns)["status"]
    assert status["podIPs"] == [{"ip": status["podIP"]}]
    assert status["hostIPs"] == [{"ip": NODE_IP}] and status["hostIP"] == NODE_IP
    network = ipaddress.ip_network(spec["podCIDR"])
    assert ipaddress.ip_address(status["podIP"]) in network
    (pod,) = _wide_rows(kubectl, "pods", "-n", ns)
    assert (pod["IP"], pod["NODE"]) == (status["podIP"], NODE)


def test_kubectl_wait_for_condition_and_delete_with_grace_period(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("wait")
    kubectl.run("apply", "-f", "-", stdin=pod_manifest("p", ns, node=NODE))
    kubectl.run("wait", "--for=condition=Ready", "pod/p", "-n", ns, "--timeout=20s", timeout=30)
    out = kubectl.run("delete", "pod", "p", "-n", ns, "--grace-period=1", timeout=30)
    assert 'pod "p" deleted' in out.stdout
    assert kubectl.run("get", "pod", "p", "-n", ns, check=False).returncode == 1


def test_kubectl_cordon_uncordon(kubectl: Kubectl) -> None:
    kubectl.run("cordon", NODE)
    try:
        assert kubectl.json("get", "node", NODE)["spec"]["unschedulable"] is True
        assert "SchedulingDisabled" in kubectl.run("get", "node", NODE).stdout
    finally:
        kubectl.run("uncordon", NODE)
    assert "unschedulable" not in kubectl.json("get", "node", NODE)["spec"]


def test_kubectl_create_describe_edit_and_drain(kubectl: Kubectl) -> None:
    """`create namespace|configmap` and drain's evictions come from kubectl's typed clients
    (protobuf bodies); edit patches with what the editor changed."""
    ns = unique_name("typed")
    kubectl.run("create", "namespace", ns)
    kubectl.run("create", "configmap", "cm", "-n", ns, "--from-literal=a=b")
    env = {**kubectl.env, "KUBE_EDITOR": "sed -i s/a:\\ b/a:\\ edited/"}
    assert KUBECTL is not None
    subprocess.run([KUBECTL, "edit", "configmap", "cm", "-n", ns], env=env, check=True, timeout=30)
    assert kubectl.json("get", "configmap", "cm", "-n", ns)["data"] == {"a": "edited"}
    kubectl.run("apply", "-f", "-", stdin=pod_manifest("d", ns, node=NODE))
    kubectl.run("wait", "--for=condition=Ready", "pod/d", "-n", ns, "--timeout=20s", timeout=30)
    described = kubectl.run("describe", "pod", "d", "-n", ns).stdout
    fields = dict(
        (line.split(":", 1)[0], line.split(":", 1)[1].strip())
        for line in described.splitlines()
        if ":" in line and not line.startswith(" ")
    )
    assert fields["Node"].startswith(NODE) and fields["Status"] == "Running"
    try:
        out = kubectl.run(
            "drain", NODE, "--force", "--grace-period=1", "--timeout=30s",
            "--pod-selector=app=d", timeout=40,
        )  # fmt: skip
        assert f"evicting pod {ns}/d" in out.stdout + out.stderr
        assert kubectl.run("get", "pod", "d", "-n", ns, check=False).returncode == 1
    finally:
        kubectl.run("uncordon", NODE)


def test_kubectl_explain_pod_spec(kubectl: Kubectl) -> None:
    out = kubectl.run("explain", "pod.spec").stdout
    assert "containers" in out and "nodeName" in out
    # from /openapi/v2 in gnostic's protobuf
    v2 = kubectl.run("explain", "pod.spec.containers", "--output=plaintext-openapiv2").stdout
    assert "RESOURCE: containers <[]Object>" in v2 and "imagePullPolicy\t<string>" in v2


def test_kubectl_get_watch_prints_new_rows(kubectl: Kubectl, cluster: Cluster) -> None:
    ns = kubectl.namespace("watch")
    assert KUBECTL is not None
    with subprocess.Popen(
        [KUBECTL, "get", "pods", "-n", ns, "-w", "--request-timeout=30s"],
        env=kubectl.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as watch:
        try:
            time.sleep(0.5)  # the watch is registered before the create (if not, the list has it)
            kubectl.run("apply", "-f", "-", stdin=pod_manifest("w", ns))
            assert watch.stdout is not None
            lines: list[str] = []
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and not any(ln.startswith("w ") for ln in lines):
                lines.append(watch.stdout.readline())
            assert any(ln.startswith("w ") for ln in lines), lines
        finally:
            watch.terminate()
            watch.wait(5)


def test_rest_status_bodies(cluster: Cluster) -> None:
    import urllib.error
    import urllib.request

    url = f"{cluster.rest_url}/api/v1/namespaces/default/pods/nope"
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(url, timeout=10)
    assert err.value.code == 404
    body = json.loads(err.value.read())
    assert body["kind"] == "Status" and body["reason"] == "NotFound" and body["code"] == 404


def test_kubectl_server_dry_run_validates_and_stores_nothing(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("dry")
    out = kubectl.run("apply", "--dry-run=server", "-f", "-", stdin=pod_manifest("p", ns))
    assert "(server dry run)" in out.stdout
    assert kubectl.run("get", "pod", "p", "-n", ns, check=False).returncode == 1  # not stored
    bad = json.loads(pod_manifest("bad", ns))
    bad["spec"]["containers"][0]["name"] = "Not_A_Name"
    out = kubectl.run("apply", "--dry-run=server", "-f", "-", stdin=json.dumps(bad), check=False)
    assert out.returncode == 1 and "spec.containers[0].name" in out.stderr  # still validated
    kubectl.run("apply", "-f", "-", stdin=pod_manifest("p", ns))
    before = kubectl.json("get", "pod", "p", "-n", ns)["metadata"]
    changed = json.loads(pod_manifest("p", ns, labels={"app": "p", "new": "1"}))
    out = kubectl.run(
        "apply", "--dry-run=server", "-o", "json", "-f", "-", stdin=json.dumps(changed)
    )
    assert json.loads(out.stdout)["metadata"]["labels"]["new"] == "1"  # the would-be object
    out = kubectl.run("delete", "pod", "p", "-n", ns, "--dry-run=server")
    assert "(server dry run)" in out.stdout
    after = kubectl.json("get", "pod", "p", "-n", ns)["metadata"]
    assert after["resourceVersion"] == before["resourceVersion"]  # neither write happened
    assert "new" not in after["labels"] and "deletionTimestamp" not in after


def test_kubectl_field_validation_strict_rejects_unknown_fields(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("strict")
    bad = json.loads(pod_manifest("p", ns))
    bad["spec"]["foo"] = 1
    out = kubectl.run("create", "-f", "-", stdin=json.dumps(bad), check=False)
    assert out.returncode == 1
    assert 'strict decoding error: unknown field "spec.foo"' in out.stderr
    out = kubectl.run("create", "--validate=warn", "-f", "-", stdin=json.dumps(bad))
    assert 'unknown field "spec.foo"' in out.stderr  # kubectl prints the Warning header
    assert "foo" not in kubectl.json("get", "pod", "p", "-n", ns)["spec"]


def test_kubectl_prints_times_with_upstream_precision(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("times")
    kubectl.run("apply", "-f", "-", stdin=pod_manifest("p", ns))
    created = kubectl.json("get", "pod", "p", "-n", ns)["metadata"]["creationTimestamp"]
    assert len(created) == len("2026-11-23T18:00:00Z") and created.endswith("Z")
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l", "namespace": ns},
        "spec": {"holderIdentity": "me", "renewTime": "2026-11-23T18:00:00.123456Z"},
    }
    kubectl.run("apply", "-f", "-", stdin=json.dumps(lease))
    got = kubectl.json("get", "lease", "l", "-n", ns)["spec"]["renewTime"]
    assert got == "2026-11-23T18:00:00.123456Z"  # MicroTime keeps its microseconds


def test_kubectl_delete_by_label_and_all(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("delall")
    for name, tier in (("a", "x"), ("b", "x"), ("c", "y")):
        kubectl.run("apply", "-f", "-", stdin=pod_manifest(name, ns, labels={"tier": tier}))
    kubectl.run("delete", "pods", "-n", ns, "-l", "tier=x", "--grace-period=0", "--force")
    names = kubectl.run("get", "pods", "-n", ns, "-o", "name").stdout.split()
    assert names == ["pod/c"]
    kubectl.run("delete", "pods", "--all", "-n", ns, "--grace-period=0", "--force")
    assert kubectl.run("get", "pods", "-n", ns, "-o", "name").stdout.split() == []


def test_kubectl_strategic_patch_uses_the_merge_keys_of_each_type(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("smp")
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": ns},
        "spec": {
            "selector": {"app": "x"},
            "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 443}],
        },
    }
    kubectl.run("apply", "-f", "-", stdin=json.dumps(svc))
    kubectl.run(
        "patch",
        "service",
        "s",
        "-n",
        ns,
        "-p",
        '{"spec":{"ports":[{"port":80,"targetPort":9090}]}}',
    )
    ports = kubectl.json("get", "service", "s", "-n", ns)["spec"]["ports"]
    assert [(p["port"], p["targetPort"]) for p in ports] == [(80, 9090), (443, 443)]


def test_kubectl_create_subcommands_send_protobuf_kemu_reads(kubectl: Kubectl) -> None:
    """kubectl's typed clients send these bodies in protobuf (no JSON retry on a 415)."""
    ns = kubectl.namespace("pb")
    kubectl.run("create", "deployment", "d", "-n", ns, "--image=nginx", "--replicas=2")
    kubectl.run("create", "job", "j", "-n", ns, "--image=busybox", "--", "sleep", "1")
    pc = unique_name("pc")
    kubectl.run("create", "priorityclass", pc, "--value=1000", "--description=high")
    kubectl.run(
        "create", "poddisruptionbudget", "pdb", "-n", ns, "--selector=app=d", "--min-available=50%"
    )  # fmt: skip
    kubectl.run("create", "service", "clusterip", "s", "-n", ns, "--tcp=80:8080")
    deployment = kubectl.json("get", "deployment", "d", "-n", ns)
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["selector"] == {"matchLabels": {"app": "d"}}
    assert [c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]] == ["nginx"]
    job = kubectl.json("get", "job", "j", "-n", ns)["spec"]["template"]["spec"]
    assert job["restartPolicy"] == "Never"
    assert job["containers"][0]["command"] == ["sleep", "1"]
    got = kubectl.json("get", "priorityclass", pc)
    assert (got["value"], got["description"]) == (1000, "high")
    pdb = kubectl.json("get", "pdb", "pdb", "-n", ns)["spec"]
    assert pdb["minAvailable"] == "50%" and pdb["selector"] == {"matchLabels": {"app": "d"}}
    port = kubectl.json("get", "service", "s", "-n", ns)["spec"]["ports"][0]
    assert (port["port"], port["targetPort"]) == (80, 8080)


def test_kubectl_drain_waits_for_the_pdb_to_allow_the_eviction(kubectl: Kubectl) -> None:
    """Evictions a PDB refuses are 429s that drain retries; once the budget allows one (its
    status written as the disruption controller would: none runs here), drain evicts."""
    ns = kubectl.namespace("drainpdb")
    kubectl.run("apply", "-f", "-", stdin=pod_manifest("guarded", ns, node=NODE))
    kubectl.run(
        "wait", "--for=condition=Ready", "pod/guarded", "-n", ns, "--timeout=20s", timeout=30
    )
    kubectl.run(
        "create",
        "poddisruptionbudget",
        "pdb",
        "-n",
        ns,
        "--selector=app=guarded",
        "--min-available=1",
    )
    drain = ["drain", NODE, "--force", "--grace-period=1", "--pod-selector=app=guarded"]
    try:
        refused = kubectl.run(*drain, "--timeout=3s", check=False, timeout=20)
        assert refused.returncode != 0
        assert "would violate the pod's disruption budget" in refused.stderr
        assert kubectl.json("get", "pod", "guarded", "-n", ns)["metadata"]["name"] == "guarded"
        status = {
            "status": {
                "observedGeneration": 1,
                "disruptionsAllowed": 1,
                "currentHealthy": 1,
                "desiredHealthy": 0,
                "expectedPods": 1,
            }
        }
        kubectl.run(
            "patch", "pdb", "pdb", "-n", ns, "--subresource=status", "--type=merge",
            "-p", json.dumps(status),
        )  # fmt: skip
        out = kubectl.run(*drain, "--timeout=30s", timeout=40)
        assert f"evicting pod {ns}/guarded" in out.stdout + out.stderr
        assert kubectl.run("get", "pod", "guarded", "-n", ns, check=False).returncode == 1
    finally:
        kubectl.run("uncordon", NODE)


def test_kubectl_scale_through_the_scale_subresource(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("scale")
    kubectl.run("create", "deployment", "d", "-n", ns, "--image=nginx")
    kubectl.run("scale", "deployment", "d", "-n", ns, "--replicas=3")
    assert kubectl.json("get", "deployment", "d", "-n", ns)["spec"]["replicas"] == 3
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/d/scale"
    got = json.loads(kubectl.run("get", "--raw", path).stdout)
    assert (got["kind"], got["spec"], got["status"]["selector"]) == (
        "Scale",
        {"replicas": 3},
        "app=d",
    )
    rv = kubectl.json("get", "deployment", "d", "-n", ns)["metadata"]["resourceVersion"]
    stale = kubectl.run(
        "scale", "deployment", "d", "-n", ns, "--replicas=1", "--resource-version=1", check=False
    )
    assert stale.returncode == 1 and "Expected resource version to be 1" in stale.stderr
    # with a resourceVersion, kubectl PUTs the Scale it read (a precondition on the write)
    kubectl.run("scale", "deployment", "d", "-n", ns, "--replicas=1", f"--resource-version={rv}")
    assert kubectl.json("get", "deployment", "d", "-n", ns)["spec"]["replicas"] == 1


def test_kubectl_auth_can_i_is_allowed_as_without_authorization(kubectl: Kubectl) -> None:
    """SelfSubjectAccessReview and SelfSubjectRulesReview answered as upstream's AlwaysAllow
    authorizer (kubectl sends both in protobuf)."""
    for args in (
        ("create", "pods"),
        ("delete", "nodes"),
        ("list", "events.events.k8s.io", "-n", "kube-system"),
        ("get", "/logs"),
    ):
        proc = kubectl.run("auth", "can-i", *args)
        assert (proc.returncode, proc.stdout.strip()) == (0, "yes"), args
    listed = kubectl.run("auth", "can-i", "--list").stdout.splitlines()
    assert listed[0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    assert [row.split() for row in listed[1:]] == [["*.*", "[]", "[]", "[*]"], ["[*]", "[]", "[*]"]]
