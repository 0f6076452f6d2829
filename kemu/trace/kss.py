"""kube-scheduler-simulator's recorder file (kubernetes-sigs/kube-scheduler-simulator,
simulator/recorder): JSON lines, one change each,

    {"time": "2024-05-01T10:00:00.123456789Z", "event": "Add"|"Update"|"Delete",
     "resource": {<the object; only apiVersion, kind and metadata name/namespace on Delete>}}

of namespaces, priority classes, storage classes, PVCs, nodes, PVs and pods, as its informers
saw them. `read` makes a Trace of it: the changes grouped by instant (fractions of seconds
kept), an Add or an Update applied and a Delete deleted. A pod's Updates are its scheduling
and its run (the outcome a replay is to find again), so only its Add is kept, and nothing
distinguishes an Update that changed a spec from a status heartbeat but the object's
content: an Update is kept only when the object without its status and server-set metadata
differs from what was last applied. The tracked kinds are those the file holds.
"""

from __future__ import annotations

import json
from typing import Final

from kemu.machinery.convert import parse_time
from kemu.machinery.errors import Invalid
from kemu.machinery.jsonvalue import JSONObject
from kemu.trace.model import POD_GVK, Trace, TraceEvent, TrackedObject, gvk_of, ns_name

SUFFIX: Final = ".jsonl"
_EVENTS: Final = ("Add", "Update", "Delete")
_SERVER_METADATA: Final = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
)


class KssFormatError(ValueError):
    """Not a kube-scheduler-simulator record; the message names the line."""


def looks_like(data: bytes) -> bool:
    return data.lstrip()[:1] == b"{"


def _content(obj: JSONObject) -> JSONObject:
    out = {k: v for k, v in obj.items() if k != "status"}
    metadata = obj.get("metadata")
    meta: JSONObject = {}
    if isinstance(metadata, dict):
        meta = {k: v for k, v in metadata.items() if k not in _SERVER_METADATA}
    out["metadata"] = meta
    return out


def read(text: str) -> Trace:
    events: list[TraceEvent] = []
    last: dict[tuple[str, str], JSONObject] = {}
    kinds: set[str] = set()
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise KssFormatError(f"line {n}: not JSON: {e.msg}") from None
        if not isinstance(record, dict):
            raise KssFormatError(f"line {n}: expected an object")
        event, resource, when = record.get("event"), record.get("resource"), record.get("time")
        if event not in _EVENTS:
            raise KssFormatError(f"line {n}: event: expected one of {', '.join(_EVENTS)}")
        if not isinstance(resource, dict) or not resource.get("kind"):
            raise KssFormatError(f"line {n}: resource: expected an object with a kind")
        if not isinstance(when, str):
            raise KssFormatError(f"line {n}: time: expected an RFC 3339 time")
        try:
            stamp = parse_time(when, "time")
        except Invalid:
            raise KssFormatError(f"line {n}: time: {when!r} is not an RFC 3339 time") from None
        ts = stamp.seconds + stamp.nanos / 1e9
        gvk = gvk_of(resource)
        key = (gvk, ns_name(resource))
        kinds.add(gvk)
        content = _content(resource)
        if event == "Delete":
            last.pop(key, None)
            target = "deleted"
        elif event == "Update" and (gvk == POD_GVK or last.get(key) == content):
            continue
        else:
            last[key] = content
            target = "applied"
        if not events or events[-1].ts != ts:
            events.append(TraceEvent(ts=ts))
        getattr(events[-1], target).append(resource)
    events.sort(key=lambda e: e.ts)  # (stable: a file's order within one instant is kept)
    return Trace(tracked={k: TrackedObject() for k in sorted(kinds)}, events=events)
