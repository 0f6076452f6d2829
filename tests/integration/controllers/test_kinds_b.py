"""Issue #57's controller kinds on real processes, one cluster for the module (kubectl 1.32 on
the REST edge): namespace defaults (S-NS-DEF-4), the `kubernetes` Service's endpoints
(S-EPS-6), a Service's EndpointSlice and Endpoints with its ready pods (S-EPS-7), a
ReplicationController's pods (S-API-RC-4), `kubectl autoscale` scaling a Deployment on
simulated CPU (S-HPA-9) and `kubectl create token` (S-NS-DEF-5)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

from kemu.client.client import Client
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl

pytestmark = [
    pytest.mark.integration,
    pytest.mark.anyio,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    # the cluster clock (virtual at rate 1), for the HPA's test to move past its timers
    with Cluster(tmp_path_factory.mktemp("kinds-b"), clock=ClockMode.VIRTUAL) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(rest=True)
        c.start_scheduler()
        c.start_controllermanager()
        c.start_kubelet("n1", extra_args=["--capacity", "cpu=16,memory=32Gi,pods=110"])
        c.write_kubeconfig()
        yield c


@pytest.fixture(scope="module")
def kubectl(cluster: Cluster) -> Kubectl:
    return Kubectl(cluster)


def _deployment(name: str, ns: str, replicas: int, cpu_usage: str) -> str:
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {
                        "labels": {"app": name},
                        "annotations": {"kubelet.kemu.io/cpu-usage": cpu_usage},
                    },
                    "spec": {
                        "containers": [
                            {
                                "name": "c",
                                "image": "nginx",
                                "ports": [{"name": "http", "containerPort": 8080}],
                                "resources": {"requests": {"cpu": "100m"}},
                            }
                        ]
                    },
                },
            },
        }
    )


async def test_s_ns_def_4_a_new_namespace_gets_its_account_and_root_ca(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("nsdef")

    def defaults() -> bool:
        sa = kubectl.run("get", "sa", "default", "-n", ns, check=False)
        cm = kubectl.run("get", "cm", "kube-root-ca.crt", "-n", ns, "-o", "json", check=False)
        if sa.returncode or cm.returncode:
            return False
        return bool(json.loads(cm.stdout)["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE"))

    await eventually(defaults, timeout=10, interval=0.2)


async def test_s_eps_6_the_kubernetes_service_points_at_the_apiserver(kubectl: Kubectl) -> None:
    svc = kubectl.json("get", "svc", "kubernetes", "-n", "default")
    assert svc["spec"]["clusterIP"] == "10.96.0.1"
    assert svc["spec"]["ports"][0]["port"] == 443
    eps = kubectl.json("get", "endpointslice", "kubernetes", "-n", "default")
    port = eps["ports"][0]["port"]
    assert kubectl.cluster.rest_url.endswith(f":{port}")
    ep = kubectl.json("get", "endpoints", "kubernetes", "-n", "default")
    assert ep["subsets"][0]["ports"][0]["port"] == port


async def test_s_eps_7_a_service_gets_endpoints_of_its_ready_pods(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("eps")
    kubectl.run("apply", "-f", "-", stdin=_deployment("web", ns, 2, "10m"))
    kubectl.run("expose", "deployment", "web", "-n", ns, "--port=80", "--target-port=http")

    def ready() -> Any:
        slices = kubectl.json(
            "get", "endpointslices", "-n", ns, "-l", "kubernetes.io/service-name=web"
        )["items"]
        if len(slices) != 1:
            return None
        endpoints = slices[0].get("endpoints") or []
        ok = [e for e in endpoints if e["conditions"].get("ready")]
        return slices[0] if len(ok) == 2 else None

    eps = await eventually(ready, timeout=10, interval=0.2)
    assert eps["addressType"] == "IPv4"
    assert eps["ports"] == [{"name": "", "port": 8080, "protocol": "TCP"}]
    assert eps["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == (
        "endpointslice-controller.k8s.io"
    )
    table = kubectl.run("get", "endpoints", "web", "-n", ns).stdout
    assert table.split("\n")[0].split() == ["NAME", "ENDPOINTS", "AGE"]
    assert ":8080" in table


async def test_s_api_rc_4_a_replication_controller_runs_its_pods(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("rc")
    rc = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "legacy", "namespace": ns},
        "spec": {
            "replicas": 2,
            "template": {
                "metadata": {"labels": {"app": "legacy"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    kubectl.run("apply", "-f", "-", stdin=json.dumps(rc))

    def ready() -> bool:
        got = kubectl.json("get", "rc", "legacy", "-n", ns)
        return bool(got["status"].get("readyReplicas") == 2)

    await eventually(ready, timeout=10, interval=0.2)
    kubectl.run("scale", "rc", "legacy", "-n", ns, "--replicas=1")

    def scaled() -> bool:
        pods = kubectl.json("get", "pods", "-n", ns, "-l", "app=legacy")["items"]
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        return len(live) == 1 and live[0]["metadata"]["ownerReferences"][0]["kind"] == (
            "ReplicationController"
        )

    await eventually(scaled, timeout=10, interval=0.2)
    header = kubectl.run("get", "rc", "-n", ns).stdout.split("\n")[0].split()
    assert header == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]


async def test_s_hpa_9_kubectl_autoscale_scales_a_deployment_on_simulated_cpu(
    kubectl: Kubectl,
) -> None:
    ns = kubectl.namespace("hpa")
    # each pod uses 90m of its 100m request: 90% against a 50% target
    kubectl.run("apply", "-f", "-", stdin=_deployment("busy", ns, 1, "90m"))

    def running() -> bool:
        got = kubectl.json("get", "deploy", "busy", "-n", ns)
        return bool(got["status"].get("readyReplicas") == 1)

    await eventually(running, timeout=10, interval=0.2)
    kubectl.run(
        "autoscale", "deployment", "busy", "-n", ns, "--cpu-percent=50", "--min=1", "--max=5"
    )

    # a new pod's CPU counts once it has been ready for a metric window (15 s) and the HPA
    # resyncs every 15 s: 40 s of the cluster's time, run at once, then the clock as before
    async with Client(kubectl.cluster.server, timeout=10.0) as client:
        await client.advance_clock(40)
        await client.set_clock_rate(1)

    def scaled() -> bool:
        return bool(kubectl.json("get", "deploy", "busy", "-n", ns)["spec"]["replicas"] >= 2)

    await eventually(scaled, timeout=10, interval=0.2)
    hpa = kubectl.json("get", "hpa", "busy", "-n", ns)
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["status"]["desiredReplicas"] >= 2
    row = kubectl.run("get", "hpa", "busy", "-n", ns).stdout.split("\n")
    assert row[0].split() == [
        "NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE",
    ]  # fmt: skip
    assert "cpu: 90%/50%" in row[1]


async def test_s_ns_def_5_kubectl_create_token_prints_a_jwt(kubectl: Kubectl) -> None:
    token = kubectl.run("create", "token", "default", "-n", "default").stdout.strip()
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert claims["sub"] == "system:serviceaccount:default:default"
    assert claims["exp"] - claims["iat"] == 3600
    assert signature
