"""Writes kemu/machinery/openapi/data/: upstream's OpenAPI definitions for the kinds kemu
serves, per emulated minor, from the JSON schemas of the PyPI wheel kubernetes-validate
(kubernetes_validate/kubernetes-json-schema/v1.<minor>.0-local/_definitions.json, generated
from upstream's api/openapi-spec; 1.25..1.37: older minors read 1.25's).

Only the definitions reachable from a kind kemu serves at that minor are kept, with what
kubectl and the apiserver read: description, required, property types, refs, enums, formats,
x-kubernetes-list-type / -list-map-keys / -map-type / -patch-strategy / -patch-merge-key, and
the GroupVersionKind. The newest minor is written whole (v1.<newest>.json); each older one as
the definitions that differ from the next newer minor's and the names it lacks
(v1.<minor>.diff.json), so that a description edited once costs one definition.

`make gen-openapi` runs it (after a change to the kinds kemu serves, or to the pinned wheel);
`make check-gen` regenerates into a scratch directory and diffs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate

from kemu.machinery.kinds import KINDS

FIRST: int = 25
NEWEST: int = 37
_REF_PREFIX = "#/$defs/"
_PROP_KEYS = (
    "description",
    "type",
    "format",
    "enum",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-patch-strategy",
    "x-kubernetes-patch-merge-key",
)
# Upstream writes these as strings with a format; the JSON schemas as oneOf (to accept YAML
# numbers): kept in upstream's OpenAPI form (api/openapi-spec/v3).
_SPECIAL = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "type": "string",
        "format": "int-or-string",
    },
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
}

Json = Any  # (JSON read from the wheel: checked where used)


def _source(minor: int) -> dict[str, Json]:
    root = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    path = root / f"v1.{minor}.0-local" / "_definitions.json"
    defs: dict[str, Json] = json.loads(path.read_text())["$defs"]
    return defs


def _type(value: Json) -> Json:
    """The JSON schemas' ["string", "null"] (optional) is OpenAPI's "string"."""
    if isinstance(value, list):
        rest = [t for t in value if t != "null"]
        return rest[0] if len(rest) == 1 else rest
    return value


def _prop(p: dict[str, Json], refs: set[str]) -> dict[str, Json]:
    out: dict[str, Json] = {}
    if "$ref" in p:
        name = p["$ref"].removeprefix(_REF_PREFIX)
        refs.add(name)
        out["$ref"] = name
    for key in _PROP_KEYS:
        if key in p:
            out[key] = _type(p[key]) if key == "type" else p[key]
    if "enum" in out:
        out["enum"] = [e for e in out["enum"] if e is not None]
    for key in ("items", "additionalProperties"):
        if isinstance(p.get(key), dict):
            out[key] = _prop(p[key], refs)
    return out


def _definition(name: str, d: dict[str, Json], refs: set[str]) -> dict[str, Json]:
    out: dict[str, Json] = {}
    if "description" in d:
        out["description"] = d["description"]
    out.update(_SPECIAL.get(name, {}))
    if "type" in d and name not in _SPECIAL:
        out["type"] = _type(d["type"])
    if "format" in d and name not in _SPECIAL:
        out["format"] = d["format"]
    if d.get("required"):
        out["required"] = d["required"]
    if "properties" in d:
        props = d["properties"]
        out["properties"] = {k: _prop(props[k], refs) for k in sorted(props)}
        for key in ("apiVersion", "kind"):  # (the schemas pin them with an enum)
            out["properties"].get(key, {}).pop("enum", None)
    for key in ("x-kubernetes-map-type", "x-kubernetes-group-version-kind"):
        if key in d:
            out[key] = d[key]
    return out


def definitions(minor: int) -> dict[str, Json]:
    """The definitions reachable from the kinds kemu serves at 1.`minor` (every group version
    any runtime config may enable), from the wheel's 1.max(minor, 25)."""
    source = _source(max(minor, FIRST))
    by_gvk = {
        (g["group"], g["version"], g["kind"]): name
        for name, d in source.items()
        for g in d.get("x-kubernetes-group-version-kind", ())
    }
    todo: list[str] = []
    for kind in KINDS:
        for gv in kind.api_versions_at(minor):
            group, _, version = gv.rpartition("/")
            name = by_gvk.get((group, version, kind.kind))
            if name is None:
                raise SystemExit(f"1.{minor}: no upstream definition for {gv} {kind.kind}")
            todo.append(name)
    out: dict[str, Json] = {}
    while todo:
        name = todo.pop()
        if name in out:
            continue
        refs: set[str] = set()
        out[name] = _definition(name, source[name], refs)
        todo.extend(sorted(refs - out.keys()))
    return dict(sorted(out.items()))


def _patch(newer: dict[str, Json], older: dict[str, Json]) -> dict[str, Json]:
    """What turns `newer` into `older`: changed keys (null: absent), and under "properties"
    the changed properties alone (null: absent)."""
    out: dict[str, Json] = {}
    for key in sorted(newer.keys() | older.keys()):
        if key == "properties":
            new, old = newer.get(key, {}), older.get(key, {})
            props = {
                p: old.get(p) for p in sorted(new.keys() | old.keys()) if new.get(p) != old.get(p)
            }
            if props:
                out[key] = props
        elif newer.get(key) != older.get(key):
            out[key] = older.get(key)
    return out


def _dump(value: Json) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False) + "\n"


def main(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    newer = definitions(NEWEST)
    (out_dir / f"v1.{NEWEST}.json").write_text(_dump(newer))
    for minor in range(NEWEST - 1, FIRST - 1, -1):
        defs = definitions(minor)
        diff = {
            "set": {k: v for k, v in defs.items() if k not in newer},
            "patch": {
                k: _patch(newer[k], v) for k, v in defs.items() if k in newer and newer[k] != v
            },
            "drop": sorted(newer.keys() - defs.keys()),
        }
        (out_dir / f"v1.{minor}.diff.json").write_text(_dump(diff))
        newer = defs


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("kemu/machinery/openapi/data"))
