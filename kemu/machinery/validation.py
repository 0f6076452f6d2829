"""API validation, after k8s.io/kubernetes/pkg/apis/*/validation and apimachinery's util/validation.

Every check returns a list of `Cause`s: `field` is the upstream field path
(spec.containers[0].resources.requests[cpu]) and `message` is the body upstream's field.Error
prints after the path (`Invalid value: "-1": must be greater than or equal to 0`,
`Required value`, `Unsupported value: "X": supported values: "A", "B"`, `Duplicate value: "c"`,
`Forbidden: ...`). The apiserver turns a non-empty list into `Invalid.from_causes(...)`.

`validate_object(obj, old=...)` validates one object of any kind (with `old`, also the update
rules of the main resource). Subresources that change what a plain update may not (binding sets
spec.nodeName, resize changes container resources) validate the new object without `old` and
apply their own rules.

Defaulting is not done here: an object is valid with fields left empty that upstream defaults
(restartPolicy, preemptionPolicy). Namespaced kinds need metadata.namespace: the apiserver fills
it from the request before validating. A name may be empty when generateName is set: the
apiserver generates the name.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause, Invalid
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING
from kemu.machinery.quantity import NEGATIVE_ERROR, Quantity, parse_quantity

# ---------------------------------------------------------------- error bodies (field.Error)


def _show(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value))


def required(path: str, detail: str = "") -> Cause:
    return Cause(path, f"Required value: {detail}" if detail else "Required value")


def invalid(path: str, value: object, detail: str) -> Cause:
    return Cause(path, f"Invalid value: {_show(value)}: {detail}")


def not_supported(path: str, value: object, supported: Iterable[str]) -> Cause:
    options = ", ".join(json.dumps(s) for s in supported)
    return Cause(path, f"Unsupported value: {_show(value)}: supported values: {options}")


def duplicate(path: str, value: object, detail: str = "") -> Cause:
    body = f"Duplicate value: {_show(value)}"
    return Cause(path, f"{body}: {detail}" if detail else body)


def forbidden(path: str, detail: str) -> Cause:
    return Cause(path, f"Forbidden: {detail}")


def too_long(path: str, max_bytes: int) -> Cause:
    return Cause(path, f"Too long: must have at most {max_bytes} bytes")


def too_many(path: str, actual: int, max_items: int) -> Cause:
    return Cause(path, f"Too many: {actual}: must have at most {max_items} items")


def raise_if_invalid(what: str, causes: list[Cause]) -> None:
    """Raises Invalid naming `what` (`Pod "p"`) when there are causes."""
    if causes:
        raise Invalid.from_causes(what, causes)


# ---------------------------------------------------------------- names (util/validation)

DNS1123_LABEL_MAX_LENGTH: Final = 63
DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253
QUALIFIED_NAME_MAX_LENGTH: Final = 63
LABEL_VALUE_MAX_LENGTH: Final = 63
TOTAL_ANNOTATION_SIZE_LIMIT: Final = 256 * 1024
MAX_OBJECT_SIZE: Final = 1_572_864  # etcd's default request limit, 1.5 MiB

_DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT: Final = _DNS1123_LABEL_FMT + r"(\." + _DNS1123_LABEL_FMT + ")*"
_QUALIFIED_NAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT: Final = "(" + _QUALIFIED_NAME_FMT + ")?"
_DNS1123_LABEL_RE: Final = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE: Final = re.compile(_DNS1123_SUBDOMAIN_FMT)
_QUALIFIED_NAME_RE: Final = re.compile(_QUALIFIED_NAME_FMT)
_LABEL_VALUE_RE: Final = re.compile(_LABEL_VALUE_FMT)
_PERCENT_RE: Final = re.compile("[0-9]+%")


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    shown = ",  or ".join(f"'{e}'" for e in examples)
    return f"{msg} (e.g. {shown}, regex used for validation is '{fmt}')"


def _max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


_DNS1123_LABEL_ERROR: Final = _regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character",
    _DNS1123_LABEL_FMT,
    "my-name",
    "123-abc",
)
_DNS1123_SUBDOMAIN_ERROR: Final = _regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character",
    _DNS1123_SUBDOMAIN_FMT,
    "example.com",
)
_QUALIFIED_NAME_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_QUALIFIED_NAME_ERROR: Final = _regex_error(
    _QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"
)
_LABEL_VALUE_ERROR: Final = _regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character",
    _LABEL_VALUE_FMT,
    "MyValue",
    "my_value",
    "12345",
)


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(_max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        errs.append(_DNS1123_LABEL_ERROR)
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(_max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(_DNS1123_SUBDOMAIN_ERROR)
    return errs


def is_qualified_name(value: str) -> list[str]:
    """A label key, annotation key, resource name: `[prefix/]name`, prefix a DNS subdomain."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend(f"prefix part {m}" for m in is_dns1123_subdomain(prefix))
    else:
        return [
            f"a qualified name {_QUALIFIED_NAME_ERROR} with an optional DNS subdomain prefix "
            "and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append(f"name part {_max_len_error(QUALIFIED_NAME_MAX_LENGTH)}")
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        errs.append(f"name part {_QUALIFIED_NAME_ERROR}")
    return errs


is_label_key = is_qualified_name


def is_valid_label_value(value: str) -> list[str]:
    errs = []
    if len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(_max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(_LABEL_VALUE_ERROR)
    return errs


NameFn = Callable[[str, bool], list[str]]


def _mask_trailing_dash(name: str) -> str:
    return name[:-1] if len(name) > 1 and name.endswith("-") else name


def name_is_dns_subdomain(name: str, prefix: bool = False) -> list[str]:
    """Object names of pods, nodes, priority classes, PDBs, leases, events."""
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool = False) -> list[str]:
    """Namespace names."""
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


# ---------------------------------------------------------------- metadata


def validate_label_name(key: str, path: str) -> list[Cause]:
    return [invalid(path, key, m) for m in is_qualified_name(key)]


def validate_qualified_name(value: str, path: str) -> list[Cause]:
    return [invalid(path, value, m) for m in is_qualified_name(value)]


def validate_labels(labels: Mapping[str, str], path: str) -> list[Cause]:
    causes = []
    for key, value in sorted(labels.items()):
        causes.extend(validate_label_name(key, path))
        causes.extend(invalid(f"{path}[{key}]", value, m) for m in is_valid_label_value(value))
    return causes


def validate_annotations(annotations: Mapping[str, str], path: str) -> list[Cause]:
    causes: list[Cause] = []
    total = 0
    for key, value in sorted(annotations.items()):
        causes.extend(invalid(path, key, m) for m in is_qualified_name(key.lower()))
        total += len(key.encode()) + len(value.encode())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return causes


def validate_object_meta(
    meta: types_pb2.ObjectMeta,
    *,
    namespaced: bool,
    name_fn: NameFn = name_is_dns_subdomain,
    path: str = "metadata",
) -> list[Cause]:
    causes: list[Cause] = []
    if meta.generate_name:
        causes.extend(
            invalid(f"{path}.generateName", meta.generate_name, m)
            for m in name_fn(meta.generate_name, True)
        )
    if meta.name:
        causes.extend(invalid(f"{path}.name", meta.name, m) for m in name_fn(meta.name, False))
    elif not meta.generate_name:
        causes.append(required(f"{path}.name", "name or generateName is required"))
    if namespaced:
        if not meta.namespace:
            causes.append(required(f"{path}.namespace"))
        else:
            causes.extend(
                invalid(f"{path}.namespace", meta.namespace, m)
                for m in name_is_dns_label(meta.namespace)
            )
    elif meta.namespace:
        causes.append(forbidden(f"{path}.namespace", "not allowed on this type"))
    causes.extend(validate_labels(meta.labels, f"{path}.labels"))
    causes.extend(validate_annotations(meta.annotations, f"{path}.annotations"))
    return causes


def validate_object_meta_update(
    new: types_pb2.ObjectMeta, old: types_pb2.ObjectMeta, path: str = "metadata"
) -> list[Cause]:
    causes = []
    for field, json_name in (("name", "name"), ("namespace", "namespace"), ("uid", "uid")):
        before, after = getattr(old, field), getattr(new, field)
        if before and after != before:
            causes.append(invalid(f"{path}.{json_name}", after, "field is immutable"))
    return causes


def validate_object_size(serialized_len: int, *, name: str = "") -> list[Cause]:
    """Objects larger than etcd's default request limit (1.5 MiB) cannot be stored."""
    if serialized_len <= MAX_OBJECT_SIZE:
        return []
    return [
        Cause(
            "metadata.name" if name else "<root>",
            f"Too long: object is too large ({serialized_len} bytes, "
            f"at most {MAX_OBJECT_SIZE} bytes)",
        )
    ]


# ---------------------------------------------------------------- label selectors


_SELECTOR_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")


def validate_label_selector(selector: types_pb2.LabelSelector, path: str) -> list[Cause]:
    causes = validate_labels(selector.match_labels, f"{path}.matchLabels")
    for i, expr in enumerate(selector.match_expressions):
        p = f"{path}.matchExpressions[{i}]"
        if expr.operator in ("In", "NotIn"):
            if not expr.values:
                causes.append(
                    required(f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'")
                )
        elif expr.operator in ("Exists", "DoesNotExist"):
            if expr.values:
                causes.append(
                    forbidden(
                        f"{p}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            causes.append(invalid(f"{p}.operator", expr.operator, "not a valid selector operator"))
        causes.extend(validate_label_name(expr.key, f"{p}.key"))
        for j, value in enumerate(expr.values):
            causes.extend(
                invalid(f"{p}.values[{j}]", value, m) for m in is_valid_label_value(value)
            )
    return causes


# ---------------------------------------------------------------- resources

_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_POD_LEVEL_RESOURCES: Final = frozenset({"cpu", "memory"})
_NODE_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage", "pods", "storage"})
_INTEGER_RESOURCES: Final = frozenset({"pods"})


def _is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended_resource(name: str) -> bool:
    """`example.com/gpu`: a qualified name outside the kubernetes.io domain."""
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return not is_qualified_name(f"requests.{name}")


def _overcommit_allowed(name: str) -> bool:
    return is_native_resource(name) and not _is_hugepages(name)


def _validate_resource_name(
    name: str, path: str, standard: frozenset[str], what: str
) -> list[Cause]:
    causes = validate_qualified_name(name, path)
    if causes:
        return causes
    if "/" not in name:
        if name not in standard and not _is_hugepages(name):
            causes.append(invalid(path, name, what))
    elif not is_native_resource(name) and not is_extended_resource(name):
        causes.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return causes


def validate_resource_quantity(
    name: str, text: str, path: str
) -> tuple[Quantity | None, list[Cause]]:
    """Parses one resource value: a valid, non-negative quantity, an integer where it must be."""
    try:
        q = parse_quantity(text, path)
    except Invalid as e:
        return None, list(e.causes)
    if q.sign() < 0:
        return q, [invalid(path, text, NEGATIVE_ERROR)]
    if (name in _INTEGER_RESOURCES or is_extended_resource(name)) and q.milli_value() % 1000:
        return q, [invalid(path, text, "must be an integer")]
    return q, []


def validate_resource_requirements(
    resources: types_pb2.ResourceRequirements,
    path: str,
    *,
    standard: frozenset[str] = _CONTAINER_RESOURCES,
    what: str = "must be a standard resource for containers",
) -> list[Cause]:
    causes: list[Cause] = []
    limits: dict[str, Quantity] = {}
    for name, text in sorted(resources.limits.items()):
        p = f"{path}.limits[{name}]"
        causes.extend(_validate_resource_name(name, p, standard, what))
        q, errs = validate_resource_quantity(name, text, p)
        causes.extend(errs)
        if q is not None:
            limits[name] = q
    for name, text in sorted(resources.requests.items()):
        p = f"{path}.requests[{name}]"
        causes.extend(_validate_resource_name(name, p, standard, what))
        q, errs = validate_resource_quantity(name, text, p)
        causes.extend(errs)
        if q is None:
            continue
        limit = limits.get(name)
        if limit is not None:
            if q != limit and not _overcommit_allowed(name):
                causes.append(invalid(p, str(q), f"must be equal to {name} limit of {limit}"))
            elif q > limit:
                causes.append(
                    invalid(p, str(q), f"must be less than or equal to {name} limit of {limit}")
                )
        elif not _overcommit_allowed(name) and name not in resources.limits:
            causes.append(
                required(f"{path}.limits", "Limit must be set for non overcommitable resources")
            )
    return causes


def validate_resource_list(
    resources: Mapping[str, str],
    path: str,
    *,
    standard: frozenset[str] = _NODE_RESOURCES,
    what: str = "must be a standard resource type or fully qualified",
    key_style: bool = True,
) -> list[Cause]:
    """Capacity, allocatable, overhead: valid names, valid non-negative quantities."""
    causes = []
    for name, text in sorted(resources.items()):
        p = f"{path}[{name}]" if key_style else f"{path}.{name}"
        causes.extend(_validate_resource_name(name, p, standard, what))
        causes.extend(validate_resource_quantity(name, text, p)[1])
    return causes


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


def validate_affinity(affinity: types_pb2.Affinity, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if affinity.HasField("node_affinity"):
        na = affinity.node_affinity
        p = f"{path}.nodeAffinity"
        if na.HasField("required_during_scheduling_ignored_during_execution"):
            rp = f"{p}.requiredDuringSchedulingIgnoredDuringExecution"
            terms = na.required_during_scheduling_ignored_during_execution.node_selector_terms
            if not terms:
                causes.append(
                    required(f"{rp}.nodeSelectorTerms", "must have at least one node selector term")
                )
            for i, term in enumerate(terms):
                causes.extend(_validate_node_selector_term(term, f"{rp}.nodeSelectorTerms[{i}]"))
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


def _validate_container(
    c: types_pb2.Container, path: str, *, init: bool, pod_restart_policy: str
) -> list[Cause]:
    causes: list[Cause] = []
    if not c.name:
        causes.append(required(f"{path}.name"))
    else:
        causes.extend(invalid(f"{path}.name", c.name, m) for m in is_dns1123_label(c.name))
    if c.HasField("resources"):
        causes.extend(validate_resource_requirements(c.resources, f"{path}.resources"))
    causes.extend(
        validate_resize_policy(c.resize_policy, f"{path}.resizePolicy", pod_restart_policy)
    )
    if c.HasField("restart_policy"):
        allowed = ("Always",) if init else RESTART_POLICIES
        if c.restart_policy not in allowed:
            causes.append(not_supported(f"{path}.restartPolicy", c.restart_policy, allowed))
    return causes


def validate_pod_spec(spec: types_pb2.PodSpec, path: str = "spec") -> list[Cause]:
    causes: list[Cause] = []
    if spec.restart_policy and spec.restart_policy not in RESTART_POLICIES:
        causes.append(not_supported(f"{path}.restartPolicy", spec.restart_policy, RESTART_POLICIES))
    if not spec.containers:
        causes.append(required(f"{path}.containers"))
    names: set[str] = set()
    for field, json_name, init in (
        ("init_containers", "initContainers", True),
        ("containers", "containers", False),
    ):
        for i, c in enumerate(getattr(spec, field)):
            p = f"{path}.{json_name}[{i}]"
            causes.extend(
                _validate_container(c, p, init=init, pod_restart_policy=spec.restart_policy)
            )
            if c.name and c.name in names:
                causes.append(duplicate(f"{p}.name", c.name))
            names.add(c.name)
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
        causes.extend(
            validate_resource_requirements(
                spec.resources,
                f"{path}.resources",
                standard=_POD_LEVEL_RESOURCES,
                what="must be a supported pod-level resource",
            )
        )
    return causes


def validate_pod(pod: types_pb2.Pod) -> list[Cause]:
    causes = validate_object_meta(pod.metadata, namespaced=True)
    causes.extend(_validate_pod_spec_cached(pod.spec.SerializeToString(deterministic=True)))
    if pod.status.nominated_node_name:
        causes.extend(
            invalid("status.nominatedNodeName", pod.status.nominated_node_name, m)
            for m in name_is_dns_subdomain(pod.status.nominated_node_name)
        )
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


def validate_pod_update(new: types_pb2.Pod, old: types_pb2.Pod) -> list[Cause]:
    """The spec rules of a plain pod update (not binding, not resize), as ValidatePodUpdate."""
    causes: list[Cause] = []
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


# ---------------------------------------------------------------- nodes

MAX_DISABLE_RESIZE_PREEMPTION: Final = 20


def validate_taints(taints: Sequence[types_pb2.Taint], path: str) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        p = f"{path}[{i}]"
        causes.extend(validate_label_name(taint.key, f"{p}.key"))
        errs = is_valid_label_value(taint.value)
        if errs:
            causes.append(invalid(f"{p}.value", taint.value, ";".join(errs)))
        causes.extend(validate_taint_effect(taint.effect, f"{p}.effect", allow_empty=False))
        if (taint.key, taint.effect) in seen:
            causes.append(
                duplicate(
                    p, f"{taint.key}:{taint.effect}", "taints must be unique by key and effect pair"
                )
            )
        seen.add((taint.key, taint.effect))
    return causes


def validate_node(node: types_pb2.Node) -> list[Cause]:
    causes = validate_object_meta(node.metadata, namespaced=False)
    causes.extend(validate_taints(node.spec.taints, "spec.taints"))
    owners = node.spec.pod_preemption_policy.disable_resize_preemption
    p = "spec.podPreemptionPolicy.disableResizePreemption"
    if len(owners) > MAX_DISABLE_RESIZE_PREEMPTION:
        causes.append(too_many(p, len(owners), MAX_DISABLE_RESIZE_PREEMPTION))
    seen: set[str] = set()
    for i, owner in enumerate(owners):
        causes.extend(validate_qualified_name(owner, f"{p}[{i}]"))
        if owner in seen:
            causes.append(duplicate(f"{p}[{i}]", owner))
        seen.add(owner)
    for field in ("capacity", "allocatable"):
        causes.extend(
            validate_resource_list(getattr(node.status, field), f"status.{field}", key_style=False)
        )
    return causes


def validate_node_update(new: types_pb2.Node, old: types_pb2.Node) -> list[Cause]:
    if old.spec.pod_cidr and new.spec.pod_cidr != old.spec.pod_cidr:
        return [
            forbidden("spec.podCIDR", 'node updates may not change podCIDR except from "" to valid')
        ]
    return []


# ---------------------------------------------------------------- priority classes

HIGHEST_USER_DEFINABLE_PRIORITY: Final = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY: Final = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
SYSTEM_PRIORITY_CLASS_PREFIX: Final = "system-"
SYSTEM_PRIORITY_CLASSES: Final[dict[str, int]] = {
    "system-node-critical": SYSTEM_CRITICAL_PRIORITY + 1000,
    "system-cluster-critical": SYSTEM_CRITICAL_PRIORITY,
}


def _system_priority_class_error(pc: types_pb2.PriorityClass) -> str | None:
    value = SYSTEM_PRIORITY_CLASSES.get(pc.metadata.name)
    if value is None:
        return f"{pc.metadata.name} is not a known system priority class"
    if pc.value != value:
        return f"value of {pc.metadata.name} PriorityClass must be {value}"
    if pc.global_default:
        return f"globalDefault of {pc.metadata.name} PriorityClass must be false"
    return None


def validate_priority_class(pc: types_pb2.PriorityClass) -> list[Cause]:
    causes = validate_object_meta(pc.metadata, namespaced=False)
    if pc.metadata.name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        err = _system_priority_class_error(pc)
        if err is not None:
            causes.append(
                forbidden(
                    "metadata.name",
                    "priority class names with 'system-' prefix are reserved for system use "
                    f"only. error: {err}",
                )
            )
    elif pc.value > HIGHEST_USER_DEFINABLE_PRIORITY:
        causes.append(
            forbidden(
                "value",
                f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        )
    if pc.HasField("preemption_policy"):
        causes.extend(validate_preemption_policy(pc.preemption_policy, "preemptionPolicy"))
    return causes


def validate_priority_class_update(
    new: types_pb2.PriorityClass, old: types_pb2.PriorityClass
) -> list[Cause]:
    causes = []
    if new.value != old.value:
        causes.append(forbidden("value", "may not be changed in an update."))
    before = old.preemption_policy if old.HasField("preemption_policy") else None
    after = new.preemption_policy if new.HasField("preemption_policy") else None
    if before != after:
        causes.append(invalid("preemptionPolicy", after, "field is immutable"))
    return causes


# ---------------------------------------------------------------- pod disruption budgets

UNHEALTHY_POD_EVICTION_POLICIES: Final = ("AlwaysAllow", "IfHealthyBudget")


def _validate_int_or_percent(value: types_pb2.IntOrString, path: str) -> list[Cause]:
    which = value.WhichOneof("value")
    if which == "int_val":
        if value.int_val < 0:
            return [invalid(path, value.int_val, NEGATIVE_ERROR)]
        return []
    text = value.str_val
    if not _PERCENT_RE.fullmatch(text):
        return [
            invalid(
                path,
                text,
                _regex_error(
                    "a valid percent string must be a numeric string followed by an ending '%'",
                    "[0-9]+%",
                    "1%",
                    "93%",
                ),
            )
        ]
    if int(text[:-1]) > 100:
        return [invalid(path, text, "must not be greater than 100%")]
    return []


def validate_pod_disruption_budget(pdb: types_pb2.PodDisruptionBudget) -> list[Cause]:
    causes = validate_object_meta(pdb.metadata, namespaced=True)
    spec = pdb.spec
    has_min = spec.HasField("min_available") and spec.min_available.WhichOneof("value") is not None
    has_max = (
        spec.HasField("max_unavailable") and spec.max_unavailable.WhichOneof("value") is not None
    )
    if has_min and has_max:
        causes.append(
            invalid(
                "spec.minAvailable",
                _int_or_string(spec.min_available),
                "minAvailable and maxUnavailable cannot be both set",
            )
        )
    elif not has_min and not has_max:
        # Upstream policy/v1 accepts neither; kemu requires one so a budget always means
        # something definite.
        causes.append(
            required("spec.minAvailable", "one of minAvailable or maxUnavailable must be set")
        )
    if has_min:
        causes.extend(_validate_int_or_percent(spec.min_available, "spec.minAvailable"))
    if has_max:
        causes.extend(_validate_int_or_percent(spec.max_unavailable, "spec.maxUnavailable"))
    if spec.HasField("selector"):
        causes.extend(validate_label_selector(spec.selector, "spec.selector"))
    if spec.unhealthy_pod_eviction_policy and (
        spec.unhealthy_pod_eviction_policy not in UNHEALTHY_POD_EVICTION_POLICIES
    ):
        causes.append(
            not_supported(
                "spec.unhealthyPodEvictionPolicy",
                spec.unhealthy_pod_eviction_policy,
                UNHEALTHY_POD_EVICTION_POLICIES,
            )
        )
    return causes


def _int_or_string(value: types_pb2.IntOrString) -> object:
    return value.int_val if value.WhichOneof("value") == "int_val" else value.str_val


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


# ---------------------------------------------------------------- apps/v1 (ReplicaSet, Deployment)


def _validate_nonnegative(value: int, path: str) -> list[Cause]:
    return [invalid(path, value, NEGATIVE_ERROR)] if value < 0 else []


def _validate_positive_int_or_percent(value: types_pb2.IntOrString, path: str) -> list[Cause]:
    """apps ValidatePositiveIntOrPercent: a non-negative integer or a percentage (any size)."""
    which = value.WhichOneof("value")
    if which == "str_val":
        if not _PERCENT_RE.fullmatch(value.str_val):
            return [invalid(path, value.str_val, "must be an integer or percentage (e.g '5%')")]
        return []
    return _validate_nonnegative(value.int_val, path)


def _int_or_percent_value(value: types_pb2.IntOrString) -> int:
    if value.WhichOneof("value") == "str_val":
        text = value.str_val
        return int(text[:-1]) if _PERCENT_RE.fullmatch(text) else -1
    return value.int_val


def _validate_workload_selector_and_template(
    selector: types_pb2.LabelSelector | None, template: types_pb2.PodTemplateSpec | None
) -> list[Cause]:
    """The selector and template rules shared by ReplicaSet and Deployment specs (upstream
    ValidateReplicaSetSpec / ValidateDeploymentSpec and ValidatePodTemplateSpecForReplicaSet)."""
    # labels imports this module; importing it at the top would be circular.
    from kemu.machinery.labels import selector_from_label_selector

    causes: list[Cause] = []
    if selector is None:
        causes.append(required("spec.selector"))
    else:
        causes.extend(validate_label_selector(selector, "spec.selector"))
        if not selector.match_labels and not selector.match_expressions:
            causes.append(
                invalid("spec.selector", "{}", "empty selector is invalid for deployment")
            )
    if template is None:
        causes.append(required("spec.template"))
        return causes
    if selector is not None and not causes:
        try:
            parsed = selector_from_label_selector(selector, path="spec.selector")
        except Invalid:
            causes.append(invalid("spec.selector", "", "invalid label selector"))
        else:
            if not parsed.empty and not parsed.matches(template.metadata.labels):
                causes.append(
                    invalid(
                        "spec.template.metadata.labels",
                        dict(template.metadata.labels),
                        "`selector` does not match template `labels`",
                    )
                )
    causes.extend(validate_labels(template.metadata.labels, "spec.template.metadata.labels"))
    causes.extend(
        validate_annotations(template.metadata.annotations, "spec.template.metadata.annotations")
    )
    causes.extend(validate_pod_spec(template.spec, "spec.template.spec"))
    if template.spec.restart_policy != "Always":
        causes.append(
            not_supported(
                "spec.template.spec.restartPolicy", template.spec.restart_policy, ("Always",)
            )
        )
    return causes


def validate_replica_set(rs: types_pb2.ReplicaSet) -> list[Cause]:
    causes = validate_object_meta(rs.metadata, namespaced=True)
    spec = rs.spec
    causes.extend(_validate_nonnegative(spec.replicas, "spec.replicas"))
    causes.extend(_validate_nonnegative(spec.min_ready_seconds, "spec.minReadySeconds"))
    causes.extend(
        _validate_workload_selector_and_template(
            spec.selector if spec.HasField("selector") else None,
            spec.template if spec.HasField("template") else None,
        )
    )
    return causes


def _validate_deployment_strategy(strategy: types_pb2.DeploymentStrategy) -> list[Cause]:
    path = "spec.strategy"
    if strategy.type == "Recreate":
        if strategy.HasField("rolling_update"):
            return [
                forbidden(
                    f"{path}.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                )
            ]
        return []
    if strategy.type != "RollingUpdate":
        return [not_supported(f"{path}.type", strategy.type, ("Recreate", "RollingUpdate"))]
    if not strategy.HasField("rolling_update"):
        return [required(f"{path}.rollingUpdate", "this should be defaulted and never be nil")]
    ru = strategy.rolling_update
    p = f"{path}.rollingUpdate"
    causes = _validate_positive_int_or_percent(ru.max_unavailable, f"{p}.maxUnavailable")
    causes.extend(_validate_positive_int_or_percent(ru.max_surge, f"{p}.maxSurge"))
    if _int_or_percent_value(ru.max_unavailable) == 0 and _int_or_percent_value(ru.max_surge) == 0:
        causes.append(
            invalid(
                f"{p}.maxUnavailable",
                _int_or_string(ru.max_unavailable),
                "may not be 0 when `maxSurge` is 0",
            )
        )
    if (
        ru.max_unavailable.WhichOneof("value") == "str_val"
        and _int_or_percent_value(ru.max_unavailable) > 100
    ):
        causes.append(
            invalid(
                f"{p}.maxUnavailable", ru.max_unavailable.str_val, "must not be greater than 100%"
            )
        )
    return causes


def validate_deployment(d: types_pb2.Deployment) -> list[Cause]:
    causes = validate_object_meta(d.metadata, namespaced=True)
    spec = d.spec
    causes.extend(_validate_nonnegative(spec.replicas, "spec.replicas"))
    causes.extend(
        _validate_workload_selector_and_template(
            spec.selector if spec.HasField("selector") else None,
            spec.template if spec.HasField("template") else None,
        )
    )
    causes.extend(_validate_deployment_strategy(spec.strategy))
    causes.extend(_validate_nonnegative(spec.min_ready_seconds, "spec.minReadySeconds"))
    if spec.HasField("revision_history_limit"):
        causes.extend(
            _validate_nonnegative(spec.revision_history_limit, "spec.revisionHistoryLimit")
        )
    if spec.HasField("progress_deadline_seconds"):
        path = "spec.progressDeadlineSeconds"
        causes.extend(_validate_nonnegative(spec.progress_deadline_seconds, path))
        if spec.progress_deadline_seconds <= spec.min_ready_seconds:
            causes.append(
                invalid(
                    path, spec.progress_deadline_seconds, "must be greater than minReadySeconds"
                )
            )
    return causes


def validate_workload_update(
    new: types_pb2.ReplicaSet | types_pb2.Deployment,
    old: types_pb2.ReplicaSet | types_pb2.Deployment,
) -> list[Cause]:
    """apps/v1: the selector of a ReplicaSet or Deployment is immutable."""
    if new.spec.selector != old.spec.selector:
        return [invalid("spec.selector", "", "field is immutable")]
    return []


# ---------------------------------------------------------------- dispatch


def _no_update_rules(new: Message, old: Message) -> list[Cause]:
    return []


# Per kind: (validate, extra rules of an update). Validators take the concrete message type.
_VALIDATORS: Final[
    dict[str, tuple[Callable[[Any], list[Cause]], Callable[[Any, Any], list[Cause]]]]
] = {
    "kemu.api.v1.Pod": (validate_pod, validate_pod_update),
    "kemu.api.v1.Node": (validate_node, validate_node_update),
    "kemu.api.v1.PriorityClass": (validate_priority_class, validate_priority_class_update),
    "kemu.api.v1.PodDisruptionBudget": (validate_pod_disruption_budget, _no_update_rules),
    "kemu.api.v1.Lease": (validate_lease, _no_update_rules),
    "kemu.api.v1.Event": (validate_event, _no_update_rules),
    "kemu.api.v1.ReplicaSet": (validate_replica_set, validate_workload_update),
    "kemu.api.v1.Deployment": (validate_deployment, validate_workload_update),
}


def validate_object(obj: Message, *, old: Message | None = None) -> list[Cause]:
    """Validates an object of any kind; with `old`, also the rules of a main-resource update.

    Raises TypeError for a message that is not an API kind (a bug in the caller).
    """
    name = obj.DESCRIPTOR.full_name
    entry = _VALIDATORS.get(name)
    if entry is None:
        raise TypeError(f"validate_object: {name} is not an API kind")
    validate, validate_update = entry
    causes = validate(obj)
    if old is not None:
        if old.DESCRIPTOR.full_name != name:
            raise TypeError(f"validate_object: old is {old.DESCRIPTOR.full_name}, not {name}")
        causes.extend(
            validate_object_meta_update(
                obj.metadata,  # type: ignore[attr-defined]
                old.metadata,  # type: ignore[attr-defined]
            )
        )
        causes.extend(validate_update(obj, old))
    return causes
