"""PodTopologySpread: spreads matching pods evenly over topology domains (upstream
podtopologyspread/{plugin,common,filtering,scoring}.go, master of the 1.37 cycle).

A constraint counts, per value of its `topologyKey` on the eligible nodes (a domain), the pods
of the incoming pod's namespace that its selector matches (terminating pods are not counted).
The skew of placing the pod in a domain is `matching pods there + 1 if the pod matches itself -
the global minimum over the eligible domains` (the minimum is 0 while fewer than `minDomains`
domains are eligible).

- PreFilter / Filter: the `DoNotSchedule` constraints. PreFilter counts every node's pods
  (Skip when the pod has none); Filter rejects a node without one of the topology keys
  (UnschedulableAndUnresolvable "... (missing required label)") or where the skew would exceed
  `maxSkew` (Unschedulable: preemption may remove matching pods). add_pod/remove_pod keep the
  counts and the exact minimum right for the nominated pods and preemption's victims (upstream's
  DomainsAtCount: how many domains hold k pods, so a ±1 update moves the minimum in O(1)).
- PreScore / Score / NormalizeScore: the `ScheduleAnyway` constraints. A node scores the sum
  over constraints of `count of its domain * log(domains + 2) + maxSkew - 1` (the hostname
  constraint counts the node's own pods at Score); fewer pods is better, so NormalizeScore maps
  `s` to `100 * (max + min - s) / max`; nodes missing a topology key score 0.
- A pod without constraints of its own gets the plugin's default constraints (args
  `defaultConstraints` with `defaultingType: List`, or upstream's system defaults with `System`,
  the default: hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway), whose selector is
  the pod's default selector (`spread.default_selector`: its Services and its ReplicaSet); none
  when that selector is empty. With the system defaults, nodes without a zone label still take
  part in hostname spreading.
- Which nodes are eligible (NodeInclusionPolicyInPodTopologySpread, GA in 1.33): each
  constraint's `nodeAffinityPolicy` (default Honor: only nodes matching the pod's nodeSelector
  and required node affinity) and `nodeTaintsPolicy` (default Ignore; Honor: only nodes whose
  NoSchedule/NoExecute taints the pod tolerates). Gate off: only nodes matching the pod's node
  affinity, for every constraint.
- `matchLabelKeys` (MatchLabelKeysInPodTopologySpread, beta and on from 1.27): the pod's values
  of those keys are ANDed into the selector. From 1.34 upstream's apiserver also merges them
  into `labelSelector` when the pod is created (MatchLabelKeysInPodTopologySpreadSelectorMerge);
  merging again here is idempotent, and upstream's scheduler does it at every version.
- `minDomains` (MinDomainsInPodTopologySpread, GA in 1.30): honoured when the gate is on.
- KEP-5836: with InPlacePodVerticalScalingSchedulerPreemption a pod whose resize is Deferred
  skips the plugin at PreFilter (and Filter), as upstream.
- Queueing hints (upstream isSchedulableAfterPodChange / isSchedulableAfterNodeChange): an
  assigned pod of the same namespace added, deleted or relabelled so that it (un)matches a
  constraint; the pod's own new toleration when a constraint honours taints; a node added or
  deleted that has every topology key, or updated so that it gains or loses one, changes a
  key's value, or (having them all) its taints.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import (
    MATCH_LABEL_KEYS_IN_POD_TOPOLOGY_SPREAD,
    MIN_DOMAINS_IN_POD_TOPOLOGY_SPREAD,
    NODE_INCLUSION_POLICY_IN_POD_TOPOLOGY_SPREAD,
)
from kemu.machinery.errors import Cause, Invalid
from kemu.machinery.labels import Selector, selector_from_label_selector, selector_from_set
from kemu.machinery.resources import is_pod_resize_deferred
from kemu.machinery.validation.field import duplicate, forbidden, invalid, not_supported, required
from kemu.machinery.validation.meta import validate_label_name
from kemu.machinery.well_known_labels import LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE
from kemu.scheduling import status as st
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
)
from kemu.scheduling.plugins.helpers import (
    LabelMatcher,
    RequiredNodeAffinity,
    check_arg_keys,
    compile_selector,
    do_not_schedule_taint,
    find_matching_untolerated_taint,
    message_from_args,
    required_node_affinity,
)
from kemu.scheduling.plugins.spread import default_selector
from kemu.scheduling.status import Status
from kemu.scheduling.types import MAX_NODE_SCORE, NodeInfo, NodeScore, PodInfo, PreFilterResult

NAME: Final = "PodTopologySpread"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME

ERR_REASON_CONSTRAINTS_NOT_MATCH: Final = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH: Final = (
    ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
)

DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SCHEDULE_ANYWAY: Final = "ScheduleAnyway"
HONOR: Final = "Honor"
IGNORE: Final = "Ignore"
SYSTEM_DEFAULTING: Final = "System"
LIST_DEFAULTING: Final = "List"

# Upstream's systemDefaultConstraints (read only).
SYSTEM_DEFAULT_CONSTRAINTS: Final[tuple[types_pb2.TopologySpreadConstraint, ...]] = (
    types_pb2.TopologySpreadConstraint(
        topology_key=LABEL_HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY, max_skew=3
    ),
    types_pb2.TopologySpreadConstraint(
        topology_key=LABEL_TOPOLOGY_ZONE, when_unsatisfiable=SCHEDULE_ANYWAY, max_skew=5
    ),
)

_MAX_INT32: Final = 2**31 - 1
_NODE_LABEL_NOT_MATCH: Final = st.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
_CONSTRAINTS_NOT_MATCH: Final = st.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)


# ---------------------------------------------------------------- constraints (common.go)


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """A TopologySpreadConstraint with its selector parsed (upstream topologySpreadConstraint)."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    @property
    def matches(self) -> LabelMatcher:
        return compile_selector(self.selector)


