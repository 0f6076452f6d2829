"""InterPodAffinity: pod (anti-)affinity between the incoming pod and the pods already placed
(upstream interpodaffinity/{plugin,filtering,scoring}.go).

Filtering works on topology pairs (topologyKey, value of that label on a node). PreFilter counts,
over the snapshot:
- existing anti-affinity: pairs where an existing pod has a required anti-affinity term that
  matches the incoming pod (the incoming pod must stay out of those domains);
- affinity: pairs where an existing pod matches ALL the incoming pod's required affinity terms
  (counted once per term's topology key);
- anti-affinity: pairs where an existing pod matches one of the incoming pod's required
  anti-affinity terms.
Filter then looks only at the node's labels. Codes as upstream: affinity not satisfied is
UnschedulableAndUnresolvable (evicting pods cannot create a matching pod), the two
anti-affinity failures are Unschedulable (preemption may remove the offending pod). A pod whose
affinity terms match the pod itself may go anywhere its topology keys exist when no pod in the
cluster matches yet: the first of a group that wants to be together.

add_pod/remove_pod keep the counts right when the framework adds nominated pods or removes
victims in a what-if.

Scoring sums, per topology pair, the weights of preferred terms (incoming pod's terms against
existing pods, and existing pods' preferred terms against the incoming pod; existing pods'
required affinity terms count `hardPodAffinityWeight`), anti-affinity negatively; a node scores
the sum over its labels, then scores are min-max normalised to 0..100.

Namespaces (`types.AffinityTerm`): a term covers its `namespaces` and the namespaces whose labels
match its namespaceSelector (an empty one: every namespace). The incoming pod's terms have their
selectors unrolled into namespace names from the scheduler's Namespace informer at PreFilter and
PreScore (upstream's mergeAffinityTermNamespacesIfNotEmpty); existing pods' terms are matched
against the labels of the incoming pod's namespace (GetNamespaceLabelsSnapshot). Without an
informer (a simulation) no namespace has labels. As upstream, namespace label changes are not
queueing events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

import numpy as np

from kemu.api.v1 import types_pb2
from kemu.machinery.labels import Requirement
from kemu.machinery.resources import is_pod_resize_deferred
from kemu.scheduling import status as st
from kemu.scheduling.arrays import BoolArray, IntArray
from kemu.scheduling.columns import NodeColumns
from kemu.scheduling.deferred import resize_preemption_enabled
from kemu.scheduling.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from kemu.scheduling.interface import (
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    ObjectLister,
    PluginArgs,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
    cycle_pod_info,
)
from kemu.scheduling.snapshot import Snapshot
from kemu.scheduling.status import Status
from kemu.scheduling.topology_counts import (
    PREFERRED_AFFINITY,
    PREFERRED_ANTI,
    REQUIRED_AFFINITY,
    REQUIRED_ANTI,
    AffinityIndex,
    PairCounts,
    query_term,
)
from kemu.scheduling.types import (
    MAX_NODE_SCORE,
    AffinityTerm,
    NodeInfo,
    NodeScore,
    PodInfo,
    PreFilterResult,
)

NAME: Final = "InterPodAffinity"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: Final = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod anti-affinity rules"

DEFAULT_HARD_POD_AFFINITY_WEIGHT: Final = 1

_AFFINITY_FAILED: Final = st.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
_ANTI_AFFINITY_FAILED: Final = st.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
_EXISTING_ANTI_AFFINITY_FAILED: Final = st.unschedulable(
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH
)

Counts = PairCounts


def pod_matches_all_affinity_terms(terms: Iterable[AffinityTerm], pod: types_pb2.Pod) -> bool:
    """True iff there is at least one term and `pod` matches every one."""
    matched = False
    for t in terms:
        if not t.matches(pod):
            return False
        matched = True
    return matched


# A compiled term: (namespace, labels) of a pod -> does the term select it.
Matcher = Callable[[str, Mapping[str, str]], bool]

_IN: Final = 0
_NOT_IN: Final = 1
_EXISTS: Final = 2
_NOT_EXISTS: Final = 3
_OTHER: Final = 4


def compile_term(term: AffinityTerm) -> Matcher:
    """`term.matches` as a closure over plain values: PreFilter and PreScore run it for every
    pod in the cluster, so the common one-label selector is a single dict lookup. For the
    incoming pod's terms, after `with_namespaces` (no namespace labels are consulted)."""
    namespaces = term.namespaces
    all_ns = term.all_namespaces
    sel = term.selector
    if sel.nothing:
        return lambda ns, labels: False
    reqs = sel.requirements
    if len(reqs) == 1 and reqs[0].operator in ("=", "==", "in") and len(reqs[0].values) == 1:
        key, want = reqs[0].key, reqs[0].values[0]

        def match_one(ns: str, labels: Mapping[str, str]) -> bool:
            return (all_ns or ns in namespaces) and labels.get(key) == want

        return match_one
    checks: list[tuple[int, str, frozenset[str], Requirement]] = []
    for r in reqs:
        op = r.operator
        if op in ("=", "==", "in"):
            kind = _IN
        elif op in ("!=", "notin"):
            kind = _NOT_IN
        elif op == "exists":
            kind = _EXISTS
        elif op == "!":
            kind = _NOT_EXISTS
        else:
            kind = _OTHER
        checks.append((kind, r.key, frozenset(r.values), r))

    def match(ns: str, labels: Mapping[str, str]) -> bool:
        if not (all_ns or ns in namespaces):
            return False
        for kind, key, values, req in checks:
            v = labels.get(key)
            if kind == _IN:
                if v is None or v not in values:
                    return False
            elif kind == _NOT_IN:
                if v is not None and v in values:
                    return False
            elif kind == _EXISTS:
                if v is None:
                    return False
            elif kind == _NOT_EXISTS:
                if v is not None:
                    return False
            elif not req.matches(labels):
                return False
        return True

    return match


