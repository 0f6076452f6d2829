"""Leases, Events, Namespaces, Services, ConfigMaps, Secrets and ServiceAccounts."""

from __future__ import annotations

import json
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery import storage
from kemu.machinery.errors import Cause
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING
from kemu.machinery.namespaces import NAMESPACE_ACTIVE, NAMESPACE_TERMINATING
from kemu.machinery.quantity import NEGATIVE_ERROR
from kemu.machinery.validation.container import (
    _is_valid_ip,
    _validate_port_num_or_name,
    is_config_map_key,
    is_valid_port_num,
)
from kemu.machinery.validation.field import (
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
)
from kemu.machinery.validation.meta import (
    validate_finalizer_name,
    validate_labels,
    validate_object_meta,
    validate_qualified_name,
)
from kemu.machinery.validation.names import (
    is_dns1123_label,
    is_dns1123_subdomain,
    name_is_dns1035_label,
    name_is_dns_label,
)

# ---------------------------------------------------------------- leases, events


def validate_lease(lease: types_pb2.Lease) -> list[Cause]:
    causes = validate_object_meta(lease.metadata, namespaced=True)
    spec = lease.spec
    if spec.HasField("lease_duration_seconds") and spec.lease_duration_seconds <= 0:
        causes.append(
            invalid(
                "spec.leaseDurationSeconds", spec.lease_duration_seconds, "must be greater than 0"
            )
        )
    if spec.HasField("lease_transitions") and spec.lease_transitions < 0:
        causes.append(invalid("spec.leaseTransitions", spec.lease_transitions, NEGATIVE_ERROR))
    return causes


def validate_event(event: types_pb2.Event) -> list[Cause]:
    causes = validate_object_meta(event.metadata, namespaced=True)
    if event.type and event.type not in (EVENT_NORMAL, EVENT_WARNING):
        causes.append(not_supported("type", event.type, (EVENT_NORMAL, EVENT_WARNING)))
    return causes


MAX_CONFIG_MAP_SIZE: Final = 1024 * 1024  # api.MaxSecretSize, which bounds config maps too

SERVICE_TYPES: Final = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
SERVICE_PROTOCOLS: Final = ("TCP", "UDP", "SCTP")
SESSION_AFFINITIES: Final = ("ClientIP", "None")
TRAFFIC_POLICIES: Final = ("Cluster", "Local")
CLUSTER_IP_NONE: Final = "None"


_IP_ERROR: Final = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def validate_namespace(ns: types_pb2.Namespace) -> list[Cause]:
    causes = validate_object_meta(ns.metadata, namespaced=False, name_fn=name_is_dns_label)
    for finalizer in ns.spec.finalizers:
        causes.extend(validate_finalizer_name(finalizer, "spec.finalizers"))
    phase = ns.status.phase
    if phase and phase not in (NAMESPACE_ACTIVE, NAMESPACE_TERMINATING):
        causes.append(
            not_supported("status.phase", phase, (NAMESPACE_ACTIVE, NAMESPACE_TERMINATING))
        )
    return causes


def validate_namespace_update(new: types_pb2.Namespace, old: types_pb2.Namespace) -> list[Cause]:
    """ValidateNamespaceStatusUpdate's phase rule: Terminating iff deletionTimestamp is set."""
    terminating = new.metadata.HasField("deletion_timestamp")
    if terminating and new.status.phase != NAMESPACE_TERMINATING:
        return [
            invalid(
                "status.phase",
                new.status.phase,
                "may only be in 'Terminating' phase if `deletionTimestamp` is not empty",
            )
        ]
    if not terminating and new.status.phase == NAMESPACE_TERMINATING:
        return [
            invalid(
                "status.phase",
                new.status.phase,
                "may only be 'Terminating' if `deletionTimestamp` is not empty",
            )
        ]
    return []


def _validate_service_port(
    sp: types_pb2.ServicePort, path: str, *, require_name: bool, names: set[str]
) -> list[Cause]:
    causes: list[Cause] = []
    if require_name and not sp.name:
        causes.append(required(f"{path}.name"))
    elif sp.name:
        causes.extend(invalid(f"{path}.name", sp.name, m) for m in is_dns1123_label(sp.name))
        if sp.name in names:
            causes.append(duplicate(f"{path}.name", sp.name))
        names.add(sp.name)
    causes.extend(invalid(f"{path}.port", sp.port, m) for m in is_valid_port_num(sp.port))
    if not sp.protocol:
        causes.append(required(f"{path}.protocol"))
    elif sp.protocol not in SERVICE_PROTOCOLS:
        causes.append(not_supported(f"{path}.protocol", sp.protocol, SERVICE_PROTOCOLS))
    if sp.HasField("target_port"):
        causes.extend(_validate_port_num_or_name(sp.target_port, f"{path}.targetPort"))
    if sp.HasField("app_protocol"):
        causes.extend(validate_qualified_name(sp.app_protocol, f"{path}.appProtocol"))
    if sp.node_port:
        causes.extend(
            invalid(f"{path}.nodePort", sp.node_port, m) for m in is_valid_port_num(sp.node_port)
        )
    return causes


