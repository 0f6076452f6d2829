"""The autoscaler's what-if scheduling: ClusterSnapshot (fork, add node, force-add pod) and
PredicateChecker (the default profile's PreFilter + Filter)."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.scheduling.plugins.registry import in_tree_registry
from kemu.scheduling.profile import default_profile
from kemu.scheduling.runtime import Framework
from kemu.scheduling.simulator import ClusterSnapshot, PredicateChecker
from kemu.scheduling.status import Code
from kemu.testing.builders import make_node, make_pod


def node(name: str, cpu: str = "2", **labels: str) -> types_pb2.Node:
    return make_node(name).capacity(cpu=cpu, memory="4Gi", pods=20).labels(labels).obj()


def pod(name: str, cpu: str = "1", node_name: str = "") -> types_pb2.Pod:
    b = make_pod(name).uid(f"uid-{name}").req(cpu=cpu)
    return (b.node(node_name) if node_name else b).obj()


def checker() -> PredicateChecker:
    registry = in_tree_registry()
    return PredicateChecker(Framework(default_profile(registry), registry))


def test_check_predicates_runs_the_default_filters() -> None:
    snap = ClusterSnapshot.from_objects([pod("running", "1500m", "a")], [node("a"), node("b")])
    c = checker()
    full = c.check_predicates(snap, pod("p", "1"), "a")
    assert full.code is Code.UNSCHEDULABLE
    assert full.plugin == "NodeResourcesFit"
    assert "Insufficient cpu" in full.reasons
    assert c.check_predicates(snap, pod("p", "1"), "b").code is Code.SUCCESS
    missing = c.check_predicates(snap, pod("p"), "gone")
    assert missing.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_node_selector_is_checked_by_the_scheduler_plugin() -> None:
    snap = ClusterSnapshot.from_objects([], [node("a"), node("b", disk="ssd")])
    p = make_pod("p").uid("u").node_selector(disk="ssd").obj()
    name, status = checker().fits_any_node(snap, p)
    assert (name, status.code) == ("b", Code.SUCCESS)
    only_a, status = checker().fits_any_node(snap, p, lambda ni: ni.name == "a")
    assert only_a is None
    assert status.plugin == "NodeAffinity"


def test_added_pods_take_room_and_forks_are_independent() -> None:
    snap = ClusterSnapshot.from_objects([], [node("a")])
    c = checker()
    fork = snap.fork()
    fork.add_pod(pod("x", "1500m"), "a")
    assert c.check_predicates(fork, pod("p"), "a").code is Code.UNSCHEDULABLE
    # The original did not see the fork's pod.
    assert c.check_predicates(snap, pod("p"), "a").code is Code.SUCCESS
    fork.add_node(node("t"))
    assert fork.node_names() == ["a", "t"]
    assert snap.node_names() == ["a"]
    assert c.fits_any_node(fork, pod("p"))[0] == "t"


def test_add_pod_counts_a_pod_that_does_not_fit_and_updates_anti_affinity() -> None:
    snap = ClusterSnapshot.from_objects([], [node("a"), node("b")])
    db = (
        make_pod("db")
        .uid("db")
        .label("app", "db")
        .anti_affinity({"app": "db"}, "kubernetes.io/hostname")
        .obj()
    )
    snap.add_pod(db, "a")
    big = snap.fork()
    big.add_pod(pod("huge", "8"), "b")
    b = big.get("b")
    assert b is not None and [pi.pod.metadata.name for pi in b.pods] == ["huge"]
    other = (
        make_pod("db2")
        .uid("db2")
        .label("app", "db")
        .anti_affinity({"app": "db"}, "kubernetes.io/hostname")
        .obj()
    )
    # InterPodAffinity's PreFilter sees the force-added pod on a.
    assert checker().fits_any_node(snap, other)[0] == "b"
    name, status = checker().fits_any_node(snap, other, lambda ni: ni.name == "a")
    assert name is None
    assert status.plugin == "InterPodAffinity"
