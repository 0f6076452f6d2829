"""meta.k8s.io/v1 Table output (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`): the
columns and cells of kemuctl's printers (kemu.ctl.printers, one place for both), the columns
of `-o wide` at priority 1 as upstream's TableConvertor."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from google.protobuf.message import Message

from kemu.machinery import convert, printers
from kemu.machinery.errors import Invalid
from kemu.machinery.jsonvalue import JSONArray, JSONObject
from kemu.machinery.kinds import Kind

TABLE_ACCEPT = "as=Table"
_INCLUDE_OBJECT: Final = ("Metadata", "Object", "None", "")


def include_object(value: str) -> str:
    """TableOptions.includeObject, checked as upstream's ValidateTableOptions (422)."""
    if value not in _INCLUDE_OBJECT:
        shown = value if len(value) <= 64 else value[:64] + "..."
        raise Invalid.field(
            "includeObject",
            f"Invalid value: \"{shown}\": must be 'Metadata', 'Object', 'None', or empty",
        )
    return value or "Metadata"


def wants_table(accept: str) -> bool:
    return any(TABLE_ACCEPT in part and "g=meta.k8s.io" in part for part in accept.split(","))


def table(
    kind: Kind,
    objs: Sequence[Message],
    now: float,
    *,
    resource_version: str = "",
    continue_: str = "",
    include_object: str = "Metadata",
    render: Callable[[Message], JSONObject] | None = None,
) -> JSONObject:
    """The Table of `objs`; `render` writes a row's object (includeObject=Object) in the group
    version the request named (default: the kind's own)."""
    narrow = printers.headers(kind, wide=False, with_namespace=False)
    wide = printers.headers(kind, wide=True, with_namespace=False)
    columns: JSONArray = [
        {
            "name": name,
            "type": "string",
            "format": "name" if i == 0 and name == "NAME" else "",
            "description": "",
            "priority": 0 if name in narrow else 1,
        }
        for i, name in enumerate(wide)
    ]
    rows: JSONArray = []
    for obj in objs:
        row: JSONObject = {
            "cells": [*printers.row(kind, obj, now, wide=True, with_namespace=False)]
        }
        if include_object == "Object":
            row["object"] = render(obj) if render else convert.to_dict(obj, wire=True)
        elif include_object != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": convert.message_to_dict(obj.metadata, wire=True),  # type: ignore[attr-defined]
            }
        rows.append(row)
    metadata: JSONObject = {}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    if continue_:
        metadata["continue"] = continue_
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    }