class _Eligibility:
    """Which nodes a pod's constraints count (node inclusion policies), with the pod's required
    node affinity and its taint check evaluated at most once per node."""

    __slots__ = ("_affinity", "_inclusion", "_pod")

    def __init__(self, pod: types_pb2.Pod, inclusion_policies: bool) -> None:
        self._pod = pod
        self._inclusion = inclusion_policies
        affinity = required_node_affinity(pod)
        self._affinity: RequiredNodeAffinity | None = (
            affinity
            if affinity.label_selector is not None or affinity.node_selector is not None
            else None
        )

    def trivial(self, constraints: Iterable[SpreadConstraint]) -> bool:
        """Every node counts for every constraint: nothing to check per node."""
        if self._affinity is not None:
            return False
        return not (self._inclusion and any(c.node_taints_policy == HONOR for c in constraints))

    def node_passes_affinity(self, ni: NodeInfo) -> bool:
        return self._affinity is None or (ni.node is not None and self._affinity.matches(ni.node))

    def node_counts(self, ni: NodeInfo) -> bool:
        """Gate off: only nodes matching the pod's node affinity count, for every constraint."""
        return self._inclusion or self.node_passes_affinity(ni)

    def constraint_counts(self, c: SpreadConstraint, ni: NodeInfo) -> bool:
        """Gate on: the constraint's own policies (matchNodeInclusionPolicies)."""
        if not self._inclusion:
            return True
        if c.node_affinity_policy == HONOR and not self.node_passes_affinity(ni):
            return False
        if c.node_taints_policy == HONOR:
            untolerated = find_matching_untolerated_taint(
                ni.taints, self._pod.spec.tolerations, do_not_schedule_taint
            )
            if untolerated is not None:
                return False
        return True


def node_labels_match_spread_constraints(
    labels: Mapping[str, str], constraints: Iterable[SpreadConstraint]
) -> bool:
    """Whether the node has every constraint's topology key."""
    return all(c.topology_key in labels for c in constraints)


