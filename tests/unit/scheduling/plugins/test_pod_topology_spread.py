"""PodTopologySpread: Filter with PreFilter counts (minDomains, node inclusion policies,
matchLabelKeys), the AddPod/RemovePod extensions, Score with the system default constraints and
the default selector, queueing hints and args (a selection of upstream podtopologyspread
filtering_test.go, scoring_test.go, plugin_test.go and ValidatePodTopologySpreadArgs' tests).
Expected scores marked "derived" are computed by hand from upstream's formulas."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import FeatureGates
from kemu.component.version import Version
from kemu.machinery.well_known_labels import LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE
from kemu.scheduling.events import QueueingHint
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import pod_topology_spread as pts
from kemu.scheduling.status import Code, Status
from kemu.scheduling.types import NodeInfo, NodeScore, PodInfo
from kemu.testing.builders import PodBuilder, make_node, make_pod, make_replica_set
from tests.unit.scheduling.plugins.fakes import FakeHandle, FakeInformerFactory, node_info

ZONE = "zone"
HOST = LABEL_HOSTNAME
TZONE = LABEL_TOPOLOGY_ZONE

OK = (Code.SUCCESS, ())
SKEW = (Code.UNSCHEDULABLE, (pts.ERR_REASON_CONSTRAINTS_NOT_MATCH,))
NO_LABEL = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (pts.ERR_REASON_NODE_LABEL_NOT_MATCH,))

_uids = itertools.count()


def node(name: str, **labels: str) -> types_pb2.Node:
    b = make_node(name).allocatable(cpu="4", memory="8Gi", pods="110").label(HOST, name)
    return b.labels(labels).obj()


def pod(name: str, ns: str = "default", **labels: str) -> PodBuilder:
    return make_pod(name).namespace(ns).labels(labels).uid(f"uid-{name}-{next(_uids)}")


def foo(name: str, ns: str = "default") -> types_pb2.Pod:
    """An existing pod with the label foo=""."""
    return pod(name, ns, foo="").obj()


def handle(
    infos: list[NodeInfo],
    *,
    version: int | None = None,
    informers: FakeInformerFactory | None = None,
) -> FakeHandle:
    h = FakeHandle(nodes=infos, informers=informers)
    if version is not None:
        h.fake_gates = FeatureGates.for_version(Version(1, version), {})
    return h


def plugin(h: FakeHandle, args: dict[str, Any] | None = None) -> pts.PodTopologySpread:
    return pts.new(args or {}, h)


def filter_all(
    incoming: types_pb2.Pod, infos: list[NodeInfo], *, version: int | None = None
) -> dict[str, tuple[Code, tuple[str, ...]]]:
    p = plugin(handle(infos, version=version))
    state = CycleState()
    _, status = p.pre_filter(state, incoming, infos)
    assert status.is_success(), status
    return {ni.name: _code(p.filter(state, incoming, ni)) for ni in infos}


def _code(s: Status) -> tuple[Code, tuple[str, ...]]:
    return (s.code, s.reasons)


def four_nodes(
    a: list[types_pb2.Pod], b: list[types_pb2.Pod], x: list[types_pb2.Pod], y: list[types_pb2.Pod]
) -> list[NodeInfo]:
    """node-a, node-b in zone1 and node-x, node-y in zone2 holding the given pods."""
    return [
        node_info(node("node-a", zone="zone1"), *a),
        node_info(node("node-b", zone="zone1"), *b),
        node_info(node("node-x", zone="zone2"), *x),
        node_info(node("node-y", zone="zone2"), *y),
    ]


def incoming(**labels: str) -> PodBuilder:
    return pod("p", **labels)


# ---------------------------------------------------------------- PreFilter / Filter


def test_pod_without_constraints_or_default_selector_skips_pre_filter() -> None:
    infos = four_nodes([foo("a1")], [], [], [])
    p = plugin(handle(infos))
    _, status = p.pre_filter(CycleState(), incoming(foo="").obj(), infos)
    assert status.code == Code.SKIP
    # ScheduleAnyway constraints do not filter either.
    soft = incoming(foo="").spread(1, ZONE, "ScheduleAnyway", exists=["foo"]).obj()
    _, status = p.pre_filter(CycleState(), soft, infos)
    assert status.code == Code.SKIP


def test_no_existing_pods_every_node_fits() -> None:
    infos = four_nodes([], [], [], [])
    p = incoming(foo="").spread(1, ZONE, exists=["foo"]).obj()
    assert set(filter_all(p, infos).values()) == {OK}


def test_pods_of_other_namespaces_and_terminating_pods_are_not_counted() -> None:
    terminating = foo("a3")
    terminating.metadata.deletion_timestamp.seconds = 1
    infos = four_nodes([foo("a1", "ns2"), foo("a2", "ns2"), terminating], [], [], [])
    p = incoming(foo="").spread(1, ZONE, exists=["foo"]).obj()
    assert set(filter_all(p, infos).values()) == {OK}


def test_spread_across_zones_1_2_with_a_node_missing_the_zone_label() -> None:
    # upstream "pods spread across zones as 1/2 due to absence of label 'zone' on node-b"
    infos = [
        node_info(node("node-a", zone="zone1"), foo("a1")),
        node_info(node("node-b"), foo("b1")),
        node_info(node("node-x", zone="zone2"), foo("x1")),
        node_info(node("node-y", zone="zone2"), foo("y1")),
    ]
    p = incoming(foo="").spread(1, ZONE, exists=["foo"]).obj()
    assert filter_all(p, infos) == {
        "node-a": OK,
        "node-b": NO_LABEL,
        "node-x": SKEW,
        "node-y": SKEW,
    }


def test_no_node_has_the_topology_key() -> None:
    infos = four_nodes([], [], [], [])
    p = incoming(foo="").spread(1, "rack", exists=["foo"]).obj()
    assert set(filter_all(p, infos).values()) == {NO_LABEL}


@pytest.mark.parametrize(
    ("max_skew", "expected"),
    [
        # upstream "pods spread across nodes as 2/1/0/3, only node-x fits"
        (1, {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": SKEW}),
        # "... maxSkew is 2, node-b and node-x fit"
        (2, {"node-a": SKEW, "node-b": OK, "node-x": OK, "node-y": SKEW}),
    ],
)
def test_hostname_spread_2_1_0_3(max_skew: int, expected: dict[str, Any]) -> None:
    infos = four_nodes([foo("a1"), foo("a2")], [foo("b1")], [], [foo("y1"), foo("y2"), foo("y3")])
    p = incoming(foo="").spread(max_skew, HOST, exists=["foo"]).obj()
    assert filter_all(p, infos) == expected


def test_incoming_pod_not_matching_its_own_selector_counts_no_self_match() -> None:
    # Zone1 has 2 matching pods, zone2 1: skew 2 - 1 = 1 without the pod itself.
    infos = four_nodes([foo("a1"), foo("a2")], [], [foo("x1")], [])
    p = incoming(bar="").spread(1, ZONE, exists=["foo"]).obj()
    assert set(filter_all(p, infos).values()) == {OK}


def test_two_constraints_zone_and_hostname() -> None:
    # upstream "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]": zones are
    # balanced (3/3), so only the hostname constraint decides: node-x.
    infos = four_nodes([foo("a1"), foo("a2")], [foo("b1")], [], [foo("y1"), foo("y2"), foo("y3")])
    p = incoming(foo="").spread(1, ZONE, exists=["foo"]).spread(1, HOST, exists=["foo"]).obj()
    assert filter_all(p, infos) == {
        "node-a": SKEW,
        "node-b": SKEW,
        "node-x": OK,
        "node-y": SKEW,
    }


def test_min_domains_treats_the_global_minimum_as_zero_while_domains_are_missing() -> None:
    infos = four_nodes([foo("a1")], [], [foo("x1")], [])
    plain = incoming(foo="").spread(1, ZONE, exists=["foo"]).obj()
    assert set(filter_all(plain, infos).values()) == {OK}
    # Two zones < minDomains 3: the minimum is 0, so 1 + 1 - 0 > 1 everywhere.
    p = incoming(foo="").spread(1, ZONE, exists=["foo"], min_domains=3).obj()
    assert set(filter_all(p, infos).values()) == {SKEW}
    # Before MinDomainsInPodTopologySpread was on (1.26), minDomains is not honoured.
    assert set(filter_all(p, infos, version=26).values()) == {OK}


def _inclusion_nodes() -> list[NodeInfo]:
    return [
        node_info(node("node-a", zone="zone1", env="prod"), foo("a1")),
        node_info(node("node-x", zone="zone2", env="prod"), foo("x1")),
        node_info(
            make_node("node-y")
            .allocatable(cpu="4", memory="8Gi", pods="110")
            .labels({HOST: "node-y", ZONE: "zone3"})
            .taint("dedicated", "gpu")
            .obj()
        ),
    ]


def test_node_affinity_policy_honor_counts_only_nodes_matching_the_node_selector() -> None:
    infos = _inclusion_nodes()
    honor = incoming(foo="").node_selector(env="prod").spread(1, ZONE, exists=["foo"]).obj()
    result = filter_all(honor, infos)
    assert result["node-a"] == OK and result["node-x"] == OK
    ignore = (
        incoming(foo="")
        .node_selector(env="prod")
        .spread(1, ZONE, exists=["foo"], node_affinity_policy="Ignore")
        .obj()
    )
    # zone3 (empty) now counts: the minimum is 0.
    result = filter_all(ignore, infos)
    assert result["node-a"] == SKEW and result["node-x"] == SKEW
    # Gate off (1.25): only nodes matching the pod's node affinity, whatever the policy.
    result = filter_all(ignore, infos, version=25)
    assert result["node-a"] == OK and result["node-x"] == OK


def test_node_taints_policy_honor_leaves_out_untolerated_tainted_nodes() -> None:
    infos = _inclusion_nodes()
    ignore = incoming(foo="").spread(1, ZONE, exists=["foo"]).obj()
    assert filter_all(ignore, infos)["node-a"] == SKEW  # tainted zone3 counts (0 pods)
    honor = incoming(foo="").spread(1, ZONE, exists=["foo"], node_taints_policy="Honor").obj()
    assert filter_all(honor, infos)["node-a"] == OK
    tolerating = (
        incoming(foo="")
        .toleration("dedicated", "gpu", "NoSchedule")
        .spread(1, ZONE, exists=["foo"], node_taints_policy="Honor")
        .obj()
    )
    assert filter_all(tolerating, infos)["node-a"] == SKEW


def test_match_label_keys_are_anded_into_the_selector() -> None:
    infos = four_nodes(
        [pod("a1", foo="", rev="old").obj(), pod("a2", foo="", rev="old").obj()],
        [],
        [pod("x1", foo="", rev="new").obj()],
        [],
    )
    p = incoming(foo="", rev="new").spread(1, ZONE, exists=["foo"], match_label_keys=["rev"])
    # Only rev=new pods count: zone1 0, zone2 1.
    assert filter_all(p.obj(), infos) == {
        "node-a": OK,
        "node-b": OK,
        "node-x": SKEW,
        "node-y": SKEW,
    }
    # MatchLabelKeysInPodTopologySpread off (1.26): every foo pod counts, zone1 2, zone2 1.
    assert filter_all(p.obj(), infos, version=26) == {
        "node-a": SKEW,
        "node-b": SKEW,
        "node-x": OK,
        "node-y": OK,
    }


def test_deferred_resize_skips_the_plugin_with_the_resize_preemption_gate() -> None:
    infos = four_nodes([foo("a1")], [], [], [])
    p = (
        incoming(foo="")
        .spread(1, ZONE, exists=["foo"])
        .condition("PodResizePending", "True", "Deferred")
        .obj()
    )
    h = handle(infos)
    h.fake_gates = FeatureGates.for_version(
        Version(1, 37), {"InPlacePodVerticalScalingSchedulerPreemption": True}
    )
    _, status = plugin(h).pre_filter(CycleState(), p, infos)
    assert status.code == Code.SKIP
    _, status = plugin(handle(infos)).pre_filter(CycleState(), p, infos)
    assert status.is_success()


# ---------------------------------------------------------------- AddPod / RemovePod


def test_add_and_remove_pod_keep_counts_and_the_exact_minimum() -> None:
    infos = four_nodes([foo("a1")], [], [foo("x1")], [])
    p = plugin(handle(infos))
    me = incoming(foo="").spread(1, ZONE, exists=["foo"]).obj()
    state = CycleState()
    p.pre_filter(state, me, infos)
    by_name = {ni.name: ni for ni in infos}
    assert _code(p.filter(state, me, by_name["node-a"])) == OK

    # A nominated pod in zone2 (upstream "node a and x both have pods that match, add one
    # on node-x"): zone2 2, zone1 1 → zone2 fails, zone1 still fits.
    x2 = PodInfo(foo("x2"))
    assert p.add_pod(state, me, x2, by_name["node-x"]).is_success()
    assert _code(p.filter(state, me, by_name["node-x"])) == SKEW
    assert _code(p.filter(state, me, by_name["node-a"])) == OK

    # A clone is independent of later changes (preemption evaluates each node on a copy).
    copy = state.clone()
    victim = PodInfo(foo("a1"))
    assert p.remove_pod(state, me, victim, by_name["node-a"]).is_success()
    s = state.read(pts.PRE_FILTER_STATE_KEY)
    assert isinstance(s, pts.PreFilterState)
    assert s.tp_value_counts == [{"zone1": 0, "zone2": 2}] and s.min_match_num == [0]
    c = copy.read(pts.PRE_FILTER_STATE_KEY)
    assert isinstance(c, pts.PreFilterState)
    assert c.tp_value_counts == [{"zone1": 1, "zone2": 2}] and c.min_match_num == [1]
    # Zone1 is now empty: zone2 (2 + 1 - 0) still fails; adding the victim back restores it.
    assert p.add_pod(state, me, victim, by_name["node-a"]).is_success()
    assert s.min_match_num == [1]


def test_add_pod_of_another_namespace_or_not_matching_changes_nothing() -> None:
    infos = four_nodes([foo("a1")], [], [foo("x1")], [])
    p = plugin(handle(infos))
    me = incoming(foo="").spread(1, ZONE, exists=["foo"]).obj()
    state = CycleState()
    p.pre_filter(state, me, infos)
    p.add_pod(state, me, PodInfo(foo("x2", "other")), infos[2])
    p.add_pod(state, me, PodInfo(pod("x3", bar="").obj()), infos[2])
    s = state.read(pts.PRE_FILTER_STATE_KEY)
    assert isinstance(s, pts.PreFilterState)
    assert s.tp_value_counts == [{"zone1": 1, "zone2": 1}]


def test_incremental_minimum_matches_a_recount_over_random_updates() -> None:
    import random

    rng = random.Random(7)
    infos = four_nodes([], [], [], [])
    for i in range(6):
        infos.append(node_info(node(f"node-{i}", zone=f"zone{i % 4 + 1}")))
    p = plugin(handle(infos))
    me = incoming(foo="").spread(1, ZONE, exists=["foo"]).obj()
    state = CycleState()
    p.pre_filter(state, me, infos)
    s = state.read(pts.PRE_FILTER_STATE_KEY)
    assert isinstance(s, pts.PreFilterState)
    placed: list[tuple[PodInfo, NodeInfo]] = []
    for step in range(300):
        if placed and rng.random() < 0.45:
            pi, ni = placed.pop(rng.randrange(len(placed)))
            p.remove_pod(state, me, pi, ni)
        else:
            ni = rng.choice(infos)
            pi = PodInfo(foo(f"r{step}"))
            p.add_pod(state, me, pi, ni)
            placed.append((pi, ni))
        assert s.min_match_num[0] == min(s.tp_value_counts[0].values())


# ---------------------------------------------------------------- Score


def score_all(
    p: pts.PodTopologySpread, me: types_pb2.Pod, infos: list[NodeInfo]
) -> dict[str, int] | Status:
    state = CycleState()
    status = p.pre_score(state, me, infos)
    if not status.is_success():
        return status
    raw = [NodeScore(ni.name, p.score(state, me, ni)[0]) for ni in infos]
    out, status = p.normalize_score(state, me, raw)
    assert status.is_success()
    return {ns.name: ns.score for ns in out}


def test_score_no_existing_pods_all_nodes_score_the_maximum() -> None:
    infos = [node_info(node("node-a")), node_info(node("node-b"))]
    me = incoming(foo="").spread(1, HOST, "ScheduleAnyway", exists=["foo"]).obj()
    assert score_all(plugin(handle(infos)), me, infos) == {"node-a": 100, "node-b": 100}


def test_score_one_constraint_on_node_four_candidates() -> None:
    # derived: weight log(4 + 2) = 1.79; raw round(2w, w, 0, 3w) = 4, 2, 0, 5;
    # normalized 100 * (5 + 0 - s) / 5.
    infos = four_nodes([foo("a1"), foo("a2")], [foo("b1")], [], [foo("y1"), foo("y2"), foo("y3")])
    me = incoming(foo="").spread(1, HOST, "ScheduleAnyway", exists=["foo"]).obj()
    assert score_all(plugin(handle(infos)), me, infos) == {
        "node-a": 20,
        "node-b": 60,
        "node-x": 100,
        "node-y": 0,
    }


def test_score_zone_constraint_counts_all_nodes_of_the_domain() -> None:
    # derived: 2 zones, weight log(4) = 1.386, maxSkew 1; zone1 3 pods → round(4.16) = 4,
    # zone2 1 pod → 1; normalized 100 * (4 + 1 - s) / 4: zone1 25, zone2 100.
    infos = four_nodes([foo("a1"), foo("a2")], [foo("b1")], [foo("x1")], [])
    me = incoming(foo="").spread(1, ZONE, "ScheduleAnyway", exists=["foo"]).obj()
    assert score_all(plugin(handle(infos)), me, infos) == {
        "node-a": 25,
        "node-b": 25,
        "node-x": 100,
        "node-y": 100,
    }


def test_score_nodes_missing_a_topology_key_of_the_pods_constraints_score_zero() -> None:
    infos = [
        node_info(node("node-a", zone="zone1"), foo("a1")),
        node_info(node("node-b")),
        node_info(node("node-x", zone="zone2")),
    ]
    me = incoming(foo="").spread(1, ZONE, "ScheduleAnyway", exists=["foo"]).obj()
    scores = score_all(plugin(handle(infos)), me, infos)
    assert scores == {"node-a": 0, "node-b": 0, "node-x": 100}


def _rs_world() -> tuple[FakeInformerFactory, PodBuilder]:
    rs = make_replica_set("web").selector(app="web").obj()
    rs.metadata.uid = "rs-uid"
    informers = FakeInformerFactory(replica_sets=[rs])
    return informers, pod("web-new", app="web").owner("ReplicaSet", "web", "rs-uid")


def _sibling(name: str) -> types_pb2.Pod:
    return pod(name, app="web").owner("ReplicaSet", "web", "rs-uid").obj()


def test_system_defaults_spread_a_replica_sets_pods_over_hostnames() -> None:
    # derived: hostname maxSkew 3 over 3 nodes, weight log(5) = 1.609; raw round(2w + 2) = 5,
    # 2, round(w + 2) = 4; nodes have no zone label, so the zone constraint adds nothing and
    # no node is ignored (system defaults need not every key). 100 * (5 + 2 - s) / 5.
    informers, me = _rs_world()
    infos = [
        node_info(node("node-a"), _sibling("w1"), _sibling("w2")),
        node_info(node("node-b"), pod("other", app="db").obj()),
        node_info(node("node-c"), _sibling("w3")),
    ]
    p = plugin(handle(infos, informers=informers))
    assert score_all(p, me.obj(), infos) == {"node-a": 40, "node-b": 100, "node-c": 60}
    # The same pod with no known owner has no default selector: PreScore skips.
    orphan = pod("lonely", app="web").obj()
    status = score_all(p, orphan, infos)
    assert isinstance(status, Status) and status.code == Code.SKIP
    # Without informers (a simulation) no pod has a default selector.
    status = score_all(plugin(handle(infos)), me.obj(), infos)
    assert isinstance(status, Status) and status.code == Code.SKIP


def test_system_defaults_use_zone_and_hostname_together() -> None:
    # derived: zones (maxSkew 5, 2 domains, w = log 4 = 1.386) and hosts (maxSkew 3, 4 nodes,
    # w = log 6 = 1.792). zone1 has 3 siblings, zone2 1; a 2, b 1, x 1, y 0.
    # raw a = 3*1.386+4 + 2*1.792+2 = 13.74 → 14; b = 8.16+1.79+2 = 11.95 → 12;
    # x = 1.386+4 + 1.792+2 = 9.18 → 9; y = 5.39 + 2 = 7.39 → 7. 100 * (14 + 7 - s) / 14.
    informers, me = _rs_world()
    infos = [
        node_info(node("node-a", **{TZONE: "zone1"}), _sibling("w1"), _sibling("w2")),
        node_info(node("node-b", **{TZONE: "zone1"}), _sibling("w3")),
        node_info(node("node-x", **{TZONE: "zone2"}), _sibling("w4")),
        node_info(node("node-y", **{TZONE: "zone2"})),
    ]
    p = plugin(handle(infos, informers=informers))
    assert score_all(p, me.obj(), infos) == {
        "node-a": 50,
        "node-b": 64,
        "node-x": 85,
        "node-y": 100,
    }


def test_service_selectors_make_the_default_selector() -> None:
    svc = types_pb2.Service()
    svc.metadata.name, svc.metadata.namespace = "web", "default"
    svc.spec.selector["tier"] = "front"
    no_selector = types_pb2.Service()
    no_selector.metadata.name, no_selector.metadata.namespace = "headless", "default"
    informers = FakeInformerFactory(services=[svc, no_selector])
    infos = [
        node_info(node("node-a"), pod("f1", tier="front").obj()),
        node_info(node("node-b")),
    ]
    p = plugin(handle(infos, informers=informers))
    scores = score_all(p, pod("f2", tier="front").obj(), infos)
    assert isinstance(scores, dict) and scores["node-b"] == 100 and scores["node-a"] < 100


def test_list_defaulting_requires_every_topology_key() -> None:
    informers, me = _rs_world()
    infos = [node_info(node("node-a", zone="z1"), _sibling("w1")), node_info(node("node-b"))]
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}
        ],
    }
    p = plugin(handle(infos, informers=informers), args)
    assert score_all(p, me.obj(), infos) == {"node-a": 100, "node-b": 0}
    # A DoNotSchedule default constraint filters like the pod's own would.
    args["defaultConstraints"] = [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
    ]
    p = plugin(handle(infos, informers=informers), args)
    state = CycleState()
    _, status = p.pre_filter(state, me.obj(), infos)
    assert status.is_success()
    assert _code(p.filter(state, me.obj(), infos[1])) == NO_LABEL


# ---------------------------------------------------------------- queueing hints


def test_pod_change_hints() -> None:
    p = plugin(handle([]))
    me = incoming(foo="").spread(1, ZONE, exists=["foo"]).obj()
    assigned = pod("x", foo="").node("n1").obj()
    unassigned = pod("u", foo="").obj()
    other_ns = pod("o", "ns2", foo="").node("n1").obj()
    not_matching = pod("b", bar="").node("n1").obj()
    hint = p.is_schedulable_after_pod_change
    assert hint(me, None, assigned) == QueueingHint.QUEUE
    assert hint(me, assigned, None) == QueueingHint.QUEUE
    assert hint(me, None, unassigned) == QueueingHint.SKIP
    assert hint(me, None, other_ns) == QueueingHint.SKIP
    assert hint(me, None, not_matching) == QueueingHint.SKIP
    relabelled = types_pb2.Pod()
    relabelled.CopyFrom(assigned)
    relabelled.metadata.labels.pop("foo")
    assert hint(me, assigned, relabelled) == QueueingHint.QUEUE
    other_label = types_pb2.Pod()
    other_label.CopyFrom(assigned)
    other_label.metadata.labels["unrelated"] = "1"
    assert hint(me, assigned, other_label) == QueueingHint.SKIP
    # The pod's own new toleration matters only when a constraint honours taints.
    tolerating = types_pb2.Pod()
    tolerating.CopyFrom(me)
    tolerating.spec.tolerations.add(key="k", operator="Exists")
    assert hint(me, me, tolerating) == QueueingHint.SKIP
    honor = incoming(foo="").spread(1, ZONE, exists=["foo"], node_taints_policy="Honor").obj()
    honor_tol = types_pb2.Pod()
    honor_tol.CopyFrom(honor)
    honor_tol.spec.tolerations.add(key="k", operator="Exists")
    assert hint(honor, honor, honor_tol) == QueueingHint.QUEUE


def test_node_change_hints() -> None:
    p = plugin(handle([]))
    me = incoming(foo="").spread(1, ZONE, exists=["foo"]).obj()
    hint = p.is_schedulable_after_node_change
    zoned = node("n", zone="z1")
    bare = node("n")
    assert hint(me, None, zoned) == QueueingHint.QUEUE
    assert hint(me, None, bare) == QueueingHint.SKIP
    assert hint(me, zoned, None) == QueueingHint.QUEUE
    assert hint(me, bare, zoned) == QueueingHint.QUEUE
    assert hint(me, zoned, node("n", zone="z2")) == QueueingHint.QUEUE
    assert hint(me, zoned, node("n", zone="z1", other="x")) == QueueingHint.SKIP
    tainted = make_node("n").labels({HOST: "n", ZONE: "z1"}).taint("k").obj()
    assert hint(me, zoned, tainted) == QueueingHint.QUEUE


# ---------------------------------------------------------------- args


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"defaultingType": "Both"}, 'defaultingType: Unsupported value: "Both"'),
        (
            {
                "defaultingType": "System",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            'defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            "defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            "defaultConstraints[0].topologyKey: Required value: can not be empty",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "Maybe"}
                ],
            },
            'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Maybe"',
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": ZONE,
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"a": "b"}},
                    }
                ],
            },
            "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                    {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                ],
            },
            'defaultConstraints: Duplicate value: "{zone, DoNotSchedule}"',
        ),
        ({"defaultConstraint": []}, 'unknown field "defaultConstraint"'),
        (
            {"defaultingType": "List", "defaultConstraints": [{"maxSkew": "one"}]},
            "defaultConstraints[0].maxSkew",
        ),
    ],
)
def test_invalid_args_name_the_field(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        plugin(handle([]), args)
    assert message in str(info.value)


def test_default_args_are_the_system_defaults_and_list_may_be_empty() -> None:
    p = plugin(handle([], informers=FakeInformerFactory()))
    assert p.system_defaulted
    assert [(c.topology_key, c.max_skew) for c in p.default_constraints] == [
        (HOST, 3),
        (TZONE, 5),
    ]
    p = plugin(handle([]), {"defaultingType": "List"})
    assert not p.system_defaulted and p.default_constraints == ()
