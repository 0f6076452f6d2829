"""The fair division of the server's seats among priority levels, each within its bounds
(upstream's k8s.io/apiserver pkg/util/flowcontrol/conc_alloc.go computeConcurrencyAllocation,
used by apf_controller.go's updateBorrowing; KEP-1040's borrowing).

Given the seats to divide and, per level, a target and [lower, upper] bounds, the answer is the
one fair proportion p such that the allocations clamp(p * target, lower, upper) sum to the
seats: each level gets p times its target unless a bound stops it. A target below MIN_TARGET
counts as MIN_TARGET (no division by zero; such a level gets its lower bound unless nothing
else can take the seats).

The allocation is piecewise linear and non-decreasing in p, its breakpoints the bounds over
the targets: kemu evaluates it at the breakpoints and interpolates within the segment that
reaches the sum (upstream walks the sorted bounds incrementally; the answer is the same).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

MIN_TARGET: Final = 0.001
EPSILON: Final = 1e-7


@dataclass(frozen=True)
class AllocItem:
    """One level's problem: its target and its bounds (allocProblemItem); 0 <= lower <=
    target and lower <= upper."""

    target: float
    lower: float
    upper: float


def compute_concurrency_allocation(
    required: int, items: Sequence[AllocItem]
) -> tuple[list[float], float]:
    """The allocations (summing to `required`) and the fair proportion; ValueError when the
    bounds make it impossible or an item is malformed."""
    if required < 0:
        raise ValueError("negative sums are not supported")
    targets = []
    for i, item in enumerate(items):
        if item.lower < 0:
            raise ValueError(f"lower bound {i} is {item.lower}: negative")
        if item.target < item.lower:
            raise ValueError(f"target {i} is {item.target}, below its lower bound {item.lower}")
        if item.upper < item.lower:
            raise ValueError(f"upper bound {i} is {item.upper}, below its lower bound")
        targets.append(max(item.target, MIN_TARGET))
    low = sum(item.lower for item in items)
    high = sum(item.upper for item in items)
    if low - required > EPSILON:
        raise ValueError(f"lower bounds sum to {low}, more than the required {required}")
    if required - high > EPSILON:
        raise ValueError(f"upper bounds sum to {high}, less than the required {required}")
    if required == 0 or not items:
        return [0.0] * len(items), 0.0
    lows = [item.lower / t for item, t in zip(items, targets, strict=True)]
    highs = [item.upper / t for item, t in zip(items, targets, strict=True)]
    if low - required > -EPSILON:  # no room: every level at its lower bound
        return [item.lower for item in items], min(lows)
    if required - high > -EPSILON:  # no room: every level at its upper bound
        return [item.upper for item in items], max(highs)

    def allocs(p: float) -> list[float]:
        return [
            max(item.lower, min(item.upper, p * t)) for item, t in zip(items, targets, strict=True)
        ]

    points = sorted({*lows, *highs})
    prev_p, prev_sum = points[0], sum(allocs(points[0]))
    fair = points[-1]
    for p in points[1:]:
        total = sum(allocs(p))
        if total >= required:
            # linear between prev_p and p
            fair = prev_p + (p - prev_p) * (required - prev_sum) / (total - prev_sum)
            break
        prev_p, prev_sum = p, total
    return allocs(fair), fair
