"""Validation of issue #57's kinds (kinds-b): ReplicationController, Endpoints, EndpointSlice,
HorizontalPodAutoscaler; the paths as upstream's validation names them."""

from __future__ import annotations

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.defaults import set_defaults
from kemu.machinery.validation.objects import validate_object


def _paths(obj: Message) -> list[str]:
    return [c.field for c in validate_object(obj)]


def test_replication_controller_needs_a_matching_selector_and_template() -> None:
    rc = types_pb2.ReplicationController()
    rc.metadata.name, rc.metadata.namespace = "r", "default"
    assert _paths(rc) == ["spec.selector", "spec.template"]
    rc.spec.selector["app"] = "a"
    rc.spec.template.metadata.labels["app"] = "b"
    rc.spec.template.spec.containers.add(name="c", image="nginx")
    set_defaults(rc)
    assert "spec.template.metadata.labels" in _paths(rc)


def test_endpoint_slice_address_type_and_ports() -> None:
    eps = types_pb2.EndpointSlice(address_type="IPv5")
    eps.metadata.name, eps.metadata.namespace = "s", "default"
    eps.endpoints.add()
    eps.ports.add(name="http", port=70000)
    assert _paths(eps) == ["addressType", "endpoints[0].addresses", "ports[0].port"]


def test_endpoints_addresses_need_an_ip() -> None:
    ep = types_pb2.Endpoints()
    ep.metadata.name, ep.metadata.namespace = "e", "default"
    ep.subsets.add().addresses.add()
    set_defaults(ep)
    assert _paths(ep) == ["subsets[0].addresses[0].ip"]


def test_hpa_target_replicas_and_metrics() -> None:
    hpa = types_pb2.HorizontalPodAutoscaler()
    hpa.metadata.name, hpa.metadata.namespace = "h", "default"
    hpa.spec.min_replicas = 3
    hpa.spec.max_replicas = 2
    hpa.spec.metrics.add(type="Resource").resource.target.type = "Utilization"
    assert _paths(hpa) == [
        "spec.scaleTargetRef.kind",
        "spec.scaleTargetRef.name",
        "spec.maxReplicas",
        "spec.metrics[0].resource.name",
        "spec.metrics[0].resource.target.averageUtilization",
    ]
