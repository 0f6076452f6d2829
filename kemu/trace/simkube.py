"""SimKube's trace file (acrlabs/simkube, sk-core/src/trace; docs/ref/trace-files.md): a
msgpack map written by rmp_serde's `to_vec_named`, every struct a map by field name:

    {"version": 2,
     "config": {"trackedObjects": {"apps/v1.Deployment": {"podSpecTemplatePaths": [...],
                                   "trackLifecycle": true, "skipOwned": true}, ...}},
     "events": [{"ts": <unix seconds>, "applied_objs": [obj, ...], "deleted_objs": [...]}],
     "index": {"apps/v1.Deployment": {"ns/name": <u64 hash>, ...}},
     "pod_lifecycles": {[<owner gvk>, "ns/name"]: {<u64 pod hash>: [lifecycle, ...]}}}

A lifecycle is serde's externally tagged enum: "Empty", {"Running": start} or {"Finished":
[start, end]}. The lifecycles' keys are 2-element arrays, which is why they are read with an
`object_pairs_hook` (a dict cannot hold a list key). `write` gives what `read` reads back
equal, and what SimKube's `Trace::import` accepts (its version and field names).
"""

from __future__ import annotations

from typing import Final, cast

import msgpack

from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.trace.model import (
    CURRENT_VERSION,
    POD_SPEC_TEMPLATE_PATHS,
    Lifecycle,
    OwnerKey,
    Trace,
    TraceEvent,
    TrackedObject,
    split_gvk,
)

SUFFIX: Final = ".sktrace"


class TraceFormatError(ValueError):
    """The bytes are not a SimKube trace of a version kemu reads; the message says where."""


class _Pairs(list[tuple[object, object]]):
    """A msgpack map whose keys a dict cannot hold (arrays)."""


def _pairs_hook(pairs: list[tuple[object, object]]) -> dict[object, object] | _Pairs:
    try:
        return dict(pairs)
    except TypeError:
        return _Pairs(pairs)


def looks_like(data: bytes) -> bool:
    """Whether `data` starts as a msgpack map would (a fixmap, map16 or map32)."""
    return bool(data) and (0x80 <= data[0] <= 0x8F or data[0] in (0xDE, 0xDF))


def read(data: bytes) -> Trace:
    try:
        raw = msgpack.unpackb(data, raw=False, strict_map_key=False, object_pairs_hook=_pairs_hook)
    except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as e:
        raise TraceFormatError(f"not a msgpack document: {e}") from None
    if not isinstance(raw, dict):
        raise TraceFormatError("the trace is not a map")
    version = raw.get("version")
    if version != CURRENT_VERSION:
        raise TraceFormatError(
            f"version: {version!r} is not supported (SimKube's trace format {CURRENT_VERSION})"
        )
    for key in ("config", "events", "index", "pod_lifecycles"):
        if key not in raw:
            raise TraceFormatError(f"{key}: missing")
    return Trace(
        version=version,
        tracked=_config(raw["config"]),
        events=_events(raw["events"]),
        index=_index(raw["index"]),
        pod_lifecycles=_lifecycles(raw["pod_lifecycles"]),
    )


def _map(value: object, path: str) -> dict[object, object]:
    if not isinstance(value, dict):
        raise TraceFormatError(f"{path}: expected a map, got {type(value).__name__}")
    return value


def _object(value: object, path: str) -> JSONObject:
    """A Kubernetes object of the trace: a map of names (msgpack's strings) to JSON values."""
    if not all(isinstance(k, str) for k in _map(value, path)):
        raise TraceFormatError(f"{path}: expected an object, whose keys are strings")
    return cast(JSONObject, value)


def _list(value: object, path: str) -> list[object]:
    if not isinstance(value, list):
        raise TraceFormatError(f"{path}: expected an array, got {type(value).__name__}")
    return value


