"""A cell of the matrix (one version per component, per-component gates) and upstream's
version skew policy (kubernetes.io/releases/version-skew-policy) over it.

`violations(cell)` lists the rules a cell breaks, each a sentence naming the components and
versions: kemu.skew refuses to start such a cell (upstream's binaries do not check; the policy
says "must not", and kemu's matrix states what is supported). `warnings(cell)` lists what the
policy allows only during an upgrade (a scheduler or controller-manager one minor older).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from kemu.component.featuregate import FeatureGateError, FeatureGates
from kemu.component.version import MAX_VERSION, MIN_VERSION, Version
from kemu.machinery.kinds import Served, resource_config
from kemu.machinery.runtime_config import RuntimeConfig, RuntimeConfigError

COMPONENTS: Final = (
    "apiserver",
    "apiserver-2",
    "scheduler",
    "controllermanager",
    "kubelet",
    "autoscaler",
)
"""The components of a cell, as the JSON report and matrix.yaml name them."""


def minor_gap(newer: Version, older: Version) -> int:
    """How many minors `older` is behind `newer` (negative when it is ahead)."""
    return (newer.major - older.major) * 100 + newer.minor - older.minor


def kubelet_max_lag(kubelet: Version) -> int:
    """Minors a kubelet may be behind the oldest apiserver: 3, or 2 before 1.25."""
    return 3 if kubelet >= Version(1, 25) else 2


@dataclass(frozen=True)
class Cell:
    """One cell: `apiservers` holds one version or an HA pair (the cluster's first apiserver
    first: kubelets and the scenarios' clients talk to it); `scheduler_apiserver` and
    `controllermanager_apiserver` index the apiserver each of those talks to."""

    name: str
    apiservers: tuple[Version, ...]
    scheduler: Version
    controllermanager: Version
    kubelet: Version
    scheduler_apiserver: int = 0
    controllermanager_apiserver: int = 0
    gates: Mapping[str, Mapping[str, bool]] = field(default_factory=lambda: MappingProxyType({}))
    autoscaler: Version | None = None
    """The cluster autoscaler (talks to the scheduler's apiserver); None: the scheduler's version."""
    upgrade_to: Version | None = None
    """A rolling-upgrade cell: every component goes to this version (kemu.skew.upgrade)."""
    runtime_config: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Its apiservers' --runtime-config (a gate's alpha or, from 1.24, beta API group version
    is served only when enabled there, as upstream's)."""

    def components(self) -> dict[str, str]:
        """Component -> version, for the report."""
        out = {"apiserver": str(self.apiservers[0])}
        if len(self.apiservers) > 1:
            out["apiserver-2"] = str(self.apiservers[1])
        out["scheduler"] = str(self.scheduler)
        out["controllermanager"] = str(self.controllermanager)
        out["kubelet"] = str(self.kubelet)
        out["autoscaler"] = str(self.autoscaler_version)
        return out

    @property
    def autoscaler_version(self) -> Version:
        return self.autoscaler or self.scheduler

    def version_of(self, component: str) -> Version:
        return {
            "apiserver": self.apiservers[0],
            "apiserver-2": self.apiservers[-1],
            "scheduler": self.scheduler,
            "controllermanager": self.controllermanager,
            "kubelet": self.kubelet,
            "autoscaler": self.autoscaler_version,
        }[component]

    def gates_of(self, component: str) -> dict[str, bool]:
        return dict(self.gates.get(component, {}))

    def feature_gates(self, component: str) -> FeatureGates:
        """The component's gates at its version (FeatureGateError if the cell's are wrong)."""
        return FeatureGates.for_version(self.version_of(component), self.gates_of(component))

    def served(self, apiserver: str) -> Served:
        """What an apiserver of the cell serves: its version, gates and the runtime config
        (RuntimeConfigError if the cell's are wrong)."""
        return Served.at(
            self.version_of(apiserver).minor,
            self.feature_gates(apiserver).enabled,
            RuntimeConfig(dict(self.runtime_config)),
        )


def violations(cell: Cell) -> list[str]:
    """The skew-policy rules (and gate settings) `cell` breaks; [] when it is supported."""
    out: list[str] = []
    for component, version in cell.components().items():
        v = Version.parse(version)
        if not MIN_VERSION <= v <= MAX_VERSION:
            out.append(f"{component} {v} is outside kemu's versions {MIN_VERSION}-{MAX_VERSION}")
    apis = cell.apiservers
    newest, oldest = max(apis), min(apis)
    if minor_gap(newest, oldest) > 1:
        out.append(
            f"apiservers {newest} and {oldest} are {minor_gap(newest, oldest)} minors apart: "
            "HA apiservers must be within 1 minor"
        )
    for component, index in (
        ("scheduler", cell.scheduler_apiserver),
        ("controllermanager", cell.controllermanager_apiserver),
        ("autoscaler", cell.scheduler_apiserver),
    ):
        v, api = cell.version_of(component), apis[index]
        gap = minor_gap(api, v)
        if gap < 0:
            out.append(f"{component} {v} is newer than the apiserver {api} it talks to")
        elif gap > 1:
            out.append(
                f"{component} {v} is {gap} minors older than the apiserver {api} it talks to "
                "(at most 1)"
            )
    gap = minor_gap(oldest, cell.kubelet)
    if gap < 0:
        out.append(f"kubelet {cell.kubelet} is newer than the apiserver {oldest}")
    elif gap > kubelet_max_lag(cell.kubelet):
        out.append(
            f"kubelet {cell.kubelet} is {gap} minors older than the apiserver {oldest} "
            f"(at most {kubelet_max_lag(cell.kubelet)} for kubelet {cell.kubelet})"
        )
    if cell.upgrade_to is not None and (
        minor_gap(cell.upgrade_to, newest) != 1 or len(set(apis)) != 1
    ):
        out.append(
            f"upgrade from apiserver {newest} to {cell.upgrade_to}: upgrades go one minor at a "
            "time, from apiservers at one version"
        )
    if not out:
        for component in cell.gates:
            if component not in COMPONENTS:
                out.append(f'gates of unknown component "{component}"')
                continue
            try:
                cell.feature_gates(component)
            except FeatureGateError as e:
                out.append(f"{component} {cell.version_of(component)}: {e}")
        for apiserver in ("apiserver", "apiserver-2")[: len(apis)]:
            try:
                resource_config(
                    RuntimeConfig(dict(cell.runtime_config)), cell.version_of(apiserver).minor
                )
            except RuntimeConfigError as e:
                out.append(f"{apiserver} {cell.version_of(apiserver)}: --runtime-config: {e}")
    return out


def warnings(cell: Cell) -> list[str]:
    """What the policy allows during an upgrade only."""
    out = []
    for component, index in (
        ("scheduler", cell.scheduler_apiserver),
        ("controllermanager", cell.controllermanager_apiserver),
        ("autoscaler", cell.scheduler_apiserver),
    ):
        v, api = cell.version_of(component), cell.apiservers[index]
        if minor_gap(api, v) == 1:
            out.append(f"{component} {v} is one minor older than the apiserver {api} (an upgrade)")
    return out


class UnsupportedCellError(ValueError):
    """A cell the skew policy forbids; the message names the cell and every broken rule."""

    def __init__(self, cell: Cell, problems: list[str]) -> None:
        self.cell = cell
        self.problems = tuple(problems)
        super().__init__(f"cell {cell.name} is not supported: {'; '.join(problems)}")


def check(cell: Cell) -> list[str]:
    """Raises UnsupportedCellError unless `cell` is supported; returns its warnings."""
    problems = violations(cell)
    if problems:
        raise UnsupportedCellError(cell, problems)
    return warnings(cell)