def merge_label_set_with_selector(match_labels: Mapping[str, str], sel: Selector) -> Selector:
    """upstream mergeLabelSetWithSelector: the labels ANDed with the selector's requirements
    (a selector that selects nothing stays so)."""
    if sel.nothing:
        return sel
    reqs = (*selector_from_set(match_labels).requirements, *sel.requirements)
    return Selector(tuple(sorted(reqs, key=lambda r: r.key)))


def count_pods_match_selector(
    pods: Iterable[PodInfo], matches: LabelMatcher, selector: Selector, namespace: str
) -> int:
    """The pods of `namespace`, not terminating, that the selector matches (0 for an empty
    selector)."""
    if selector.empty:
        return 0
    n = 0
    for pi in pods:
        ns, labels, terminating = pi.meta_view()
        if ns == namespace and not terminating and matches(labels):
            n += 1
    return n


# ---------------------------------------------------------------- cycle state


class PreFilterState:
    """The DoNotSchedule constraints' counts: per constraint, matching pods per domain, the
    global minimum and how many domains hold each count (upstream preFilterState)."""

    __slots__ = (
        "constraints",
        "domains_at_count",
        "matchers",
        "min_match_num",
        "self_match",
        "tp_value_counts",
    )

    def __init__(self, constraints: list[SpreadConstraint]) -> None:
        self.constraints = constraints
        self.matchers = [c.matches for c in constraints]
        # 1 where the incoming pod matches the constraint's selector itself.
        self.self_match: list[int] = [0] * len(constraints)
        self.tp_value_counts: list[dict[str, int]] = [{} for _ in constraints]
        self.min_match_num: list[int] = [_MAX_INT32] * len(constraints)
        self.domains_at_count: list[dict[int, int]] = [{} for _ in constraints]

    def finish(self) -> None:
        """Computes the minima and histograms once the counts are complete."""
        for i, counts in enumerate(self.tp_value_counts):
            hist: dict[int, int] = {}
            lowest = _MAX_INT32
            for num in counts.values():
                hist[num] = hist.get(num, 0) + 1
                lowest = min(lowest, num)
            self.domains_at_count[i] = hist
            self.min_match_num[i] = lowest

    def clone(self) -> PreFilterState:
        c = PreFilterState.__new__(PreFilterState)
        c.constraints = self.constraints
        c.matchers = self.matchers
        c.self_match = self.self_match
        c.tp_value_counts = [dict(m) for m in self.tp_value_counts]
        c.min_match_num = list(self.min_match_num)
        c.domains_at_count = [dict(h) for h in self.domains_at_count]
        return c

    def min_match(self, i: int, min_domains: int) -> int:
        """The global minimum of constraint i, 0 while fewer than minDomains domains exist."""
        if len(self.tp_value_counts[i]) < min_domains:
            return 0
        return self.min_match_num[i]

    def update(self, i: int, value: str, delta: int) -> None:
        """One pod more (+1) or fewer (-1) in domain `value` of constraint i."""
        counts = self.tp_value_counts[i]
        old = counts.get(value, 0)
        cur = old + delta
        counts[value] = cur
        hist = self.domains_at_count[i]
        left = hist.get(old, 0) - 1
        if left <= 0:
            hist.pop(old, None)
        else:
            hist[old] = left
        hist[cur] = hist.get(cur, 0) + 1
        if cur < self.min_match_num[i]:
            self.min_match_num[i] = cur
        elif old == self.min_match_num[i] and old not in hist:
            # The last domain at the minimum moved up by one: the others are all >= old + 1.
            self.min_match_num[i] = cur


