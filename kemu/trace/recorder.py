"""Recording what a running kemu cluster does as a SimKube trace (`python -m kemu.trace
record`), so that it replays in kemu and in SimKube.

As SimKube's tracer: the tracked kinds (by default Deployments, StatefulSets, DaemonSets,
Jobs, CronJobs and bare pods, `skipOwned`) are listed, then watched; the objects that exist
at the start are applied at the first instant (after SimKube's empty first event), a new
object or a change of its spec (its metadata.generation) is applied at the cluster's time
the watch delivered it, a deletion deleted. Objects are written as SimKube's tracer
sanitizes them: apiVersion, kind, metadata name, namespace, labels and annotations, spec.
Kinds the cluster does not serve stay in the config, with nothing recorded.

Pod lifecycles (SimKube's `pod_lifecycles`) are kept for the pods of tracked objects and
bare pods: the earliest container start and, once every container has terminated, the
latest end, from the kubelet's container statuses; by owner (a Deployment through its
ReplicaSet, a Job through its CronJob), in the order the pods were created.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

import anyio
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.client.interface import ADDED, DELETED, MODIFIED, ApiClient
from kemu.machinery import convert, kinds
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.keys import object_meta
from kemu.trace.model import (
    POD_GVK,
    POD_SPEC_TEMPLATE_PATHS,
    Lifecycle,
    Trace,
    TraceEvent,
    TrackedObject,
    gvk_of,
    ns_name,
    stable_hash,
)
from kemu.trace.observe import follow

logger = logging.getLogger(__name__)

DEFAULT_TRACKED: Final = (
    "apps/v1.Deployment",
    "apps/v1.StatefulSet",
    "apps/v1.DaemonSet",
    "batch/v1.Job",
    "batch/v1.CronJob",
    POD_GVK,
)
_GROUPS: Final = {
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "ReplicaSet": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
}


def tracked_gvk(name: str) -> str:
    """`--track` value -> the kind as SimKube names it: "Deployment", "deployments",
    "apps/v1.Deployment" -> "apps/v1.Deployment"; ValueError for a kind kemu cannot
    name."""
    if "." in name and "/" in name.split(".")[0] or name.startswith("v1."):
        return name
    try:
        kind = kinds.lookup(name)
    except Exception:
        singular = name.rstrip("s").lower()
        for known, group in _GROUPS.items():
            if known.lower() == singular or known.lower() == name.lower():
                return f"{group}.{known}"
        raise ValueError(f"unknown kind {name!r}") from None
    return f"{kind.api_version}.{kind.kind}"


def sanitize(obj: Message) -> JSONObject:
    """The object as SimKube's tracer keeps it."""
    data = convert.to_dict(obj)
    meta = m if isinstance(m := data.get("metadata"), dict) else {}
    kept: JSONObject = {
        k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta
    }
    out: JSONObject = {"apiVersion": data.get("apiVersion"), "kind": data.get("kind")}
    out["metadata"] = kept
    if "spec" in data:
        out["spec"] = data["spec"]
    return out


def _seconds(ts: Timestamp) -> int | None:
    if ts.seconds == 0:
        return None
    return int(ts.seconds)


def lifecycle_of(pod: types_pb2.Pod) -> Lifecycle:
    """SimKube's PodLifecycleData.new_for: the earliest container start; the latest end once
    every container has terminated."""
    start: int | None = None
    end: int | None = None
    terminated = 0
    statuses = list(pod.status.init_container_statuses) + list(pod.status.container_statuses)
    for status in statuses:
        state = status.state
        began = _seconds(state.running.started_at) if state.HasField("running") else None
        finished = None
        if state.HasField("terminated"):
            began = _seconds(state.terminated.started_at)
            finished = _seconds(state.terminated.finished_at)
            if status in pod.status.container_statuses:
                terminated += 1
        if began is not None:
            start = began if start is None else min(start, began)
        if finished is not None:
            end = finished if end is None else max(end, finished)
    if terminated != len(pod.spec.containers):
        end = None
    return Lifecycle(start, end) if start is not None else Lifecycle()


@dataclass
class _PodSeen:
    owner: tuple[str, str]
    spec_hash: int
    created: tuple[int, int]
    lifecycle: Lifecycle = field(default_factory=Lifecycle)


