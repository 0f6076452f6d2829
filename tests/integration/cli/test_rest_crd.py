# mypy: disable-error-code="union-attr,no-untyped-call,index,arg-type"
"""CustomResourceDefinitions through kubectl (1.32) and the official Python client's
CustomObjectsApi against a real etcd and apiserver (issue #57 item 3): S-CRD-*."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config, watch
from kubernetes.client.exceptions import ApiException

from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually_sync
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]

GROUP = "stable.example.com"
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"crontabs.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {
            "plural": "crontabs",
            "singular": "crontab",
            "kind": "CronTab",
            "shortNames": ["ct"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "x-kubernetes-validations": [
                                    {
                                        "rule": "self.image != 'forbidden'",
                                        "messageExpression": "'image ' + self.image + ' is not allowed'",
                                    }
                                ],
                                "properties": {
                                    "cronSpec": {"type": "string"},
                                    "image": {"type": "string"},
                                    "replicas": {"type": "integer", "maximum": 10, "default": 1},
                                },
                                "required": ["cronSpec"],
                            },
                            "status": {
                                "type": "object",
                                "properties": {"replicas": {"type": "integer"}},
                            },
                        },
                    }
                },
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                    },
                },
                "additionalPrinterColumns": [
                    {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                ],
            }
        ],
    },
}
# a second served version, conversion strategy None: the same schema, apiVersion rewritten
V1BETA1: dict[str, Any] = {
    **CRD["spec"]["versions"][0],
    "name": "v1beta1",
    "storage": False,
    "additionalPrinterColumns": [],
}
CRD["spec"]["versions"].append(V1BETA1)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("crd")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(rest=True)
        c.start_controllermanager(extra_args=["--controllers", "namespace"])
        c.write_kubeconfig()
        yield c


@pytest.fixture(scope="module")
def kubectl(cluster: Cluster) -> Kubectl:
    k = Kubectl(cluster)
    k.run("apply", "-f", "-", stdin=json.dumps(CRD))
    k.run("wait", "--for=condition=Established", f"crd/crontabs.{GROUP}", "--timeout=10s")
    return k


@pytest.fixture(scope="module")
def objects(cluster: Cluster) -> k8s.CustomObjectsApi:
    return k8s.CustomObjectsApi(config.new_client_from_config(str(cluster.root / "kubeconfig")))


def _crontab(name: str, **spec: Any) -> str:
    return json.dumps(
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "CronTab",
            "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"cronSpec": "* * * * */5", "image": "img", **spec},
        }
    )


def test_s_crd_1_established_and_discovered(kubectl: Kubectl) -> None:
    crd = kubectl.json("get", "crd", f"crontabs.{GROUP}")
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert crd["status"]["storedVersions"] == ["v1"]
    assert "customresourcecleanup.apiextensions.k8s.io" in crd["metadata"]["finalizers"]
    names = kubectl.run("api-resources", "-o", "name").stdout.split()
    assert f"crontabs.{GROUP}" in names


def test_s_crd_2_create_get_printer_columns_pruned_defaulted(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("crd")
    body = json.loads(_crontab("a"))
    body["spec"]["unknown"] = "dropped"
    kubectl.run("apply", "-n", ns, "-f", "-", stdin=json.dumps(body))
    got = kubectl.json("get", "-n", ns, "crontab", "a")
    assert got["spec"] == {"cronSpec": "* * * * */5", "image": "img", "replicas": 1}
    table = kubectl.run("get", "-n", ns, "ct").stdout.splitlines()
    assert table[0].split() == ["NAME", "SPEC", "REPLICAS", "AGE"]
    assert table[1].split()[:2] == ["a", "*"]


def test_s_crd_11_explain(kubectl: Kubectl) -> None:
    out = kubectl.run("explain", "crontabs.spec").stdout
    assert "KIND:       CronTab" in out and "cronSpec" in out and "replicas" in out, out


def test_s_crd_3_invalid_refused_naming_the_field(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("crd")
    out = kubectl.run("apply", "-n", ns, "-f", "-", stdin=_crontab("big", replicas=20), check=False)
    assert out.returncode != 0
    assert "spec.replicas: Invalid value: 20: must be less than or equal to 10" in out.stderr


def test_s_crd_4_python_custom_objects_api(kubectl: Kubectl, objects: k8s.CustomObjectsApi) -> None:
    ns = kubectl.namespace("crd")
    for name in ("p", "q"):
        objects.create_namespaced_custom_object(
            GROUP, "v1", ns, "crontabs", json.loads(_crontab(name))
        )
    listed = objects.list_namespaced_custom_object(
        GROUP, "v1", ns, "crontabs", label_selector="app=p"
    )
    assert [i["metadata"]["name"] for i in listed["items"]] == ["p"]
    by_field = objects.list_cluster_custom_object(
        GROUP, "v1", "crontabs", field_selector=f"metadata.namespace={ns},metadata.name=q"
    )
    assert [i["metadata"]["name"] for i in by_field["items"]] == ["q"]
    patched = objects.patch_namespaced_custom_object(
        GROUP, "v1", ns, "crontabs", "p", {"spec": {"image": "new"}}
    )
    assert patched["spec"]["image"] == "new" and patched["metadata"]["generation"] == 2
    # the status subresource: the main resource keeps the stored status
    status = objects.patch_namespaced_custom_object_status(
        GROUP, "v1", ns, "crontabs", "p", {"status": {"replicas": 3}}
    )
    assert status["status"] == {"replicas": 3} and status["metadata"]["generation"] == 2
    # no strategic merge patch for custom resources (415, as upstream)
    out = kubectl.run(
        "patch",
        "-n",
        ns,
        "crontab",
        "p",
        "--type",
        "strategic",
        "-p",
        '{"spec":{"image":"x"}}',
        check=False,
    )
    assert out.returncode != 0 and "is not supported by" in out.stderr, out.stderr
    objects.delete_namespaced_custom_object(GROUP, "v1", ns, "crontabs", "q")
    with pytest.raises(ApiException) as gone:
        objects.get_namespaced_custom_object(GROUP, "v1", ns, "crontabs", "q")
    assert gone.value.status == 404


def test_s_crd_10_cel_rule_scale_and_versions(
    kubectl: Kubectl, objects: k8s.CustomObjectsApi
) -> None:
    ns = kubectl.namespace("crd")
    out = kubectl.run(
        "apply", "-n", ns, "-f", "-", stdin=_crontab("c", image="forbidden"), check=False
    )
    assert 'spec: Invalid value: "object": image forbidden is not allowed' in out.stderr, out.stderr
    kubectl.run("apply", "-n", ns, "-f", "-", stdin=_crontab("s"))
    kubectl.run("scale", "-n", ns, "crontab/s", "--replicas=4")
    assert kubectl.json("get", "-n", ns, "crontab", "s")["spec"]["replicas"] == 4
    beta = objects.get_namespaced_custom_object(GROUP, "v1beta1", ns, "crontabs", "s")
    assert beta["apiVersion"] == f"{GROUP}/v1beta1" and beta["spec"]["replicas"] == 4
    rv = beta["metadata"]["resourceVersion"]
    objects.patch_namespaced_custom_object(
        GROUP, "v1", ns, "crontabs", "s", {"spec": {"image": "b"}}
    )
    stream = watch.Watch().stream(
        objects.list_namespaced_custom_object, GROUP, "v1", ns, "crontabs",
        resource_version=rv, timeout_seconds=1,
    )  # fmt: skip
    events = [(e["type"], e["object"]["spec"]["image"]) for e in stream]
    assert events == [("MODIFIED", "b")]


def test_s_crd_12_namespace_deletion_deletes_custom_resources(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("crd")
    kubectl.run("apply", "-n", ns, "-f", "-", stdin=_crontab("n"))
    kubectl.run("delete", "namespace", ns, "--timeout=10s")
    # (the namespace goes only once its content has: the custom resource went first)
    listed = kubectl.json("get", "crontabs", "-A")["items"]
    assert ns not in {i["metadata"]["namespace"] for i in listed}


def test_s_crd_9_delete_crd_deletes_its_resources(kubectl: Kubectl) -> None:
    ns = kubectl.namespace("crd")
    kubectl.run("apply", "-n", ns, "-f", "-", stdin=_crontab("last"))
    kubectl.run("delete", "crd", f"crontabs.{GROUP}", "--timeout=10s")

    def gone() -> bool:
        names = kubectl.run("api-resources", "-o", "name").stdout.split()
        return f"crontabs.{GROUP}" not in names

    eventually_sync(gone, timeout=10)
    assert kubectl.run("get", "crd", "-o", "name").stdout.strip() == ""