class PreScoreState:
    """The ScheduleAnyway constraints' counts for Score (upstream preScoreState)."""

    __slots__ = ("constraints", "ignored_nodes", "matchers", "tp_value_counts", "weights")

    def __init__(
        self,
        constraints: list[SpreadConstraint],
        ignored_nodes: set[str],
        tp_value_counts: list[dict[str, int]],
        weights: list[float],
    ) -> None:
        self.constraints = constraints
        self.matchers = [c.matches for c in constraints]
        self.ignored_nodes = ignored_nodes
        self.tp_value_counts = tp_value_counts
        self.weights = weights

    def clone(self) -> PreScoreState:
        return self


def topology_normalizing_weight(size: int) -> float:
    """The weight of a topology with `size` domains: smaller topologies' counts are not watered
    down by bigger ones."""
    return math.log(size + 2)


def score_for_count(count: int, max_skew: int, weight: float) -> float:
    """maxSkew - 1 is added so that differences between domains are tolerated that much."""
    return count * weight + (max_skew - 1)


def _round(x: float) -> int:
    """Go's math.Round for the non-negative scores: halves away from zero."""
    return int(math.floor(x + 0.5))


# ---------------------------------------------------------------- the plugin


class PodTopologySpread(
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
        default_constraints: tuple[types_pb2.TopologySpreadConstraint, ...] = (),
        system_defaulted: bool = False,
    ) -> None:
        self.handle = handle
        self.default_constraints = default_constraints
        self.system_defaulted = system_defaulted
        gates = handle.gates
        self.inclusion_policies = gates.enabled(NODE_INCLUSION_POLICY_IN_POD_TOPOLOGY_SPREAD)
        self.match_label_keys = gates.enabled(MATCH_LABEL_KEYS_IN_POD_TOPOLOGY_SPREAD)
        self.min_domains = gates.enabled(MIN_DOMAINS_IN_POD_TOPOLOGY_SPREAD)
        # KEP-5836 (upstream, 1.37): a Deferred resize skips the plugin.
        self.skip_deferred = resize_preemption_enabled(gates)
        self._services: ObjectLister[types_pb2.Service] | None = None
        self._replica_sets: ObjectLister[types_pb2.ReplicaSet] | None = None
        # The default constraints parsed, per action, once: they depend on the pod only
        # through matchLabelKeys (then they are parsed per pod, as before).
        self._parsed_defaults: dict[str, list[SpreadConstraint]] = {}
        self._defaults_per_pod = any(c.match_label_keys for c in default_constraints)
        factory = handle.informer_factory()
        if default_constraints and factory is not None:
            # Without informers (a simulation) no pod has a default selector.
            self._services = factory.informer(types_pb2.Service).lister
            self._replica_sets = factory.informer(types_pb2.ReplicaSet).lister

    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ constraints

    def filter_constraints(
        self,
        constraints: Iterable[types_pb2.TopologySpreadConstraint],
        pod_labels: Mapping[str, str],
        action: str,
    ) -> list[SpreadConstraint]:
        """The constraints with `whenUnsatisfiable == action`, parsed; Invalid for a selector
        that does not parse (upstream filterTopologySpreadConstraints)."""
        out: list[SpreadConstraint] = []
        for c in constraints:
            if c.when_unsatisfiable != action:
                continue
            selector = selector_from_label_selector(
                c.label_selector if c.HasField("label_selector") else None,
                path="labelSelector",
            )
            if self.match_label_keys and c.match_label_keys:
                match_labels = {k: pod_labels[k] for k in c.match_label_keys if k in pod_labels}
                if match_labels:
                    selector = merge_label_set_with_selector(match_labels, selector)
            affinity_policy, taints_policy = HONOR, IGNORE
            if self.inclusion_policies:
                if c.HasField("node_affinity_policy"):
                    affinity_policy = c.node_affinity_policy
                if c.HasField("node_taints_policy"):
                    taints_policy = c.node_taints_policy
            out.append(
                SpreadConstraint(
                    max_skew=c.max_skew,
                    topology_key=c.topology_key,
                    selector=selector,
                    min_domains=(
                        c.min_domains if self.min_domains and c.HasField("min_domains") else 1
                    ),
                    node_affinity_policy=affinity_policy,
                    node_taints_policy=taints_policy,
                )
            )
        return out

    def build_default_constraints(self, pod: types_pb2.Pod, action: str) -> list[SpreadConstraint]:
        """The default constraints for `action` with the pod's default selector; none when that
        selector is empty (upstream buildDefaultConstraints)."""
        constraints = self._parsed_defaults.get(action)
        if constraints is None:
            constraints = self.filter_constraints(
                self.default_constraints, pod.metadata.labels, action
            )
            if not self._defaults_per_pod:
                self._parsed_defaults[action] = constraints
        if not constraints:
            return []
        selector = default_selector(pod, self._services, self._replica_sets)
        if selector.empty:
            return []
        return [
            SpreadConstraint(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=selector,
                min_domains=c.min_domains,
                node_affinity_policy=c.node_affinity_policy,
                node_taints_policy=c.node_taints_policy,
            )
            for c in constraints
        ]

    def constraints_for(self, pod: types_pb2.Pod, action: str) -> list[SpreadConstraint]:
        """The pod's own constraints for `action`, or else the default ones. Invalid."""
        if pod.spec.topology_spread_constraints:
            return self.filter_constraints(
                pod.spec.topology_spread_constraints, pod.metadata.labels, action
            )
        return self.build_default_constraints(pod, action)

    # ------------------------------------------------------------ PreFilter / Filter

    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if self.skip_deferred and is_pod_resize_deferred(pod):
            return None, st.SKIP
        try:
            constraints = self.constraints_for(pod, DO_NOT_SCHEDULE)
        except Invalid as e:
            return None, st.as_error(f"obtaining pod's hard topology spread constraints: {e}")
        if not constraints:
            return None, st.SKIP
        s = PreFilterState(constraints)
        pod_labels = pod.metadata.labels
        s.self_match = [1 if m(pod_labels) else 0 for m in s.matchers]
        eligibility = _Eligibility(pod, self.inclusion_policies)
        check_nodes = not eligibility.trivial(constraints)
        namespace = pod.metadata.namespace
        # (index, topology key, matcher, counts by value) of the constraints whose selector
        # can match; an empty selector counts no pod, but its domains still exist.
        plan = [
            (i, c, c.topology_key, s.matchers[i], s.tp_value_counts[i], not c.selector.empty)
            for i, c in enumerate(constraints)
        ]
        keys = [c.topology_key for c in constraints]
        for ni in nodes:
            if ni.node is None or (check_nodes and not eligibility.node_counts(ni)):
                continue
            labels = ni.labels
            missing = False
            for k in keys:
                if k not in labels:
                    missing = True
                    break
            if missing:
                continue
            pods = ni.pods
            for _, c, key, matches, counts, counting in plan:
                if check_nodes and not eligibility.constraint_counts(c, ni):
                    continue
                n = 0
                if counting:
                    for pi in pods:
                        ns, pod_labels_, terminating = pi.meta_view()
                        if ns == namespace and not terminating and matches(pod_labels_):
                            n += 1
                value = labels[key]
                counts[value] = counts.get(value, 0) + n
        s.finish()
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
        self._update_with_pod(s, pod_to_add, pod, node, 1)
        return st.SUCCESS

    def remove_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status:
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return st.as_error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        self._update_with_pod(s, pod_to_remove, pod, node, -1)
        return st.SUCCESS

    def _update_with_pod(
        self,
        s: PreFilterState,
        updated: PodInfo,
        preemptor: types_pb2.Pod,
        node: NodeInfo,
        delta: int,
    ) -> None:
        ns, pod_labels, _ = updated.meta_view()
        if ns != preemptor.metadata.namespace or node.node is None:
            return
        labels = node.labels
        if not node_labels_match_spread_constraints(labels, s.constraints):
            return
        eligibility = _Eligibility(preemptor, self.inclusion_policies)
        if not eligibility.node_counts(node):
            return
        for i, c in enumerate(s.constraints):
            if not s.matchers[i](pod_labels):
                continue
            if not eligibility.constraint_counts(c, node):
                continue
            s.update(i, labels[c.topology_key], delta)

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        if self.skip_deferred and is_pod_resize_deferred(pod):
            return st.SUCCESS
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return st.as_error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        if node.node is None:
            return st.as_error("node not found")
        labels = node.labels
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                return _NODE_LABEL_NOT_MATCH
            if self.min_domains:
                min_match = s.min_match(i, c.min_domains)
            else:
                min_match = s.min_match_num[i]
            skew = s.tp_value_counts[i].get(value, 0) + s.self_match[i] - min_match
            if skew > c.max_skew:
                return _CONSTRAINTS_NOT_MATCH
        return st.SUCCESS

    # ------------------------------------------------------------ PreScore / Score

    def pre_score(
        self, state: CycleState, pod: types_pb2.Pod, filtered_nodes: list[NodeInfo]
    ) -> Status:
        all_nodes = self.handle.snapshot_shared_lister().node_infos().list()
        if not all_nodes:
            return st.SKIP
        try:
            constraints = self.constraints_for(pod, SCHEDULE_ANYWAY)
        except Invalid as e:
            return st.as_error(f"obtaining pod's soft topology spread constraints: {e}")
        if not constraints:
            return st.SKIP
        # Only the pod's own or configured constraints need every topology key on a node: with
        # the system defaults, nodes without a zone label still take part in hostname spreading.
        require_all = bool(pod.spec.topology_spread_constraints) or not self.system_defaulted
        ignored: set[str] = set()
        counts: list[dict[str, int]] = [{} for _ in constraints]
        sizes = [0] * len(constraints)
        for ni in filtered_nodes:
            labels = ni.labels
            if require_all and not node_labels_match_spread_constraints(labels, constraints):
                ignored.add(ni.name)
                continue
            for i, c in enumerate(constraints):
                if c.topology_key == LABEL_HOSTNAME:
                    continue  # a node's own pods are counted at Score
                value = labels.get(c.topology_key, "")
                if value not in counts[i]:
                    counts[i][value] = 0
                    sizes[i] += 1
        weights = [
            topology_normalizing_weight(
                len(filtered_nodes) - len(ignored) if c.topology_key == LABEL_HOSTNAME else size
            )
            for c, size in zip(constraints, sizes, strict=True)
        ]
        s = PreScoreState(constraints, ignored, counts, weights)
        eligibility = _Eligibility(pod, self.inclusion_policies)
        check_nodes = not eligibility.trivial(constraints)
        namespace = pod.metadata.namespace
        for ni in all_nodes:
            if ni.node is None or (check_nodes and not eligibility.node_counts(ni)):
                continue
            labels = ni.labels
            if require_all and not node_labels_match_spread_constraints(labels, constraints):
                continue
            for i, c in enumerate(constraints):
                if check_nodes and not eligibility.constraint_counts(c, ni):
                    continue
                value = labels.get(c.topology_key, "")
                domain_counts = counts[i]
                if value not in domain_counts:
                    continue  # no candidate node in this domain (or a hostname constraint)
                domain_counts[value] += count_pods_match_selector(
                    ni.pods, s.matchers[i], c.selector, namespace
                )
        state.write(PRE_SCORE_STATE_KEY, s)
        return st.SUCCESS

    def score(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> tuple[int, Status]:
        s = state.read(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return 0, st.as_error(f"reading {PRE_SCORE_STATE_KEY!r} from cycleState: not found")
        if node.name in s.ignored_nodes:
            return 0, st.SUCCESS
        labels = node.labels
        namespace = pod.metadata.namespace
        total = 0.0
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                count = count_pods_match_selector(node.pods, s.matchers[i], c.selector, namespace)
            else:
                count = s.tp_value_counts[i].get(value, 0)
            total += score_for_count(count, c.max_skew, s.weights[i])
        return _round(total), st.SUCCESS

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
        ignored = s.ignored_nodes
        valid = [ns.score for ns in scores if ns.name not in ignored]
        lo = min(valid, default=0)
        hi = max(valid, default=0)
        out: list[NodeScore] = []
        for ns in scores:
            if ns.name in ignored:
                out.append(NodeScore(ns.name, 0))
            elif hi == 0:
                out.append(NodeScore(ns.name, MAX_NODE_SCORE))
            else:
                out.append(NodeScore(ns.name, MAX_NODE_SCORE * (hi + lo - ns.score) // hi))
        return out, st.SUCCESS

    # ------------------------------------------------------------ queueing hints

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # An assigned pod added, relabelled or deleted may change a domain's count; the
            # pod itself may get a toleration a taint-honouring constraint needed.
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.POD,
                    ActionType.ADD
                    | ActionType.UPDATE_POD_LABEL
                    | ActionType.UPDATE_POD_TOLERATION
                    | ActionType.DELETE,
                ),
                self.is_schedulable_after_pod_change,
            ),
            # A node added, deleted or updated may add, remove or move a domain.
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE,
                    ActionType.ADD
                    | ActionType.DELETE
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_TAINT,
                ),
                self.is_schedulable_after_node_change,
            ),
        ]

    def _hint_constraints(self, pod: types_pb2.Pod) -> list[SpreadConstraint] | None:
        """The pod's DoNotSchedule constraints (what can have rejected it), None when they do
        not parse (then every event queues it, as upstream's error does)."""
        try:
            return self.constraints_for(pod, DO_NOT_SCHEDULE)
        except Invalid:
            return None

    def is_schedulable_after_pod_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        old_pod = old if isinstance(old, types_pb2.Pod) else None
        new_pod = new if isinstance(new, types_pb2.Pod) else None
        if old_pod is None and new_pod is None:
            return QueueingHint.QUEUE
        if (new_pod is not None and not _involved_in_spreading(new_pod, pod)) or (
            old_pod is not None and not _involved_in_spreading(old_pod, pod)
        ):
            return QueueingHint.SKIP
        constraints = self._hint_constraints(pod)
        if constraints is None:
            return QueueingHint.QUEUE
        if old_pod is not None and new_pod is not None:
            if (
                new_pod.metadata.uid == pod.metadata.uid
                and list(new_pod.spec.tolerations) != list(old_pod.spec.tolerations)
                and any(c.node_taints_policy == HONOR for c in constraints)
            ):
                return QueueingHint.QUEUE
            old_labels, new_labels = old_pod.metadata.labels, new_pod.metadata.labels
            if dict(old_labels) == dict(new_labels):
                return QueueingHint.SKIP
            for c in constraints:
                if c.selector.matches(old_labels) != c.selector.matches(new_labels):
                    return QueueingHint.QUEUE
            return QueueingHint.SKIP
        changed = new_pod if new_pod is not None else old_pod
        assert changed is not None
        labels = changed.metadata.labels
        if any(c.selector.matches(labels) for c in constraints):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_node_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        old_node = old if isinstance(old, types_pb2.Node) else None
        new_node = new if isinstance(new, types_pb2.Node) else None
        constraints = self._hint_constraints(pod)
        if constraints is None:
            return QueueingHint.QUEUE
        old_match = old_node is not None and node_labels_match_spread_constraints(
            old_node.metadata.labels, constraints
        )
        new_match = new_node is not None and node_labels_match_spread_constraints(
            new_node.metadata.labels, constraints
        )
        if old_node is not None and new_node is not None:
            if old_match != new_match:
                return QueueingHint.QUEUE
            if new_match and (
                any(
                    old_node.metadata.labels.get(c.topology_key)
                    != new_node.metadata.labels.get(c.topology_key)
                    for c in constraints
                )
                or list(old_node.spec.taints) != list(new_node.spec.taints)
            ):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if new_node is not None:
            return QueueingHint.QUEUE if new_match else QueueingHint.SKIP
        return QueueingHint.QUEUE if old_match else QueueingHint.SKIP