class Recorder:
    """Builds a Trace from the watches' deliveries; `trace()` is what was recorded so far."""

    def __init__(self, tracked: Sequence[str]) -> None:
        self.tracked = {gvk: self._config(gvk) for gvk in tracked}
        self.events: list[TraceEvent] = []
        self.index: dict[str, dict[str, int]] = {}
        self._generations: dict[tuple[str, str], int] = {}
        self._owners: dict[str, tuple[str, str]] = {}
        """uid of a ReplicaSet or Job -> the tracked owner (gvk, namespace/name) it is of"""
        self._uids: dict[str, tuple[str, str]] = {}
        """uid of a tracked object -> (gvk, namespace/name)"""
        self._pods: dict[str, _PodSeen] = {}

    @staticmethod
    def _config(gvk: str) -> TrackedObject:
        paths = POD_SPEC_TEMPLATE_PATHS.get(gvk, ())
        bare = gvk == POD_GVK
        return TrackedObject(paths, track_lifecycle=True, skip_owned=bare)

    def _event(self, ts: float) -> TraceEvent:
        ts = int(ts)
        if not self.events or self.events[-1].ts != ts:
            self.events.append(TraceEvent(ts=ts))
        return self.events[-1]

    def start(self, ts: float) -> None:
        """SimKube's first event, empty, at the start; the objects that exist then go in a
        second event at the same instant (as SimKube's tracer writes them)."""
        self.events += [TraceEvent(ts=int(ts)), TraceEvent(ts=int(ts))]

    def object(self, obj: Message, event_type: str, ts: float) -> None:
        data = convert.to_dict(obj)
        gvk = gvk_of(data)
        if gvk not in self.tracked:
            return
        meta = object_meta(obj)
        if gvk == POD_GVK and any(r.controller for r in meta.owner_references):
            return  # skipOwned
        key = (gvk, ns_name(data))
        self._uids[meta.uid] = key
        sanitized = sanitize(obj)
        if event_type == DELETED:
            self._generations.pop(key, None)
            self._event(ts).deleted.append(sanitized)
            return
        generation = int(meta.generation)
        if event_type == MODIFIED and self._generations.get(key) == generation:
            return
        self._generations[key] = generation
        self.index.setdefault(gvk, {})[key[1]] = stable_hash(sanitized)
        self._event(ts).applied.append(sanitized)

    def reconcile(self, message: type[Message], listed: Sequence[Message], ts: float) -> None:
        """The tracked objects of one kind as a list shows them at `ts`: each one new or
        changed applied, each one recorded but gone deleted."""
        kind = kinds.kind_of(message())
        gvk = f"{kind.api_version}.{kind.kind}"
        present = set()
        for obj in listed:
            meta = object_meta(obj)
            present.add((gvk, f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name))
            self.object(obj, MODIFIED, ts)
        for key in [k for k in self._generations if k[0] == gvk and k not in present]:
            self._generations.pop(key)
            namespace, _, name = key[1].rpartition("/")
            metadata: JSONObject = {"name": name}
            if namespace:
                metadata["namespace"] = namespace
            gone: JSONObject = {
                "apiVersion": kind.api_version,
                "kind": kind.kind,
                "metadata": metadata,
            }
            self._event(ts).deleted.append(gone)

    def intermediate(self, obj: Message, event_type: str, ts: float | None) -> None:
        """A ReplicaSet or a Job: which tracked object its pods belong to."""
        meta = object_meta(obj)
        for ref in meta.owner_references:
            if ref.controller and ref.uid in self._uids:
                self._owners[meta.uid] = self._uids[ref.uid]
        data_gvk = f"{kinds.kind_of(obj).api_version}.{kinds.kind_of(obj).kind}"
        if data_gvk in self.tracked:
            self._uids.setdefault(meta.uid, (data_gvk, f"{meta.namespace}/{meta.name}"))

    def pod(self, pod: types_pb2.Pod, event_type: str, ts: float | None) -> None:
        meta = pod.metadata
        seen = self._pods.get(meta.uid)
        if seen is None:
            owner = self._pod_owner(pod)
            if owner is None:
                return
            spec_hash = stable_hash(convert.message_to_dict(pod.spec)) if owner[0] != POD_GVK else 0
            created = (int(meta.creation_timestamp.seconds), int(meta.resource_version or 0))
            seen = self._pods[meta.uid] = _PodSeen(owner, spec_hash, created)
        lifecycle = lifecycle_of(pod)
        if lifecycle.start is not None:
            seen.lifecycle = lifecycle

    def _pod_owner(self, pod: types_pb2.Pod) -> tuple[str, str] | None:
        refs = [r for r in pod.metadata.owner_references if r.controller]
        if not refs:
            if POD_GVK in self.tracked:
                return POD_GVK, f"{pod.metadata.namespace}/{pod.metadata.name}"
            return None
        uid = refs[0].uid
        return self._owners.get(uid) or self._uids.get(uid)

    def trace(self) -> Trace:
        lifecycles: dict[tuple[str, str], dict[int, list[Lifecycle]]] = {}
        for seen in sorted(self._pods.values(), key=lambda s: s.created):
            by_hash = lifecycles.setdefault(seen.owner, {})
            by_hash.setdefault(seen.spec_hash, []).append(seen.lifecycle)
        return Trace(
            tracked=dict(self.tracked),
            events=list(self.events),
            index={k: dict(v) for k, v in self.index.items()},
            pod_lifecycles=lifecycles,
        )


