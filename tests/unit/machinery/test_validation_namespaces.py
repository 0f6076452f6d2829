"""Validation of Namespaces, Services and ConfigMaps, and the namespace rules every component
shares: messages and field paths as upstream prints them."""

from __future__ import annotations

from typing import Any

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery import convert, kinds
from kemu.machinery.errors import Cause
from kemu.machinery.namespaces import (
    begin_deletion,
    new_namespace,
    prepare_for_create,
    prepare_for_finalize,
    prepare_for_update,
)
from kemu.machinery.validation.objects import validate_object


def by_field(causes: list[Cause]) -> dict[str, str]:
    return {c.field: c.message for c in causes}


def service(spec: dict[str, Any], name: str = "web") -> types_pb2.Service:
    svc = convert.from_dict(
        kinds.BY_KIND["Service"],
        {"metadata": {"name": name, "namespace": "default"}, "spec": spec},
    )
    assert isinstance(svc, types_pb2.Service)
    return svc


def valid_spec(**extra: Any) -> dict[str, Any]:
    return {
        "type": "ClusterIP",
        "sessionAffinity": "None",
        "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}],
        **extra,
    }


def test_a_namespace_name_is_a_dns_label_and_finalizers_are_standard_or_qualified() -> None:
    ns = new_namespace("a.b", finalizers=["kubernetes", "mine", "example.com/mine"])
    got = by_field(validate_object(ns))
    assert got["metadata.name"].startswith('Invalid value: "a.b": a lowercase RFC 1123 label')
    assert got["spec.finalizers"] == (
        'Invalid value: "mine": name is neither a standard finalizer name nor is it fully qualified'
    )
    assert validate_object(new_namespace("team-a", finalizers=["kubernetes"])) == []
    namespaced = new_namespace("x")
    namespaced.metadata.namespace = "default"
    assert by_field(validate_object(namespaced)) == {
        "metadata.namespace": "Forbidden: not allowed on this type"
    }


def test_namespace_lifecycle_rules() -> None:
    ns = new_namespace("team")
    prepare_for_create(ns)
    assert ns.status.phase == "Active" and list(ns.spec.finalizers) == ["kubernetes"]
    assert dict(ns.metadata.labels) == {"kubernetes.io/metadata.name": "team"}
    # A plain update changes neither the finalizers nor (the apiserver keeps it) status.
    update = types_pb2.Namespace()
    update.CopyFrom(ns)
    update.spec.ClearField("finalizers")
    update.metadata.labels["kubernetes.io/metadata.name"] = "other"
    prepare_for_update(update, ns)
    assert list(update.spec.finalizers) == ["kubernetes"]
    assert update.metadata.labels["kubernetes.io/metadata.name"] == "team"
    # Terminating iff deleting, both ways.
    terminating = types_pb2.Namespace()
    terminating.CopyFrom(ns)
    terminating.status.phase = "Terminating"
    assert by_field(validate_object(terminating, old=ns)) == {
        "status.phase": "Invalid value: \"Terminating\": may only be 'Terminating' if "
        "`deletionTimestamp` is not empty"
    }
    begin_deletion(terminating, convert.timestamp(1.0))
    assert validate_object(terminating, old=ns) == []
    # finalize changes spec.finalizers and nothing else.
    finalized = types_pb2.Namespace()
    finalized.CopyFrom(terminating)
    finalized.metadata.labels["x"] = "y"
    finalized.spec.ClearField("finalizers")
    result = prepare_for_finalize(finalized, terminating)
    assert list(result.spec.finalizers) == [] and "x" not in result.metadata.labels


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        ({"ports": []}, "spec.ports", "Required value"),
        (
            {"ports": [{"port": 0, "protocol": "TCP"}]},
            "spec.ports[0].port",
            "Invalid value: 0: must be between 1 and 65535, inclusive",
        ),
        (
            {"ports": [{"port": 80, "protocol": "HTTP"}]},
            "spec.ports[0].protocol",
            'Unsupported value: "HTTP": supported values: "TCP", "UDP", "SCTP"',
        ),
        (
            {"ports": [{"port": 80, "protocol": "TCP", "targetPort": "http--x"}]},
            "spec.ports[0].targetPort",
            'Invalid value: "http--x": must not contain consecutive hyphens',
        ),
        (
            {"ports": [{"port": 80, "protocol": "TCP"}, {"port": 81, "protocol": "TCP"}]},
            "spec.ports[0].name",
            "Required value",
        ),
        (
            {
                "ports": [
                    {"name": "a", "port": 80, "protocol": "TCP"},
                    {"name": "b", "port": 80, "protocol": "TCP"},
                ]
            },
            "spec.ports[1]",
            'Duplicate value: "80/TCP"',
        ),
        ({"type": "Magic"}, "spec.type", 'Unsupported value: "Magic"'),
        ({"clusterIP": "10.0.0.300"}, "spec.clusterIP", 'Invalid value: "10.0.0.300"'),
        ({"selector": {"a b": "c"}}, "spec.selector", 'Invalid value: "a b"'),
        (
            {"ports": [{"port": 80, "protocol": "TCP", "nodePort": 30001}]},
            "spec.ports[0].nodePort",
            "Forbidden: may not be used when `type` is 'ClusterIP'",
        ),
        (
            {"type": "ExternalName", "ports": []},
            "spec.externalName",
            "Required value",
        ),
        (
            {"externalTrafficPolicy": "Local"},
            "spec.externalTrafficPolicy",
            'Invalid value: "Local": may only be set for externally-accessible services',
        ),
    ],
)
def test_service_validation(spec: dict[str, Any], field: str, message: str) -> None:
    got = by_field(validate_object(service(valid_spec(**spec))))
    assert field in got, got
    assert got[field].startswith(message), got[field]


