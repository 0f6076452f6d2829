"""A custom resource against its version's structural schema: validation (upstream's
kube-openapi validate as apiextensions-apiserver pkg/apiserver/validation/validation.go
reports it), defaulting (pkg/apiserver/schema/defaulting/algorithm.go) and pruning
(pkg/apiserver/schema/pruning/algorithm.go), and the structural rules a CRD's schema obeys
(pkg/apiserver/schema/validation.go), in the subset kemu serves."""

from __future__ import annotations

import copy
import datetime as dt
import ipaddress
import re
import uuid
from typing import Final

from kemu.machinery.errors import Cause
from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.machinery.validation import field

_TYPES: Final = ("object", "array", "string", "integer", "number", "boolean")
_META_ROOT: Final = ("apiVersion", "kind", "metadata")
PRESERVE: Final = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING: Final = "x-kubernetes-int-or-string"
EMBEDDED: Final = "x-kubernetes-embedded-resource"


def _props(schema: JSONObject) -> JSONObject:
    p = schema.get("properties")
    return p if isinstance(p, dict) else {}


def _sub(schema: JSONObject, key: str) -> JSONObject | None:
    s = schema.get(key)
    return s if isinstance(s, dict) else None


def _additional(schema: JSONObject) -> JSONObject | None:
    return _sub(schema, "additionalProperties")


# ---------------------------------------------------------------- structural rules


def validate_structural(schema: JSONObject, path: str, root: bool = True) -> list[Cause]:
    """The structural schema rules a CRD's openAPIV3Schema is checked against (a type on
    every specified field unless int-or-string or preserve-unknown-fields; object at the
    root; only name and generateName under metadata; no $ref)."""
    causes: list[Cause] = []
    t = schema.get("type")
    if root and t != "object":
        if not t:
            causes.append(field.required(f"{path}.type", "must not be empty at the root"))
        else:
            causes.append(field.invalid(f"{path}.type", t, "must be object at the root"))
    elif not t and not (schema.get(INT_OR_STRING) is True or schema.get(PRESERVE) is True):
        causes.append(
            field.required(
                f"{path}.type",
                "must not be empty for specified object fields"
                if not root
                else "must not be empty",
            )
        )
    elif t and t not in _TYPES:
        causes.append(field.not_supported(f"{path}.type", t, _TYPES))
    if "$ref" in schema:
        causes.append(field.forbidden(f"{path}.$ref", "$ref is forbidden"))
    if t == "array" and not isinstance(schema.get("items"), dict):
        causes.append(field.required(f"{path}.items", "must be specified"))
    for name, sub in _props(schema).items():
        sub_path = f"{path}.properties[{name}]"
        if not isinstance(sub, dict):
            causes.append(field.invalid(sub_path, sub, "must be a schema object"))
            continue
        if root and name == "metadata":
            extra = set(_props(sub)) - {"name", "generateName"}
            if extra:
                causes.append(
                    field.forbidden(
                        sub_path,
                        "must not specify anything other than name and generateName, but metadata is implicitly specified",
                    )
                )
        causes.extend(validate_structural(sub, sub_path, root=False))
    items = _sub(schema, "items")
    if items is not None:
        causes.extend(validate_structural(items, f"{path}.items", root=False))
    additional = _additional(schema)
    if additional is not None:
        if _props(schema):
            causes.append(
                field.forbidden(
                    f"{path}.additionalProperties",
                    "additionalProperties and properties are mutual exclusive",
                )
            )
        causes.extend(validate_structural(additional, f"{path}.additionalProperties", root=False))
    if "default" in schema and root:
        causes.append(field.forbidden(f"{path}.default", "must not be set at the root"))
    return causes


# ---------------------------------------------------------------- pruning


def prune(obj: JSONObject, schema: JSONObject) -> JSONObject:
    """`obj` without the fields its schema does not specify (apiVersion, kind and metadata
    kept at the root), in place and returned."""
    for key in list(obj):
        if key in _META_ROOT:
            continue
        sub = _props(schema).get(key)
        if isinstance(sub, dict):
            obj[key] = _prune_value(obj[key], sub)
        elif schema.get(PRESERVE) is True:
            continue
        else:
            del obj[key]
    return obj


