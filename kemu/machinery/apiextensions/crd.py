"""A CustomResourceDefinition read into typed values, its validation and the Kind of its
custom resources (upstream apiextensions-apiserver pkg/apis/apiextensions/validation/
validation.go and pkg/controller/status/naming_controller.go, establish/).

kemu keeps a CRD's spec and status as their JSON (types.proto CustomResourceDefinition);
`definition_of` reads a validated one."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.apiextensions.cel import validate_rules
from kemu.machinery.apiextensions.schema import validate_structural
from kemu.machinery.errors import Cause
from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.machinery.kinds import Kind
from kemu.machinery.validation import field
from kemu.machinery.validation.meta import validate_object_meta
from kemu.machinery.validation.names import (
    is_dns1035_label,
    is_dns1123_subdomain,
    name_is_dns_subdomain,
)

CLEANUP_FINALIZER: Final = "customresourcecleanup.apiextensions.k8s.io"
"""Upstream's finalizer on every CRD: its custom resources are deleted before it goes
(pkg/controller/finalizer/crd_finalizer.go)."""
NAMES_ACCEPTED: Final = "NamesAccepted"
ESTABLISHED: Final = "Established"
TERMINATING: Final = "Terminating"
CLUSTER: Final = "Cluster"
NAMESPACED: Final = "Namespaced"
_PRINTER_TYPES: Final = ("integer", "number", "string", "boolean", "date")


@dataclass(frozen=True)
class Column:
    """One additionalPrinterColumn."""

    name: str
    type: str
    json_path: str
    format: str = ""
    description: str = ""
    priority: int = 0


@dataclass(frozen=True)
class Version:
    name: str
    served: bool
    storage: bool
    schema: JSONObject | None
    """The version's openAPIV3Schema."""
    status: bool
    """The status subresource is on."""
    scale: JSONObject | None
    """The scale subresource (specReplicasPath, statusReplicasPath, labelSelectorPath)."""
    columns: tuple[Column, ...]
    deprecated: bool = False
    deprecation_warning: str = ""


