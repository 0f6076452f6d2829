"""Field selectors (k8s.io/apimachinery/pkg/fields) over the fields each kind supports.

`spec.nodeName=node1,status.phase!=Succeeded`: terms joined by ",", each `field=value`,
`field==value` or `field!=value`; a backslash escapes `\\`, `,` and `=` in a value. Only the
field labels upstream's conversion functions accept for a kind may be used; any other is a
BadRequest `field label not supported: spec.foo`, as the apiserver answers.

A missing field reads as "" (so `spec.nodeName=` selects unscheduled pods); booleans read as
"true"/"false". `FieldSelector.exact("spec.nodeName")` gives the value an `=` term requires, for
the apiserver to serve the selection from an index.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import BadRequest
from kemu.machinery.kinds import kind_for_resource

FieldOperator = Literal["=", "!="]
Getter = Callable[[Message], str]


def _meta_name(obj: Message) -> str:
    return str(obj.metadata.name)  # type: ignore[attr-defined]


def _meta_namespace(obj: Message) -> str:
    return str(obj.metadata.namespace)  # type: ignore[attr-defined]


def _pod(get: Callable[[types_pb2.Pod], str]) -> Getter:
    def read(obj: Message) -> str:
        assert isinstance(obj, types_pb2.Pod)
        return get(obj)

    return read


def _node(get: Callable[[types_pb2.Node], str]) -> Getter:
    def read(obj: Message) -> str:
        assert isinstance(obj, types_pb2.Node)
        return get(obj)

    return read


def _event(get: Callable[[types_pb2.Event], str]) -> Getter:
    def read(obj: Message) -> str:
        assert isinstance(obj, types_pb2.Event)
        return get(obj)

    return read


def _slice(get: Callable[[types_pb2.ResourceSlice], str]) -> Getter:
    def read(obj: Message) -> str:
        assert isinstance(obj, types_pb2.ResourceSlice)
        return get(obj)

    return read


_META: Final[dict[str, Getter]] = {
    "metadata.name": _meta_name,
    "metadata.namespace": _meta_namespace,
}

# Per resource with field label conversion functions of its own (pkg/apis/*/v1 conversion
# field label funcs), the labels upstream accepts that kemu's objects carry, and how to read
# each. Every other kind accepts metadata.name and metadata.namespace (_getters).
SUPPORTED_FIELDS: Final[dict[str, dict[str, Getter]]] = {
    "pods": {
        **_META,
        "spec.nodeName": _pod(lambda p: p.spec.node_name),
        "spec.restartPolicy": _pod(lambda p: p.spec.restart_policy),
        "spec.schedulerName": _pod(lambda p: p.spec.scheduler_name),
        "status.phase": _pod(lambda p: p.status.phase),
        "status.podIP": _pod(lambda p: p.status.pod_ip),
        "status.nominatedNodeName": _pod(lambda p: p.status.nominated_node_name),
    },
    "nodes": {
        "metadata.name": _meta_name,
        "spec.unschedulable": _node(lambda n: "true" if n.spec.unschedulable else "false"),
    },
    "events": {
        **_META,
        "involvedObject.kind": _event(lambda e: e.involved_object.kind),
        "involvedObject.namespace": _event(lambda e: e.involved_object.namespace),
        "involvedObject.name": _event(lambda e: e.involved_object.name),
        "involvedObject.uid": _event(lambda e: e.involved_object.uid),
        "involvedObject.apiVersion": _event(lambda e: e.involved_object.api_version),
        "involvedObject.resourceVersion": _event(lambda e: e.involved_object.resource_version),
        "involvedObject.fieldPath": _event(lambda e: e.involved_object.field_path),
        "reason": _event(lambda e: e.reason),
        "reportingComponent": _event(lambda e: e.reporting_component),
        "source": _event(lambda e: e.source.component),
        "type": _event(lambda e: e.type),
    },
    "namespaces": {
        **_META,
        "status.phase": lambda obj: str(obj.status.phase),  # type: ignore[attr-defined]
    },
    # resource.k8s.io: a ResourceSlice also spec.nodeName ("" when unset) and spec.driver (pkg/registry/resource/resourceslice/
    # strategy.go toSelectableFields, the kubelet's and the scheduler's selections).
    "deviceclasses": {"metadata.name": _meta_name},
    "resourceslices": {
        "metadata.name": _meta_name,
        "spec.nodeName": _slice(lambda s: s.spec.node_name),
        "spec.driver": _slice(lambda s: s.spec.driver),
    },
    "devicetaintrules": {"metadata.name": _meta_name},
}


def _getters(resource: str) -> dict[str, Getter]:
    """The field labels of `resource`: its own (SUPPORTED_FIELDS), else metadata.name and
    metadata.namespace, as upstream's default conversion (runtime
    DefaultMetaV1FieldSelectorConversion; the generic store's DefaultNamespaceScopedAttr and
    DefaultClusterScopedAttr) for every kind without conversion functions of its own, custom
    resources included (selectableFields aside); `kubectl delete` watches by metadata.name for
    an object a finalizer keeps. BadRequest for an unknown resource."""
    supported = SUPPORTED_FIELDS.get(resource)
    if supported is None:
        kind_for_resource(resource)
        return _META
    return supported


def getter(resource: str, field: str) -> Getter:
    """The value of `field` (a field label `resource` supports) of an object: what a
    selector's term compares (the watch cache indexes its watchers by one)."""
    return _getters(resource)[field]


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    operator: FieldOperator
    value: str

    def __str__(self) -> str:
        return f"{self.field}{self.operator}{escape_value(self.value)}"


