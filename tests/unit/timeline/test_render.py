"""kemu.timeline.render: the page drawn from a handcrafted timeline (its elements counted with
the standard library's HTML parser), the --html path check, and the renderer's purity."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kemu.api.v1 import types_pb2
from kemu.testing.builders import make_node, make_pod
from kemu.timeline.model import PREEMPTED, MarkerKind, Timeline
from kemu.timeline.page import read_page
from kemu.timeline.render import (
    LABEL_GAP,
    OutputPathError,
    Table,
    check_output_path,
    format_offset,
    priority_colours,
    render_page,
    write_page,
)


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class Elements(HTMLParser):
    """Every start tag with its attributes, the text of each <title> and of each JSON script."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.titles: list[str] = []
        self.json: list[str] = []
        self._in: str | None = None
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        if tag == "title" or (tag == "script" and ("type", "application/json") in attrs):
            self._in = tag
            (self.titles if tag == "title" else self.json).append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "title":
            self.titles[-1] += data
        elif self._in == "script":
            self.json[-1] += data

    def with_attr(self, name: str, tag: str | None = None) -> list[dict[str, str]]:
        return [a for t, a in self.tags if name in a and (tag is None or t == tag)]


def pod(name: str, priority: int, uid: str = "") -> types_pb2.Pod:
    return make_pod(name).namespace("ns").uid(uid or f"u-{name}").priority(priority).obj()


def changed(p: types_pb2.Pod, *, node: str = "", nominated: str = "") -> types_pb2.Pod:
    out = types_pb2.Pod()
    out.CopyFrom(p)
    out.spec.node_name = node
    out.status.nominated_node_name = nominated
    return out


HOSTILE = 'evil"<script>alert(1)</script>&'


def handcrafted() -> Timeline:
    """Nodes n1, n2 and a pool node; five pods bound (one with a hostile name), one of them
    nominated first, one preempted by another; a pod nominated to a node with no Node
    object; a fault, a note, a scale-up and a scale-down."""
    clock = Clock()
    tl = Timeline("handcrafted <run>", clock)
    for name in ("n1", "n2"):
        tl.node_added(make_node(name).ready().obj())
    victim = changed(pod("victim", 1), node="n1")
    tl.pod_added(victim)
    for i, (name, prio, node) in enumerate(
        [("a", 10, "n1"), ("b", 100, "n2"), (HOSTILE, 10, "n2")], start=1
    ):
        clock.t = float(i)
        p = pod(name, prio)
        tl.pod_added(p)
        clock.t += 0.5
        tl.pod_updated(p, changed(p, node=node))
    clock.t = 5.0
    preemptor = pod("pre", 1000)
    preemptor.spec.scheduling_group.pod_group_name = "gang"  # a member of a pod group
    tl.pod_added(preemptor)
    nominated = changed(preemptor, nominated="n1")
    tl.pod_updated(preemptor, nominated)
    clock.t = 5.5
    event = types_pb2.Event(reason=PREEMPTED, message="Preempted by pod u-pre on node n1")
    event.involved_object.uid = "u-victim"
    event.related.uid = "u-pre"
    tl.event_seen(event)
    clock.t = 6.0
    tl.pod_deleted(victim)
    clock.t = 7.0
    tl.pod_updated(nominated, changed(preemptor, node="n1"))
    lost = pod("lost", 10)
    tl.pod_added(lost)
    tl.pod_updated(lost, changed(lost, nominated="gone-node"))
    tl.mark(MarkerKind.FAULT, "kill scheduler-leader: <scheduler-a>", at=2.0, until=2.5)
    tl.mark(MarkerKind.NOTE, "settling", at=8.0)
    up = types_pb2.Event(reason="TriggeredScaleUp", message="triggered: [{pool 0->1 (max: 2)}]")
    tl.event_seen(up)
    clock.t = 8.0
    tl.node_added(make_node("pool-1").ready().obj())
    clock.t = 9.0
    down = types_pb2.Event(reason="ScaleDownEmpty")
    down.involved_object.name = "pool-1"
    tl.event_seen(down)
    tl.node_deleted(make_node("pool-1").obj())
    clock.t = 10.0
    tl.finish()
    return tl