async def record(
    client: ApiClient,
    recorder: Recorder,
    *,
    duration: float | None,
    stop: anyio.Event,
    on_started: Callable[[float], None] = lambda _: None,
) -> None:
    """Records until `duration` seconds of the cluster's time have passed (None: forever)
    or `stop` is set; `on_started` is told the cluster's time once every watch runs."""

    async def now() -> float:
        return (await client.clock_status()).now

    start = await now()
    recorder.start(start)
    served: list[type[Message]] = []
    for gvk in recorder.tracked:
        kind_name = gvk.rpartition(".")[2]
        kind = kinds.BY_KIND.get(kind_name)
        if kind is not None and f"{kind.api_version}.{kind.kind}" == gvk:
            served.append(kind.message)
        else:
            logger.info("%s: not served by kemu; tracked, nothing recorded", gvk)

    def tracked_handler(obj: Message, event_type: str, ts: float | None) -> None:
        recorder.object(obj, event_type, ts if ts is not None else start)

    async with anyio.create_task_group() as tg:
        for message in served:
            if message is not types_pb2.Pod:
                await tg.start(_follow_timed, client, message, tracked_handler, now)
        for message in (types_pb2.ReplicaSet, types_pb2.Job):
            await tg.start(follow, client, message, recorder.intermediate, now)
        await tg.start(follow, client, types_pb2.Pod, recorder.pod, now)
        if types_pb2.Pod in served:
            await tg.start(_follow_timed, client, types_pb2.Pod, tracked_handler, now)
        on_started(start)
        if duration is None:
            await stop.wait()
        else:
            # the cluster's time, virtual or real, polled (a virtual clock may jump)
            while not stop.is_set() and await now() < start + duration:
                with anyio.move_on_after(0.2):
                    await stop.wait()
        tg.cancel_scope.cancel()
    await _catch_up(client, recorder, served, await now())


async def _catch_up(
    client: ApiClient, recorder: Recorder, served: Sequence[type[Message]], now: float
) -> None:
    """What the watches had not delivered yet when the recording stopped (the cluster does
    not wait for an outside watcher), from lists: changes and deletions of the tracked
    objects at `now`, and the pods' last lifecycles."""
    for owner in (types_pb2.ReplicaSet, types_pb2.Job):
        for obj in (await client.list_all(owner)).items:
            recorder.intermediate(obj, MODIFIED, now)
    for message in served:
        listed = (await client.list_all(message)).items
        recorder.reconcile(message, listed, now)
    for pod in (await client.list_all(types_pb2.Pod)).items:
        recorder.pod(pod, MODIFIED, now)


async def _follow_timed(
    client: ApiClient,
    kind: type[Message],
    handle: Callable[[Message, str, float | None], None],
    now: Callable[[], Awaitable[float]],
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """`follow`, with the cluster's time of every change (the trace's `ts`): the objects
    listed at the start at the start, each later one when the watch delivers it."""
    started = False
    pending: list[tuple[Message, str]] = []
    wake = anyio.Event()

    def collect(obj: Message, event_type: str, ts: float | None) -> None:
        if not started:
            handle(obj, ADDED, None)
            return
        pending.append((obj, event_type))
        wake.set()

    async with anyio.create_task_group() as tg:
        await tg.start(follow, client, kind, collect, now)
        started = True
        task_status.started()
        while True:
            await wake.wait()
            wake = anyio.Event()
            t = await now()
            batch, pending[:] = list(pending), []
            for obj, event_type in batch:
                handle(obj, event_type, t)
