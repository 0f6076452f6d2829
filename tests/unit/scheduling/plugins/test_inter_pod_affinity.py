"""InterPodAffinity: Filter with PreFilter counts and the AddPod/RemovePod extensions, Score
with normalisation, queueing hints (upstream interpodaffinity filtering_test.go,
scoring_test.go, plugin_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.events import QueueingHint
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import inter_pod_affinity as ipa
from kemu.scheduling.status import Code, Status
from kemu.scheduling.types import NodeInfo, NodeScore, PodInfo
from kemu.testing.builders import PodBuilder, make_node, make_pod
from tests.unit.scheduling.plugins.fakes import FakeHandle, FakeInformerFactory, node_info

REGION = "region"
ZONE = "zone"
HOST = "kubernetes.io/hostname"

AFFINITY = ipa.ERR_REASON_AFFINITY_RULES_NOT_MATCH
ANTI = ipa.ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH
EXISTING_ANTI = ipa.ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH


def node(name: str, **labels: str) -> types_pb2.Node:
    b = make_node(name).allocatable(cpu="4", memory="8Gi", pods="110").label(HOST, name)
    return b.labels(labels).obj()


def bound(name: str, labels: dict[str, str] | None = None, ns: str = "default") -> PodBuilder:
    return make_pod(name).namespace(ns).labels(labels or {}).uid(f"uid-{ns}-{name}")


def snapshot(*infos: NodeInfo) -> FakeHandle:
    return FakeHandle(nodes=infos)


def plugin(handle: FakeHandle, args: dict[str, Any] | None = None) -> ipa.InterPodAffinity:
    return ipa.new(args or {}, handle)


def filter_all(incoming: types_pb2.Pod, infos: list[NodeInfo]) -> dict[str, Status]:
    p = plugin(snapshot(*infos))
    state = CycleState()
    _, status = p.pre_filter(state, incoming, infos)
    assert status.is_success(), status
    return {ni.name: p.filter(state, incoming, ni) for ni in infos}


def codes(results: dict[str, Status]) -> dict[str, tuple[Code, tuple[str, ...]]]:
    return {name: (s.code, s.reasons) for name, s in results.items()}


OK = (Code.SUCCESS, ())
AFF_FAIL = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (AFFINITY,))
ANTI_FAIL = (Code.UNSCHEDULABLE, (ANTI,))
EXISTING_FAIL = (Code.UNSCHEDULABLE, (EXISTING_ANTI,))


# ---------------------------------------------------------------- PreFilter skip


def test_prefilter_skips_pods_without_affinity_when_no_pod_has_required_anti_affinity() -> None:
    infos = [node_info(node("n1", region="r1"), bound("a", {"app": "x"}).obj())]
    p = plugin(snapshot(*infos))
    state = CycleState()
    _, status = p.pre_filter(state, make_pod("p").obj(), infos)
    assert status.is_skip()
    assert state.read(ipa.PRE_FILTER_STATE_KEY) is None


def test_prefilter_does_not_skip_when_an_existing_anti_affinity_matches() -> None:
    existing = bound("a", {"app": "db"}).anti_affinity({"app": "web"}, HOST).obj()
    infos = [node_info(node("n1"), existing), node_info(node("n2"))]
    got = filter_all(make_pod("p").labels(app="web").obj(), infos)
    assert codes(got) == {"n1": EXISTING_FAIL, "n2": OK}


# ---------------------------------------------------------------- Filter


def test_required_affinity_matches_pods_in_the_same_topology() -> None:
    infos = [
        node_info(node("n1", region="r1"), bound("sec", {"service": "securityscan"}).obj()),
        node_info(node("n2", region="r1")),
        node_info(node("n3", region="r2")),
        node_info(node("n4")),  # no region label at all
    ]
    incoming = make_pod("p").affinity({"service": "securityscan"}, REGION).obj()
    assert codes(filter_all(incoming, infos)) == {
        "n1": OK,
        "n2": OK,
        "n3": AFF_FAIL,
        "n4": AFF_FAIL,
    }


def test_required_affinity_needs_one_pod_matching_all_terms() -> None:
    infos = [
        node_info(node("n1", region="r1", zone="z1"), bound("a", {"service": "a"}).obj()),
        node_info(node("n2", region="r1", zone="z2"), bound("b", {"team": "t"}).obj()),
        node_info(
            node("n3", region="r2", zone="z3"), bound("ab", {"service": "a", "team": "t"}).obj()
        ),
    ]
    incoming = make_pod("p").affinity({"service": "a"}, REGION).affinity({"team": "t"}, ZONE).obj()
    assert codes(filter_all(incoming, infos)) == {"n1": AFF_FAIL, "n2": AFF_FAIL, "n3": OK}


def test_first_pod_of_a_self_affine_group_may_go_where_its_topology_keys_exist() -> None:
    infos = [node_info(node("n1", region="r1")), node_info(node("n2"))]
    incoming = make_pod("p").labels(app="group").affinity({"app": "group"}, REGION).obj()
    assert codes(filter_all(incoming, infos)) == {"n1": OK, "n2": AFF_FAIL}


def test_self_affine_pod_must_join_its_group_once_one_exists() -> None:
    infos = [
        node_info(node("n1", region="r1")),
        node_info(node("n2", region="r2"), bound("m", {"app": "group"}).obj()),
    ]
    incoming = make_pod("p").labels(app="group").affinity({"app": "group"}, REGION).obj()
    assert codes(filter_all(incoming, infos)) == {"n1": AFF_FAIL, "n2": OK}


def test_pod_not_matching_its_own_affinity_cannot_start_a_group() -> None:
    infos = [node_info(node("n1", region="r1"))]
    incoming = make_pod("p").labels(app="other").affinity({"app": "group"}, REGION).obj()
    assert codes(filter_all(incoming, infos)) == {"n1": AFF_FAIL}


def test_required_anti_affinity_keeps_out_of_matching_domains() -> None:
    infos = [
        node_info(node("n1", zone="z1"), bound("db", {"app": "db"}).obj()),
        node_info(node("n2", zone="z1")),
        node_info(node("n3", zone="z2")),
        node_info(node("n4")),  # no zone: anti-affinity cannot be violated there
    ]
    incoming = make_pod("p").anti_affinity({"app": "db"}, ZONE).obj()
    assert codes(filter_all(incoming, infos)) == {
        "n1": ANTI_FAIL,
        "n2": ANTI_FAIL,
        "n3": OK,
        "n4": OK,
    }


def test_existing_pods_anti_affinity_applies_to_the_whole_topology_domain() -> None:
    existing = bound("a", {"app": "db"}).anti_affinity({"app": "web"}, ZONE).obj()
    infos = [
        node_info(node("n1", zone="z1"), existing),
        node_info(node("n2", zone="z1")),
        node_info(node("n3", zone="z2")),
    ]
    incoming = make_pod("p").labels(app="web").obj()
    assert codes(filter_all(incoming, infos)) == {
        "n1": EXISTING_FAIL,
        "n2": EXISTING_FAIL,
        "n3": OK,
    }


def test_affinity_is_checked_before_anti_affinity() -> None:
    infos = [
        node_info(
            node("n1", region="r1"),
            bound("a", {"service": "a"}).obj(),
            bound("b", {"app": "db"}).obj(),
        ),
        node_info(node("n2", region="r2"), bound("c", {"app": "db"}).obj()),
    ]
    incoming = (
        make_pod("p").affinity({"service": "a"}, REGION).anti_affinity({"app": "db"}, HOST).obj()
    )
    assert codes(filter_all(incoming, infos)) == {"n1": ANTI_FAIL, "n2": AFF_FAIL}


def _anti_term(pod: types_pb2.Pod) -> types_pb2.PodAffinityTerm:
    anti = pod.spec.affinity.pod_anti_affinity
    return anti.required_during_scheduling_ignored_during_execution[0]


@pytest.mark.parametrize(
    ("namespaces", "any_ns", "expected"),
    [
        ([], False, OK),  # default: the pod's own namespace only
        (["other"], False, ANTI_FAIL),
        (["default", "x"], False, OK),
        ([], True, ANTI_FAIL),  # empty namespaceSelector: every namespace
    ],
    ids=["own-namespace", "listed-namespace", "other-namespaces", "all-namespaces"],
)
def test_anti_affinity_namespaces(
    namespaces: list[str], any_ns: bool, expected: tuple[Code, tuple[str, ...]]
) -> None:
    infos = [node_info(node("n1"), bound("db", {"app": "db"}, ns="other").obj())]
    incoming = make_pod("p").anti_affinity({"app": "db"}, HOST).obj()
    _anti_term(incoming).namespaces.extend(namespaces)
    if any_ns:
        _anti_term(incoming).namespace_selector.SetInParent()
    assert codes(filter_all(incoming, infos))["n1"] == expected


def test_term_without_label_selector_matches_no_pod() -> None:
    infos = [node_info(node("n1", zone="z1"), bound("db", {"app": "db"}).obj())]
    incoming = make_pod("p").anti_affinity({}, ZONE).obj()
    _anti_term(incoming).ClearField("label_selector")
    assert codes(filter_all(incoming, infos)) == {"n1": OK}


def test_filter_without_prefilter_state_is_an_error() -> None:
    p = plugin(snapshot())
    got = p.filter(CycleState(), make_pod("p").obj(), node_info(node("n1")))
    assert got.code == Code.ERROR


# ---------------------------------------------------------------- AddPod / RemovePod


def test_add_pod_and_remove_pod_update_the_incoming_pods_counts() -> None:
    n1 = node_info(node("n1", zone="z1"))
    n2 = node_info(node("n2", zone="z2"))
    infos = [n1, n2]
    p = plugin(snapshot(*infos))
    incoming = make_pod("p").anti_affinity({"app": "db"}, ZONE).obj()
    state = CycleState()
    _, status = p.pre_filter(state, incoming, infos)
    assert status.is_success()
    assert p.filter(state, incoming, n1).is_success()

    nominated = PodInfo(bound("db", {"app": "db"}).node("n1").obj())
    assert p.add_pod(state, incoming, nominated, n1).is_success()
    assert p.filter(state, incoming, n1).reasons == (ANTI,)
    assert p.filter(state, incoming, n2).is_success()

    # A clone taken now is independent of later changes.
    snapshot_state = state.clone()
    assert p.remove_pod(state, incoming, nominated, n1).is_success()
    assert p.filter(state, incoming, n1).is_success()
    assert p.filter(snapshot_state, incoming, n1).reasons == (ANTI,)


def test_add_pod_and_remove_pod_update_existing_anti_affinity_counts() -> None:
    victim = bound("v", {"app": "db"}).anti_affinity({"app": "web"}, HOST).node("n1").obj()
    n1 = node_info(node("n1"), victim)
    p = plugin(snapshot(n1))
    incoming = make_pod("p").labels(app="web").obj()
    state = CycleState()
    _, status = p.pre_filter(state, incoming, [n1])
    assert status.is_success()
    assert p.filter(state, incoming, n1).reasons == (EXISTING_ANTI,)
    # Preemption's what-if: remove the victim and the node becomes feasible.
    assert p.remove_pod(state, incoming, n1.pods[0], n1).is_success()
    assert p.filter(state, incoming, n1).is_success()
    assert not state.read(ipa.PRE_FILTER_STATE_KEY).existing_anti_affinity_counts  # type: ignore[union-attr]


def test_add_pod_makes_affinity_satisfiable() -> None:
    n1 = node_info(node("n1", region="r1"))
    p = plugin(snapshot(n1))
    incoming = make_pod("p").affinity({"service": "a"}, REGION).obj()
    state = CycleState()
    p.pre_filter(state, incoming, [n1])
    assert p.filter(state, incoming, n1).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    p.add_pod(state, incoming, PodInfo(bound("a", {"service": "a"}).obj()), n1)
    assert p.filter(state, incoming, n1).is_success()


# ---------------------------------------------------------------- Score


def score_all(
    incoming: types_pb2.Pod, infos: list[NodeInfo], args: dict[str, Any] | None = None
) -> dict[str, int] | None:
    """Normalised scores by node, or None when PreScore skips."""
    p = plugin(snapshot(*infos), args)
    state = CycleState()
    status = p.pre_score(state, incoming, infos)
    if status.is_skip():
        return None
    assert status.is_success(), status
    raw = []
    for ni in infos:
        s, st = p.score(state, incoming, ni)
        assert st.is_success()
        raw.append(NodeScore(ni.name, s))
    normalized, st = p.normalize_score(state, incoming, raw)
    assert st.is_success()
    return {ns.name: ns.score for ns in normalized}


def regions() -> list[types_pb2.Node]:
    return [node("n1", region="China"), node("n2", region="China"), node("n3", region="India")]


def test_preferred_affinity_favours_the_matching_topology() -> None:
    n1, n2, n3 = regions()
    infos = [node_info(n1, bound("s", {"security": "S1"}).obj()), node_info(n2), node_info(n3)]
    incoming = make_pod("p").affinity({"security": "S1"}, REGION, weight=5).obj()
    assert score_all(incoming, infos) == {"n1": 100, "n2": 100, "n3": 0}


def test_preferred_anti_affinity_disfavours_the_matching_topology() -> None:
    n1, n2, n3 = regions()
    infos = [node_info(n1, bound("s", {"security": "S1"}).obj()), node_info(n2), node_info(n3)]
    incoming = make_pod("p").anti_affinity({"security": "S1"}, REGION, weight=5).obj()
    assert score_all(incoming, infos) == {"n1": 0, "n2": 0, "n3": 100}


def test_affinity_and_anti_affinity_weights_add_up() -> None:
    n1, n2, n3 = regions()
    infos = [
        node_info(n1, bound("s", {"security": "S1"}).obj()),
        node_info(n2, bound("d", {"disk": "ssd"}).obj()),
        node_info(n3, bound("s2", {"security": "S1"}).obj()),
    ]
    # China: +8 (S1 on n1) -2 (ssd on n2) = 6; India: +8. Normalised: 0 .. 100.
    incoming = (
        make_pod("p")
        .affinity({"security": "S1"}, REGION, weight=8)
        .anti_affinity({"disk": "ssd"}, REGION, weight=2)
        .obj()
    )
    assert score_all(incoming, infos) == {"n1": 0, "n2": 0, "n3": 100}


def test_existing_pods_preferred_terms_score_the_incoming_pod() -> None:
    n1, n2, n3 = regions()
    fan = bound("fan", {"app": "x"}).affinity({"team": "a"}, REGION, weight=10).obj()
    hater = bound("hater", {"app": "y"}).anti_affinity({"team": "a"}, HOST, weight=4).obj()
    infos = [node_info(n1, fan), node_info(n2, hater), node_info(n3)]
    incoming = make_pod("p").labels(team="a").obj()
    # China +10 for n1, n2; n2 -4 by hostname: n1 10, n2 6, n3 0 -> 100, 60, 0
    assert score_all(incoming, infos) == {"n1": 100, "n2": 60, "n3": 0}


def test_hard_pod_affinity_weight_counts_existing_required_affinity() -> None:
    n1, n2, n3 = regions()
    needs = bound("needs", {"app": "x"}).affinity({"team": "a"}, REGION).obj()
    infos = [node_info(n1, needs), node_info(n2), node_info(n3)]
    incoming = make_pod("p").labels(team="a").obj()
    assert score_all(incoming, infos) == {"n1": 100, "n2": 100, "n3": 0}
    # Weight 0 turns it off: nothing to score, PreScore skips.
    assert score_all(incoming, infos, {"hardPodAffinityWeight": 0}) is None


def test_prescore_skips_when_nothing_matches() -> None:
    n1, n2, n3 = regions()
    infos = [node_info(n1, bound("s", {"security": "S1"}).obj()), node_info(n2), node_info(n3)]
    incoming = make_pod("p").affinity({"security": "S9"}, REGION, weight=5).obj()
    assert score_all(incoming, infos) is None


def test_ignore_preferred_terms_of_existing_pods_skips_pods_without_preferences() -> None:
    n1, n2, n3 = regions()
    fan = bound("fan", {"app": "x"}).affinity({"team": "a"}, REGION, weight=10).obj()
    infos = [node_info(n1, fan), node_info(n2), node_info(n3)]
    incoming = make_pod("p").labels(team="a").obj()
    assert score_all(incoming, infos, {"ignorePreferredTermsOfExistingPods": True}) is None
    assert score_all(incoming, infos) == {"n1": 100, "n2": 100, "n3": 0}


def test_equal_scores_normalise_to_zero() -> None:
    infos = [
        node_info(node("n1", region="r"), bound("s", {"s": "1"}).obj()),
        node_info(node("n2", region="r")),
    ]
    incoming = make_pod("p").affinity({"s": "1"}, REGION, weight=3).obj()
    assert score_all(incoming, infos) == {"n1": 0, "n2": 0}


@pytest.mark.parametrize(
    "args",
    [
        {"hardPodAffinityWeight": 101},
        {"hardPodAffinityWeight": -1},
        {"x": 1},
        {"ignorePreferredTermsOfExistingPods": "yes"},
    ],
)
def test_invalid_args(args: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(args))):
        plugin(snapshot(), args)


# ---------------------------------------------------------------- queueing hints


TARGET = (
    make_pod("t")
    .labels(app="web")
    .affinity({"service": "a"}, REGION)
    .anti_affinity({"app": "db"}, HOST)
    .obj()
)


def assigned(labels: dict[str, str]) -> types_pb2.Pod:
    return bound("x", labels).node("n1").obj()


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        (None, assigned({"service": "a"}), QueueingHint.QUEUE),  # added, matches affinity
        (None, assigned({"service": "b"}), QueueingHint.SKIP),  # added, irrelevant
        (None, bound("x", {"service": "a"}).obj(), QueueingHint.SKIP),  # unassigned
        (assigned({"app": "db"}), None, QueueingHint.QUEUE),  # deleted anti-affinity match
        (assigned({"app": "web"}), None, QueueingHint.SKIP),  # deleted, irrelevant
        (  # deleted, its own anti-affinity repelled the target
            bound("x", {}).node("n1").anti_affinity({"app": "web"}, HOST).obj(),
            None,
            QueueingHint.QUEUE,
        ),
        (  # deleted, its own anti-affinity is about other pods
            bound("x", {}).node("n1").anti_affinity({"app": "db"}, HOST).obj(),
            None,
            QueueingHint.SKIP,
        ),
        (assigned({"app": "db"}), assigned({"app": "cache"}), QueueingHint.QUEUE),
        (assigned({"service": "b"}), assigned({"service": "a"}), QueueingHint.QUEUE),
        (assigned({"service": "a"}), assigned({"service": "a", "x": "y"}), QueueingHint.SKIP),
    ],
    ids=[
        "add-matching",
        "add-unrelated",
        "add-unassigned",
        "delete-anti-match",
        "delete-unrelated",
        "delete-own-anti-match",
        "delete-own-anti-unrelated",
        "update-stops-anti-match",
        "update-starts-affinity-match",
        "update-no-change",
    ],
)
def test_pod_change_hint(
    old: types_pb2.Pod | None, new: types_pb2.Pod | None, hint: QueueingHint
) -> None:
    assert plugin(snapshot()).is_schedulable_after_pod_change(TARGET, old, new) == hint


@pytest.mark.parametrize(
    ("new", "hint"),
    [
        (make_node("a").label(REGION, "r1").obj(), QueueingHint.QUEUE),
        (make_node("b").label(HOST, "b").obj(), QueueingHint.QUEUE),
        (make_node("c").unlabel(HOST).label("other", "x").obj(), QueueingHint.SKIP),
    ],
    ids=["affinity-key", "anti-affinity-key", "no-key"],
)
def test_node_change_hint(new: types_pb2.Node, hint: QueueingHint) -> None:
    assert plugin(snapshot()).is_schedulable_after_node_change(TARGET, None, new) == hint


# ---------------------------------------------------------------- compiled terms


@pytest.mark.parametrize(
    "expressions",
    [
        [("app", "In", ["a", "b"])],
        [("app", "NotIn", ["a"])],
        [("app", "Exists", [])],
        [("app", "DoesNotExist", [])],
        [("app", "In", ["a"]), ("tier", "NotIn", ["db"])],
        [("app", "In", ["a"]), ("tier", "Exists", [])],
    ],
)
def test_compiled_term_matches_like_the_term(expressions: list[tuple[str, str, list[str]]]) -> None:
    owner = make_pod("p").anti_affinity({}, HOST).obj()
    sel = _anti_term(owner).label_selector
    for key, op, values in expressions:
        sel.match_expressions.add(key=key, operator=op, values=values)
    term = PodInfo(owner).required_anti_affinity_terms[0]
    match = ipa.compile_term(term)
    candidates = [
        bound("1", {}).obj(),
        bound("2", {"app": "a"}).obj(),
        bound("3", {"app": "b", "tier": "db"}).obj(),
        bound("4", {"app": "a", "tier": "web"}).obj(),
        bound("5", {"app": "c"}).obj(),
        bound("6", {"app": "a"}, ns="other").obj(),
    ]
    for c in candidates:
        got = match(c.metadata.namespace, c.metadata.labels)
        assert got == term.matches(c), (expressions, dict(c.metadata.labels))


# ---------------------------------------------------------------- namespaceSelector


def _namespace(name: str, **labels: str) -> types_pb2.Namespace:
    ns = types_pb2.Namespace()
    ns.metadata.name = name
    ns.metadata.labels.update(labels)
    return ns


NAMESPACES = (
    _namespace("ns-a", team="a"),
    _namespace("ns-b", team="b"),
    _namespace("ns-none"),
)


def filter_with_namespaces(
    incoming: types_pb2.Pod, infos: list[NodeInfo], *namespaces: types_pb2.Namespace
) -> dict[str, Status]:
    handle = FakeHandle(nodes=infos, informers=FakeInformerFactory(*namespaces))
    p = plugin(handle)
    state = CycleState()
    _, status = p.pre_filter(state, incoming, infos)
    if status.is_skip():  # nothing to check: the framework skips Filter
        return {ni.name: Status() for ni in infos}
    assert status.is_success(), status
    return {ni.name: p.filter(state, incoming, ni) for ni in infos}


def _aff_term(pod: types_pb2.Pod) -> types_pb2.PodAffinityTerm:
    return pod.spec.affinity.pod_affinity.required_during_scheduling_ignored_during_execution[0]


def test_affinity_namespace_selector_places_the_pod_by_namespace_labels() -> None:
    infos = [
        node_info(node("n1"), bound("db", {"app": "db"}, ns="ns-a").obj()),
        node_info(node("n2"), bound("db", {"app": "db"}, ns="ns-b").obj()),
    ]
    incoming = make_pod("p").affinity({"app": "db"}, HOST).obj()
    _aff_term(incoming).namespace_selector.match_labels["team"] = "a"
    got = filter_with_namespaces(incoming, infos, *NAMESPACES)
    assert codes(got) == {"n1": OK, "n2": AFF_FAIL}


@pytest.mark.parametrize(
    ("team", "listed", "expected"),
    [
        ("a", [], ANTI_FAIL),  # the selector picks the pod's namespace
        ("b", [], OK),
        ("b", ["ns-a"], ANTI_FAIL),  # namespaces and the selector's namespaces are a union
    ],
)
def test_anti_affinity_covers_listed_namespaces_and_those_the_selector_picks(
    team: str, listed: list[str], expected: tuple[Code, tuple[str, ...]]
) -> None:
    infos = [node_info(node("n1"), bound("db", {"app": "db"}, ns="ns-a").obj())]
    incoming = make_pod("p").anti_affinity({"app": "db"}, HOST).obj()
    _anti_term(incoming).namespace_selector.match_labels["team"] = team
    _anti_term(incoming).namespaces.extend(listed)
    assert codes(filter_with_namespaces(incoming, infos, *NAMESPACES))["n1"] == expected


@pytest.mark.parametrize(("incoming_ns", "expected"), [("ns-a", EXISTING_FAIL), ("ns-b", OK)])
def test_an_existing_pods_namespace_selector_matches_the_incoming_pods_namespace_labels(
    incoming_ns: str, expected: tuple[Code, tuple[str, ...]]
) -> None:
    existing = bound("db", {"app": "db"}, ns="ns-none").anti_affinity({"app": "web"}, HOST).obj()
    _anti_term(existing).namespace_selector.match_labels["team"] = "a"
    infos = [node_info(node("n1"), existing), node_info(node("n2"))]
    incoming = make_pod("p").namespace(incoming_ns).labels(app="web").obj()
    got = filter_with_namespaces(incoming, infos, *NAMESPACES)
    assert codes(got) == {"n1": expected, "n2": OK}


def test_without_a_namespace_informer_a_namespace_selector_selects_no_namespace() -> None:
    infos = [node_info(node("n1"), bound("db", {"app": "db"}, ns="ns-a").obj())]
    incoming = make_pod("p").anti_affinity({"app": "db"}, HOST).obj()
    _anti_term(incoming).namespace_selector.match_labels["team"] = "a"
    assert codes(filter_all(incoming, infos)) == {"n1": OK}


def test_preferred_affinity_scores_by_namespace_labels() -> None:
    infos = [
        node_info(node("n1"), bound("db", {"app": "db"}, ns="ns-a").obj()),
        node_info(node("n2"), bound("db", {"app": "db"}, ns="ns-b").obj()),
    ]
    incoming = make_pod("p").obj()
    term = incoming.spec.affinity.pod_affinity.preferred_during_scheduling_ignored_during_execution.add(
        weight=10
    )
    term.pod_affinity_term.label_selector.match_labels["app"] = "db"
    term.pod_affinity_term.topology_key = HOST
    term.pod_affinity_term.namespace_selector.match_labels["team"] = "b"
    handle = FakeHandle(nodes=infos, informers=FakeInformerFactory(*NAMESPACES))
    p = plugin(handle)
    state = CycleState()
    assert p.pre_score(state, incoming, infos).is_success()
    scores = {ni.name: p.score(state, incoming, ni)[0] for ni in infos}
    assert scores == {"n1": 0, "n2": 10}