def validate_service(svc: types_pb2.Service) -> list[Cause]:
    causes = validate_object_meta(svc.metadata, namespaced=True, name_fn=name_is_dns1035_label)
    spec = svc.spec
    headless = spec.cluster_ip == CLUSTER_IP_NONE
    if spec.type not in SERVICE_TYPES:
        causes.append(not_supported("spec.type", spec.type, SERVICE_TYPES))
    external_name = spec.type == "ExternalName"
    if external_name:
        if spec.cluster_ip:
            causes.append(forbidden("spec.clusterIP", "may not be set for ExternalName services"))
        if not spec.external_name:
            causes.append(required("spec.externalName"))
        else:
            causes.extend(
                invalid("spec.externalName", spec.external_name, m)
                for m in is_dns1123_subdomain(spec.external_name.removesuffix("."))
            )
    elif spec.cluster_ip and not headless and not _is_valid_ip(spec.cluster_ip):
        causes.append(invalid("spec.clusterIP", spec.cluster_ip, _IP_ERROR))
    if spec.cluster_ips and spec.cluster_ip and spec.cluster_ips[0] != spec.cluster_ip:
        causes.append(
            invalid(
                "spec.clusterIPs",
                list(spec.cluster_ips),
                "element [0] must match clusterIP",
            )
        )
    if not spec.ports and not headless and not external_name:
        causes.append(required("spec.ports"))
    names: set[str] = set()
    seen: set[tuple[str, int]] = set()
    for i, sp in enumerate(spec.ports):
        path = f"spec.ports[{i}]"
        causes.extend(
            _validate_service_port(sp, path, require_name=len(spec.ports) > 1, names=names)
        )
        if sp.node_port and spec.type == "ClusterIP":
            causes.append(
                forbidden(f"{path}.nodePort", "may not be used when `type` is 'ClusterIP'")
            )
        key = (sp.protocol, sp.port)
        if key in seen:
            causes.append(duplicate(path, f"{sp.port}/{sp.protocol}"))
        seen.add(key)
    if spec.session_affinity not in SESSION_AFFINITIES:
        causes.append(
            not_supported("spec.sessionAffinity", spec.session_affinity, SESSION_AFFINITIES)
        )
    for i, ip in enumerate(spec.external_ips):
        if not _is_valid_ip(ip):
            causes.append(invalid(f"spec.externalIPs[{i}]", ip, _IP_ERROR))
    causes.extend(validate_labels(spec.selector, "spec.selector"))
    policy = spec.external_traffic_policy
    if spec.type in ("ClusterIP", "ExternalName"):
        if policy:
            causes.append(
                invalid(
                    "spec.externalTrafficPolicy",
                    policy,
                    "may only be set for externally-accessible services",
                )
            )
    elif policy not in TRAFFIC_POLICIES:
        causes.append(not_supported("spec.externalTrafficPolicy", policy, TRAFFIC_POLICIES))
    if spec.HasField("internal_traffic_policy") and (
        spec.internal_traffic_policy not in TRAFFIC_POLICIES
    ):
        causes.append(
            not_supported(
                "spec.internalTrafficPolicy", spec.internal_traffic_policy, TRAFFIC_POLICIES
            )
        )
    return causes


def validate_service_update(new: types_pb2.Service, old: types_pb2.Service) -> list[Cause]:
    """A service keeps its cluster IP while it has one (ExternalName services have none)."""
    if (
        old.spec.cluster_ip
        and new.spec.type != "ExternalName"
        and new.spec.cluster_ip != old.spec.cluster_ip
    ):
        return [invalid("spec.clusterIPs[0]", new.spec.cluster_ip, "may not change once set")]
    return []