@dataclass(frozen=True)
class FieldSelector:
    """A conjunction of field requirements over one resource's objects."""

    resource: str
    requirements: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, obj: Message) -> bool:
        getters = _getters(self.resource)
        for r in self.requirements:
            have = getters[r.field](obj)
            if (have == r.value) != (r.operator == "="):
                return False
        return True

    def exact(self, field: str) -> str | None:
        """The value an `=` term requires of `field`, if there is one (for index lookups)."""
        for r in self.requirements:
            if r.field == field and r.operator == "=":
                return r.value
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def field_value(resource: str, obj: Message, field: str) -> str:
    """The value a field selector sees for `field` of `obj` (KeyError if unsupported)."""
    return _getters(resource)[field](obj)


def escape_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _split_terms(text: str) -> list[str]:
    terms: list[str] = []
    start = 0
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == ",":
            terms.append(text[start:i])
            start = i + 1
        i += 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, FieldOperator, str] | None:
    i = 0
    while i < len(term):
        if term[i] == "\\":
            i += 2
            continue
        for op, normal in (("!=", "!="), ("==", "="), ("=", "=")):
            if term.startswith(op, i):
                operator: FieldOperator = "!=" if normal == "!=" else "="
                return term[:i], operator, term[i + len(op) :]
        i += 1
    return None


def _unescape(value: str, selector: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(value):
        c = value[i]
        if c == "\\":
            if i + 1 >= len(value) or value[i + 1] not in "\\,=":
                raise BadRequest(
                    f"invalid field selector: '{selector}': invalid escape sequence in "
                    f"value '{value}'"
                )
            out.append(value[i + 1])
            i += 2
            continue
        if c in ",=":
            raise BadRequest(
                f"invalid field selector: '{selector}': unescaped '{c}' in value '{value}'"
            )
        out.append(c)
        i += 1
    return "".join(out)


def parse_field_selector(resource: str, text: str) -> FieldSelector:
    """Parses `text` for `resource` (pods, nodes, ...); BadRequest when malformed or unsupported."""
    supported = _getters(resource)
    reqs: list[FieldRequirement] = []
    for term in _split_terms(text):
        if not term.strip():
            continue
        split = _split_term(term)
        if split is None:
            raise BadRequest(f"invalid field selector: '{text}': can't understand '{term}'")
        field, op, raw = split
        field = field.strip()
        if field not in supported:
            raise BadRequest(f"field label not supported: {field}")
        reqs.append(FieldRequirement(field, op, _unescape(raw, text)))
    return FieldSelector(resource, tuple(reqs))


def rename_fields(text: str, names: Mapping[str, str]) -> str:
    """A field selector written in another group version's field labels, in the stored kind's
    (upstream's field label conversion funcs, e.g. events.k8s.io/v1's `regarding.name` to
    core's `involvedObject.name`); BadRequest naming a label `names` lacks, or for a term
    that does not parse."""
    out = []
    for term in _split_terms(text):
        if not term.strip():
            continue
        split = _split_term(term)
        if split is None:
            raise BadRequest(f"invalid field selector: '{text}': can't understand '{term}'")
        field, op, raw = split
        stored = names.get(field.strip())
        if stored is None:
            raise BadRequest(f"field label not supported: {field.strip()}")
        out.append(f"{stored}{op}{raw}")
    return ",".join(out)
