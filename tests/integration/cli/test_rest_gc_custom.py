"""Garbage collection through custom resources, with kubectl 1.32 against real processes
(issue #57): the collector monitors the resources of every CRD established after it started
(upstream pkg/controller/garbagecollector/graph_builder.go, syncMonitors) and follows
ownerReferences to and from custom resources: S-GC-CR-*; the resourcequota controller counts
them too (S-API-QUOTA-CR-1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually_sync
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]

GROUP = "gc.example.com"
HOLD = "example.com/hold"


def _crd(kind: str, plural: str, scope: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": scope,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    with Cluster(tmp_path_factory.mktemp("gc-custom")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(rest=True)
        # started before any CRD exists: the CRDs below reach it without a restart
        c.start_controllermanager(
            extra_args=["--controllers", "garbagecollector,resourcequota-controller"]
        )
        c.write_kubeconfig()
        k = Kubectl(c)
        crds = [
            _crd("Widget", "widgets", "Namespaced"),
            _crd("Gadget", "gadgets", "Namespaced"),
            _crd("ClusterThing", "clusterthings", "Cluster"),
        ]
        k.run(
            "apply",
            "-f",
            "-",
            stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": crds}),
        )
        names = [f"crd/{crd['metadata']['name']}" for crd in crds]
        k.run("wait", "--for=condition=Established", *names, "--timeout=10s")
        yield k


def _ref(owner: dict[str, Any], *, block: bool = False) -> dict[str, Any]:
    ref = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }
    if block:
        ref["blockOwnerDeletion"] = True
    return ref


def _apply(k: Kubectl, ns: str, obj: dict[str, Any]) -> dict[str, Any]:
    if ns:
        obj["metadata"]["namespace"] = ns
    out = k.run("create", "-f", "-", "-o", "json", stdin=json.dumps(obj)).stdout
    created: dict[str, Any] = json.loads(out)
    return created


def _custom(kind: str, name: str, *owners: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owners:
        meta["ownerReferences"] = list(owners)
    return {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": meta, "spec": {"a": 1}}


def _configmap(name: str, *owners: dict[str, Any], finalizers: tuple[str, ...] = ()) -> Any:
    meta: dict[str, Any] = {"name": name, "ownerReferences": list(owners)}
    if finalizers:
        meta["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def _gone(k: Kubectl, ns: str, *what: str) -> bool:
    for w in what:
        args = ("get", w, "--ignore-not-found", "-o", "name")
        if k.run(*args, *(("-n", ns) if ns else ())).stdout.strip():
            return False
    return True


def test_s_gc_cr_1_background_deletes_dependents_of_a_custom_resource(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("gc-cr")
    widget = _apply(kubectl, ns, _custom("Widget", "w1"))
    _apply(kubectl, ns, _configmap("cm1", _ref(widget)))
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p1", "ownerReferences": [_ref(widget)]},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    _apply(kubectl, ns, pod)
    kubectl.run("delete", f"widgets.{GROUP}", "w1", "-n", ns)  # background (kubectl's default)
    eventually_sync(lambda: _gone(kubectl, ns, "configmap/cm1", "pod/p1"), timeout=10)


def test_s_gc_cr_2_foreground_waits_for_blocking_dependents(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("gc-cr")
    widget = _apply(kubectl, ns, _custom("Widget", "w2"))
    _apply(kubectl, ns, _configmap("held", _ref(widget, block=True), finalizers=(HOLD,)))
    kubectl.run(
        "delete", f"widgets.{GROUP}", "w2", "-n", ns, "--cascade=foreground", "--wait=false"
    )

    def waiting() -> bool:
        w = kubectl.json("get", f"widgets.{GROUP}", "w2", "-n", ns)
        cm = kubectl.json("get", "configmap", "held", "-n", ns)
        return (
            "foregroundDeletion" in w["metadata"].get("finalizers", [])
            and "deletionTimestamp" in cm["metadata"]
        )

    eventually_sync(waiting, timeout=10)  # the dependent is being deleted; the owner waits
    assert not _gone(kubectl, ns, f"widgets.{GROUP}/w2")
    kubectl.run("patch", "configmap", "held", "-n", ns, "--type=merge", "-p",
                '{"metadata":{"finalizers":null}}')  # fmt: skip
    eventually_sync(lambda: _gone(kubectl, ns, "configmap/held", f"widgets.{GROUP}/w2"), timeout=10)


def test_s_gc_cr_3_orphan_removes_references(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("gc-cr")
    widget = _apply(kubectl, ns, _custom("Widget", "w3"))
    _apply(kubectl, ns, _configmap("kept", _ref(widget)))
    kubectl.run("delete", f"widgets.{GROUP}", "w3", "-n", ns, "--cascade=orphan")

    def orphaned() -> bool:
        cm = kubectl.json("get", "configmap", "kept", "-n", ns)
        return not cm["metadata"].get("ownerReferences") and _gone(
            kubectl, ns, f"widgets.{GROUP}/w3"
        )

    eventually_sync(orphaned, timeout=10)


def test_s_gc_cr_4_custom_resources_owned_by_a_deployment_and_a_custom_resource(
    kubectl: Kubectl,
) -> None:
    """A chain Deployment -> Widget -> Gadget -> ConfigMap goes with the Deployment; a
    namespaced Widget owned by a cluster-scoped custom resource goes with it."""
    ns = kubectl.namespace("gc-cr")
    deploy = _apply(kubectl, ns, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        },
    })  # fmt: skip
    widget = _apply(kubectl, ns, _custom("Widget", "w4", _ref(deploy)))
    gadget = _apply(kubectl, ns, _custom("Gadget", "g4", _ref(widget)))
    _apply(kubectl, ns, _configmap("leaf", _ref(gadget)))
    thing = _apply(kubectl, "", _custom("ClusterThing", f"t-{ns}"))
    _apply(kubectl, ns, _custom("Widget", "w5", _ref(thing)))

    kubectl.run("delete", "deployment", "d", "-n", ns)
    kubectl.run("delete", f"clusterthings.{GROUP}", f"t-{ns}")
    eventually_sync(
        lambda: _gone(
            kubectl,
            ns,
            f"widgets.{GROUP}/w4",
            f"gadgets.{GROUP}/g4",
            "configmap/leaf",
            f"widgets.{GROUP}/w5",
        ),
        timeout=15,
    )


def test_s_gc_cr_5_deleting_a_crd_collects_the_dependents_of_its_resources(
    kubectl: Kubectl,
) -> None:
    """A CRD created now (its monitor starts), one of its resources owning a ConfigMap; the
    CRD deleted: its resources go (the CRD finalizer), then their dependents (the
    collector), and the CRD's monitor stops."""
    ns = kubectl.namespace("gc-cr")
    kubectl.run("apply", "-f", "-", stdin=json.dumps(_crd("Doodad", "doodads", "Namespaced")))
    kubectl.run("wait", "--for=condition=Established", f"crd/doodads.{GROUP}", "--timeout=10s")
    doodad = _apply(kubectl, ns, _custom("Doodad", "d1"))
    _apply(kubectl, ns, _configmap("of-doodad", _ref(doodad)))
    kubectl.run("delete", "crd", f"doodads.{GROUP}", "--wait=false")
    eventually_sync(lambda: _gone(kubectl, ns, "configmap/of-doodad"), timeout=15)