def _involved_in_spreading(changed: types_pb2.Pod, pod: types_pb2.Pod) -> bool:
    """The changed pod is the pod itself, or an assigned pod of its namespace."""
    return changed.metadata.uid == pod.metadata.uid or (
        bool(changed.spec.node_name) and changed.metadata.namespace == pod.metadata.namespace
    )


# ---------------------------------------------------------------- args and factory


def validate_args(
    default_constraints: list[types_pb2.TopologySpreadConstraint],
    has_selector: list[bool],
    defaulting_type: str,
) -> list[Cause]:
    """upstream ValidatePodTopologySpreadArgs."""
    causes: list[Cause] = []
    if defaulting_type not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        causes.append(
            not_supported("defaultingType", defaulting_type, (LIST_DEFAULTING, SYSTEM_DEFAULTING))
        )
    elif defaulting_type == SYSTEM_DEFAULTING and default_constraints:
        causes.append(
            invalid("defaultingType", defaulting_type, "when .defaultConstraints are not empty")
        )
    for i, c in enumerate(default_constraints):
        p = f"defaultConstraints[{i}]"
        if c.max_skew <= 0:
            causes.append(invalid(f"{p}.maxSkew", c.max_skew, "not in valid range"))
        if not c.topology_key:
            causes.append(required(f"{p}.topologyKey", "can not be empty"))
        else:
            causes.extend(validate_label_name(c.topology_key, f"{p}.topologyKey"))
        if c.when_unsatisfiable not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            causes.append(
                not_supported(
                    f"{p}.whenUnsatisfiable",
                    c.when_unsatisfiable,
                    (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY),
                )
            )
        if has_selector[i]:
            causes.append(
                forbidden(
                    f"{p}.labelSelector",
                    "constraint must not define a selector, as they deduced for each pod",
                )
            )
        for prev in default_constraints[:i]:
            if (prev.topology_key, prev.when_unsatisfiable) == (
                c.topology_key,
                c.when_unsatisfiable,
            ):
                causes.append(
                    duplicate("defaultConstraints", f"{{{c.topology_key}, {c.when_unsatisfiable}}}")
                )
                break
    return causes