def test_a_lane_per_node_a_bar_per_binding_and_every_mark() -> None:
    page = render_page([handcrafted()])
    found = Elements(page)
    lanes = [a["data-node"] for a in found.with_attr("data-node")]
    # n1, n2 and pool-1 in the order seen, then the node only a nomination named.
    assert lanes == ["n1", "n2", "pool-1", "gone-node"]
    bars = sorted(a["data-pod"] for a in found.with_attr("data-pod", "rect"))
    assert bars == sorted(["ns/victim", "ns/a", "ns/b", f"ns/{HOSTILE}", "ns/pre"])
    nominated = [a["data-nominated"] for a in found.with_attr("data-nominated")]
    assert sorted(nominated) == ["ns/lost", "ns/pre"]
    assert [a["data-victim"] for a in found.with_attr("data-victim")] == ["ns/victim"]
    markers = [a["data-marker"] for a in found.with_attr("data-marker")]
    assert sorted(markers) == ["fault", "note", "scale-down", "scale-up"]
    # The nominated span lies on n1's lane before the preemptor's bar there, in its row.
    lane_of = {}
    current = ""
    for tag, attrs in found.tags:
        if "data-node" in attrs:
            current = attrs["data-node"]
        if tag == "rect" and ("data-pod" in attrs or "data-nominated" in attrs):
            lane_of[(attrs.get("data-pod") or attrs["data-nominated"], "data-pod" in attrs)] = (
                current,
                float(attrs["x"]),
                float(attrs["width"]),
                attrs["y"],
            )
    span, bar = lane_of[("ns/pre", False)], lane_of[("ns/pre", True)]
    assert span[0] == bar[0] == "n1"
    assert span[1] + span[2] == pytest.approx(bar[1], abs=0.2) and span[3] == bar[3]
    assert lane_of[("ns/lost", False)][0] == "gone-node"


def test_a_pods_story_is_its_bars_title_and_in_the_json() -> None:
    found = Elements(render_page([handcrafted()]))
    victim = next(t for t in found.titles if t.startswith("ns/victim"))
    assert victim.splitlines() == [
        "ns/victim (priority 1)",
        "t+0.0s created",
        "t+0.0s bound to n1",
        "t+5.5s preempted by ns/pre on n1",
        "t+6.0s deleted",
    ]
    (blob,) = found.json
    stories = json.loads(blob)
    by_key = {s[0]: s for s in stories}
    pre = by_key["ns/pre"]
    assert pre[1:3] == [1000, "n1"]
    # Its pod group: in the story (the side panel) and its bar's title (issue #55).
    assert (pre[6], by_key["ns/victim"][6]) == ("ns/gang", "")
    assert any(t.startswith("ns/pre (priority 1000, pod group ns/gang)") for t in found.titles)
    assert [step[1] for step in pre[3]] == [
        "created",
        "nominated to n1",
        "preempted ns/victim",
        "bound to n1",
    ]
    assert stories[pre[5][0]][0] == "ns/victim" and stories[by_key["ns/victim"][4]][0] == "ns/pre"
    # Every mark of a pod points at its story.
    for attrs in found.with_attr("data-i"):
        key = attrs.get("data-pod") or attrs.get("data-nominated") or attrs["data-victim"]
        assert stories[int(attrs["data-i"])][0] == key


def test_names_are_escaped_and_nothing_is_loaded_from_outside() -> None:
    page = render_page([handcrafted()])
    assert "<script>alert" not in page and "<scheduler-a>" not in page and "<run>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    found = Elements(page)
    scripts = [a for t, a in found.tags if t == "script"]
    assert len(scripts) == 2 and not any("src" in a for a in scripts)
    assert not [a for t, a in found.tags if t in ("link", "img", "iframe", "object", "embed")]
    refs = re.findall(r"""(?:src|href|url)\s*[=(]\s*["']?([^"')\s>]+)""", page)
    assert refs and all(r.startswith(("#", "url(#")) or r == "#" for r in refs), refs
    assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", page)
    assert "@import" not in page
    (blob,) = found.json
    assert "</" not in blob and f"ns/{HOSTILE}" in [s[0] for s in json.loads(blob)]


def test_offsets_read_as_times_from_the_origin() -> None:
    assert [format_offset(t) for t in (0.0, -0.01, 12.34, -3.0)] == [
        "t+0.0s",
        "t+0.0s",
        "t+12.3s",
        "t-3.0s",
    ]


def test_priorities_get_their_colours_in_order_and_share_them_past_the_palette() -> None:
    assert priority_colours([5]) == {5: 4}
    assert priority_colours([1, 10, 100]) == {1: 0, 10: 4, 100: 7}
    many = priority_colours(range(20))
    assert many[0] == 0 and many[19] == 7
    assert all(many[a] <= many[b] for a, b in zip(range(19), range(1, 20), strict=True))
    found = Elements(render_page([handcrafted()]))
    colour = {a["data-pod"]: a["class"] for a in found.with_attr("data-pod", "rect")}
    assert colour["ns/victim"] != colour["ns/pre"]
    assert colour["ns/a"] == colour[f"ns/{HOSTILE}"] == "c2"  # 1, 10, 100, 1000: the 2nd


def test_hundreds_of_nodes_keep_a_lane_each_and_thin_out_their_labels() -> None:
    clock = Clock()
    tl = Timeline("big", clock)
    for i in range(600):
        tl.node_added(make_node(f"node-{i}").ready().obj())
    for i in range(3000):
        clock.t = i / 100
        p = pod(f"p{i}", i % 4, uid=f"u{i}")
        tl.pod_added(p)
        tl.pod_updated(p, changed(p, node=f"node-{i % 600}"))
    clock.t = 40.0
    tl.finish()
    page = render_page([tl])
    found = Elements(page)
    assert len(found.with_attr("data-node")) == 600
    assert len(found.with_attr("data-pod", "rect")) == 3000
    labels = [a for t, a in found.tags if t == "text" and a.get("class") == "lane-label"]
    assert 40 < len(labels) < 600
    ys = []
    for _, attrs in found.tags:
        if "data-node" in attrs:
            y = float(attrs["transform"].removeprefix("translate(0,").removesuffix(")"))
        if attrs.get("class") == "lane-label":
            ys.append(y)
    assert all(b - a >= LABEL_GAP - 0.01 for a, b in zip(ys, ys[1:], strict=False))
    assert len(page) < 3000 * 600  # about 0.4 KB per pod, a little per node


