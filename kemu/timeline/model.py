"""The record a picture is drawn from: what happened to each pod and node of a run, and when.

Fed with API objects as a watch delivers them (kemu.timeline.record: informers' add, update
and delete; kemu.trace.replay: its observer's watches), on the cluster's clock: each change is
dated by the object where it carries the time (kemu.timeline.dating: creationTimestamp,
PodScheduled's and DisruptionTarget's lastTransitionTime, deletionTimestamp, the containers'
finishedAt, a node's Ready transition, an Event's lastTimestamp), else by the time the
recorder saw it (`at`, or the injected `clock`: the recorder's kemu.testing.cluster_time
ClusterClock), so a replay at rate max is drawn on its virtual time, not on when the changes
reached the recorder. Nothing is drawn before `start` (what existed when the record began is
drawn from there). Kept per pod (by uid): when it was created, its priority, every
nominatedNodeName span (set until changed or cleared, on the nominated node), its binding
(node and time), when it began terminating, finished (Succeeded or Failed) and was deleted,
and whether the scheduler preempted it (its DisruptionTarget condition, reason
PreemptionByScheduler or, before 1.27, PreemptionByKubeScheduler; or a Preempted event,
which also names the preemptor and the node). Per node (by name): the spans it existed and
those it was not Ready. Over time: the pending pods (not bound, not terminating, deleted or
finished) and the nodes, a sample at each change. Markers: faults and notes the driver adds
(`mark`), and the cluster autoscaler's scale-ups and scale-downs, read from its Events
(TriggeredScaleUp on the pods that triggered one; ScaleDown on a node it taints for removal,
ScaleDownEmpty when it removes an empty one, ScaleDown again when it removes a drained one).

Pure: no I/O, nothing but the API types and the machinery; kemu.timeline.render draws it.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.keys import object_key
from kemu.machinery.pod_strategy import TERMINAL_PHASES
from kemu.timeline import dating

# API-visible strings as their writers write them: a reader's copies, so that the record stays
# pure (tests/unit/timeline/test_model.py checks them against the writers' constants). The
# reasons of a preemption victim's DisruptionTarget condition (kemu.scheduling.preemption;
# PreemptionByKubeScheduler before 1.27), and the reasons of the Events of the scheduler's
# preemption executor, cluster-autoscaler's scale-up and its scale-down actuator.
PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"
PREEMPTION_BY_KUBE_SCHEDULER: Final = "PreemptionByKubeScheduler"
PREEMPTED: Final = "Preempted"
TRIGGERED_SCALE_UP: Final = "TriggeredScaleUp"
SCALE_DOWN: Final = "ScaleDown"
SCALE_DOWN_EMPTY: Final = "ScaleDownEmpty"
EVENT_REASONS: Final = frozenset({PREEMPTED, TRIGGERED_SCALE_UP, SCALE_DOWN, SCALE_DOWN_EMPTY})
"""The Events a timeline reads (kemu.timeline.record watches no others)."""
NODE_GROUP_LABEL: Final = "kemu.io/node-group"
"""The label the cloud puts on its nodes (cloud.config.NODE_GROUP_LABEL)."""

_PREEMPTED_BY: Final = re.compile(r"Preempted by pod (\S+) on node (\S+)")
_SCALE_UP: Final = re.compile(r"\{(\S+) (\d+)->(\d+)")
SCALE_UP_REPEAT: Final = 5.0
"""Seconds within which the same scale-up message is one scale-up: the autoscaler records
TriggeredScaleUp on every pod that triggered it."""


class MarkerKind(StrEnum):
    FAULT = "fault"
    """A fault the driver injected (kemu.chaos: a kill, a pause, a partition, ...)."""
    SCALE_UP = "scale-up"
    SCALE_DOWN = "scale-down"
    NOTE = "note"
    """Anything else a driver wants on the time axis (a phase of a benchmark)."""


@dataclass(frozen=True)
class Marker:
    kind: MarkerKind
    at: float
    label: str
    until: float | None = None
    """The end of a marker that lasts (a partition healed, a killed process restarted)."""


@dataclass
class Span:
    start: float
    end: float | None = None
    """None while it lasts (at the end of the run: up to the end)."""


@dataclass
class Nomination(Span):
    node: str = ""


@dataclass
class PodTrack:
    """One pod (one uid) over the run."""

    key: str
    """namespace/name."""
    uid: str
    priority: int
    seen: float
    """Its creation, or the record's start for a pod created before (`existed`)."""
    existed: bool = False
    """Created before the record's start."""
    nominations: list[Nomination] = field(default_factory=list)
    node: str = ""
    bound: float | None = None
    terminating: float | None = None
    finished: float | None = None
    phase: str = ""
    """Succeeded or Failed once finished."""
    deleted: float | None = None
    preempted: float | None = None
    preempted_by: str = ""
    """The preemptor's namespace/name, when its Preempted event was seen."""
    preempted_on: str = ""
    victims: list[tuple[float, str]] = field(default_factory=list)
    """The pods this one preempted (when, namespace/name), from their Preempted events."""
    group: str = ""
    """namespace/name of its pod group ("" for none): 1.36+'s spec.schedulingGroup, or
    1.35's spec.workloadRef as "<workload>/<pod group>" (issue #55)."""

    @property
    def gone(self) -> float | None:
        """When it stopped using its node: finished or deleted, whichever came first."""
        ends = [t for t in (self.finished, self.deleted) if t is not None]
        return min(ends) if ends else None

    def steps(self) -> list[tuple[float, str]]:
        """Its story: each step and when, in order."""
        out: list[tuple[float, str]] = [
            (self.seen, "there at the start" if self.existed else "created")
        ]
        for n in self.nominations:
            out.append((n.start, f"nominated to {n.node}"))
            if n.end is not None and n.end != self.bound:
                out.append((n.end, f"nomination to {n.node} cleared"))
        if self.bound is not None:
            out.append((self.bound, f"bound to {self.node}"))
        if self.preempted is not None:
            by = f" by {self.preempted_by}" if self.preempted_by else ""
            on = f" on {self.preempted_on}" if self.preempted_on else ""
            out.append((self.preempted, f"preempted{by}{on}"))
        out += [(t, f"preempted {victim}") for t, victim in self.victims]
        if self.terminating is not None:
            out.append((self.terminating, "terminating"))
        if self.finished is not None:
            out.append((self.finished, self.phase))
        if self.deleted is not None:
            out.append((self.deleted, "deleted"))
        return sorted(out, key=lambda s: s[0])


