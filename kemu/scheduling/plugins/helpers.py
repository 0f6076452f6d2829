"""Helpers shared by the in-tree plugins.

- Toleration matching, as component-helpers/scheduling/corev1 (ToleratesTaint,
  FindMatchingUntoleratedTaint).
- Node selectors and node affinity, as component-helpers/scheduling/corev1/nodeaffinity: terms
  are ORed, the requirements of a term ANDed; matchExpressions work on node labels (In, NotIn,
  Exists, DoesNotExist, Gt, Lt), matchFields on `metadata.name` (In and NotIn with one value).
  A term with neither expressions nor fields matches nothing; a term that does not parse
  matches nothing either (upstream's "lazy error" selector, kept for backwards compatibility),
  while plugin args are parsed strictly (ValueError naming the field).
- DefaultNormalizeScore (plugins/helper/normalize_score.go).
- Go-style durations ("500ms", "2s", "1m30s") for the emulation plugins' annotations and args.

Everything here is pure and cheap; per-node matching works on the informer's objects without
copying them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kemu.api.v1 import types_pb2
from kemu.machinery import convert
from kemu.machinery.errors import Invalid
from kemu.machinery.labels import (
    Operator,
    Requirement,
    Selector,
    SelectorError,
    requirement,
    selector_from_label_selector,
    selector_from_set,
)
from kemu.machinery.taints import TAINT_NODE_UNSCHEDULABLE
from kemu.scheduling.types import NodeScore

# ---------------------------------------------------------------- taints and tolerations

TAINT_NO_SCHEDULE: Final = "NoSchedule"
TAINT_PREFER_NO_SCHEDULE: Final = "PreferNoSchedule"
TAINT_NO_EXECUTE: Final = "NoExecute"

TOLERATION_OP_EXISTS: Final = "Exists"
TOLERATION_OP_EQUAL: Final = "Equal"

# The taint a cordoned node (spec.unschedulable) stands for.
UNSCHEDULABLE_TAINT: Final = types_pb2.Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=TAINT_NO_SCHEDULE)


def tolerates_taint(toleration: types_pb2.Toleration, taint: types_pb2.Taint) -> bool:
    """Whether one toleration tolerates a taint (upstream Toleration.ToleratesTaint).

    An empty effect matches every effect; an empty key (only valid with Exists) matches every
    key; Exists ignores the value, Equal (or no operator) compares it. Any other operator
    (Gt/Lt of KEP-5471, not emulated) tolerates nothing.
    """
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    op = toleration.operator
    if op == TOLERATION_OP_EXISTS:
        return True
    if op in ("", TOLERATION_OP_EQUAL):
        return toleration.value == taint.value
    return False


def tolerations_tolerate_taint(
    tolerations: Iterable[types_pb2.Toleration], taint: types_pb2.Taint
) -> bool:
    return any(tolerates_taint(t, taint) for t in tolerations)


def do_not_schedule_taint(taint: types_pb2.Taint) -> bool:
    """The taints Filter cares about: NoSchedule and NoExecute (DoNotScheduleTaintsFilterFunc)."""
    return taint.effect in (TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE)


def find_matching_untolerated_taint(
    taints: Iterable[types_pb2.Taint],
    tolerations: Iterable[types_pb2.Toleration],
    include: Callable[[types_pb2.Taint], bool] | None = None,
) -> types_pb2.Taint | None:
    """The first taint (passing `include`) that no toleration tolerates, or None."""
    tols = list(tolerations)
    for taint in taints:
        if include is not None and not include(taint):
            continue
        if not tolerations_tolerate_taint(tols, taint):
            return taint
    return None


# ---------------------------------------------------------------- node selectors

OBJECT_NAME_FIELD: Final = "metadata.name"

_NODE_SELECTOR_OPERATORS: Final[dict[str, Operator]] = {
    "In": "in",
    "NotIn": "notin",
    "Exists": "exists",
    "DoesNotExist": "!",
    "Gt": "gt",
    "Lt": "lt",
}


class NodeSelectorParseError(ValueError):
    """A node selector term that cannot be parsed; the message names the field."""


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """`key == value` (In) or `key != value` (NotIn) on a node field."""

    key: str
    value: str
    equal: bool

    def matches(self, fields: Mapping[str, str]) -> bool:
        have = fields.get(self.key, "")
        return (have == self.value) if self.equal else (have != self.value)


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """A parsed NodeSelectorTerm: its requirements are ANDed. `error` marks a term that did not
    parse: it matches nothing."""

    labels: tuple[Requirement, ...] = ()
    fields: tuple[FieldRequirement, ...] = ()
    error: str = ""

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        if self.error:
            return False
        for r in self.labels:
            if not r.matches(labels):
                return False
        if self.fields and name:
            # Upstream only checks fields when the node has any (a nameless node has none).
            fields = {OBJECT_NAME_FIELD: name}
            return all(f.matches(fields) for f in self.fields)
        return True


def _is_empty_term(term: types_pb2.NodeSelectorTerm) -> bool:
    return not term.match_expressions and not term.match_fields


def parse_node_selector_term(term: types_pb2.NodeSelectorTerm, path: str) -> NodeSelectorTerm:
    """Parses one term; NodeSelectorParseError (naming the field under `path`) when invalid."""
    labels: list[Requirement] = []
    for i, expr in enumerate(term.match_expressions):
        at = f"{path}.matchExpressions[{i}]"
        op = _NODE_SELECTOR_OPERATORS.get(expr.operator)
        if op is None:
            raise NodeSelectorParseError(
                f'{at}.operator: Unsupported value: "{expr.operator}": supported values: '
                '"DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"'
            )
        try:
            labels.append(requirement(expr.key, op, expr.values))
        except SelectorError as e:
            raise NodeSelectorParseError(f"{at}: {e}") from None
    fields: list[FieldRequirement] = []
    for i, expr in enumerate(term.match_fields):
        at = f"{path}.matchFields[{i}]"
        if expr.operator not in ("In", "NotIn"):
            raise NodeSelectorParseError(
                f'{at}.operator: Unsupported value: "{expr.operator}": supported values: '
                '"In", "NotIn"'
            )
        if len(expr.values) != 1:
            raise NodeSelectorParseError(f"{at}.values: Invalid value: must have one element")
        fields.append(FieldRequirement(expr.key, expr.values[0], expr.operator == "In"))
    return NodeSelectorTerm(tuple(labels), tuple(fields))


def _lazy_term(term: types_pb2.NodeSelectorTerm, path: str) -> NodeSelectorTerm:
    try:
        return parse_node_selector_term(term, path)
    except NodeSelectorParseError as e:
        return NodeSelectorTerm(error=str(e))


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """ORed terms (empty terms dropped: they select nothing, so no terms matches no node)."""

    terms: tuple[NodeSelectorTerm, ...]

    def matches(self, node: types_pb2.Node) -> bool:
        labels, name = node.metadata.labels, node.metadata.name
        return any(t.matches(labels, name) for t in self.terms)


def node_selector(
    msg: types_pb2.NodeSelector, *, path: str = "nodeSelectorTerms", strict: bool = False
) -> NodeSelector:
    """A parsed NodeSelector. Lenient by default (a term that does not parse matches nothing,
    as for pods); `strict` raises NodeSelectorParseError instead (for plugin args)."""
    parse = parse_node_selector_term if strict else _lazy_term
    return NodeSelector(
        tuple(
            parse(t, f"{path}[{i}]")
            for i, t in enumerate(msg.node_selector_terms)
            if not _is_empty_term(t)
        )
    )


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """A pod's spec.nodeSelector and required node affinity, both of which must match
    (upstream nodeaffinity.RequiredNodeAffinity)."""

    label_selector: Selector | None
    node_selector: NodeSelector | None

    def matches(self, node: types_pb2.Node) -> bool:
        if self.label_selector is not None and not self.label_selector.matches(
            node.metadata.labels
        ):
            return False
        if self.node_selector is not None:
            return self.node_selector.matches(node)
        return True


def has_required_node_affinity(pod: types_pb2.Pod) -> bool:
    """Whether spec.affinity.nodeAffinity.requiredDuringScheduling... is set (even if empty)."""
    spec = pod.spec
    return (
        spec.HasField("affinity")
        and spec.affinity.HasField("node_affinity")
        and spec.affinity.node_affinity.HasField(
            "required_during_scheduling_ignored_during_execution"
        )
    )


def required_node_affinity(pod: types_pb2.Pod) -> RequiredNodeAffinity:
    """GetRequiredNodeAffinity: parses the pod's node selector and required node affinity."""
    label_selector = selector_from_set(pod.spec.node_selector) if pod.spec.node_selector else None
    ns = None
    if has_required_node_affinity(pod):
        required = (
            pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
        )
        ns = node_selector(
            required,
            path="spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            ".nodeSelectorTerms",
        )
    return RequiredNodeAffinity(label_selector, ns)


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerms:
    """Weighted preferred terms; `score(node)` sums the weights of those that match."""

    terms: tuple[tuple[int, NodeSelectorTerm], ...]

    def score(self, node: types_pb2.Node) -> int:
        labels, name = node.metadata.labels, node.metadata.name
        return sum(w for w, t in self.terms if t.matches(labels, name))


