"""The unneeded nodes and since when (upstream core/scaledown/unneeded.Nodes): a node keeps
its since-time while it stays unneeded loop after loop, and loses it the first loop it is not."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Since:
    monotonic: float
    wall: float


class UnneededNodes:
    def __init__(self) -> None:
        self._since: dict[str, Since] = {}

    def update(self, names: Iterable[str], *, monotonic: float, wall: float) -> None:
        """The unneeded nodes of this loop: new ones from now, others as they were."""
        self._since = {n: self._since.get(n) or Since(monotonic, wall) for n in names}

    def drop(self, name: str) -> None:
        self._since.pop(name, None)

    def since(self, name: str) -> Since | None:
        return self._since.get(name)

    def names(self) -> list[str]:
        return list(self._since)

    def items(self) -> list[tuple[str, Since]]:
        return list(self._since.items())
