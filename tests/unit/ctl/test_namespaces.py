"""kemuctl for Namespaces, Services and ConfigMaps: kubectl's columns, -n/-A, `create
namespace`, describe and delete."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery import convert, kinds
from kemu.machinery.namespaces import new_namespace, prepare_for_create

from .helpers import ctl, fake

pytestmark = pytest.mark.anyio


def _namespace(name: str) -> types_pb2.Namespace:
    ns = new_namespace(name)
    prepare_for_create(ns)
    return ns


def _service(name: str, ns: str, spec: dict[str, object]) -> types_pb2.Service:
    svc = convert.from_dict(
        kinds.BY_KIND["Service"], {"metadata": {"name": name, "namespace": ns}, "spec": spec}
    )
    assert isinstance(svc, types_pb2.Service)
    return svc


def _config_map(name: str, ns: str, **body: object) -> types_pb2.ConfigMap:
    cm = convert.from_dict(
        kinds.BY_KIND["ConfigMap"], {"metadata": {"name": name, "namespace": ns}, **body}
    )
    assert isinstance(cm, types_pb2.ConfigMap)
    return cm


async def test_get_namespaces_prints_name_status_age_and_ignores_the_namespace_flag() -> None:
    terminating = _namespace("old")
    terminating.status.phase = "Terminating"
    client = fake(_namespace("default"), terminating)
    result = await ctl(client, "get", "ns", "-n", "elsewhere")
    assert result.rc == 0, result.err
    assert result.out.splitlines() == [
        "NAME      STATUS        AGE",
        "default   Active        0s",
        "old       Terminating   0s",
    ]


async def test_get_services_prints_kubectls_columns_per_type() -> None:
    client = fake(
        _service(
            "web",
            "default",
            {
                "type": "ClusterIP",
                "clusterIP": "10.96.0.10",
                "selector": {"app": "web"},
                "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
            },
        ),
        _service(
            "np",
            "default",
            {
                "type": "NodePort",
                "clusterIP": "10.96.0.11",
                "ports": [{"port": 443, "protocol": "TCP", "nodePort": 30443}],
            },
        ),
        _service("lb", "default", {"type": "LoadBalancer", "clusterIP": "10.96.0.12"}),
        _service("ext", "other", {"type": "ExternalName", "externalName": "db.example.com"}),
    )
    result = await ctl(client, "get", "svc")
    assert result.out.splitlines() == [
        "NAME   TYPE           CLUSTER-IP   EXTERNAL-IP   PORT(S)         AGE",
        "lb     LoadBalancer   10.96.0.12   <pending>     <none>          0s",
        "np     NodePort       10.96.0.11   <none>        443:30443/TCP   0s",
        "web    ClusterIP      10.96.0.10   <none>        80/TCP,53/UDP   0s",
    ]
    wide = await ctl(client, "get", "services", "-o", "wide", "-A")
    lines = wide.out.splitlines()
    assert lines[0].split() == [
        "NAMESPACE", "NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR",
    ]  # fmt: skip
    assert lines[-1].split() == [
        "other", "ext", "ExternalName", "<none>", "db.example.com", "<none>", "0s", "<none>",
    ]  # fmt: skip
    assert lines[-2].split()[-1] == "app=web"


async def test_get_config_maps_counts_data_and_binary_data() -> None:
    client = fake(
        _config_map("cfg", "team", data={"a": "1", "b": "2"}, binaryData={"c": "aGk="}),
        _config_map("empty", "team"),
    )
    result = await ctl(client, "get", "cm", "-n", "team")
    assert result.out.splitlines() == [
        "NAME    DATA   AGE",
        "cfg     3      0s",
        "empty   0      0s",
    ]
    as_yaml = await ctl(client, "get", "configmap", "cfg", "-n", "team", "-o", "yaml")
    assert "binaryData:\n  c: aGk=" in as_yaml.out


async def test_create_namespace_and_its_errors() -> None:
    client = fake()
    done = await ctl(client, "create", "namespace", "team-a")
    assert (done.rc, done.out.strip()) == (0, "namespace/team-a created")
    assert (await client.get(types_pb2.Namespace, "team-a")).metadata.name == "team-a"
    again = await ctl(client, "create", "ns", "team-a")
    assert again.rc == 1 and again.err.strip() == 'error: namespaces "team-a" already exists'
    for argv, message in (
        (("create", "namespace"), "exactly one NAME is required"),
        (("create", "deployment", "x"), 'unknown subcommand "deployment"'),
        (("create",), "must specify one of -f"),
    ):
        bad = await ctl(client, *argv)
        assert bad.rc == 1 and message in bad.err and len(bad.err.splitlines()) == 1


async def test_describe_and_delete_a_namespace() -> None:
    client = fake(_namespace("team-a"))
    described = await ctl(client, "describe", "namespace", "team-a")
    assert described.rc == 0, described.err
    assert "team-a" in described.out and "Active" in described.out
    deleted = await ctl(client, "delete", "ns", "team-a")
    assert deleted.rc == 0, deleted.err
    assert deleted.out.strip() == 'namespace "team-a" deleted'
    ns = await client.get(types_pb2.Namespace, "team-a")
    assert ns.status.phase == "Terminating"
