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
import ipaddress
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause, Invalid
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING
from kemu.machinery.namespaces import NAMESPACE_ACTIVE, NAMESPACE_TERMINATING
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
    causes.extend(validate_owner_references(meta.owner_references, f"{path}.ownerReferences"))
    causes.extend(validate_finalizers(meta.finalizers, f"{path}.finalizers"))
    return causes


# The garbage collector's finalizers (kemu.machinery.delete_options has them with the policies;
# it imports this module).
_ORPHAN_FINALIZER: Final = "orphan"
_FOREGROUND_FINALIZER: Final = "foregroundDeletion"
BANNED_OWNERS: Final = frozenset({("v1", "Event")})
"""apiVersion/kind that may not own anything (upstream BannedOwners)."""


def validate_owner_references(refs: Sequence[types_pb2.OwnerReference], path: str) -> list[Cause]:
    """Every field set, no banned owner kind, at most one controller (upstream
    ValidateOwnerReferences: the paths carry no index, as upstream's)."""
    causes: list[Cause] = []
    controller = ""
    for ref in refs:
        version = ref.api_version.rsplit("/", 1)[-1]
        if not version:
            causes.append(
                invalid(f"{path}.apiVersion", ref.api_version, "version must not be empty")
            )
        if not ref.kind:
            causes.append(invalid(f"{path}.kind", ref.kind, "must not be empty"))
        if not ref.name:
            causes.append(invalid(f"{path}.name", ref.name, "must not be empty"))
        if not ref.uid:
            causes.append(invalid(f"{path}.uid", ref.uid, "must not be empty"))
        if (ref.api_version, ref.kind) in BANNED_OWNERS:
            causes.append(
                invalid(
                    path, f"{ref.kind}/{ref.name}", f"{ref.kind} is disallowed from being an owner"
                )
            )
        if ref.HasField("controller") and ref.controller:
            this = f"{ref.kind}/{ref.name}"
            if controller:
                causes.append(
                    invalid(
                        path,
                        this,
                        'Only one reference can have Controller set to true. Found "true" in '
                        f"references for {controller} and {this}",
                    )
                )
            else:
                controller = this
    return causes


def validate_finalizers(finalizers: Sequence[str], path: str) -> list[Cause]:
    """Qualified names; orphan and foregroundDeletion not both (upstream ValidateFinalizers)."""
    causes: list[Cause] = []
    for f in finalizers:
        causes.extend(invalid(path, f, m) for m in is_qualified_name(f))
    if _ORPHAN_FINALIZER in finalizers and _FOREGROUND_FINALIZER in finalizers:
        causes.append(
            invalid(
                path,
                ",".join(finalizers),
                f"finalizer {_ORPHAN_FINALIZER} and {_FOREGROUND_FINALIZER} cannot be both set",
            )
        )
    return causes


def validate_no_new_finalizers(
    new: types_pb2.ObjectMeta, old: types_pb2.ObjectMeta, path: str = "metadata"
) -> list[Cause]:
    """An object being deleted takes no new finalizers (upstream ValidateNoNewFinalizers)."""
    if not old.HasField("deletion_timestamp"):
        return []
    extra = sorted(set(new.finalizers) - set(old.finalizers))
    if not extra:
        return []
    shown = "[]string{" + ", ".join(json.dumps(f) for f in extra) + "}"
    return [
        forbidden(
            f"{path}.finalizers",
            "no new finalizers can be added if the object is being deleted, "
            f"found new finalizers {shown}",
        )
    ]


def validate_object_meta_update(
    new: types_pb2.ObjectMeta, old: types_pb2.ObjectMeta, path: str = "metadata"
) -> list[Cause]:
    causes = []
    for field, json_name in (("name", "name"), ("namespace", "namespace"), ("uid", "uid")):
        before, after = getattr(old, field), getattr(new, field)
        if before and after != before:
            causes.append(invalid(f"{path}.{json_name}", after, "field is immutable"))
    causes.extend(validate_no_new_finalizers(new, old, path))
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


# ---------------------------------------------------------------- containers, volumes (core/v1)

PORT_PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
IMAGE_PULL_POLICIES: Final = ("Always", "IfNotPresent", "Never")
TERMINATION_MESSAGE_POLICIES: Final = ("FallbackToLogsOnError", "File")
DNS_POLICIES: Final = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
MOUNT_PROPAGATION_MODES: Final = ("Bidirectional", "HostToContainer", "None")
RECURSIVE_READ_ONLY_MODES: Final = ("Disabled", "Enabled", "IfPossible")
URI_SCHEMES: Final = ("HTTP", "HTTPS")
HOST_PATH_TYPES: Final = (
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
)
WHEN_UNSATISFIABLE: Final = ("DoNotSchedule", "ScheduleAnyway")
NODE_INCLUSION_POLICIES: Final = ("Honor", "Ignore")
PROC_MOUNT_TYPES: Final = ("Default", "Unmasked")
PROFILE_TYPES: Final = ("Localhost", "RuntimeDefault", "Unconfined")
FS_GROUP_CHANGE_POLICIES: Final = ("Always", "OnRootMismatch")
SUPPLEMENTAL_GROUPS_POLICIES: Final = ("Merge", "Strict")
SE_LINUX_CHANGE_POLICIES: Final = ("MountOption", "Recursive")
OS_NAMES: Final = ("linux", "windows")
# Downward API field paths an env var may read; a volume file may also read all labels or
# annotations. metadata.labels['k'] and metadata.annotations['k'] are accepted in both.
ENV_FIELD_PATHS: Final = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
VOLUME_FIELD_PATHS: Final = (
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
)
RESOURCE_FIELD_REFS: Final = (
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
)
MAX_INT32: Final = 2**31 - 1
FILE_MODE_ERROR: Final = "must be a number between 0 and 0777 (octal), both inclusive"
_NOT_FOR_INIT: Final = "may not be set for init containers without restartPolicy=Always"

