"""The node lifecycle controller (upstream pkg/controller/nodelifecycle): notices kubelets that
stopped reporting, marks their nodes' conditions Unknown and taints the nodes so that the
scheduler stops placing pods on them; the taints go when the node reports Ready again.

Health, as upstream's tryUpdateNodeHealth. For each node the controller keeps the last
heartbeat it saw (the Ready condition's lastHeartbeatTime), the last renewTime of the Lease
kube-node-lease/<node>, and the probe time: when, on the controller's own clock, it last saw
either of them change (a newer renewTime, a different heartbeat). The first observation of a
node counts as a probe, so a restarted controller gives every node a full grace period. Times
written by the kubelet are only compared with earlier values from the same kubelet, never with
the controller's clock, so clock skew between processes does not matter.

Every --node-monitor-period (and at once on a Node or Lease event) each node is checked (a
pass at which no node can have gone silent past the grace period is skipped: it would change
nothing, every other change reaches the controller as an event; kemu.component.ticker): when
more than --node-monitor-grace-period (50 s from 1.32, 40 s before, by the emulated version)
has passed since its probe, its Ready condition and its
MemoryPressure, DiskPressure and PIDPressure conditions (those present) become
status Unknown, reason NodeStatusUnknown, message "Kubelet stopped posting node status.",
lastTransitionTime now (lastHeartbeatTime is left alone); an Event NodeNotReady is recorded
when Ready leaves True, and then every pod bound to the node gets Ready=False
(MarkPodsNotReady: one status update per pod, a Warning Event NodeNotReady "Node is not ready"
on it; retried until every pod is marked).

Taints (TaintBasedEvictions and upstream's NoSchedule tainting pass) follow the Ready
condition: Unknown gets node.kubernetes.io/unreachable with effects NoSchedule and NoExecute,
False gets node.kubernetes.io/not-ready with both effects, True gets neither. The NoExecute
taints carry timeAdded, as upstream's. Other taints are never touched. A node becomes healthy
again when its kubelet renews its lease and posts Ready=True: the taints are then removed.

Differences from upstream, on purpose:
- Bare nodes are left alone: a node is only monitored once a kubelet shows itself, that is
  when it has a Ready condition and either a Lease or a heartbeat in that condition. Upstream
  marks every node Unknown after a grace period, including Node objects that no kubelet will
  ever report for; kemu's scheduler tests and benchmarks create exactly such nodes (often with
  a static Ready=True), and they must stay usable however long the run.
- Pods are not evicted here: the NoExecute taints are acted on by the taint eviction
  controller (controllermanager.taint_eviction), as upstream since 1.29.
- No zone disruption modes and no rate limit on NoExecute tainting (upstream taints at most
  --node-eviction-rate nodes per second per zone and stops when a whole zone is down), no
  condition-based taints (memory-pressure, disk-pressure, pid-pressure, unschedulable), no
  RegisteredNode/RemovingNode events, no node label reconciliation.
- Conditions that are absent are not added (upstream adds them as NodeStatusNeverUpdated).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from controllermanager.config import NodeLifecycleOptions
from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from controllermanager.controller_utils import POD_NODE_NAME_INDEX, index_pods_by_node_name
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.component.ticker import Ticker
from kemu.component.version import DEFAULT_VERSION, Version
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import ApiError, Conflict, NotFound
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING
from kemu.machinery.taints import TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE

logger = logging.getLogger(__name__)

NAME: Final = "nodelifecycle"
EVENT_SOURCE: Final = "node-controller"

NODE_LEASE_NAMESPACE: Final = "kube-node-lease"
NODE_UPDATE_WORKERS: Final = 8
UPDATE_RETRIES: Final = 2

READY: Final = "Ready"
MONITORED_CONDITIONS: Final = (READY, "MemoryPressure", "DiskPressure", "PIDPressure")
"""The conditions set to Unknown when the kubelet stops reporting (not NetworkUnavailable,
which the control plane owns)."""
UNKNOWN: Final = "Unknown"
NODE_STATUS_UNKNOWN_REASON: Final = "NodeStatusUnknown"
NODE_STATUS_UNKNOWN_MESSAGE: Final = "Kubelet stopped posting node status."

NO_SCHEDULE: Final = "NoSchedule"
NO_EXECUTE: Final = "NoExecute"
_OWN_TAINTS: Final = frozenset(
    (key, effect)
    for key in (TAINT_NODE_UNREACHABLE, TAINT_NODE_NOT_READY)
    for effect in (NO_SCHEDULE, NO_EXECUTE)
)


# ---------------------------------------------------------------- pure helpers


def find_condition(node: types_pb2.Node, type_: str) -> types_pb2.NodeCondition | None:
    for cond in node.status.conditions:
        if cond.type == type_:
            return cond
    return None


def has_kubelet(node: types_pb2.Node, lease: types_pb2.Lease | None) -> bool:
    """Whether a kubelet reports for the node: a Ready condition plus a Lease or a heartbeat.
    Nodes without (bare Node objects of tests and benchmarks) are not monitored."""
    ready = find_condition(node, READY)
    if ready is None:
        return False
    return lease is not None or ready.HasField("last_heartbeat_time")


def mark_unknown(node: types_pb2.Node, now: float) -> types_pb2.Node | None:
    """A copy of `node` whose monitored conditions are Unknown, or None when they all are."""
    new = types_pb2.Node()
    new.CopyFrom(node)
    changed = False
    for cond in new.status.conditions:
        if cond.type in MONITORED_CONDITIONS and cond.status != UNKNOWN:
            cond.status = UNKNOWN
            cond.reason = NODE_STATUS_UNKNOWN_REASON
            cond.message = NODE_STATUS_UNKNOWN_MESSAGE
            cond.last_transition_time.CopyFrom(timestamp(now))
            changed = True
    return new if changed else None


def wanted_taints(ready_status: str) -> frozenset[tuple[str, str]]:
    """The (key, effect) taints of this controller a node with this Ready status carries."""
    if ready_status == UNKNOWN:
        key = TAINT_NODE_UNREACHABLE
    elif ready_status == "False":
        key = TAINT_NODE_NOT_READY
    else:
        return frozenset()
    return frozenset({(key, NO_SCHEDULE), (key, NO_EXECUTE)})


def reconcile_taints(
    taints: Iterable[types_pb2.Taint], wanted: frozenset[tuple[str, str]], now: float
) -> list[types_pb2.Taint] | None:
    """The node's taints with this controller's set to `wanted` (others kept, in order; taints
    that stay keep their timeAdded), or None when nothing changes."""
    kept: list[types_pb2.Taint] = []
    present: set[tuple[str, str]] = set()
    removed = False
    for taint in taints:
        pair = (taint.key, taint.effect)
        if pair in _OWN_TAINTS and pair not in wanted:
            removed = True
            continue
        present.add(pair)
        kept.append(taint)
    missing = sorted(wanted - present)
    if not missing and not removed:
        return None
    for key, effect in missing:
        taint = types_pb2.Taint(key=key, effect=effect)
        if effect == NO_EXECUTE:
            taint.time_added.CopyFrom(timestamp(now))
        kept.append(taint)
    return kept


def pod_not_ready(pod: types_pb2.Pod, now: float) -> types_pb2.Pod | None:
    """A copy of `pod` whose Ready condition is False (lastTransitionTime now, reason and
    message kept, as upstream's UpdatePodCondition), or None if it has none or it is False."""
    for cond in pod.status.conditions:
        if cond.type != READY:
            continue
        if cond.status == "False":
            return None
        new = types_pb2.Pod()
        new.CopyFrom(pod)
        for c in new.status.conditions:
            if c.type == READY:
                c.status = "False"
                c.last_transition_time.CopyFrom(timestamp(now))
        return new
    return None


@dataclass
class NodeHealth:
    """What the controller last saw of one node's kubelet (times written by the kubelet, in
    nanoseconds) and when it saw them change (`probe`, the controller's monotonic clock)."""

    probe: float
    heartbeat: int | None
    renew_time: int | None
    ready_status: str
    pods_to_mark: bool = False
    """Ready left True and the node's pods are not all marked Ready=False yet."""
    silent: bool = False
    """A check found the node silent past the grace period and marked it (until its probe
    changes, a monitor pass has nothing to do for it)."""


# ---------------------------------------------------------------- the controller


class NodeLifecycleController:
    """Marks nodes whose kubelet went silent Unknown and taints them; see the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        options: NodeLifecycleOptions | None = None,
        emulated_version: Version | None = None,
        recorder: EventRecorder | None = None,
    ) -> None:
        self._client = client
        self._clock = clock
        self.options = options or NodeLifecycleOptions()
        self.grace_period = self.options.grace_period(
            emulated_version if emulated_version is not None else DEFAULT_VERSION
        )
        self._recorder = recorder or EventRecorder(
            client, EVENT_SOURCE, host=socket.gethostname(), clock=clock
        )
        self.queue = WorkQueue(clock, name=NAME)
        self._nodes: Informer[types_pb2.Node] = informers.informer(types_pb2.Node)
        self._leases: Informer[types_pb2.Lease] = informers.informer(
            types_pb2.Lease, namespace=NODE_LEASE_NAMESPACE
        )
        self._pods: Informer[types_pb2.Pod] = informers.informer(types_pb2.Pod)
        index_pods_by_node_name(self._pods)
        self.health: dict[str, NodeHealth] = {}
        """Per monitored node; only the worker holding the node's key touches its entry."""
        self._monitor = Ticker(
            clock, self.options.node_monitor_period, self.monitor_node_health, self.next_due
        )
        """The passes every --node-monitor-period, those at which no node can have gone
        silent past the grace period skipped (they would change nothing)."""
        self._nodes.add_event_handler(
            FuncHandler(self._enqueue, lambda _old, new: self._enqueue(new), self._on_node_delete)
        )
        self._leases.add_event_handler(
            FuncHandler(self._enqueue, lambda _old, new: self._enqueue(new))
        )

    @property
    def name(self) -> str:
        return NAME

    def _enqueue(self, obj: types_pb2.Node | types_pb2.Lease) -> None:
        self.queue.add(obj.metadata.name)

    def _on_node_delete(self, node: types_pb2.Node) -> None:
        self.queue.add(node.metadata.name)  # the sync forgets it

    # ------------------------------------------------------------ sync

    def _observe(self, node: types_pb2.Node, lease: types_pb2.Lease | None) -> NodeHealth:
        """Updates the node's health record from what the kubelet last wrote."""
        now = self._clock.monotonic()
        ready = find_condition(node, READY)
        assert ready is not None  # has_kubelet
        heartbeat = (
            ready.last_heartbeat_time.ToNanoseconds()
            if ready.HasField("last_heartbeat_time")
            else None
        )
        renew_time = (
            lease.spec.renew_time.ToNanoseconds()
            if lease is not None and lease.spec.HasField("renew_time")
            else None
        )
        name = node.metadata.name
        health = self.health.get(name)
        if health is None:
            logger.info("node %s: first seen, assuming it is healthy now", name)
            health = NodeHealth(now, heartbeat, renew_time, ready.status)
            self.health[name] = health
            self._monitor.wake(now + self.grace_period)
            return health
        probed = health.probe
        if heartbeat != health.heartbeat:
            health.heartbeat = heartbeat
            health.probe = now
        if renew_time is not None and (health.renew_time is None or renew_time > health.renew_time):
            health.renew_time = renew_time
            health.probe = now
        if health.silent and health.probe != probed:
            health.silent = False
            self._monitor.wake(now + self.grace_period)
        return health

    async def sync(self, name: str) -> None:
        """Checks one node; raises an ApiError to be retried later."""
        node = self._nodes.lister.get(name)
        attempt = 0
        while True:
            if node is None:
                if self.health.pop(name, None) is not None:
                    logger.info("node %s: deleted, forgetting it", name)
                return
            try:
                await self._sync_node(node)
                return
            except Conflict:
                attempt += 1
                if attempt > UPDATE_RETRIES:
                    raise
                logger.debug("node %s: conflict writing, retrying on a fresh copy", name)
            try:
                node = await self._client.get(types_pb2.Node, name)
            except NotFound:
                node = None

    async def _sync_node(self, node: types_pb2.Node) -> None:
        name = node.metadata.name
        lease = self._leases.lister.get(name, NODE_LEASE_NAMESPACE)
        if not has_kubelet(node, lease):
            self.health.pop(name, None)
            return
        health = self._observe(node, lease)
        silent_for = self._clock.monotonic() - health.probe
        if silent_for > self.grace_period:
            unknown = mark_unknown(node, self._clock.now())
            if unknown is not None:
                node = await self._client.update_status(unknown)
                logger.info(
                    "node %s: no lease renewal or heartbeat seen for %.1fs, "
                    "its conditions are now Unknown",
                    name,
                    silent_for,
                )
            health.silent = True
        ready = find_condition(node, READY)
        status = ready.status if ready is not None else UNKNOWN
        if health.ready_status == "True" and status != "True":
            self._recorder.event(
                node, EVENT_NORMAL, "NodeNotReady", "", f"Node {name} status is now: NodeNotReady"
            )
            health.pods_to_mark = True
        health.ready_status = status
        if health.pods_to_mark and status != "True":
            await self.mark_pods_not_ready(name)
        health.pods_to_mark = False
        taints = reconcile_taints(node.spec.taints, wanted_taints(status), self._clock.now())
        if taints is not None:
            new = types_pb2.Node()
            new.CopyFrom(node)
            del new.spec.taints[:]
            new.spec.taints.extend(taints)
            await self._client.update(new)
            logger.info(
                "node %s: Ready is %s, taints now %s",
                name,
                status,
                ", ".join(f"{t.key}:{t.effect}" for t in taints) or "none",
            )

    async def mark_pods_not_ready(self, node_name: str) -> None:
        """upstream's MarkPodsNotReady: every pod bound to the node gets Ready=False (its
        lastTransitionTime now); the first error is raised once every pod was tried."""
        error: ApiError | None = None
        for pod in self._pods.lister.by_index(POD_NODE_NAME_INDEX, node_name):
            new = pod_not_ready(pod, self._clock.now())
            if new is None:
                continue
            try:
                await self._client.update_status(new)
            except NotFound:
                continue
            except ApiError as e:
                error = error or e
                continue
            logger.info(
                "pod %s/%s: Ready is now False, its node %s is not ready",
                pod.metadata.namespace,
                pod.metadata.name,
                node_name,
            )
            self._recorder.event(pod, EVENT_WARNING, "NodeNotReady", "", "Node is not ready")
        if error is not None:
            raise error

    # ------------------------------------------------------------ workers

    def monitor_node_health(self) -> None:
        """Queues every node for a check (upstream's monitorNodeHealth pass)."""
        for name in self._nodes.lister.keys():
            self.queue.add(name)

    def next_due(self) -> float | None:
        """The earliest instant at which a monitor pass can find a node silent past the grace
        period (None: no node can be, until one is first seen or heard from again)."""
        probes = [h.probe for h in self.health.values() if not h.silent]
        return min(probes) + self.grace_period if probes else None

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "syncing node", logger)

    async def run(self) -> None:
        """Monitors nodes until cancelled; the informers must be running."""
        await run_controller(
            f"the node lifecycle controller (monitor period "
            f"{self.options.node_monitor_period:g}s, grace period {self.grace_period:g}s)",
            logger,
            synced=(self._nodes, self._leases, self._pods),
            queues=(self.queue,),
            tasks=[
                ("nodelifecycle events", self._recorder.run),
                ("nodelifecycle monitor", self._monitor.run),
                *workers("nodelifecycle", NODE_UPDATE_WORKERS, self._worker),
            ],
        )


def new_controller(
    ctx: ControllerContext, options: NodeLifecycleOptions | None = None
) -> NodeLifecycleController:
    """The init function registered as "nodelifecycle" (app.py binds the flags' options)."""
    return NodeLifecycleController(
        ctx.client, ctx.informers, ctx.clock, options=options, emulated_version=ctx.gates.version
    )
