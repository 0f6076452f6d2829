"""kube-apiserver's --runtime-config with the real kubectl (S-API-RC-5..7): three 1.37 apiservers
on one etcd with GenericWorkload, without a runtime config, with scheduling.k8s.io/v1beta1=true,
and with api/all=true (and CompositePodGroup); and one that refuses a bad key at start-up."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kemu.machinery import kubeconfig
from kemu.testing.cluster import Cluster, Component
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]

VERSION = "1.37"
WORKLOAD = {"GenericWorkload": True}
COMPOSITE = {**WORKLOAD, "TopologyAwareWorkloadScheduling": True, "CompositePodGroup": True}


@dataclass(frozen=True)
class Apiservers:
    gate_only: Kubectl
    beta: Kubectl
    everything: Kubectl


def _kubectl(cluster: Cluster, apiserver: Component, name: str) -> Kubectl:
    """kubectl with a kubeconfig (and caches) of its own for `apiserver`'s REST edge."""
    rest_port = apiserver.argv[apiserver.argv.index("--rest-port") + 1]
    root = cluster.root / name
    root.mkdir()
    kubeconfig.write(root / "kubeconfig", f"http://127.0.0.1:{rest_port}")
    kubectl = Kubectl(cluster)
    kubectl.env = {
        **kubectl.env,
        "KUBECONFIG": str(root / "kubeconfig"),
        "KUBECACHEDIR": str(root / "kube-cache"),
    }
    return kubectl


@pytest.fixture(scope="module")
def apiservers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Apiservers]:
    with Cluster(tmp_path_factory.mktemp("runtime-config")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        started = {
            name: c.start_apiserver(
                name=name,
                rest=True,
                emulated_version=VERSION,
                feature_gates=gates,
                runtime_config=runtime,
                wait=False,
            )
            for name, gates, runtime in (
                ("gate-only", WORKLOAD, None),
                ("beta", WORKLOAD, {"scheduling.k8s.io/v1beta1": "true"}),
                ("everything", COMPOSITE, {"api/all": "true"}),
            )
        }
        for name in started:
            c.wait_ready(name)
        yield Apiservers(*(_kubectl(c, proc, name) for name, proc in started.items()))


def _resources(kubectl: Kubectl) -> dict[str, str]:
    """`kubectl api-resources` of scheduling.k8s.io: resource name -> APIVERSION."""
    lines = kubectl.run("api-resources", "--api-group", "scheduling.k8s.io").stdout.splitlines()
    rows = [ln.split() for ln in lines[1:]]
    return {row[0]: next(c for c in row if c.startswith("scheduling.k8s.io/")) for row in rows}


def test_s_api_rc_5_a_gate_alone_does_not_serve_a_beta_api(apiservers: Apiservers) -> None:
    """pkg/controlplane/instance.go: scheduling.k8s.io/v1beta1 is in the beta group versions
    disabled by default (KEP-3136), so GenericWorkload alone serves no Workload or PodGroup:
    discovery lacks them and kubectl cannot resolve the resource type."""
    kubectl = apiservers.gate_only
    assert _resources(kubectl) == {"priorityclasses": "scheduling.k8s.io/v1"}
    got = kubectl.run("get", "podgroups", check=False)
    assert got.returncode != 0
    assert 'the server doesn\'t have a resource type "podgroups"' in got.stderr, got.stderr


def test_s_api_rc_6_the_runtime_config_serves_the_beta_version(apiservers: Apiservers) -> None:
    """--runtime-config=scheduling.k8s.io/v1beta1=true with the gate: Workload and PodGroup are
    served as v1beta1 (v1alpha3 stays off: alpha)."""
    kubectl = apiservers.beta
    assert _resources(kubectl) == {
        "priorityclasses": "scheduling.k8s.io/v1",
        "podgroups": "scheduling.k8s.io/v1beta1",
        "workloads": "scheduling.k8s.io/v1beta1",
    }
    got = kubectl.run("get", "podgroups", "-A")
    assert "No resources found" in got.stderr, got.stderr
    alpha = kubectl.run("get", "podgroups.v1alpha3.scheduling.k8s.io", check=False)
    assert alpha.returncode != 0


def test_s_api_rc_7_api_all_serves_every_version_the_gates_allow(apiservers: Apiservers) -> None:
    """api/all=true: v1alpha3 too, and with CompositePodGroup its kind; the preferred version
    of Workload and PodGroup stays v1beta1."""
    kubectl = apiservers.everything
    assert _resources(kubectl) == {
        "priorityclasses": "scheduling.k8s.io/v1",
        "podgroups": "scheduling.k8s.io/v1beta1",
        "workloads": "scheduling.k8s.io/v1beta1",
        "compositepodgroups": "scheduling.k8s.io/v1alpha3",
    }
    kubectl.run("get", "podgroups.v1alpha3.scheduling.k8s.io", "-A")
    kubectl.run("get", "compositepodgroups", "-A")


def test_s_api_rc_4_a_bad_key_stops_the_apiserver_naming_it(tmp_path: Path) -> None:
    """api_enablement.go Validate: an unknown group is a start-up error (exit non-zero) that
    names it, before anything is served."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "apiserver",
            "--etcd-servers",
            "http://127.0.0.1:1",
            "--metrics-port",
            "0",
            "--runtime-config",
            "scheduling.k8s.io/v1beta1=true,example.com/v1=true",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert proc.returncode != 0
    assert "--runtime-config: unknown api groups example.com" in proc.stderr, proc.stderr
