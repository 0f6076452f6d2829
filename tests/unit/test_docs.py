"""The map and the process pages name files that exist: every backticked repository path in
ARCHITECTURE.md and docs/*.md (a word with a slash, ending in .py, .md, .yaml or a slash) is
in the checkout."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP = {
    "apiserver",
    "autoscaler",
    "bench",
    "cloud",
    "controllermanager",
    "docs",
    "examples",
    "hack",
    "kemu",
    "kubelet",
    "proto",
    "scheduler",
    "tests",
    ".ci",
}
# A backticked path, or a path that starts a line of a file listing.
PATH = re.compile(r"`([\w./-]+/[\w./-]*)`|^([\w.-]+/[\w./-]+\.py)\s", re.M)


def paths_in(page: Path) -> set[str]:
    out = set()
    for m in PATH.finditer(page.read_text()):
        raw = m.group(1) or m.group(2)
        path = raw.rstrip("/")
        first = path.split("/", 1)[0]
        if first in TOP and (path.endswith((".py", ".md", ".yaml", ".proto")) or raw.endswith("/")):
            out.add(path)
    return out


def test_the_pages_exist() -> None:
    names = {p.name for p in PAGES}
    assert "ARCHITECTURE.md" in names and len(names) >= 6, names


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_path_a_page_names_exists(page: Path) -> None:
    paths = paths_in(page)
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"{page.name} names files that do not exist: {missing}"
