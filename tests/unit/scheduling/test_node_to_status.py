"""NodeToStatus with rejections known in bulk (StatusBlock): read as if each had been set."""

from __future__ import annotations

import builtins

import numpy as np
import numpy.typing as npt

from kemu.scheduling.interface import NodeToStatus, StatusBlock
from kemu.scheduling.status import Code, Status
from kemu.scheduling.types import NodeInfo
from kemu.testing.builders import make_node

FIT = Status(Code.UNSCHEDULABLE, ("Insufficient cpu",), "NodeResourcesFit")
GONE = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient foo.com/bar",), "NodeResourcesFit"
)
TAINT = Status(Code.UNSCHEDULABLE, ("node(s) had untolerated taint",), "TaintToleration")
UNUSED = Status(Code.UNSCHEDULABLE, ("never referenced",), "Unused")


def ints(*values: int) -> npt.NDArray[np.int64]:
    return np.array(values, dtype=np.int64)


def nodes(n: int) -> list[NodeInfo]:
    return [NodeInfo(make_node(f"n{i}").obj()) for i in range(n)]


def test_a_block_reads_as_the_statuses_set_one_by_one_in_the_order_rejected() -> None:
    infos = nodes(6)
    lazy, eager = NodeToStatus(), NodeToStatus()
    lazy.set("n5", TAINT)
    lazy.add_block(StatusBlock(infos, ints(3, 0, 1), ints(1, 0, 1), [FIT, GONE, UNUSED]))
    assert len(lazy) == 4
    assert lazy.plugins() == {"TaintToleration", "NodeResourcesFit"}  # not the unused one's
    lazy.set("n2", TAINT)  # after the block, in order
    for name, status in (("n5", TAINT), ("n3", GONE), ("n0", FIT), ("n1", GONE), ("n2", TAINT)):
        eager.set(name, status)
    assert list(lazy.items()) == list(eager.items())
    assert len(lazy) == len(eager) == 5
    assert lazy.get("n4") is lazy.absent and lazy.get("n3") is GONE


def test_the_nodes_for_a_status_code_come_from_the_block_too() -> None:
    infos = nodes(4)
    statuses = NodeToStatus()
    statuses.add_block(StatusBlock(infos, ints(2, 1), ints(0, 1), [FIT, GONE]))

    class Lister:
        def list(self) -> list[NodeInfo]:
            return infos

        def get(self, name: str) -> NodeInfo | None:
            return next((ni for ni in infos if ni.name == name), None)

        def have_pods_with_affinity_list(self) -> builtins.list[NodeInfo]:
            return []

        def have_pods_with_required_anti_affinity_list(self) -> builtins.list[NodeInfo]:
            return []

    found = statuses.nodes_for_status_code(Lister(), Code.UNSCHEDULABLE)
    assert [ni.name for ni in found] == ["n2"]
