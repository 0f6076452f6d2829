"""The observable invariants of preemption and nominated node names (kemu.testing.invariants), checked
from outside the cluster, through the API, after a scenario.

    async with record_pods(client, ns) as history:
        ...  # the scenario
        await assert_invariants(client, history, ns)

`record_pods` lists the namespace's pods, then watches them from the list's resourceVersion:
every version of every pod from then on is recorded, in order (one watch stream is in
resourceVersion order). `record_nodes` does the same for nodes (by label selector), for the
node policies of (9). `assert_invariants` lists the namespace's Events, waits until the
history has caught up with a list of pods made after that, and runs `check_invariants`, which
is pure and returns the violations as sentences.

What is checked (numbered as the checklist they come from). A `Preempted` event names its victim (involvedObject, with
the resourceVersion of the victim as the scheduler saw it when it chose it: the "decision
version") and, in its message "Preempted by pod <uid> on node <node>", the preemptor and node.

(2) A victim that was bound and not terminating in its decision version carries
    DisruptionTarget=True, reason PreemptionByScheduler, in the first recorded version that
    has a deletionTimestamp (or in its DELETED object when the deletion was immediate).
    Victims that were unbound in the decision version (held at Permit, or still being bound)
    are exempt: they are rejected rather than deleted, or may be.
    The reason is `disruption_reason` (default PreemptionByScheduler; a scheduler emulating
    1.25 or 1.26 writes PreemptionByKubeScheduler); with None (PodDisruptionConditions off)
    the victim must carry neither.
(3) The victim's priority is strictly lower than the preemptor's (when the preemptor is in the
    history), and a victim bound in its decision version is bound to the event's node.
(4) A pod with preemptionPolicy Never is never the preemptor of a Preempted event.
(5) A preemptor never deletes pods on its nominated node N while N holds a lower-priority pod
    X that the scheduler preempted and that is still terminating. Checked per Preempted event,
    with resourceVersions, so that the scheduler's cache lag and the parallel deletion of one
    preemption's victims cause no false alarm: the scheduler's snapshot contained the victim's
    decision version (resourceVersion r) and not the victim's next version (w), and informers
    apply events in resourceVersion order, so the snapshot was taken at a revision in [r, w).
    A violation needs X to be terminating with DisruptionTarget/PreemptionByScheduler, bound to
    N, not Succeeded or Failed (the scheduler's informer drops those) and of lower priority
    than the preemptor throughout [r, w), and the preemptor to be
    nominated to N from r until the victim's deletion completed (or, if it has not, to the end
    of the history, which assert_invariants syncs past the event). Then the scheduler saw X
    and the preemptor was not eligible to preempt (Evaluator.Preempt, PodEligibleToPreemptOthers); had N
    been UnschedulableAndUnresolvable for it, N would not have been a candidate at all.
    Bound preemptors (KEP-5836 resizes, whose double preemptions are a known limitation) are
    not checked, nor is anything with `disruption_reason` None (nothing marks the
    scheduler's victims then). The price of soundness is coverage: r only bounds the snapshot from below, so a victim
    that has not changed since before X began terminating proves nothing. Caught: a new
    deletion of a pod created, bound or updated after X began terminating (the usual "fill
    the node again while the victims terminate" scenario). Not caught: a second preemption
    that picks a pod left untouched since before the first one.
(7) A pod first seen unbound gets spec.nodeName in a write that also sets PodScheduled=True
    and, when `clearing_gate_on` (ClearingNominatedNodeNameAfterBinding), empties
    status.nominatedNodeName. Pods first seen bound (created bound) are not checked.
(9) KEP-5836. A pod once seen bound with PodResizePending=True reason Deferred never gets a
    new non-empty nominatedNodeName afterwards, and, if it had PodScheduled=True then, never
    loses it (whatever the gate: with it off the scheduler does not touch bound pods at all).
    A Preempted event whose preemptor was bound when the scheduler decided (bound at or
    before the victim's decision version, or in its first recorded version) is a preemption
    for a resize: with `resize_preemption_gate_on` False there are none; with it on the event
    names the preemptor's own node, and that node's spec.podPreemptionPolicy
    .disableResizePreemption was not non-empty in every recorded version the scheduler could
    have decided on (the node versions older than the scheduler's first write to the victim
    after its decision version; needs the nodes' history, `record_nodes`). (9)'s
    "preemptionPolicy Never" is (4), which covers every preemptor. Victims are attributed to
    their preemptor as for (2)-(5), by the Preempted events. Sound as long as the scheduler's
    node informer is not behind the first recorded version of the node (a scenario that
    creates its nodes while recording gets that) and nothing but the scheduler binds a pod
    while the scheduler may be scheduling it.

Left out, because a black-box check would flag correct upstream behaviour or cannot be made:
(1) who changed a nominatedNodeName is not visible (external writers are legal, nominations to
missing nodes too); (4)'s "never gets an NNN from preemption" (the binding-cycle NNN of
KEP-5278 and external writers set it too); (2)'s "terminating victims are not deleted again"
(a repeated DELETE changes nothing visible); (6) is internal accounting; (8) concerns the
kubelet. (9)'s nominatedNodeName clause does assume that no external writer nominates a
Deferred pod.

Assumptions: events, pods and preemptors of interest are in the recorded namespace (what lies
elsewhere is not checked); the scheduler records Preempted on the victim object it decided on
(as upstream and kemu do), so the event's involvedObject.resourceVersion is the decision
version (an event whose version is not in the history is checked for (3)'s priorities and (4)
only); resourceVersions are integers (etcd revisions); and nothing but the scheduler deletes a
pod while it is being preempted. A test that deletes pods itself in the middle of preemptions
names them in `externally_deleted`, which exempts them from (2).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final, Generic, NamedTuple, TypeVar

import anyio

from kemu.api.v1 import types_pb2
from kemu.client.interface import ADDED, BOOKMARK, DELETED, ApiClient, WatchEvent
from kemu.machinery.errors import ApiError, Timeout, TooManyRequests, Unavailable
from kemu.machinery.eviction import DISRUPTION_TARGET
from kemu.machinery.keys import object_key
from kemu.machinery.pod_strategy import TERMINAL_PHASES
from kemu.testing.eventually import eventually

logger = logging.getLogger(__name__)

PREEMPTED: Final = "Preempted"
PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"
# Its name before 1.27 (kubernetes#114623).
PREEMPTION_BY_KUBE_SCHEDULER: Final = "PreemptionByKubeScheduler"
POD_SCHEDULED: Final = "PodScheduled"
PREEMPTION_POLICY_NEVER: Final = "Never"
POD_RESIZE_PENDING: Final = "PodResizePending"
DEFERRED: Final = "Deferred"

# Pods in these phases are not in the scheduler's informer (its field selector), so not in
# its snapshot either.
_PREEMPTED_MESSAGE: Final = re.compile(
    r"Preempted by pod (\S+) on node (\S+)(?: \(in kube-scheduler memory\)\.)?"
)
"""From 1.36 a victim still in PreBind or waiting at Permit is preempted in the scheduler's
memory, its event ending "(in kube-scheduler memory)." (kubernetes#135502, #135719): it was
unbound when chosen, so (2) exempts it as any victim held at Permit."""
# Watch errors after which the watch is resumed from the last resourceVersion (no gap).
_RESUMABLE: Final = (Unavailable, Timeout, TooManyRequests)
_BACKOFF_INITIAL: Final = 0.05
_BACKOFF_MAX: Final = 2.0


class PodVersion(NamedTuple):
    """One recorded version: `seq` counts every recorded event of the history, `type` is
    ADDED (the initial list and creations), MODIFIED or DELETED (the last state)."""

    seq: int
    type: str
    pod: types_pb2.Pod

    @property
    def resource_version(self) -> int | None:
        """metadata.resourceVersion as an integer; None if it is not one."""
        return _int_or_none(self.pod.metadata.resource_version)


class NodeVersion(NamedTuple):
    """One recorded version of a node, as PodVersion."""

    seq: int
    type: str
    node: types_pb2.Node

    @property
    def resource_version(self) -> int | None:
        return _int_or_none(self.node.metadata.resource_version)


class LeaseVersion(NamedTuple):
    """One recorded version of a lease, as PodVersion."""

    seq: int
    type: str
    lease: types_pb2.Lease

    @property
    def resource_version(self) -> int | None:
        return _int_or_none(self.lease.metadata.resource_version)


class WatchSpan(NamedTuple):
    """One watch of a history's recorder: the resourceVersion it started from and the last
    one it received (bookmarks included), what it received, when (time.monotonic) and why it
    ended. A version one watcher lacks lies in one of its spans (the server did not send it)
    or between two (a resume skipped it)."""

    started: float
    ended: float
    from_rv: str
    to_rv: str
    events: int
    bookmarks: int
    end: str

    def covers(self, rv: int) -> bool:
        """Whether `rv` lies after this watch's start and at or before its last version."""
        start, last = _int_or_none(self.from_rv), _int_or_none(self.to_rv)
        return start is not None and last is not None and start < rv <= last

    def describe(self, t0: float) -> str:
        """The watch in a line, its times as seconds after `t0`."""
        return (
            f"its watch from resourceVersion {self.from_rv or '(none)'} to "
            f"{self.to_rv or '(none)'} at t+{self.started - t0:.2f}s..{self.ended - t0:.2f}s "
            f"({self.events} events, {self.bookmarks} bookmarks; ended: {self.end})"
        )


@dataclass
class _OpenWatch:
    """A recorder's watch while it is open: where it started, what it has received."""

    started: float
    from_rv: str
    events: int = 0
    bookmarks: int = 0
    last: float = 0.0  # when it last received anything (time.monotonic)

    def received(self, bookmark: bool) -> None:
        self.last = time.monotonic()
        if bookmark:
            self.bookmarks += 1
        else:
            self.events += 1

    def span(self, to_rv: str, ended: float, end: str) -> WatchSpan:
        return WatchSpan(self.started, ended, self.from_rv, to_rv, self.events, self.bookmarks, end)


_Obj = TypeVar("_Obj", types_pb2.Pod, types_pb2.Node, types_pb2.Lease)
_Version = TypeVar("_Version", PodVersion, NodeVersion, LeaseVersion)


class _History(Generic[_Obj, _Version]):
    """Every version of every object of one kind recorded, by uid, each list in the order
    received; `record_pods` and `record_nodes` fill one through a watch."""

    kind: type[_Obj]

    def __init__(self, namespace: str = "", label_selector: str = "") -> None:
        self.namespace = namespace
        self.label_selector = label_selector
        self.versions: dict[str, list[_Version]] = {}
        # Why recording stopped before it was asked to (the history may have a gap).
        self.error: ApiError | None = None
        self.recording = False
        self.resource_version = ""  # the last one received: where a resumed watch starts
        self.watches: list[WatchSpan] = []  # every watch that ended, in order
        self.open_watch: _OpenWatch | None = None  # the one open now
        self.recorded = 0  # events recorded so far: the next one's seq

    def _version(self, seq: int, event_type: str, obj: _Obj) -> _Version:
        raise NotImplementedError

    @staticmethod
    def _obj(version: _Version) -> _Obj:
        raise NotImplementedError

    def record(self, event_type: str, obj: _Obj) -> _Version:
        """Appends a copy of `obj` to its uid's versions."""
        copy = type(obj)()
        copy.CopyFrom(obj)
        version = self._version(self.recorded, event_type, copy)
        self.recorded += 1
        self.versions.setdefault(obj.metadata.uid, []).append(version)
        return version

    def latest(self, uid: str) -> _Version | None:
        versions = self.versions.get(uid)
        return versions[-1] if versions else None

    def uids_of(self, name: str, namespace: str = "") -> list[str]:
        """The uids of the objects called `name` (several if it was recreated), oldest first."""
        found = []
        for uid, versions in self.versions.items():
            first = self._obj(versions[0])
            if first.metadata.name == name and (
                not namespace or first.metadata.namespace == namespace
            ):
                found.append((versions[0].seq, uid))
        return [uid for _, uid in sorted(found)]

    def lag(self, objs: Iterable[_Obj], list_resource_version: str = "") -> str:
        """ "" once every change up to `objs` (a list of the namespace, made at
        `list_resource_version`) has been recorded, else what is missing. Objects may have
        changed since the list: a recorded version newer than the listed one, a recorded
        deletion of a listed object, or an object first recorded after the list, are past it."""
        listed = {o.metadata.uid: o for o in objs}
        for uid, obj in listed.items():
            last = self.latest(uid)
            if last is None:
                return f"{object_key(obj)} not recorded yet"
            if last.type == DELETED:
                continue  # deleted after the list
            last_rv = self._obj(last).metadata.resource_version
            listed_rv = obj.metadata.resource_version
            recorded, wanted = _int_or_none(last_rv), _int_or_none(listed_rv)
            behind = (
                recorded < wanted
                if recorded is not None and wanted is not None
                else last_rv != listed_rv
            )
            if behind:
                return f"{object_key(obj)} recorded at resourceVersion {last_rv}, listed at {listed_rv}"
        list_rv = _int_or_none(list_resource_version)
        for uid, versions in self.versions.items():
            if versions[-1].type == DELETED or uid in listed:
                continue
            first_rv = versions[0].resource_version
            if list_rv is not None and first_rv is not None and first_rv > list_rv:
                continue  # created after the list
            return (
                f"{object_key(self._obj(versions[-1]))} deleted but its deletion not recorded yet"
            )
        return ""

    async def sync(self, client: ApiClient, *, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Waits until every change up to now (a fresh list) has been recorded. Raises
        AssertionError if the recorder stopped with an error or does not catch up (naming
        where its watches stood)."""
        listed = await client.list_all(
            self.kind, self.namespace, label_selector=self.label_selector
        )
        what = f"the {self.kind.__name__.lower()} history"

        def caught_up() -> bool:
            if self.error is not None or not self.recording:
                return True  # nothing more will come; reported below
            lag = self.lag(listed.items, listed.resource_version)
            assert not lag, lag
            return True

        try:
            await eventually(
                caught_up, timeout=timeout, interval=0.01, message=f"{what} catching up"
            )
        except AssertionError as e:
            raise AssertionError(f"{e}; {self.describe_watches()}") from e
        if self.error is not None:
            raise AssertionError(f"{what} is incomplete: its watch failed: {self.error}")
        if not self.recording:
            raise AssertionError(f"{what} is no longer recording")

    def describe_watches(self, last: int = 3) -> str:
        """The open watch and the `last` that ended, for a failure message (seconds are
        time.monotonic's)."""
        first = self.watches[0] if self.watches else self.open_watch
        t0 = first.started if first is not None else 0.0
        parts = [f"ended: {w.describe(t0)}" for w in self.watches[-last:]]
        if self.open_watch is None:
            parts.append("no watch open")
        else:
            w = self.open_watch
            span = w.span(self.resource_version, max(w.last, w.started), "open")
            parts.append(f"open (to its last event): {span.describe(t0)}")
        return f"{len(self.watches)} watches ended; " + "; ".join(parts)

    # ------------------------------------------------------------ recording

    def _apply(self, event: WatchEvent[_Obj]) -> None:
        if event.object.metadata.resource_version:
            self.resource_version = event.object.metadata.resource_version
        if event.type != BOOKMARK:
            self.record(event.type, event.object)

    async def _follow(self, client: ApiClient) -> None:
        """Watches from the last resourceVersion, resuming after the stream ends or the
        connection is lost; stops (setting `error`) when that is impossible without a gap.
        Every watch is noted in `watches`."""
        backoff = _BACKOFF_INITIAL
        what = f"{self.kind.__name__.lower()} history of {self.namespace!r}"
        try:
            while True:
                watch = _OpenWatch(time.monotonic(), self.resource_version)
                end = "the server ended it"
                self.open_watch = watch
                try:
                    async with client.watch(
                        self.kind,
                        self.namespace,
                        resource_version=watch.from_rv,
                        label_selector=self.label_selector,
                        allow_watch_bookmarks=True,
                    ) as events:
                        async for event in events:
                            watch.received(event.type == BOOKMARK)
                            self._apply(event)
                except _RESUMABLE as e:
                    logger.info("%s: watch interrupted: %s", what, e)
                    end = f"{type(e).__name__}: {e}"
                except ApiError as e:
                    logger.warning("%s: watch failed: %s", what, e)
                    self.error = e
                    end = f"failed: {e}"
                    return
                except BaseException:
                    end = "stopped"
                    raise
                finally:
                    self.open_watch = None
                    self.watches.append(watch.span(self.resource_version, time.monotonic(), end))
                if watch.events or watch.bookmarks:
                    backoff = _BACKOFF_INITIAL
                else:
                    await anyio.sleep(backoff)
                    backoff = min(backoff * 2, _BACKOFF_MAX)
        finally:
            self.recording = False

    @asynccontextmanager
    async def _recording(self, client: ApiClient) -> AsyncIterator[None]:
        """Lists, then records through a watch from the list's resourceVersion while the
        block runs: nothing after the list is missed."""
        listed = await client.list_all(
            self.kind, self.namespace, label_selector=self.label_selector
        )
        for obj in listed.items:
            self.record(ADDED, obj)
        self.resource_version = listed.resource_version
        self.recording = True
        failure: BaseException | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._follow, client)
            try:
                yield
            except BaseException as e:
                # Re-raised below as it is, not wrapped in the task group's ExceptionGroup.
                failure = e
            finally:
                tg.cancel_scope.cancel()
        self.recording = False
        if failure is not None:
            raise failure


class PodHistory(_History[types_pb2.Pod, PodVersion]):
    """Every version of every pod recorded, by uid, each list in the order received."""

    kind = types_pb2.Pod

    def _version(self, seq: int, event_type: str, obj: types_pb2.Pod) -> PodVersion:
        return PodVersion(seq, event_type, obj)

    @staticmethod
    def _obj(version: PodVersion) -> types_pb2.Pod:
        return version.pod


class NodeHistory(_History[types_pb2.Node, NodeVersion]):
    """Every version of every node recorded (those matching `label_selector`), by uid."""

    kind = types_pb2.Node

    def _version(self, seq: int, event_type: str, obj: types_pb2.Node) -> NodeVersion:
        return NodeVersion(seq, event_type, obj)

    @staticmethod
    def _obj(version: NodeVersion) -> types_pb2.Node:
        return version.node

    def by_name(self) -> dict[str, list[NodeVersion]]:
        """Every recorded version of each node name, in order (of all its incarnations)."""
        out: dict[str, list[NodeVersion]] = {}
        for versions in sorted(self.versions.values(), key=lambda vs: vs[0].seq):
            out.setdefault(versions[0].node.metadata.name, []).extend(versions)
        return out


class LeaseHistory(_History[types_pb2.Lease, LeaseVersion]):
    """Every version of every lease of a namespace recorded, by uid (who held a lock when)."""

    kind = types_pb2.Lease

    def _version(self, seq: int, event_type: str, obj: types_pb2.Lease) -> LeaseVersion:
        return LeaseVersion(seq, event_type, obj)

    @staticmethod
    def _obj(version: LeaseVersion) -> types_pb2.Lease:
        return version.lease


@asynccontextmanager
async def record_pods(
    client: ApiClient, namespace: str, *, history: PodHistory | None = None
) -> AsyncIterator[PodHistory]:
    """Records every version of the pods of `namespace` ("" for all) while the block runs.
    The initial list is recorded before the block starts: nothing after it is missed.
    `history` is an empty PodHistory (of a subclass) of `namespace` to record into."""
    history = history if history is not None else PodHistory(namespace)
    async with history._recording(client):
        yield history


@asynccontextmanager
async def record_nodes(client: ApiClient, label_selector: str = "") -> AsyncIterator[NodeHistory]:
    """Records every version of the nodes matching `label_selector` while the block runs
    (for invariant (9)'s node policies); as `record_pods`."""
    history = NodeHistory(label_selector=label_selector)
    async with history._recording(client):
        yield history


@asynccontextmanager
async def record_leases(
    client: ApiClient, namespace: str, *, history: LeaseHistory | None = None
) -> AsyncIterator[LeaseHistory]:
    """Records every version of the leases of `namespace` while the block runs, as
    `record_pods`; `history` is an empty LeaseHistory (of a subclass) to record into."""
    history = history if history is not None else LeaseHistory(namespace)
    async with history._recording(client):
        yield history


async def assert_invariants(
    client: ApiClient,
    history: PodHistory,
    namespace: str,
    *,
    clearing_gate_on: bool = True,
    resize_preemption_gate_on: bool = False,
    nodes: NodeHistory | None = None,
    externally_deleted: Collection[str] = (),
    sync_timeout: float = 10.0,
    disruption_reason: str | None = PREEMPTION_BY_SCHEDULER,
) -> None:
    """Checks the invariants on `history` and the Events of `namespace`; raises AssertionError
    listing every violation. Call it inside `record_pods`' block, once the scenario is done:
    the Events are listed first, then the history is synced past them. `nodes` (recording
    too) gives (9) the nodes' resize preemption policies."""
    for h in (history, nodes):
        if h is None:
            continue
        if h.error is not None:
            raise AssertionError(f"the history is incomplete: its watch failed: {h.error}")
        if not h.recording:
            raise RuntimeError("assert_invariants runs inside the record_pods block")
    events = await client.list_all(types_pb2.Event, namespace)
    await history.sync(client, timeout=sync_timeout)
    if nodes is not None:
        await nodes.sync(client, timeout=sync_timeout)
    violations = check_invariants(
        history.versions,
        events.items,
        clearing_gate_on=clearing_gate_on,
        resize_preemption_gate_on=resize_preemption_gate_on,
        nodes=nodes.by_name() if nodes is not None else None,
        externally_deleted=externally_deleted,
        disruption_reason=disruption_reason,
    )
    if violations:
        lines = "\n".join(f"- {v}" for v in violations)
        raise AssertionError(f"{len(violations)} invariant violation(s):\n{lines}")


# ---------------------------------------------------------------- the checks


def node_deletions_under_pods(
    nodes: NodeHistory,
    pods: PodHistory,
    *,
    nominated: bool = True,
    counts: Callable[[types_pb2.Pod], bool] = lambda pod: True,
) -> list[str]:
    """The autoscaler's first promise, over recorded histories in resourceVersion order: no
    Node is deleted while a live pod (not deleted, not Succeeded or Failed, and `counts`) is
    bound to it or, with `nominated`, nominated to it. One sentence per such pod and deletion."""
    pod_events = sorted(
        ((v.resource_version or 0, v.type, v.pod) for vs in pods.versions.values() for v in vs),
        key=lambda t: t[0],
    )
    deletions = sorted(
        (
            (v.resource_version or 0, v.node.metadata.name)
            for vs in nodes.versions.values()
            for v in vs
            if v.type == DELETED
        ),
        key=lambda t: t[0],
    )
    out: list[str] = []
    state: dict[str, types_pb2.Pod] = {}
    next_pod = 0
    for rv, name in deletions:
        while next_pod < len(pod_events) and pod_events[next_pod][0] < rv:
            _, kind, version = pod_events[next_pod]
            if kind == DELETED:
                state.pop(version.metadata.uid, None)
            else:
                state[version.metadata.uid] = version
            next_pod += 1
        for pod in state.values():
            if pod.status.phase in TERMINAL_PHASES or not counts(pod):
                continue
            if pod.spec.node_name == name:
                out.append(f"Node {name} deleted (rv {rv}) under bound pod {pod.metadata.name}")
            elif nominated and pod.status.nominated_node_name == name:
                out.append(f"Node {name} deleted (rv {rv}) under nominated pod {pod.metadata.name}")
    return out


class _Preemption(NamedTuple):
    event: types_pb2.Event
    victim_uid: str
    preemptor_uid: str
    node: str


def check_invariants(
    versions_by_uid: Mapping[str, Sequence[PodVersion]],
    events: Iterable[types_pb2.Event],
    *,
    clearing_gate_on: bool,
    resize_preemption_gate_on: bool = False,
    nodes: Mapping[str, Sequence[NodeVersion]] | None = None,
    externally_deleted: Collection[str] = (),
    disruption_reason: str | None = PREEMPTION_BY_SCHEDULER,
) -> list[str]:
    """The violations of the invariants described in the module docstring; [] if none.
    `externally_deleted` names pods (by name, or namespace/name) that something other than
    the scheduler deleted: they are exempt from (2). `disruption_reason` is the reason of the
    DisruptionTarget the scheduler puts on its victims (`preemption_disruption_reason` of its
    gates: PreemptionByKubeScheduler before 1.27, None without PodDisruptionConditions). `resize_preemption_gate_on` is the
    scheduler's InPlacePodVerticalScalingSchedulerPreemption, `nodes` the recorded versions of
    the nodes by name (None: (9)'s node policy clause is not checked)."""
    violations: list[str] = []
    preemptions: list[_Preemption] = []
    for ev in events:
        if ev.reason != PREEMPTED or ev.involved_object.kind not in ("", "Pod"):
            continue
        m = _PREEMPTED_MESSAGE.fullmatch(ev.message)
        if m is None:
            violations.append(
                f"Preempted event {ev.metadata.name} on {_ref_key(ev)} has the message "
                f"{ev.message!r}, not 'Preempted by pod <uid> on node <node>'"
            )
            continue
        preemptions.append(_Preemption(ev, ev.involved_object.uid, m.group(1), m.group(2)))

    for p in preemptions:
        violations.extend(
            _check_preemption(versions_by_uid, p, externally_deleted, disruption_reason)
        )
    if disruption_reason is not None:
        violations.extend(
            _check_no_deletions_while_terminating(versions_by_uid, preemptions, disruption_reason)
        )
    for versions in versions_by_uid.values():
        violations.extend(_check_binding(versions, clearing_gate_on))
    for versions in versions_by_uid.values():
        violations.extend(_check_deferred_pod(versions))
    for p in preemptions:
        violations.extend(
            _check_resize_preemption(versions_by_uid, p, resize_preemption_gate_on, nodes)
        )
    return violations


def _check_preemption(
    versions_by_uid: Mapping[str, Sequence[PodVersion]],
    p: _Preemption,
    externally_deleted: Collection[str],
    disruption_reason: str | None,
) -> list[str]:
    """(2), (3) and (4) for one Preempted event."""
    out: list[str] = []
    victim_versions = versions_by_uid.get(p.victim_uid, ())
    preemptor_versions = versions_by_uid.get(p.preemptor_uid, ())
    victim = victim_versions[-1].pod if victim_versions else None
    preemptor = preemptor_versions[-1].pod if preemptor_versions else None
    what = f"preemption of {_ref_key(p.event)} by {_pod_or_uid(preemptor, p.preemptor_uid)}"

    # (4) Priority, preemption policy and node of a pod do not change: any version will do.
    if preemptor is not None and preemptor.spec.preemption_policy == PREEMPTION_POLICY_NEVER:
        out.append(f"{what} on {p.node}: the preemptor has preemptionPolicy Never")
    # (3)
    if victim is not None and preemptor is not None:
        if _priority(victim) >= _priority(preemptor):
            out.append(
                f"{what} on {p.node}: the victim's priority {_priority(victim)} is not lower "
                f"than the preemptor's {_priority(preemptor)}"
            )

    decision = _decision_version(victim_versions, p.event)
    if victim is None or decision is None or not decision.pod.spec.node_name:
        return out  # not known, or not bound when chosen: rejected at Permit or being bound
    if decision.pod.spec.node_name != p.node:
        out.append(
            f"{what} on {p.node}: the victim is bound to {decision.pod.spec.node_name}, "
            "not to the event's node"
        )
    # (2)
    if decision.type == DELETED or decision.pod.metadata.HasField("deletion_timestamp"):
        return out  # already terminating when chosen: the scheduler does not delete it
    if (
        victim.metadata.name in externally_deleted
        or object_key(victim) in externally_deleted
        or victim.metadata.uid in externally_deleted
    ):
        return out
    deletion = next(
        (
            v
            for v in victim_versions
            if v.seq > decision.seq
            and (v.type == DELETED or v.pod.metadata.HasField("deletion_timestamp"))
        ),
        None,
    )
    if deletion is None:
        return out
    state = "deleted" if deletion.type == DELETED else "terminating"
    if disruption_reason is None:
        if _preempted_by_scheduler(deletion.pod, PREEMPTION_BY_SCHEDULER) or (
            _preempted_by_scheduler(deletion.pod, PREEMPTION_BY_KUBE_SCHEDULER)
        ):
            out.append(
                f"{what} on {p.node}: the victim was {state} (resourceVersion "
                f"{deletion.pod.metadata.resource_version}) with the scheduler's "
                f"{DISRUPTION_TARGET} condition, which it writes only with "
                "PodDisruptionConditions"
            )
    elif not _preempted_by_scheduler(deletion.pod, disruption_reason):
        out.append(
            f"{what} on {p.node}: the victim was {state} (resourceVersion "
            f"{deletion.pod.metadata.resource_version}) without the condition "
            f"{DISRUPTION_TARGET}=True reason {disruption_reason}"
        )
    return out


def _check_no_deletions_while_terminating(
    versions_by_uid: Mapping[str, Sequence[PodVersion]],
    preemptions: Sequence[_Preemption],
    disruption_reason: str,
) -> list[str]:
    """(5); see the module docstring for why this has no false alarms."""
    out: list[str] = []
    timelines: dict[str, _Timeline] = {}
    for uid, versions in versions_by_uid.items():
        timeline = _timeline(versions)
        if timeline is not None:
            timelines[uid] = timeline
    history_end = 1 + max((t[-1][0] for t in timelines.values() if t), default=0)
    for p in preemptions:
        victim = timelines.get(p.victim_uid)
        preemptor = timelines.get(p.preemptor_uid)
        if victim is None or preemptor is None:
            continue
        decision = _decision_version(versions_by_uid[p.victim_uid], p.event)
        if (
            decision is None
            or decision.type == DELETED
            or decision.pod.spec.node_name != p.node
            or decision.pod.metadata.HasField("deletion_timestamp")
        ):
            continue
        r = int(decision.pod.metadata.resource_version)
        later = [(rv, v) for rv, v in victim if rv > r]
        if not later:
            continue  # the preemption's writes are not recorded: the snapshot is unbounded
        w = later[0][0]
        gone = next((rv for rv, v in later if v.type == DELETED), None)
        # The scheduler read the preemptor's nomination after r and before it deleted the
        # victim: before the victim's DELETED, or (not deleted yet) the end of the history.
        end = gone if gone is not None else history_end
        at_r = _state_at(preemptor, r)
        if at_r is None or at_r.type == DELETED or at_r.pod.spec.node_name:
            continue  # unknown, or a bound pod preempting for a resize (KEP-5836: not covered)
        window = [at_r, *(v for rv, v in preemptor if r < rv < end)]
        if any(v.type == DELETED or v.pod.status.nominated_node_name != p.node for v in window):
            continue
        preemptor_priority = _priority(at_r.pod)
        for uid, timeline in timelines.items():
            if uid in (p.victim_uid, p.preemptor_uid):
                continue
            x_at_r = _state_at(timeline, r)
            if x_at_r is None:
                continue
            x_window = [x_at_r, *(v for rv, v in timeline if r < rv < w)]
            if all(
                v.type != DELETED
                and v.pod.spec.node_name == p.node
                and _priority(v.pod) < preemptor_priority
                and v.pod.status.phase not in TERMINAL_PHASES
                and v.pod.metadata.HasField("deletion_timestamp")
                and _preempted_by_scheduler(v.pod, disruption_reason)
                for v in x_window
            ):
                out.append(
                    f"preemption of {_ref_key(p.event)} by {object_key(at_r.pod)} on {p.node}: "
                    f"the preemptor was nominated to {p.node}, which still held "
                    f"{object_key(x_at_r.pod)} (priority {_priority(x_at_r.pod)}), terminating "
                    "after a preemption by the scheduler"
                )
                break
    return out


def _check_binding(versions: Sequence[PodVersion], clearing_gate_on: bool) -> list[str]:
    """(7) for one pod."""
    if not versions or versions[0].pod.spec.node_name:
        return []
    bound = next((v for v in versions if v.pod.spec.node_name), None)
    if bound is None:
        return []
    pod = bound.pod
    out: list[str] = []
    if not any(c.type == POD_SCHEDULED and c.status == "True" for c in pod.status.conditions):
        out.append(
            f"{object_key(pod)} was bound to {pod.spec.node_name} (resourceVersion "
            f"{pod.metadata.resource_version}) without PodScheduled=True in the same write"
        )
    if clearing_gate_on and pod.status.nominated_node_name:
        out.append(
            f"{object_key(pod)} was bound to {pod.spec.node_name} (resourceVersion "
            f"{pod.metadata.resource_version}) keeping nominatedNodeName "
            f"{pod.status.nominated_node_name!r} (ClearingNominatedNodeNameAfterBinding is on)"
        )
    return out


def _check_deferred_pod(versions: Sequence[PodVersion]) -> list[str]:
    """(9), the pod's own clauses: once seen Deferred while bound, it never gets a new
    nominatedNodeName and never loses PodScheduled=True (the condition it had then)."""
    out: list[str] = []
    seen: PodVersion | None = None  # the first Deferred version
    previous: PodVersion | None = None
    for v in versions:
        pod = v.pod
        if seen is not None and v.type != DELETED:
            nnn = pod.status.nominated_node_name
            if nnn and previous is not None and nnn != previous.pod.status.nominated_node_name:
                out.append(
                    f"{object_key(pod)}, Deferred on {seen.pod.spec.node_name} since resourceVersion "
                    f"{seen.pod.metadata.resource_version}, got nominatedNodeName {nnn!r} "
                    f"(resourceVersion {pod.metadata.resource_version})"
                )
            if _scheduled(seen.pod) and not _scheduled(pod):
                out.append(
                    f"{object_key(pod)}, Deferred on {seen.pod.spec.node_name} since resourceVersion "
                    f"{seen.pod.metadata.resource_version}, lost PodScheduled=True "
                    f"(resourceVersion {pod.metadata.resource_version})"
                )
                seen = None  # reported once; a later Deferred version starts over
        if seen is None and v.type != DELETED and pod.spec.node_name and _deferred(pod):
            seen = v
        previous = v
    return out


def _check_resize_preemption(
    versions_by_uid: Mapping[str, Sequence[PodVersion]],
    p: _Preemption,
    gate_on: bool,
    nodes: Mapping[str, Sequence[NodeVersion]] | None,
) -> list[str]:
    """(9) for one Preempted event whose preemptor was bound when it decided (a resize):
    none at all with the gate off; with it on, only on the preemptor's own node, and not
    while that node's policy disables resize preemption."""
    preemptor_versions = versions_by_uid.get(p.preemptor_uid, ())
    if not preemptor_versions:
        return []
    victim_versions = versions_by_uid.get(p.victim_uid, ())
    decision = _decision_version(victim_versions, p.event)
    # The scheduler's first write to the victim after the decision version (its
    # DisruptionTarget): the scheduler decided before it, and an ordinary preemptor is never
    # bound by then (it waits for the room the deletions make), so a preemptor bound at or
    # before it was bound when it decided: a resize. (The decision version itself is only the
    # victim's last change before the decision, often older than the preemptor's binding.)
    later = [
        v.resource_version
        for v in victim_versions
        if decision is not None and v.seq > decision.seq and v.resource_version is not None
    ]
    end = later[0] if later else None
    r = end if end is not None else (decision.resource_version if decision is not None else None)
    bound = _bound_before(preemptor_versions, r)
    if bound is None:
        return []
    node = bound.pod.spec.node_name
    what = f"preemption of {_ref_key(p.event)} by {object_key(bound.pod)} (bound to {node})"
    if not gate_on:
        return [
            f"{what} on {p.node}: a bound pod preempted with "
            "InPlacePodVerticalScalingSchedulerPreemption off"
        ]
    out: list[str] = []
    if p.node != node:
        out.append(f"{what}: the event's node {p.node} is not the preemptor's own node")
    if nodes is None or node not in nodes:
        return out
    # The scheduler decided before its first write to the victim (`end`), so on a node version
    # older than that write (or than the end of what is recorded).
    seen = [
        v
        for v in nodes[node]
        if end is None or (v.resource_version is not None and v.resource_version < end)
    ]
    if seen and all(v.type != DELETED and _resize_preemption_disabled(v.node) for v in seen):
        owners = list(seen[-1].node.spec.pod_preemption_policy.disable_resize_preemption)
        out.append(
            f"{what} on {p.node}: the node's disableResizePreemption was {owners} in every "
            "version the scheduler could have seen"
        )
    return out


# ---------------------------------------------------------------- helpers

_Timeline = list[tuple[int, PodVersion]]


def _timeline(versions: Sequence[PodVersion]) -> _Timeline | None:
    """(resourceVersion, version) pairs in order; None if a resourceVersion is not an integer
    (then nothing is inferred about this pod)."""
    out: _Timeline = []
    for v in versions:
        rv = v.resource_version
        if rv is None:
            return None
        out.append((rv, v))
    return out


def _state_at(timeline: _Timeline, rv: int) -> PodVersion | None:
    """The version current at `rv`: the last with a resourceVersion <= rv; None when the pod
    was first recorded later (its state at `rv` is unknown) or did not exist yet."""
    current = None
    for version_rv, v in timeline:
        if version_rv > rv:
            break
        current = v
    return current


def _decision_version(versions: Sequence[PodVersion], event: types_pb2.Event) -> PodVersion | None:
    """The victim's version named by the event (the one the scheduler decided on)."""
    rv = event.involved_object.resource_version
    if not rv:
        return None
    return next((v for v in versions if v.pod.metadata.resource_version == rv), None)


def _bound_before(versions: Sequence[PodVersion], rv: int | None) -> PodVersion | None:
    """A version of the pod that shows it bound at or before resourceVersion `rv` (so when the
    scheduler decided, after `rv`); with `rv` unknown, only a pod bound in its first recorded
    version (created bound, or bound before the recording) counts. None if neither."""
    if versions[0].pod.spec.node_name:
        return versions[0]
    if rv is None:
        return None
    return next(
        (
            v
            for v in versions
            if v.type != DELETED
            and v.pod.spec.node_name
            and v.resource_version is not None
            and v.resource_version <= rv
        ),
        None,
    )


def _deferred(pod: types_pb2.Pod) -> bool:
    return any(
        c.type == POD_RESIZE_PENDING and c.status == "True" and c.reason == DEFERRED
        for c in pod.status.conditions
    )


def _scheduled(pod: types_pb2.Pod) -> bool:
    return any(c.type == POD_SCHEDULED and c.status == "True" for c in pod.status.conditions)


def _resize_preemption_disabled(node: types_pb2.Node) -> bool:
    return len(node.spec.pod_preemption_policy.disable_resize_preemption) > 0


def _preempted_by_scheduler(pod: types_pb2.Pod, reason: str) -> bool:
    return any(
        c.type == DISRUPTION_TARGET and c.status == "True" and c.reason == reason
        for c in pod.status.conditions
    )


def _priority(pod: types_pb2.Pod) -> int:
    return pod.spec.priority if pod.spec.HasField("priority") else 0


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _ref_key(event: types_pb2.Event) -> str:
    ref = event.involved_object
    return f"{ref.namespace}/{ref.name}"


def _pod_or_uid(pod: types_pb2.Pod | None, uid: str) -> str:
    return object_key(pod) if pod is not None else f"pod uid {uid}"
