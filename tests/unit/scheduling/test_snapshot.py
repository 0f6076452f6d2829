"""Snapshot: incremental update_snapshot, node order, affinity lists, consistency."""

from __future__ import annotations

import random
import time

from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.machinery.resources import SCHEDULER_DEFAULTS, PodResourcesOptions
from kemu.scheduling.interface import SharedLister
from kemu.scheduling.node_tree import LABEL_ZONE
from kemu.scheduling.snapshot import Snapshot
from kemu.scheduling.types import NodeInfo
from kemu.testing.builders import make_node, make_pod
from scheduler.cache import Cache


def node(name: str, zone: str = "", cpu: str = "4") -> types_pb2.Node:
    b = make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110)
    if zone:
        b = b.label(LABEL_ZONE, zone)
    return b.obj()


def pod(name: str, node_name: str, cpu: str = "1") -> types_pb2.Pod:
    return make_pod(name).uid(f"uid-{name}").req(cpu=cpu).node(node_name).obj()


def anti_affinity_pod(name: str, node_name: str) -> types_pb2.Pod:
    return (
        make_pod(name)
        .uid(f"uid-{name}")
        .label("app", "db")
        .anti_affinity({"app": "db"}, "kubernetes.io/hostname")
        .node(node_name)
        .obj()
    )


def preferred_affinity_pod(name: str, node_name: str) -> types_pb2.Pod:
    return (
        make_pod(name)
        .uid(f"uid-{name}")
        .affinity({"app": "db"}, LABEL_ZONE, weight=10)
        .node(node_name)
        .obj()
    )


def new_cache(*nodes: types_pb2.Node) -> Cache:
    cache = Cache(FakeClock(), counting=SCHEDULER_DEFAULTS)
    for n in nodes:
        cache.add_node(n)
    return cache


def names(infos: list[NodeInfo]) -> list[str]:
    return [ni.name for ni in infos]


def by_name(snap: Snapshot) -> dict[str, NodeInfo]:
    return {ni.name: ni for ni in snap.list()}


def test_snapshot_is_a_shared_lister() -> None:
    lister: SharedLister = Snapshot()  # checked by mypy
    assert lister.node_infos().list() == []
    assert lister.node_infos().get("n1") is None


# ---------------------------------------------------------------- incremental update


