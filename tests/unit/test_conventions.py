"""Conventions of kemu's source that no linter knows: one name for a module's logger."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    "apiserver",
    "autoscaler",
    "bench",
    "cloud",
    "controllermanager",
    "kemu",
    "kubelet",
    "scheduler",
    "tests",
)
# A module-level assignment of logging.getLogger(...), annotated or not.
MODULE_LOGGER = re.compile(r"^(\w+)(?:[ \t]*:[^\n=]+)?[ \t]*=[ \t]*logging\.getLogger\(", re.M)


def sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def test_a_modules_logger_is_named_logger() -> None:
    files = sources()
    assert len(files) > 100, "the source tree was not found"
    named = {
        f"{path.relative_to(ROOT)}: {m.group(1)}"
        for path in files
        for m in MODULE_LOGGER.finditer(path.read_text())
        if m.group(1) != "logger"
    }
    assert not named, "module loggers not named `logger`:\n" + "\n".join(sorted(named))
