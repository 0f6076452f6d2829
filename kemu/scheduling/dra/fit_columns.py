"""The allocator's fit check over every node at once (kemu, not upstream): what
`Allocator.fit_verdicts` keeps across pods.

`Allocator.fit_verdict` answers for one node from that node's entry per request shape (the
devices its selectors take, those the search surely takes, those only the search can tell).
`fit_verdicts` answers for the rows of a node list (the scheduler's `NodeColumns` rows) with
NumPy: per request shape, every row's entry flattened into (device index, row) arrays
(`ShapeColumns`), and the allocated devices as a mask over the device indices
(`DeviceMask`, kept as the difference to the last allocated set asked); the counts per row
are one `bincount` each. tests/unit/scheduling/dra/test_fit_verdict.py checks that both
forms answer the same.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

Int8Array = npt.NDArray[np.int8]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

# fit_verdicts' codes per row (FitVerdict's three answers).
CODE_NO_FIT: Final = 0
CODE_FITS: Final = 1
CODE_UNDECIDED: Final = 2

MAX_SHAPES: Final = 512  # ShapeColumns kept (cleared beyond)
MAX_DEVICES: Final = 1_000_000  # device indices kept (cleared beyond)


class DeviceMask:
    """Dense indices for device ids, and which of them a set of allocated devices holds."""

    __slots__ = ("_copy", "_mask", "index")

    def __init__(self) -> None:
        self.index: dict[Hashable, int] = {}
        self._mask: BoolArray = np.zeros(0, dtype=np.bool_)
        self._copy: set[Hashable] = set()  # the allocated set the mask mirrors

    def ids(self, devices: Iterable[Hashable]) -> list[int]:
        """The devices' indices (new ones numbered in order)."""
        index = self.index
        out: list[int] = []
        for d in devices:
            i = index.get(d)
            if i is None:
                i = index[d] = len(index)
            out.append(i)
        return out

    def clear_if_large(self) -> bool:
        """Forget every index beyond MAX_DEVICES (the callers' arrays must be rebuilt)."""
        if len(self.index) < MAX_DEVICES:
            return False
        self.index.clear()
        self._mask = np.zeros(0, dtype=np.bool_)
        self._copy = set()
        return True

    def allocated(self, devices: AbstractSet[Hashable]) -> BoolArray:
        """Per device index, whether `devices` holds it (read-only for the caller)."""
        index = self.index
        mask = self._mask
        if len(mask) < len(index):
            grown = np.zeros(max(len(index), 2 * len(mask)), dtype=np.bool_)
            grown[: len(mask)] = mask
            mask = self._mask = grown
            # indices given since the mask was last grown: what the copy says of them
            for d in self._copy:
                i = index.get(d)
                if i is not None:
                    mask[i] = True
        copy = self._copy
        added = set(devices) - copy if not isinstance(devices, set) else devices - copy
        removed = copy - devices
        for d in added:
            i = index.get(d)
            if i is not None:
                mask[i] = True
        for d in removed:
            i = index.get(d)
            if i is not None:
                mask[i] = False
        copy -= removed
        copy |= added
        return mask


@dataclass(slots=True)
class ShapeColumns:
    """A request shape's fit entries over the rows of a node list: the node objects they were
    built for (by identity) and the slices list they came from; per row whether there is an
    entry (`valid`: a node, its pools gathered, no invalid pool nor per-device selection) and
    whether its slices are all node-local; the selectable, surely-taken and unknown devices
    as (device index, row) pairs."""

    nodes: tuple[object, ...]
    slices: object
    valid: BoolArray
    all_local: BoolArray
    selectable: tuple[IntArray, IntArray]
    sure: tuple[IntArray, IntArray]
    unknown: tuple[IntArray, IntArray]

    @staticmethod
    def build(
        nodes: Sequence[object],
        slices: object,
        entries: Sequence[
            tuple[AbstractSet[Hashable], AbstractSet[Hashable], AbstractSet[Hashable], bool] | None
        ],
        mask: DeviceMask,
    ) -> ShapeColumns:
        n = len(nodes)
        valid = np.zeros(n, dtype=np.bool_)
        all_local = np.zeros(n, dtype=np.bool_)
        parts: tuple[list[int], list[int], list[int], list[int], list[int], list[int]] = (
            [],
            [],
            [],
            [],
            [],
            [],
        )
        for row, entry in enumerate(entries):
            if entry is None:
                continue
            valid[row] = True
            selectable, sure, unknown, local = entry
            all_local[row] = local
            for k, devices in enumerate((selectable, sure, unknown)):
                ids = mask.ids(devices)
                parts[2 * k].extend(ids)
                parts[2 * k + 1].extend([row] * len(ids))
        arrays = [np.array(p, dtype=np.int64) for p in parts]
        return ShapeColumns(
            tuple(nodes),
            slices,
            valid,
            all_local,
            (arrays[0], arrays[1]),
            (arrays[2], arrays[3]),
            (arrays[4], arrays[5]),
        )

    def free(self, pairs: tuple[IntArray, IntArray], allocated: BoolArray, n: int) -> IntArray:
        """Per row, how many of `pairs`' devices `allocated` does not hold."""
        devices, rows = pairs
        if not len(devices):
            return np.zeros(n, dtype=np.int64)
        out: IntArray = np.bincount(rows[~allocated[devices]], minlength=n)
        return out
