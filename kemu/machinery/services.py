"""The Service strategy's pure parts: upstream's SetDefaults_Service (type ClusterIP,
sessionAffinity None, each port's protocol TCP and targetPort = port, the traffic policies)
and patchAllocatedValues (an update keeps the addresses allocated before). Allocating the
addresses of a new Service is the apiserver's (apiserver/admission/service_ips.py), as upstream's
service REST storage allocates them."""

from __future__ import annotations

from kemu.api.v1 import types_pb2


def default_service(svc: types_pb2.Service) -> None:
    spec = svc.spec
    spec.type = spec.type or "ClusterIP"
    spec.session_affinity = spec.session_affinity or "None"
    for port in spec.ports:
        port.protocol = port.protocol or "TCP"
        target = port.target_port
        if target.WhichOneof("value") is None or (
            target.WhichOneof("value") == "int_val" and target.int_val == 0
        ):
            target.int_val = port.port
    if spec.type in ("NodePort", "LoadBalancer") and not spec.external_traffic_policy:
        spec.external_traffic_policy = "Cluster"
    if spec.type != "ExternalName" and not spec.HasField("internal_traffic_policy"):
        spec.internal_traffic_policy = "Cluster"


def keep_allocated(new: types_pb2.Service, old: types_pb2.Service) -> None:
    """An update that leaves the allocated addresses out keeps them (upstream's
    patchAllocatedValues); one that changes them is refused by validation."""
    if new.spec.type == "ExternalName":
        return
    if not new.spec.cluster_ip and old.spec.cluster_ip:
        new.spec.cluster_ip = old.spec.cluster_ip
    if not new.spec.cluster_ips:
        new.spec.cluster_ips.extend(old.spec.cluster_ips)
    if not new.spec.ip_families:
        new.spec.ip_families.extend(old.spec.ip_families)
    if not new.spec.HasField("ip_family_policy") and old.spec.HasField("ip_family_policy"):
        new.spec.ip_family_policy = old.spec.ip_family_policy
    if new.spec.type in ("NodePort", "LoadBalancer"):
        old_ports = {(p.protocol, p.port): p.node_port for p in old.spec.ports}
        for port in new.spec.ports:
            if not port.node_port:
                port.node_port = old_ports.get((port.protocol, port.port), 0)