def test_first_update_clones_every_node_and_the_clones_do_not_follow_the_cache() -> None:
    cache = new_cache(node("n1"), node("n2"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    n1 = snap.get("n1")
    assert n1 is not None and snap.num_nodes() == 2

    cache.add_pod(pod("p", "n1"))

    # Scheduling never sees a NodeInfo change mid-cycle: only update_snapshot moves it on.
    assert n1.requested.milli_cpu == 0 and n1.pods == []
    cache.update_snapshot(snap)
    n1_new = snap.get("n1")
    assert n1_new is not None and n1_new.requested.milli_cpu == 1000
    assert n1.requested.milli_cpu == 0, "the previous clone is replaced, not mutated"


def test_only_changed_nodes_are_re_cloned() -> None:
    cache = new_cache(node("n1"), node("n2"), node("n3"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    before = by_name(snap)
    node_list = snap.list()

    cache.add_pod(pod("p", "n2"))
    cache.update_snapshot(snap)

    after = by_name(snap)
    assert after["n1"] is before["n1"]
    assert after["n3"] is before["n3"]
    assert after["n2"] is not before["n2"]
    assert snap.get("n2") is after["n2"]
    assert snap.list() is node_list, "the list is patched in place, not rebuilt"
    assert names(snap.list()) == ["n1", "n2", "n3"]


def test_update_without_changes_keeps_everything() -> None:
    cache = new_cache(node("n1"), node("n2"))
    cache.add_pod(pod("p", "n1"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    before = list(snap.list())
    generation = snap.generation

    cache.update_snapshot(snap)

    assert all(a is b for a, b in zip(snap.list(), before, strict=True))
    assert snap.generation == generation


def test_assume_and_forget_show_in_the_next_snapshot() -> None:
    cache = new_cache(node("n1"))
    snap = Snapshot()
    assumed = cache.assume_pod(make_pod("p").uid("u").req(cpu="2").obj(), "n1")
    cache.update_snapshot(snap)
    n1 = snap.get("n1")
    assert n1 is not None and n1.requested.milli_cpu == 2000
    cache.forget_pod(assumed)
    cache.update_snapshot(snap)
    n1 = snap.get("n1")
    assert n1 is not None and n1.requested.milli_cpu == 0


def test_removed_nodes_vanish_and_added_nodes_appear() -> None:
    cache = new_cache(node("n1"), node("n2"), node("n3"))
    cache.add_pod(pod("p", "n3"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    kept = snap.get("n1")

    cache.remove_node(node("n2"))
    cache.remove_node(node("n3"))  # still has a pod: a ghost in the cache, gone from snapshots
    cache.add_node(node("n4"))
    cache.update_snapshot(snap)

    assert names(snap.list()) == ["n1", "n4"]
    assert snap.get("n2") is None and snap.get("n3") is None
    assert snap.get("n1") is kept
    assert snap.num_nodes() == 2

    cache.remove_node(node("n1"))
    cache.remove_node(node("n4"))
    cache.update_snapshot(snap)
    assert snap.list() == [] and snap.num_nodes() == 0


def test_affinity_lists_follow_pods_with_affinity() -> None:
    cache = new_cache(node("n1"), node("n2"), node("n3"))
    snap = Snapshot()
    cache.add_pod(anti_affinity_pod("anti", "n1"))
    cache.add_pod(preferred_affinity_pod("pref", "n2"))
    cache.update_snapshot(snap)

    assert names(snap.have_pods_with_affinity_list()) == ["n1", "n2"]
    assert names(snap.have_pods_with_required_anti_affinity_list()) == ["n1"]

    # A change on a node that stays in the lists: the lists hold the new clone.
    cache.add_pod(pod("plain", "n1"))
    cache.update_snapshot(snap)
    n1 = snap.get("n1")
    assert snap.have_pods_with_affinity_list()[0] is n1
    assert snap.have_pods_with_required_anti_affinity_list()[0] is n1

    cache.remove_pod(anti_affinity_pod("anti", "n1"))
    cache.add_pod(anti_affinity_pod("anti2", "n3"))
    cache.update_snapshot(snap)

    assert names(snap.have_pods_with_affinity_list()) == ["n2", "n3"]
    assert names(snap.have_pods_with_required_anti_affinity_list()) == ["n3"]
    assert snap.have_pods_with_affinity_list()[1] is snap.get("n3")


# ---------------------------------------------------------------- node order


def test_node_list_interleaves_zones_like_the_node_tree() -> None:
    cache = new_cache(
        node("a1", "a"),
        node("a2", "a"),
        node("a3", "a"),
        node("b1", "b"),
        node("b2", "b"),
        node("c1", "c"),
    )
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert names(snap.list()) == ["a1", "b1", "c1", "a2", "b2", "a3"]


def test_without_zones_nodes_are_listed_in_insertion_order() -> None:
    cache = new_cache(*(node(f"n{i}") for i in (3, 1, 2)))
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert names(snap.list()) == ["n3", "n1", "n2"]


def test_a_zone_change_reorders_the_list() -> None:
    cache = new_cache(node("a1", "a"), node("a2", "a"), node("b1", "b"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert names(snap.list()) == ["a1", "b1", "a2"]

    cache.update_node(node("a1", "a"), node("a1", "b"))
    cache.update_snapshot(snap)

    assert names(snap.list()) == ["a2", "b1", "a1"]


def test_snapshot_from_objects() -> None:
    snap = Snapshot.from_objects(
        [pod("p", "n1", cpu="2"), pod("q", "n1"), pod("elsewhere", "gone")],
        [node("n1", "a"), node("n2", "a"), node("n3", "b")],
    )
    assert names(snap.node_infos().list()) == ["n1", "n3", "n2"]
    n1 = snap.get("n1")
    assert n1 is not None and n1.requested.milli_cpu == 3000 and len(n1.pods) == 2
    assert snap.get("gone") is None
    assert snap.have_pods_with_affinity_list() == []


def test_snapshot_from_objects_counts_pods_by_the_given_aggregation_rule() -> None:
    # cpu moved from a to b: desired a=1 b=2, allocated and actual a=2 b=1.
    p = make_pod("p").node("n1").container("a").req(cpu="1").container("b").req(cpu="2").obj()
    del p.spec.containers[0]
    for c, held in (("a", "2"), ("b", "1")):
        cs = p.status.container_statuses.add(name=c)
        cs.resources.requests["cpu"] = held
        cs.allocated_resources["cpu"] = held
    for per_container_max, want in ((True, 4000), (False, 3000)):
        snap = Snapshot.from_objects(
            [p],
            [node("n1")],
            PodResourcesOptions(use_status_resources=True, per_container_max=per_container_max),
        )
        n1 = snap.get("n1")
        assert n1 is not None and n1.requested.milli_cpu == want


# ---------------------------------------------------------------- consistency


def fingerprint(snap: Snapshot) -> list[tuple[str, int, int, list[str]]]:
    return [
        (
            ni.name,
            ni.requested.milli_cpu,
            ni.allocatable.milli_cpu,
            sorted(pi.pod.metadata.name for pi in ni.pods),
        )
        for ni in snap.list()
    ]


def test_incremental_snapshot_matches_a_fresh_one_after_random_events() -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    cache = new_cache()
    snap = Snapshot()
    live_nodes: set[str] = set()
    pods: dict[str, types_pb2.Pod] = {}
    for step in range(400):
        op = rng.random()
        name = f"n{rng.randrange(12)}"
        zone = rng.choice(["", "a", "b"])
        if op < 0.2:
            if name in live_nodes:
                cache.update_node(node(name), node(name, zone, cpu=str(rng.randint(1, 8))))
            else:
                cache.add_node(node(name, zone))
                live_nodes.add(name)
        elif op < 0.3 and name in live_nodes:
            cache.remove_node(node(name))
            live_nodes.discard(name)
        elif op < 0.65:
            p_name = f"p{step}"
            kind = rng.random()
            if kind < 0.2:
                p = anti_affinity_pod(p_name, name)
            elif kind < 0.3:
                p = preferred_affinity_pod(p_name, name)
            else:
                p = pod(p_name, name, cpu=f"{rng.randint(1, 900)}m")
            if rng.random() < 0.5:
                assumed = cache.assume_pod(p)
                if rng.random() < 0.5:
                    cache.forget_pod(assumed)
                else:
                    cache.add_pod(p)
                    pods[p_name] = p
            else:
                cache.add_pod(p)
                pods[p_name] = p
        elif pods:
            victim = rng.choice(sorted(pods))
            cache.remove_pod(pods.pop(victim))
        if rng.random() < 0.3:
            cache.update_snapshot(snap)
            fresh = Snapshot()
            cache.update_snapshot(fresh)
            context = f"seed={seed} step={step}"
            assert fingerprint(snap) == fingerprint(fresh), context
            assert names(snap.have_pods_with_affinity_list()) == names(
                fresh.have_pods_with_affinity_list()
            ), context
            assert names(snap.have_pods_with_required_anti_affinity_list()) == names(
                fresh.have_pods_with_required_anti_affinity_list()
            ), context
            assert all(snap.get(ni.name) is ni for ni in snap.list()), context
            assert {ni.name for ni in snap.list()} == live_nodes, context


# ---------------------------------------------------------------- micro-benchmark


def test_update_snapshot_cost_with_5000_nodes_and_one_change() -> None:
    """Prints the cost; asserts only behaviour (run with -s to see the figures)."""
    cache = new_cache()
    for i in range(5000):
        n = types_pb2.Node()
        n.metadata.name = f"node-{i}"
        n.metadata.labels[LABEL_ZONE] = f"zone-{i % 3}"
        n.status.allocatable.update({"cpu": "4", "memory": "8Gi", "pods": "110"})
        cache.add_node(n)
    for i in range(1000):
        cache.add_pod(pod(f"init-{i}", f"node-{i % 5000}"))
    snap = Snapshot()
    t0 = time.perf_counter()
    cache.update_snapshot(snap)
    full = time.perf_counter() - t0

    rounds = 200
    new_pods = [pod(f"p-{i}", f"node-{(i * 37) % 5000}") for i in range(rounds)]
    one_changed = 0.0
    for p in new_pods:
        cache.add_pod(p)
        t0 = time.perf_counter()
        cache.update_snapshot(snap)
        one_changed += time.perf_counter() - t0
    one_changed /= rounds
    t0 = time.perf_counter()
    for _ in range(rounds):
        cache.update_snapshot(snap)
    unchanged = (time.perf_counter() - t0) / rounds

    print(
        f"\nupdate_snapshot, 5000 nodes: first {full * 1e3:.1f} ms; "
        f"1 changed node {one_changed * 1e6:.1f} us; "
        f"no change {unchanged * 1e6:.2f} us"
    )
    assert snap.num_nodes() == 5000
    total = sum(len(ni.pods) for ni in snap.list())
    assert total == 1000 + rounds


def test_affinity_lists_updated_in_place_keep_the_node_order_of_a_rebuild() -> None:
    """Nodes enter and leave the affinity lists one replace at a time (no rebuild per cycle);
    the lists stay what a full rebuild gives, in node order, and the columns follow."""
    rng = random.Random(7)
    cache = Cache(FakeClock(), counting=SCHEDULER_DEFAULTS)
    names = [f"n{i}" for i in range(30)]
    for i, name in enumerate(names):
        cache.add_node(node(name, zone=f"z{i % 3}"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    placed: list[types_pb2.Pod] = []
    for step in range(200):
        if placed and rng.random() < 0.4:
            cache.remove_pod(placed.pop(rng.randrange(len(placed))))
        else:
            make = rng.choice([anti_affinity_pod, preferred_affinity_pod, pod])
            p = make(f"p{step}", rng.choice(names))
            cache.add_pod(p)
            placed.append(p)
        cache.update_snapshot(snap)
        affinity = [ni.name for ni in snap.have_pods_with_affinity_list()]
        anti = [ni.name for ni in snap.have_pods_with_required_anti_affinity_list()]
        snap.rebuild_affinity_lists()
        assert affinity == [ni.name for ni in snap.have_pods_with_affinity_list()]
        assert anti == [ni.name for ni in snap.have_pods_with_required_anti_affinity_list()]
        assert snap.columns().pods.tolist() == [len(ni.pods) for ni in snap.list()]