def test_s_api_quota_cr_1_object_count_of_a_custom_resource(kubectl: Kubectl) -> None:
    """A quota on count/widgets.<group>: the admission refuses the second widget with
    upstream's message; the controller (watching the CRD's resources) gives the count back
    when one is deleted."""
    ns = kubectl.namespace("quota-cr")
    resource = f"count/widgets.{GROUP}"
    kubectl.run("create", "quota", "q", "-n", ns, f"--hard={resource}=1")
    eventually_sync(
        lambda: kubectl.json("get", "quota", "q", "-n", ns).get("status", {}).get("used"),
        timeout=10,
    )
    _apply(kubectl, ns, _custom("Widget", "a"))
    proc = kubectl.run("create", "-n", ns, "-f", "-", check=False,
                       stdin=json.dumps(_custom("Widget", "b")))  # fmt: skip
    assert proc.returncode != 0
    assert (
        f'widgets.{GROUP} "b" is forbidden: exceeded quota: q, requested: {resource}=1, '
        f"used: {resource}=1, limited: {resource}=1"
    ) in proc.stderr
    kubectl.run("delete", f"widgets.{GROUP}", "a", "-n", ns)
    eventually_sync(
        lambda: kubectl.json("get", "quota", "q", "-n", ns)["status"]["used"][resource] == "0",
        timeout=10,
    )
    _apply(kubectl, ns, _custom("Widget", "b"))
