"""networking.k8s.io/v1's defaults (upstream pkg/apis/networking/v1/defaults.go)."""

from __future__ import annotations

from kemu.api.v1 import types_pb2


def set_defaults_network_policy(np: types_pb2.NetworkPolicy) -> None:
    """pkg/apis/networking/v1/defaults.go: each port's protocol TCP; policyTypes Ingress, and
    Egress when there are egress rules."""
    for rule in np.spec.ingress:
        for port in rule.ports:
            if not port.HasField("protocol"):
                port.protocol = "TCP"
    for erule in np.spec.egress:
        for port in erule.ports:
            if not port.HasField("protocol"):
                port.protocol = "TCP"
    if not np.spec.policy_types:
        np.spec.policy_types.append("Ingress")
        if np.spec.egress:
            np.spec.policy_types.append("Egress")


def set_defaults_ingress_class(ic: types_pb2.IngressClass) -> None:
    """SetDefaults_IngressClass: a parameters reference's scope is Cluster."""
    if ic.spec.HasField("parameters") and not ic.spec.parameters.HasField("scope"):
        ic.spec.parameters.scope = "Cluster"
