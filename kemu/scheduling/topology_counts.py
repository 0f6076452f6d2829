"""InterPodAffinity's pre-computed counts, kept in the snapshot (kemu, not upstream's layout).

Upstream's InterPodAffinity walks, at every PreFilter and PreScore, the pods with affinity
terms (and, for an incoming pod with terms of its own, every pod) to build its topology-pair
counts. In Python at thousands of nodes that walk is most of the cycle, so the snapshot keeps
what it reads incrementally, per node row (the row order of `Snapshot.list()` and of the
node columns), updated as the cache replaces a changed NodeInfo:

- `Domains`: per topology key, the domain (value) id of every row (-1: the node lacks the
  label), so that per-row counts sum into per-domain counts with one `bincount`;
- groups: the terms of the existing pods, grouped by (kind, term, weight), each with the
  number of (pod, term) occurrences per row. A cycle evaluates each distinct term once
  against the incoming pod instead of once per pod;
- queries: for an incoming pod's required or preferred terms (namespaces unrolled), the
  number of pods per row matching all of them; registered on first use (one walk of every
  pod), then kept up to date row by row; the least recently used are dropped beyond a bound.

`PairCounts` is upstream's topologyToMatchedTermCount ((key, value) -> count) over these
arrays: copy-on-write, so that the preemption dry runs and the nominated pods' two-pass filter
clone and change it cheaply (AddPod/RemovePod). The per-node plugin code reads it pair by
pair; the batch forms read it per row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

import numpy as np

from kemu.machinery.labels import Selector
from kemu.scheduling.arrays import IntArray
from kemu.scheduling.types import AffinityTerm, NodeInfo

# Kinds of an existing pod's term.
REQUIRED_ANTI: Final = 0
REQUIRED_AFFINITY: Final = 1
PREFERRED_AFFINITY: Final = 2
PREFERRED_ANTI: Final = 3

# (kind, term, weight): weight 0 for required terms.
GroupKey = tuple[int, AffinityTerm, int]
# One incoming term's pod filter: (namespaces, every namespace, selector).
QueryTerm = tuple[frozenset[str], bool, Selector]
QueryKey = tuple[QueryTerm, ...]
PodMatcher = Callable[[str, Mapping[str, str]], bool]

MAX_QUERIES: Final = 32


def query_term(t: AffinityTerm) -> QueryTerm:
    """The pod filter of an incoming pod's term (its namespaceSelector already unrolled)."""
    return (t.namespaces, t.all_namespaces, t.selector)


class Domains:
    """The values of one topology key over the rows: `ids[value]` and `row_ids[row]`."""

    __slots__ = ("ids", "key", "row_ids")

    def __init__(self, key: str, infos: Sequence[NodeInfo]) -> None:
        self.key = key
        self.ids: dict[str, int] = {}
        row_ids = np.full(len(infos), -1, dtype=np.int64)
        for row, ni in enumerate(infos):
            value = ni.labels.get(key) if ni.node is not None else None
            if value is not None:
                row_ids[row] = self.ids.setdefault(value, len(self.ids))
        self.row_ids = row_ids

    def set_row(self, row: int, ni: NodeInfo) -> None:
        value = ni.labels.get(self.key) if ni.node is not None else None
        self.row_ids[row] = -1 if value is None else self.ids.setdefault(value, len(self.ids))

    def aggregate(self, per_row: IntArray) -> IntArray:
        """Per domain id, the sum of `per_row` over the rows in that domain."""
        has = self.row_ids >= 0
        sums = np.bincount(
            self.row_ids[has], weights=per_row[has].astype(np.float64), minlength=len(self.ids)
        )
        return np.rint(sums).astype(np.int64)

    def per_row(self, by_domain: IntArray, rows: IntArray) -> IntArray:
        """`by_domain` read at each of `rows`' domain; 0 where the row lacks the key."""
        ids = self.row_ids[rows]
        has = ids >= 0
        out = np.zeros(len(rows), dtype=np.int64)
        if len(by_domain):
            out[has] = by_domain[ids[has]]
        return out


