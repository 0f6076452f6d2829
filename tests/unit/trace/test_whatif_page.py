"""kemu.whatif's page: one page with a section per run (A and B, each its picture and its
report's figures) and the differences as a table, read back with kemu.timeline.page."""

from __future__ import annotations

from kemu.testing.builders import make_node, make_pod
from kemu.timeline.model import Timeline
from kemu.timeline.page import read_page
from kemu.trace.diff import Difference
from kemu.whatif import page


def _run(node: str) -> Timeline:
    t = [0.0]
    tl = Timeline("replay", lambda: t[0])
    tl.node_added(make_node("n1").ready().obj())
    tl.node_added(make_node("n2").ready().obj())
    p = make_pod("web-1").namespace("shop").uid("u1").obj()
    tl.pod_added(p)
    t[0] = 2.0
    tl.pod_updated(p, make_pod("web-1").namespace("shop").uid("u1").node(node).obj())
    tl.facts = [("pods created/bound", "1 / 1")]
    t[0] = 10.0
    tl.finish()
    return tl


def test_two_sections_a_and_b_and_the_differences_as_a_table() -> None:
    names = {"a": "most-allocated.yaml", "b": "least-allocated.yaml"}
    diff: list[Difference] = [
        {"pod": "Deployment/shop/web#0", "what": "node", "a": "n1", "b": "n2"}
    ]
    drawn = read_page(page(names, _run("n1"), _run("n2"), diff))
    a, b = drawn.runs
    assert (a.title, b.title) == ("A: most-allocated.yaml", "B: least-allocated.yaml")
    assert a.lanes == b.lanes == ["n1", "n2"]
    assert a.bars == b.bars == ["shop/web-1"]
    assert a.facts == b.facts == {"pods created/bound": "1 / 1"}
    (table,) = drawn.tables
    assert table.title == "Differences (1)"
    assert table.header == ["pod", "what", "A: most-allocated.yaml", "B: least-allocated.yaml"]
    assert table.rows == [["Deployment/shop/web#0", "node", "n1", "n2"]]


def test_runs_that_agree_say_so() -> None:
    text = page({"a": "x.yaml", "b": "x.yaml"}, _run("n1"), _run("n1"), [])
    (table,) = read_page(text).tables
    assert table.rows == [] and "The two runs agree." in text