def _update(counts: Counts, labels: Mapping[str, str], key: str, value: int) -> None:
    # Counts go down on remove_pod; a pair at 0 is gone, as upstream deletes it.
    counts.update(labels, key, value)


def _selects(
    term: AffinityTerm, namespace: str, ns_labels: Mapping[str, str], labels: Mapping[str, str]
) -> bool:
    """`term.matches` for a pod given by its namespace, its namespace's labels and its labels."""
    return term.in_scope(namespace, ns_labels) and term.selector.matches(labels)


class PreFilterState:
    """Topology-pair counts for one cycle; add_pod/remove_pod mutate them, so `clone` copies."""

    __slots__ = (
        "affinity_counts",
        "affinity_matchers",
        "affinity_terms",
        "anti_affinity_counts",
        "anti_affinity_matchers",
        "anti_affinity_terms",
        "existing_anti_affinity_counts",
        "existing_anti_affinity_keys",
        "index",
        "labels",
        "matches_own_affinity",
        "namespace",
        "ns_labels",
        "pod_info",
    )

    def __init__(
        self,
        pod_info: PodInfo,
        *,
        affinity_terms: Sequence[AffinityTerm] | None = None,
        anti_affinity_terms: Sequence[AffinityTerm] | None = None,
        ns_labels: Mapping[str, str] | None = None,
        index: AffinityIndex | None = None,
    ) -> None:
        """`affinity_terms` and `anti_affinity_terms`: the pod's required terms with their
        namespace selectors unrolled (default: as parsed); `ns_labels`: the labels of the
        pod's namespace; `index`: the snapshot's counts, when PreFilter reads them (the counts
        are then over its rows, and the batch Filter can read them per row)."""
        self.index = index
        domains = index.domains if index is not None else None
        self.pod_info = pod_info
        meta = pod_info.pod.metadata
        self.namespace = meta.namespace
        self.ns_labels: Mapping[str, str] = ns_labels or {}
        self.labels = dict(meta.labels)
        if affinity_terms is None:
            affinity_terms = pod_info.required_affinity_terms
        if anti_affinity_terms is None:
            anti_affinity_terms = pod_info.required_anti_affinity_terms
        self.existing_anti_affinity_counts = PairCounts(domains)
        # Topology keys that ever appeared in existing_anti_affinity_counts: Filter checks the
        # node's value for these keys only.
        self.existing_anti_affinity_keys: set[str] = set()
        self.affinity_counts = PairCounts(domains)
        self.anti_affinity_counts = PairCounts(domains)
        self.affinity_terms = affinity_terms
        self.anti_affinity_terms = anti_affinity_terms
        self.affinity_matchers = [(t.topology_key, compile_term(t)) for t in affinity_terms]
        self.anti_affinity_matchers = [
            (t.topology_key, compile_term(t)) for t in anti_affinity_terms
        ]
        self.matches_own_affinity = pod_matches_all_affinity_terms(affinity_terms, pod_info.pod)

    def clone(self) -> PreFilterState:
        c = PreFilterState.__new__(PreFilterState)
        c.pod_info = self.pod_info
        c.index = self.index
        c.namespace = self.namespace
        c.ns_labels = self.ns_labels
        c.labels = self.labels
        c.existing_anti_affinity_counts = self.existing_anti_affinity_counts.clone()
        c.existing_anti_affinity_keys = set(self.existing_anti_affinity_keys)
        c.affinity_counts = self.affinity_counts.clone()
        c.anti_affinity_counts = self.anti_affinity_counts.clone()
        c.affinity_terms = self.affinity_terms
        c.anti_affinity_terms = self.anti_affinity_terms
        c.affinity_matchers = self.affinity_matchers
        c.anti_affinity_matchers = self.anti_affinity_matchers
        c.matches_own_affinity = self.matches_own_affinity
        return c

    def count_from_nodes(
        self, with_required_anti: Iterable[NodeInfo], nodes: Iterable[NodeInfo]
    ) -> None:
        """The counts by walking the pods (upstream's PreFilter): the existing pods' required
        anti-affinity terms on `with_required_anti`, every pod of `nodes` against the
        incoming pod's terms."""
        for ni in with_required_anti:
            if ni.node is None:
                continue
            labels = ni.labels
            for existing in ni.pods_with_required_anti_affinity:
                self.add_existing_pod(existing, labels, 1)
        pi = self.pod_info
        if not (pi.required_affinity_terms or pi.required_anti_affinity_terms):
            return
        affinity, anti = self.affinity_matchers, self.anti_affinity_matchers
        affinity_counts, anti_counts = self.affinity_counts, self.anti_affinity_counts
        for ni in nodes:
            if ni.node is None or not ni.pods:
                continue
            labels = ni.labels
            for existing in ni.pods:
                meta = existing.pod.metadata
                ns, pod_labels = meta.namespace, meta.labels
                if affinity and all(match(ns, pod_labels) for _, match in affinity):
                    for key, _ in affinity:
                        _update(affinity_counts, labels, key, 1)
                for key, match in anti:
                    if match(ns, pod_labels):
                        _update(anti_counts, labels, key, 1)

    def count_from_index(self, index: AffinityIndex, has_required: bool) -> None:
        """The same counts from the snapshot's per-row counts: each distinct term of the
        existing pods is matched once against the incoming pod, and the pods matching the
        incoming pod's terms are counted per row by the index (kept across cycles)."""
        existing: dict[str, IntArray] = {}
        ns, ns_labels, labels = self.namespace, self.ns_labels, self.labels
        for (kind, term, _), per_row in index.groups().items():
            if kind == REQUIRED_ANTI and _selects(term, ns, ns_labels, labels):
                key = term.topology_key
                self.existing_anti_affinity_keys.add(key)
                prev = existing.get(key)
                existing[key] = per_row if prev is None else prev + per_row
        for key, per_row in existing.items():
            self.existing_anti_affinity_counts.add_per_row(key, per_row)
        if not has_required:
            return
        if self.affinity_terms:
            matched = index.query(
                tuple(query_term(t) for t in self.affinity_terms),
                [m for _, m in self.affinity_matchers],
            )
            if matched.any():
                for t in self.affinity_terms:
                    self.affinity_counts.add_per_row(t.topology_key, matched)
        for t, (key, match) in zip(
            self.anti_affinity_terms, self.anti_affinity_matchers, strict=True
        ):
            matched = index.query((query_term(t),), [match])
            if matched.any():
                self.anti_affinity_counts.add_per_row(key, matched)

    def add_existing_pod(self, pi: PodInfo, labels: Mapping[str, str], multiplier: int) -> None:
        """Counts `pi` (on a node with `labels`) in the existing anti-affinity counts."""
        for t in pi.required_anti_affinity_terms:
            if _selects(t, self.namespace, self.ns_labels, self.labels):
                self.existing_anti_affinity_keys.add(t.topology_key)
                _update(self.existing_anti_affinity_counts, labels, t.topology_key, multiplier)

    def add_incoming_matches(self, pi: PodInfo, labels: Mapping[str, str], multiplier: int) -> None:
        """Counts `pi` against the incoming pod's required (anti-)affinity terms."""
        meta = pi.pod.metadata
        ns = meta.namespace
        pod_labels = meta.labels
        affinity = self.affinity_matchers
        if affinity:
            for _, match in affinity:
                if not match(ns, pod_labels):
                    break
            else:
                for key, _ in affinity:
                    _update(self.affinity_counts, labels, key, multiplier)
        for key, match in self.anti_affinity_matchers:
            if match(ns, pod_labels):
                _update(self.anti_affinity_counts, labels, key, multiplier)

    def update_with_pod(self, pi: PodInfo, node: NodeInfo, multiplier: int) -> None:
        if node.node is None:
            return
        labels = node.labels
        self.add_existing_pod(pi, labels, multiplier)
        self.add_incoming_matches(pi, labels, multiplier)


