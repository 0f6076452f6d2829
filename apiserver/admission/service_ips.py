"""Service address allocation (the service REST storage's allocators; the defaulting and
the update rule are the Service strategy, kemu.machinery.services).

kemu proxies nothing, but a Service gets what upstream's apiserver gives it: type ClusterIP,
sessionAffinity None, each port's protocol TCP and targetPort = port, the traffic policies, and
a cluster IP from a fixed range (10.96.0.0/12, kubeadm's default; 10.96.0.1 is left for the
`kubernetes` service upstream creates) plus a node port (30000-32767) for NodePort and
LoadBalancer services. Addresses are picked at random among those no stored Service holds,
which is what upstream's bitmap allocator guarantees without its etcd record: two creates racing
for the same random address in the same millisecond is the (negligible) difference.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Iterable
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Invalid
from kemu.machinery.validation.core import CLUSTER_IP_NONE
from kemu.machinery.validation.field import invalid

SERVICE_CLUSTER_IP_RANGE: Final = ipaddress.IPv4Network("10.96.0.0/12")
_RESERVED: Final = frozenset({SERVICE_CLUSTER_IP_RANGE[0], SERVICE_CLUSTER_IP_RANGE[1]})
NODE_PORT_RANGE: Final = range(30000, 32768)
_ATTEMPTS: Final = 64


def allocate(svc: types_pb2.Service, existing: Iterable[types_pb2.Service]) -> None:
    """Gives a new service its cluster IP and node ports; a requested one must be free."""
    spec = svc.spec
    used_ips: set[str] = set()
    used_ports: set[int] = set()
    for other in existing:
        used_ips.add(other.spec.cluster_ip)
        used_ports.update(p.node_port for p in other.spec.ports if p.node_port)
    if spec.type != "ExternalName":
        if not spec.cluster_ip:
            spec.cluster_ip = _free_ip(used_ips)
        elif spec.cluster_ip != CLUSTER_IP_NONE:
            _check_requested_ip(spec.cluster_ip, used_ips)
        if not spec.cluster_ips:
            spec.cluster_ips.append(spec.cluster_ip)
        if not spec.ip_families:
            spec.ip_families.append("IPv4")
        if not spec.HasField("ip_family_policy"):
            spec.ip_family_policy = "SingleStack"
    if spec.type in ("NodePort", "LoadBalancer"):
        for i, port in enumerate(spec.ports):
            if not port.node_port:
                port.node_port = _free_port(used_ports)
            elif port.node_port in used_ports:
                raise Invalid.from_causes(
                    f'Service "{svc.metadata.name}"',
                    [
                        invalid(
                            f"spec.ports[{i}].nodePort",
                            port.node_port,
                            "provided port is already allocated",
                        )
                    ],
                )
            used_ports.add(port.node_port)


def _free_ip(used: set[str]) -> str:
    size = SERVICE_CLUSTER_IP_RANGE.num_addresses
    for _ in range(_ATTEMPTS):
        ip = SERVICE_CLUSTER_IP_RANGE[random.randrange(size)]
        if ip not in _RESERVED and str(ip) not in used and ip != SERVICE_CLUSTER_IP_RANGE[-1]:
            return str(ip)
    raise Invalid.field("spec.clusterIPs", "failed to allocate a service IP: range is full")


def _check_requested_ip(requested: str, used: set[str]) -> None:
    try:
        ip = ipaddress.ip_address(requested)
    except ValueError:
        return  # validation names the bad address
    if ip not in SERVICE_CLUSTER_IP_RANGE:
        raise Invalid.field(
            "spec.clusterIPs",
            f'Invalid value: ["{requested}"]: failed to allocate IP {requested}: provided IP '
            f"is not in the valid range. The range of valid IPs is {SERVICE_CLUSTER_IP_RANGE}",
        )
    if requested in used:
        raise Invalid.field(
            "spec.clusterIPs",
            f'Invalid value: ["{requested}"]: failed to allocate IP {requested}: provided IP '
            "is already allocated",
        )


def _free_port(used: set[int]) -> int:
    for _ in range(_ATTEMPTS):
        port = random.choice(NODE_PORT_RANGE)
        if port not in used:
            return port
    free = [p for p in NODE_PORT_RANGE if p not in used]
    if not free:
        raise Invalid.field("spec.ports", "failed to allocate a node port: range is full")
    return free[0]