def preferred_scheduling_terms(
    terms: Iterable[types_pb2.PreferredSchedulingTerm], *, path: str
) -> PreferredSchedulingTerms:
    """Parses preferred terms strictly (NodeSelectorParseError); terms with weight 0 or an empty
    preference are dropped, as upstream NewPreferredSchedulingTerms does."""
    parsed: list[tuple[int, NodeSelectorTerm]] = []
    for i, term in enumerate(terms):
        if term.weight == 0 or _is_empty_term(term.preference):
            continue
        parsed.append(
            (term.weight, parse_node_selector_term(term.preference, f"{path}[{i}].preference"))
        )
    return PreferredSchedulingTerms(tuple(parsed))


# ---------------------------------------------------------------- scores


def default_normalize_score(
    max_priority: int, reverse: bool, scores: list[NodeScore]
) -> list[NodeScore]:
    """Scales scores to 0..max_priority by the highest one; `reverse` flips them (lower raw
    score is better). All zero: all 0, or all max_priority when reversed."""
    highest = max((s.score for s in scores), default=0)
    if highest == 0:
        if reverse:
            return [NodeScore(s.name, max_priority) for s in scores]
        return list(scores)
    out: list[NodeScore] = []
    for s in scores:
        score = max_priority * s.score // highest
        out.append(NodeScore(s.name, max_priority - score if reverse else score))
    return out


