"""ReplicationController, Endpoints (core/v1), EndpointSlice (discovery.k8s.io/v1) and
HorizontalPodAutoscaler (autoscaling/v2): upstream pkg/apis/core/validation
(ValidateReplicationController, ValidateEndpoints), pkg/apis/discovery/validation
(ValidateEndpointSlice) and pkg/apis/autoscaling/validation (ValidateHorizontalPodAutoscaler),
with their messages and field paths for the rules kemu checks."""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause, Invalid
from kemu.machinery.quantity import parse_quantity
from kemu.machinery.validation.field import invalid, not_supported, required, too_many
from kemu.machinery.validation.meta import validate_labels, validate_object_meta
from kemu.machinery.validation.names import is_dns1123_label
from kemu.machinery.validation.workloads import validate_pod_template

_PROTOCOLS: Final = ("SCTP", "TCP", "UDP")


def _nonnegative(value: int, path: str) -> list[Cause]:
    return [invalid(path, value, "must be greater than or equal to 0")] if value < 0 else []


# ---------------------------------------------------------------- ReplicationController


def validate_replication_controller(rc: types_pb2.ReplicationController) -> list[Cause]:
    """ValidateReplicationControllerSpec: replicas and minReadySeconds non-negative, a
    non-empty selector that the template's labels match, the template valid (restartPolicy
    Always)."""
    causes = validate_object_meta(rc.metadata, namespaced=True)
    spec = rc.spec
    causes += _nonnegative(spec.replicas, "spec.replicas")
    causes += _nonnegative(spec.min_ready_seconds, "spec.minReadySeconds")
    if not spec.selector:
        causes.append(required("spec.selector"))
    else:
        causes += validate_labels(spec.selector, "spec.selector")
    if not spec.HasField("template"):
        causes.append(required("spec.template"))
        return causes
    labels = spec.template.metadata.labels
    if spec.selector and any(labels.get(k) != v for k, v in spec.selector.items()):
        causes.append(
            invalid(
                "spec.template.metadata.labels",
                dict(labels),
                "`selector` does not match template `labels`",
            )
        )
    causes += validate_pod_template(spec.template, "spec.template", ("Always",))
    return causes


def validate_replication_controller_update(
    new: types_pb2.ReplicationController, old: types_pb2.ReplicationController
) -> list[Cause]:
    return []


# ---------------------------------------------------------------- Endpoints


def _validate_port_name(name: str, path: str, *, required_name: bool) -> list[Cause]:
    if not name:
        return [required(path)] if required_name else []
    return [invalid(path, name, m) for m in is_dns1123_label(name)]


def validate_endpoints(ep: types_pb2.Endpoints) -> list[Cause]:
    """ValidateEndpoints: each subset's addresses have an IP, its ports a valid number and
    protocol (a name required when there are several)."""
    causes = validate_object_meta(ep.metadata, namespaced=True)
    for i, ss in enumerate(ep.subsets):
        path = f"subsets[{i}]"
        if not ss.addresses and not ss.not_ready_addresses:
            causes.append(required(path, "must specify `addresses` or `notReadyAddresses`"))
        for field, addrs in (
            ("addresses", ss.addresses),
            ("notReadyAddresses", ss.not_ready_addresses),
        ):
            for j, a in enumerate(addrs):
                if not a.ip:
                    causes.append(required(f"{path}.{field}[{j}].ip"))
        for j, p in enumerate(ss.ports):
            pp = f"{path}.ports[{j}]"
            causes += _validate_port_name(p.name, f"{pp}.name", required_name=len(ss.ports) > 1)
            if not 1 <= p.port <= 65535:
                causes.append(
                    invalid(f"{pp}.port", p.port, "must be between 1 and 65535, inclusive")
                )
            if p.protocol not in _PROTOCOLS:
                causes.append(not_supported(f"{pp}.protocol", p.protocol, _PROTOCOLS))
    return causes


# ---------------------------------------------------------------- EndpointSlice

ADDRESS_TYPES: Final = ("FQDN", "IPv4", "IPv6")
MAX_ENDPOINTS: Final = 1000
MAX_PORTS: Final = 20000
MAX_ADDRESSES: Final = 100


def validate_endpoint_slice(eps: types_pb2.EndpointSlice) -> list[Cause]:
    """ValidateEndpointSlice: a supported addressType, at most 1000 endpoints of 1 to 100
    addresses each, ports with unique names and valid numbers and protocols."""
    causes = validate_object_meta(eps.metadata, namespaced=True)
    if eps.address_type not in ADDRESS_TYPES:
        causes.append(not_supported("addressType", eps.address_type, ADDRESS_TYPES))
    if len(eps.endpoints) > MAX_ENDPOINTS:
        causes.append(too_many("endpoints", len(eps.endpoints), MAX_ENDPOINTS))
    for i, e in enumerate(eps.endpoints):
        path = f"endpoints[{i}].addresses"
        if not e.addresses:
            causes.append(required(path, "must contain at least 1 address"))
        elif len(e.addresses) > MAX_ADDRESSES:
            causes.append(too_many(path, len(e.addresses), MAX_ADDRESSES))
    names: set[str] = set()
    for i, p in enumerate(eps.ports):
        path = f"ports[{i}]"
        if p.name in names:
            causes.append(invalid(f"{path}.name", p.name, "duplicate value"))
        names.add(p.name)
        causes += _validate_port_name(p.name, f"{path}.name", required_name=False)
        if p.HasField("protocol") and p.protocol not in _PROTOCOLS:
            causes.append(not_supported(f"{path}.protocol", p.protocol, _PROTOCOLS))
        if p.HasField("port") and not 1 <= p.port <= 65535:
            causes.append(invalid(f"{path}.port", p.port, "must be between 1 and 65535, inclusive"))
    return causes


