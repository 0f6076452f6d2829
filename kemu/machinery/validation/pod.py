"""Pods: the PodSpec as core/v1 validates it, pod-level fields, and the rules of a pod update."""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Mapping, Sequence
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause, Invalid
from kemu.machinery.quantity import ERR_FORMAT, NEGATIVE_ERROR, from_int, parse_quantity, to_int
from kemu.machinery.resources import PodResourcesOptions, pod_requests
from kemu.machinery.usage import USAGE_ANNOTATIONS
from kemu.machinery.validation.container import (
    _NOT_FOR_INIT,
    DNS_POLICIES,
    IMAGE_PULL_POLICIES,
    MAX_INT32,
    NODE_INCLUSION_POLICIES,
    OS_NAMES,
    TERMINATION_MESSAGE_POLICIES,
    WHEN_UNSATISFIABLE,
    _host_port_conflicts,
    _inclusive_range_error,
    _validate_container_ports,
    _validate_env,
    _validate_env_from,
    _validate_handler,
    _validate_ip,
    _validate_pod_security_context,
    _validate_probe,
    _validate_security_context,
    _validate_volume_mounts,
    validate_dual_stack,
    validate_volumes,
)
from kemu.machinery.validation.field import duplicate, forbidden, invalid, not_supported, required
from kemu.machinery.validation.meta import (
    validate_label_name,
    validate_label_selector,
    validate_labels,
    validate_object_meta,
    validate_qualified_name,
)
from kemu.machinery.validation.names import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_valid_label_value,
    name_is_dns_label,
    name_is_dns_subdomain,
)
from kemu.machinery.validation.pod_claims import (
    validate_container_claims,
    validate_generated_claim_names,
    validate_pod_resource_claims,
)
from kemu.machinery.validation.resources import (
    _POD_LEVEL_RESOURCES,
    validate_resource_list,
    validate_resource_requirements,
)

# ---------------------------------------------------------------- pods

PREEMPTION_POLICIES: Final = ("Never", "PreemptLowerPriority")
TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS: Final = ("Equal", "Exists")
RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
RESIZE_RESOURCES: Final = ("cpu", "memory")
RESIZE_RESTART_POLICIES: Final = ("NotRequired", "RestartContainer")


def validate_preemption_policy(policy: str, path: str) -> list[Cause]:
    if policy in PREEMPTION_POLICIES:
        return []
    return [not_supported(path, policy, PREEMPTION_POLICIES)]


def validate_taint_effect(effect: str, path: str, *, allow_empty: bool) -> list[Cause]:
    if not effect:
        return [] if allow_empty else [required(path)]
    if effect in TAINT_EFFECTS:
        return []
    return [not_supported(path, effect, TAINT_EFFECTS)]