def _prune_value(value: JSON, schema: JSONObject) -> JSON:
    if isinstance(value, dict):
        if schema.get(EMBEDDED) is True:
            props = _props(schema)
            for key in list(value):
                if key in _META_ROOT:
                    continue
                sub = props.get(key)
                if isinstance(sub, dict):
                    value[key] = _prune_value(value[key], sub)
                elif schema.get(PRESERVE) is not True:
                    del value[key]
            return value
        additional = _additional(schema)
        if additional is not None:
            for key in list(value):
                value[key] = _prune_value(value[key], additional)
            return value
        if schema.get("additionalProperties") is True:
            return value
        props = _props(schema)
        for key in list(value):
            sub = props.get(key)
            if isinstance(sub, dict):
                value[key] = _prune_value(value[key], sub)
            elif schema.get(PRESERVE) is not True:
                del value[key]
        return value
    if isinstance(value, list):
        items = _sub(schema, "items")
        if items is not None:
            return [_prune_value(v, items) for v in value]
    return value


# ---------------------------------------------------------------- defaulting


def apply_defaults(obj: JSON, schema: JSONObject) -> None:
    """Sets the schema's defaults on absent fields, in place (a default itself is pruned and
    defaulted as upstream does when the CRD is read; kemu applies it as written)."""
    if isinstance(obj, dict):
        props = _props(schema)
        for key, sub in props.items():
            if not isinstance(sub, dict):
                continue
            if key not in obj and "default" in sub:
                obj[key] = copy.deepcopy(sub["default"])
            if key in obj:
                apply_defaults(obj[key], sub)
        additional = _additional(schema)
        if additional is not None:
            for v in obj.values():
                apply_defaults(v, additional)
    elif isinstance(obj, list):
        items = _sub(schema, "items")
        if items is not None:
            for v in obj:
                apply_defaults(v, items)


# ---------------------------------------------------------------- validation


def _type_of(value: JSON) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_ok(value: JSON, t: str) -> bool:
    actual = _type_of(value)
    return actual == t or (t == "number" and actual == "integer")


def _num(value: JSON) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


_DATE_TIME: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})"
)


def _format_ok(fmt: str, value: str) -> bool:
    """The formats upstream's apiextensions validate (kube-openapi's strfmt registry, the
    subset kemu checks; others are accepted as upstream accepts unknown formats)."""
    try:
        if fmt == "date-time":
            return _DATE_TIME.fullmatch(value) is not None
        if fmt == "date":
            dt.date.fromisoformat(value)
            return len(value) == 10
        if fmt == "uuid":
            return re.fullmatch(
                r"[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}", value
            ) is not None and bool(uuid.UUID(value))
        if fmt == "ipv4":
            ipaddress.IPv4Address(value)
            return True
        if fmt == "ipv6":
            ipaddress.IPv6Address(value)
            return True
        if fmt == "cidr":
            ipaddress.ip_network(value, strict=False)
            return "/" in value
        if fmt == "byte":
            import base64

            base64.b64decode(value, validate=True)
            return True
        if fmt == "hostname":
            return (
                re.fullmatch(
                    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", value
                )
                is not None
                and len(value) <= 253
            )
        if fmt == "email":
            return re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", value) is not None
    except ValueError:
        return False
    return True


def validate(value: JSON, schema: JSONObject, path: str) -> list[Cause]:
    """Every violation of `schema` by `value` at `path`, with upstream's field paths."""
    causes: list[Cause] = []
    t = schema.get("type")
    if value is None:
        if schema.get("nullable") is True or not t:
            return causes
        causes.append(field.invalid(path, None, f'{path} in body must be of type {t}: "null"'))
        return causes
    if schema.get(INT_OR_STRING) is True:
        if _type_of(value) not in ("integer", "string"):
            causes.append(
                field.invalid(
                    path,
                    value,
                    f'{path} in body must be of type integer or string: "{_type_of(value)}"',
                )
            )
            return causes
    elif isinstance(t, str) and t and not _type_ok(value, t):
        causes.append(
            field.invalid(path, value, f'{path} in body must be of type {t}: "{_type_of(value)}"')
        )
        return causes
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        causes.append(
            field.not_supported(path, value, [v if isinstance(v, str) else _num(v) for v in enum])
        )
    if isinstance(value, int | float) and not isinstance(value, bool):
        causes.extend(_numeric(value, schema, path))
    if isinstance(value, str):
        causes.extend(_string(value, schema, path))
    if isinstance(value, list):
        causes.extend(_array(value, schema, path))
    if isinstance(value, dict):
        causes.extend(_object(value, schema, path))
    return causes