def _groups_of(ni: NodeInfo) -> dict[GroupKey, int]:
    out: dict[GroupKey, int] = {}
    if ni.node is None:
        return out
    for pi in ni.pods_with_affinity:
        for t in pi.required_anti_affinity_terms:
            k: GroupKey = (REQUIRED_ANTI, t, 0)
            out[k] = out.get(k, 0) + 1
        for t in pi.required_affinity_terms:
            k = (REQUIRED_AFFINITY, t, 0)
            out[k] = out.get(k, 0) + 1
        for w in pi.preferred_affinity_terms:
            k = (PREFERRED_AFFINITY, w.term, w.weight)
            out[k] = out.get(k, 0) + 1
        for w in pi.preferred_anti_affinity_terms:
            k = (PREFERRED_ANTI, w.term, w.weight)
            out[k] = out.get(k, 0) + 1
    return out


def _count_matching(ni: NodeInfo, matchers: Sequence[PodMatcher]) -> int:
    if ni.node is None:
        return 0
    n = 0
    for pi in ni.pods:
        meta = pi.pod.metadata
        ns, labels = meta.namespace, meta.labels
        for m in matchers:
            if not m(ns, labels):
                break
        else:
            n += 1
    return n


class AffinityIndex:
    """The per-row counts of one snapshot's rows (see the module docstring)."""

    __slots__ = ("_domains", "_group_rows", "_groups", "_queries", "infos")

    def __init__(self, infos: Sequence[NodeInfo]) -> None:
        self.infos = infos
        self._domains: dict[str, Domains] = {}
        self._groups: dict[GroupKey, IntArray] = {}
        # Per row, what it contributes to the groups (to take it back on replace).
        self._group_rows: list[dict[GroupKey, int]] = []
        for row, ni in enumerate(infos):
            contrib = _groups_of(ni)
            self._group_rows.append(contrib)
            for k, c in contrib.items():
                self._group(k)[row] += c
        # Insertion order is recency: the first is the least recently used.
        self._queries: dict[QueryKey, tuple[Sequence[PodMatcher], IntArray]] = {}

    def _group(self, k: GroupKey) -> IntArray:
        arr = self._groups.get(k)
        if arr is None:
            arr = self._groups[k] = np.zeros(len(self.infos), dtype=np.int64)
        return arr

    def domains(self, key: str) -> Domains:
        d = self._domains.get(key)
        if d is None:
            d = self._domains[key] = Domains(key, self.infos)
        return d

    def has_required_anti_affinity(self) -> bool:
        """Whether a term of kind REQUIRED_ANTI was ever counted (its counts may be zero now)."""
        return any(k[0] == REQUIRED_ANTI for k in self._groups)

    def groups(self) -> Mapping[GroupKey, IntArray]:
        """The existing pods' terms: per (kind, term, weight), the occurrences per row."""
        return self._groups

    def query(self, key: QueryKey, matchers: Sequence[PodMatcher]) -> IntArray:
        """Per row, the pods matching every one of `matchers` (the compiled terms of `key`)."""
        q = self._queries.pop(key, None)
        if q is None:
            arr = np.fromiter(
                (_count_matching(ni, matchers) for ni in self.infos),
                dtype=np.int64,
                count=len(self.infos),
            )
            q = (matchers, arr)
            while len(self._queries) >= MAX_QUERIES:
                del self._queries[next(iter(self._queries))]
        self._queries[key] = q
        return q[1]

    def replace(self, row: int, ni: NodeInfo) -> None:
        """The node at `row` is now `ni`."""
        old = self._group_rows[row]
        new = _groups_of(ni)
        if old or new:
            for k, c in old.items():
                arr = self._groups[k]
                arr[row] -= c
                if c and not arr.any():
                    del self._groups[k]
            for k, c in new.items():
                self._group(k)[row] += c
            self._group_rows[row] = new
        for d in self._domains.values():
            d.set_row(row, ni)
        for matchers, arr in self._queries.values():
            arr[row] = _count_matching(ni, matchers)


