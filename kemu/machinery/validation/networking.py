"""networking.k8s.io/v1: Ingress, IngressClass and NetworkPolicy (upstream
pkg/apis/networking/validation/validation.go; the rules kemu models, with upstream's
messages)."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause
from kemu.machinery.validation.container import is_valid_port_name, is_valid_port_num
from kemu.machinery.validation.field import forbidden, invalid, not_supported, required
from kemu.machinery.validation.meta import validate_label_selector, validate_object_meta
from kemu.machinery.validation.names import is_dns1123_subdomain, name_is_dns1035_label

_PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
_POLICY_TYPES: Final = ("Egress", "Ingress")
_PATH_TYPES: Final = ("Exact", "ImplementationSpecific", "Prefix")
_MAX_CONTROLLER_LEN: Final = 250


# ---------------------------------------------------------------- NetworkPolicy


def _cidr(
    value: str, path: str
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network | None, list[Cause]]:
    try:
        return ipaddress.ip_network(value, strict=False), []
    except ValueError:
        return None, [
            invalid(path, value, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")
        ]


def _ip_block(block: types_pb2.IPBlock, path: str) -> list[Cause]:
    """ValidateIPBlock: a CIDR, and excepts strictly inside it."""
    if not block.cidr:
        return [required(f"{path}.cidr")]
    net, causes = _cidr(block.cidr, f"{path}.cidr")
    if net is None:
        return causes
    for i, text in enumerate(getattr(block, "except")):
        p = f"{path}.except[{i}]"
        inner, errs = _cidr(text, p)
        causes.extend(errs)
        if inner is None:
            continue
        if (
            inner.version != net.version
            or not inner.subnet_of(net)  # type: ignore[arg-type]
            or inner.prefixlen <= net.prefixlen
        ):
            causes.append(invalid(p, text, "must be a strict subset of `cidr`"))
    return causes


def _ports(ports: Sequence[types_pb2.NetworkPolicyPort], path: str) -> list[Cause]:
    """ValidateNetworkPolicyPort."""
    causes: list[Cause] = []
    for i, port in enumerate(ports):
        p = f"{path}[{i}]"
        if port.HasField("protocol") and port.protocol not in _PROTOCOLS:
            causes.append(not_supported(f"{p}.protocol", port.protocol, _PROTOCOLS))
        if port.HasField("port"):
            if port.port.WhichOneof("value") == "str_val":
                causes.extend(
                    invalid(f"{p}.port", port.port.str_val, m)
                    for m in is_valid_port_name(port.port.str_val)
                )
                if port.HasField("end_port"):
                    causes.append(
                        forbidden(f"{p}.endPort", "may not be specified when `port` is non-numeric")
                    )
            else:
                causes.extend(
                    invalid(f"{p}.port", port.port.int_val, m)
                    for m in is_valid_port_num(port.port.int_val)
                )
                if port.HasField("end_port") and port.end_port < port.port.int_val:
                    causes.append(
                        invalid(
                            f"{p}.endPort", port.end_port, "must be greater than or equal to `port`"
                        )
                    )
        elif port.HasField("end_port"):
            causes.append(required(f"{p}.port", "must be specified when `endPort` is specified"))
    return causes


def _peers(peers: Sequence[types_pb2.NetworkPolicyPeer], path: str) -> list[Cause]:
    """ValidateNetworkPolicyPeer."""
    causes: list[Cause] = []
    for i, peer in enumerate(peers):
        p = f"{path}[{i}]"
        count = 0
        if peer.HasField("pod_selector"):
            count += 1
            causes.extend(validate_label_selector(peer.pod_selector, f"{p}.podSelector"))
        if peer.HasField("namespace_selector"):
            count += 1
            causes.extend(
                validate_label_selector(peer.namespace_selector, f"{p}.namespaceSelector")
            )
        if peer.HasField("ip_block"):
            count += 1
            causes.extend(_ip_block(peer.ip_block, f"{p}.ipBlock"))
        if count == 0:
            causes.append(required(p, "must specify a peer"))
        elif count > 1 and peer.HasField("ip_block"):
            causes.append(forbidden(p, "may not specify both ipBlock and another peer"))
    return causes


def validate_network_policy(np: types_pb2.NetworkPolicy) -> list[Cause]:
    """ValidateNetworkPolicy and ValidateNetworkPolicySpec."""
    causes = validate_object_meta(np.metadata, namespaced=True)
    spec = np.spec
    causes.extend(validate_label_selector(spec.pod_selector, "spec.podSelector"))
    for i, rule in enumerate(spec.ingress):
        p = f"spec.ingress[{i}]"
        causes.extend(_ports(rule.ports, f"{p}.ports"))
        causes.extend(_peers(getattr(rule, "from"), f"{p}.from"))
    for i, erule in enumerate(spec.egress):
        p = f"spec.egress[{i}]"
        causes.extend(_ports(erule.ports, f"{p}.ports"))
        causes.extend(_peers(erule.to, f"{p}.to"))
    for i, t in enumerate(spec.policy_types):
        if t not in _POLICY_TYPES:
            causes.append(not_supported(f"spec.policyTypes[{i}]", t, _POLICY_TYPES))
    if len(spec.policy_types) > len(_POLICY_TYPES):
        causes.append(
            forbidden(
                "spec.policyTypes",
                "may not specify more than two policyTypes",
            )
        )
    return causes


# ---------------------------------------------------------------- Ingress


def _host(host: str, path: str, *, wildcard: bool = True) -> list[Cause]:
    """validateIngressRules' host: a DNS name (a leading `*.` label allowed), never an IP."""
    try:
        ipaddress.ip_address(host)
        return [invalid(path, host, "must be a DNS name, not an IP address")]
    except ValueError:
        pass
    if wildcard and host.startswith("*."):
        rest = host[2:]
        if "*" in rest:
            return [invalid(path, host, "a wildcard DNS-1123 subdomain must start with '*.'")]
        return [invalid(path, host, m) for m in is_dns1123_subdomain(rest)]
    return [invalid(path, host, m) for m in is_dns1123_subdomain(host)]


