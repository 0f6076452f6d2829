"""What a replay sees of its cluster: every pod, node, ReplicaSet and Preempted event through
watches (a list, then a watch from its resourceVersion, resumed after an interruption), kept
as the few facts the report needs (`report.py` computes from them). The replay's one
recorder: its watches also feed the replay's picture (a kemu.timeline Timeline).

Times are the cluster's (virtual) clock, dated as kemu.timeline.dating dates them (the one
way, shared with the pictures): from the objects themselves wherever they carry one (a pod's
creationTimestamp, its binding, its DisruptionTarget condition, a graceful deletion's
deletionTimestamp, a node's creationTimestamp, a Preempted event's time); what carries none
(a removal without a deletionTimestamp) is the cluster's time when the watch delivered it
(`now`, kemu.testing.cluster_time.ClusterClock), which may be later by one jump of the clock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, TypeVar

import anyio
from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.client.interface import ADDED, BOOKMARK, DELETED, ApiClient, WatchEvent
from kemu.machinery.errors import ApiError, Gone, Timeout, Unavailable
from kemu.timeline import dating
from kemu.timeline.model import (
    NODE_GROUP_LABEL,
    PREEMPTION_BY_KUBE_SCHEDULER,
    PREEMPTION_BY_SCHEDULER,
    Timeline,
)

logger = logging.getLogger(__name__)

_PREEMPTION_REASONS: Final = (PREEMPTION_BY_SCHEDULER, PREEMPTION_BY_KUBE_SCHEDULER)
M = TypeVar("M", bound=Message)


@dataclass
class PodRecord:
    key: str
    """namespace/name"""
    uid: str
    created: float
    created_rv: int
    owner_kind: str = ""
    owner_name: str = ""
    node: str = ""
    bound: float | None = None
    deleted: float | None = None
    phase: str = ""
    nominated: list[str] = field(default_factory=list)
    """The nominatedNodeName values it went through, in order ("" when cleared)."""
    preempted: float | None = None
    """When the scheduler preempted it (its DisruptionTarget condition)."""
    evicted: float | None = None
    """When it was evicted otherwise (eviction API, taint manager)."""
    evicted_reason: str = ""


@dataclass
class NodeRecord:
    name: str
    group: str
    created: float
    deleted: float | None = None


@dataclass
class Preemption:
    at: float
    preemptor_uid: str
    preemptor: str
    node: str
    victims: list[str] = field(default_factory=list)


@dataclass
class Observed:
    pods: dict[str, PodRecord] = field(default_factory=dict)
    """By uid."""
    nodes: dict[str, NodeRecord] = field(default_factory=dict)
    replica_set_owners: dict[str, tuple[str, str]] = field(default_factory=dict)
    """namespace/name of a ReplicaSet -> (kind, name) of its owner."""
    preemptions: dict[tuple[str, str], Preemption] = field(default_factory=dict)
    """By (preemptor uid, node)."""
    timeline: Timeline | None = None
    """The run's picture, fed with every change of a pod, a node or an Event as well."""

    def pod(self, pod: types_pb2.Pod, event_type: str, now: float) -> None:
        if self.timeline is not None:
            if event_type == DELETED:
                self.timeline.pod_deleted(pod, now)
            else:
                self.timeline.pod_seen(pod, now)
        meta = pod.metadata
        rec = self.pods.get(meta.uid)
        if rec is None:
            created = dating.created(meta) or now
            rec = PodRecord(
                key=f"{meta.namespace}/{meta.name}",
                uid=meta.uid,
                created=created,
                created_rv=int(meta.resource_version or 0),
            )
            for ref in meta.owner_references:
                if ref.controller:
                    rec.owner_kind, rec.owner_name = ref.kind, ref.name
            self.pods[meta.uid] = rec
        if pod.spec.node_name:
            rec.node = pod.spec.node_name
        if pod.spec.node_name and rec.bound is None:
            rec.bound = dating.bound(pod) or now
        rec.phase = pod.status.phase
        nnn = pod.status.nominated_node_name
        if nnn != (rec.nominated[-1] if rec.nominated else ""):
            rec.nominated.append(nnn)
        disrupted = dating.disruption(pod)
        if disrupted is not None:
            reason, at = disrupted[0], disrupted[1] or now
            if reason in _PREEMPTION_REASONS:
                rec.preempted = rec.preempted or at
            elif rec.evicted is None:
                rec.evicted, rec.evicted_reason = at, reason
        if event_type == DELETED and rec.deleted is None:
            rec.deleted = dating.removed(meta, now, rec.bound or rec.created)

    def node(self, node: types_pb2.Node, event_type: str, now: float) -> None:
        if self.timeline is not None:
            if event_type == DELETED:
                self.timeline.node_deleted(node, now)
            else:
                self.timeline.node_seen(node, now)
        rec = self.nodes.get(node.metadata.name)
        if rec is None or (rec.deleted is not None and event_type == ADDED):
            rec = NodeRecord(
                name=node.metadata.name,
                group=node.metadata.labels.get(NODE_GROUP_LABEL, ""),
                created=dating.created(node.metadata) or now,
            )
            self.nodes[node.metadata.name] = rec
        if event_type == DELETED:
            rec.deleted = dating.removed(node.metadata, now, rec.created)

    def replica_set(self, rs: types_pb2.ReplicaSet, event_type: str, now: float) -> None:
        for ref in rs.metadata.owner_references:
            if ref.controller:
                key = f"{rs.metadata.namespace}/{rs.metadata.name}"
                self.replica_set_owners[key] = (ref.kind, ref.name)

    def event(self, ev: types_pb2.Event, event_type: str, now: float) -> None:
        if self.timeline is not None and event_type != DELETED:
            self.timeline.event_seen(ev, now)
        if ev.reason != "Preempted" or event_type == DELETED:
            return
        # "Preempted by pod <uid> on node <node>" (upstream's message)
        words = ev.message.split()
        if len(words) < 7 or words[:3] != ["Preempted", "by", "pod"]:
            return
        uid, node = words[3], words[-1]
        at = dating.seconds(ev.first_timestamp) or dating.event_occurred(ev) or now
        preemptor = f"{ev.related.namespace}/{ev.related.name}" if ev.related.name else uid
        entry = self.preemptions.setdefault(
            (uid, node), Preemption(at=at, preemptor_uid=uid, preemptor=preemptor, node=node)
        )
        victim = f"{ev.involved_object.namespace}/{ev.involved_object.name}"
        if victim not in entry.victims:
            entry.victims.append(victim)
        entry.at = min(entry.at, at)

    def owner_of(self, rec: PodRecord) -> str:
        """ "Kind/namespace/name" of what made the pod (a Deployment through its
        ReplicaSet), "" for a bare pod."""
        if not rec.owner_kind:
            return ""
        namespace = rec.key.split("/", 1)[0]
        kind, name = rec.owner_kind, rec.owner_name
        if kind == "ReplicaSet":
            kind, name = self.replica_set_owners.get(f"{namespace}/{name}", (kind, name))
        return f"{kind}/{namespace}/{name}"


