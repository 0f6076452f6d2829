"""docs/apiserver.md's table of what kemu does not serve is upstream 1.37's listable kinds (a
kind with a <Kind>List in upstream's OpenAPI, from the kubernetes-validate wheel that
`make gen-openapi` reads) minus kemu's kinds: a kind added to kemu, or to upstream, must
update the table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import kubernetes_validate

from kemu.machinery.kinds import KINDS

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = (
    Path(kubernetes_validate.__file__).parent
    / "kubernetes-json-schema"
    / "v1.37.0-local"
    / "_definitions.json"
)
SECTION = "### What kemu does not serve"
# APIGroup/APIGroupList are discovery documents, not a resource.
NOT_RESOURCES = {("", "APIGroup")}


def upstream_listable() -> set[tuple[str, str]]:
    definitions = json.loads(UPSTREAM.read_text())["$defs"]
    gvks = {
        (gvk["group"], gvk["kind"])
        for d in definitions.values()
        for gvk in d.get("x-kubernetes-group-version-kind", [])
    }
    return {(g, k) for g, k in gvks if (g, k + "List") in gvks} - NOT_RESOURCES


def documented() -> set[tuple[str, str]]:
    text = (ROOT / "docs" / "apiserver.md").read_text()
    section = text.split(SECTION, 1)[1].split("\n### ", 1)[0]
    out: set[tuple[str, str]] = set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("group", "") or re.fullmatch(r"-+", cells[0]):
            continue
        group = "" if cells[0] == "core" else cells[0]
        out.update((group, kind.strip()) for kind in cells[1].split(","))
    return out


def test_the_docs_list_exactly_upstreams_listable_kinds_kemu_does_not_serve() -> None:
    served = {(k.group, k.kind) for k in KINDS}
    upstream = upstream_listable()
    assert served <= upstream, f"kemu serves kinds upstream does not list: {served - upstream}"
    assert documented() == upstream - served
