"""The cloud's node groups and instances: what the gRPC API does, over the state file, the
kubelet processes and the instances' Node objects.

An instance is CREATING until its Node is Ready (then it is running), DELETING while it is
being deleted. The target size of a group is the number of its instances not being deleted.
Deleting an instance stops its kubelet and deletes its Node (upstream's cloud node lifecycle
controller deletes the Node of an instance the cloud no longer has); the pod garbage collector
then collects its pods. Every change is saved (cloud.state) before the call returns. A
deletion goes on when its caller goes away (DeleteNodes cancelled): it is the cloud's.

Injected failures (kemu's own, per group; the config's `failures` or KemuSetFailures):
- neverReady N: the next N instances never start a kubelet and stay CREATING without a Node;
- outOfCapacity: new instances fail at once, CREATING with error class OutOfResources (1) and
  code OUT_OF_CAPACITY, as upstream providers report a stock-out; they never start.
The autoscaler is expected to delete such instances (DeleteNodes by providerID).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

import anyio
from anyio.abc import TaskGroup

from cloud.config import NODE_GROUP_LABEL, CloudConfig, Failures, NodeGroupConfig
from cloud.state import (
    CREATING,
    DELETING,
    GroupRecord,
    InstanceRecord,
    StateStore,
    parse_provider_id,
)
from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock, RealClock
from kemu.component.ticker import DUE_NOW, Ticker
from kemu.machinery.errors import Invalid, NotFound
from kemu.machinery.node_conditions import is_node_ready
from kemu.machinery.virtual_time import ClockMode

logger = logging.getLogger(__name__)

RUNNING: Final = "running"
OUT_OF_RESOURCES_ERROR_CLASS: Final = 1
"""upstream's cloudprovider.OutOfResourcesErrorClass."""
OUT_OF_CAPACITY_CODE: Final = "OUT_OF_CAPACITY"
RECONCILE_PERIOD: Final = 0.5
"""Seconds between two looks at the instances that need a kubelet started and at Nodes
without an instance (on the cloud's clock; only while there is something to do)."""
WATCH_PERIOD: Final = 0.5
"""Wall seconds between two looks for a kubelet process that exited or a Node without an
instance (the operating system's events, not the cluster's time)."""
BOOT_WAIT: Final = 30.0
"""Wall seconds a started kubelet counts as booting (see `booting`) at most."""


@dataclass(frozen=True)
class InstanceView:
    """An instance as NodeGroupNodes reports it."""

    provider_id: str
    name: str
    state: str
    """CREATING, RUNNING or DELETING."""
    error_code: str = ""
    error_message: str = ""
    error_class: int = 0


class NodeLister(Protocol):
    """The instances' Nodes as last seen (an informer's lister)."""

    def get(self, name: str, namespace: str = "") -> types_pb2.Node | None: ...

    def list(self, namespace: str | None = None) -> list[types_pb2.Node]: ...


class Kubelets(Protocol):
    """What the cloud needs of its instances' kubelets (cloud.kubelets: a process each, or
    one per node group)."""

    def kill_leftover(self, pid: int, name: str, group: str) -> None:
        """Kills process `pid` if it is a previous cloud's kubelet of instance `name`."""

    def running(self, name: str) -> bool: ...

    def start(self, group: NodeGroupConfig, name: str, provider_id: str) -> int:
        """Starts the kubelet of instance `name`; the pid of the process running it."""

    def exited(self) -> list[tuple[str, int]]: ...

    async def stop(self, name: str) -> None: ...

    async def stop_all(self) -> None: ...


def template_node(g: NodeGroupConfig) -> types_pb2.Node:
    """A Node as a new instance of group `g` registers it (name "template-<group>")."""
    node = types_pb2.Node()
    node.metadata.name = f"template-{g.name}"
    node.metadata.labels.update(
        {
            "kubernetes.io/hostname": node.metadata.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            **g.template.labels,
            NODE_GROUP_LABEL: g.name,
        }
    )
    node.spec.taints.extend(g.template.taints)
    node.status.capacity.update(g.template.capacity)
    node.status.allocatable.update(g.template.capacity)
    node.status.conditions.add(type="Ready", status="True", reason="KubeletReady")
    return node


def instance_view(inst: InstanceRecord, node: types_pb2.Node | None) -> InstanceView:
    """The instance as NodeGroupNodes reports it, given its Node (None: not registered)."""
    if inst.phase == DELETING:
        state = DELETING
    else:
        state = RUNNING if node is not None and is_node_ready(node) else CREATING
    return InstanceView(
        provider_id=inst.provider_id,
        name=inst.name,
        state=state,
        error_code=inst.error_code,
        error_message=inst.error_message,
        error_class=inst.error_class,
    )