# ---------------------------------------------------------------- plugin args


def message_from_args(msg_type: type[Any], data: Any, path: str) -> Any:
    """Reads a Kubernetes-shaped JSON value from plugin args into a new `msg_type` message;
    ValueError naming the field when it does not fit."""
    msg = msg_type()
    try:
        convert.fill_message(msg, data, path)
    except Invalid as e:
        raise ValueError(str(e)) from None
    return msg


def label_selector_from_args(data: Any, path: str) -> Selector:
    """A metav1.LabelSelector from plugin args (an empty one selects everything)."""
    msg = message_from_args(types_pb2.LabelSelector, data, path)
    try:
        return selector_from_label_selector(msg, path=path)
    except Invalid as e:
        raise ValueError(str(e)) from None


def check_arg_keys(args: Mapping[str, object], allowed: Iterable[str], plugin: str) -> None:
    """Rejects unknown keys in a plugin's args (upstream decodes args strictly).
    `apiVersion` and `kind` are accepted, as in a KubeSchedulerConfiguration's pluginConfig."""
    known = {"apiVersion", "kind", *allowed}
    for key in args:
        if key not in known:
            raise ValueError(f'{plugin} args: unknown field "{key}"')


# ---------------------------------------------------------------- label selectors

# A compiled label selector: labels -> does the selector match them.
LabelMatcher = Callable[[Mapping[str, str]], bool]


def _never(labels: Mapping[str, str]) -> bool:
    return False


def _always(labels: Mapping[str, str]) -> bool:
    return True


def compile_selector(sel: Selector) -> LabelMatcher:
    """`sel.matches` as a closure over plain values, for selectors run against every pod of
    the cluster in a cycle: the common one-label `key=value` selector is one dict lookup."""
    if sel.nothing:
        return _never
    reqs = sel.requirements
    if not reqs:
        return _always
    if len(reqs) == 1:
        r = reqs[0]
        key = r.key
        if r.operator in ("=", "==", "in") and len(r.values) == 1:
            want = r.values[0]
            return lambda labels: labels.get(key) == want
        if r.operator == "exists":
            return lambda labels: key in labels
    return sel.matches
