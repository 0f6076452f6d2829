"""A custom resource against its structural schema: validation, pruning, defaulting, CEL
rules; a CRD's own validation (S-CRD-5..8)."""

from __future__ import annotations

import json
from typing import Any

from kemu.api.v1 import types_pb2
from kemu.machinery.apiextensions import cel, crd, schema
from kemu.machinery.errors import Cause
from kemu.machinery.jsonvalue import JSONObject

SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["image"],
            "properties": {
                "image": {"type": "string", "pattern": "^[a-z]+$"},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                "mode": {"type": "string", "enum": ["Fast", "Slow"]},
                "ip": {"type": "string", "format": "ipv4"},
                "port": {"x-kubernetes-int-or-string": True},
                "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "nested": {
                    "type": "object",
                    "default": {},
                    "properties": {"level": {"type": "string", "default": "info"}},
                },
            },
        }
    },
}


def _fields(causes: list[Cause]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


def test_s_crd_5_validation_names_the_field_with_upstreams_message() -> None:
    body: JSONObject = {"spec": {"image": "Bad1", "replicas": 20, "mode": "Medium", "ip": "1.2.3"}}
    got = _fields(schema.validate_object(body, SCHEMA))
    assert "spec.replicas: Invalid value: 20: must be less than or equal to 10" in got
    assert "spec.image: Invalid value: \"Bad1\": spec.image in body should match '^[a-z]+$'" in got
    assert 'spec.mode: Unsupported value: "Medium": supported values: "Fast", "Slow"' in got
    assert any(g.startswith("spec.ip: Invalid value") for g in got)
    missing = _fields(schema.validate_object({"spec": {}}, SCHEMA))
    assert missing == ["spec.image: Required value"]
    typed = _fields(schema.validate_object({"spec": {"image": "a", "replicas": "x"}}, SCHEMA))
    assert typed == [
        'spec.replicas: Invalid value: "x": spec.replicas in body must be of type integer: "string"'
    ]
    assert _fields(
        schema.validate_object({"spec": {"image": "a", "tags": ["a", "b", "c"]}}, SCHEMA)
    ) == ["spec.tags: Too many: 3: must have at most 2 items"]
    assert (
        schema.validate_object({"spec": {"image": "a", "port": "http", "replicas": 1.0}}, SCHEMA)
        == []
    )


def test_s_crd_6_pruning_and_defaulting() -> None:
    body: dict[str, Any] = {
        "apiVersion": "x/v1",
        "kind": "K",
        "metadata": {"name": "a"},
        "spec": {"image": "a", "unknown": 1, "extra": {"any": {"thing": 1}}, "labels": {"a": "b"}},
        "other": True,
    }
    schema.prune(body, SCHEMA)
    schema.apply_defaults(body, SCHEMA)
    assert body == {
        "apiVersion": "x/v1",
        "kind": "K",
        "metadata": {"name": "a"},
        "spec": {
            "image": "a",
            "replicas": 1,
            "extra": {"any": {"thing": 1}},
            "labels": {"a": "b"},
            "nested": {"level": "info"},
        },
    }


def test_s_crd_7_cel_rules_transition_rules_and_message_expressions() -> None:
    rules_schema: JSONObject = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.replicas <= self.maxReplicas", "message": "replicas above max"},
                    {
                        "rule": "self.size >= oldSelf.size",
                        "messageExpression": "'size may not shrink below ' + string(oldSelf.size)",
                    },
                    {"rule": "self.name.startsWith('a')", "fieldPath": ".name"},
                ],
                "properties": {
                    "replicas": {"type": "integer"},
                    "maxReplicas": {"type": "integer"},
                    "size": {"type": "integer"},
                    "name": {"type": "string"},
                },
            }
        },
    }
    ok: JSONObject = {"spec": {"replicas": 1, "maxReplicas": 2, "size": 5, "name": "ab"}}
    assert cel.validate(ok, None, rules_schema) == []
    bad: JSONObject = {"spec": {"replicas": 3, "maxReplicas": 2, "size": 1, "name": "b"}}
    # on create the transition rule is not evaluated
    assert _fields(cel.validate(bad, None, rules_schema)) == [
        'spec: Invalid value: "object": replicas above max',
        "spec.name: Invalid value: \"object\": failed rule: self.name.startsWith('a')",
    ]
    assert 'spec: Invalid value: "object": size may not shrink below 5' in _fields(
        cel.validate(bad, ok, rules_schema)
    )
    assert cel.validate_rules({"x-kubernetes-validations": [{"rule": "self +"}]}, "s")[0].field == (
        "s.x-kubernetes-validations[0].rule"
    )


def _crd(
    spec: dict[str, Any], name: str = "widgets.example.com"
) -> types_pb2.CustomResourceDefinition:
    out = types_pb2.CustomResourceDefinition()
    out.metadata.name = name
    out.spec.raw = json.dumps(spec)
    return out


def _spec(**over: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "listKind": "WidgetList",
        },
        "versions": [
            {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": SCHEMA}},
            {
                "name": "v1beta1",
                "served": True,
                "storage": False,
                "schema": {"openAPIV3Schema": SCHEMA},
            },
        ],
    }
    spec.update(over)
    return spec


def test_s_crd_8_crd_validation() -> None:
    assert crd.validate_crd(_crd(_spec())) == []
    two = _spec()
    two["versions"][1]["storage"] = True
    assert _fields(crd.validate_crd(_crd(two))) == [
        'spec.versions: Invalid value: "": must have exactly one version marked as storage version'
    ]
    wrong = _fields(crd.validate_crd(_crd(_spec(), name="other.example.com")))
    assert any('must be spec.names.plural+"."+spec.group' in w for w in wrong)
    nogroup = _fields(crd.validate_crd(_crd(_spec(group="example"), name="widgets.example")))
    assert (
        'spec.group: Invalid value: "example": should be a domain with at least one dot' in nogroup
    )
    untyped = _spec()
    untyped["versions"][0]["schema"] = {
        "openAPIV3Schema": {"type": "object", "properties": {"spec": {"properties": {}}}}
    }
    assert _fields(crd.validate_crd(_crd(untyped))) == [
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: "
        "must not be empty for specified object fields"
    ]
    noschema = _spec()
    del noschema["versions"][0]["schema"]
    assert _fields(crd.validate_crd(_crd(noschema))) == [
        "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"
    ]


def test_definition_kind_and_version_priority() -> None:
    definition = crd.definition_of(_crd(_spec()))
    kind = definition.to_kind()
    assert kind.resource == "widgets.example.com" and kind.api_version == "example.com/v1"
    assert kind.storage_prefix == "/registry/example.com/widgets/"
    assert definition.served_versions() == ("v1", "v1beta1")
    assert sorted(["v1alpha1", "v2", "v1beta2", "v1", "foo"], key=crd.version_priority) == [
        "v2",
        "v1",
        "v1beta2",
        "v1alpha1",
        "foo",
    ]
