"""matrix.yaml -> cells: the generated ones (axes under the skew policy, reduced pairwise), the
written-out ones with per-component gates, and the named unsupported ones.

Errors in the file are `MatrixError`s naming the entry and field (`cells[1].apiserver: ...`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import yaml

from kemu.component.version import MIN_VERSION, Version
from kemu.skew.policy import COMPONENTS, Cell, kubelet_max_lag, minor_gap, violations

DEFAULT_MATRIX: Final = Path(__file__).with_name("matrix.yaml")
AXES: Final = ("apiserver", "ha", "control_plane_lag", "kubelet_lag")
MAX_LAG: Final = "max"


class MatrixError(ValueError):
    """A bad matrix file; the message names the file and the field."""


@dataclass(frozen=True)
class Matrix:
    cells: tuple[Cell, ...]
    """What `make skew` runs: the generated cells, then the written-out ones."""
    slice: tuple[Cell, ...]
    """The pairwise-reduced slice `make test` runs."""
    unsupported: tuple[Cell, ...]
    """Cells the policy forbids: each must be refused."""

    def find(self, name: str) -> Cell:
        for cell in (*self.cells, *self.slice, *self.unsupported):
            if cell.name == name:
                return cell
        raise KeyError(name)


def _older(v: Version, minors: int) -> Version:
    return Version(v.major, v.minor - minors)


def cell_from_axes(
    apiserver: Version, ha: bool, control_plane_lag: int, kubelet_lag: int | str
) -> Cell:
    """The cell of one combination of axis values (it may break the policy)."""
    apis = (_older(apiserver, 1), apiserver) if ha else (apiserver,)
    # In a pair the older apiserver is started first: kubelets and tests talk to it.
    control_plane = _older(apiserver, control_plane_lag)
    sched_api = 0 if control_plane <= apis[0] else len(apis) - 1
    cm_api = len(apis) - 1 - sched_api if ha else 0
    if control_plane > apis[cm_api]:
        cm_api = sched_api
    oldest = min(apis)
    if kubelet_lag == MAX_LAG:
        lag = kubelet_max_lag(_older(oldest, 3))
        lag = min(lag, minor_gap(oldest, MIN_VERSION))
    else:
        lag = int(kubelet_lag)
    kubelet = _older(oldest, lag)
    name = "api" + "+".join(str(v) for v in reversed(apis))
    name += f"-cp{control_plane}-kubelet{kubelet}"
    return Cell(
        name,
        apis,
        scheduler=control_plane,
        controllermanager=control_plane,
        kubelet=kubelet,
        scheduler_apiserver=sched_api,
        controllermanager_apiserver=cm_api,
    )


def pairwise(rows: Sequence[tuple[object, ...]]) -> list[int]:
    """Indices of a subset of `rows` covering every pair of values (of two columns) that some
    row has: greedy, the row covering most uncovered pairs first, ties to the earlier row."""

    def pairs(row: tuple[object, ...]) -> set[tuple[int, object, int, object]]:
        return {(i, row[i], j, row[j]) for i, j in itertools.combinations(range(len(row)), 2)}

    uncovered = set().union(*(pairs(r) for r in rows)) if rows else set()
    chosen: list[int] = []
    while uncovered:
        best = max(range(len(rows)), key=lambda k: (len(pairs(rows[k]) & uncovered), -k))
        chosen.append(best)
        uncovered -= pairs(rows[best])
    return sorted(chosen)


def generate(axes: Mapping[str, Sequence[Any]], where: str = "axes") -> list[Cell]:
    """Every combination of the axes' values the policy allows, reduced pairwise."""
    if not isinstance(axes, Mapping):
        raise MatrixError(f"{where}: a mapping of axis to values is required")
    for axis in AXES:
        if axis not in axes or not isinstance(axes[axis], list) or not axes[axis]:
            raise MatrixError(f"{where}.{axis}: a non-empty list is required")
    unknown = sorted(set(axes) - set(AXES))
    if unknown:
        raise MatrixError(f"{where}.{unknown[0]}: unknown axis (axes: {', '.join(AXES)})")
    apis = [_version(v, f"{where}.apiserver") for v in axes["apiserver"]]
    for v in axes["ha"]:
        if not isinstance(v, bool):
            raise MatrixError(f"{where}.ha: {v!r} is not true or false")
    for axis in ("control_plane_lag", "kubelet_lag"):
        for v in axes[axis]:
            if not (isinstance(v, int) and not isinstance(v, bool) and v >= 0) and v != MAX_LAG:
                raise MatrixError(f"{where}.{axis}: {v!r} is not a lag (0, 1, ... or max)")
    rows: list[tuple[object, ...]] = []
    cells: list[Cell] = []
    for combo in itertools.product(
        apis, axes["ha"], axes["control_plane_lag"], axes["kubelet_lag"]
    ):
        api, ha, cp, kl = combo
        if _older(api, 1 if ha else 0) < MIN_VERSION or _older(api, cp) < MIN_VERSION:
            continue
        cell = cell_from_axes(api, ha, cp, kl)
        if cell.kubelet < MIN_VERSION or violations(cell):
            continue
        rows.append(combo)
        cells.append(cell)
    return [cells[i] for i in pairwise(rows)]