_ENV_VAR_NAME_FMT: Final = "[-._a-zA-Z][-._a-zA-Z0-9]*"
_ENV_VAR_NAME_RE: Final = re.compile(_ENV_VAR_NAME_FMT)
_ENV_VAR_NAME_ERROR: Final = _regex_error(
    "a valid environment variable name must consist of alphabetic characters, digits, '_', "
    "'-', or '.', and must not start with a digit",
    _ENV_VAR_NAME_FMT,
    "my.env-name",
    "MY_ENV.NAME",
    "MyEnvName1",
)
_CONFIG_MAP_KEY_FMT: Final = "[-._a-zA-Z0-9]+"
_CONFIG_MAP_KEY_RE: Final = re.compile(_CONFIG_MAP_KEY_FMT)
_CONFIG_MAP_KEY_ERROR: Final = _regex_error(
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
    _CONFIG_MAP_KEY_FMT,
    "key.name",
    "KEY_NAME",
    "key-name",
)
_PORT_NAME_CHARSET_RE: Final = re.compile("[-a-z0-9]+")
_HTTP_HEADER_NAME_FMT: Final = "[-A-Za-z0-9]+"
_HTTP_HEADER_NAME_RE: Final = re.compile(_HTTP_HEADER_NAME_FMT)
_SUBSCRIPTED_PATH_RE: Final = re.compile(r"^([^\[]+)\['(.*)'\]$")
_PORT_RANGE_ERROR: Final = "must be between 1 and 65535, inclusive"


def not_found(path: str, value: object) -> Cause:
    return Cause(path, f"Not found: {_show(value)}")