def validate_tolerations(tolerations: Sequence[types_pb2.Toleration], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, t in enumerate(tolerations):
        p = f"{path}[{i}]"
        if t.key:
            causes.extend(validate_label_name(t.key, f"{p}.key"))
        elif t.operator != "Exists":
            causes.append(
                invalid(
                    f"{p}.operator",
                    t.operator,
                    'operator must be Exists when `key` is empty, which means "match all values '
                    'and all keys"',
                )
            )
        if t.HasField("toleration_seconds") and t.effect != "NoExecute":
            causes.append(
                invalid(
                    f"{p}.effect",
                    t.effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if t.operator in ("Equal", ""):
            errs = is_valid_label_value(t.value)
            if errs:
                causes.append(invalid(f"{p}.operator", t.value, ";".join(errs)))
        elif t.operator == "Exists":
            if t.value:
                causes.append(
                    invalid(
                        f"{p}.operator", t.value, "value must be empty when `operator` is 'Exists'"
                    )
                )
        else:
            causes.append(not_supported(f"{p}.operator", t.operator, TOLERATION_OPERATORS))
        causes.extend(validate_taint_effect(t.effect, f"{p}.effect", allow_empty=True))
    return causes


def _validate_node_selector_requirement(
    req: types_pb2.NodeSelectorRequirement, path: str
) -> list[Cause]:
    causes: list[Cause] = []
    if req.operator in ("In", "NotIn"):
        if not req.values:
            causes.append(
                required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'")
            )
    elif req.operator in ("Exists", "DoesNotExist"):
        if req.values:
            causes.append(
                forbidden(
                    f"{path}.values",
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
    elif req.operator in ("Gt", "Lt"):
        if len(req.values) != 1:
            causes.append(
                required(
                    f"{path}.values",
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                )
            )
    else:
        causes.append(invalid(f"{path}.operator", req.operator, "not a valid selector operator"))
    causes.extend(validate_label_name(req.key, f"{path}.key"))
    return causes


def _validate_node_field_requirement(
    req: types_pb2.NodeSelectorRequirement, path: str
) -> list[Cause]:
    causes: list[Cause] = []
    if req.operator in ("In", "NotIn"):
        if len(req.values) != 1:
            causes.append(
                required(
                    f"{path}.values",
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field "
                    "selector",
                )
            )
    else:
        causes.append(invalid(f"{path}.operator", req.operator, "not a valid selector operator"))
    if req.key != "metadata.name":
        causes.append(not_supported(f"{path}.key", req.key, ["metadata.name"]))
    return causes


def _validate_node_selector_term(term: types_pb2.NodeSelectorTerm, path: str) -> list[Cause]:
    causes = []
    for j, req in enumerate(term.match_expressions):
        causes.extend(_validate_node_selector_requirement(req, f"{path}.matchExpressions[{j}]"))
    for j, req in enumerate(term.match_fields):
        causes.extend(_validate_node_field_requirement(req, f"{path}.matchFields[{j}]"))
    return causes


def _validate_weight(weight: int, path: str) -> list[Cause]:
    if 1 <= weight <= 100:
        return []
    return [invalid(path, weight, "must be in the range 1-100")]


def _validate_pod_affinity_term(term: types_pb2.PodAffinityTerm, path: str) -> list[Cause]:
    causes = []
    if term.HasField("label_selector"):
        causes.extend(validate_label_selector(term.label_selector, f"{path}.labelSelector"))
    if term.HasField("namespace_selector"):
        causes.extend(validate_label_selector(term.namespace_selector, f"{path}.namespaceSelector"))
    for i, ns in enumerate(term.namespaces):
        causes.extend(invalid(f"{path}.namespaces[{i}]", ns, m) for m in name_is_dns_label(ns))
    if not term.topology_key:
        causes.append(required(f"{path}.topologyKey", "can not be empty"))
    else:
        causes.extend(validate_label_name(term.topology_key, f"{path}.topologyKey"))
    return causes


def validate_node_selector(selector: types_pb2.NodeSelector, path: str) -> list[Cause]:
    """ValidateNodeSelector: at least one term, each valid (a pod's required node affinity,
    a PersistentVolume's spec.nodeAffinity.required)."""
    terms = selector.node_selector_terms
    if not terms:
        return [required(f"{path}.nodeSelectorTerms", "must have at least one node selector term")]
    causes: list[Cause] = []
    for i, term in enumerate(terms):
        causes.extend(_validate_node_selector_term(term, f"{path}.nodeSelectorTerms[{i}]"))
    return causes


def validate_affinity(affinity: types_pb2.Affinity, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if affinity.HasField("node_affinity"):
        na = affinity.node_affinity
        p = f"{path}.nodeAffinity"
        if na.HasField("required_during_scheduling_ignored_during_execution"):
            causes.extend(
                validate_node_selector(
                    na.required_during_scheduling_ignored_during_execution,
                    f"{p}.requiredDuringSchedulingIgnoredDuringExecution",
                )
            )
        for i, pref in enumerate(na.preferred_during_scheduling_ignored_during_execution):
            pp = f"{p}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            causes.extend(_validate_weight(pref.weight, f"{pp}.weight"))
            causes.extend(_validate_node_selector_term(pref.preference, f"{pp}.preference"))
    for field, json_name in (
        ("pod_affinity", "podAffinity"),
        ("pod_anti_affinity", "podAntiAffinity"),
    ):
        if not affinity.HasField(field):
            continue
        pa = getattr(affinity, field)
        p = f"{path}.{json_name}"
        for i, term in enumerate(pa.required_during_scheduling_ignored_during_execution):
            causes.extend(
                _validate_pod_affinity_term(
                    term, f"{p}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"
                )
            )
        for i, wterm in enumerate(pa.preferred_during_scheduling_ignored_during_execution):
            pp = f"{p}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            causes.extend(_validate_weight(wterm.weight, f"{pp}.weight"))
            causes.extend(
                _validate_pod_affinity_term(wterm.pod_affinity_term, f"{pp}.podAffinityTerm")
            )
    return causes


def validate_scheduling_gates(
    gates: Sequence[types_pb2.PodSchedulingGate], path: str
) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, gate in enumerate(gates):
        causes.extend(validate_qualified_name(gate.name, f"{path}[{i}]"))
        if gate.name in seen:
            causes.append(duplicate(f"{path}[{i}]", gate.name))
        seen.add(gate.name)
    return causes


def validate_resize_policy(
    policies: Sequence[types_pb2.ContainerResizePolicy], path: str, pod_restart_policy: str
) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, policy in enumerate(policies):
        p = f"{path}[{i}]"
        if policy.resource_name in seen:
            causes.append(duplicate(f"{p}.resourceName", policy.resource_name))
        seen.add(policy.resource_name)
        if not policy.resource_name:
            causes.append(required(f"{p}.resourceName"))
        elif policy.resource_name not in RESIZE_RESOURCES:
            causes.append(
                not_supported(f"{p}.resourceName", policy.resource_name, RESIZE_RESOURCES)
            )
        if not policy.restart_policy:
            causes.append(required(f"{p}.restartPolicy"))
        elif policy.restart_policy not in RESIZE_RESTART_POLICIES:
            causes.append(
                not_supported(f"{p}.restartPolicy", policy.restart_policy, RESIZE_RESTART_POLICIES)
            )
        if pod_restart_policy == "Never" and policy.restart_policy != "NotRequired":
            causes.append(
                invalid(
                    f"{p}.restartPolicy",
                    policy.restart_policy,
                    "must be 'NotRequired' when `restartPolicy` is 'Never'",
                )
            )
    return causes


# ------------------------------------------ pod-level fields


def validate_topology_spread_constraints(
    constraints: Sequence[types_pb2.TopologySpreadConstraint], path: str
) -> list[Cause]:
    causes: list[Cause] = []
    for i, c in enumerate(constraints):
        p = f"{path}[{i}]"
        if c.max_skew <= 0:
            causes.append(invalid(f"{p}.maxSkew", c.max_skew, "must be greater than zero"))
        if not c.topology_key:
            causes.append(required(f"{p}.topologyKey", "can not be empty"))
        else:
            causes.extend(validate_label_name(c.topology_key, f"{p}.topologyKey"))
        if c.when_unsatisfiable not in WHEN_UNSATISFIABLE:
            causes.append(
                not_supported(f"{p}.whenUnsatisfiable", c.when_unsatisfiable, WHEN_UNSATISFIABLE)
            )
        if c.HasField("min_domains"):
            if c.min_domains <= 0:
                causes.append(invalid(f"{p}.minDomains", c.min_domains, "must be greater than 0"))
            elif c.when_unsatisfiable != "DoNotSchedule":
                causes.append(
                    invalid(
                        f"{p}.minDomains",
                        c.min_domains,
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, "
                        f"not {c.when_unsatisfiable}",
                    )
                )
        if any(
            (o.topology_key, o.when_unsatisfiable) == (c.topology_key, c.when_unsatisfiable)
            for o in constraints[i + 1 :]
        ):
            causes.append(
                duplicate(
                    f"{p}.{{topologyKey, whenUnsatisfiable}}",
                    f"{{{c.topology_key}, {c.when_unsatisfiable}}}",
                )
            )
        for field, json_name in (
            ("node_affinity_policy", "nodeAffinityPolicy"),
            ("node_taints_policy", "nodeTaintsPolicy"),
        ):
            if c.HasField(field) and getattr(c, field) not in NODE_INCLUSION_POLICIES:
                causes.append(
                    not_supported(f"{p}.{json_name}", getattr(c, field), NODE_INCLUSION_POLICIES)
                )
        if c.match_label_keys and not c.HasField("label_selector"):
            causes.append(
                forbidden(
                    f"{p}.matchLabelKeys", "must not be specified when labelSelector is not set"
                )
            )
        for j, key in enumerate(c.match_label_keys):
            causes.extend(validate_label_name(key, f"{p}.matchLabelKeys[{j}]"))
        if c.HasField("label_selector"):
            causes.extend(validate_label_selector(c.label_selector, f"{p}.labelSelector"))
    return causes


def _validate_dns(spec: types_pb2.PodSpec, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if spec.dns_policy and spec.dns_policy not in DNS_POLICIES:
        causes.append(not_supported(f"{path}.dnsPolicy", spec.dns_policy, DNS_POLICIES))
    cp = f"{path}.dnsConfig"
    if spec.dns_policy == "None":
        if not spec.HasField("dns_config"):
            causes.append(required(cp, "must provide `dnsConfig` when `dnsPolicy` is None"))
        elif not spec.dns_config.nameservers:
            causes.append(
                required(
                    f"{cp}.nameservers",
                    "must provide at least one DNS nameserver when `dnsPolicy` is None",
                )
            )
    config = spec.dns_config
    if len(config.nameservers) > 3:
        causes.append(
            invalid(
                f"{cp}.nameservers",
                ",".join(config.nameservers),
                "must not have more than 3 nameservers",
            )
        )
    for i, ns in enumerate(config.nameservers):
        causes.extend(_validate_ip(ns, f"{cp}.nameservers[{i}]"))
    if len(config.searches) > 32:
        causes.append(
            invalid(
                f"{cp}.searches",
                ",".join(config.searches),
                "must not have more than 32 search paths",
            )
        )
    for i, search in enumerate(config.searches):
        s = search[:-1] if search.endswith(".") else search
        causes.extend(invalid(f"{cp}.searches[{i}]", search, m) for m in is_dns1123_subdomain(s))
    for i, option in enumerate(config.options):
        if not option.name:
            causes.append(required(f"{cp}.options[{i}]", "Option.Name must not be empty"))
    return causes


def _validate_host_network_ports(spec: types_pb2.PodSpec, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for field, json_name in (("init_containers", "initContainers"), ("containers", "containers")):
        for i, c in enumerate(getattr(spec, field)):
            for j, port in enumerate(c.ports):
                if port.host_port != port.container_port:
                    causes.append(
                        invalid(
                            f"{path}.{json_name}[{i}].ports[{j}].hostPort",
                            port.host_port,
                            "must match `containerPort` when `hostNetwork` is true",
                        )
                    )
    return causes


def _validate_pod_fields(spec: types_pb2.PodSpec, path: str) -> list[Cause]:
    """The pod-level fields of core/v1 beyond scheduling: DNS, identity, security, spreading.
    Only the fields the spec sets are looked at (one ListFields): most pods set few."""
    present = {fd.name for fd, _ in spec.ListFields()}
    causes: list[Cause] = []
    if "dns_policy" in present or "dns_config" in present:
        causes.extend(_validate_dns(spec, path))
    for field, json_name in (("hostname", "hostname"), ("subdomain", "subdomain")):
        if field in present:
            value = getattr(spec, field)
            causes.extend(invalid(f"{path}.{json_name}", value, m) for m in is_dns1123_label(value))
    for field, json_name in (
        ("service_account_name", "serviceAccountName"),
        ("runtime_class_name", "runtimeClassName"),
    ):
        if field in present:
            value = getattr(spec, field)
            causes.extend(
                invalid(f"{path}.{json_name}", value, m) for m in name_is_dns_subdomain(value)
            )
    if "active_deadline_seconds" in present and not (
        1 <= spec.active_deadline_seconds <= MAX_INT32
    ):
        causes.append(
            invalid(
                f"{path}.activeDeadlineSeconds",
                spec.active_deadline_seconds,
                _inclusive_range_error(1, MAX_INT32),
            )
        )
    for i, gate in enumerate(spec.readiness_gates):
        causes.extend(
            validate_qualified_name(
                gate.condition_type, f"{path}.readinessGates[{i}].conditionType"
            )
        )
    for i, secret in enumerate(spec.image_pull_secrets):
        if secret.name:
            causes.extend(
                invalid(f"{path}.imagePullSecrets[{i}].name", secret.name, m)
                for m in name_is_dns_subdomain(secret.name)
            )
    for i, alias in enumerate(spec.host_aliases):
        p = f"{path}.hostAliases[{i}]"
        causes.extend(_validate_ip(alias.ip, f"{p}.ip"))
        for j, hostname in enumerate(alias.hostnames):
            causes.extend(
                invalid(f"{p}.hostnames[{j}]", hostname, m) for m in is_dns1123_subdomain(hostname)
            )
    if "security_context" in present:
        causes.extend(
            _validate_pod_security_context(spec.security_context, f"{path}.securityContext")
        )
    if "os" in present:
        if not spec.os.name:
            causes.append(required(f"{path}.os.name"))
        elif spec.os.name not in OS_NAMES:
            causes.append(not_supported(f"{path}.os.name", spec.os.name, OS_NAMES))
    if "topology_spread_constraints" in present:
        causes.extend(
            validate_topology_spread_constraints(
                spec.topology_spread_constraints, f"{path}.topologySpreadConstraints"
            )
        )
    if "host_network" in present:
        causes.extend(_validate_host_network_ports(spec, path))
    return causes


def _validate_container(
    c: types_pb2.Container,
    path: str,
    *,
    init: bool,
    pod_restart_policy: str,
    volumes: Mapping[str, types_pb2.Volume],
    grace: int | None,
) -> list[Cause]:
    causes: list[Cause] = []
    if not c.name:
        causes.append(required(f"{path}.name"))
    else:
        causes.extend(invalid(f"{path}.name", c.name, m) for m in is_dns1123_label(c.name))
    if not c.image:
        causes.append(required(f"{path}.image"))
    elif c.image.strip() != c.image:
        causes.append(
            invalid(f"{path}.image", c.image, "must not have leading or trailing whitespace")
        )
    if c.HasField("resources"):
        causes.extend(validate_resource_requirements(c.resources, f"{path}.resources"))
    causes.extend(
        validate_resize_policy(c.resize_policy, f"{path}.resizePolicy", pod_restart_policy)
    )
    sidecar = False
    if c.HasField("restart_policy"):
        allowed = ("Always",) if init else RESTART_POLICIES
        if c.restart_policy not in allowed:
            causes.append(not_supported(f"{path}.restartPolicy", c.restart_policy, allowed))
        sidecar = init and c.restart_policy == "Always"
    if c.image_pull_policy and c.image_pull_policy not in IMAGE_PULL_POLICIES:
        causes.append(
            not_supported(f"{path}.imagePullPolicy", c.image_pull_policy, IMAGE_PULL_POLICIES)
        )
    if c.termination_message_policy and (
        c.termination_message_policy not in TERMINATION_MESSAGE_POLICIES
    ):
        causes.append(
            not_supported(
                f"{path}.terminationMessagePolicy",
                c.termination_message_policy,
                TERMINATION_MESSAGE_POLICIES,
            )
        )
    # Everything below is absent from most pods: one ListFields tells what to look at.
    present = {fd.name for fd, _ in c.ListFields()}
    if "ports" in present:
        causes.extend(_validate_container_ports(c.ports, f"{path}.ports"))
    if "env" in present:
        causes.extend(_validate_env(c.env, f"{path}.env"))
    if "env_from" in present:
        causes.extend(_validate_env_from(c.env_from, f"{path}.envFrom"))
    if "volume_mounts" in present or "volume_devices" in present:
        causes.extend(_validate_volume_mounts(c, f"{path}.volumeMounts", volumes))
    for field, json_name, kind in (
        ("liveness_probe", "livenessProbe", "liveness"),
        ("readiness_probe", "readinessProbe", "readiness"),
        ("startup_probe", "startupProbe", "startup"),
    ):
        if field not in present:
            continue
        if init and not sidecar:
            causes.append(forbidden(f"{path}.{json_name}", _NOT_FOR_INIT))
        else:
            causes.extend(_validate_probe(getattr(c, field), f"{path}.{json_name}", kind, grace))
    if "lifecycle" in present:
        lp = f"{path}.lifecycle"
        if init and not sidecar:
            causes.append(forbidden(lp, _NOT_FOR_INIT))
        else:
            for field, json_name in (("post_start", "postStart"), ("pre_stop", "preStop")):
                if c.lifecycle.HasField(field):
                    causes.extend(
                        _validate_handler(getattr(c.lifecycle, field), f"{lp}.{json_name}", grace)
                    )
    if "security_context" in present:
        causes.extend(_validate_security_context(c.security_context, f"{path}.securityContext"))
    return causes


def _validate_group_reference(spec: types_pb2.PodSpec, path: str) -> list[Cause]:
    """The pod's reference to its group (GenericWorkload): 1.36+'s spec.schedulingGroup, a
    union whose one member podGroupName is a DNS subdomain; 1.35's spec.workloadRef, the
    Workload's name (DNS subdomain), its podGroup (DNS label) and podGroupReplicaKey (DNS
    label when set). Which of the two a version has is the strategy's
    (podgroups.drop_disabled_pod_scheduling_group); both are immutable as the rest of a
    pod's spec."""
    causes: list[Cause] = []
    if spec.HasField("scheduling_group"):
        p = f"{path}.schedulingGroup"
        group = spec.scheduling_group
        if not group.HasField("pod_group_name"):
            causes.append(required(p, "must specify one of: `podGroupName`"))
        else:
            causes += [
                invalid(f"{p}.podGroupName", group.pod_group_name, m)
                for m in is_dns1123_subdomain(group.pod_group_name)
            ]
    if spec.HasField("workload_ref"):
        p = f"{path}.workloadRef"
        ref = spec.workload_ref
        for name, value, check in (
            ("name", ref.name, is_dns1123_subdomain),
            ("podGroup", ref.pod_group, is_dns1123_label),
        ):
            if not value:
                causes.append(required(f"{p}.{name}"))
            else:
                causes += [invalid(f"{p}.{name}", value, m) for m in check(value)]
        if ref.pod_group_replica_key:
            causes += [
                invalid(f"{p}.podGroupReplicaKey", ref.pod_group_replica_key, m)
                for m in is_dns1123_label(ref.pod_group_replica_key)
            ]
    return causes


def validate_pod_spec(spec: types_pb2.PodSpec, path: str = "spec") -> list[Cause]:
    causes: list[Cause] = _validate_group_reference(spec, path)
    if spec.restart_policy and spec.restart_policy not in RESTART_POLICIES:
        causes.append(not_supported(f"{path}.restartPolicy", spec.restart_policy, RESTART_POLICIES))
    if not spec.containers:
        causes.append(required(f"{path}.containers"))
    volumes: dict[str, types_pb2.Volume] = {}
    if spec.volumes:
        volumes, errs = validate_volumes(spec.volumes, f"{path}.volumes")
        causes.extend(errs)
    grace = (
        spec.termination_grace_period_seconds
        if spec.HasField("termination_grace_period_seconds")
        else None
    )
    names: set[str] = set()
    for field, json_name, init in (
        ("init_containers", "initContainers", True),
        ("containers", "containers", False),
    ):
        containers = getattr(spec, field)
        for i, c in enumerate(containers):
            p = f"{path}.{json_name}[{i}]"
            causes.extend(
                _validate_container(
                    c,
                    p,
                    init=init,
                    pod_restart_policy=spec.restart_policy,
                    volumes=volumes,
                    grace=grace,
                )
            )
            if c.name and c.name in names:
                causes.append(duplicate(f"{p}.name", c.name))
            names.add(c.name)
        if any(c.ports for c in containers):
            causes.extend(_host_port_conflicts(containers, f"{path}.{json_name}"))
    # DRA: the pod's claims, and each container's claims naming one of them.
    causes.extend(validate_pod_resource_claims(spec.resource_claims, f"{path}.resourceClaims"))
    pod_claims = {c.name for c in spec.resource_claims if c.name}
    for field, json_name in (("init_containers", "initContainers"), ("containers", "containers")):
        for i, c in enumerate(getattr(spec, field)):
            if c.resources.claims:
                causes.extend(
                    validate_container_claims(
                        c.resources.claims, pod_claims, f"{path}.{json_name}[{i}].resources.claims"
                    )
                )
    causes.extend(_validate_pod_fields(spec, path))
    if spec.node_name:
        causes.extend(
            invalid(f"{path}.nodeName", spec.node_name, m)
            for m in name_is_dns_subdomain(spec.node_name)
        )
    if spec.scheduler_name:
        causes.extend(
            invalid(f"{path}.schedulerName", spec.scheduler_name, m)
            for m in is_dns1123_subdomain(spec.scheduler_name)
        )
    if spec.priority_class_name:
        causes.extend(
            invalid(f"{path}.priorityClassName", spec.priority_class_name, m)
            for m in name_is_dns_subdomain(spec.priority_class_name)
        )
    if spec.HasField("preemption_policy"):
        causes.extend(
            validate_preemption_policy(spec.preemption_policy, f"{path}.preemptionPolicy")
        )
    if (
        spec.HasField("termination_grace_period_seconds")
        and spec.termination_grace_period_seconds < 0
    ):
        causes.append(
            invalid(
                f"{path}.terminationGracePeriodSeconds",
                spec.termination_grace_period_seconds,
                NEGATIVE_ERROR,
            )
        )
    causes.extend(validate_labels(spec.node_selector, f"{path}.nodeSelector"))
    if spec.HasField("affinity"):
        causes.extend(validate_affinity(spec.affinity, f"{path}.affinity"))
    causes.extend(validate_tolerations(spec.tolerations, f"{path}.tolerations"))
    causes.extend(validate_scheduling_gates(spec.scheduling_gates, f"{path}.schedulingGates"))
    causes.extend(
        validate_resource_list(
            spec.overhead,
            f"{path}.overhead",
            standard=_POD_LEVEL_RESOURCES,
            what="must be a standard resource type or fully qualified",
        )
    )
    if spec.HasField("resources"):
        pod_level = validate_resource_requirements(
            spec.resources,
            f"{path}.resources",
            standard=_POD_LEVEL_RESOURCES,
            what="must be a supported pod-level resource",
        )
        causes.extend(pod_level or _validate_pod_resource_consistency(spec, path))
    return causes


def _validate_pod_resource_consistency(spec: types_pb2.PodSpec, path: str) -> list[Cause]:
    """A pod-level request covers what the containers request together (upstream
    validatePodResourceConsistency's first rule: the containers aggregated as
    AggregateContainerRequests does, sidecars and init containers included, no overhead).
    Called once the pod-level quantities are known to be valid; a container's invalid
    quantity is reported by the containers' own validation, not here. (Not modelled: its
    hugepage-limit and container-limit rules.)"""
    try:
        aggregate = pod_requests(types_pb2.Pod(spec=spec), _CONTAINERS_ONLY)
    except Invalid:
        return []
    causes: list[Cause] = []
    for name, text in sorted(spec.resources.requests.items()):
        total = aggregate.get(name)
        if total is not None and total > to_int(name, text):
            causes.append(
                invalid(
                    f"{path}.resources.requests[{name}]",
                    text,
                    "must be greater than or equal to aggregate container requests of "
                    f"{from_int(name, total)}",
                )
            )
    return causes


_CONTAINERS_ONLY: Final = PodResourcesOptions(exclude_overhead=True, pod_level_resources=False)
"""The containers' requests aggregated: no status, no pod-level values, no overhead."""


def validate_pod(pod: types_pb2.Pod) -> list[Cause]:
    causes = _validate_pod_metadata(pod)
    causes.extend(_validate_pod_spec_cached(pod.spec.SerializeToString(deterministic=True)))
    causes.extend(
        validate_generated_claim_names(
            pod.metadata.name, pod.spec.resource_claims, "spec.resourceClaims"
        )
    )
    causes.extend(_validate_pod_status(pod))
    return causes


def validate_pod_status_update(new: types_pb2.Pod, old: types_pb2.Pod) -> list[Cause]:
    """A pods/status write (upstream ValidatePodStatusUpdate): the metadata and status rules
    and the QoS class that no update changes. The spec is not validated again: the status
    strategy keeps the stored one (podStatusStrategy.PrepareForUpdate), so it is `old`'s."""
    causes = _validate_pod_metadata(new)
    causes.extend(_validate_pod_status(new))
    causes.extend(_validate_qos_class_unchanged(new, old))
    return causes


def _validate_pod_metadata(pod: types_pb2.Pod) -> list[Cause]:
    causes = validate_object_meta(pod.metadata, namespaced=True)
    causes.extend(validate_usage_annotations(pod.metadata.annotations))
    return causes


def _validate_pod_status(pod: types_pb2.Pod) -> list[Cause]:
    causes: list[Cause] = []
    if pod.status.nominated_node_name:
        causes.extend(
            invalid("status.nominatedNodeName", pod.status.nominated_node_name, m)
            for m in name_is_dns_subdomain(pod.status.nominated_node_name)
        )
    for path, ips in (
        ("status.podIPs", pod.status.pod_ips),
        ("status.hostIPs", pod.status.host_ips),
    ):
        causes.extend(
            validate_dual_stack(
                [p.ip for p in ips], path, parse=ipaddress.ip_address, what="IP address"
            )
        )
    return causes


def validate_usage_annotations(annotations: Mapping[str, str]) -> list[Cause]:
    """kemu's simulated-usage annotations (`kemu.machinery.usage`) must be non-negative
    quantities, so that a typo is refused at the write rather than silently ignored by
    `kubectl top`."""
    causes = []
    for key in USAGE_ANNOTATIONS:
        if key not in annotations:
            continue
        path, value = f"metadata.annotations[{key}]", annotations[key]
        try:
            negative = parse_quantity(value).sign() < 0
        except Invalid:
            causes.append(invalid(path, value, f"must be a quantity ({ERR_FORMAT})"))
            continue
        if negative:
            causes.append(invalid(path, value, NEGATIVE_ERROR))
    return causes


@functools.lru_cache(maxsize=1024)
def _validate_pod_spec_cached(spec: bytes) -> tuple[Cause, ...]:
    """validate_pod_spec depends on the spec alone: pods of one workload share a spec, so the
    apiserver validates each distinct spec once (Causes are immutable)."""
    return tuple(validate_pod_spec(types_pb2.PodSpec.FromString(spec)))


_POD_UPDATE_FORBIDDEN: Final = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)


def _toleration_key(t: types_pb2.Toleration) -> tuple[str, str, str, str]:
    return (t.key, t.operator or "Equal", t.value, t.effect)


def _validate_qos_class_unchanged(new: types_pb2.Pod, old: types_pb2.Pod) -> list[Cause]:
    if new.status.qos_class != old.status.qos_class:
        return [invalid("status.qosClass", new.status.qos_class, "field is immutable")]
    return []


def validate_pod_update(new: types_pb2.Pod, old: types_pb2.Pod) -> list[Cause]:
    """The spec rules of a plain pod update (not binding, not resize), as ValidatePodUpdate,
    and the QoS class that no update changes (ValidatePodStatusUpdate)."""
    causes = _validate_qos_class_unchanged(new, old)
    munged = types_pb2.PodSpec()
    munged.CopyFrom(old.spec)
    # Images may change.
    for field in ("containers", "init_containers"):
        old_cs, new_cs = getattr(munged, field), getattr(new.spec, field)
        if len(old_cs) == len(new_cs):
            for o, n in zip(old_cs, new_cs, strict=True):
                o.image = n.image
    # Tolerations: only additions; an existing one may change only its tolerationSeconds.
    new_keys = {_toleration_key(t) for t in new.spec.tolerations}
    for i, t in enumerate(old.spec.tolerations):
        if _toleration_key(t) not in new_keys:
            causes.append(
                forbidden(
                    f"spec.tolerations[{i}]",
                    "existing toleration can not be modified except its tolerationSeconds",
                )
            )
    del munged.tolerations[:]
    munged.tolerations.extend(new.spec.tolerations)
    # A negative grace period may be raised to 1.
    if (
        old.spec.HasField("termination_grace_period_seconds")
        and old.spec.termination_grace_period_seconds < 0
        and new.spec.termination_grace_period_seconds == 1
    ):
        munged.termination_grace_period_seconds = 1
    # Scheduling gates may only be removed; while gated, nodeSelector may only grow.
    old_gates = {g.name for g in old.spec.scheduling_gates}
    for gate in new.spec.scheduling_gates:
        if gate.name not in old_gates:
            causes.append(
                forbidden(
                    "spec.schedulingGates",
                    f"only deletion is allowed, but found new scheduling gate '{gate.name}'",
                )
            )
    del munged.scheduling_gates[:]
    munged.scheduling_gates.extend(new.spec.scheduling_gates)
    if old_gates and dict(new.spec.node_selector) != dict(old.spec.node_selector):
        if all(new.spec.node_selector.get(k) == v for k, v in old.spec.node_selector.items()):
            munged.node_selector.clear()
            munged.node_selector.update(new.spec.node_selector)
        else:
            causes.append(
                forbidden(
                    "spec.nodeSelector",
                    "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
                )
            )
            munged.node_selector.clear()
            munged.node_selector.update(new.spec.node_selector)
    if munged != new.spec:
        causes.append(forbidden("spec", _POD_UPDATE_FORBIDDEN))
    return causes
