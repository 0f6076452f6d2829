"""A trace's objects as kemu objects: which kinds kemu runs, what is stripped before a replay
applies them, and the fields kemu does not model.

An object is read with fieldValidation's Ignore (convert.UnknownFields): a field kemu does not
have is dropped and counted, never a refusal of the object (the apiserver would accept it
upstream). What the recorded cluster's servers and controllers wrote is stripped first, as
SimKube's tracer does: status (a Node's is kept: it is its capacity), the server-set metadata
(uid, resourceVersion, ownerReferences, ...), a pod's spec.nodeName (its scheduling in the
recorded cluster is what the replay finds anew) and spec.priority (admission computes it from
the priority class, and refuses a pod whose value differs from it).

Pod lifecycles become the kubelet's simulated run (`kubelet.kemu.io/run-duration`): a bare
pod's own finished lifecycle, and for a Job, CronJob or StatefulSet the first finished
lifecycle of its pods on its template (kemu's kubelet runs every pod of a template alike).
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from dataclasses import dataclass
from typing import Final, TypedDict

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery import convert, kinds
from kemu.machinery.errors import ApiError
from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.machinery.resources import pod_requests
from kemu.trace.model import POD_GVK, Trace, gvk_of, ns_name

RUN_DURATION: Final = "kubelet.kemu.io/run-duration"
_SERVER_METADATA: Final = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "ownerReferences",
    "selfLink",
    "finalizers",
)
_TEMPLATE_PATH: Final[dict[str, tuple[str, ...]]] = {
    # where a lifecycle's duration goes, per owner kind kemu runs
    "batch/v1.Job": ("spec", "template"),
    "batch/v1.CronJob": ("spec", "jobTemplate", "spec", "template"),
    "apps/v1.StatefulSet": ("spec", "template"),
}
_INDEX: Final = re.compile(r"\[\d+\]")
_UNKNOWN: Final = re.compile(r'^unknown field "(.*)"$')


def kind_for(gvk: str) -> kinds.Kind | None:
    """The kind kemu serves under that apiVersion, if it does."""
    api_version, _, kind_name = gvk.rpartition(".")
    kind = kinds.BY_KIND.get(kind_name)
    if kind is None or kind.api_version != api_version:
        return None
    return kind


@dataclass(frozen=True)
class Prepared:
    kind: kinds.Kind
    obj: Message
    dropped: tuple[str, ...]
    """The fields kemu does not model, as paths without indices ("spec.template.spec.hostname")."""

    @property
    def namespace(self) -> str:
        return str(self.obj.metadata.namespace)  # type: ignore[attr-defined]

    @property
    def name(self) -> str:
        return str(self.obj.metadata.name)  # type: ignore[attr-defined]


class UnsupportedEntry(TypedDict):
    """The report's `unsupported`: kinds and fields skipped, with counts."""

    kinds: dict[str, int]
    fields: dict[str, int]


@dataclass
class Unsupported:
    """What a replay skipped: kinds kemu does not run and fields it does not model, with
    counts (the report's `unsupported`)."""

    kinds: Counter[str]
    fields: Counter[str]

    def __init__(self) -> None:
        self.kinds = Counter()
        self.fields = Counter()

    def as_dict(self) -> UnsupportedEntry:
        return {
            "kinds": dict(sorted(self.kinds.items())),
            "fields": dict(sorted(self.fields.items())),
        }


def sanitized(obj: JSONObject) -> JSONObject:
    """The object without what the recorded cluster's servers wrote (a deep copy)."""
    out = copy.deepcopy(obj)
    gvk = gvk_of(out)
    if gvk != "v1.Node":
        out.pop("status", None)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        for key in _SERVER_METADATA:
            meta.pop(key, None)
    spec = out.get("spec")
    if gvk == POD_GVK and isinstance(spec, dict):
        spec.pop("nodeName", None)
        spec.pop("priority", None)
    return out


