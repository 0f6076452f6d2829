"""The node's side of the API: registration, node status and the node Lease.

Upstream: pkg/kubelet/kubelet_node_status.go (registerWithAPIServer, tryUpdateNodeStatus) and
pkg/kubelet/nodelease (the lease controller).

- Registration creates the Node with its capacity, allocatable (capacity minus
  --system-reserved), labels (kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch and
  --node-labels), --register-with-taints and a Ready status. If the Node exists (a restarted
  kubelet), its labels are reconciled and its status rewritten; its spec (taints the node
  lifecycle controller may have added) is left alone, as upstream.
- Addresses: status.addresses is the node's InternalIP (--node-ip, kubelet.network) and its
  Hostname (the node name), as upstream's NodeAddress setter without a cloud provider
  (pkg/kubelet/nodestatus/setters.go).
- Node status: every --node-status-update-frequency (10s) the kubelet compares the status it
  would report with the Node it sees (its node informer) and writes it only when they differ or
  --node-status-report-frequency (5m) has passed since the last write, as upstream does since
  node leases exist: the Lease is the heartbeat, the status write is not. When the node
  informer's changes of the Node reach the agent (`node_changed`, the kubelet routes them), the
  loop (a kemu.component.ticker.Ticker) sleeps through the ticks at which the check could not
  write (the Node unchanged, the report not due): the same writes at the same ticks, without a
  stop of the event-driven clock for every check (a 1,000-node hollow kubelet's phases made one
  every 2 s).
- The Lease kube-node-lease/<node> (holderIdentity = node name, leaseDurationSeconds 40, owned by
  the Node) is renewed every --node-lease-renew-interval on absolute deadlines
  (first + n * interval), so renewals do not drift; a renewal that fails is retried with
  backoff and the next one keeps to the grid (a Conflict, someone else's write, is read again
  and retried at once, as upstream's retryUpdateLease: `renew_lease`). In a hollow kubelet each
  node's grid starts at the offset of its phase (kubelet/app.py NODES_PER_PHASE: up to 100
  nodes share one), the phases spread evenly over the interval, and a phase's renewals travel
  as one UpdateBatch call, each its own write (kubelet/lease_batch.py). Both loops' ticks have
  upstream's jitter (PERIOD_JITTER) as their slack on the virtual clock.
- The kubelet's identity (kemu's addition: the component, its emulated and binary versions and
  feature gates, which the Version RPC and `kemuctl version` report) rides on the Lease of
  one node of the process (`identity`: its label kemu.io/component and annotations,
  kemu.client.identity ComponentIdentity.stamp): the Node authorizer lets a node write no
  other lease (kube-node-lease/<node> only), and the stamp costs no write of its own, each
  renewal carrying it. The Lease keeps upstream's holderIdentity, duration and owner.
"""

from __future__ import annotations

import logging
from typing import Final

import anyio

from kemu.api.v1 import types_pb2
from kemu.client.identity import ComponentIdentity
from kemu.client.informer import Lister
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock
from kemu.component.ticker import DUE_NOW, Ticker
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import AlreadyExists, ApiError, Conflict, NotFound
from kemu.machinery.keys import revision_of
from kubelet.lease_batch import LeaseBatcher
from kubelet.settings import NodeConfig, NodeTiming

logger = logging.getLogger(__name__)

NODE_LEASE_NAMESPACE: Final = "kube-node-lease"
PERIOD_JITTER: Final = 0.04
"""Upstream runs both loops as wait.JitterUntil(period, 0.04, sliding): each period is up to 4%
longer (component-helpers/apimachinery/lease/controller.go, pkg/kubelet/kubelet.go's
syncNodeStatus). kemu keeps them on a grid and uses the 4% as the timer's slack: on the host's
clock a tick comes at its grid instant; the event-driven virtual clock may serve it up to 4%
of a period later, with the ticks of other nodes due by then (one jump for several nodes)."""

HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
OS_LABEL: Final = "kubernetes.io/os"
ARCH_LABEL: Final = "kubernetes.io/arch"
OS: Final = "linux"
ARCH: Final = "amd64"

_RETRY_INITIAL: Final = 0.2
_RETRY_MAX: Final = 7.0
_WRITE_ATTEMPTS: Final = 5
_LEASE_UPDATE_RETRIES: Final = 5  # upstream's lease controller: maxUpdateRetries