_RESUMABLE: Final = (Gone, Timeout, Unavailable)


async def follow(
    client: ApiClient,
    kind: type[M],
    handle: Callable[[M, str, float], None],
    now: Callable[[], float],
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Lists `kind` (every namespace) and watches it from there until cancelled, resuming
    from the last resourceVersion (relisting after Gone); started once listed. `handle`
    gets each object, its event type and the cluster's time (`now`: a ClusterClock's) when it
    was delivered."""
    started = False
    resource_version = ""
    while True:
        if not resource_version:
            listed = await client.list_all(kind)
            listed_at = now()
            for obj in listed.items:
                handle(obj, ADDED, listed_at)
            resource_version = listed.resource_version
            if not started:
                started = True
                task_status.started()
        try:
            async with client.watch(
                kind, resource_version=resource_version, allow_watch_bookmarks=True
            ) as events:
                event: WatchEvent[M]
                async for event in events:
                    rv = event.object.metadata.resource_version  # type: ignore[attr-defined]
                    if rv:
                        resource_version = rv
                    if event.type == BOOKMARK:
                        continue
                    handle(event.object, event.type, now())
        except Gone:
            resource_version = ""
        except _RESUMABLE as e:
            logger.info("%s watch interrupted: %s", kind.__name__, e)
            await anyio.sleep(0.1)
        except ApiError as e:
            logger.warning("%s watch failed: %s; watching again", kind.__name__, e)
            await anyio.sleep(0.5)
