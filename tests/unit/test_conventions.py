"""Conventions of kemu's source that no linter knows: one name for a module's logger, and
every package placed in the tier map (import-linter checks only the modules a contract names)."""

from __future__ import annotations

import re
import tomllib
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


def test_every_package_sits_in_a_tier() -> None:
    """A new package directly under kemu/ (or a new process) falls under the layers contract
    only once it is named in a tier (pyproject.toml, ARCHITECTURE.md "Layers")."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    # (the whole house's layers contract is the one whose bottom tier is the generated API)
    (tiers,) = [
        c for c in config["contracts"] if c["type"] == "layers" and c["layers"][-1] == "kemu.api"
    ]
    placed = {name.strip() for layer in tiers["layers"] for name in re.split(r"[|:]", layer)}
    kemu = ROOT / "kemu"
    children = {
        f"kemu.{p.stem}"
        for p in kemu.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    roots = set(config["root_packages"]) - {"kemu"}
    assert not (children | roots) - placed, "not in a tier: " + ", ".join(
        sorted((children | roots) - placed)
    )