@dataclass(frozen=True)
class Definition:
    """What a CRD defines (read from a valid CRD by `definition_of`)."""

    name: str
    group: str
    plural: str
    singular: str
    kind: str
    list_kind: str
    short_names: tuple[str, ...]
    categories: tuple[str, ...]
    namespaced: bool
    versions: tuple[Version, ...]
    preserve_unknown_fields: bool = False

    @property
    def resource(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def storage(self) -> Version:
        return next(v for v in self.versions if v.storage)

    def version(self, name: str) -> Version | None:
        return next((v for v in self.versions if v.name == name), None)

    def served_versions(self) -> tuple[str, ...]:
        """Served versions, preferred first (upstream sorts by kube-aware version priority)."""
        return tuple(sorted((v.name for v in self.versions if v.served), key=version_priority))

    def to_kind(self) -> Kind:
        storage = self.storage
        subs = tuple(
            name
            for name, on in (("status", storage.status), ("scale", storage.scale is not None))
            if on
        )
        served = tuple(f"{self.group}/{v}" for v in self.served_versions())
        return Kind(
            self.kind,
            self.resource,
            f"{self.group}/{storage.name}",
            self.namespaced,
            types_pb2.CustomObject,
            "custom_object",
            self.short_names,
            has_status=storage.status,
            versions=((0, served),),
            plural=self.plural,
            singular=self.singular,
            custom_subresources=subs,
        )


def version_priority(name: str) -> tuple[int, int, int, str]:
    """Kubernetes' version ordering (apimachinery's CompareKubeAwareVersionStrings): GA
    before beta before alpha, higher first; other names last, alphabetically."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", name)
    if m is None:
        return (3, 0, 0, name)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, name)


def spec_of(crd: types_pb2.CustomResourceDefinition) -> JSONObject:
    return _object(crd.spec.raw)


def status_of(crd: types_pb2.CustomResourceDefinition) -> JSONObject:
    return _object(crd.status.raw)


def set_status(crd: types_pb2.CustomResourceDefinition, status: JSONObject) -> None:
    crd.status.raw = json.dumps(status, separators=(",", ":"), sort_keys=True)


def _object(raw: str) -> JSONObject:
    value = json.loads(raw) if raw else {}
    return value if isinstance(value, dict) else {}


def _str(obj: JSON, key: str) -> str:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, str) else ""


def _dict(obj: JSON, key: str) -> JSONObject:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def _list(obj: JSON, key: str) -> list[JSON]:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, list) else []


def definition_of(crd: types_pb2.CustomResourceDefinition) -> Definition:
    spec = spec_of(crd)
    names = _dict(spec, "names")
    versions = []
    for v in _list(spec, "versions"):
        if not isinstance(v, dict):
            continue
        subs = _dict(v, "subresources")
        schema = _dict(v, "schema").get("openAPIV3Schema")
        columns = tuple(
            Column(
                _str(c, "name"),
                _str(c, "type"),
                _str(c, "jsonPath"),
                _str(c, "format"),
                _str(c, "description"),
                int(p) if isinstance(p := c.get("priority"), int) else 0,
            )
            for c in _list(v, "additionalPrinterColumns")
            if isinstance(c, dict)
        )
        scale = subs.get("scale")
        versions.append(
            Version(
                _str(v, "name"),
                v.get("served") is True,
                v.get("storage") is True,
                schema if isinstance(schema, dict) else None,
                isinstance(subs.get("status"), dict),
                scale if isinstance(scale, dict) else None,
                columns,
                v.get("deprecated") is True,
                _str(v, "deprecationWarning"),
            )
        )
    return Definition(
        name=crd.metadata.name,
        group=_str(spec, "group"),
        plural=_str(names, "plural"),
        singular=_str(names, "singular") or _str(names, "plural"),
        kind=_str(names, "kind"),
        list_kind=_str(names, "listKind") or _str(names, "kind") + "List",
        short_names=tuple(s for s in _list(names, "shortNames") if isinstance(s, str)),
        categories=tuple(s for s in _list(names, "categories") if isinstance(s, str)),
        namespaced=_str(spec, "scope") == NAMESPACED,
        versions=tuple(versions),
        preserve_unknown_fields=spec.get("preserveUnknownFields") is True,
    )


# ---------------------------------------------------------------- defaults


def set_defaults(crd: types_pb2.CustomResourceDefinition) -> None:
    """Upstream's v1 defaults (pkg/apis/apiextensions/v1/defaults.go): names.singular (the
    plural lowercased: upstream leaves it to the client; kubectl sets it), names.listKind
    (kind + "List"), conversion.strategy None."""
    spec = spec_of(crd)
    names = _dict(spec, "names")
    if names:
        if not names.get("listKind") and isinstance(names.get("kind"), str) and names["kind"]:
            names["listKind"] = f"{names['kind']}List"
        if not names.get("singular") and isinstance(names.get("kind"), str):
            names["singular"] = str(names["kind"]).lower()
        spec["names"] = names
    conversion = _dict(spec, "conversion")
    if not conversion.get("strategy"):
        conversion["strategy"] = "None"
    spec["conversion"] = conversion
    crd.spec.raw = json.dumps(spec, separators=(",", ":"), sort_keys=True)


# ---------------------------------------------------------------- validation


def validate_crd(crd: types_pb2.CustomResourceDefinition) -> list[Cause]:
    """Upstream's ValidateCustomResourceDefinition."""
    spec = spec_of(crd)
    names = _dict(spec, "names")
    group = _str(spec, "group")
    plural = _str(names, "plural")

    def name_fn(name: str, prefix: bool) -> list[str]:
        out = name_is_dns_subdomain(name, prefix)
        if name != f"{plural}.{group}":
            out.append('must be spec.names.plural+"."+spec.group')
        return out

    causes = validate_object_meta(crd.metadata, namespaced=False, name_fn=name_fn)
    if not group:
        causes.append(field.required("spec.group"))
    elif errs := is_dns1123_subdomain(group):
        causes.append(field.invalid("spec.group", group, ",".join(errs)))
    elif len(group.split(".")) < 2:
        causes.append(
            field.invalid("spec.group", group, "should be a domain with at least one dot")
        )
    scope = _str(spec, "scope")
    if not scope:
        causes.append(field.required("spec.scope"))
    elif scope not in (CLUSTER, NAMESPACED):
        causes.append(field.not_supported("spec.scope", scope, (CLUSTER, NAMESPACED)))
    versions = _list(spec, "versions")
    storage_count = 0
    seen: set[str] = set()
    unique = True
    for i, v in enumerate(versions):
        path = f"spec.versions[{i}]"
        if not isinstance(v, dict):
            causes.append(field.invalid(path, v, "must be an object"))
            continue
        name = _str(v, "name")
        if v.get("storage") is True:
            storage_count += 1
        if name in seen:
            unique = False
        seen.add(name)
        if errs := is_dns1035_label(name):
            causes.append(field.invalid(f"{path}.name", name, ",".join(errs)))
        causes.extend(_validate_version(v, path))
    if not versions:
        causes.append(
            field.invalid(
                "spec.versions", "", "must have exactly one version marked as storage version"
            )
        )
    else:
        if not unique:
            causes.append(field.invalid("spec.versions", "", "must contain unique version names"))
        if storage_count != 1:
            causes.append(
                field.invalid(
                    "spec.versions", "", "must have exactly one version marked as storage version"
                )
            )
    for key in ("plural", "singular", "kind", "listKind"):
        if not _str(names, key):
            causes.append(field.required(f"spec.names.{key}"))
    causes.extend(_validate_names(names))
    strategy = _str(_dict(spec, "conversion"), "strategy")
    if strategy and strategy not in ("None", "Webhook"):
        causes.append(
            field.not_supported("spec.conversion.strategy", strategy, ("None", "Webhook"))
        )
    if strategy == "Webhook":
        causes.append(
            field.forbidden(
                "spec.conversion.strategy",
                "kemu serves conversion strategy None only (no conversion webhooks)",
            )
        )
    return causes