def _version(value: object, where: str) -> Version:
    if not isinstance(value, str):
        raise MatrixError(f'{where}: {value!r} is not a version string such as "1.37"')
    try:
        return Version.parse(value)
    except ValueError as e:
        raise MatrixError(f"{where}: {e}") from None


def written_cell(entry: object, where: str) -> Cell:
    """A cell written out in the file: `apiserver` required, the others default to it
    (`kubelet` to the oldest apiserver), `gates` per component, `runtime_config` the
    apiservers' --runtime-config."""
    if not isinstance(entry, dict):
        raise MatrixError(f"{where}: a mapping is required")
    known = {"name", "gates", "upgrade_to", "runtime_config", *COMPONENTS}
    for key in entry:
        if key not in known:
            raise MatrixError(f"{where}.{key}: unknown field (fields: {', '.join(sorted(known))})")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise MatrixError(f"{where}.name: a name is required")
    if "apiserver" not in entry:
        raise MatrixError(f"{where}.apiserver: required")
    api = _version(entry["apiserver"], f"{where}.apiserver")
    apis: tuple[Version, ...] = (api,)
    if "apiserver-2" in entry:
        apis = (api, _version(entry["apiserver-2"], f"{where}.apiserver-2"))
    versions = {
        c: _version(entry[c], f"{where}.{c}") if c in entry else None
        for c in ("scheduler", "controllermanager", "kubelet", "autoscaler")
    }
    gates_in = entry.get("gates", {})
    if not isinstance(gates_in, dict):
        raise MatrixError(f"{where}.gates: a mapping of component to gates is required")
    gates: dict[str, Mapping[str, bool]] = {}
    for component, settings in gates_in.items():
        if component not in COMPONENTS:
            raise MatrixError(f"{where}.gates.{component}: unknown component")
        if not isinstance(settings, dict) or not all(
            isinstance(k, str) and isinstance(v, bool) for k, v in settings.items()
        ):
            raise MatrixError(f"{where}.gates.{component}: a mapping of gate to true/false")
        gates[component] = MappingProxyType(dict(settings))
    upgrade_to = (
        _version(entry["upgrade_to"], f"{where}.upgrade_to") if "upgrade_to" in entry else None
    )
    runtime_in = entry.get("runtime_config", {})
    if not isinstance(runtime_in, dict) or not all(
        isinstance(k, str) and isinstance(v, (str, bool)) for k, v in runtime_in.items()
    ):
        raise MatrixError(
            f"{where}.runtime_config: a mapping of key (scheduling.k8s.io/v1beta1, api/all, ...) "
            "to true/false"
        )
    runtime_config = {
        k: ("true" if v else "false") if isinstance(v, bool) else v for k, v in runtime_in.items()
    }
    return Cell(
        name,
        apis,
        upgrade_to=upgrade_to,
        scheduler=versions["scheduler"] or api,
        controllermanager=versions["controllermanager"] or api,
        kubelet=versions["kubelet"] or min(apis),
        autoscaler=versions["autoscaler"],
        gates=MappingProxyType(gates),
        runtime_config=MappingProxyType(runtime_config),
    )


def load(path: Path = DEFAULT_MATRIX) -> Matrix:
    """Reads and checks the matrix file; MatrixError names what is wrong."""
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as e:
        raise MatrixError(f"{path}: cannot read: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise MatrixError(f"{path}: not YAML: {str(e).splitlines()[0]}") from None
    try:
        if not isinstance(data, dict):
            raise MatrixError("a mapping with axes, slice, cells and unsupported is required")
        for key in data:
            if key not in ("axes", "slice", "cells", "unsupported"):
                raise MatrixError(f"{key}: unknown section")
        cells = generate(data["axes"], "axes") if "axes" in data else []
        slice_ = generate(data["slice"], "slice") if "slice" in data else []
        for i, entry in enumerate(data.get("cells") or []):
            cell = written_cell(entry, f"cells[{i}]")
            problems = violations(cell)
            if problems:
                raise MatrixError(f"cells[{i}] ({cell.name}) breaks the policy: {problems[0]}")
            cells.append(cell)
        unsupported = []
        for i, entry in enumerate(data.get("unsupported") or []):
            cell = written_cell(entry, f"unsupported[{i}]")
            if not violations(cell):
                raise MatrixError(f"unsupported[{i}] ({cell.name}) is supported by the policy")
            unsupported.append(cell)
        names = [c.name for c in (*cells, *unsupported)]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise MatrixError(f"cell {dup} is declared twice")
    except MatrixError as e:
        raise MatrixError(f"{path}: {e}") from None
    return Matrix(tuple(cells), tuple(slice_), tuple(unsupported))