def prepare(obj: JSONObject, *, run_duration: int | None = None) -> Prepared | None:
    """The trace's object as the kemu object a replay applies, or None if kemu does not run
    its kind. Invalid (kemu.machinery.errors) if a field it models has a bad value.
    `run_duration`: seconds the object's pods run (the lifecycle), set on the pod or the
    template."""
    gvk = gvk_of(obj)
    kind = kind_for(gvk)
    if kind is None:
        return None
    data = sanitized(obj)
    if run_duration is not None:
        _annotate_run(data, gvk, run_duration)
    unknown = convert.UnknownFields()
    message = convert.from_dict(kind, data, unknown)
    dropped = []
    for found in unknown.found:
        m = _UNKNOWN.match(found)
        dropped.append(_INDEX.sub("[]", m.group(1) if m else found))
    return Prepared(kind, message, tuple(dropped))


def _annotate_run(data: JSONObject, gvk: str, seconds: int) -> None:
    if gvk != POD_GVK and gvk not in _TEMPLATE_PATH:
        return
    target: JSON = data
    for step in _TEMPLATE_PATH.get(gvk, ()):  # (a pod is its own template)
        target = target.setdefault(step, {}) if isinstance(target, dict) else None
    if not isinstance(target, dict):
        return
    meta = target.setdefault("metadata", {})
    if isinstance(meta, dict):
        annotations = meta.get("annotations")
        if not isinstance(annotations, dict):
            annotations = {}
        annotations.setdefault(RUN_DURATION, f"{max(seconds, 0)}s")
        meta["annotations"] = annotations


def run_duration(trace: Trace, obj: JSONObject) -> int | None:
    """How long the object's pods ran in the recorded cluster, from the trace's lifecycles:
    a bare pod's own, a Job's first finished pod's; None when none finished."""
    gvk = gvk_of(obj)
    if gvk != POD_GVK and gvk not in _TEMPLATE_PATH:
        return None
    for lifecycle in trace.lifecycles_of(gvk, ns_name(obj)):
        if lifecycle.duration is not None:
            return lifecycle.duration
    return None


def key_of(kind: kinds.Kind, namespace: str, name: str) -> str:
    """ "Kind/namespace/name" ("Kind/name" cluster-scoped): how reports name objects."""
    return f"{kind.kind}/{namespace}/{name}" if kind.namespaced else f"{kind.kind}/{name}"


def _demand(prepared: Prepared) -> tuple[int, types_pb2.PodSpec | None]:
    """How many pods the object asks for, and their spec (DaemonSets: none counted)."""
    obj = prepared.obj
    if isinstance(obj, types_pb2.Pod):
        return 1, obj.spec
    if isinstance(obj, types_pb2.Deployment | types_pb2.ReplicaSet | types_pb2.StatefulSet):
        return (obj.spec.replicas if obj.spec.HasField("replicas") else 1), obj.spec.template.spec
    if isinstance(obj, types_pb2.Job):
        return (
            obj.spec.parallelism if obj.spec.HasField("parallelism") else 1
        ), obj.spec.template.spec
    if isinstance(obj, types_pb2.CronJob):  # one Job at a time counted (Allow may run more)
        job = obj.spec.job_template.spec
        return (job.parallelism if job.HasField("parallelism") else 1), job.template.spec
    return 0, None


def peak_demand(trace: Trace) -> tuple[dict[str, int], int]:
    """The most the trace's objects ask for at once: the requests (kemu's integers: milli-cpu,
    bytes) and the pods, over its events (every pod counted until its object is deleted,
    finished or not: an upper bound)."""
    current: dict[str, tuple[int, dict[str, int]]] = {}
    peak: dict[str, int] = {}
    peak_pods = 0
    for event in trace.events:
        for obj in event.applied:
            try:
                prepared = prepare(obj)
            except ApiError:
                continue
            if prepared is None:
                continue
            count, spec = _demand(prepared)
            requests = {} if spec is None else pod_requests(types_pb2.Pod(spec=spec))
            current[f"{gvk_of(obj)} {ns_name(obj)}"] = (count, dict(requests))
        for obj in event.deleted:
            current.pop(f"{gvk_of(obj)} {ns_name(obj)}", None)
        totals: dict[str, int] = {}
        for count, requests in current.values():
            for resource, amount in requests.items():
                totals[resource] = totals.get(resource, 0) + count * amount
        for resource, amount in totals.items():
            peak[resource] = max(peak.get(resource, 0), amount)
        peak_pods = max(peak_pods, sum(count for count, _ in current.values()))
    return peak, peak_pods
