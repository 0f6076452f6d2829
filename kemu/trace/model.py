"""A trace, as SimKube's trace format (version 2) holds it: the tracer's config (which kinds it
tracked), the events (at each instant, the objects applied and deleted), an index of the
objects, and the pods' lifecycles by owner. Readers of other formats (`kss`) produce the same
value; `simkube` reads and writes it as msgpack.

Kinds are named as SimKube names them, "group/version.Kind" ("v1.Pod" for the core group), and
objects as "namespace/name". Objects are Kubernetes JSON (`JSONObject`), as the trace holds
them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from kemu.machinery.jsonvalue import JSONObject

CURRENT_VERSION: Final = 2
"""SimKube's CURRENT_TRACE_FORMAT_VERSION."""

POD_GVK: Final = "v1.Pod"
_HASH_MASK: Final = (1 << 64) - 1

POD_SPEC_TEMPLATE_PATHS: Final[dict[str, tuple[str, ...]]] = {
    # SimKube's KNOWN_GVKS_METADATA: where each well-known kind keeps its pod template (its
    # normalize() refuses other paths for these kinds).
    "apps/v1.Deployment": ("/spec/template",),
    "apps/v1.StatefulSet": ("/spec/template",),
    "apps/v1.DaemonSet": ("/spec/template",),
    "apps/v1.ReplicaSet": ("/spec",),
    "batch/v1.Job": ("/spec/template",),
    "batch/v1.CronJob": ("/spec/jobTemplate/spec/template",),
    POD_GVK: ("",),
}


def stable_hash(value: object) -> int:
    """A u64 of the value's JSON (SimKube's index and pod hashes are opaque to a replay)."""
    digest = hashlib.sha256(json.dumps(value, sort_keys=True).encode()).digest()
    return int.from_bytes(digest[:8], "big") & _HASH_MASK


def gvk_of(obj: Mapping[str, object]) -> str:
    """An object's kind as SimKube names it: "apps/v1.Deployment", "v1.Pod"."""
    return f"{obj.get('apiVersion', '')}.{obj.get('kind', '')}"


def split_gvk(gvk: str) -> tuple[str, str]:
    """ "apps/v1.Deployment" -> ("apps/v1", "Deployment"); "/v1.Pod" (SimKube's older form)
    -> ("v1", "Pod"). ValueError if it has no kind."""
    api_version, dot, kind = gvk.rpartition(".")
    if not dot or not kind or not api_version:
        raise ValueError(f"invalid format for gvk: {gvk!r}")
    return api_version.removeprefix("/"), kind


def ns_name(obj: Mapping[str, object]) -> str:
    """ "namespace/name" ("name" for a cluster-scoped object), as SimKube keys objects."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    namespace = meta.get("namespace") or ""
    name = meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else str(name)


@dataclass(frozen=True)
class TrackedObject:
    """One kind's entry of the tracer config (SimKube's TrackedObjectConfig)."""

    pod_spec_template_paths: tuple[str, ...] = ()
    track_lifecycle: bool = False
    skip_owned: bool = False


@dataclass(frozen=True)
class Lifecycle:
    """When a pod ran (SimKube's PodLifecycleData): both None is Empty, a start alone Running,
    both Finished. Unix seconds."""

    start: int | None = None
    end: int | None = None

    @property
    def duration(self) -> int | None:
        """Seconds from start to end, for a finished pod."""
        if self.start is None or self.end is None:
            return None
        return self.end - self.start


@dataclass
class TraceEvent:
    """What changed at one instant `ts` (Unix seconds; SimKube's are whole seconds, other
    readers may give fractions)."""

    ts: float
    applied: list[JSONObject] = field(default_factory=list)
    deleted: list[JSONObject] = field(default_factory=list)


OwnerKey = tuple[str, str]
"""A pod owner: its kind (gvk) and "namespace/name"."""


@dataclass
class Trace:
    version: int = CURRENT_VERSION
    tracked: dict[str, TrackedObject] = field(default_factory=dict)
    events: list[TraceEvent] = field(default_factory=list)
    index: dict[str, dict[str, int]] = field(default_factory=dict)
    """By kind, by "namespace/name": SimKube's hash of the object (opaque here)."""
    pod_lifecycles: dict[OwnerKey, dict[int, list[Lifecycle]]] = field(default_factory=dict)
    """By owner, by pod-spec hash: the lifecycles of its pods in the order they were created."""

    @property
    def start(self) -> float | None:
        return self.events[0].ts if self.events else None

    @property
    def end(self) -> float | None:
        return self.events[-1].ts if self.events else None

    @property
    def span(self) -> float:
        """Seconds from the first event to the last."""
        if not self.events:
            return 0.0
        return self.events[-1].ts - self.events[0].ts

    def objects_applied(self) -> int:
        return sum(len(e.applied) for e in self.events)

    def objects_deleted(self) -> int:
        return sum(len(e.deleted) for e in self.events)

    def kinds(self) -> dict[str, int]:
        """Every kind applied, with how many times."""
        counts: dict[str, int] = {}
        for event in self.events:
            for obj in event.applied:
                gvk = gvk_of(obj)
                counts[gvk] = counts.get(gvk, 0) + 1
        return counts

    def namespaces(self) -> list[str]:
        """Every namespace an object of the trace is in, sorted."""
        found = {
            ns_name(obj).rpartition("/")[0]
            for event in self.events
            for obj in event.applied + event.deleted
        }
        return sorted(n for n in found if n)

    def lifecycles_of(self, gvk: str, owner: str) -> list[Lifecycle]:
        """Every lifecycle of the owner's pods, in creation order (hashes in the order
        stored)."""
        return [lc for lcs in self.pod_lifecycles.get((gvk, owner), {}).values() for lc in lcs]
