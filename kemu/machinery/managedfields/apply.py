"""What an apply request carries (upstream's handlers/patch.go applyPatcher and
meta/v1/validation ValidatePatchOptions): the applied configuration, YAML or JSON, read as
JSON; the field manager, required and checked; `force`."""

from __future__ import annotations

import json
from typing import Final

import yaml

from kemu.machinery import jsonutil
from kemu.machinery.errors import BadRequest, Cause, Invalid
from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.machinery.kinds import Kind

CONTENT_TYPE: Final = "application/apply-patch+yaml"
FIELD_MANAGER_MAX_LENGTH: Final = 128


class _Loader(yaml.SafeLoader):
    """YAML read as sigs.k8s.io/yaml reads it into JSON: timestamps stay strings. Aliases
    are refused (an applied configuration has no use for them, and a few nested ones expand
    into gigabytes)."""

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("aliases are not accepted in an applied configuration")
        return super().compose_node(parent, index)


_Loader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for ch, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _jsonable(v: object, path: str) -> JSON:
    if isinstance(v, dict):
        out: JSONObject = {}
        for k, item in v.items():
            if not isinstance(k, str):
                k = str(k).lower() if isinstance(k, bool) else str(k)
            out[k] = _jsonable(item, f"{path}.{k}" if path else k)
        return out
    if isinstance(v, list):
        return [_jsonable(i, path) for i in v]
    if v is None or isinstance(v, str | int | float | bool):
        return v
    return str(v)


def parse_config(raw: bytes) -> JSONObject:
    """The applied configuration: one YAML (or JSON) object; BadRequest otherwise."""
    try:
        doc = yaml.load(raw.decode("utf-8"), Loader=_Loader)
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise BadRequest(f"error decoding YAML: {e}") from None
    except RecursionError:
        raise BadRequest("error decoding YAML: the document nests too deeply") from None
    if not isinstance(doc, dict):
        raise BadRequest("error decoding YAML: the applied configuration must be an object")
    try:
        text = json.dumps(_jsonable(doc, ""))
    except (RecursionError, ValueError):
        raise BadRequest("error decoding YAML: the document nests too deeply") from None
    # the checks of every JSON body (depth, NaN, numbers out of range): jsonutil's
    out = jsonutil.loads(text, "the applied configuration")
    assert isinstance(out, dict)
    return out


def check_options(field_manager: str | None, force: str | None, apply: bool) -> None:
    """ValidatePatchOptions: an apply needs a fieldManager; `force` is for applies only; a
    field manager has at most 128 printable characters. 422 on PatchOptions.meta.k8s.io."""
    causes: list[Cause] = []
    if apply:
        if not field_manager:
            causes.append(Cause("fieldManager", "Required value: is required for apply patch"))
    elif force is not None:
        causes.append(Cause("force", "Forbidden: may not be specified for non-apply patch"))
    if field_manager:
        if len(field_manager) > FIELD_MANAGER_MAX_LENGTH:
            causes.append(
                Cause(
                    "fieldManager",
                    f"Too long: may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes",
                )
            )
        if not all(ch.isprintable() for ch in field_manager):
            causes.append(
                Cause(
                    "fieldManager",
                    f"Invalid value: {field_manager!r}: must only contain printable characters",
                )
            )
    if causes:
        raise Invalid.from_causes('PatchOptions.meta.k8s.io ""', causes)


def check_config(
    kind: Kind, config: JSONObject, api_version: str, name: str, namespace: str
) -> None:
    """The applied object must name its kind and version (the request's) and no
    managedFields (structuredmerge.go Apply; patch.go)."""
    given = config.get("apiVersion")
    if not isinstance(given, str) or not given:
        raise BadRequest("apiVersion must be set in the applied configuration")
    if given != api_version:
        raise BadRequest(
            "Incorrect version specified in apply patch. Specified patch version: "
            f"{given}, expected: {api_version}"
        )
    if config.get("kind") != kind.kind:
        raise BadRequest(
            f"Incorrect kind specified in apply patch: {config.get('kind')!r}, "
            f"expected: {kind.kind!r}"
        )
    meta = config.get("metadata")
    if isinstance(meta, dict):
        if meta.get("managedFields") is not None:
            raise BadRequest("metadata.managedFields must be nil")
        given_ns = meta.get("namespace")
        if kind.namespaced and given_ns and given_ns != namespace:
            raise BadRequest(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
        given_name = meta.get("name")
        if given_name is not None and given_name != name:
            raise BadRequest(
                f"the name of the object ({given_name}) does not match the name on the URL ({name})"
            )