def _numeric(value: float, schema: JSONObject, path: str) -> list[Cause]:
    causes: list[Cause] = []
    maximum = schema.get("maximum")
    if isinstance(maximum, int | float) and not isinstance(maximum, bool):
        if schema.get("exclusiveMaximum") is True and value >= maximum:
            causes.append(field.invalid(path, value, f"must be less than {_num(maximum)}"))
        elif value > maximum:
            causes.append(
                field.invalid(path, value, f"must be less than or equal to {_num(maximum)}")
            )
    minimum = schema.get("minimum")
    if isinstance(minimum, int | float) and not isinstance(minimum, bool):
        if schema.get("exclusiveMinimum") is True and value <= minimum:
            causes.append(field.invalid(path, value, f"must be greater than {_num(minimum)}"))
        elif value < minimum:
            causes.append(
                field.invalid(path, value, f"must be greater than or equal to {_num(minimum)}")
            )
    multiple = schema.get("multipleOf")
    if isinstance(multiple, int | float) and multiple and (value / multiple) % 1:
        causes.append(field.invalid(path, value, f"must be a multiple of {_num(multiple)}"))
    return causes


def _string(value: str, schema: JSONObject, path: str) -> list[Cause]:
    causes: list[Cause] = []
    max_len = schema.get("maxLength")
    if isinstance(max_len, int) and len(value) > max_len:
        causes.append(Cause(path, f"Too long: may not be more than {max_len} bytes"))
    min_len = schema.get("minLength")
    if isinstance(min_len, int) and len(value) < min_len:
        causes.append(
            field.invalid(path, value, f"{path} in body should be at least {min_len} chars long")
        )
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            matched = re.search(pattern, value) is not None
        except re.error:
            matched = True  # (the CRD's validation reports a bad pattern)
        if not matched:
            causes.append(field.invalid(path, value, f"{path} in body should match '{pattern}'"))
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt and not _format_ok(fmt, value):
        causes.append(
            field.invalid(path, value, f'{path} in body must be of type {fmt}: "{value}"')
        )
    return causes


def _array(value: list[JSON], schema: JSONObject, path: str) -> list[Cause]:
    causes: list[Cause] = []
    max_items = schema.get("maxItems")
    if isinstance(max_items, int) and len(value) > max_items:
        causes.append(field.too_many(path, len(value), max_items))
    min_items = schema.get("minItems")
    if isinstance(min_items, int) and len(value) < min_items:
        causes.append(
            field.invalid(
                path, len(value), f"{path} in body should have at least {min_items} items"
            )
        )
    if schema.get("uniqueItems") is True or schema.get("x-kubernetes-list-type") == "set":
        seen: list[JSON] = []
        for i, item in enumerate(value):
            if item in seen:
                causes.append(field.duplicate(f"{path}[{i}]", item))
            seen.append(item)
    items = _sub(schema, "items")
    if items is not None:
        for i, item in enumerate(value):
            causes.extend(validate(item, items, f"{path}[{i}]"))
    return causes


def _object(value: JSONObject, schema: JSONObject, path: str) -> list[Cause]:
    causes: list[Cause] = []
    required = schema.get("required")
    if isinstance(required, list):
        for name in required:
            if isinstance(name, str) and name not in value:
                causes.append(field.required(f"{path}.{name}" if path else name))
    max_props = schema.get("maxProperties")
    if isinstance(max_props, int) and len(value) > max_props:
        causes.append(field.too_many(path, len(value), max_props))
    min_props = schema.get("minProperties")
    if isinstance(min_props, int) and len(value) < min_props:
        causes.append(
            field.invalid(
                path, len(value), f"{path} in body should have at least {min_props} properties"
            )
        )
    props = _props(schema)
    additional = _additional(schema)
    for key, item in value.items():
        sub_path = f"{path}.{key}" if path else key
        sub = props.get(key)
        if isinstance(sub, dict):
            causes.extend(validate(item, sub, sub_path))
        elif additional is not None:
            causes.extend(validate(item, additional, sub_path))
    return causes


def validate_object(obj: JSONObject, schema: JSONObject) -> list[Cause]:
    """A whole custom resource (apiVersion, kind and metadata are the registry's)."""
    body = {k: v for k, v in obj.items() if k not in _META_ROOT}
    root = {k: v for k, v in schema.items() if k != "required"}
    required = schema.get("required")
    causes: list[Cause] = []
    if isinstance(required, list):
        causes.extend(
            field.required(name) for name in required if isinstance(name, str) and name not in obj
        )
    causes.extend(
        _object(
            body,
            {
                **root,
                "properties": {k: v for k, v in _props(schema).items() if k not in _META_ROOT},
            },
            "",
        )
    )
    return causes