class PairCounts:
    """(topology key, value) -> count, upstream's topologyToMatchedTermCount: per key an array
    by the key's domain ids, plus the pairs of values the domains do not know (a node outside
    the snapshot: only through AddPod/RemovePod). A pair at 0 counts as absent, as upstream
    deletes it. Copy-on-write: `clone` shares the arrays until either side changes."""

    __slots__ = ("_by_key", "_domains", "_extra", "_nonzero", "_owned")

    def __init__(self, domains: Callable[[str], Domains] | None) -> None:
        self._domains = domains
        self._by_key: dict[str, IntArray] = {}
        self._owned: set[str] = set()
        self._extra: dict[tuple[str, str], int] = {}
        self._nonzero = 0

    def add_per_row(self, key: str, per_row: IntArray) -> None:
        """Adds per-row counts (rows of the snapshot) to the pairs of `key`."""
        assert self._domains is not None
        d = self._domains(key)
        by_domain = d.aggregate(per_row)
        current = self._by_key.get(key)
        if current is not None:
            self._nonzero -= int(np.count_nonzero(current))
            by_domain = by_domain + current
        self._by_key[key] = by_domain
        self._owned.add(key)
        self._nonzero += int(np.count_nonzero(by_domain))

    def __bool__(self) -> bool:
        return self._nonzero > 0

    def keys(self) -> set[str]:
        return set(self._by_key) | {k for k, _ in self._extra}

    def get(self, key: str, value: str) -> int:
        arr = self._by_key.get(key)
        if arr is not None and self._domains is not None:
            i = self._domains(key).ids.get(value)
            if i is not None and i < len(arr):
                return int(arr[i])
        return self._extra.get((key, value), 0)

    def update(self, labels: Mapping[str, str], key: str, delta: int) -> None:
        """upstream topologyToMatchedTermCount.update: the node's pair for `key`, if it has
        the label, changes by `delta`."""
        value = labels.get(key)
        if value is None or not delta:
            return
        ids = self._domains(key).ids if self._domains is not None else None
        i = ids.get(value) if ids is not None else None
        if ids is not None and i is not None:
            arr = self._by_key.get(key)
            if arr is None:
                arr = np.zeros(len(ids), dtype=np.int64)
                self._by_key[key] = arr
                self._owned.add(key)
            elif key not in self._owned:
                arr = self._by_key[key] = arr.copy()
                self._owned.add(key)
            if i < len(arr):
                before = int(arr[i])
                arr[i] = before + delta
                self._nonzero += (before + delta != 0) - (before != 0)
                return
        pair = (key, value)
        before = self._extra.get(pair, 0)
        after = before + delta
        if after:
            self._extra[pair] = after
        else:
            self._extra.pop(pair, None)
        self._nonzero += (after != 0) - (before != 0)

    def clone(self) -> PairCounts:
        c = PairCounts.__new__(PairCounts)
        c._domains = self._domains
        c._by_key = dict(self._by_key)
        c._owned = set()
        self._owned = set()
        c._extra = dict(self._extra)
        c._nonzero = self._nonzero
        return c

    def batchable(self) -> bool:
        """Whether `per_row` is exact: no pair outside the domains."""
        return not self._extra and self._domains is not None

    def per_row(self, key: str, rows: IntArray) -> IntArray:
        """Each row's count for its value of `key` (0 without the label); `batchable` only."""
        assert self._domains is not None
        arr = self._by_key.get(key)
        if arr is None:
            return np.zeros(len(rows), dtype=np.int64)
        return self._domains(key).per_row(arr, rows)

    def items(self) -> dict[tuple[str, str], int]:
        """Every pair not at 0 (tests, debugging)."""
        out = {p: c for p, c in self._extra.items() if c}
        if self._domains is not None:
            for key, arr in self._by_key.items():
                names = {i: v for v, i in self._domains(key).ids.items()}
                for i in np.flatnonzero(arr).tolist():
                    out[(key, names[i])] = int(arr[i])
        return out
