"""Node state in columns, and the batch forms of Filter and Score over them (kemu, not upstream).

A scheduling cycle at 5000 nodes runs Filter and Score on hundreds of nodes; per node, in
Python, that is most of the cycle. `NodeColumns` keeps what the hot default plugins read of
each node of a `Snapshot` in NumPy arrays, one row per node in the snapshot's node order
(`Snapshot.columns()`: built on first use after the node list changed, then updated one row
at a time as the cache replaces a changed NodeInfo). A plugin opts in to the batch path by
implementing `ColumnFilterPlugin` and/or `ColumnScorePlugin` (below). For Filter, the
framework's `ColumnRunner` (kemu.scheduling.column_runner: `run_filter_columns`) combines the
batch forms of the plugins the cycle runs, and the plugins without one run per node on the rows the batch passed (so one plugin
without a batch form does not send the whole cycle node by node); the cycle filters per node
only when no plugin it runs has a batch form or one declines the pod. For Score
(`ColumnRunner.run_score_columns`), every Score plugin the cycle runs must have the batch form,
else the cycle scores per node. The per-node plugin interface is unchanged and stays the
reference: every batch form must agree with it exactly (tests/unit/scheduling/
test_columns_equivalence.py compares them on random clusters and pods).

The contract of a batch Filter is one-sided: True for a row means the per-node Filter would
return Success for that node; False means it might not. The scheduler runs the per-node path
(with the nominated pods, pkg/scheduler/framework/runtime/framework.go RunFilterPluginsWithNominatedPods) for every False row it reaches, in the rotated node
order, so each failing node's Status, and any error, is exactly the per-node path's, computed
only for the nodes that fail.

The nominated pods' first pass (the node with the pods nominated there added) runs over
`NodeColumns.with_pods_added` when every batch Filter plugin of the cycle opts in with
`ColumnNominatedPlugin` (its batch forms read the node's pods only through the resource and
pod-count columns) and nothing else runs (kemu.scheduling.filter_score).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from kemu.api.v1 import types_pb2
from kemu.scheduling.arrays import BoolArray, IntArray
from kemu.scheduling.interface import CycleState
from kemu.scheduling.scalar_columns import ScalarColumn, ScalarColumns
from kemu.scheduling.status import Status
from kemu.scheduling.topology_counts import Domains
from kemu.scheduling.types import MAX_NODE_SCORE, NodeInfo, PodInfo

_INT_FIELDS = (
    "alloc_cpu",
    "alloc_memory",
    "alloc_ephemeral",
    "alloc_pods",
    "req_cpu",
    "req_memory",
    "req_ephemeral",
    "nz_cpu",
    "nz_memory",
    "pods",
    "free_cpu",
    "free_memory",
    "free_ephemeral",
    "free_pods",
)
_BOOL_FIELDS = ("has_node", "unschedulable", "tainted", "ports")


def _row(ni: NodeInfo) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    a, r, nz = ni.allocatable, ni.requested, ni.non_zero_requested
    pods = len(ni.pods)
    ints = (
        a.milli_cpu,
        a.memory,
        a.ephemeral_storage,
        a.allowed_pod_number,
        r.milli_cpu,
        r.memory,
        r.ephemeral_storage,
        nz.milli_cpu,
        nz.memory,
        pods,
        a.milli_cpu - r.milli_cpu,
        a.memory - r.memory,
        a.ephemeral_storage - r.ephemeral_storage,
        a.allowed_pod_number - pods,
    )
    return ints, (ni.node is not None, ni.unschedulable, bool(ni.taints), bool(ni.used_ports))


class NodeColumns:
    """One row per node of a snapshot, in its node order: allocatable and requested cpu,
    memory and ephemeral storage, allocatable pods and the pod count, the non-zero requests
    of cpu and memory (scoring), what is free of each (allocatable - requested; pods:
    allocatable - count), whether the node object is there, unschedulable, tainted, has host
    ports in use; and, per label key asked for (`domains`), each row's value id.
    `infos[row]` is the row's NodeInfo (the per-node path for rows a batch form cannot
    decide); `row_of` maps a node name to its row. Extended resources are not in columns:
    a plugin that needs them declines the batch path for the pod. The counts of rows without
    a node object, unschedulable, tainted, and with no allocatable cpu or memory
    (`missing_nodes`, `unschedulable_nodes`, `tainted_nodes`, `no_cpu_or_memory_nodes`) let
    a batch form skip its columns or masks when no node has the property."""

    __slots__ = (
        "_all_true",
        "_bools",
        "_domains",
        "_ints",
        "_scalars",
        "infos",
        "missing_nodes",
        "no_cpu_or_memory_nodes",
        "row_of",
        "tainted_nodes",
        "unschedulable_nodes",
        *_INT_FIELDS,
        *_BOOL_FIELDS,
    )

    alloc_cpu: IntArray
    alloc_memory: IntArray
    alloc_ephemeral: IntArray
    alloc_pods: IntArray
    req_cpu: IntArray
    req_memory: IntArray
    req_ephemeral: IntArray
    nz_cpu: IntArray
    nz_memory: IntArray
    pods: IntArray
    free_cpu: IntArray
    free_memory: IntArray
    free_ephemeral: IntArray
    free_pods: IntArray
    has_node: BoolArray
    unschedulable: BoolArray
    tainted: BoolArray
    ports: BoolArray

    def __init__(self, infos: list[NodeInfo], row_of: dict[str, int]) -> None:
        self.infos = infos
        self.row_of = row_of
        n = len(infos)
        rows = [_row(ni) for ni in infos]
        ints = np.array([r[0] for r in rows], dtype=np.int64).reshape(n, len(_INT_FIELDS))
        bools = np.array([r[1] for r in rows], dtype=np.bool_).reshape(n, len(_BOOL_FIELDS))
        self._ints = ints
        self._bools = bools
        for i, name in enumerate(_INT_FIELDS):
            setattr(self, name, ints[:, i])
        for i, name in enumerate(_BOOL_FIELDS):
            setattr(self, name, bools[:, i])
        counts = bools.sum(axis=0).tolist() if n else [0] * len(_BOOL_FIELDS)
        self.missing_nodes: int = n - counts[0]
        self.unschedulable_nodes: int = counts[1]
        self.tainted_nodes: int = counts[2]
        self._all_true: BoolArray = np.ones(0, dtype=np.bool_)
        self.no_cpu_or_memory_nodes: int = (
            int(np.count_nonzero((self.alloc_cpu == 0) | (self.alloc_memory == 0))) if n else 0
        )
        # Per label key (built on first use): each row's value id (node label selectors).
        self._domains: dict[str, Domains] = {}
        self._scalars: ScalarColumns | None = None  # built on first use

    def __len__(self) -> int:
        return len(self.infos)

    def set_row(self, row: int, ni: NodeInfo) -> None:
        """The node at `row` is now `ni` (the snapshot's list already holds it)."""
        ints, bools = _row(ni)
        old_node, old_unschedulable, old_tainted = self._bools[row, :3].tolist()
        old_cpu, old_memory = self._ints[row, :2].tolist()
        self._ints[row] = ints
        self._bools[row] = bools
        has_node, unschedulable, tainted = bools[:3]
        self.missing_nodes += old_node - has_node
        self.unschedulable_nodes += unschedulable - old_unschedulable
        self.tainted_nodes += tainted - old_tainted
        self.no_cpu_or_memory_nodes += (not ints[0] or not ints[1]) - (
            not old_cpu or not old_memory
        )
        for d in self._domains.values():
            d.set_row(row, ni)
        if self._scalars is not None:
            self._scalars.set_row(row, ni)

    def with_pods_added(self, rows: IntArray, added: IntArray) -> NodeColumns:
        """A copy of these columns where each of `rows` (distinct) also holds pods whose
        requests sum to the matching row of `added`: (cpu, memory, ephemeral storage,
        non-zero cpu, non-zero memory, pod count), what `NodeInfo.add_pod_info` adds for
        each (PodInfo.requests, non_zero_requests, one pod). Requested, free, the non-zero
        requests and the pod count follow; everything else (allocatable, the node's own
        masks, label domains, `infos`) is shared, read-only: `infos[row]` is still the node
        without them. For the batch form of the nominated pods' pass
        (ColumnRunner.nominated_columns)."""
        c = NodeColumns.__new__(NodeColumns)
        for name in NodeColumns.__slots__:
            if name not in _INT_FIELDS and name != "_ints":
                setattr(c, name, getattr(self, name))
        ints = self._ints.copy()
        cpu, memory, ephemeral, nz_cpu, nz_memory, count = added.T
        ints[rows, 4] += cpu
        ints[rows, 5] += memory
        ints[rows, 6] += ephemeral
        ints[rows, 7] += nz_cpu
        ints[rows, 8] += nz_memory
        ints[rows, 9] += count
        ints[rows, 10] -= cpu
        ints[rows, 11] -= memory
        ints[rows, 12] -= ephemeral
        ints[rows, 13] -= count
        c._ints = ints
        for i, name in enumerate(_INT_FIELDS):
            setattr(c, name, ints[:, i])
        return c

    def domains(self, key: str) -> Domains:
        """The values of the label `key` over the rows (`Domains.row_ids`: -1 without it)."""
        d = self._domains.get(key)
        if d is None:
            d = self._domains[key] = Domains(key, self.infos)
        return d

    def scalar(self, name: str) -> ScalarColumn:
        """The scalar resource `name` over the rows: allocatable, and free where there is
        some allocatable (kemu.scheduling.scalar_columns). The nominated pods' copy
        (`with_pods_added`) shares them: they do not count those pods' scalar requests."""
        if self._scalars is None:
            self._scalars = ScalarColumns(self.infos)
        return self._scalars.column(name, self.infos)

    def nodes_present(self, rows: IntArray) -> BoolArray:
        """`has_node[rows]`, without the gather when every row has its node object."""
        if self.missing_nodes:
            out: BoolArray = self.has_node[rows]
            return out
        return self.all_rows(len(rows))

    def all_rows(self, n: int) -> BoolArray:
        """An all-True mask of `n` rows, read-only and shared (the last length asked): a batch
        Filter returns it when every row passes, and the framework then skips combining it."""
        mask = self._all_true
        if len(mask) != n:
            mask = np.ones(n, dtype=np.bool_)
            mask.flags.writeable = False
            self._all_true = mask
        return mask


# ---------------------------------------------------------------- the opt-in protocols


@runtime_checkable
class ColumnFilterPlugin(Protocol):
    """The batch form of a Filter plugin.

    `filter_columns` gets the rows (indices into `columns`) to decide, and returns a bool
    array of the same length: True where `filter(state, pod, columns.infos[row])` would
    return Success, False where it might not (the per-node Filter then decides); the caller
    never writes to it, and `columns.all_rows(len(rows))` says "every row" at no cost. It
    runs after the plugin's PreFilter, with the same CycleState. It returns None when it has no batch
    form for this pod (the cycle then uses the per-node path); that answer must be the same
    for every call of a cycle. It must not change `state`."""

    def filter_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> BoolArray | None: ...


@runtime_checkable
class ColumnRejectPlugin(Protocol):
    """The rejections of a batch Filter plugin, for the rows its `filter_columns` left False.

    `reject_columns` returns, per row, an index into the returned statuses: k >= 0 where the
    per-node `filter` would return exactly `statuses[k]` (a rejection: Unschedulable or
    UnschedulableAndUnresolvable), -1 where it cannot tell (the per-node Filter then decides).
    The framework uses it for a row only when every Filter plugin before this one in order has
    a batch form that passed the row, so that the row's Status is this plugin's without
    running any plugin per node (upstream's statuses for the nodes a cycle rejects)."""

    def reject_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> tuple[IntArray, Sequence[Status]] | None: ...


@runtime_checkable
class ColumnNominatedPlugin(Protocol):
    """The opt-in of a batch Filter plugin to the batch form of the nominated pods' pass.

    Upstream's Filter with nominated pods (Framework.run_filter_plugins_with_nominated_pods)
    first filters a copy of the node with the pods nominated there (of at least the pod's
    priority) added. The framework evaluates that pass over `NodeColumns.with_pods_added`
    (the nominated pods' requests and count added to their nodes' rows) only when every Filter
    plugin the cycle runs has a batch form and opts in here. `nominated_columns_exact`
    returns True when the plugin's `filter_columns` and `reject_columns` over those columns
    are exact for the nodes plus `nominated` (every pod counted in this cycle's pass, on any
    node): that is, when they read the node's pods only through the requested, free,
    non-zero and pod-count columns, and read `infos[row]` (the node without them) only for
    what the pods do not change (labels, taints). A plugin that reads more (host ports,
    affinity terms) does not implement it, or returns True only for nominated pods that
    change nothing it reads."""

    def nominated_columns_exact(
        self, state: CycleState, pod: types_pb2.Pod, nominated: Sequence[PodInfo]
    ) -> bool: ...


@runtime_checkable
class ColumnScorePlugin(Protocol):
    """The batch form of a Score plugin (and of its NormalizeScore, if it has one).

    `score_columns` returns the raw scores of `rows`, exactly what `score` would return for
    each node in turn, or None when it has no batch form for this pod (the cycle then scores
    per node). It runs after the plugin's PreScore. A plugin with ScoreExtensions also
    implements `normalize_columns`, equal to its `normalize_score` on the same scores."""

    def score_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> IntArray | None: ...


@runtime_checkable
class ColumnNormalizePlugin(Protocol):
    def normalize_columns(
        self, state: CycleState, pod: types_pb2.Pod, scores: IntArray
    ) -> IntArray | None: ...


@runtime_checkable
class ColumnConstantScorePlugin(Protocol):
    """A Score plugin with a batch form (kemu.scheduling.columns.ColumnScorePlugin) that can
    tell, before looking at the rows, that every row gets the same final score this cycle
    (TaintToleration on a cluster without taints, say): `constant_score_columns` returns
    that score, after NormalizeScore if the plugin has one (what `score_columns` then
    `normalize_columns` would give every row), or None when it depends on the rows (the
    framework then calls `score_columns`). Same conditions as `score_columns`: after the
    plugin's PreScore, `state` not changed."""

    def constant_score_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns
    ) -> int | None: ...