def test_a_page_read_back_gives_what_it_drew_and_whether_its_script_ran() -> None:
    page = render_page([handcrafted()])
    drawn = read_page(page)
    assert not drawn.script_ran and drawn.script_lanes is None
    (run,) = drawn.runs
    assert (run.id, run.title) == ("run-0", "handcrafted <run>")
    assert run.lanes == ["n1", "n2", "pool-1", "gone-node"]
    assert sorted(run.bars) == sorted(["ns/victim", "ns/a", "ns/b", f"ns/{HOSTILE}", "ns/pre"])
    assert sorted(run.nominated) == ["ns/lost", "ns/pre"] and run.victims == ["ns/victim"]
    assert run.markers == {"fault": 1, "note": 1, "scale-up": 1, "scale-down": 1}
    assert len(run.stories) == 6
    # As a browser's DOM after the script ran (chromium --dump-dom).
    dom = page.replace(
        '<p id="drawn" data-lanes="" data-bars="">',
        '<p id="drawn" data-lanes="4" data-bars="5" data-ready="true">',
    )
    after = read_page(dom)
    assert (after.script_ran, after.script_lanes, after.script_bars) == (True, 4, 5)


def test_several_runs_are_sections_of_one_page_and_none_is_said() -> None:
    found = Elements(render_page([handcrafted(), handcrafted()], "two runs"))
    sections = [a["id"] for t, a in found.tags if t == "section"]
    assert sections == ["run-0", "run-1"]
    assert len(found.with_attr("data-node")) == 8 and len(found.json) == 2
    assert "No run was recorded" in render_page([])


def test_write_page_and_the_path_check(tmp_path: Path) -> None:
    out = tmp_path / "t.html"
    size = write_page(str(out), [handcrafted()])
    assert size == out.stat().st_size and out.read_text().startswith("<!DOCTYPE html>")
    check_output_path(str(out))  # an existing file is overwritten
    with pytest.raises(OutputPathError, match="is a directory"):
        check_output_path(str(tmp_path))
    with pytest.raises(OutputPathError, match="no such directory"):
        check_output_path(str(tmp_path / "missing" / "t.html"))
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(OutputPathError, match="permission denied"):
            check_output_path(str(locked / "t.html"))


def test_the_model_and_the_renderer_load_no_grpc_no_event_loop_and_no_client() -> None:
    program = textwrap.dedent(
        """
        import json, sys
        from kemu.api.v1 import types_pb2
        from kemu.timeline.model import Timeline
        from kemu.timeline.page import read_page
        from kemu.timeline.render import render_page

        tl = Timeline("x")
        p = types_pb2.Pod()
        p.metadata.name, p.metadata.namespace, p.metadata.uid = "p", "ns", "u"
        p.spec.node_name = "n"
        tl.pod_added(p)
        tl.finish()
        page = render_page([tl])
        (run,) = read_page(page).runs
        loaded = sorted(
            m for m in sys.modules
            if m.split(".")[0] in ("grpc", "anyio", "prometheus_client")
            or m.startswith(("kemu.client", "kemu.component", "kemu.testing"))
        )
        print(json.dumps({"bars": run.bars, "loaded": loaded}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(done.stdout) == {"bars": ["ns/p"], "loaded": []}


def test_a_runs_facts_its_time_span_and_the_pages_tables_are_drawn_and_read_back() -> None:
    tl = handcrafted()
    tl.origin = 1.0  # the driver's t=0 after the record's start
    tl.facts = [("pods created/bound", "7 / 6"), ("trace span", "<162> s")]
    page = render_page(
        [tl],
        tables=[
            Table("Differences", ("pod", "what", "a", "b"), [("ns/x", "node", "n1", None)]),
            Table("Nothing", ("pod",), [], empty="none here"),
        ],
    )
    assert "<162>" not in page
    drawn = read_page(page)
    (run,) = drawn.runs
    assert run.span == (-1.0, 9.0)
    assert run.facts == {"pods created/bound": "7 / 6", "trace span": "<162> s"}
    assert [(t.title, t.header, t.rows) for t in drawn.tables] == [
        ("Differences (1)", ["pod", "what", "a", "b"], [["ns/x", "node", "n1", "-"]]),
        ("Nothing (0)", [], []),  # no table drawn: its "empty" line
    ]
    assert "none here" in page
    plain = read_page(render_page([handcrafted()]))
    assert plain.runs[0].facts == {} and plain.tables == []