def _backend(backend: types_pb2.IngressBackend, path: str) -> list[Cause]:
    """validateIngressBackend."""
    has_service = backend.HasField("service")
    has_resource = backend.HasField("resource")
    if has_service and has_resource:
        return [invalid(path, "", "cannot set both resource and service backends")]
    if not has_service and not has_resource:
        return [invalid(path, "", "resource or service backend is required")]
    causes: list[Cause] = []
    if has_resource:
        res = backend.resource
        if not res.name:
            causes.append(required(f"{path}.resource.name"))
        if not res.kind:
            causes.append(required(f"{path}.resource.kind"))
        return causes
    svc = backend.service
    if not svc.name:
        causes.append(required(f"{path}.service.name"))
    else:
        causes.extend(
            invalid(f"{path}.service.name", svc.name, m) for m in name_is_dns1035_label(svc.name)
        )
    port = svc.port
    if port.name and port.number:
        causes.append(
            invalid(f"{path}.service.port", "", "cannot set both port name & port number")
        )
    elif port.name:
        causes.extend(
            invalid(f"{path}.service.port.name", port.name, m)
            for m in is_valid_port_name(port.name)
        )
    elif port.number:
        causes.extend(
            invalid(f"{path}.service.port.number", port.number, m)
            for m in is_valid_port_num(port.number)
        )
    else:
        causes.append(required(f"{path}.service.port", "port name or number is required"))
    return causes


def _http_path(p: types_pb2.HTTPIngressPath, path: str) -> list[Cause]:
    """validateHTTPIngressPath: a pathType, and an absolute path for Exact and Prefix."""
    causes: list[Cause] = []
    if not p.HasField("path_type"):
        causes.append(required(f"{path}.pathType", "pathType must be specified"))
    elif p.path_type not in _PATH_TYPES:
        causes.append(not_supported(f"{path}.pathType", p.path_type, _PATH_TYPES))
    elif p.path_type in ("Exact", "Prefix"):
        if not p.path.startswith("/"):
            causes.append(invalid(f"{path}.path", p.path, "must be an absolute path"))
        elif "//" in p.path:
            causes.append(invalid(f"{path}.path", p.path, "must not contain '//'"))
    elif p.path and not p.path.startswith("/"):
        causes.append(invalid(f"{path}.path", p.path, "must be an absolute path"))
    causes.extend(_backend(p.backend, f"{path}.backend"))
    return causes