def validate_crd_update(
    crd: types_pb2.CustomResourceDefinition, old: types_pb2.CustomResourceDefinition
) -> list[Cause]:
    """The update's own rules (ValidateCustomResourceDefinitionSpecUpdate): group and
    plural immutable; scope and kind once Established."""
    causes: list[Cause] = []
    spec = spec_of(crd)
    names = _dict(spec, "names")
    group = _str(spec, "group")
    plural = _str(names, "plural")
    scope = _str(spec, "scope")
    old_spec = spec_of(old)
    old_names = _dict(old_spec, "names")
    if group != _str(old_spec, "group"):
        causes.append(field.invalid("spec.group", group, "field is immutable"))
    if plural != _str(old_names, "plural"):
        causes.append(field.invalid("spec.names.plural", plural, "field is immutable"))
    if is_established(old):
        if scope != _str(old_spec, "scope"):
            causes.append(field.invalid("spec.scope", scope, "field is immutable"))
        if _str(names, "kind") != _str(old_names, "kind"):
            causes.append(
                field.invalid("spec.names.kind", _str(names, "kind"), "field is immutable")
            )
    return causes


def _validate_names(names: JSONObject) -> list[Cause]:
    """Upstream's ValidateCustomResourceDefinitionNames."""
    causes: list[Cause] = []
    for key in ("plural", "singular"):
        value = _str(names, key)
        if value and (errs := is_dns1035_label(value)):
            causes.append(field.invalid(f"spec.names.{key}", value, ",".join(errs)))
    for key in ("kind", "listKind"):
        value = _str(names, key)
        if value and (errs := is_dns1035_label(value.lower())):
            causes.append(
                field.invalid(
                    f"spec.names.{key}",
                    value,
                    "may have mixed case, but should otherwise match: " + ",".join(errs),
                )
            )
    if _str(names, "kind") and _str(names, "kind") == _str(names, "listKind"):
        causes.append(
            field.invalid(
                "spec.names.listKind",
                _str(names, "listKind"),
                "kind and listKind may not be the same",
            )
        )
    for i, short in enumerate(_list(names, "shortNames")):
        if isinstance(short, str) and (errs := is_dns1035_label(short)):
            causes.append(field.invalid(f"spec.names.shortNames[{i}]", short, ",".join(errs)))
    return causes


