"""Service defaulting and address allocation in the apiserver."""

from __future__ import annotations

import ipaddress

import pytest

from apiserver.admission.service_ips import NODE_PORT_RANGE, SERVICE_CLUSTER_IP_RANGE, allocate
from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Invalid
from kemu.machinery.services import default_service, keep_allocated


def svc(type_: str = "", cluster_ip: str = "", node_port: int = 0) -> types_pb2.Service:
    s = types_pb2.Service(spec=types_pb2.ServiceSpec(type=type_, cluster_ip=cluster_ip))
    s.metadata.name = "web"
    s.spec.ports.add(port=80, node_port=node_port)
    return s


def test_defaults_are_upstreams() -> None:
    s = svc()
    default_service(s)
    assert (s.spec.type, s.spec.session_affinity) == ("ClusterIP", "None")
    assert s.spec.ports[0].protocol == "TCP" and s.spec.ports[0].target_port.int_val == 80
    assert s.spec.internal_traffic_policy == "Cluster" and not s.spec.external_traffic_policy
    np = svc("NodePort")
    default_service(np)
    assert np.spec.external_traffic_policy == "Cluster"


def test_allocation_gives_a_free_address_and_node_port() -> None:
    taken = svc("NodePort", "10.96.0.10", 30080)
    s = svc("NodePort")
    default_service(s)
    allocate(s, [taken])
    ip = ipaddress.ip_address(s.spec.cluster_ip)
    assert ip in SERVICE_CLUSTER_IP_RANGE and s.spec.cluster_ip != "10.96.0.10"
    assert list(s.spec.cluster_ips) == [s.spec.cluster_ip]
    assert s.spec.ports[0].node_port in NODE_PORT_RANGE and s.spec.ports[0].node_port != 30080
    assert (list(s.spec.ip_families), s.spec.ip_family_policy) == (["IPv4"], "SingleStack")


@pytest.mark.parametrize(
    ("requested", "message"),
    [
        (svc(cluster_ip="10.96.0.10"), "provided IP is already allocated"),
        (svc(cluster_ip="192.168.0.1"), "provided IP is not in the valid range"),
        (svc("NodePort", node_port=30080), "provided port is already allocated"),
    ],
)
def test_a_requested_address_must_be_free_and_in_range(
    requested: types_pb2.Service, message: str
) -> None:
    with pytest.raises(Invalid, match=message):
        allocate(requested, [svc("NodePort", "10.96.0.10", 30080)])


def test_headless_and_external_name_services_get_no_address() -> None:
    headless = svc(cluster_ip="None")
    allocate(headless, [])
    assert headless.spec.cluster_ip == "None"
    external = svc("ExternalName")
    allocate(external, [])
    assert external.spec.cluster_ip == "" and not external.spec.cluster_ips


def test_an_update_that_leaves_addresses_out_keeps_them() -> None:
    old = svc("NodePort", "10.96.0.10", 30080)
    old.spec.ports[0].protocol = "TCP"
    old.spec.cluster_ips.append("10.96.0.10")
    new = svc("NodePort")
    default_service(new)
    keep_allocated(new, old)
    assert new.spec.cluster_ip == "10.96.0.10" and list(new.spec.cluster_ips) == ["10.96.0.10"]
    assert new.spec.ports[0].node_port == 30080
