"""What a timeline page drew, read back from its HTML (as written, or as a browser's DOM after
its script ran: `chromium --dump-dom`): per run section, the lanes (`data-node`), the pod bars
(`data-pod` rects), the nominated spans, the preemption victims' marks, the markers by kind,
the stories' JSON, its time span and its facts table; the page's tables; and what the page's
script counted into `#drawn`, if it ran. For
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
    span: tuple[float, float] | None = None
    """The time axis: (from, to) in seconds from the run's origin."""
    facts: dict[str, str] = field(default_factory=dict)
    """The driver's facts table (name -> value as shown)."""


@dataclass
class DrawnTable:
    title: str = ""
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)


@dataclass
class DrawnPage:
    runs: list[DrawnRun] = field(default_factory=list)
    tables: list[DrawnTable] = field(default_factory=list)
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
        self._table: DrawnTable | None = None
        self._text: list[str] | None = None
        self._into = ""
        self._rows: list[list[str]] | None = None
        self._header: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "section" and "data-run" in a:
            self._run = DrawnRun(a.get("id", ""))
            self._table = None
            self.page.runs.append(self._run)
            if "data-from" in a and "data-to" in a:
                self._run.span = (float(a["data-from"]), float(a["data-to"]))
        elif tag == "section" and "data-table" in a:
            self._run = None
            self._table = DrawnTable()
            self.page.tables.append(self._table)
        if self._table is not None or self._run is not None:
            self._start_table_tag(tag)
        if self._table is not None and tag == "h2":
            self._text, self._into = [], "table-title"
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

    def _start_table_tag(self, tag: str) -> None:
        if tag == "table" and self._text is None:
            self._rows, self._header = [], []
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
        elif tag in ("td", "th") and self._rows is not None:
            self._cell = []

    def _end_table_tag(self, tag: str) -> None:
        rows = self._rows
        if rows is None:
            return
        if tag in ("td", "th") and self._cell is not None and rows:
            text = "".join(self._cell)
            (self._header if tag == "th" else rows[-1]).append(text)
            self._cell = None
        elif tag == "table":
            body = [r for r in rows if r]
            if self._table is not None:
                self._table.header, self._table.rows = self._header, body
            elif self._run is not None:
                self._run.facts = {r[0]: r[1] for r in body if len(r) == 2}
            self._rows = None

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        self._end_table_tag(tag)
        if (self._into, tag) == ("table-title", "h2") and self._text is not None:
            assert self._table is not None
            self._table.title = "".join(self._text)
            self._text, self._into = None, ""
            return
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