def validate_config_map(cm: types_pb2.ConfigMap) -> list[Cause]:
    causes = validate_object_meta(cm.metadata, namespaced=True)
    size = 0
    for key, value in sorted(cm.data.items()):
        path = f"data[{key}]"
        causes.extend(invalid(path, key, m) for m in is_config_map_key(key))
        if key in cm.binary_data:
            causes.append(invalid(path, key, "duplicate of key present in binaryData"))
        size += len(value.encode())
    for key, blob in sorted(cm.binary_data.items()):
        path = f"binaryData[{key}]"
        causes.extend(invalid(path, key, m) for m in is_config_map_key(key))
        if key in cm.data:
            causes.append(invalid(path, key, "duplicate of key present in data"))
        size += len(blob)
    if size > MAX_CONFIG_MAP_SIZE:
        causes.append(too_long("<root>", MAX_CONFIG_MAP_SIZE))
    return causes


def validate_config_map_update(new: types_pb2.ConfigMap, old: types_pb2.ConfigMap) -> list[Cause]:
    if not (old.HasField("immutable") and old.immutable):
        return []
    causes = []
    if not (new.HasField("immutable") and new.immutable):
        causes.append(forbidden("immutable", "field is immutable when `immutable` is set"))
    if dict(new.data) != dict(old.data):
        causes.append(forbidden("data", "field is immutable when `immutable` is set"))
    if dict(new.binary_data) != dict(old.binary_data):
        causes.append(forbidden("binaryData", "field is immutable when `immutable` is set"))
    return causes


# ---------------------------------------------------------------- secrets, service accounts

_DOCKER_CONFIG_KEYS: Final = {
    storage.SECRET_DOCKERCFG: ".dockercfg",
    storage.SECRET_DOCKER_CONFIG_JSON: ".dockerconfigjson",
}
_SERVICE_ACCOUNT_NAME_ANNOTATION: Final = "kubernetes.io/service-account.name"


def _validate_secret_type(secret: types_pb2.Secret) -> list[Cause]:
    """ValidateSecret's rules per type: the keys each needs."""
    kind, data = secret.type, secret.data
    if kind == storage.SECRET_SERVICE_ACCOUNT_TOKEN:
        if not secret.metadata.annotations.get(_SERVICE_ACCOUNT_NAME_ANNOTATION):
            return [required(f"metadata.annotations[{_SERVICE_ACCOUNT_NAME_ANNOTATION}]")]
    elif kind in _DOCKER_CONFIG_KEYS:
        key = _DOCKER_CONFIG_KEYS[kind]
        if key not in data:
            return [required(f"data[{key}]")]
        try:
            parsed = json.loads(data[key])
        except ValueError as e:
            return [invalid(f"data[{key}]", "<secret contents redacted>", str(e))]
        if not isinstance(parsed, dict):
            return [invalid(f"data[{key}]", "<secret contents redacted>", "not a JSON object")]
    elif kind == storage.SECRET_BASIC_AUTH:
        if "username" not in data and "password" not in data:
            return [required("data[username]"), required("data[password]")]
    elif kind == storage.SECRET_SSH_AUTH:
        if not data.get("ssh-privatekey"):
            return [required("data[ssh-privatekey]")]
    elif kind == storage.SECRET_TLS:
        return [required(f"data[{k}]") for k in ("tls.crt", "tls.key") if k not in data]
    return []


def validate_secret(secret: types_pb2.Secret) -> list[Cause]:
    """ValidateSecret: keys as a ConfigMap's, at most 1 MiB of data, each type's keys (a
    service-account token names its account, TLS holds tls.crt and tls.key, basic-auth a
    username or a password, docker configs JSON)."""
    causes = validate_object_meta(secret.metadata, namespaced=True)
    size = 0
    for key, value in sorted(secret.data.items()):
        causes.extend(invalid(f"data[{key}]", key, m) for m in is_config_map_key(key))
        size += len(value)
    if size > storage.MAX_SECRET_SIZE:
        causes.append(too_long("data", storage.MAX_SECRET_SIZE))
    causes.extend(_validate_secret_type(secret))
    return causes


def validate_secret_update(new: types_pb2.Secret, old: types_pb2.Secret) -> list[Cause]:
    """ValidateSecretUpdate: the type is immutable, and the data once `immutable` is set."""
    causes: list[Cause] = []
    if new.type != old.type:
        causes.append(invalid("type", new.type, "field is immutable"))
    if old.HasField("immutable") and old.immutable:
        if not (new.HasField("immutable") and new.immutable):
            causes.append(forbidden("immutable", "field is immutable when `immutable` is set"))
        if dict(new.data) != dict(old.data):
            causes.append(forbidden("data", "field is immutable when `immutable` is set"))
    return causes


def validate_service_account(sa: types_pb2.ServiceAccount) -> list[Cause]:
    """ValidateServiceAccount: the metadata (the rest is stored as given)."""
    return validate_object_meta(sa.metadata, namespaced=True)
