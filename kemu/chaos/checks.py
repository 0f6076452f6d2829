"""Pure checks over what a chaos run recorded; each returns violations as sentences.

The pod histories are kemu.testing.invariants' (every version of every pod, by uid, in the
order one watch delivered them); the invariants are kemu.testing.invariants'
check_invariants, run on the same histories by the runner.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from kemu.api.v1 import types_pb2
from kemu.client.interface import DELETED
from kemu.machinery.keys import object_key
from kemu.machinery.pod_strategy import TERMINAL_PHASES
from kemu.machinery.resources import Amounts, PodResourcesOptions, amounts, pod_requests
from kemu.testing.invariants import PodVersion, WatchSpan

Histories = Mapping[str, Sequence[PodVersion]]
CHECKED_RESOURCES = ("cpu", "memory")
UNCONFIRMED_GRACE = 30.0
"""How long (seconds, from when the run's watcher first saw it bound) a binding the scheduler
never saw succeed may stay out of the scheduler's view: its informer delivers the pod by then."""
_SCHEDULER_VIEW = PodResourcesOptions(use_status_resources=True)


@dataclass(frozen=True)
class Ack:
    """A write the apiserver acknowledged: the object's uid and resourceVersion it answered."""

    uid: str
    resource_version: str
    what: str


def check_bound_once(histories: Histories) -> list[str]:
    """No pod bound twice or moved: once a version has spec.nodeName, every later one has the
    same node."""
    out = []
    for versions in histories.values():
        node = ""
        for v in versions:
            now = v.pod.spec.node_name
            if node and now != node:
                out.append(
                    f"{object_key(v.pod)} was bound to {node} and then has nodeName {now!r} "
                    f"(resourceVersion {v.pod.metadata.resource_version})"
                )
                break
            node = node or now
    return out


def check_watch_order(histories: Histories, listed: int = 0) -> list[str]:
    """One watcher's history is in resourceVersion order: the versions received through the
    watch (every one after the first `listed`, which came from the initial list) have strictly
    increasing resourceVersions, and no version is received twice."""
    received = sorted(
        (v for vs in histories.values() for v in vs if v.seq >= listed), key=lambda v: v.seq
    )
    out = []
    last = -1
    for v in received:
        rv = v.resource_version
        if rv is None:
            out.append(f"{object_key(v.pod)}: resourceVersion {v.pod.metadata.resource_version!r}")
            continue
        if rv <= last:
            out.append(
                f"{object_key(v.pod)}: {v.type} at resourceVersion {rv} received after {last}"
            )
        last = max(last, rv)
    return out


def check_watchers_agree(
    name_a: str,
    a: Histories,
    name_b: str,
    b: Histories,
    *,
    watches: Mapping[str, Sequence[WatchSpan]] | None = None,
    t0: float = 0.0,
) -> list[str]:
    """Gap-free: two watchers that both ran from before the first pod saw the same versions
    (by resourceVersion) of every pod; a version one has and the other lacks is a gap. With
    the watchers' `watches` (by name), each gap names the watch that should have carried it
    (times as seconds after `t0`)."""
    out = []
    for uid in sorted(set(a) | set(b)):
        ra = {v.pod.metadata.resource_version for v in a.get(uid, ())}
        rb = {v.pod.metadata.resource_version for v in b.get(uid, ())}
        if ra != rb:
            pod = (a.get(uid) or b[uid])[0].pod
            line = (
                f"{object_key(pod)}: versions only {name_a} saw {sorted(ra - rb)}, "
                f"only {name_b} saw {sorted(rb - ra)}"
            )
            for name, missing in ((name_a, rb - ra), (name_b, ra - rb)):
                for rv in sorted(missing):
                    line += f"; {name} lacks {rv}: " + _watch_of(
                        rv, (watches or {}).get(name, ()), t0
                    )
            out.append(line)
    return out


def _watch_of(rv: str, spans: Sequence[WatchSpan], t0: float) -> str:
    """The watch during which version `rv` should have come, or where it fell between two."""
    number = int(rv) if rv.isdigit() else None
    if number is None or not spans:
        return "no watch recorded"
    for span in spans:
        if span.covers(number):
            return span.describe(t0)
    return "in none of its watches (still open, or before the first)"


LATE_CHANGE = re.compile(
    r"watch cache for (\S+): etcd sent the change at revision (\d+) after the cache had moved "
    r"to (\d+)"
)
"""The apiserver's log line for a change its watch cache got after it had moved past it."""


def check_no_late_changes(apiserver_logs: Mapping[str, str]) -> list[str]:
    """No apiserver's watch cache was called fresh ahead of a change etcd had not sent it:
    watchers given a bookmark or a list past that change would never get it."""
    return [
        f"{name}: the {m[1]} watch cache got the change at revision {m[2]} after it had moved "
        f"to {m[3]}"
        for name, text in sorted(apiserver_logs.items())
        for m in LATE_CHANGE.finditer(text)
    ]


def check_acknowledged(acks: Iterable[Ack], histories: Histories, watcher: str) -> list[str]:
    """Every acknowledged write is in the history: its uid has a version with the
    resourceVersion the apiserver answered."""
    out = []
    seen = {uid: {v.pod.metadata.resource_version for v in vs} for uid, vs in histories.items()}
    for ack in acks:
        if ack.resource_version not in seen.get(ack.uid, set()):
            out.append(
                f"{ack.what} (uid {ack.uid}, resourceVersion {ack.resource_version}) was "
                f"acknowledged but {watcher} never saw that version"
            )
    return out


def _counts(pod: types_pb2.Pod) -> bool:
    """Whether a pod version occupies its node: bound and not terminal."""
    return bool(pod.spec.node_name) and pod.status.phase not in TERMINAL_PHASES


def _admitted(pod: types_pb2.Pod) -> bool:
    """Whether the kubelet has admitted the pod (it wrote a phase or container statuses) and
    it is not terminating (the kubelet may have stopped a terminating pod before the API
    shows it: upstream's admission does not count such pods either)."""
    return (
        _counts(pod)
        and not pod.metadata.HasField("deletion_timestamp")
        and (pod.status.phase == "Running" or len(pod.status.container_statuses) > 0)
    )


def _allocated(pod: types_pb2.Pod) -> Amounts:
    """What the kubelet allocated to the pod: the containers' allocatedResources where it
    reported them, else their spec requests."""
    total: Amounts = {}
    allocated = {cs.name: cs for cs in pod.status.container_statuses}
    for c in pod.spec.containers:
        cs = allocated.get(c.name)
        source = (
            cs.allocated_resources
            if cs is not None and cs.allocated_resources
            else c.resources.requests
        )
        for name, value in amounts(source).items():
            total[name] = total.get(name, 0) + value
    return total


def check_node_capacity(
    histories: Histories,
    allocatable: Mapping[str, Mapping[str, str]],
    unconfirmed: AbstractSet[str] = frozenset(),
    seen_bound: Mapping[str, float] | None = None,
    stale: AbstractSet[str] = frozenset(),
) -> list[str]:
    """No node over its allocatable (cpu, memory, pod count), replaying every recorded
    revision in resourceVersion order:
    - the scheduler's view, at each binding: the pods bound to the node and not terminal at
      that revision, counted as the scheduler counts them (the largest of desired, allocated
      and actual resources), plus the new pod, fit;
    - the kubelet's admitted view, at every revision: the pods the kubelet admitted, counted
      at their allocated resources, fit.

    `unconfirmed` are the uids of pods whose binding committed although no scheduler saw its
    Bind succeed (the call answered an error after the write, as when etcd is killed under
    it, or the scheduler died): upstream's scheduler forgets such a pod until its informer
    delivers the binding, and the kubelet's admission is the safety net in that window. So a
    binding made within UNCONFIRMED_GRACE of such a pod (by `seen_bound`: uid -> when the run's
    watcher first saw it bound) does not count it in the scheduler's view; the kubelet's view
    always counts every pod.

    `stale` are the uids of pods bound by a stale leader (leaders.py): upstream does not fence
    it, so its binding is not held to the scheduler's view (its cache was the one of a leader
    that had lost the lease); the kubelet's admission is what upstream guarantees there."""
    limits = {n: amounts(a) for n, a in allocatable.items()}
    events = sorted(
        (v for vs in histories.values() for v in vs if v.resource_version is not None),
        key=lambda v: (v.resource_version, v.seq),
    )
    state: dict[str, dict[str, types_pb2.Pod]] = {}  # node -> uid -> current version
    bound: set[str] = set()
    out: list[str] = []
    for v in events:
        pod, uid = v.pod, v.pod.metadata.uid
        node = pod.spec.node_name
        if not node or node not in limits:
            continue
        on_node = state.setdefault(node, {})
        newly_bound = uid not in bound
        bound.add(uid)
        if v.type == DELETED or not _counts(pod):
            on_node.pop(uid, None)
        else:
            on_node[uid] = pod
        limit = limits[node]
        rv = v.resource_version
        if newly_bound and _counts(pod) and uid not in stale:
            others = [
                p
                for u, p in on_node.items()
                if u != uid and not _forgotten(u, uid, unconfirmed, seen_bound)
            ]
            need = pod_requests(pod, _SCHEDULER_VIEW)
            used = _sum(pod_requests(p, _SCHEDULER_VIEW) for p in others)
            for r in CHECKED_RESOURCES:
                if need.get(r, 0) > 0 and used.get(r, 0) + need[r] > limit.get(r, 0):
                    out.append(
                        f"scheduler's view: {object_key(pod)} bound to {node} at resourceVersion {rv} "
                        f"needs {r} {need[r]} with {used.get(r, 0)} of {limit.get(r, 0)} in use"
                    )
            if "pods" in limit and len(others) + 1 > limit["pods"]:
                out.append(f"scheduler's view: {node} holds {len(others) + 1} pods at {rv}")
        admitted = [p for p in on_node.values() if _admitted(p)]
        if uid in on_node and _admitted(pod):
            used = _sum(_allocated(p) for p in admitted)
            for r in CHECKED_RESOURCES:
                if used.get(r, 0) > limit.get(r, 0):
                    out.append(
                        f"kubelet's view: {node} has {r} {used[r]} allocated of "
                        f"{limit.get(r, 0)} at resourceVersion {rv} ({object_key(pod)})"
                    )
    return out


def _forgotten(
    uid: str, binding: str, unconfirmed: AbstractSet[str], seen_bound: Mapping[str, float] | None
) -> bool:
    """Whether the scheduler may not have known pod `uid` when it bound pod `binding`: its
    binding was unconfirmed and seen within UNCONFIRMED_GRACE of the new one."""
    if uid not in unconfirmed:
        return False
    if seen_bound is None or uid not in seen_bound or binding not in seen_bound:
        return True
    return seen_bound[binding] - seen_bound[uid] < UNCONFIRMED_GRACE


def unconfirmed_bindings(histories: Histories, confirmed: AbstractSet[tuple[str, str]]) -> set[str]:
    """The uids of pods bound in the histories whose binding (namespace/name, node) is not in
    `confirmed`, the bindings the schedulers logged as done."""
    out = set()
    for uid, versions in histories.items():
        node = next((v.pod.spec.node_name for v in versions if v.pod.spec.node_name), "")
        if node and (object_key(versions[0].pod), node) not in confirmed:
            out.add(uid)
    return out


def _sum(items: Iterable[Amounts]) -> Amounts:
    total: Amounts = {}
    for a in items:
        for k, x in a.items():
            total[k] = total.get(k, 0) + x
    return total


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100, nearest rank) of `values`; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def recovery_times(restarts: Sequence[float], bindings: Sequence[float]) -> list[float]:
    """For each restart time, the time until the first binding observed after it (restarts
    followed by no binding are left out: nothing was left to bind)."""
    ordered = sorted(bindings)
    out = []
    for t in restarts:
        i = bisect.bisect_right(ordered, t)
        if i < len(ordered):
            out.append(ordered[i] - t)
    return out