def new(args: PluginArgs, handle: Handle) -> PodTopologySpread:
    """Args (PodTopologySpreadArgs): `defaultConstraints` (TopologySpreadConstraints without
    selectors) and `defaultingType` (System, the default, or List). ValueError naming the
    field when they are not valid."""
    check_arg_keys(args, ("defaultConstraints", "defaultingType"), NAME)
    defaulting_type = args.get("defaultingType") or SYSTEM_DEFAULTING
    if not isinstance(defaulting_type, str):
        raise ValueError(f"{NAME} args: defaultingType: must be a string")
    raw = args.get("defaultConstraints") or []
    if not isinstance(raw, list):
        raise ValueError(f"{NAME} args: defaultConstraints: must be a list")
    constraints: list[types_pb2.TopologySpreadConstraint] = []
    has_selector: list[bool] = []
    for i, item in enumerate(raw):
        msg = message_from_args(
            types_pb2.TopologySpreadConstraint, item, f"defaultConstraints[{i}]"
        )
        constraints.append(msg)
        has_selector.append(msg.HasField("label_selector"))
    causes = validate_args(constraints, has_selector, defaulting_type)
    if causes:
        raise ValueError(f"{NAME} args: " + "; ".join(f"{c.field}: {c.message}" for c in causes))
    if defaulting_type == SYSTEM_DEFAULTING:
        return PodTopologySpread(
            handle, default_constraints=SYSTEM_DEFAULT_CONSTRAINTS, system_defaulted=True
        )
    return PodTopologySpread(handle, default_constraints=tuple(constraints))
