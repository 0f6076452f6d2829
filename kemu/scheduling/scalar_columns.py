"""Scalar resources (extended resources, hugepages) over node columns (kemu, not upstream).

Most nodes carry no scalar resource, and a cluster may carry many distinct ones (upstream's
SchedulingWithExtendedResource gives each of 5000 nodes its own `foo.com/bar-N`), so a dense
column per name is not kept for every name. `ScalarColumns` keeps, per name, the rows whose
node has some of it allocatable (sparse), and builds the dense columns of the few names that
cycles ask about from it, kept up to date as rows change, the least recently asked dropped
past `CACHED`. `NodeColumns.scalar(name)` is the entry point; NodeResourcesFit's batch forms
read it (fitsRequest's test per scalar resource, kemu/scheduling/plugins/node_resources_fit.py).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from kemu.scheduling.arrays import IntArray
from kemu.scheduling.types import NodeInfo

CACHED: Final = 8
"""Dense columns kept (the names asked most recently)."""


@dataclass(frozen=True, slots=True)
class ScalarColumn:
    """One scalar resource over every row: `allocatable`, and `free` (allocatable - requested)
    where the node has some allocatable, 0 elsewhere. Where allocatable is 0 a positive
    request never fits (fitsRequest: request > 0 - requested) and always asks for more than
    allocatable, so 0 there gives every test of a positive request the node's own answer."""

    allocatable: IntArray
    free: IntArray


class ScalarColumns:
    """Scalar resources of a snapshot's rows (see the module docstring)."""

    __slots__ = ("_dense", "_names_of_row", "_rows_of", "_size")

    def __init__(self, infos: Sequence[NodeInfo]) -> None:
        self._size = len(infos)
        self._rows_of: dict[str, dict[int, int]] = {}
        """Per name, the rows with a positive allocatable, and it."""
        self._names_of_row: list[tuple[str, ...]] = [()] * len(infos)
        self._dense: OrderedDict[str, ScalarColumn] = OrderedDict()
        for row, ni in enumerate(infos):
            self._add(row, ni)

    def _add(self, row: int, ni: NodeInfo) -> None:
        scalar = ni.allocatable.scalar
        if not scalar:
            return
        names = tuple(name for name, qty in scalar.items() if qty > 0)
        self._names_of_row[row] = names
        for name in names:
            self._rows_of.setdefault(name, {})[row] = scalar[name]

    def set_row(self, row: int, ni: NodeInfo) -> None:
        """The node at `row` is now `ni`."""
        for name in self._names_of_row[row]:
            rows = self._rows_of[name]
            del rows[row]
            if not rows:
                del self._rows_of[name]
        self._names_of_row[row] = ()
        self._add(row, ni)
        if self._dense:
            alloc, used = ni.allocatable.scalar, ni.requested.scalar
            for name, col in self._dense.items():
                have = alloc.get(name, 0)
                col.allocatable[row] = have
                col.free[row] = have - used.get(name, 0) if have > 0 else 0

    def column(self, name: str, infos: Sequence[NodeInfo]) -> ScalarColumn:
        """`name` over every row (`infos`: the rows' NodeInfos, for what they request)."""
        col = self._dense.get(name)
        if col is not None:
            self._dense.move_to_end(name)
            return col
        allocatable = np.zeros(self._size, dtype=np.int64)
        free = np.zeros(self._size, dtype=np.int64)
        rows = self._rows_of.get(name)
        if rows:
            at = np.fromiter(rows.keys(), dtype=np.int64, count=len(rows))
            have = np.fromiter(rows.values(), dtype=np.int64, count=len(rows))
            used = np.fromiter(
                (infos[row].requested.scalar.get(name, 0) for row in rows),
                dtype=np.int64,
                count=len(rows),
            )
            allocatable[at] = have
            free[at] = have - used
        col = self._dense[name] = ScalarColumn(allocatable, free)
        if len(self._dense) > CACHED:
            self._dense.popitem(last=False)
        return col