def orphan_nodes(
    nodes: Sequence[types_pb2.Node], instances: Mapping[str, InstanceRecord]
) -> list[types_pb2.Node]:
    """The Nodes of this cloud's groups whose instance it does not have."""
    out = []
    for node in nodes:
        parsed = parse_provider_id(node.spec.provider_id)
        if parsed is None or node.metadata.labels.get(NODE_GROUP_LABEL) != parsed[0]:
            continue
        if parsed[1] not in instances and node.metadata.name == parsed[1]:
            out.append(node)
    return out


async def delete_instance_node(client: ApiClient, name: str, provider_id: str) -> None:
    """Deletes the Node of a gone instance (upstream's cloud node lifecycle controller does
    it for a real cloud); a namesake Node of another provider ID is left alone."""
    try:
        node = await client.get(types_pb2.Node, name)
    except NotFound:
        return
    if node.spec.provider_id not in ("", provider_id):
        return  # a namesake that is not ours
    try:
        await client.delete(types_pb2.Node, name, uid=node.metadata.uid)
        logger.info("node %s: deleted (its instance is gone)", name)
    except NotFound:
        pass


class BootWatch:
    """The instances whose kubelet was started and whose Node is not registered yet, with
    the wall time it was started: the event-driven clock waits for them, as for any work of
    the cloud (kemu.client.clock), for at most BOOT_WAIT wall seconds."""

    def __init__(self, kubelets: Kubelets, nodes: NodeLister) -> None:
        self._kubelets = kubelets
        self._nodes = nodes
        self._started: dict[str, float] = {}

    def started(self, name: str) -> None:
        self._started[name] = time.monotonic()

    def booting(self) -> bool:
        now = time.monotonic()
        for name, started in list(self._started.items()):
            if self._nodes.get(name) is not None or not self._kubelets.running(name):
                del self._started[name]
            elif now - started > BOOT_WAIT:
                logger.warning(
                    "instance %s: its kubelet has not registered its Node within %gs; the "
                    "clock no longer waits for it",
                    name,
                    BOOT_WAIT,
                )
                del self._started[name]
        return bool(self._started)