# ---------------------------------------------------------------- helpers for batch forms


def per_node_rows(
    rows: IntArray, mask: BoolArray, columns: NodeColumns, decide: PerNode
) -> BoolArray:
    """`mask` with the rows it leaves False decided one by one by `decide(NodeInfo)`: for a
    batch form that is exact on most rows and falls back to its per-node code on the rest
    (a tainted node, say)."""
    out = mask.copy()
    infos = columns.infos
    for i in np.flatnonzero(~mask):
        out[i] = decide(infos[int(rows[i])])
    return out


class PerNode(Protocol):
    def __call__(self, node: NodeInfo, /) -> bool: ...


def default_normalize_columns(max_priority: int, reverse: bool, scores: IntArray) -> IntArray:
    """helpers.default_normalize_score over an array."""
    highest = int(np.maximum.reduce(scores)) if len(scores) else 0
    if highest == 0:
        if reverse:
            return np.full(len(scores), max_priority, dtype=np.int64)
        return scores
    scaled = max_priority * scores // highest
    return max_priority - scaled if reverse else scaled


def least_allocated_columns(
    used_cpu: IntArray,
    used_memory: IntArray,
    cap_cpu: IntArray,
    cap_memory: IntArray,
    reqs: Sequence[int],
    wc: int,
    wm: int,
    dense: bool | None = None,
) -> IntArray:
    """resource_allocation.least_allocated_cpu_memory over arrays (integer arithmetic as
    there: every value is non-negative, so floor division is Go's). `dense`: every cap is
    known to be non-zero (None: checked here)."""
    if dense is None:
        dense = bool(cap_cpu.all() and cap_memory.all())
    if wc + wm and dense:  # every node has both: no masks
        # (cap - requested) * 100 // cap, 0 when the request exceeds cap: clamping the
        # difference at 0 gives that 0 (in place, to spare temporaries).
        s_cpu = cap_cpu - used_cpu
        s_cpu -= reqs[0]
        np.maximum(s_cpu, 0, out=s_cpu)
        s_cpu *= MAX_NODE_SCORE
        s_cpu //= cap_cpu
        s_mem = cap_memory - used_memory
        s_mem -= reqs[1]
        np.maximum(s_mem, 0, out=s_mem)
        s_mem *= MAX_NODE_SCORE
        s_mem //= cap_memory
        if wc != 1:
            s_cpu *= wc
        if wm != 1:
            s_mem *= wm
        s_cpu += s_mem
        s_cpu //= wc + wm
        return s_cpu
    total = np.zeros(len(cap_cpu), dtype=np.int64)
    wsum = np.zeros(len(cap_cpu), dtype=np.int64)
    for used, cap, req, w in (
        (used_cpu, cap_cpu, reqs[0], wc),
        (used_memory, cap_memory, reqs[1], wm),
    ):
        has = cap != 0
        r = used + req
        ok = has & (r <= cap)
        safe = np.where(has, cap, 1)
        total += np.where(ok, (cap - r) * MAX_NODE_SCORE // safe * w, 0)
        wsum += np.where(has, w, 0)
    return np.where(wsum != 0, total // np.where(wsum != 0, wsum, 1), 0)


def most_allocated_columns(
    used_cpu: IntArray,
    used_memory: IntArray,
    cap_cpu: IntArray,
    cap_memory: IntArray,
    reqs: Sequence[int],
    wc: int,
    wm: int,
) -> IntArray:
    """resource_allocation.most_allocated_cpu_memory over arrays."""
    total = np.zeros(len(cap_cpu), dtype=np.int64)
    wsum = np.zeros(len(cap_cpu), dtype=np.int64)
    for used, cap, req, w in (
        (used_cpu, cap_cpu, reqs[0], wc),
        (used_memory, cap_memory, reqs[1], wm),
    ):
        has = cap != 0
        r = used + req
        safe = np.where(has, cap, 1)
        total += np.where(has, np.minimum(r, cap) * MAX_NODE_SCORE // safe * w, 0)
        wsum += np.where(has, w, 0)
    return np.where(wsum != 0, total // np.where(wsum != 0, wsum, 1), 0)


def balanced_cpu_memory_columns(
    used_cpu: IntArray, used_memory: IntArray, cap_cpu: IntArray, cap_memory: IntArray,
    reqs: Sequence[int], dense: bool | None = None,
) -> IntArray:  # fmt: skip
    """balanced_allocation._balanced_cpu_memory over arrays (the same float64 operations).
    `dense`: every cap is known to be non-zero (None: checked here)."""
    if dense is None:
        dense = bool(cap_cpu.all() and cap_memory.all())
    if dense:  # every node has both: no masks
        # int64 / int64 is the float64 division of the two converted (exact below 2**53).
        f_cpu = np.true_divide(used_cpu + reqs[0], cap_cpu)
        f_mem = np.true_divide(used_memory + reqs[1], cap_memory)
        np.minimum(f_cpu, 1.0, out=f_cpu)
        np.minimum(f_mem, 1.0, out=f_mem)
        f_cpu -= f_mem
        f_cpu /= 2
        np.abs(f_cpu, out=f_cpu)
        np.subtract(1, f_cpu, out=f_cpu)
        f_cpu *= float(MAX_NODE_SCORE)
        return f_cpu.astype(np.int64)  # truncates toward zero, as int() (never negative)
    both = (cap_cpu != 0) & (cap_memory != 0)
    f_cpu = (used_cpu + reqs[0]).astype(np.float64) / np.where(both, cap_cpu, 1).astype(np.float64)
    f_mem = (used_memory + reqs[1]).astype(np.float64) / np.where(both, cap_memory, 1).astype(
        np.float64
    )
    f_cpu = np.minimum(f_cpu, 1.0)
    f_mem = np.minimum(f_mem, 1.0)
    score = np.trunc((1 - np.abs((f_cpu - f_mem) / 2)) * float(MAX_NODE_SCORE)).astype(np.int64)
    return np.where(both, score, MAX_NODE_SCORE)