def test_valid_services_and_name_rules() -> None:
    assert validate_object(service(valid_spec(selector={"app": "web"}))) == []
    assert validate_object(service(valid_spec(clusterIP="None", ports=[]))) == []
    got = by_field(validate_object(service(valid_spec(), name="1st")))
    assert got["metadata.name"].startswith('Invalid value: "1st": a DNS-1035 label')


def test_a_services_cluster_ip_may_not_change() -> None:
    old = service(valid_spec(clusterIP="10.96.0.10"))
    new = service(valid_spec(clusterIP="10.96.0.11"))
    assert by_field(validate_object(new, old=old)) == {
        "spec.clusterIPs[0]": 'Invalid value: "10.96.0.11": may not change once set'
    }


def test_config_map_keys_duplicates_and_immutability() -> None:
    cm = types_pb2.ConfigMap()
    cm.metadata.name, cm.metadata.namespace = "cfg", "default"
    cm.data["ok.key_1"] = "v"
    cm.data["a b"] = "v"
    cm.data[".."] = "v"
    cm.data["both"] = "v"
    cm.binary_data["both"] = b"v"
    got = by_field(validate_object(cm))
    assert got["data[a b]"].startswith('Invalid value: "a b": a valid config key must consist')
    assert got["data[..]"] == "Invalid value: \"..\": must not be '..'"
    assert got["data[both]"] == 'Invalid value: "both": duplicate of key present in binaryData'
    assert got["binaryData[both]"] == 'Invalid value: "both": duplicate of key present in data'
    assert "data[ok.key_1]" not in got
    old = types_pb2.ConfigMap(immutable=True)
    old.metadata.CopyFrom(cm.metadata)
    old.data["k"] = "1"
    new = types_pb2.ConfigMap(immutable=True)
    new.CopyFrom(old)
    new.data["k"] = "2"
    assert by_field(validate_object(new, old=old)) == {
        "data": "Forbidden: field is immutable when `immutable` is set"
    }
