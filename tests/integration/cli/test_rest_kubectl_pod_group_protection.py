"""A PodGroup's deletion protection as each version splits it between the apiserver and the
controller-manager, with the real kubectl on real processes (etcd, an apiserver with its REST
edge, the controller-manager's podgroup-protection-controller):

- S-PGAPI-10 (1.37, GenericWorkload on): the PodGroupProtection admission plugin stamps
  scheduling.k8s.io/podgroup-protection on a new PodGroup (in the create's response), and
  refuses a pod whose spec.schedulingGroup.podGroupName names a PodGroup being deleted, with
  upstream's Forbidden message (plugin/pkg/admission/scheduling/podgroupprotection).
- S-PGAPI-11 (1.37): the controller only removes the finalizer: the deleted PodGroup stays
  while its pending member exists and goes with it (pkg/controller/scheduling/
  podgroupprotection processPodGroup).
- S-PGAPI-12 (1.36, GenericWorkload on): no such plugin: a new PodGroup has no finalizer of
  the apiserver's, and a pod naming a PodGroup being deleted (held by a finalizer of the
  user's) is created.

Skipped when kubectl is not on PATH (it is on every machine of kemu's CI).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kemu.machinery.podgroups import POD_GROUP_PROTECTION_FINALIZER
from kemu.testing.cluster import Cluster
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]

GATES = {"GenericWorkload": True}
HOLD = "example.com/hold"


@contextmanager
def _kubectl(root: Path, version: str, *, controllers: bool) -> Iterator[Kubectl]:
    with Cluster(root) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(
            rest=True,
            emulated_version=version,
            feature_gates=GATES,
            runtime_config={"api/all": "true"},
        )
        if controllers:
            c.start_controllermanager(
                emulated_version=version,
                feature_gates=GATES,
                extra_args=["--controllers", "podgroup-protection-controller"],
            )
        c.write_kubeconfig()
        yield Kubectl(c)


def _until(check: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.2)


def group(api_version: str, ns: str, finalizers: str = "[]") -> str:
    return f"""
apiVersion: scheduling.k8s.io/{api_version}
kind: PodGroup
metadata: {{name: gang, namespace: {ns}, finalizers: {finalizers}}}
spec:
  schedulingPolicy: {{gang: {{minCount: 2}}}}
"""


def member(name: str, ns: str) -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {ns}}}
spec:
  schedulingGroup: {{podGroupName: gang}}
  containers: [{{name: c, image: registry.k8s.io/pause:3.10}}]
"""


def _created(kubectl: Kubectl, manifest: str) -> dict[str, object]:
    """`kubectl create -o json`: the create's response."""
    out = kubectl.run("create", "-f", "-", "-o", "json", stdin=manifest).stdout
    created = json.loads(out)
    assert isinstance(created, dict)
    return created


def test_s_pgapi_10_and_11_protection_at_1_37(tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("pgp-137")
    with _kubectl(root, "1.37", controllers=True) as kubectl:
        ns = kubectl.namespace("pgp")
        created = _created(kubectl, group("v1beta1", ns))
        assert created["metadata"]["finalizers"] == [POD_GROUP_PROTECTION_FINALIZER]  # type: ignore[index]
        kubectl.run("create", "-f", "-", stdin=member("m-0", ns))
        kubectl.run("delete", "podgroup", "gang", "-n", ns, "--wait=false")
        time.sleep(1)  # (a release would be quick: the controller acts on the delete's event)
        kept = kubectl.json("get", "podgroup", "gang", "-n", ns)
        assert kept["metadata"]["deletionTimestamp"]
        assert kept["metadata"]["finalizers"] == [POD_GROUP_PROTECTION_FINALIZER]

        refused = kubectl.run("create", "-f", "-", stdin=member("m-1", ns), check=False)
        assert refused.returncode != 0
        assert (
            'pods "m-1" is forbidden: cannot create Pod referencing PodGroup "gang" because it '
            "is being deleted" in refused.stderr
        ), refused.stderr
        assert "Forbidden" in refused.stderr

        kubectl.run("delete", "pod", "m-0", "-n", ns)  # pending: deleted at once

        def released() -> bool:
            listed = kubectl.json("get", "podgroups", "-n", ns)
            return not listed["items"]

        _until(released, "the controller to release the PodGroup once its member is gone")


def test_s_pgapi_12_no_admission_plugin_at_1_36(tmp_path_factory: pytest.TempPathFactory) -> None:
    with _kubectl(tmp_path_factory.mktemp("pgp-136"), "1.36", controllers=False) as kubectl:
        ns = kubectl.namespace("pgp")
        created = _created(kubectl, group("v1alpha2", ns, finalizers=f"[{HOLD}]"))
        assert created["metadata"]["finalizers"] == [HOLD]  # type: ignore[index]
        kubectl.run("delete", "podgroup", "gang", "-n", ns, "--wait=false")
        assert kubectl.json("get", "podgroup", "gang", "-n", ns)["metadata"]["deletionTimestamp"]
        pod = _created(kubectl, member("m-0", ns))
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": "gang"}  # type: ignore[index]