class Cloud:
    """The node groups of one cloud; every public method may be called concurrently."""

    def __init__(
        self,
        config: CloudConfig,
        store: StateStore,
        kubelets: Kubelets,
        client: ApiClient,
        nodes: NodeLister,
        *,
        provision_delay: float = 0.0,
        clock: Clock | None = None,
        clock_mode: ClockMode = ClockMode.REAL,
    ) -> None:
        """`clock`: the cloud's (its instances' creation times, the provisioning delay, the
        reconcile period); `clock_mode`: its instances' kubelets run with the same (on the
        virtual clock they are started one at a time: see `reconcile`)."""
        self.config = config
        self._store = store
        self._kubelets = kubelets
        self._client = client
        self._nodes = nodes
        self._provision_delay = provision_delay
        self._clock: Clock = clock or RealClock()
        self._now = self._clock.now
        self._clock_mode = clock_mode
        self._lock = anyio.Lock()
        self._reconciler = Ticker(self._clock, RECONCILE_PERIOD, self.reconcile, self._next_due)
        self._booting = BootWatch(kubelets, nodes)
        self._background: TaskGroup | None = None
        """`run`'s task group while it runs: where deletions go on."""
        self.state = store.load()
        for group in config.node_groups:
            self.state.groups.setdefault(group.name, GroupRecord()).apply_config(group.failures)
        self._save()

    # ------------------------------------------------------------------ queries

    def group(self, name: str) -> NodeGroupConfig:
        group = self.config.group(name)
        if group is None:
            raise NotFound(f'node group "{name}" not found')
        return group

    def group_for_node(self, provider_id: str, node_name: str = "") -> NodeGroupConfig | None:
        """The group of an instance by providerID (or, without one, by Node name)."""
        parsed = parse_provider_id(provider_id)
        name = parsed[1] if parsed else node_name
        inst = self.state.instances.get(name)
        if inst is None or (parsed is not None and parsed[0] != inst.group):
            return None
        return self.config.group(inst.group)

    def target_size(self, group: str) -> int:
        self.group(group)
        return sum(1 for i in self.state.of_group(group) if i.phase != DELETING)

    def instances(self, group: str) -> list[InstanceView]:
        self.group(group)
        return [
            instance_view(i, self._nodes.get(i.name))
            for i in sorted(self.state.of_group(group), key=_index)
        ]

    def template_node(self, group: str) -> types_pb2.Node:
        """A Node as a new instance of `group` registers it (name "template-<group>")."""
        return template_node(self.group(group))

    def template_resource_slices(self, group: str) -> list[types_pb2.ResourceSlice]:
        """The ResourceSlices the template node publishes (the group's resourceSlices)."""
        g = self.group(group)
        return g.template_resource_slices(template_node(g).metadata.name)

    # ------------------------------------------------------------------ changes

    async def increase_size(self, group: str, delta: int) -> list[str]:
        """Creates `delta` instances; their names."""
        g = self.group(group)
        if delta <= 0:
            raise Invalid.field("delta", f"size increase must be positive, got {delta}")
        async with self._lock:
            size = self.target_size(group)
            if size + delta > g.max_size:
                raise Invalid.field(
                    "delta",
                    f"size increase too large: desired {size + delta}, max {g.max_size}",
                )
            record = self.state.groups[group]
            names = []
            for _ in range(delta):
                inst = InstanceRecord(
                    name=f"{group}-{record.next_index}", group=group, created_at=self._now()
                )
                record.next_index += 1
                if record.out_of_capacity:
                    inst.error_code = OUT_OF_CAPACITY_CODE
                    inst.error_message = f"node group {group} is out of capacity (kemu injected)"
                    inst.error_class = OUT_OF_RESOURCES_ERROR_CLASS
                elif record.never_ready > 0:
                    record.never_ready -= 1
                    inst.never_ready = True
                self.state.instances[inst.name] = inst
                names.append(inst.name)
            self._save()
        logger.info("node group %s: +%d instance(s): %s", group, delta, ", ".join(names))
        await self.reconcile()
        self._reconciler.wake(self._next_due())
        return names

    async def delete_nodes(self, group: str, nodes: Sequence[tuple[str, str]]) -> None:
        """Deletes the instances of `nodes` ((providerID, name) pairs) from `group`."""
        g = self.group(group)
        async with self._lock:
            doomed: list[InstanceRecord] = []
            for i, (pid, node_name) in enumerate(nodes):
                owner = self.group_for_node(pid, node_name)
                if owner is None or owner.name != group:
                    raise Invalid.field(
                        f"nodes[{i}]",
                        f"node {node_name or pid} does not belong to node group {group}",
                    )
                parsed = parse_provider_id(pid)
                inst = self.state.instances[parsed[1] if parsed else node_name]
                if inst.phase != DELETING and inst not in doomed:
                    doomed.append(inst)
            size = self.target_size(group)
            if size - len(doomed) < g.min_size:
                raise Invalid.field(
                    "nodes",
                    f"min size reached: node group {group} has {size} instance(s), "
                    f"deleting {len(doomed)} would go below {g.min_size}",
                )
            for inst in doomed:
                inst.phase = DELETING
            self._save()
        logger.info("node group %s: deleting %s", group, ", ".join(i.name for i in doomed))
        await self._finish(doomed)

    async def decrease_target_size(self, group: str, delta: int) -> None:
        """Drops -delta instances that have no Node yet (newest first)."""
        self.group(group)
        if delta >= 0:
            raise Invalid.field("delta", f"size decrease must be negative, got {delta}")
        async with self._lock:
            unregistered = [
                i
                for i in self.state.of_group(group)
                if i.phase != DELETING and self._nodes.get(i.name) is None
            ]
            if -delta > len(unregistered):
                raise Invalid.field(
                    "delta",
                    f"attempt to delete existing nodes: target size {self.target_size(group)}, "
                    f"delta {delta}, instances without a node {len(unregistered)}",
                )
            doomed = sorted(unregistered, key=_index)[delta:]
            for inst in doomed:
                inst.phase = DELETING
            self._save()
        await self._finish(doomed)

    async def set_failures(self, group: str, failures: Failures) -> None:
        self.group(group)
        async with self._lock:
            self.state.groups[group].set_failures(failures)
            self._save()
        logger.info("node group %s: injected failures now %s", group, failures)

    async def _finish(self, doomed: Sequence[InstanceRecord]) -> None:
        """Carries the deletions through and returns when they are done. While the cloud runs
        they are its own tasks (`run`'s task group), not the caller's: a DeleteNodes whose
        caller goes away (an autoscaler killed mid-call cancels the handler) must not leave an
        instance DELETING, its Node still there, until the next cloud restart."""

        async def finish_all() -> None:
            async with anyio.create_task_group() as tg:
                for inst in doomed:
                    tg.start_soon(self._finish_deletion, inst)

        if self._background is None:
            await finish_all()
            return
        done = anyio.Event()

        async def finish_then_signal() -> None:
            try:
                await finish_all()
            finally:
                done.set()

        self._background.start_soon(finish_then_signal)
        await done.wait()

    async def _finish_deletion(self, inst: InstanceRecord) -> None:
        await self._kubelets.stop(inst.name)
        await delete_instance_node(self._client, inst.name, inst.provider_id)
        async with self._lock:
            self.state.instances.pop(inst.name, None)
            self._save()
        logger.info("instance %s deleted", inst.name)

    # ------------------------------------------------------------------ the loop

    async def start(self) -> None:
        """Takes over from a previous cloud: kills its leftover kubelets and finishes the
        deletions it began; instances of groups no longer configured are deleted. A group
        with fewer instances than its minSize gets the missing ones (as a cloud's instance
        group is created at its minimum size)."""
        for inst in list(self.state.instances.values()):
            self._kubelets.kill_leftover(inst.pid, inst.name, inst.group)
            if self.config.group(inst.group) is None:
                logger.warning(
                    "instance %s: group %s is not configured, deleting", inst.name, inst.group
                )
                inst.phase = DELETING
        self._save()
        async with anyio.create_task_group() as tg:
            for inst in list(self.state.instances.values()):
                if inst.phase == DELETING:
                    tg.start_soon(self._finish_deletion, inst)
        for group in self.config.node_groups:
            missing = group.min_size - self.target_size(group.name)
            if missing > 0:
                logger.info(
                    "node group %s: %d instance(s), below its min size %d: creating %d",
                    group.name,
                    group.min_size - missing,
                    group.min_size,
                    missing,
                )
                await self.increase_size(group.name, missing)

    async def run(self) -> None:
        """Keeps the kubelets of the instances running and deletes the Nodes of instances the
        cloud does not have, every RECONCILE_PERIOD seconds while there is such work
        (kemu.component.ticker); runs the deletions."""
        async with anyio.create_task_group() as tg:
            self._background = tg
            try:
                tg.start_soon(self._watch)
                await self._reconciler.run()
            finally:
                self._background = None

    async def _watch(self) -> None:
        """Wakes the reconciler when a kubelet has exited or a Node has no instance: process
        exits are the host's, so they are looked for on its clock."""
        while True:
            await anyio.sleep(WATCH_PERIOD)
            due = self._next_due()
            if due is not None:
                self._reconciler.wake(due)

    def _next_due(self) -> float | None:
        """When `reconcile` next has something to do (monotonic; None: nothing)."""
        offset = self._clock.now() - self._clock.monotonic()
        due: float | None = None
        for inst in self.state.instances.values():
            if not inst.runs_kubelet or self._kubelets.running(inst.name):
                continue
            group = self.config.group(inst.group)
            if group is None or group.external_nodes:
                continue
            at = inst.created_at + self._provision_delay - offset
            due = at if due is None else min(due, at)
        if due is None and orphan_nodes(self._nodes.list(), self.state.instances):
            due = DUE_NOW
        return due

    def booting(self) -> bool:
        """Whether a kubelet this cloud started has not registered its Node yet (see
        BootWatch)."""
        return self._booting.booting()

    async def reconcile(self) -> None:
        for name, code in self._kubelets.exited():
            logger.warning("instance %s: kubelet exited with code %d", name, code)
        now = self._now()
        started = False
        for inst in sorted(self.state.instances.values(), key=_creation_order):
            if not inst.runs_kubelet or self._kubelets.running(inst.name):
                continue
            if self._clock_mode is ClockMode.VIRTUAL and self.booting():
                # One at a time, in the order the instances were created: the clock holds
                # while one boots, so they all come up at the same virtual instant, and in
                # an order that is the same in every run (no race between their kubelets).
                break
            if now < inst.created_at + self._provision_delay:
                continue
            group = self.config.group(inst.group)
            if group is None or group.external_nodes:
                continue
            inst.pid = self._kubelets.start(group, inst.name, inst.provider_id)
            self._booting.started(inst.name)
            started = True
        if started:
            async with self._lock:
                self._save()
        for node in orphan_nodes(self._nodes.list(), self.state.instances):
            await delete_instance_node(self._client, node.metadata.name, node.spec.provider_id)

    async def shutdown(self) -> None:
        await self._kubelets.stop_all()

    def _save(self) -> None:
        self._store.save(self.state)


def _creation_order(inst: InstanceRecord) -> tuple[float, str, int]:
    return (inst.created_at, inst.group, _index(inst))


def _index(inst: InstanceRecord) -> int:
    suffix = inst.name.rsplit("-", 1)[-1]
    return int(suffix) if suffix.isdigit() else 0
