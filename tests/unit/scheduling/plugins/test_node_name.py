from __future__ import annotations

import pytest

from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import node_name
from kemu.scheduling.status import Code
from kemu.scheduling.types import NodeInfo, PreFilterResult
from kemu.testing.builders import make_node, make_pod
from tests.unit.scheduling.plugins.fakes import FakeHandle


# Cases from upstream TestNodeName.
@pytest.mark.parametrize(
    ("pod_node", "node", "want"),
    [
        ("", "foo", Code.SUCCESS),  # no host specified
        ("foo", "foo", Code.SUCCESS),  # host matches
        ("bar", "foo", Code.UNSCHEDULABLE_AND_UNRESOLVABLE),  # host doesn't match
    ],
)
def test_filter(pod_node: str, node: str, want: Code) -> None:
    pl = node_name.new({}, FakeHandle())
    pod = make_pod("p").node(pod_node).obj() if pod_node else make_pod("p").obj()
    status = pl.filter(CycleState(), pod, NodeInfo(make_node(node).obj()))
    assert status.code == want
    if want != Code.SUCCESS:
        assert status.message() == "node(s) didn't match the requested node name"


def test_pre_filter_pins_the_named_node_or_skips() -> None:
    pl = node_name.new({}, FakeHandle())
    result, status = pl.pre_filter(CycleState(), make_pod("p").node("n1").obj(), [])
    assert status.is_success()
    assert result == PreFilterResult(frozenset({"n1"}))
    result, status = pl.pre_filter(CycleState(), make_pod("p").obj(), [])
    assert status.is_skip()
    assert result is None
    assert pl.pre_filter_extensions() is None


def test_hint_queues_only_for_the_named_node() -> None:
    pl = node_name.new({}, FakeHandle())
    pinned = make_pod("p").node("n1").obj()
    assert pl.is_schedulable_after_node_add(pinned, None, make_node("n1").obj()).name == "QUEUE"
    assert pl.is_schedulable_after_node_add(pinned, None, make_node("n2").obj()).name == "SKIP"
    free = make_pod("p").obj()
    assert pl.is_schedulable_after_node_add(free, None, make_node("n2").obj()).name == "QUEUE"
