"""What a timeline page drew, read back from its HTML (as written, or as a browser's DOM after
its script ran: `chromium --dump-dom`): per run section, the lanes (`data-node`), the pod bars
(`data-pod` rects), the nominated spans, the preemption victims' marks, the markers by kind
and the stories' JSON; and what the page's script counted into `#drawn`, if it ran. For
tests and for whoever checks a picture against the run it claims to show."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class DrawnRun:
    id: str
    title: str = ""
    lanes: list[str] = field(default_factory=list)
    bars: list[str] = field(default_factory=list)
    """namespace/name of each pod bar, in the order drawn (lane by lane)."""
    nominated: list[str] = field(default_factory=list)
    victims: list[str] = field(default_factory=list)
    markers: Counter[str] = field(default_factory=Counter)
    """fault, note, scale-up, scale-down: how many of each."""
    stories: list[list[object]] = field(default_factory=list)


@dataclass
class DrawnPage:
    runs: list[DrawnRun] = field(default_factory=list)
    script_ran: bool = False
    """The page's script set `#drawn`'s data-ready (it ran to its end without an error)."""
    script_lanes: int | None = None
    script_bars: int | None = None


def read_page(text: str) -> DrawnPage:
    reader = _Reader()
    reader.feed(text)
    reader.close()
    return reader.page


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = DrawnPage()
        self._run: DrawnRun | None = None
        self._text: list[str] | None = None
        self._into = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "section" and "data-run" in a:
            self._run = DrawnRun(a.get("id", ""))
            self.page.runs.append(self._run)
        elif a.get("id") == "drawn":
            self.page.script_ran = a.get("data-ready") == "true"
            self.page.script_lanes = _int(a.get("data-lanes", ""))
            self.page.script_bars = _int(a.get("data-bars", ""))
        run = self._run
        if run is None:
            return
        if tag == "h2" and not run.title:
            self._text, self._into = [], "title"
        elif tag == "script" and a.get("class") == "stories":
            self._text, self._into = [], "stories"
        if "data-node" in a:
            run.lanes.append(a["data-node"])
        if "data-pod" in a and tag == "rect":
            run.bars.append(a["data-pod"])
        if "data-nominated" in a:
            run.nominated.append(a["data-nominated"])
        if "data-victim" in a:
            run.victims.append(a["data-victim"])
        if "data-marker" in a:
            run.markers[a["data-marker"]] += 1

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if self._text is None or self._run is None:
            return
        if (self._into, tag) == ("title", "h2"):
            self._run.title = "".join(self._text)
        elif (self._into, tag) == ("stories", "script"):
            self._run.stories = json.loads("".join(self._text))
        else:
            return
        self._text, self._into = None, ""


def _int(text: str) -> int | None:
    return int(text) if text.isdigit() else None
