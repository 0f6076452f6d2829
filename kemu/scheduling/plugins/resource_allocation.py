"""Resource-allocation scoring shared by NodeResourcesFit and NodeResourcesBalancedAllocation.

Upstream noderesources/resource_allocation.go, least_allocated.go, most_allocated.go and
requested_to_capacity_ratio.go. A scorer looks, per configured resource, at the node's
allocatable amount and what would be requested on it with the pod added, and turns the lists
into one 0..100 score. Arithmetic is int64 as upstream (all operands are non-negative here, so
Python's `//` is Go's truncating division).

Which "requested" counts:
- NodeResourcesFit scores with the non-zero requests for cpu and memory (a pod that requests
  nothing counts as 100m / 200Mi, so best-effort pods still spread);
- NodeResourcesBalancedAllocation scores with the actual requests.
Ephemeral storage and scalar resources always use the actual requests. A scalar resource the
pod does not request, or the node does not have, is left out of the score.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kemu.scheduling.arrays import IntArray
from kemu.scheduling.columns import (
    NodeColumns,
    least_allocated_columns,
    most_allocated_columns,
)
from kemu.scheduling.types import (
    CPU,
    EPHEMERAL_STORAGE,
    MAX_NODE_SCORE,
    MEMORY,
    NodeInfo,
    Resource,
)

# A scorer turns (requested-with-pod, allocatable) lists into a 0..100 score.
Scorer = Callable[[Sequence[int], Sequence[int]], int]

_KIND_CPU: Final = 0
_KIND_MEMORY: Final = 1
_KIND_EPHEMERAL: Final = 2
_KIND_SCALAR: Final = 3

# RequestedToCapacityRatio shape scores are 0..10 (upstream config.MaxCustomPriorityScore).
MAX_CUSTOM_PRIORITY_SCORE: Final = 10
MAX_UTILIZATION: Final = 100


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """A resource to score and its weight (upstream config.ResourceSpec)."""

    name: str
    weight: int = 1


DEFAULT_RESOURCES: Final = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


def _kind(name: str) -> int:
    if name == CPU:
        return _KIND_CPU
    if name == MEMORY:
        return _KIND_MEMORY
    if name == EPHEMERAL_STORAGE:
        return _KIND_EPHEMERAL
    return _KIND_SCALAR


def parse_resources(
    value: Any, field: str, *, default: Sequence[ResourceSpec], weight_must_be_one: bool = False
) -> tuple[ResourceSpec, ...]:
    """`[{name, weight}]` from plugin args; ValueError naming the field when invalid.

    Weights are 1..100 (upstream validateResources); BalancedAllocation only accepts 1.
    An absent or empty list means `default`, as upstream's defaulting does.
    """
    if value is None:
        return tuple(default)
    if not isinstance(value, list):
        raise ValueError(f"{field}: must be a list of {{name, weight}}")
    if not value:
        return tuple(default)
    out: list[ResourceSpec] = []
    seen: set[str] = set()
    for i, item in enumerate(value):
        path = f"{field}[{i}]"
        if not isinstance(item, Mapping):
            raise ValueError(f"{path}: must be an object with name and weight")
        unknown = set(item) - {"name", "weight"}
        if unknown:
            raise ValueError(f"{path}: unknown field(s) {sorted(unknown)}")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{path}.name: must be a non-empty string")
        if name in seen:
            raise ValueError(f"{path}.name: duplicate resource {name!r}")
        seen.add(name)
        weight = item.get("weight", 1)
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise ValueError(f"{path}.weight: must be an integer")
        if weight_must_be_one and weight != 1:
            raise ValueError(f"{path}.weight: must be 1")
        if not 1 <= weight <= 100:
            raise ValueError(
                f"{path}.weight: resource weight of {name} not in valid range [1, 100]"
            )
        out.append(ResourceSpec(name, weight))
    return tuple(out)


# ---------------------------------------------------------------- scorers


def least_requested_score(requested: int, capacity: int) -> int:
    """Unused capacity on a 0..100 scale; 0 when the node would be over-committed."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    """Used capacity on a 0..100 scale; requests above capacity (non-zero defaults) cap at 100."""
    if capacity == 0:
        return 0
    if requested > capacity:
        requested = capacity
    return requested * MAX_NODE_SCORE // capacity


def least_allocated_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    weights = [r.weight for r in resources]

    def score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            node_score += least_requested_score(req, alloc) * weight
            weight_sum += weight
        return node_score // weight_sum if weight_sum else 0

    return score


def most_allocated_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    weights = [r.weight for r in resources]

    def score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            node_score += most_requested_score(req, alloc) * weight
            weight_sum += weight
        return node_score // weight_sum if weight_sum else 0

    return score


@dataclass(frozen=True, slots=True)
class ShapePoint:
    """A point of the RequestedToCapacityRatio function: utilization 0..100 -> score 0..10."""

    utilization: int
    score: int


DEFAULT_SHAPE: Final = (ShapePoint(0, 10), ShapePoint(100, 0))


def _go_div(a: int, b: int) -> int:
    """int64 division truncating toward zero (a slope may be negative)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def broken_linear_function(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """Piecewise-linear through `shape` (utilization, score), flat outside (upstream helper)."""

    def f(p: int) -> int:
        for i, (util, score) in enumerate(shape):
            if p <= util:
                if i == 0:
                    return score
                prev_util, prev_score = shape[i - 1]
                return prev_score + _go_div(
                    (score - prev_score) * (p - prev_util), util - prev_util
                )
        return shape[-1][1]

    return f


def requested_to_capacity_ratio_scorer(
    resources: Sequence[ResourceSpec], shape: Sequence[ShapePoint]
) -> Scorer:
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    raw = broken_linear_function([(p.utilization, p.score * scale) for p in shape])
    weights = [r.weight for r in resources]

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(requested * MAX_UTILIZATION // capacity)

    def score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            s = resource_score(req, alloc)
            if s > 0:
                node_score += s * weight
                weight_sum += weight
        if weight_sum == 0:
            return 0
        # Go math.Round: half away from zero (the value is non-negative).
        return math.floor(float(node_score) / float(weight_sum) + 0.5)

    return score


def parse_shape(value: Any, field: str) -> tuple[ShapePoint, ...]:
    """`[{utilization, score}]`: utilization 0..100 strictly increasing, score 0..10."""
    if value is None:
        return DEFAULT_SHAPE
    if not isinstance(value, list) or not value:
        raise ValueError(f"{field}: at least one point is required")
    out: list[ShapePoint] = []
    for i, item in enumerate(value):
        path = f"{field}[{i}]"
        if not isinstance(item, Mapping):
            raise ValueError(f"{path}: must be an object with utilization and score")
        util, score = item.get("utilization"), item.get("score")
        if isinstance(util, bool) or not isinstance(util, int) or not 0 <= util <= 100:
            raise ValueError(f"{path}.utilization: must be an integer in [0, 100]")
        if isinstance(score, bool) or not isinstance(score, int) or not 0 <= score <= 10:
            raise ValueError(f"{path}.score: must be an integer in [0, 10]")
        if out and util <= out[-1].utilization:
            raise ValueError(f"{path}.utilization: values must be sorted in increasing order")
        out.append(ShapePoint(util, score))
    return tuple(out)


# ---------------------------------------------------------------- the scorer object


# A per-node scorer specialised for a strategy and resource list: (node, pod requests) -> score.
NodeScorer = Callable[[NodeInfo, Sequence[int]], int]
# Its batch form over node columns: (columns, rows, pod requests) -> scores of the rows.
ColumnScorer = Callable[[NodeColumns, IntArray, Sequence[int]], IntArray]


def least_allocated_cpu_memory_columns(wc: int, wm: int) -> ColumnScorer:
    """least_allocated_cpu_memory(use_requested=False) over columns."""

    def score(cols: NodeColumns, rows: IntArray, reqs: Sequence[int]) -> IntArray:
        return least_allocated_columns(
            cols.nz_cpu[rows], cols.nz_memory[rows], cols.alloc_cpu[rows],
            cols.alloc_memory[rows], reqs, wc, wm, dense=not cols.no_cpu_or_memory_nodes,
        )  # fmt: skip

    return score


def most_allocated_cpu_memory_columns(wc: int, wm: int) -> ColumnScorer:
    """most_allocated_cpu_memory(use_requested=False) over columns."""

    def score(cols: NodeColumns, rows: IntArray, reqs: Sequence[int]) -> IntArray:
        return most_allocated_columns(
            cols.nz_cpu[rows], cols.nz_memory[rows], cols.alloc_cpu[rows],
            cols.alloc_memory[rows], reqs, wc, wm,
        )  # fmt: skip

    return score


def least_allocated_cpu_memory(wc: int, wm: int, *, use_requested: bool) -> NodeScorer:
    """least_allocated_scorer over [cpu, memory], inlined: Score runs for thousands of nodes."""

    def score(node: NodeInfo, reqs: Sequence[int]) -> int:
        alloc = node.allocatable
        used = node.requested if use_requested else node.non_zero_requested
        total = wsum = 0
        cap = alloc.milli_cpu
        if cap:
            r = used.milli_cpu + reqs[0]
            if r <= cap:
                total += (cap - r) * MAX_NODE_SCORE // cap * wc
            wsum += wc
        cap = alloc.memory
        if cap:
            r = used.memory + reqs[1]
            if r <= cap:
                total += (cap - r) * MAX_NODE_SCORE // cap * wm
            wsum += wm
        return total // wsum if wsum else 0

    return score


def most_allocated_cpu_memory(wc: int, wm: int, *, use_requested: bool) -> NodeScorer:
    """most_allocated_scorer over [cpu, memory], inlined."""

    def score(node: NodeInfo, reqs: Sequence[int]) -> int:
        alloc = node.allocatable
        used = node.requested if use_requested else node.non_zero_requested
        total = wsum = 0
        cap = alloc.milli_cpu
        if cap:
            r = used.milli_cpu + reqs[0]
            total += (r if r < cap else cap) * MAX_NODE_SCORE // cap * wc
            wsum += wc
        cap = alloc.memory
        if cap:
            r = used.memory + reqs[1]
            total += (r if r < cap else cap) * MAX_NODE_SCORE // cap * wm
            wsum += wm
        return total // wsum if wsum else 0

    return score


class ResourceAllocationScorer:
    """Computes one node's score for a pod from precomputed pod requests (upstream
    resourceAllocationScorer). `use_requested` picks actual instead of non-zero requests for
    cpu and memory, on the node and for the pod. `fast`, when given, must compute the same
    score as `scorer` for `resources`; it replaces the generic per-resource loop."""

    __slots__ = (
        "_kinds",
        "_names",
        "_scorer",
        "columns",
        "name",
        "resources",
        "score",
        "use_requested",
    )

    def __init__(
        self,
        name: str,
        scorer: Scorer,
        resources: Sequence[ResourceSpec],
        *,
        use_requested: bool,
        fast: NodeScorer | None = None,
        columns: ColumnScorer | None = None,
    ) -> None:
        self.name = name
        self._scorer = scorer
        self.resources = tuple(resources)
        self.use_requested = use_requested
        self._kinds = tuple(_kind(r.name) for r in self.resources)
        self._names = tuple(r.name for r in self.resources)
        self.score: NodeScorer = fast or self.generic_score
        # The batch form of `score` (kemu.scheduling.columns), when the strategy has one.
        self.columns = columns

    def is_cpu_memory(self) -> bool:
        """Whether the resources are exactly [cpu, memory], in that order."""
        return self._kinds == (_KIND_CPU, _KIND_MEMORY)

    def pod_requests(self, requests: Resource, non_zero_requests: Resource) -> tuple[int, ...]:
        """The pod's request for each configured resource, in order."""
        src = requests if self.use_requested else non_zero_requests
        out: list[int] = []
        for kind, name in zip(self._kinds, self._names, strict=True):
            if kind == _KIND_CPU:
                out.append(src.milli_cpu)
            elif kind == _KIND_MEMORY:
                out.append(src.memory)
            else:
                out.append(requests.get(name))
        return tuple(out)

    def generic_score(self, node: NodeInfo, pod_requests: Sequence[int]) -> int:
        alloc = node.allocatable
        used = node.requested
        cpu_mem = used if self.use_requested else node.non_zero_requested
        requested: list[int] = []
        allocatable: list[int] = []
        for kind, name, pod_req in zip(self._kinds, self._names, pod_requests, strict=True):
            if kind == _KIND_CPU:
                a, r = alloc.milli_cpu, cpu_mem.milli_cpu + pod_req
            elif kind == _KIND_MEMORY:
                a, r = alloc.memory, cpu_mem.memory + pod_req
            elif kind == _KIND_EPHEMERAL:
                a, r = alloc.ephemeral_storage, used.ephemeral_storage + pod_req
            elif pod_req == 0 or name not in alloc.scalar:
                # A scalar resource the pod does not ask for, or the node lacks: not scored.
                a = r = 0
            else:
                a, r = alloc.scalar[name], used.scalar.get(name, 0) + pod_req
            if a == 0:
                a = r = 0
            requested.append(r)
            allocatable.append(a)
        return self._scorer(requested, allocatable)

    def placement_score(
        self, scorer: Scorer, nodes: Sequence[NodeInfo], group_requests: Sequence[int]
    ) -> int:
        """A placement's score (KEP-5732, NodeResourcesFit's ScorePlacement): `scorer` over
        the placement's nodes taken as one, what they hold plus the group's proposed
        requests (`group_requests`, per configured resource) against what they offer."""
        requested = list(group_requests)
        allocatable = [0] * len(requested)
        for node in nodes:
            alloc = node.allocatable
            used = node.requested
            cpu_mem = used if self.use_requested else node.non_zero_requested
            for i, (kind, name) in enumerate(zip(self._kinds, self._names, strict=True)):
                if kind == _KIND_CPU:
                    a, r = alloc.milli_cpu, cpu_mem.milli_cpu
                elif kind == _KIND_MEMORY:
                    a, r = alloc.memory, cpu_mem.memory
                elif kind == _KIND_EPHEMERAL:
                    a, r = alloc.ephemeral_storage, used.ephemeral_storage
                else:
                    a, r = alloc.scalar.get(name, 0), used.scalar.get(name, 0)
                allocatable[i] += a
                requested[i] += r
        for i, a in enumerate(allocatable):
            if a == 0:
                requested[i] = 0
        return scorer(requested, allocatable)