def _inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def _chdir_prefix(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def is_env_var_name(value: str) -> list[str]:
    """apimachinery IsEnvVarName (kemu does not model RelaxedEnvironmentVariableValidation)."""
    errs = [] if _ENV_VAR_NAME_RE.fullmatch(value) else [_ENV_VAR_NAME_ERROR]
    return errs + _chdir_prefix(value)


def is_config_map_key(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(_max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _CONFIG_MAP_KEY_RE.fullmatch(value):
        errs.append(_CONFIG_MAP_KEY_ERROR)
    return errs + _chdir_prefix(value)


def is_valid_port_name(port: str) -> list[str]:
    """An IANA_SVC_NAME: at most 15 characters, a-z, 0-9 and single inner hyphens, a letter."""
    errs = []
    if len(port) > 15:
        errs.append(_max_len_error(15))
    if not _PORT_NAME_CHARSET_RE.fullmatch(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_valid_port_num(port: int) -> list[str]:
    return [] if 1 <= port <= 65535 else [_PORT_RANGE_ERROR]


def _is_valid_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _validate_ip(value: str, path: str) -> list[Cause]:
    if _is_valid_ip(value):
        return []
    return [invalid(path, value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")]


def _validate_id(value: int, path: str) -> list[Cause]:
    """IsValidUserID / IsValidGroupID."""
    if 0 <= value <= MAX_INT32:
        return []
    return [invalid(path, value, _inclusive_range_error(0, MAX_INT32))]


def _nonnegative(value: int, path: str) -> list[Cause]:
    return [] if value >= 0 else [invalid(path, value, NEGATIVE_ERROR)]


def _validate_port_num_or_name(port: types_pb2.IntOrString, path: str) -> list[Cause]:
    if port.WhichOneof("value") == "str_val":
        return [invalid(path, port.str_val, m) for m in is_valid_port_name(port.str_val)]
    return [invalid(path, port.int_val, m) for m in is_valid_port_num(port.int_val)]


def _validate_descending_path(target: str, path: str) -> list[Cause]:
    """validateLocalDescendingPath: relative, without '..' elements."""
    causes = []
    if target.startswith("/"):
        causes.append(invalid(path, target, "must be a relative path"))
    if ".." in target.replace("\\", "/").split("/"):
        causes.append(invalid(path, target, "must not contain '..'"))
    return causes


def _validate_non_reserved_path(target: str, path: str) -> list[Cause]:
    causes = _validate_descending_path(target, path)
    if target.startswith("..") and not target.startswith("../"):
        causes.append(invalid(path, target, "must not start with '..'"))
    return causes


def _validate_file_mode(mode: int, path: str) -> list[Cause]:
    return [] if 0 <= mode <= 0o777 else [invalid(path, mode, FILE_MODE_ERROR)]


# ------------------------------------------ ports, env


def _validate_container_ports(ports: Sequence[types_pb2.ContainerPort], path: str) -> list[Cause]:
    causes: list[Cause] = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        p = f"{path}[{i}]"
        if port.name:
            errs = is_valid_port_name(port.name)
            if errs:
                causes.extend(invalid(f"{p}.name", port.name, m) for m in errs)
            elif port.name in names:
                causes.append(duplicate(f"{p}.name", port.name))
            names.add(port.name)
        if not port.container_port:
            causes.append(required(f"{p}.containerPort"))
        else:
            causes.extend(
                invalid(f"{p}.containerPort", port.container_port, m)
                for m in is_valid_port_num(port.container_port)
            )
        if port.host_port:
            causes.extend(
                invalid(f"{p}.hostPort", port.host_port, m)
                for m in is_valid_port_num(port.host_port)
            )
        if port.protocol and port.protocol not in PORT_PROTOCOLS:
            causes.append(not_supported(f"{p}.protocol", port.protocol, PORT_PROTOCOLS))
        if port.host_ip:
            causes.extend(_validate_ip(port.host_ip, f"{p}.hostIP"))
    return causes


def _host_port_conflicts(containers: Sequence[types_pb2.Container], path: str) -> list[Cause]:
    """AccumulateUniqueHostPorts: one protocol/hostIP/hostPort per pod."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, c in enumerate(containers):
        for j, port in enumerate(c.ports):
            if not port.host_port:
                continue
            key = f"{port.protocol}/{port.host_ip}/{port.host_port}"
            if key in seen:
                causes.append(duplicate(f"{path}[{i}].ports[{j}].hostPort", key))
            seen.add(key)
    return causes


def _validate_field_ref(
    ref: types_pb2.ObjectFieldSelector, path: str, expressions: Sequence[str]
) -> list[Cause]:
    if not ref.api_version:
        return [required(f"{path}.apiVersion")]
    if not ref.field_path:
        return [required(f"{path}.fieldPath")]
    if ref.api_version != "v1":
        return [
            invalid(
                f"{path}.fieldPath",
                ref.field_path,
                f'error converting fieldPath: unsupported version "{ref.api_version}"',
            )
        ]
    m = _SUBSCRIPTED_PATH_RE.match(ref.field_path)
    if m is not None:
        base, key = m.groups()
        if base in ("metadata.annotations", "metadata.labels"):
            check = key.lower() if base == "metadata.annotations" else key
            return [invalid(f"{path}.fieldPath", key, e) for e in is_qualified_name(check)]
        return [invalid(f"{path}.fieldPath", base, "does not support subscript")]
    if ref.field_path not in expressions:
        return [not_supported(f"{path}.fieldPath", ref.field_path, expressions)]
    return []


def _validate_resource_field_ref(
    ref: types_pb2.ResourceFieldSelector, path: str, *, volume: bool
) -> list[Cause]:
    if volume and not ref.container_name:
        return [required(f"{path}.containerName")]
    if not ref.resource:
        return [required(f"{path}.resource")]
    if ref.resource not in RESOURCE_FIELD_REFS and not ref.resource.startswith(
        ("limits.hugepages-", "requests.hugepages-")
    ):
        return [not_supported(f"{path}.resource", ref.resource, RESOURCE_FIELD_REFS)]
    if ref.divisor:
        return validate_resource_quantity("", ref.divisor, f"{path}.divisor")[1]
    return []


def _validate_key_selector(
    name: str, key: str, path: str, *, name_field: str = "name"
) -> list[Cause]:
    causes = [invalid(f"{path}.{name_field}", name, m) for m in name_is_dns_subdomain(name)]
    if not key:
        causes.append(required(f"{path}.key"))
    else:
        causes.extend(invalid(f"{path}.key", key, m) for m in is_config_map_key(key))
    return causes


def _validate_env(env: Sequence[types_pb2.EnvVar], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, ev in enumerate(env):
        p = f"{path}[{i}]"
        if not ev.name:
            causes.append(required(f"{p}.name"))
        else:
            causes.extend(invalid(f"{p}.name", ev.name, m) for m in is_env_var_name(ev.name))
        if not ev.HasField("value_from"):
            continue
        vp = f"{p}.valueFrom"
        source = ev.value_from
        sources = 0
        if source.HasField("field_ref"):
            sources += 1
            causes.extend(_validate_field_ref(source.field_ref, f"{vp}.fieldRef", ENV_FIELD_PATHS))
        if source.HasField("resource_field_ref"):
            sources += 1
            causes.extend(
                _validate_resource_field_ref(
                    source.resource_field_ref, f"{vp}.resourceFieldRef", volume=False
                )
            )
        for field, json_name in (
            ("config_map_key_ref", "configMapKeyRef"),
            ("secret_key_ref", "secretKeyRef"),
        ):
            if source.HasField(field):
                sources += 1
                ref = getattr(source, field)
                causes.extend(_validate_key_selector(ref.name, ref.key, f"{vp}.{json_name}"))
        if sources == 0:
            causes.append(
                invalid(
                    vp,
                    "",
                    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` "
                    "or `secretKeyRef`",
                )
            )
        elif ev.value:
            causes.append(invalid(vp, "", "may not be specified when `value` is not empty"))
        elif sources > 1:
            causes.append(invalid(vp, "", "may not have more than one field specified at a time"))
    return causes


def _validate_env_from(sources: Sequence[types_pb2.EnvFromSource], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, ef in enumerate(sources):
        p = f"{path}[{i}]"
        if ef.prefix:
            causes.extend(invalid(f"{p}.prefix", ef.prefix, m) for m in is_env_var_name(ef.prefix))
        refs = [f for f in ("config_map_ref", "secret_ref") if ef.HasField(f)]
        if not refs:
            causes.append(invalid(p, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif len(refs) > 1:
            causes.append(invalid(p, "", "may not have more than one field specified at a time"))
        for field, json_name in (("config_map_ref", "configMapRef"), ("secret_ref", "secretRef")):
            if ef.HasField(field):
                name = getattr(ef, field).name
                if not name:
                    causes.append(required(f"{p}.{json_name}.name"))
                else:
                    causes.extend(
                        invalid(f"{p}.{json_name}.name", name, m)
                        for m in name_is_dns_subdomain(name)
                    )
    return causes


# ------------------------------------------ mounts, probes, lifecycle, security


def _validate_volume_mounts(
    c: types_pb2.Container, path: str, volumes: Mapping[str, types_pb2.Volume]
) -> list[Cause]:
    causes: list[Cause] = []
    mount_paths: set[str] = set()
    device_names = {d.name for d in c.volume_devices}
    privileged = c.security_context.privileged
    for i, m in enumerate(c.volume_mounts):
        p = f"{path}[{i}]"
        if not m.name:
            causes.append(required(f"{p}.name"))
        elif m.name not in volumes:
            causes.append(not_found(f"{p}.name", m.name))
        elif m.name in device_names:
            causes.append(invalid(f"{p}.name", m.name, "must not already exist in volumeDevices"))
        if not m.mount_path:
            causes.append(required(f"{p}.mountPath"))
        elif m.mount_path in mount_paths:
            causes.append(invalid(f"{p}.mountPath", m.mount_path, "must be unique"))
        mount_paths.add(m.mount_path)
        if m.sub_path:
            causes.extend(_validate_descending_path(m.sub_path, f"{p}.subPath"))
        if m.sub_path_expr:
            if m.sub_path:
                causes.append(
                    invalid(
                        f"{p}.subPathExpr",
                        m.sub_path_expr,
                        "subPathExpr and subPath are mutually exclusive",
                    )
                )
            causes.extend(_validate_descending_path(m.sub_path_expr, f"{p}.subPathExpr"))
        if m.HasField("mount_propagation"):
            mp = f"{p}.mountPropagation"
            if m.mount_propagation not in MOUNT_PROPAGATION_MODES:
                causes.append(not_supported(mp, m.mount_propagation, MOUNT_PROPAGATION_MODES))
            elif m.mount_propagation == "Bidirectional" and not privileged:
                causes.append(
                    forbidden(
                        mp,
                        "Bidirectional mount propagation is available only to privileged "
                        "containers",
                    )
                )
        if m.HasField("recursive_read_only"):
            rp = f"{p}.recursiveReadOnly"
            if m.recursive_read_only not in RECURSIVE_READ_ONLY_MODES:
                causes.append(not_supported(rp, m.recursive_read_only, RECURSIVE_READ_ONLY_MODES))
            elif m.recursive_read_only != "Disabled" and not m.read_only:
                causes.append(forbidden(rp, "may only be specified when readOnly is true"))
    paths: set[str] = set()
    for i, d in enumerate(c.volume_devices):
        p = f"{path.rsplit('.', 1)[0]}.volumeDevices[{i}]"
        if not d.name:
            causes.append(required(f"{p}.name"))
        elif d.name not in volumes:
            causes.append(not_found(f"{p}.name", d.name))
        if not d.device_path:
            causes.append(required(f"{p}.devicePath"))
        elif d.device_path in paths:
            causes.append(invalid(f"{p}.devicePath", d.device_path, "must be unique"))
        paths.add(d.device_path)
    return causes


def _validate_http_get(action: types_pb2.HTTPGetAction, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if not action.path:
        causes.append(required(f"{path}.path"))
    causes.extend(_validate_port_num_or_name(action.port, f"{path}.port"))
    if action.scheme and action.scheme not in URI_SCHEMES:
        causes.append(not_supported(f"{path}.scheme", action.scheme, URI_SCHEMES))
    for i, header in enumerate(action.http_headers):
        if not _HTTP_HEADER_NAME_RE.fullmatch(header.name):
            causes.append(
                invalid(
                    f"{path}.httpHeaders[{i}].name",
                    header.name,
                    _regex_error(
                        "a valid HTTP header must consist of alphanumeric characters or '-'",
                        _HTTP_HEADER_NAME_FMT,
                        "X-Header-Name",
                    ),
                )
            )
    return causes


_HANDLER_FIELDS: Final = (
    ("exec", "exec"),
    ("http_get", "httpGet"),
    ("tcp_socket", "tcpSocket"),
    ("grpc", "grpc"),
    ("sleep", "sleep"),
)


def _validate_handler(
    handler: types_pb2.Probe | types_pb2.LifecycleHandler, path: str, grace: int | None
) -> list[Cause]:
    """Exactly one handler (validateHandler): the probe's or the lifecycle hook's."""
    causes: list[Cause] = []
    count = 0
    fields = handler.DESCRIPTOR.fields_by_name
    for field, json_name in _HANDLER_FIELDS:
        if field not in fields or not handler.HasField(field):
            continue
        hp = f"{path}.{json_name}"
        if count:
            causes.append(forbidden(hp, "may not specify more than 1 handler type"))
            continue
        count += 1
        if field == "exec":
            if not handler.exec.command:
                causes.append(required(f"{hp}.command"))
        elif field == "http_get":
            causes.extend(_validate_http_get(handler.http_get, hp))
        elif field == "tcp_socket":
            causes.extend(_validate_port_num_or_name(handler.tcp_socket.port, f"{hp}.port"))
        elif field == "grpc":
            assert isinstance(handler, types_pb2.Probe)
            causes.extend(
                invalid(f"{hp}.port", handler.grpc.port, m)
                for m in is_valid_port_num(handler.grpc.port)
            )
        else:
            assert isinstance(handler, types_pb2.LifecycleHandler)
            seconds = handler.sleep.seconds
            if seconds < 0 or (grace is not None and seconds > grace):
                causes.append(
                    invalid(
                        f"{hp}.seconds",
                        seconds,
                        "must be non-negative and less than terminationGracePeriodSeconds "
                        f"({grace if grace is not None else 30})",
                    )
                )
    if not count:
        causes.append(required(path, "must specify a handler type"))
    return causes


def _validate_probe(probe: types_pb2.Probe, path: str, kind: str, grace: int | None) -> list[Cause]:
    causes = _validate_handler(probe, path, grace)
    for field, json_name in (
        ("initial_delay_seconds", "initialDelaySeconds"),
        ("timeout_seconds", "timeoutSeconds"),
        ("period_seconds", "periodSeconds"),
        ("success_threshold", "successThreshold"),
        ("failure_threshold", "failureThreshold"),
    ):
        causes.extend(_nonnegative(getattr(probe, field), f"{path}.{json_name}"))
    tp = f"{path}.terminationGracePeriodSeconds"
    if probe.HasField("termination_grace_period_seconds"):
        if kind == "readiness":
            causes.append(
                invalid(
                    tp,
                    probe.termination_grace_period_seconds,
                    "must not be set for readinessProbes",
                )
            )
        elif probe.termination_grace_period_seconds <= 0:
            causes.append(
                invalid(tp, probe.termination_grace_period_seconds, "must be greater than 0")
            )
    if kind != "readiness" and probe.success_threshold not in (0, 1):
        causes.append(invalid(f"{path}.successThreshold", probe.success_threshold, "must be 1"))
    return causes


def _validate_profile(
    profile: types_pb2.SeccompProfile | types_pb2.AppArmorProfile, path: str, what: str
) -> list[Cause]:
    lp = f"{path}.localhostProfile"
    if profile.type == "Localhost":
        if not profile.HasField("localhost_profile"):
            return [required(lp, f"must be set when {what} type is Localhost")]
        return _validate_descending_path(profile.localhost_profile, lp)
    if profile.type in PROFILE_TYPES:
        if profile.HasField("localhost_profile"):
            return [
                invalid(
                    lp, profile.localhost_profile, f"can only be set when {what} type is Localhost"
                )
            ]
        return []
    return [not_supported(f"{path}.type", profile.type, PROFILE_TYPES)]


def _validate_security_context(sc: types_pb2.SecurityContext, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if sc.HasField("run_as_user"):
        causes.extend(_validate_id(sc.run_as_user, f"{path}.runAsUser"))
    if sc.HasField("run_as_group"):
        causes.extend(_validate_id(sc.run_as_group, f"{path}.runAsGroup"))
    if sc.HasField("proc_mount") and sc.proc_mount not in PROC_MOUNT_TYPES:
        causes.append(not_supported(f"{path}.procMount", sc.proc_mount, PROC_MOUNT_TYPES))
    if sc.HasField("allow_privilege_escalation") and not sc.allow_privilege_escalation:
        if sc.privileged:
            causes.append(
                invalid(
                    path,
                    "",
                    "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
                )
            )
        if "CAP_SYS_ADMIN" in sc.capabilities.add:
            causes.append(
                invalid(
                    path,
                    "",
                    "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` "
                    "CAP_SYS_ADMIN",
                )
            )
    if sc.HasField("seccomp_profile"):
        causes.extend(_validate_profile(sc.seccomp_profile, f"{path}.seccompProfile", "seccomp"))
    if sc.HasField("app_armor_profile"):
        causes.extend(
            _validate_profile(sc.app_armor_profile, f"{path}.appArmorProfile", "AppArmor")
        )
    return causes


def _validate_pod_security_context(sc: types_pb2.PodSecurityContext, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for field, json_name in (
        ("run_as_user", "runAsUser"),
        ("run_as_group", "runAsGroup"),
        ("fs_group", "fsGroup"),
    ):
        if sc.HasField(field):
            causes.extend(_validate_id(getattr(sc, field), f"{path}.{json_name}"))
    for i, gid in enumerate(sc.supplemental_groups):
        causes.extend(_validate_id(gid, f"{path}.supplementalGroups[{i}]"))
    for field, json_name, allowed in (
        ("fs_group_change_policy", "fsGroupChangePolicy", FS_GROUP_CHANGE_POLICIES),
        ("supplemental_groups_policy", "supplementalGroupsPolicy", SUPPLEMENTAL_GROUPS_POLICIES),
        ("se_linux_change_policy", "seLinuxChangePolicy", SE_LINUX_CHANGE_POLICIES),
    ):
        if sc.HasField(field) and getattr(sc, field) not in allowed:
            causes.append(not_supported(f"{path}.{json_name}", getattr(sc, field), allowed))
    names: set[str] = set()
    for i, sysctl in enumerate(sc.sysctls):
        p = f"{path}.sysctls[{i}].name"
        if not sysctl.name:
            causes.append(required(p))
        elif sysctl.name in names:
            causes.append(duplicate(p, sysctl.name))
        names.add(sysctl.name)
    if sc.HasField("seccomp_profile"):
        causes.extend(_validate_profile(sc.seccomp_profile, f"{path}.seccompProfile", "seccomp"))
    if sc.HasField("app_armor_profile"):
        causes.extend(
            _validate_profile(sc.app_armor_profile, f"{path}.appArmorProfile", "AppArmor")
        )
    return causes


# ------------------------------------------ volumes


def _validate_key_to_paths(items: Sequence[types_pb2.KeyToPath], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, item in enumerate(items):
        p = f"{path}[{i}]"
        if not item.key:
            causes.append(required(f"{p}.key"))
        if not item.path:
            causes.append(required(f"{p}.path"))
        causes.extend(_validate_non_reserved_path(item.path, f"{p}.path"))
        if item.HasField("mode"):
            causes.extend(_validate_file_mode(item.mode, f"{p}.mode"))
    return causes


def _validate_downward_files(
    items: Sequence[types_pb2.DownwardAPIVolumeFile], path: str
) -> list[Cause]:
    causes: list[Cause] = []
    for i, item in enumerate(items):
        p = f"{path}[{i}]"
        if not item.path:
            causes.append(required(f"{p}.path"))
        causes.extend(_validate_non_reserved_path(item.path, f"{p}.path"))
        has_field, has_resource = item.HasField("field_ref"), item.HasField("resource_field_ref")
        if has_field and has_resource:
            causes.append(
                invalid(
                    p,
                    "resource",
                    "fieldRef and resourceFieldRef can not be specified simultaneously",
                )
            )
        elif has_field:
            causes.extend(_validate_field_ref(item.field_ref, f"{p}.fieldRef", VOLUME_FIELD_PATHS))
        elif has_resource:
            causes.extend(
                _validate_resource_field_ref(
                    item.resource_field_ref, f"{p}.resourceFieldRef", volume=True
                )
            )
        else:
            causes.append(required(p, "one of fieldRef and resourceFieldRef is required"))
        if item.HasField("mode"):
            causes.extend(_validate_file_mode(item.mode, f"{p}.mode"))
    return causes


_VOLUME_SOURCE_FIELDS: Final = (
    ("host_path", "hostPath"),
    ("empty_dir", "emptyDir"),
    ("secret", "secret"),
    ("persistent_volume_claim", "persistentVolumeClaim"),
    ("config_map", "configMap"),
    ("downward_api", "downwardAPI"),
    ("projected", "projected"),
)
_PROJECTION_FIELDS: Final = (
    ("secret", "secret"),
    ("downward_api", "downwardAPI"),
    ("config_map", "configMap"),
    ("service_account_token", "serviceAccountToken"),
)


def _validate_projected(src: types_pb2.ProjectedVolumeSource, path: str) -> list[Cause]:
    causes: list[Cause] = []
    all_paths: set[str] = set()
    for i, proj in enumerate(src.sources):
        p = f"{path}.sources[{i}]"
        present = [(f, j) for f, j in _PROJECTION_FIELDS if proj.HasField(f)]
        if not present:
            causes.append(required(p, "must specify a projection source"))
        for _, json_name in present[1:]:
            causes.append(
                forbidden(f"{p}.{json_name}", "may not specify more than 1 volume type per source")
            )
        paths: list[str] = []
        if proj.HasField("secret"):
            causes.extend(_validate_key_to_paths(proj.secret.items, f"{p}.secret.items"))
            paths += [item.path for item in proj.secret.items]
        if proj.HasField("config_map"):
            causes.extend(_validate_key_to_paths(proj.config_map.items, f"{p}.configMap.items"))
            paths += [item.path for item in proj.config_map.items]
        if proj.HasField("downward_api"):
            causes.extend(
                _validate_downward_files(proj.downward_api.items, f"{p}.downwardAPI.items")
            )
            paths += [item.path for item in proj.downward_api.items]
        if proj.HasField("service_account_token"):
            token = proj.service_account_token
            tp = f"{p}.serviceAccountToken"
            if token.HasField("expiration_seconds"):
                if token.expiration_seconds < 600:
                    causes.append(
                        invalid(
                            f"{tp}.expirationSeconds",
                            token.expiration_seconds,
                            "may not specify a duration less than 10 minutes",
                        )
                    )
                elif token.expiration_seconds > 2**32:
                    causes.append(
                        invalid(
                            f"{tp}.expirationSeconds",
                            token.expiration_seconds,
                            "may not specify a duration larger than 2^32 seconds",
                        )
                    )
            if not token.path:
                causes.append(required(f"{tp}.path"))
            else:
                causes.extend(_validate_non_reserved_path(token.path, f"{tp}.path"))
            paths.append(token.path)
        for item_path in paths:
            if item_path and item_path in all_paths:
                causes.append(invalid(p, item_path, "conflicting duplicate paths"))
            all_paths.add(item_path)
    return causes


def _validate_volume_source(v: types_pb2.Volume, path: str) -> list[Cause]:
    present = [(f, j) for f, j in _VOLUME_SOURCE_FIELDS if v.HasField(f)]
    if not present:
        return [required(path, "must specify a volume type")]
    causes = [
        forbidden(f"{path}.{json_name}", "may not specify more than 1 volume type")
        for _, json_name in present[1:]
    ]
    field, json_name = present[0]
    p = f"{path}.{json_name}"
    if field == "host_path":
        if not v.host_path.path:
            causes.append(required(f"{p}.path"))
        elif ".." in v.host_path.path.split("/"):
            causes.append(invalid(f"{p}.path", v.host_path.path, "must not contain '..'"))
        if v.host_path.type not in HOST_PATH_TYPES:
            causes.append(not_supported(f"{p}.type", v.host_path.type, HOST_PATH_TYPES[1:]))
    elif field == "empty_dir":
        if v.empty_dir.size_limit:
            causes.extend(
                validate_resource_quantity("", v.empty_dir.size_limit, f"{p}.sizeLimit")[1]
            )
    elif field in ("secret", "config_map"):
        src = getattr(v, field)
        name_field = "secretName" if field == "secret" else "name"
        name = src.secret_name if field == "secret" else src.name
        if not name:
            causes.append(required(f"{p}.{name_field}"))
        else:
            causes.extend(
                invalid(f"{p}.{name_field}", name, m) for m in name_is_dns_subdomain(name)
            )
        if src.HasField("default_mode"):
            causes.extend(_validate_file_mode(src.default_mode, f"{p}.defaultMode"))
        causes.extend(_validate_key_to_paths(src.items, f"{p}.items"))
    elif field == "persistent_volume_claim":
        if not v.persistent_volume_claim.claim_name:
            causes.append(required(f"{p}.claimName"))
    elif field == "downward_api":
        if v.downward_api.HasField("default_mode"):
            causes.extend(_validate_file_mode(v.downward_api.default_mode, f"{p}.defaultMode"))
        causes.extend(_validate_downward_files(v.downward_api.items, f"{p}.items"))
    else:
        if v.projected.HasField("default_mode"):
            causes.extend(_validate_file_mode(v.projected.default_mode, f"{p}.defaultMode"))
        causes.extend(_validate_projected(v.projected, p))
    return causes


def validate_volumes(
    volumes: Sequence[types_pb2.Volume], path: str
) -> tuple[dict[str, types_pb2.Volume], list[Cause]]:
    """The pod's volumes (ValidateVolumes): the valid ones by name, and the causes."""
    causes: list[Cause] = []
    by_name: dict[str, types_pb2.Volume] = {}
    for i, v in enumerate(volumes):
        p = f"{path}[{i}]"
        errs = _validate_volume_source(v, p)
        if not v.name:
            errs.append(required(f"{p}.name"))
        else:
            errs.extend(invalid(f"{p}.name", v.name, m) for m in is_dns1123_label(v.name))
        if v.name in by_name:
            errs.append(duplicate(f"{p}.name", v.name))
        if errs:
            causes.extend(errs)
        else:
            by_name[v.name] = v
    return by_name, causes


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


def validate_pod_spec(spec: types_pb2.PodSpec, path: str = "spec") -> list[Cause]:
    causes: list[Cause] = []
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
    """The spec rules of a plain pod update (not binding, not resize), as ValidatePodUpdate,
    and the QoS class that no update changes (ValidatePodStatusUpdate)."""
    causes: list[Cause] = []
    if new.status.qos_class != old.status.qos_class:
        causes.append(invalid("status.qosClass", new.status.qos_class, "field is immutable"))
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


# ---------------------------------------------------------------- namespaces, services, config maps

# Finalizers upstream knows without a domain prefix (helper.IsStandardFinalizerName).
STANDARD_FINALIZERS: Final = frozenset({"kubernetes", "orphan", "foregroundDeletion"})

_DNS1035_LABEL_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_RE: Final = re.compile(_DNS1035_LABEL_FMT)
_DNS1035_LABEL_ERROR: Final = _regex_error(
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character",
    _DNS1035_LABEL_FMT,
    "my-name",
    "abc-123",
)
MAX_CONFIG_MAP_SIZE: Final = 1024 * 1024  # api.MaxSecretSize, which bounds config maps too

SERVICE_TYPES: Final = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
SERVICE_PROTOCOLS: Final = ("TCP", "UDP", "SCTP")
SESSION_AFFINITIES: Final = ("ClientIP", "None")
TRAFFIC_POLICIES: Final = ("Cluster", "Local")
CLUSTER_IP_NONE: Final = "None"


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(_max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(_DNS1035_LABEL_ERROR)
    return errs


def name_is_dns1035_label(name: str, prefix: bool = False) -> list[str]:
    """Service names."""
    return is_dns1035_label(_mask_trailing_dash(name) if prefix else name)


_IP_ERROR: Final = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def validate_finalizer_name(name: str, path: str) -> list[Cause]:
    causes = validate_qualified_name(name, path)
    if not causes and "/" not in name and name not in STANDARD_FINALIZERS:
        causes.append(
            invalid(
                path, name, "name is neither a standard finalizer name nor is it fully qualified"
            )
        )
    return causes


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
    selector: types_pb2.LabelSelector | None,
    template: types_pb2.PodTemplateSpec | None,
    *,
    owner: str = "deployment",
    restart_policies: tuple[str, ...] = ("Always",),
) -> list[Cause]:
    """The selector and template rules shared by ReplicaSet, Deployment, DaemonSet and Job
    specs (upstream ValidateReplicaSetSpec / ValidateDeploymentSpec / ValidateDaemonSetSpec /
    ValidateJobSpec and ValidatePodTemplateSpecForReplicaSet): `owner` names the kind in the
    empty-selector message, `restart_policies` are the template's allowed restartPolicy."""
    # labels imports this module; importing it at the top would be circular.
    from kemu.machinery.labels import selector_from_label_selector

    causes: list[Cause] = []
    if selector is None:
        causes.append(required("spec.selector"))
    else:
        causes.extend(validate_label_selector(selector, "spec.selector"))
        if not selector.match_labels and not selector.match_expressions:
            causes.append(invalid("spec.selector", "{}", f"empty selector is invalid for {owner}"))
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
    if template.spec.restart_policy not in restart_policies:
        causes.append(
            not_supported(
                "spec.template.spec.restartPolicy", template.spec.restart_policy, restart_policies
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
    new: types_pb2.ReplicaSet | types_pb2.Deployment | types_pb2.DaemonSet,
    old: types_pb2.ReplicaSet | types_pb2.Deployment | types_pb2.DaemonSet,
) -> list[Cause]:
    """apps/v1: the selector of a ReplicaSet, Deployment or DaemonSet is immutable."""
    if new.spec.selector != old.spec.selector:
        return [invalid("spec.selector", "", "field is immutable")]
    return []


# ---------------------------------------------------------------- apps/v1 DaemonSet, batch/v1 Job


def _validate_rolling_update_daemon_set(ru: types_pb2.RollingUpdateDaemonSet) -> list[Cause]:
    """ValidateRollingUpdateDaemonSet: maxUnavailable and maxSurge are non-negative integers
    or percentages of at most 100%, not both 0."""
    p = "spec.updateStrategy.rollingUpdate"
    causes: list[Cause] = []
    for value, name in ((ru.max_unavailable, "maxUnavailable"), (ru.max_surge, "maxSurge")):
        causes.extend(_validate_positive_int_or_percent(value, f"{p}.{name}"))
        if value.WhichOneof("value") == "str_val" and _int_or_percent_value(value) > 100:
            causes.append(invalid(f"{p}.{name}", value.str_val, "must not be greater than 100%"))
    if _int_or_percent_value(ru.max_unavailable) == 0 and _int_or_percent_value(ru.max_surge) == 0:
        causes.append(
            invalid(
                f"{p}.maxUnavailable",
                _int_or_string(ru.max_unavailable),
                "may not be 0 when `maxSurge` is 0",
            )
        )
    return causes


def validate_daemon_set(ds: types_pb2.DaemonSet) -> list[Cause]:
    """ValidateDaemonSet: selector and template as a ReplicaSet's ("daemonset" in the
    empty-selector message), restartPolicy Always, no activeDeadlineSeconds, the update
    strategy."""
    causes = validate_object_meta(ds.metadata, namespaced=True)
    spec = ds.spec
    causes.extend(
        _validate_workload_selector_and_template(
            spec.selector if spec.HasField("selector") else None,
            spec.template if spec.HasField("template") else None,
            owner="daemonset",
        )
    )
    if spec.template.spec.HasField("active_deadline_seconds"):
        causes.append(
            invalid(
                "spec.template.spec.activeDeadlineSeconds",
                spec.template.spec.active_deadline_seconds,
                "activeDeadlineSeconds in DaemonSet is not Supported",
            )
        )
    causes.extend(_validate_nonnegative(spec.min_ready_seconds, "spec.minReadySeconds"))
    if spec.HasField("revision_history_limit"):
        causes.extend(
            _validate_nonnegative(spec.revision_history_limit, "spec.revisionHistoryLimit")
        )
    strategy = spec.update_strategy
    if not strategy.type:
        causes.append(required("spec.updateStrategy.type"))
    elif strategy.type == "RollingUpdate":
        if not strategy.HasField("rolling_update"):
            causes.append(required("spec.updateStrategy.rollingUpdate"))
        else:
            causes.extend(_validate_rolling_update_daemon_set(strategy.rolling_update))
    elif strategy.type != "OnDelete":
        causes.append(
            not_supported("spec.updateStrategy.type", strategy.type, ("OnDelete", "RollingUpdate"))
        )
    return causes


_JOB_CONTROLLER_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"
_JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"


def validate_job(job: types_pb2.Job) -> list[Cause]:
    """ValidateJob: non-negative counts, completionMode (kemu runs NonIndexed Jobs only),
    podReplacementPolicy, the selector (generated unless manualSelector: it must hold the
    Job's uid) matching the template, restartPolicy OnFailure or Never."""
    causes = validate_object_meta(job.metadata, namespaced=True)
    spec = job.spec
    for name, field in (
        ("parallelism", "parallelism"),
        ("completions", "completions"),
        ("activeDeadlineSeconds", "active_deadline_seconds"),
        ("backoffLimit", "backoff_limit"),
        ("ttlSecondsAfterFinished", "ttl_seconds_after_finished"),
    ):
        if spec.HasField(field):
            causes.extend(_validate_nonnegative(getattr(spec, field), f"spec.{name}"))
    if spec.HasField("completion_mode"):
        if spec.completion_mode == "Indexed":
            causes.append(
                invalid(
                    "spec.completionMode",
                    spec.completion_mode,
                    "Indexed Jobs are not supported by kemu",
                )
            )
        elif spec.completion_mode != "NonIndexed":
            causes.append(
                not_supported(
                    "spec.completionMode", spec.completion_mode, ("NonIndexed", "Indexed")
                )
            )
    if spec.HasField("pod_replacement_policy") and spec.pod_replacement_policy not in (
        "Failed",
        "TerminatingOrFailed",
    ):
        causes.append(
            not_supported(
                "spec.podReplacementPolicy",
                spec.pod_replacement_policy,
                ("Failed", "TerminatingOrFailed"),
            )
        )
    manual = spec.HasField("manual_selector") and spec.manual_selector
    if not manual and spec.HasField("selector"):
        uid = job.metadata.uid
        if spec.selector.match_labels.get(_JOB_CONTROLLER_UID_LABEL) != uid:
            causes.append(invalid("spec.selector", "", "`selector` not auto-generated"))
        labels = spec.template.metadata.labels
        if labels.get(_JOB_CONTROLLER_UID_LABEL) != uid:
            causes.append(
                invalid(
                    f"spec.template.metadata.labels[{_JOB_CONTROLLER_UID_LABEL}]",
                    labels.get(_JOB_CONTROLLER_UID_LABEL, ""),
                    f"must be '{uid}'",
                )
            )
        if labels.get(_JOB_NAME_LABEL) != job.metadata.name:
            causes.append(
                invalid(
                    f"spec.template.metadata.labels[{_JOB_NAME_LABEL}]",
                    labels.get(_JOB_NAME_LABEL, ""),
                    f"must be '{job.metadata.name}'",
                )
            )
    causes.extend(
        _validate_workload_selector_and_template(
            spec.selector if spec.HasField("selector") else None,
            spec.template if spec.HasField("template") else None,
            owner="job",
            restart_policies=("OnFailure", "Never"),
        )
    )
    return causes


def _without_scheduling_directives(t: types_pb2.PodTemplateSpec) -> bytes:
    out = types_pb2.PodTemplateSpec()
    out.CopyFrom(t)
    out.metadata.ClearField("labels")
    out.metadata.ClearField("annotations")
    for f in ("node_selector", "affinity", "tolerations", "scheduling_gates"):
        out.spec.ClearField(f)
    return out.SerializeToString(deterministic=True)


def validate_job_update(new: types_pb2.Job, old: types_pb2.Job) -> list[Cause]:
    """ValidateJobSpecUpdate: selector, completions, completionMode and the template are
    immutable, but for the scheduling directives (node selector, affinity, tolerations,
    scheduling gates, labels, annotations) of a suspended Job that never started."""
    causes: list[Cause] = []
    a, b = new.spec, old.spec
    if a.selector != b.selector:
        causes.append(invalid("spec.selector", "", "field is immutable"))
    if a.HasField("completions") != b.HasField("completions") or a.completions != b.completions:
        causes.append(invalid("spec.completions", a.completions, "field is immutable"))
    if a.completion_mode != b.completion_mode:
        causes.append(invalid("spec.completionMode", a.completion_mode, "field is immutable"))
    mutable_scheduling = (
        b.HasField("suspend") and b.suspend and not old.status.HasField("start_time")
    )
    if mutable_scheduling:
        changed = _without_scheduling_directives(a.template) != _without_scheduling_directives(
            b.template
        )
    else:
        changed = a.template.SerializeToString(deterministic=True) != b.template.SerializeToString(
            deterministic=True
        )
    if changed:
        causes.append(invalid("spec.template", "", "field is immutable"))
    return causes


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
    "kemu.api.v1.Namespace": (validate_namespace, validate_namespace_update),
    "kemu.api.v1.Service": (validate_service, validate_service_update),
    "kemu.api.v1.ConfigMap": (validate_config_map, validate_config_map_update),
    "kemu.api.v1.ReplicaSet": (validate_replica_set, validate_workload_update),
    "kemu.api.v1.Deployment": (validate_deployment, validate_workload_update),
    "kemu.api.v1.Job": (validate_job, validate_job_update),
    "kemu.api.v1.DaemonSet": (validate_daemon_set, validate_workload_update),
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