def _validate_version(v: JSONObject, path: str) -> list[Cause]:
    causes: list[Cause] = []
    schema = _dict(v, "schema").get("openAPIV3Schema")
    if not isinstance(schema, dict):
        causes.append(field.required(f"{path}.schema.openAPIV3Schema", "schemas are required"))
    else:
        causes.extend(validate_structural(schema, f"{path}.schema.openAPIV3Schema"))
        causes.extend(validate_rules(schema, f"{path}.schema.openAPIV3Schema"))
    for i, c in enumerate(_list(v, "additionalPrinterColumns")):
        cpath = f"{path}.additionalPrinterColumns[{i}]"
        if not isinstance(c, dict):
            continue
        if not _str(c, "name"):
            causes.append(field.required(f"{cpath}.name"))
        t = _str(c, "type")
        if not t:
            causes.append(field.required(f"{cpath}.type"))
        elif t not in _PRINTER_TYPES:
            causes.append(field.not_supported(f"{cpath}.type", t, _PRINTER_TYPES))
        if not _str(c, "jsonPath"):
            causes.append(field.required(f"{cpath}.JSONPath"))
    scale = _dict(_dict(v, "subresources"), "scale")
    if scale:
        spath = f"{path}.subresources.scale"
        for key in ("specReplicasPath", "statusReplicasPath"):
            p = _str(scale, key)
            if not p:
                causes.append(field.required(f"{spath}.{key}"))
            elif not p.startswith("."):
                causes.append(
                    field.invalid(
                        f"{spath}.{key}",
                        p,
                        "should be a json path under .spec"
                        if key.startswith("spec")
                        else "should be a json path under .status",
                    )
                )
    return causes


# ---------------------------------------------------------------- conditions


def condition(crd: types_pb2.CustomResourceDefinition, type_: str) -> JSONObject | None:
    for c in _list(status_of(crd), "conditions"):
        if isinstance(c, dict) and c.get("type") == type_:
            return c
    return None


def is_established(crd: types_pb2.CustomResourceDefinition) -> bool:
    c = condition(crd, ESTABLISHED)
    return c is not None and c.get("status") == "True"


def with_condition(
    status: JSONObject, type_: str, value: str, reason: str, message: str, now: str
) -> JSONObject:
    """`status` with the condition set (its lastTransitionTime kept when the status is the
    same, as upstream's SetCRDCondition)."""
    conditions = [c for c in _list(status, "conditions") if isinstance(c, dict)]
    out: list[JSON] = []
    found = False
    for c in conditions:
        if c.get("type") == type_:
            found = True
            when = c.get("lastTransitionTime") if c.get("status") == value else now
            out.append(
                {
                    "type": type_,
                    "status": value,
                    "lastTransitionTime": when,
                    "reason": reason,
                    "message": message,
                }
            )
        else:
            out.append(c)
    if not found:
        out.append(
            {
                "type": type_,
                "status": value,
                "lastTransitionTime": now,
                "reason": reason,
                "message": message,
            }
        )
    return {**status, "conditions": out}


def accepted_names(spec: JSONObject) -> JSONObject:
    """status.acceptedNames: the spec's names (kemu's naming check refuses conflicts at
    create, so a stored CRD's names are accepted)."""
    names = _dict(spec, "names")
    out: JSONObject = {k: v for k, v in names.items() if v not in (None, "", [])}
    return out
