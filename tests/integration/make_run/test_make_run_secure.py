"""`make run` is secured as kind's (issue #60's "done when"): through `.kemu/kubeconfig` the real
kubectl is the admin (kubernetes-admin in kubeadm:cluster-admins, bound by make run's add-ons);
a ServiceAccount's token is refused until a RoleBinding grants it; a kubelet cannot write
another node; the controller-manager's controllers act as their ServiceAccounts; and no
component's log shows a refusal once the add-ons are applied (docs/security.md, "What `make
run` runs")."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from typing import Final

import pytest
from kubernetes import client as k8s
from kubernetes import config

from kemu.makerun.__main__ import PKI_DIR, STATE_DIR
from kemu.testing import eventually_sync
from tests.integration.cli.kubectl_env import KUBECTL
from tests.integration.make_run.make_run_env import MakeRun, make_run_group, procfile_running

pytestmark = [
    pytest.mark.integration,
    pytest.mark.long,
    make_run_group("secure"),
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]

APPLIED: Final = "addons: hack/addons applied"
REFUSED: Final = re.compile(r"forbidden|cannot (get|list|watch|create|update|patch|delete)", re.I)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeRun]:
    with procfile_running(tmp_path_factory.mktemp("make-run-secure"), "real") as started:
        eventually_sync(started.static_nodes_ready, timeout=90, interval=1)
        eventually_sync(lambda: APPLIED in started.log(), timeout=60, interval=0.5)
        yield started


def kubectl(
    run: MakeRun, *args: str, kubeconfig: str = "", token: str = ""
) -> subprocess.CompletedProcess[str]:
    """kubectl in the user's shell after `source .kemu/env` (another kubeconfig, or a token
    instead of the admin's certificate, where given)."""
    assert KUBECTL is not None
    env = {**run.env(), "KUBECACHEDIR": str(run.root / "kube-cache")}
    if kubeconfig:
        env["KUBECONFIG"] = kubeconfig
    argv = [KUBECTL, *args]
    if token:
        server = json.loads((run.root / STATE_DIR / "kubeconfig").read_text())["clusters"][0]
        ca = run.root / STATE_DIR / PKI_DIR / "ca.crt"
        argv = [KUBECTL, "--kubeconfig", "/dev/null", "--server", server["cluster"]["server"]]
        argv += ["--certificate-authority", str(ca), "--token", token, *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_admin_is_kubeadms_and_may_do_anything(run: MakeRun) -> None:
    assert ok(kubectl(run, "auth", "can-i", "*", "*")).strip() == "yes"
    whoami = json.loads(ok(kubectl(run, "auth", "whoami", "-o", "json")))
    assert whoami["status"]["userInfo"]["username"] == "kubernetes-admin"
    assert "kubeadm:cluster-admins" in whoami["status"]["userInfo"]["groups"]
    assert "authorization modes: Node,RBAC" in run.log()


def test_the_official_python_client_is_the_admin_through_the_kubeconfig(run: MakeRun) -> None:
    """The `kubernetes` package with `.kemu/kubeconfig` (its CA data and client certificate)
    lists the nodes and reads kube-system's secrets, which only an admin may."""
    api = k8s.CoreV1Api(config.new_client_from_config(run.env()["KUBECONFIG"]))  # type: ignore[no-untyped-call]
    names = {n.metadata.name for n in api.list_node().items if n.metadata}
    assert {"node-a", "node-b", "node-c"} <= names, names
    api.list_namespaced_secret("kube-system")


def test_a_service_accounts_token_is_refused_until_a_role_binding_grants_it(run: MakeRun) -> None:
    ok(kubectl(run, "create", "serviceaccount", "reader"))
    token = ok(kubectl(run, "create", "token", "reader")).strip()
    refused = kubectl(run, "get", "pods", token=token)
    assert refused.returncode != 0
    assert (
        'User "system:serviceaccount:default:reader" cannot list resource "pods"' in refused.stderr
    )
    ok(kubectl(run, "create", "rolebinding", "reader", "--clusterrole", "view",
               "--serviceaccount", "default:reader"))  # fmt: skip

    def allowed() -> bool:
        done = kubectl(run, "get", "pods", token=token)
        assert done.returncode == 0, done.stderr
        return True

    eventually_sync(allowed, timeout=10)


def test_a_kubelet_cannot_write_another_node(run: MakeRun) -> None:
    node_a = str(run.root / STATE_DIR / PKI_DIR / "kubelet-node-a.kubeconfig")
    refused = kubectl(run, "label", "node", "node-b", "stolen=yes", kubeconfig=node_a)
    assert refused.returncode != 0
    assert 'User "system:node:node-a"' in refused.stderr, refused.stderr
    assert "node-b" in refused.stderr
    ok(kubectl(run, "get", "node", "node-a", kubeconfig=node_a))  # (its own)


def test_the_controllers_act_as_their_service_accounts(run: MakeRun) -> None:
    process = kubectl(run, "auth", "can-i", "create", "pods", "--as",
                      "system:kube-controller-manager")  # fmt: skip
    assert (process.returncode, process.stdout.strip()) == (1, "no"), process.stderr
    ok(kubectl(run, "create", "deployment", "web", "--image", "nginx", "--replicas", "3"))

    def running() -> bool:
        pods = json.loads(ok(kubectl(run, "get", "pods", "-l", "app=web", "-o", "json")))
        phases = [p["status"].get("phase") for p in pods["items"]]
        assert phases == ["Running"] * 3, phases
        return True

    eventually_sync(running, timeout=60, interval=1)
    accounts = ok(kubectl(run, "get", "serviceaccounts", "-n", "kube-system", "-o", "name"))
    assert "serviceaccount/replicaset-controller" in accounts.split()
    assert "serviceaccount/deployment-controller" in accounts.split()


def test_every_component_is_listed_by_kemuctl_version(run: MakeRun) -> None:
    """Each keeps its identity (the kubelets on their node Leases, the others on kube-system
    leases their roles allow; the cloud keeps none)."""

    def listed() -> bool:
        out = ok(run.kemuctl("version"))
        for component in ("kube-scheduler", "kube-controller-manager", "cluster-autoscaler",
                          "kubelet (node-a)"):  # fmt: skip
            assert f"  {component}" in out, (component, out[-2000:])
        return True

    eventually_sync(listed, timeout=30, interval=1)


def test_no_component_is_refused_once_the_addons_are_applied(run: MakeRun) -> None:
    """(after the other tests: their kubectl refusals are the apiserver's answers to kubectl,
    not lines of a component's log)"""
    log = run.log()
    after = log[log.index(APPLIED) :]
    refusals = [
        line
        for line in after.splitlines()
        if REFUSED.search(line) and not line.split("|", 1)[0].strip().startswith("apiserver")
    ]
    assert not refusals, "\n".join(refusals[:20])