def validate_ingress(ing: types_pb2.Ingress) -> list[Cause]:
    """ValidateIngressCreate's spec rules (ValidateIngressSpec)."""
    causes = validate_object_meta(ing.metadata, namespaced=True)
    spec = ing.spec
    if spec.HasField("ingress_class_name"):
        causes.extend(
            invalid("spec.ingressClassName", spec.ingress_class_name, m)
            for m in is_dns1123_subdomain(spec.ingress_class_name)
        )
    if not spec.rules and not spec.HasField("default_backend"):
        causes.append(
            invalid("spec.rules", [], "either `defaultBackend` or `rules` must be specified")
        )
    if spec.HasField("default_backend"):
        causes.extend(_backend(spec.default_backend, "spec.defaultBackend"))
    for i, rule in enumerate(spec.rules):
        p = f"spec.rules[{i}]"
        if rule.host:
            causes.extend(_host(rule.host, f"{p}.host"))
        if rule.HasField("http"):
            if not rule.http.paths:
                causes.append(required(f"{p}.http.paths"))
            for j, hp in enumerate(rule.http.paths):
                causes.extend(_http_path(hp, f"{p}.http.paths[{j}]"))
    for i, tls in enumerate(spec.tls):
        for j, host in enumerate(tls.hosts):
            causes.extend(_host(host, f"spec.tls[{i}].hosts[{j}]"))
    return causes


def validate_ingress_status(ing: types_pb2.Ingress) -> list[Cause]:
    """ValidateIngressLoadBalancerStatus: each ingress point's ip is an IP, its hostname a
    DNS name."""
    causes: list[Cause] = []
    for i, point in enumerate(ing.status.load_balancer.ingress):
        p = f"status.loadBalancer.ingress[{i}]"
        if point.ip:
            try:
                ipaddress.ip_address(point.ip)
            except ValueError:
                causes.append(invalid(f"{p}.ip", point.ip, "must be a valid IP address"))
        if point.hostname:
            causes.extend(
                invalid(f"{p}.hostname", point.hostname, m)
                for m in is_dns1123_subdomain(point.hostname)
            )
    return causes


# ---------------------------------------------------------------- IngressClass


def validate_ingress_class(ic: types_pb2.IngressClass) -> list[Cause]:
    """ValidateIngressClass: a controller (a domain-prefixed path of at most 250 characters)
    and the parameters' reference."""
    causes = validate_object_meta(ic.metadata, namespaced=False)
    controller = ic.spec.controller
    if not controller:
        causes.append(required("spec.controller"))
    elif len(controller) > _MAX_CONTROLLER_LEN:
        causes.append(
            Cause("spec.controller", f"Too long: may not be more than {_MAX_CONTROLLER_LEN} bytes")
        )
    else:
        domain = controller.partition("/")[0]
        causes.extend(
            invalid("spec.controller", controller, m) for m in is_dns1123_subdomain(domain)
        )
    if ic.spec.HasField("parameters"):
        params = ic.spec.parameters
        p = "spec.parameters"
        if not params.kind:
            causes.append(required(f"{p}.kind"))
        if not params.name:
            causes.append(required(f"{p}.name"))
        scope = params.scope if params.HasField("scope") else "Cluster"
        if scope not in ("Cluster", "Namespace"):
            causes.append(not_supported(f"{p}.scope", scope, ("Cluster", "Namespace")))
        elif scope == "Namespace" and not params.namespace:
            causes.append(required(f"{p}.namespace", "`parameters.scope` is set to 'Namespace'"))
        elif scope == "Cluster" and params.HasField("namespace"):
            causes.append(forbidden(f"{p}.namespace", "`parameters.scope` is set to 'Cluster'"))
    return causes


def validate_ingress_class_update(
    new: types_pb2.IngressClass, old: types_pb2.IngressClass
) -> list[Cause]:
    """ValidateIngressClassUpdate: the controller is immutable."""
    if new.spec.controller != old.spec.controller:
        return [invalid("spec.controller", new.spec.controller, "field is immutable")]
    return []