def validate_endpoint_slice_update(
    new: types_pb2.EndpointSlice, old: types_pb2.EndpointSlice
) -> list[Cause]:
    if new.address_type != old.address_type:
        return [invalid("addressType", new.address_type, "field is immutable")]
    return []


# ---------------------------------------------------------------- HorizontalPodAutoscaler

METRIC_TYPES: Final = ("ContainerResource", "External", "Object", "Pods", "Resource")
TARGET_TYPES: Final = ("AverageValue", "Utilization", "Value")
SELECT_POLICIES: Final = ("Disabled", "Max", "Min")
POLICY_TYPES: Final = ("Percent", "Pods")


def _validate_target(target: types_pb2.MetricTarget, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if not target.type:
        causes.append(required(f"{path}.type", "must specify a metric target type"))
    elif target.type not in TARGET_TYPES:
        causes.append(not_supported(f"{path}.type", target.type, TARGET_TYPES))
    for field, name in (("value", "value"), ("average_value", "averageValue")):
        if target.HasField(field):
            try:
                q = parse_quantity(getattr(target, field))
            except Invalid:
                causes.append(invalid(f"{path}.{name}", getattr(target, field), "not a quantity"))
                continue
            if q.milli_value() <= 0:
                causes.append(invalid(f"{path}.{name}", getattr(target, field), "must be positive"))
    if target.HasField("average_utilization") and target.average_utilization < 1:
        causes.append(
            invalid(
                f"{path}.averageUtilization", target.average_utilization, "must be greater than 0"
            )
        )
    if target.type == "Utilization" and not target.HasField("average_utilization"):
        causes.append(
            required(
                f"{path}.averageUtilization",
                "must set either a target raw value or a target utilization",
            )
        )
    return causes


def _validate_metric(m: types_pb2.MetricSpec, path: str) -> list[Cause]:
    if not m.type:
        return [required(f"{path}.type", "must specify a metric source type")]
    if m.type not in METRIC_TYPES:
        return [not_supported(f"{path}.type", m.type, METRIC_TYPES)]
    field = {
        "Resource": "resource",
        "ContainerResource": "container_resource",
        "Pods": "pods",
        "Object": "object",
        "External": "external",
    }[m.type]
    json_name = "containerResource" if field == "container_resource" else field
    if not m.HasField(field):
        return [
            required(f"{path}.{json_name}", "must populate information for the given metric source")
        ]
    src = getattr(m, field)
    causes: list[Cause] = []
    if m.type in ("Resource", "ContainerResource") and not src.name:
        causes.append(required(f"{path}.{json_name}.name", "must specify a resource name"))
    if m.type == "ContainerResource" and not src.container:
        causes.append(required(f"{path}.{json_name}.container", "must specify a container"))
    causes += _validate_target(src.target, f"{path}.{json_name}.target")
    return causes


def _validate_rules(rules: types_pb2.HPAScalingRules, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if rules.HasField("stabilization_window_seconds") and not (
        0 <= rules.stabilization_window_seconds <= 3600
    ):
        causes.append(
            invalid(
                f"{path}.stabilizationWindowSeconds",
                rules.stabilization_window_seconds,
                "must be less than or equal to 3600",
            )
        )
    if rules.HasField("select_policy") and rules.select_policy not in SELECT_POLICIES:
        causes.append(not_supported(f"{path}.selectPolicy", rules.select_policy, SELECT_POLICIES))
    for i, p in enumerate(rules.policies):
        pp = f"{path}.policies[{i}]"
        if p.type not in POLICY_TYPES:
            causes.append(not_supported(f"{pp}.type", p.type, POLICY_TYPES))
        if p.value <= 0:
            causes.append(invalid(f"{pp}.value", p.value, "must be greater than zero"))
        if not 0 < p.period_seconds <= 1800:
            causes.append(
                invalid(
                    f"{pp}.periodSeconds",
                    p.period_seconds,
                    "must be greater than zero and less than or equal to 1800",
                )
            )
    return causes


def validate_horizontal_pod_autoscaler(hpa: types_pb2.HorizontalPodAutoscaler) -> list[Cause]:
    """ValidateHorizontalPodAutoscaler (v2): a scaleTargetRef with kind and name, minReplicas
    at least 1, maxReplicas at least minReplicas, each metric and the behavior's rules."""
    causes = validate_object_meta(hpa.metadata, namespaced=True)
    spec = hpa.spec
    ref = spec.scale_target_ref
    if not ref.kind:
        causes.append(required("spec.scaleTargetRef.kind"))
    if not ref.name:
        causes.append(required("spec.scaleTargetRef.name"))
    if spec.HasField("min_replicas") and spec.min_replicas < 1:
        causes.append(
            invalid("spec.minReplicas", spec.min_replicas, "must be greater than or equal to 1")
        )
    if spec.max_replicas < 1:
        causes.append(invalid("spec.maxReplicas", spec.max_replicas, "must be greater than 0"))
    if spec.HasField("min_replicas") and spec.max_replicas < spec.min_replicas:
        causes.append(
            invalid(
                "spec.maxReplicas",
                spec.max_replicas,
                "must be greater than or equal to `minReplicas`",
            )
        )
    for i, m in enumerate(spec.metrics):
        causes += _validate_metric(m, f"spec.metrics[{i}]")
    if spec.HasField("behavior"):
        b = spec.behavior
        if b.HasField("scale_up"):
            causes += _validate_rules(b.scale_up, "spec.behavior.scaleUp")
        if b.HasField("scale_down"):
            causes += _validate_rules(b.scale_down, "spec.behavior.scaleDown")
    return causes
