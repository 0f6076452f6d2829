"""Custom resources: the definitions this process serves and a custom resource's strategy
(upstream apiextensions-apiserver pkg/registry/customresource/strategy.go and
status_strategy.go): pruning and defaulting by the storage version's schema on every write,
the status kept by the main resource and written by the status subresource when the CRD
enables it, validation by the schema (and its CEL rules, kemu.machinery.apiextensions.cel)."""

from __future__ import annotations

import json
from typing import Final

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.apiextensions import cel
from kemu.machinery.apiextensions import schema as schemas
from kemu.machinery.apiextensions.crd import Definition
from kemu.machinery.errors import Cause
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.kinds import Kind, forget_custom, kind_of, register_custom
from kemu.machinery.validation.meta import validate_object_meta, validate_object_meta_update

_DEFINITIONS: Final[dict[str, Definition]] = {}
"""resource (plural.group) -> its definition, as kinds' custom table (kinds.register_custom)."""


def register(definition: Definition) -> Kind:
    """Serves `definition`'s custom resources in this process; returns their Kind."""
    kind = definition.to_kind()
    _DEFINITIONS[definition.resource] = definition
    register_custom(kind)
    return kind


def forget(resource: str) -> None:
    _DEFINITIONS.pop(resource, None)
    forget_custom(resource)


def definition_for(kind: Kind) -> Definition | None:
    return _DEFINITIONS.get(kind.resource)


def definitions() -> tuple[Definition, ...]:
    return tuple(_DEFINITIONS.values())


def content(obj: types_pb2.CustomObject) -> JSONObject:
    value = json.loads(obj.content.raw) if obj.content.raw else {}
    return value if isinstance(value, dict) else {}


def set_content(obj: types_pb2.CustomObject, body: JSONObject) -> None:
    # sorted keys: equal objects store equal bytes (no-op writes, generation)
    obj.content.raw = json.dumps(body, separators=(",", ":"), sort_keys=True)


def _schema(definition: Definition | None) -> JSONObject | None:
    return definition.storage.schema if definition is not None else None


def normalize(obj: Message) -> None:
    """Prunes and defaults a custom resource by its storage version's schema (upstream
    prunes and defaults while decoding, before the strategy)."""
    assert isinstance(obj, types_pb2.CustomObject)
    definition = definition_for(kind_of(obj))
    schema = _schema(definition)
    if schema is None or definition is None:
        return
    body = content(obj)
    if not definition.preserve_unknown_fields:
        schemas.prune(body, schema)
    schemas.apply_defaults(body, schema)
    set_content(obj, body)


def status_enabled(obj: Message) -> bool:
    definition = definition_for(kind_of(obj))
    return definition is not None and definition.storage.status


def prepare_for_create(obj: Message) -> None:
    normalize(obj)
    assert isinstance(obj, types_pb2.CustomObject)
    if status_enabled(obj):
        body = content(obj)
        if body.pop("status", None) is not None:
            set_content(obj, body)


def prepare_for_update(new: Message, old: Message) -> None:
    """The main resource's update: with the status subresource on, the stored status stays."""
    normalize(new)
    assert isinstance(new, types_pb2.CustomObject) and isinstance(old, types_pb2.CustomObject)
    if status_enabled(new):
        body = content(new)
        old_status = content(old).get("status")
        body.pop("status", None)
        if old_status is not None:
            body["status"] = old_status
        set_content(new, body)


def prepare_for_status_update(sent: Message, old: Message) -> Message:
    """A status write: the stored object with the status sent."""
    assert isinstance(sent, types_pb2.CustomObject) and isinstance(old, types_pb2.CustomObject)
    normalize(sent)
    result = types_pb2.CustomObject()
    result.CopyFrom(old)
    body = content(old)
    status = content(sent).get("status")
    body.pop("status", None)
    if status is not None:
        body["status"] = status
    set_content(result, body)
    for key, value in sent.metadata.labels.items():
        result.metadata.labels[key] = value
    return result


def validate(obj: Message, old: Message | None = None) -> list[Cause]:
    """A custom resource's metadata, its schema and CEL rules (upstream's
    customResourceStrategy.Validate / ValidateUpdate)."""
    assert isinstance(obj, types_pb2.CustomObject)
    kind = kind_of(obj)
    causes = validate_object_meta(obj.metadata, namespaced=kind.namespaced)
    if old is not None:
        assert isinstance(old, types_pb2.CustomObject)
        causes.extend(validate_object_meta_update(obj.metadata, old.metadata))
    definition = definition_for(kind)
    schema = _schema(definition)
    if schema is None:
        return causes
    body = {"apiVersion": obj.api_version, "kind": obj.kind, **content(obj)}
    causes.extend(schemas.validate_object(body, schema))
    if not causes:
        old_body = None
        if old is not None:
            assert isinstance(old, types_pb2.CustomObject)
            old_body = {"apiVersion": old.api_version, "kind": old.kind, **content(old)}
        causes.extend(cel.validate(body, old_body, schema))
    return causes