def _alive(versions: Sequence[PodVersion]) -> types_pb2.Pod | None:
    last = versions[-1]
    if last.type == DELETED:
        return None
    return last.pod


def _free(histories: Histories, allocatable: Mapping[str, Mapping[str, str]]) -> dict[str, Amounts]:
    """What is left on each node after the pods bound there (terminating ones included)."""
    free = {n: amounts(a) for n, a in allocatable.items()}
    for versions in histories.values():
        pod = _alive(versions)
        if pod is None or not _counts(pod) or pod.spec.node_name not in free:
            continue
        left = free[pod.spec.node_name]
        for r, x in pod_requests(pod, _SCHEDULER_VIEW).items():
            left[r] = left.get(r, 0) - x
        left["pods"] = left.get("pods", 0) - 1
    return free


def _fits(need: Amounts, free: Mapping[str, int]) -> bool:
    if free.get("pods", 0) < 1:
        return False
    return all(need.get(r, 0) <= free.get(r, 0) for r in CHECKED_RESOURCES)


def pending_that_fit(
    histories: Histories, allocatable: Mapping[str, Mapping[str, str]]
) -> list[str]:
    """The pods (namespace/name) that are not bound, not being deleted, and whose requests
    fit in what some node has left: the scheduler should bind them."""
    free = _free(histories, allocatable)
    out = []
    for versions in histories.values():
        pod = _alive(versions)
        if pod is None or pod.spec.node_name or pod.metadata.HasField("deletion_timestamp"):
            continue
        need = pod_requests(pod, _SCHEDULER_VIEW)
        if any(_fits(need, f) for f in free.values()):
            out.append(object_key(pod))
    return sorted(out)


def pods_expected_and_bound(
    histories: Histories, allocatable: Mapping[str, Mapping[str, str]]
) -> tuple[int, int]:
    """(pods that exist and are bound or fit a node, pods that exist and are bound)."""
    bound = sum(
        1 for vs in histories.values() if (p := _alive(vs)) is not None and p.spec.node_name
    )
    return bound + len(pending_that_fit(histories, allocatable)), bound


def write_revision(versions: Sequence[PodVersion], what: str) -> int | None:
    """The resourceVersion of the pod's binding ("bound": its first version with a node) or
    of the start of its deletion ("preempted": its first version with a deletionTimestamp,
    or its DELETED one)."""
    for v in versions:
        if what == "bound" and v.pod.spec.node_name:
            return v.resource_version
        if what == "preempted" and (
            v.type == DELETED or v.pod.metadata.HasField("deletion_timestamp")
        ):
            return v.resource_version
    return None


def still_terminating(histories: Histories) -> list[str]:
    """The pods (namespace/name) with a deletionTimestamp whose deletion has not completed."""
    out = []
    for versions in histories.values():
        pod = _alive(versions)
        if pod is not None and pod.metadata.HasField("deletion_timestamp"):
            out.append(object_key(pod))
    return sorted(out)
