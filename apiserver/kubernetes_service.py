"""The `kubernetes` Service in `default` and its endpoints: upstream's apiserver creates the
Service (pkg/controlplane/controller/kubernetesservice: ClusterIP the service range's first
address, port `https` 443 to the apiserver's port) and its endpoint reconciler writes the
Endpoints and the EndpointSlice `kubernetes` with the apiserver's address and port
(pkg/controlplane/reconcilers). They have no selector: the endpoint controllers leave them
alone. kemu writes them at start-up, the port being the REST edge's (the Kubernetes HTTP
API) or, without one, the gRPC port."""

from __future__ import annotations

import ipaddress
from typing import Final

from google.protobuf.message import Message

from apiserver.admission.service_ips import SERVICE_CLUSTER_IP_RANGE
from kemu.api.v1 import types_pb2
from kemu.machinery.endpoints import SERVICE_NAME_LABEL
from kemu.machinery.namespaces import NAMESPACE_DEFAULT

NAME: Final = "kubernetes"
PORT_NAME: Final = "https"
SERVICE_PORT: Final = 443
COMPONENT_LABELS: Final = {"component": "apiserver", "provider": "kubernetes"}


def advertise_address(bind_address: str) -> str:
    """The address the endpoints carry: the bind address, loopback for an unspecified one."""
    try:
        if ipaddress.ip_address(bind_address).is_unspecified:
            return "127.0.0.1"
    except ValueError:
        return "127.0.0.1"
    return bind_address


def kubernetes_service(port: int) -> types_pb2.Service:
    svc = types_pb2.Service()
    svc.metadata.name, svc.metadata.namespace = NAME, NAMESPACE_DEFAULT
    svc.metadata.labels.update(COMPONENT_LABELS)
    svc.spec.type = "ClusterIP"
    svc.spec.cluster_ip = str(SERVICE_CLUSTER_IP_RANGE[1])
    svc.spec.session_affinity = "None"
    p = svc.spec.ports.add(name=PORT_NAME, protocol="TCP", port=SERVICE_PORT)
    p.target_port.int_val = port
    return svc


def kubernetes_endpoints(address: str, port: int) -> types_pb2.Endpoints:
    ep = types_pb2.Endpoints()
    ep.metadata.name, ep.metadata.namespace = NAME, NAMESPACE_DEFAULT
    ep.metadata.labels["endpointslice.kubernetes.io/skip-mirror"] = "true"
    ss = ep.subsets.add()
    ss.addresses.add(ip=address)
    ss.ports.add(name=PORT_NAME, port=port, protocol="TCP")
    return ep


def kubernetes_endpoint_slice(address: str, port: int) -> types_pb2.EndpointSlice:
    eps = types_pb2.EndpointSlice(address_type="IPv4")
    eps.metadata.name, eps.metadata.namespace = NAME, NAMESPACE_DEFAULT
    eps.metadata.labels[SERVICE_NAME_LABEL] = NAME
    e = eps.endpoints.add(addresses=[address])
    e.conditions.ready = True
    eps.ports.add(name=PORT_NAME, protocol="TCP", port=port)
    return eps


def bootstrap_objects(bind_address: str, port: int) -> list[Message]:
    """The Service, then its Endpoints and EndpointSlice, for an apiserver serving on
    `bind_address`:`port`."""
    address = advertise_address(bind_address)
    return [
        kubernetes_service(port),
        kubernetes_endpoints(address, port),
        kubernetes_endpoint_slice(address, port),
    ]