class PreScoreState:
    """upstream's topologyScore: the score of each topology pair (`topology_score`, keys in
    `keys`); `index` when it was computed from the snapshot's index (its rows)."""

    __slots__ = ("index", "keys", "topology_score")

    def __init__(
        self, topology_score: PairCounts, keys: set[str], index: AffinityIndex | None = None
    ) -> None:
        self.topology_score = topology_score
        self.keys = keys
        self.index = index

    def clone(self) -> PreScoreState:
        return self


class InterPodAffinity(
    PreFilterPlugin,
    PreFilterExtensions,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ScoreExtensions,
    EnqueueExtensions,
):
    NAME = NAME

    def __init__(
        self,
        handle: Handle,
        *,
        hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT,
        ignore_preferred_terms_of_existing_pods: bool = False,
        skip_deferred: bool = False,
        use_index: bool = True,
    ) -> None:
        self.handle = handle
        factory = handle.informer_factory()
        self._namespaces: ObjectLister[types_pb2.Namespace] | None = (
            factory.informer(types_pb2.Namespace).lister if factory is not None else None
        )
        # KEP-5836 (upstream, verified): a Deferred resize skips pod (anti-)affinity.
        self.skip_deferred = skip_deferred
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = ignore_preferred_terms_of_existing_pods
        # Read the snapshot's pre-computed counts (kemu.scheduling.topology_counts) when the
        # lister is a Snapshot; False walks the pods as upstream (the reference the index is
        # compared with).
        self.use_index = use_index

    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ namespaces

    def merge_namespaces(self, term: AffinityTerm) -> AffinityTerm:
        """An incoming pod's term with its namespaceSelector unrolled into the namespaces it
        selects now (mergeAffinityTermNamespacesIfNotEmpty)."""
        sel = term.namespace_selector
        if sel.empty or sel.nothing:
            return term
        listed = self._namespaces.list() if self._namespaces is not None else ()
        return term.with_namespaces(
            ns.metadata.name for ns in listed if sel.matches(ns.metadata.labels)
        )

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        """The labels of `namespace`; none if it is not known (GetNamespaceLabelsSnapshot)."""
        ns = self._namespaces.get(namespace) if self._namespaces is not None else None
        return dict(ns.metadata.labels) if ns is not None else {}

    # ------------------------------------------------------------ PreFilter

    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if self.skip_deferred and is_pod_resize_deferred(pod):
            return None, st.SKIP
        lister = self.handle.snapshot_shared_lister().node_infos()
        pod_info = cycle_pod_info(state, pod)
        # The snapshot's pre-computed counts when PreFilter sees all of its nodes (the
        # scheduler's cycle); otherwise (a simulation with another lister) the walk.
        index = None
        if self.use_index and isinstance(lister, Snapshot) and nodes is lister.list():
            index = lister.affinity_index()
        has_required = bool(
            pod_info.required_affinity_terms or pod_info.required_anti_affinity_terms
        )
        if index is not None and not has_required and not index.has_required_anti_affinity():
            # No existing pod has a required anti-affinity term and the pod has no required
            # term: the counts below would all be empty, so upstream's Skip, without them.
            return None, st.SKIP
        s = PreFilterState(
            pod_info,
            affinity_terms=[self.merge_namespaces(t) for t in pod_info.required_affinity_terms],
            anti_affinity_terms=[
                self.merge_namespaces(t) for t in pod_info.required_anti_affinity_terms
            ],
            ns_labels=self.namespace_labels(pod.metadata.namespace),
            index=index,
        )
        if index is not None:
            s.count_from_index(index, has_required)
        else:
            s.count_from_nodes(lister.have_pods_with_required_anti_affinity_list(), nodes)
        if not s.existing_anti_affinity_counts and not has_required:
            return None, st.SKIP
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, st.SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status:
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return st.as_error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        s.update_with_pod(pod_to_add, node, 1)
        return st.SUCCESS

    def remove_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status:
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return st.as_error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        s.update_with_pod(pod_to_remove, node, -1)
        return st.SUCCESS

    # ------------------------------------------------------------ Filter

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return st.as_error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        if node.node is None:
            return st.as_error("node not found")
        labels = node.labels
        pi = s.pod_info

        terms = pi.required_affinity_terms
        if terms:
            pods_exist = True
            counts = s.affinity_counts
            for t in terms:
                value = labels.get(t.topology_key)
                if value is None:
                    # Every topology key must exist on the node.
                    return _AFFINITY_FAILED
                if counts.get(t.topology_key, value) <= 0:
                    pods_exist = False
            # The first pod of a group with affinity to itself may go anywhere its topology
            # keys exist, as long as no pod matches the terms anywhere yet.
            if not pods_exist and not (not counts and s.matches_own_affinity):
                return _AFFINITY_FAILED

        anti = s.anti_affinity_counts
        if anti:
            for t in pi.required_anti_affinity_terms:
                value = labels.get(t.topology_key)
                if value is not None and anti.get(t.topology_key, value) > 0:
                    return _ANTI_AFFINITY_FAILED

        existing = s.existing_anti_affinity_counts
        if existing:
            for key in s.existing_anti_affinity_keys:
                value = labels.get(key)
                if value is not None and existing.get(key, value) > 0:
                    return _EXISTING_ANTI_AFFINITY_FAILED
        return st.SUCCESS

    def filter_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> BoolArray | None:
        """`filter` over rows: True where every node label check passes, from the counts
        per row (the PreFilter must have read the snapshot's index, over the same rows)."""
        checks = self._row_checks(state, columns, rows)
        if checks is None:
            return None
        has_node, affinity_ok, anti_ok, existing_ok = checks
        out: BoolArray = has_node & affinity_ok & anti_ok & existing_ok
        return out

    def reject_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> tuple[IntArray, list[Status]] | None:
        """`filter`'s rejection per row, in its order: affinity, anti-affinity, existing
        pods' anti-affinity (kemu.scheduling.columns.ColumnRejectPlugin)."""
        checks = self._row_checks(state, columns, rows)
        if checks is None:
            return None
        has_node, affinity_ok, anti_ok, existing_ok = checks
        which = np.full(len(rows), -1, dtype=np.int64)
        which[~existing_ok] = 2
        which[~anti_ok] = 1
        which[~affinity_ok] = 0
        which[~has_node] = -1  # an error per node, not a rejection
        return which, [_AFFINITY_FAILED, _ANTI_AFFINITY_FAILED, _EXISTING_ANTI_AFFINITY_FAILED]

    def _row_checks(
        self, state: CycleState, columns: NodeColumns, rows: IntArray
    ) -> tuple[BoolArray, BoolArray, BoolArray, BoolArray] | None:
        """Per row: has a node, the affinity check, the anti-affinity check and the existing
        pods' anti-affinity check pass (`filter`'s three checks, each on its own)."""
        s = state.read(PRE_FILTER_STATE_KEY)
        if (
            not isinstance(s, PreFilterState)
            or s.index is None
            or s.index.infos is not columns.infos
        ):
            return None
        affinity = s.affinity_counts
        anti = s.anti_affinity_counts
        existing = s.existing_anti_affinity_counts
        if not (affinity.batchable() and anti.batchable() and existing.batchable()):
            return None
        n = len(rows)
        index = s.index
        pi = s.pod_info
        affinity_ok = np.ones(n, dtype=np.bool_)
        terms = pi.required_affinity_terms
        if terms:
            keys_exist = np.ones(n, dtype=np.bool_)
            pods_exist = np.ones(n, dtype=np.bool_)
            for t in terms:
                keys_exist &= index.domains(t.topology_key).row_ids[rows] >= 0
                pods_exist &= affinity.per_row(t.topology_key, rows) > 0
            affinity_ok = keys_exist
            if affinity or not s.matches_own_affinity:
                affinity_ok = keys_exist & pods_exist
        anti_ok = np.ones(n, dtype=np.bool_)
        if anti:
            for t in pi.required_anti_affinity_terms:
                anti_ok &= ~(anti.per_row(t.topology_key, rows) > 0)
        existing_ok = np.ones(n, dtype=np.bool_)
        if existing:
            for key in s.existing_anti_affinity_keys:
                existing_ok &= ~(existing.per_row(key, rows) > 0)
        return columns.has_node[rows], affinity_ok, anti_ok, existing_ok

    # ------------------------------------------------------------ PreScore / Score

    def pre_score(self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]) -> Status:
        pi = cycle_pod_info(state, pod)
        has_constraints = bool(pi.preferred_affinity_terms or pi.preferred_anti_affinity_terms)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return st.SKIP
        lister = self.handle.snapshot_shared_lister().node_infos()
        if (
            not has_constraints
            and self.use_index
            and isinstance(lister, Snapshot)
            and not lister.affinity_index().groups()
        ):
            # No preferred term of its own and no existing pod with any term: nothing would
            # be scored (upstream's Skip for an empty topologyScore), without the scorer.
            return st.SKIP
        scorer = _TopologyScorer(
            pi,
            self.hard_pod_affinity_weight,
            preferred=[
                (w.term.topology_key, w.weight, self.merge_namespaces(w.term))
                for w in pi.preferred_affinity_terms
            ]
            + [
                (w.term.topology_key, -w.weight, self.merge_namespaces(w.term))
                for w in pi.preferred_anti_affinity_terms
            ],
            ns_labels=self.namespace_labels(pod.metadata.namespace),
        )
        index = None
        if self.use_index and isinstance(lister, Snapshot):
            index = lister.affinity_index()
        if index is not None:
            scorer.score_from_index(index)
        else:
            # Without preferred terms of its own, only pods with affinity terms can score it.
            all_nodes = lister.list() if has_constraints else lister.have_pods_with_affinity_list()
            for ni in all_nodes:
                if ni.node is None:
                    continue
                labels = ni.labels
                if not labels:
                    continue
                for existing in ni.pods if has_constraints else ni.pods_with_affinity:
                    scorer.process_existing_pod(existing, labels)
        if not scorer.touched:
            return st.SKIP
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(scorer.scores, scorer.keys, index))
        return st.SUCCESS

    def score(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> tuple[int, Status]:
        s = state.read(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return 0, st.as_error(f"reading {PRE_SCORE_STATE_KEY!r} from cycleState: not found")
        if node.node is None:
            return 0, st.as_error("node not found")
        labels = node.labels
        total = 0
        scores = s.topology_score
        for key in s.keys:
            value = labels.get(key)
            if value is not None:
                total += scores.get(key, value)
        return total, st.SUCCESS

    def score_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> IntArray | None:
        """`score` over rows, from the scores per topology domain."""
        s = state.read(PRE_SCORE_STATE_KEY)
        if (
            not isinstance(s, PreScoreState)
            or s.index is None
            or s.index.infos is not columns.infos
            or not s.topology_score.batchable()
        ):
            return None
        total = np.zeros(len(rows), dtype=np.int64)
        for key in s.keys:
            total += s.topology_score.per_row(key, rows)
        return total

    def normalize_columns(
        self, state: CycleState, pod: types_pb2.Pod, scores: IntArray
    ) -> IntArray | None:
        """`normalize_score` over an array (the same float64 operations)."""
        s = state.read(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return None
        if not s.keys or not len(scores):
            return scores
        lo = int(scores.min())
        diff = int(scores.max()) - lo
        if diff <= 0:
            return np.zeros(len(scores), dtype=np.int64)
        f = float(MAX_NODE_SCORE) * ((scores - lo).astype(np.float64) / float(diff))
        return f.astype(np.int64)

    def score_extensions(self) -> ScoreExtensions | None:
        return self

    def normalize_score(
        self, state: CycleState, pod: types_pb2.Pod, scores: list[NodeScore]
    ) -> tuple[list[NodeScore], Status]:
        s = state.read(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return scores, st.as_error(
                f"reading {PRE_SCORE_STATE_KEY!r} from cycleState: not found"
            )
        if not s.keys or not scores:
            return scores, st.SUCCESS
        lo = min(ns.score for ns in scores)
        hi = max(ns.score for ns in scores)
        diff = hi - lo
        out = []
        for ns in scores:
            f = float(MAX_NODE_SCORE) * (float(ns.score - lo) / float(diff)) if diff > 0 else 0.0
            out.append(NodeScore(ns.name, int(f)))
        return out, st.SUCCESS

    # ------------------------------------------------------------ queueing hints

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Add: a pod matching the affinity may appear; label update: a pod may start or
            # stop matching; delete: an anti-affinity match may go away.
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.POD,
                    ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE,
                ),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_pod_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        old_pod = old if isinstance(old, types_pb2.Pod) else None
        new_pod = new if isinstance(new, types_pb2.Pod) else None
        if old_pod is None and new_pod is None:
            return QueueingHint.QUEUE
        if (new_pod is not None and not new_pod.spec.node_name) or (
            old_pod is not None and not old_pod.spec.node_name
        ):
            # Unassigned pods take no part in (anti-)affinity.
            return QueueingHint.SKIP
        pi = PodInfo(pod)
        terms = pi.required_affinity_terms
        anti_terms = pi.required_anti_affinity_terms
        if old_pod is not None and new_pod is not None:
            if not pod_matches_all_affinity_terms(
                terms, old_pod
            ) and pod_matches_all_affinity_terms(terms, new_pod):
                return QueueingHint.QUEUE
            if pod_matches_all_affinity_terms(
                anti_terms, old_pod
            ) and not pod_matches_all_affinity_terms(anti_terms, new_pod):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if new_pod is not None:
            if pod_matches_all_affinity_terms(terms, new_pod):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        assert old_pod is not None
        if pod_matches_all_affinity_terms(anti_terms, old_pod):
            return QueueingHint.QUEUE
        # The deleted pod's own anti-affinity may have been what repelled the pod (upstream
        # kubernetes#135325, 1.36): any one of its terms is enough to repel.
        if any(t.matches(pod) for t in PodInfo(old_pod).required_anti_affinity_terms):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_node_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        if not isinstance(new, types_pb2.Node):
            return QueueingHint.QUEUE
        pi = PodInfo(pod)
        labels = new.metadata.labels
        for t in pi.required_affinity_terms:
            if t.topology_key in labels:
                return QueueingHint.QUEUE
        for t in pi.required_anti_affinity_terms:
            if t.topology_key in labels:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP


class _TopologyScorer:
    """Accumulates, per topology pair, the weights existing pods contribute for one pod."""

    def __init__(
        self,
        incoming: PodInfo,
        hard_pod_affinity_weight: int,
        *,
        preferred: list[tuple[str, int, AffinityTerm]],
        ns_labels: Mapping[str, str],
    ) -> None:
        """`preferred`: the incoming pod's preferred terms, namespaces unrolled, as (topology
        key, signed weight, term); `ns_labels`: the labels of its namespace."""
        meta = incoming.pod.metadata
        self.namespace = meta.namespace
        self.ns_labels = ns_labels
        self.labels = dict(meta.labels)
        self.hard_weight = hard_pod_affinity_weight
        self.preferred_terms = preferred
        self.preferred = [(key, weight, compile_term(t)) for key, weight, t in preferred]
        self.scores = PairCounts(None)
        self.keys: set[str] = set()
        self.touched = False

    def _add(self, key: str, weight: int, labels: Mapping[str, str]) -> None:
        value = labels.get(key)
        if value is None:
            return
        self.scores.update(labels, key, weight)
        self.keys.add(key)
        self.touched = True

    def score_from_index(self, index: AffinityIndex) -> None:
        """The scores from the snapshot's per-row counts: the incoming pod's preferred terms
        through the index's queries, each distinct term of the existing pods matched once."""
        per_key: dict[str, IntArray] = {}

        def add(key: str, weight: int, per_row: IntArray) -> None:
            d = index.domains(key)
            if not ((per_row > 0) & (d.row_ids >= 0)).any():
                return  # no matched pod on a node with the key: upstream adds nothing
            self.touched = True
            prev = per_key.get(key)
            per_key[key] = weight * per_row if prev is None else prev + weight * per_row

        for (key, weight, term), (_, _, match) in zip(
            self.preferred_terms, self.preferred, strict=True
        ):
            add(key, weight, index.query((query_term(term),), [match]))
        ns, ns_labels, incoming_labels = self.namespace, self.ns_labels, self.labels
        for (kind, term, w), per_row in index.groups().items():
            if kind == REQUIRED_AFFINITY:
                if self.hard_weight <= 0:
                    continue
                weight = self.hard_weight
            elif kind == PREFERRED_AFFINITY:
                weight = w
            elif kind == PREFERRED_ANTI:
                weight = -w
            else:
                continue
            if _selects(term, ns, ns_labels, incoming_labels):
                add(term.topology_key, weight, per_row)
        self.scores = PairCounts(index.domains)
        for key, per_row in per_key.items():
            self.scores.add_per_row(key, per_row)
            self.keys.add(key)

    def process_existing_pod(self, existing: PodInfo, labels: Mapping[str, str]) -> None:
        """Adds what `existing`, on a node with `labels`, contributes."""
        if self.preferred:
            meta = existing.pod.metadata
            ns, pod_labels = meta.namespace, meta.labels
            # The incoming pod's preferred terms matched by the existing pod.
            for key, weight, match in self.preferred:
                if match(ns, pod_labels):
                    self._add(key, weight, labels)
        # The existing pod's terms matched by the incoming pod.
        ns, ns_labels, incoming_labels = self.namespace, self.ns_labels, self.labels
        if self.hard_weight > 0:
            for t in existing.required_affinity_terms:
                if _selects(t, ns, ns_labels, incoming_labels):
                    self._add(t.topology_key, self.hard_weight, labels)
        for w in existing.preferred_affinity_terms:
            if _selects(w.term, ns, ns_labels, incoming_labels):
                self._add(w.term.topology_key, w.weight, labels)
        for w in existing.preferred_anti_affinity_terms:
            if _selects(w.term, ns, ns_labels, incoming_labels):
                self._add(w.term.topology_key, -w.weight, labels)


# ---------------------------------------------------------------- args and factory


def new(args: PluginArgs, handle: Handle) -> InterPodAffinity:
    unknown = set(args) - {"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"}
    if unknown:
        raise ValueError(f"unknown InterPodAffinity arg(s) {sorted(unknown)}")
    weight = args.get("hardPodAffinityWeight", DEFAULT_HARD_POD_AFFINITY_WEIGHT)
    if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= 100:
        raise ValueError("hardPodAffinityWeight: not in valid range [0, 100]")
    ignore = args.get("ignorePreferredTermsOfExistingPods", False)
    if not isinstance(ignore, bool):
        raise ValueError("ignorePreferredTermsOfExistingPods: must be a boolean")
    return InterPodAffinity(
        handle,
        hard_pod_affinity_weight=weight,
        ignore_preferred_terms_of_existing_pods=ignore,
        skip_deferred=resize_preemption_enabled(handle.gates),
    )
