"""kubectl-like output: `get` tables (columns from kemu.machinery.printers), ages, and
json/yaml/name output."""

from __future__ import annotations

import json
from collections.abc import Sequence

import yaml
from google.protobuf.message import Message

from kemu.ctl.common import ref
from kemu.machinery import kinds
from kemu.machinery import printers as columns
from kemu.machinery.keys import object_meta

# the names kemuctl's commands use, from the one place that defines them
NONE = columns.NONE
TABLES = columns.TABLES
age = columns.age
event_last_seen = columns.event_last_seen
event_source = columns.event_source
headers = columns.headers
human_duration = columns.human_duration
node_roles = columns.node_roles
node_status = columns.node_status
pod_status = columns.pod_status
seconds_of = columns.seconds_of


def row(
    kind: kinds.Kind,
    obj: Message,
    now: float,
    *,
    wide: bool,
    with_namespace: bool,
    with_kind: bool = False,
) -> list[str]:
    """One table row; `with_kind` names the object kind/name, as kubectl does when a get
    lists several kinds."""
    cells = columns.row(kind, obj, now, wide=wide, with_namespace=False)
    if with_kind and cells:
        cells[0] = ref(kind, cells[0])
    return ([object_meta(obj).namespace] if with_namespace else []) + cells


# ---------------------------------------------------------------- object output


def dump_json(data: object) -> str:
    return json.dumps(data, indent=4, ensure_ascii=False)


def dump_yaml(data: object) -> str:
    text: str = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return text.rstrip("\n")


def name_of(obj: Message) -> str:
    return ref(kinds.kind_of(obj), object_meta(obj).name)


class Table:
    """A `get` table printed in pieces (a watch adds rows): columns never shrink.

    Widths follow kubectl's tabwriter settings: a cell plus 3 spaces, at least 6; the last
    column is not padded.
    """

    MIN_WIDTH = 6
    PADDING = 3

    def __init__(self) -> None:
        self._widths: list[int] = []

    def render(self, rows: Sequence[Sequence[str]]) -> list[str]:
        for cells in rows:
            for j, cell in enumerate(cells[:-1]):
                width = max(self.MIN_WIDTH, len(cell) + self.PADDING)
                if j < len(self._widths):
                    self._widths[j] = max(self._widths[j], width)
                else:
                    self._widths.append(width)
        return [
            "".join(
                cell.ljust(self._widths[j]) if j < len(cells) - 1 else cell
                for j, cell in enumerate(cells)
            )
            for cells in rows
        ]
