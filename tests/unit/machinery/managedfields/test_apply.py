"""An apply request's rules (handlers/patch.go, meta/v1/validation ValidatePatchOptions,
structuredmerge.go): S-API-SSA-9's messages."""

from __future__ import annotations

import pytest

from kemu.machinery.errors import BadRequest, Invalid
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.kinds import BY_KIND
from kemu.machinery.managedfields import apply

CM = BY_KIND["ConfigMap"]


def test_the_field_manager_is_required_and_force_is_for_applies_only() -> None:
    with pytest.raises(Invalid) as e:
        apply.check_options(None, None, True)
    assert e.value.message == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required '
        "for apply patch"
    )
    with pytest.raises(Invalid, match="force: Forbidden: may not be specified for non-apply"):
        apply.check_options("m", "true", False)
    with pytest.raises(Invalid, match="Too long: may not be more than 128 bytes"):
        apply.check_options("m" * 129, None, True)
    apply.check_options("kubectl", "true", True)


def test_the_configuration_names_its_version_and_no_managed_fields() -> None:
    ok: JSONObject = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    apply.check_config(CM, ok, "v1", "c", "default")
    with pytest.raises(BadRequest, match="metadata.managedFields must be nil"):
        apply.check_config(
            CM, {**ok, "metadata": {"name": "c", "managedFields": []}}, "v1", "c", "default"
        )
    with pytest.raises(BadRequest, match="Incorrect version specified in apply patch"):
        apply.check_config(CM, {**ok, "apiVersion": "v2"}, "v1", "c", "default")
    with pytest.raises(BadRequest, match="does not match the name on the URL"):
        apply.check_config(CM, ok, "v1", "other", "default")


def test_yaml_and_json_bodies_read_as_json() -> None:
    """Timestamps stay strings (sigs.k8s.io/yaml), JSON is YAML."""
    assert apply.parse_config(b"a: 2026-01-01\nb: [1, x]\n") == {"a": "2026-01-01", "b": [1, "x"]}
    assert apply.parse_config(b'{"a": {"b": null}}') == {"a": {"b": None}}
    with pytest.raises(BadRequest, match="error decoding YAML"):
        apply.parse_config(b"- a\n- b\n")


def test_aliases_and_deep_nesting_are_refused() -> None:
    """Malformed input is a 400, never a 500 or a blow-up (docs/apiserver.md, issue #28)."""
    bomb = b"a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n"
    with pytest.raises(BadRequest, match="aliases are not accepted"):
        apply.parse_config(bomb)
    with pytest.raises(BadRequest, match="error decoding YAML"):
        apply.parse_config(b"a: " + b"[" * 5000 + b"]" * 5000)
    with pytest.raises(BadRequest, match="nested too deeply"):
        apply.parse_config(b"a: " + b"[" * 150 + b"]" * 150)
    with pytest.raises(BadRequest, match="not valid JSON"):
        apply.parse_config(b"a: .nan\n")