@dataclass
class NodeTrack:
    """One node name over the run: each time it existed, and when it was not Ready."""

    name: str
    group: str = ""
    """Its node group (the cloud's label), "" for a node of no group."""
    lives: list[Span] = field(default_factory=list)
    not_ready: list[Span] = field(default_factory=list)

    @property
    def live(self) -> bool:
        return bool(self.lives) and self.lives[-1].end is None


class Timeline:
    def __init__(self, title: str, clock: Callable[[], float] = time.time) -> None:
        """`clock`: the cluster's time (epoch seconds), for what the objects do not date
        (the wall clock is a real-time cluster's; the recorder gives the cluster's,
        `begin`). The origin (t=0 in the picture) and the start (nothing is drawn before it)
        are the clock's value now; a driver whose own t=0 comes later sets `origin`."""
        self.title = title
        self.clock = clock
        self.origin = self.start = clock()
        self.end: float | None = None
        self.notes: list[str] = []
        """Lines about the run shown under its title (the cluster's clock, the workload)."""
        self.facts: list[tuple[str, str]] = []
        """Figures of the run the driver measured (name, value), drawn as a table in its
        section (a replay's report)."""
        self.pods: dict[str, PodTrack] = {}
        """By uid, in the order first seen."""
        self.nodes: dict[str, NodeTrack] = {}
        """By name, in the order first seen."""
        self.markers: list[Marker] = []
        self.pending: list[tuple[float, int]] = [(self.origin, 0)]
        """(time, pods pending from then on), at each change."""
        self.node_count: list[tuple[float, int]] = [(self.origin, 0)]
        self._pending: set[str] = set()
        self._early: dict[str, tuple[float, str, str]] = {}
        """Preempted events seen before their victim: uid -> (time, preemptor uid, node)."""
        self._scale_ups: dict[str, float] = {}
        self._scale_downs: dict[str, int] = {}
        """Node -> the index of its scale-down marker, until a node of that name is added
        again (the Event of a drained node's removal comes after its deletion)."""
        self._event_counts: dict[str, int] = {}
        """Event uid -> the count seen: an occurrence is an Event new or counted again."""

    def begin(self, clock: Callable[[], float], at: float | None = None) -> None:
        """The record starts on `clock` (the recorder's: the cluster's) at `at` (default its
        now): origin and start there. Before anything is recorded."""
        assert not self.pods and not self.nodes and not self.markers, "already recording"
        self.clock = clock
        self.origin = self.start = clock() if at is None else at
        self.pending = [(self.origin, 0)]
        self.node_count = [(self.origin, 0)]

    def since_monotonic(self, t: float) -> float:
        """A time.monotonic() instant of this process (a driver's phase, a fault) on the
        timeline's clock: as many seconds before the clock's now (exact while the cluster's
        clock runs at the host's pace: real time, or virtual at rate 1)."""
        return self.clock() - (time.monotonic() - t)

    @property
    def first(self) -> float:
        """The earliest time recorded (the origin, or an observation before it)."""
        times = [self.origin]
        times += [p.seen for p in self.pods.values()]
        times += [n.lives[0].start for n in self.nodes.values() if n.lives]
        times += [m.at for m in self.markers]
        return min(times)

    def finish(self, at: float | None = None) -> None:
        """The run is over (now, or at `at`): what still lasts is drawn up to here."""
        self.end = self.clock() if at is None else at

    @property
    def last(self) -> float:
        """The end of the run, or the latest time recorded while it goes on."""
        if self.end is not None:
            return self.end
        times = [self.origin, self.pending[-1][0], self.node_count[-1][0]]
        times += [m.until if m.until is not None else m.at for m in self.markers]
        return max(times)

    # ------------------------------------------------------------ pods

    # Every observation takes `at`, the cluster's time the recorder saw the change (default
    # the clock's now); what the object dates is dated by it (kemu.timeline.dating).

    def pod_added(self, pod: types_pb2.Pod, at: float | None = None) -> None:
        self.pod_seen(pod, at)

    def pod_updated(self, old: types_pb2.Pod, new: types_pb2.Pod, at: float | None = None) -> None:
        seen = self._now(at)
        if old.metadata.uid != new.metadata.uid:
            # Deleted and created again under the same name between two versions seen.
            self.pod_deleted(old, seen)
        self.pod_seen(new, seen)

    def pod_seen(self, pod: types_pb2.Pod, at: float | None = None) -> None:
        """A version of a pod (new or changed)."""
        self._observe_pod(pod, self._now(at))

    def pod_deleted(self, pod: types_pb2.Pod, at: float | None = None) -> None:
        seen = self._now(at)
        track = self._observe_pod(pod, seen)
        if track.deleted is None:
            floor = max(t for t in (track.seen, track.bound, track.terminating) if t is not None)
            track.deleted = dating.removed(pod.metadata, seen, floor)
        self._close_nomination(track, track.deleted)
        self._set_pending(track, False, track.deleted)

    def _now(self, at: float | None) -> float:
        return self.clock() if at is None else at

    def _dated(self, t: float | None, seen: float, floor: float) -> float:
        """The object's time `t` if it has one, else `seen`; never before `floor`."""
        return max(seen if t is None else t, floor)

    def _observe_pod(self, pod: types_pb2.Pod, seen: float) -> PodTrack:
        uid = pod.metadata.uid
        track = self.pods.get(uid)
        if track is None:
            stamped = dating.created(pod.metadata)
            created = self._dated(stamped, seen, self.start)
            existed = stamped is not None and stamped < self.start
            track = PodTrack(
                object_key(pod),
                uid,
                pod.spec.priority,
                created,
                existed=existed,
                group=pod_group_of(pod),
            )
            self.pods[uid] = track
            early = self._early.pop(uid, None)
            if early is not None:
                self._preempted(track, *early)
        nominated = pod.status.nominated_node_name
        current = track.nominations[-1] if track.nominations else None
        if pod.spec.node_name and track.bound is None:
            track.bound = self._dated(dating.bound(pod), seen, track.seen)
            track.node = pod.spec.node_name
        if current is not None and current.end is None and current.node != nominated:
            # Cleared or moved: by the binding (KEP-5278's clearing) or when seen.
            current.end = max(track.bound if track.bound is not None else seen, current.start)
            current = None
        if nominated and track.bound is None and (current is None or current.end is not None):
            track.nominations.append(Nomination(max(seen, track.seen), node=nominated))
        if track.bound is not None:
            self._close_nomination(track, track.bound)
        if pod.metadata.HasField("deletion_timestamp") and track.terminating is None:
            requested = dating.deletion_requested(pod.metadata)
            track.terminating = self._dated(requested, seen, track.seen)
        if pod.status.phase in TERMINAL_PHASES and track.finished is None:
            track.finished = self._dated(dating.finished(pod), seen, track.bound or track.seen)
            track.phase = pod.status.phase
        disrupted = dating.disruption(pod)
        if (
            track.preempted is None
            and disrupted is not None
            and disrupted[0] in (PREEMPTION_BY_SCHEDULER, PREEMPTION_BY_KUBE_SCHEDULER)
        ):
            track.preempted = self._dated(disrupted[1], seen, track.seen)
        if track.bound is not None:
            self._set_pending(track, False, track.bound)
        else:
            gone = [t for t in (track.terminating, track.finished, track.deleted) if t is not None]
            if gone:
                self._set_pending(track, False, min(gone))
            else:
                self._set_pending(track, True, track.seen)
        return track

    @staticmethod
    def _close_nomination(track: PodTrack, t: float) -> None:
        if track.nominations and track.nominations[-1].end is None:
            track.nominations[-1].end = max(t, track.nominations[-1].start)

    def _set_pending(self, track: PodTrack, pending: bool, t: float) -> None:
        """The pod pending from `t` on, or no longer. The samples stay in order of time: a
        change dated before the latest sample (objects dated apart from when they were seen)
        is inserted in its place and the counts after it shifted."""
        before = len(self._pending)
        if pending:
            self._pending.add(track.uid)
        else:
            self._pending.discard(track.uid)
        delta = len(self._pending) - before
        if delta:
            _step(self.pending, t, delta)

    # ------------------------------------------------------------ nodes

    def node_added(self, node: types_pb2.Node, at: float | None = None) -> None:
        self.node_seen(node, at)

    def node_updated(
        self, old: types_pb2.Node, new: types_pb2.Node, at: float | None = None
    ) -> None:
        seen = self._now(at)
        if old.metadata.uid != new.metadata.uid:
            self.node_deleted(old, seen)
        self.node_seen(new, seen)

    def node_seen(self, node: types_pb2.Node, at: float | None = None) -> None:
        """A version of a node (new or changed)."""
        seen = self._now(at)
        name = node.metadata.name
        track = self.nodes.setdefault(name, NodeTrack(name))
        track.group = node.metadata.labels.get(NODE_GROUP_LABEL, track.group)
        born = not track.live
        if born:
            floor = (
                max(self.start, track.lives[-1].end or self.start) if track.lives else self.start
            )
            track.lives.append(Span(self._dated(dating.created(node.metadata), seen, floor)))
            self._count_nodes(track.lives[-1].start, 1)
            self._scale_downs.pop(name, None)  # a new node of that name: scaled down anew
        life = track.lives[-1].start
        ready, since = dating.node_ready(node)
        open_gap = (
            track.not_ready[-1] if track.not_ready and track.not_ready[-1].end is None else None
        )
        if not ready and open_gap is None:
            last = track.not_ready[-1].end if track.not_ready else None
            floor = max(life, last or life)
            # A node seen not Ready as it appears, and saying since when, was so from its start.
            track.not_ready.append(Span(self._dated(since, life if born else seen, floor)))
        elif ready and open_gap is not None:
            open_gap.end = self._dated(since, seen, open_gap.start)

    def node_deleted(self, node: types_pb2.Node, at: float | None = None) -> None:
        track = self.nodes.get(node.metadata.name)
        if track is None or not track.live:
            return
        gone = dating.removed(node.metadata, self._now(at), track.lives[-1].start)
        track.lives[-1].end = gone
        if track.not_ready and track.not_ready[-1].end is None:
            track.not_ready[-1].end = max(gone, track.not_ready[-1].start)
        self._count_nodes(gone, -1)

    def _count_nodes(self, t: float, delta: int) -> None:
        _step(self.node_count, t, delta)

    # ------------------------------------------------------------ events

    def event_seen(self, event: types_pb2.Event, at: float | None = None) -> None:
        """A version of an Event: an occurrence if it is new or its count went up."""
        if event.reason not in EVENT_REASONS:
            return
        uid = event.metadata.uid
        if uid:
            if self._event_counts.get(uid) == event.count:
                return
            self._event_counts[uid] = event.count
        t = self._dated(dating.event_occurred(event), self._now(at), self.start)
        if event.reason == PREEMPTED:
            m = _PREEMPTED_BY.search(event.message)
            preemptor = event.related.uid or (m.group(1) if m else "")
            node = m.group(2) if m else ""
            victim = self.pods.get(event.involved_object.uid)
            if victim is None:
                self._early[event.involved_object.uid] = (t, preemptor, node)
            else:
                self._preempted(victim, t, preemptor, node)
            return
        if event.type == "Warning":
            return  # a failed scale-down step (ScaleDown: failed to mark the node)
        if event.reason == TRIGGERED_SCALE_UP:
            last = self._scale_ups.get(event.message)
            if last is not None and t - last < SCALE_UP_REPEAT:
                return
            self._scale_ups[event.message] = t
            m = _SCALE_UP.search(event.message)
            label = f"{m.group(1)} {m.group(2)}->{m.group(3)}" if m else event.message
            self.mark(MarkerKind.SCALE_UP, label, at=t)
        elif event.involved_object.kind in ("", "Node"):
            # ScaleDown on each pod a drain evicts is left out: one marker per node.
            self._scale_down(event, t)

    def _scale_down(self, event: types_pb2.Event, t: float) -> None:
        """One marker per node the autoscaler removes, at its first Event (ScaleDown: the
        node tainted), its label completed by the later ones (ScaleDownEmpty: removed empty;
        ScaleDown "node removed": drained)."""
        node = event.involved_object.name
        how = ""
        if event.reason == SCALE_DOWN_EMPTY:
            how = " (empty)"
        elif "removed" in event.message:
            how = " (drained)"
        label = f"{node}{how}"
        index = self._scale_downs.get(node)
        if index is None:
            self._scale_downs[node] = len(self.markers)
            self.mark(MarkerKind.SCALE_DOWN, label, at=t)
        elif how:
            self.markers[index] = dataclasses.replace(self.markers[index], label=label)

    def _preempted(self, victim: PodTrack, t: float, preemptor_uid: str, node: str) -> None:
        if victim.preempted is None or t < victim.preempted:
            victim.preempted = t
        victim.preempted_on = victim.preempted_on or node
        preemptor = self.pods.get(preemptor_uid)
        if preemptor is not None and not victim.preempted_by:
            victim.preempted_by = preemptor.key
            preemptor.victims.append((t, victim.key))

    # ------------------------------------------------------------ markers

    def mark(
        self, kind: MarkerKind, label: str, *, at: float | None = None, until: float | None = None
    ) -> None:
        """A marker at `at` (default now), lasting until `until` if given."""
        self.markers.append(Marker(kind, self._now(at), label, until))


def pod_group_of(pod: types_pb2.Pod) -> str:
    """The pod's group as the picture names it ("" for none); see PodTrack.group."""
    ns = pod.metadata.namespace
    ref = pod.spec.scheduling_group
    if ref.HasField("pod_group_name"):
        return f"{ns}/{ref.pod_group_name}"
    old = pod.spec.workload_ref
    if old.name:
        return f"{ns}/{old.name}/{old.pod_group}"
    return ""


def _step(series: list[tuple[float, int]], t: float, delta: int) -> None:
    """A step function sampled at its changes, [(time, value from then on)] in order of time:
    `delta` from `t` on. A change at the latest sample's time or later is appended (the usual
    case: one sample per change); an earlier one goes in its place, the later samples moved
    by `delta`."""
    if not series or t >= series[-1][0]:
        series.append((t, (series[-1][1] if series else 0) + delta))
        return
    i = bisect.bisect_right(series, t, key=lambda s: s[0])
    series.insert(i, (t, (series[i - 1][1] if i else 0) + delta))
    for j in range(i + 1, len(series)):
        series[j] = (series[j][0], series[j][1] + delta)
