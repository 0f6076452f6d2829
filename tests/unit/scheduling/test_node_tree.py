"""NodeTree: zone keys and the round-robin node order (upstream node_tree_test.go)."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.node_tree import (
    LABEL_REGION,
    LABEL_REGION_BETA,
    LABEL_ZONE,
    LABEL_ZONE_BETA,
    NodeTree,
    zone_key,
)
from kemu.testing.builders import make_node


def node(name: str, **labels: str) -> types_pb2.Node:
    return make_node(name).labels(labels).obj()


@pytest.mark.parametrize(
    ("labels", "want"),
    [
        ({}, ""),
        ({LABEL_ZONE: "z1"}, ":\x00:z1"),
        ({LABEL_REGION: "r1", LABEL_ZONE: "z1"}, "r1:\x00:z1"),
        ({LABEL_REGION_BETA: "r0", LABEL_ZONE_BETA: "z0"}, "r0:\x00:z0"),
        # The GA labels win over the deprecated beta ones.
        ({LABEL_ZONE: "z1", LABEL_ZONE_BETA: "z0"}, ":\x00:z1"),
        ({LABEL_REGION: "r1"}, "r1:\x00:"),
    ],
)
def test_zone_key(labels: dict[str, str], want: str) -> None:
    assert zone_key(make_node("n").labels(labels).obj()) == want


def tree(*nodes: types_pb2.Node) -> NodeTree:
    t = NodeTree()
    for n in nodes:
        t.add_node(n)
    return t


ZONED = [
    ("a1", "a"),
    ("a2", "a"),
    ("a3", "a"),
    ("b1", "b"),
    ("c1", "c"),
    ("c2", "c"),
]


def zoned_tree() -> NodeTree:
    return tree(*(make_node(n).label(LABEL_ZONE, z).obj() for n, z in ZONED))


def test_list_takes_one_node_of_each_zone_in_turn() -> None:
    t = zoned_tree()
    assert t.num_nodes == 6
    assert t.list() == ["a1", "b1", "c1", "a2", "c2", "a3"]


def test_adding_a_node_twice_keeps_one() -> None:
    t = tree(node("n1"), node("n2"))
    assert not t.add_node(node("n1"))
    assert t.list() == ["n1", "n2"] and t.num_nodes == 2


def test_removing_the_last_node_of_a_zone_drops_the_zone() -> None:
    t = zoned_tree()
    assert t.remove_node("b1")
    assert not t.remove_node("b1")
    assert t.list() == ["a1", "c1", "a2", "c2", "a3"]
    assert t.num_nodes == 5


def test_update_moves_a_node_only_when_its_zone_changes() -> None:
    t = zoned_tree()
    assert not t.update_node(make_node("a1").label(LABEL_ZONE, "a").obj())
    assert t.update_node(make_node("a1").label(LABEL_ZONE, "b").obj())
    assert t.list() == ["a2", "b1", "c1", "a3", "a1", "c2"]
    assert t.update_node(node("new"))
    assert "new" in t and t.num_nodes == 7


def test_empty_tree_lists_nothing() -> None:
    assert NodeTree().list() == []