def _int(value: object, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TraceFormatError(f"{path}: expected an integer, got {type(value).__name__}")
    return value


def _gvk(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise TraceFormatError(f"{path}: expected a kind string, got {type(value).__name__}")
    try:
        api_version, kind = split_gvk(value)
    except ValueError as e:
        raise TraceFormatError(f"{path}: {e}") from None
    return f"{api_version}.{kind}"


def _config(value: object) -> dict[str, TrackedObject]:
    config = _map(value, "config")
    tracked: dict[str, TrackedObject] = {}
    for key, entry in _map(config.get("trackedObjects") or {}, "config.trackedObjects").items():
        path = f"config.trackedObjects[{key!r}]"
        gvk = _gvk(key, path)
        entry = _map(entry or {}, path)
        paths = entry.get("podSpecTemplatePaths")
        if paths is None and entry.get("podSpecTemplatePath") is not None:
            paths = [entry["podSpecTemplatePath"]]  # the deprecated singular
        if not paths:
            paths = list(POD_SPEC_TEMPLATE_PATHS.get(gvk, ()))
        tracked[gvk] = TrackedObject(
            pod_spec_template_paths=tuple(str(p) for p in _list(paths, path)),
            track_lifecycle=bool(entry.get("trackLifecycle", False)),
            skip_owned=bool(entry.get("skipOwned", False)),
        )
    return tracked


def _objects(value: object, path: str) -> list[JSONObject]:
    out = []
    for i, obj in enumerate(_list(value if value is not None else [], path)):
        out.append(_object(obj, f"{path}[{i}]"))
    return out


def _events(value: object) -> list[TraceEvent]:
    events = []
    for i, raw in enumerate(_list(value, "events")):
        path = f"events[{i}]"
        event = _map(raw, path)
        events.append(
            TraceEvent(
                ts=_int(event.get("ts"), f"{path}.ts"),
                applied=_objects(event.get("applied_objs"), f"{path}.applied_objs"),
                deleted=_objects(event.get("deleted_objs"), f"{path}.deleted_objs"),
            )
        )
    return events


def _index(value: object) -> dict[str, dict[str, int]]:
    index: dict[str, dict[str, int]] = {}
    for key, objects in _map(value, "index").items():
        path = f"index[{key!r}]"
        index[_gvk(key, path)] = {
            str(name): _int(h, f"{path}[{name!r}]") for name, h in _map(objects, path).items()
        }
    return index


def _lifecycle(value: object, path: str) -> Lifecycle:
    if value == "Empty":
        return Lifecycle()
    entry = _map(value, path)
    if "Running" in entry:
        return Lifecycle(start=_int(entry["Running"], f"{path}.Running"))
    if "Finished" in entry:
        bounds = _list(entry["Finished"], f"{path}.Finished")
        if len(bounds) != 2:
            raise TraceFormatError(f"{path}.Finished: expected [start, end]")
        return Lifecycle(
            start=_int(bounds[0], f"{path}.Finished[0]"), end=_int(bounds[1], f"{path}.Finished[1]")
        )
    raise TraceFormatError(f"{path}: expected Empty, Running or Finished")


def _lifecycles(value: object) -> dict[OwnerKey, dict[int, list[Lifecycle]]]:
    if isinstance(value, dict):
        pairs: list[tuple[object, object]] = list(value.items())
    elif isinstance(value, _Pairs):
        pairs = value
    else:
        raise TraceFormatError("pod_lifecycles: expected a map")
    out: dict[OwnerKey, dict[int, list[Lifecycle]]] = {}
    for n, (key, by_hash) in enumerate(pairs):
        path = f"pod_lifecycles[{n}]"
        owner = _list(key, f"{path} key")
        if len(owner) != 2 or not isinstance(owner[1], str):
            raise TraceFormatError(f"{path} key: expected [gvk, namespace/name]")
        lifecycles: dict[int, list[Lifecycle]] = {}
        for h, items in _map(by_hash, path).items():
            hpath = f"{path}[{h!r}]"
            lifecycles[_int(h, hpath)] = [
                _lifecycle(item, f"{hpath}[{i}]") for i, item in enumerate(_list(items, hpath))
            ]
        out[(_gvk(owner[0], f"{path} key"), owner[1])] = lifecycles
    return out


# ------------------------------------------------------------------ writing


def _lifecycle_out(lc: Lifecycle) -> JSON:
    if lc.start is None:
        return "Empty"
    if lc.end is None:
        return {"Running": lc.start}
    return {"Finished": [lc.start, lc.end]}


def _tracked_out(entry: TrackedObject) -> JSONObject:
    out: JSONObject = {"podSpecTemplatePaths": list(entry.pod_spec_template_paths)}
    if entry.track_lifecycle:  # serde skips false ones
        out["trackLifecycle"] = True
    if entry.skip_owned:
        out["skipOwned"] = True
    return out


def write(trace: Trace) -> bytes:
    """The trace as SimKube's msgpack (times in whole seconds, as SimKube's i64 `ts`)."""
    doc = {
        "version": trace.version,
        "config": {"trackedObjects": {k: _tracked_out(v) for k, v in trace.tracked.items()}},
        "events": [
            {"ts": int(e.ts), "applied_objs": e.applied, "deleted_objs": e.deleted}
            for e in trace.events
        ],
        "index": trace.index,
        "pod_lifecycles": {
            owner: {h: [_lifecycle_out(lc) for lc in lcs] for h, lcs in by_hash.items()}
            for owner, by_hash in trace.pod_lifecycles.items()
        },
    }
    data: bytes = msgpack.packb(doc, use_bin_type=True)
    return data
