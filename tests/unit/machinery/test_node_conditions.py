"""Node conditions: the Ready check the cloud and the autoscaler share."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.machinery.node_conditions import get_node_condition, is_node_ready


def node(*conditions: tuple[str, str]) -> types_pb2.Node:
    n = types_pb2.Node()
    for type_, status in conditions:
        n.status.conditions.add(type=type_, status=status)
    return n


def test_is_node_ready_reads_the_ready_condition() -> None:
    assert is_node_ready(node(("MemoryPressure", "False"), ("Ready", "True")))
    assert not is_node_ready(node(("Ready", "False")))
    assert not is_node_ready(node(("Ready", "Unknown")))
    assert not is_node_ready(node())
    assert not is_node_ready(node(("MemoryPressure", "True")))


def test_get_node_condition() -> None:
    n = node(("Ready", "True"))
    cond = get_node_condition(n.status, "Ready")
    assert cond is not None and cond.status == "True"
    assert get_node_condition(n.status, "DiskPressure") is None