# (type, status, reason, message) of the conditions the kubelet reports on a healthy node.
NODE_CONDITIONS: Final = (
    (
        "MemoryPressure",
        "False",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
    ),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


def default_labels(node_name: str) -> dict[str, str]:
    return {HOSTNAME_LABEL: node_name, OS_LABEL: OS, ARCH_LABEL: ARCH}


def build_node(config: NodeConfig, now: float) -> types_pb2.Node:
    node = types_pb2.Node()
    node.metadata.name = config.name
    node.metadata.labels.update({**default_labels(config.name), **config.labels})
    node.spec.taints.extend(config.taints)
    node.spec.provider_id = config.provider_id
    set_status(node.status, config, now)
    return node


def set_status(status: types_pb2.NodeStatus, config: NodeConfig, now: float) -> None:
    """Makes `status` what the kubelet reports now (heartbeats set to now; transition times
    kept while a condition's status does not change)."""
    status.capacity.clear()
    status.capacity.update(config.capacity)
    status.allocatable.clear()
    status.allocatable.update(config.allocatable)
    del status.addresses[:]
    status.addresses.extend(config.addresses())
    status.node_info.kubelet_version = config.kubelet_version
    status.node_info.operating_system = OS
    status.node_info.architecture = ARCH
    by_type = {c.type: c for c in status.conditions}
    for type_, value, reason, message in NODE_CONDITIONS:
        c = by_type.get(type_)
        if c is None:
            c = status.conditions.add(type=type_)
        if c.status != value or not c.HasField("last_transition_time"):
            c.last_transition_time.CopyFrom(timestamp(now))
        c.status, c.reason, c.message = value, reason, message
        c.last_heartbeat_time.CopyFrom(timestamp(now))


def status_differs(node: types_pb2.Node, config: NodeConfig) -> bool:
    """Whether the node's status differs from what the kubelet reports (heartbeats aside)."""
    status = node.status
    if dict(status.capacity) != dict(config.capacity):
        return True
    if dict(status.allocatable) != dict(config.allocatable):
        return True
    if list(status.addresses) != config.addresses():
        return True
    info = status.node_info
    if (info.kubelet_version, info.operating_system, info.architecture) != (
        config.kubelet_version,
        OS,
        ARCH,
    ):
        return True
    by_type = {c.type: c for c in status.conditions}
    for type_, value, reason, message in NODE_CONDITIONS:
        c = by_type.get(type_)
        if c is None or (c.status, c.reason, c.message) != (value, reason, message):
            return True
    return False


async def sleep_until(clock: Clock, deadline: float, *, slack: float = 0.0) -> None:
    await clock.sleep(deadline - clock.monotonic(), slack=slack)


def next_on_grid(deadline: float, interval: float, now: float) -> float:
    """The first deadline + n * interval (n >= 1) after `now`: missed slots are skipped."""
    deadline += interval
    if deadline <= now:
        deadline += ((now - deadline) // interval + 1) * interval
    return deadline


class NodeAgent:
    """Registers one node and keeps its status and Lease current."""

    def __init__(
        self,
        client: ApiClient,
        config: NodeConfig,
        *,
        clock: Clock,
        timing: NodeTiming | None = None,
        lister: Lister[types_pb2.Node] | None = None,
        lease_batch: LeaseBatcher | None = None,
        identity: ComponentIdentity | None = None,
    ) -> None:
        """`lease_batch`: the process's batch of Lease renewals (kubelet/lease_batch.py);
        None: each renewal is its own Update. `identity`: the process's, which this node's
        Lease carries (one node of a process carries it)."""
        self._client = client
        self._identity = identity
        self._lease_batch = lease_batch
        self.config = config
        self._clock = clock
        self.timing = timing or NodeTiming()
        self._lister = lister
        self._node: types_pb2.Node | None = None
        self._lease: types_pb2.Lease | None = None
        self._last_report: float | None = None
        self._notified = False
        """Whether the node informer's changes of this Node reach `node_changed` (the kubelet
        routes them): only then does the status loop skip the ticks at which it would write
        nothing (`_status_due`)."""
        self._changed = True
        """The Node may differ from what the last status check saw."""
        interval = self.timing.status_update_frequency
        self._status_ticker = Ticker(
            clock,
            interval,
            self._status_tick,
            self._status_due,
            slack=interval * PERIOD_JITTER,
        )
        self.registered = anyio.Event()
        self.ready = anyio.Event()
        """Set once the node is registered and its Lease exists."""
        self.lease_renewals = 0
        self.status_writes = 0
        self.status_checks = 0

    @property
    def name(self) -> str:
        return self.config.name

    async def run(
        self,
        *,
        offset: float = 0.0,
        limiter: anyio.CapacityLimiter | None = None,
        after: anyio.Event | None = None,
    ) -> None:
        """Registers and creates the Lease (retrying until both succeed), then keeps the Lease
        and status current. `offset` (0 <= offset < interval) places this node's renewals in
        the interval. `after`: registers once it is set (a hollow kubelet's previous node is
        registered), so that the Nodes are created in a fixed order: the scheduler lists them
        in it, and a seeded run is repeatable."""
        start = self._clock.monotonic()
        if after is not None:
            await after.wait()
        if limiter is None:
            await self._start()
        else:
            async with limiter:
                await self._start()
        lease_interval = self.timing.lease_renew_interval
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                self._lease_loop, start + offset + lease_interval, name=f"lease {self.name}"
            )
            tg.start_soon(
                self._status_ticker.run,
                start + offset + self.timing.status_update_frequency,
                name=f"node status {self.name}",
            )

    async def _start(self) -> None:
        await self.register_until_done()
        await self._renew_until_done()
        self.ready.set()

    # ------------------------------------------------------------ registration

    async def register_until_done(self) -> None:
        delay = _RETRY_INITIAL
        while True:
            try:
                await self.register()
                return
            except ApiError as e:
                logger.warning(
                    "node %s: registration failed (%s: %s), retrying in %.1fs",
                    self.name,
                    e.reason,
                    e,
                    delay,
                )
                await self._clock.sleep(delay)
                delay = min(_RETRY_MAX, delay * 2)

    async def register(self) -> None:
        node = build_node(self.config, self._clock.now())
        try:
            self._node = await self._client.create(node)
            self._last_report = self._clock.monotonic()
            self.status_writes += 1
            logger.info("node %s: registered", self.name)
        except AlreadyExists:
            await self._reconcile_existing()
            logger.info("node %s: already registered, status updated", self.name)
        self.registered.set()

    async def _reconcile_existing(self) -> None:
        wanted = {**default_labels(self.name), **self.config.labels}
        for _ in range(_WRITE_ATTEMPTS):
            existing = await self._client.get(types_pb2.Node, self.name)
            if all(existing.metadata.labels.get(k) == v for k, v in wanted.items()):
                self._node = existing
                break
            updated = types_pb2.Node()
            updated.CopyFrom(existing)
            updated.metadata.labels.update(wanted)
            try:
                self._node = await self._client.update(updated)
                break
            except Conflict:
                continue
        await self.update_status()

    # ------------------------------------------------------------ node status

    def _current(self) -> types_pb2.Node | None:
        seen = self._lister.get(self.name) if self._lister is not None else None
        mine = self._node
        if seen is None:
            return mine
        if mine is None or revision_of(seen) >= revision_of(mine):
            return seen
        return mine

    async def update_status(self) -> None:
        """Writes the node's status (read afresh on Conflict)."""
        node = self._current()
        for _ in range(_WRITE_ATTEMPTS):
            if node is None:
                node = await self._client.get(types_pb2.Node, self.name)
            new = types_pb2.Node()
            new.CopyFrom(node)
            set_status(new.status, self.config, self._clock.now())
            try:
                self._node = await self._client.update_status(new)
            except Conflict:
                node = None
                continue
            self._last_report = self._clock.monotonic()
            self.status_writes += 1
            return
        raise Conflict(f"node {self.name}: status kept changing under {_WRITE_ATTEMPTS} writes")

    async def sync_status(self) -> bool:
        """One tick of the status loop: writes when needed; True if it wrote."""
        self.status_checks += 1
        node = self._current()
        due = (
            self._last_report is None
            or self._clock.monotonic() - self._last_report >= self.timing.status_report_frequency
        )
        if node is not None and not due and not status_differs(node, self.config):
            return False
        await self.update_status()
        return True

    def node_changed(self, node: types_pb2.Node) -> None:
        """The node informer saw this agent's Node (the kubelet's handler calls it): unless it
        is the agent's own last write, the next status tick checks it."""
        self._notified = True
        mine = self._node
        if mine is not None and node.metadata.resource_version == mine.metadata.resource_version:
            return
        self._changed = True
        self._status_ticker.wake()

    def _status_due(self) -> float | None:
        """When the status check can next write: at the next tick while the Node may have
        changed since the last check (or nobody tells this agent of its Node's changes);
        otherwise at the report's deadline. The ticks the status ticker sleeps through would
        have found nothing to write (`sync_status`): the same writes at the same ticks, and
        no stop of the event-driven virtual clock for the others."""
        if not self._notified or self._changed or self._last_report is None:
            return DUE_NOW
        return self._last_report + self.timing.status_report_frequency

    async def _status_tick(self) -> None:
        self._changed = False  # (a change seen during the check marks the next one)
        try:
            await self.sync_status()
        except NotFound:
            logger.warning("node %s: the Node was deleted; not re-registering", self.name)
            self._changed = True  # (checked again at the next tick, as every tick would)
        except ApiError as e:
            logger.warning("node %s: status update failed (%s: %s)", self.name, e.reason, e)
            self._changed = True  # retried at the next tick

    # ------------------------------------------------------------ lease

    def _desired_lease(self, base: types_pb2.Lease | None) -> types_pb2.Lease:
        lease = types_pb2.Lease()
        if base is not None:
            lease.CopyFrom(base)
        lease.metadata.name = self.name
        lease.metadata.namespace = NODE_LEASE_NAMESPACE
        lease.spec.holder_identity = self.name
        lease.spec.lease_duration_seconds = self.timing.lease_duration_seconds
        lease.spec.renew_time.CopyFrom(timestamp(self._clock.now()))
        if self._identity is not None:
            self._identity.stamp(lease.metadata)
        node = self._node
        if node is not None and node.metadata.uid and not lease.metadata.owner_references:
            lease.metadata.owner_references.add(
                api_version="v1", kind="Node", name=self.name, uid=node.metadata.uid
            )
        return lease

    async def _ensure_lease(self) -> types_pb2.Lease | None:
        """The Lease as it stands, or None when it was missing and this created it (the
        renewal is done). Upstream's backoffEnsureLease (its backoff is _renew_until_done's)."""
        try:
            return await self._client.get(types_pb2.Lease, self.name, NODE_LEASE_NAMESPACE)
        except NotFound:
            self._lease = await self._client.create(self._desired_lease(None))
            self.lease_renewals += 1
            return None

    async def renew_lease(self) -> None:
        """One renewal, as upstream's lease controller's sync: an update of the Lease last
        written (no read), else of the Lease read (or created); a Conflict (someone else
        wrote it) reads it again and updates at once, up to _LEASE_UPDATE_RETRIES times
        (retryUpdateLease, maxUpdateRetries). The first update goes through the process's
        batch (kubelet/lease_batch.py) when it has one; the retries one by one."""
        base = self._lease
        if base is None:
            base = await self._ensure_lease()
            if base is None:
                return
        for attempt in range(_LEASE_UPDATE_RETRIES):
            batch = self._lease_batch if attempt == 0 else None
            if batch is not None and not batch.enabled:
                batch = None
            desired = self._desired_lease(base)
            try:
                if batch is not None:
                    self._lease = await batch.update(desired)
                else:
                    self._lease = await self._client.update(desired)
            except Conflict:
                self._lease = None
                base = await self._ensure_lease()
                if base is None:
                    return
                continue
            except NotFound:
                self._lease = None  # created again on the retry
                raise
            self.lease_renewals += 1
            return
        raise Conflict(
            f"node {self.name}: lease kept changing under {_LEASE_UPDATE_RETRIES} updates"
        )

    async def _renew_until_done(self) -> None:
        delay = _RETRY_INITIAL
        while True:
            try:
                await self.renew_lease()
                return
            except ApiError as e:
                logger.warning(
                    "node %s: lease renewal failed (%s: %s), retrying in %.1fs",
                    self.name,
                    e.reason,
                    e,
                    delay,
                )
                await self._clock.sleep(delay)
                delay = min(_RETRY_MAX, delay * 2)

    async def _lease_loop(self, first: float) -> None:
        interval = self.timing.lease_renew_interval
        deadline = first
        while True:
            await sleep_until(self._clock, deadline, slack=interval * PERIOD_JITTER)
            await self._renew_until_done()
            deadline = next_on_grid(deadline, interval, self._clock.monotonic())
