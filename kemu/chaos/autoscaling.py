"""The scaling phase of a chaos run: the cloud (one node group) and the cluster autoscaler as
real processes, waves of ReplicaSets that need new nodes and then free them (workload.Scaling),
what they do recorded (the group's Nodes and the wave pods through watches, the cloud's target
size and instances by polling), and the checks over that record:

- the group never above its maxSize nor below its minSize: the cloud's target size, and its
  instances that are not being deleted (upstream's bounds are on the target size; an instance
  being deleted, and its Node until the cloud removes it, may coexist with its replacement);
  no Node deleted (at any recorded revision) when that leaves fewer than minSize Nodes and
  booting instances;
- no Node deleted while a live pod is bound or nominated to it (the autoscaler of 1.37 counts
  a pod nominated to a node as running there);
- no instance lost or leaked at the end: every instance has its Node and every Node of the
  group its instance, and the target size is the number of instances.

Only the wave pods (namespace chaos-scale) can run on the group's nodes: the churn pods select
the run's static nodes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

import anyio

from kemu.api.cloud.v1 import cloud_pb2
from kemu.api.v1 import types_pb2
from kemu.chaos.workload import Scaling
from kemu.client.client import Client
from kemu.client.cloudprovider import CloudProviderClient
from kemu.machinery.errors import AlreadyExists, ApiError, NotFound
from kemu.machinery.resources import amount
from kemu.testing.builders import make_pod, make_replica_set
from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually
from kemu.testing.invariants import NodeHistory, PodHistory, node_deletions_under_pods
from kemu.testing.ports import LOOPBACK

logger = logging.getLogger(__name__)

NAMESPACE: Final = "chaos-scale"
GROUP: Final = "chaos-pool"
GROUP_LABEL: Final = "kemu.io/node-group"
TO_BE_DELETED: Final = "ToBeDeletedByClusterAutoscaler"
SHUTDOWN_ANNOTATION: Final = "kubelet.kemu.io/shutdown-duration"
# Upstream's scale-down timers shortened together (10m unneeded, 20m unready, 5m unremovable
# recheck: 2s, 4s and 1s): a pool node that went NotReady for a moment (its kubelet starved or
# restarted with the cloud, past the run's 5s node-monitor grace period) would otherwise stay
# unremovable for upstream's 20 minutes; and one whose pods had nowhere to go in a single
# simulation (unready just after it registered, so not held to the utilization threshold:
# NoPlaceToMovePods) is not simulated again for --unremovable-node-recheck-timeout
# (cluster-autoscaler core/scaledown/planner/planner.go, unremovable.Nodes), upstream's 5
# minutes: longer than the run, and no scale-down would follow in it.
AUTOSCALER_ARGS: Final = [
    "--scale-down-unneeded-time", "2s",
    "--scale-down-unready-time", "4s",
    "--unremovable-node-recheck-timeout", "1s",
    "--scale-down-delay-after-add", "2s",
    "--max-graceful-termination-sec", "5",
]  # fmt: skip
BIG_SHARE: Final = 0.6
SMALL_SHARE: Final = 0.1
UP, DRAIN = "up", "drain"
UP_DWELL: Final = 12.0
DRAIN_DWELL: Final = 10.0
EMPTY_DWELL: Final = 6.0


def cloud_config(s: Scaling) -> str:
    return f"""nodeGroups:
- name: {GROUP}
  minSize: {s.minSize}
  maxSize: {s.maxSize}
  template:
    capacity: {{cpu: "{s.cpu}", memory: "{s.memory}", pods: "20"}}
    kubeletArgs: ["--pod-startup-delay", "0s"]
"""


def start(cluster: Cluster, s: Scaling) -> None:
    """The cloud and the autoscaler of the run, not waited for."""
    cloud = cluster.start_cloud(cloud_config(s), provision_delay=s.provisionDelay, wait=False)
    cluster.start_autoscaler(cloud, scan_interval="0.5s", extra_args=AUTOSCALER_ARGS, wait=False)


def cloud_address(cluster: Cluster) -> str:
    return f"{LOOPBACK}:{cluster.component('cloud').port}"


@dataclass(frozen=True)
class CloudSample:
    """The cloud polled at `at`: the group's target size and the ids of its instances not
    being deleted; `node_events` is how many events the group's Node history held then (the
    sample came after those, and before the next)."""

    at: float
    target: int
    instances: frozenset[str]
    node_events: int


@dataclass
class ScalingRecord:
    """What the phase saw; read by the fault thread (`mid_scale_up`, `mid_drain`)."""

    samples: list[CloudSample] = field(default_factory=list)
    nodes: NodeHistory = field(
        default_factory=lambda: NodeHistory(label_selector=f"{GROUP_LABEL}={GROUP}")
    )
    pods: PodHistory = field(default_factory=lambda: PodHistory(NAMESPACE))
    waves_done: int = 0

    def live_nodes(self) -> list[types_pb2.Node]:
        out = []
        for versions in list(self.nodes.versions.values()):
            last = versions[-1]
            if last.type != "DELETED":
                out.append(last.node)
        return out

    def mid_scale_up(self) -> bool:
        """The cloud's target is above the group's registered Nodes: a scale-up in flight."""
        if not self.samples:
            return False
        return self.samples[-1].target > len(self.live_nodes())

    def mid_drain(self) -> bool:
        """A node of the group carries the autoscaler's ToBeDeleted taint."""
        return any(any(t.key == TO_BE_DELETED for t in n.spec.taints) for n in self.live_nodes())


class ScalingPhase:
    def __init__(self, scaling: Scaling, client: Client, cloud: CloudProviderClient) -> None:
        self.scaling = scaling
        self.client = client
        self.cloud = cloud
        self.record = ScalingRecord()
        self._wanted: str | None = None
        self._wake = anyio.Event()

    async def prepare(self) -> None:
        """The namespace, and the group at its minSize with every node Ready."""
        try:
            await self.client.create(
                types_pb2.Namespace(metadata=types_pb2.ObjectMeta(name=NAMESPACE))
            )
        except AlreadyExists:
            pass
        target = await self.cloud.target_size(GROUP)
        if target < self.scaling.minSize:
            await self.cloud.increase_size(GROUP, self.scaling.minSize - target)

        async def at_min() -> bool:
            nodes = (
                await self.client.list(types_pb2.Node, label_selector=f"{GROUP_LABEL}={GROUP}")
            ).items
            ready = [
                n
                for n in nodes
                if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)
            ]
            assert len(ready) >= self.scaling.minSize, f"{len(ready)} group nodes ready"
            return True

        await eventually(at_min, timeout=60)

    async def _instances(self) -> list[cloud_pb2.Instance]:
        """The group's instances that are not being deleted."""
        deleting = cloud_pb2.InstanceStatus.instanceDeleting
        return [i for i in await self.cloud.nodes(GROUP) if i.status.instance_state != deleting]

    async def sample(self) -> None:
        """Polls the cloud (every 0.2 s) while the run lasts; a cloud that is down is skipped."""
        while True:
            try:
                target = await self.cloud.target_size(GROUP)
                instances = frozenset(i.id for i in await self._instances())
            except ApiError:
                pass
            else:
                self.record.samples.append(
                    CloudSample(time.monotonic(), target, instances, self.record.nodes.recorded)
                )
            await anyio.sleep(0.2)

    def request(self, step: str) -> None:
        """Ask the cycle to move on to `step` ("up" or "drain") now; from the fault thread
        through anyio.from_thread, so that an autoscaler fault finds its moment."""
        if step not in (UP, DRAIN):
            raise ValueError(f"step: {step!r} is not {UP!r} or {DRAIN!r}")
        self._wanted = step
        self._wake.set()

    async def cycle(self, done: anyio.Event) -> None:
        """Waves until `done` is set and at least `waves` have run: up (a ReplicaSet of pods
        that each need a node of their own, and one of small pods), drain (the big pods
        deleted: the nodes are underused and drained), empty (the small ones deleted: the
        nodes go); each step lasts its dwell time unless `request` wants one sooner (then
        the cycle goes straight on to it). Ends with nothing left."""
        wave = 0
        while not done.is_set() or wave < self.scaling.waves:
            await self._up(wave)
            self._reached(UP)
            await self._dwell(UP_DWELL, done)
            await self._delete(f"big-{wave}")
            self._reached(DRAIN)
            await self._dwell(DRAIN_DWELL, done)
            await self._delete(f"small-{wave}")
            self.record.waves_done += 1
            wave += 1
            await self._dwell(EMPTY_DWELL, done)

    def _reached(self, step: str) -> None:
        if self._wanted == step:
            self._wanted = None

    async def _dwell(self, seconds: float, done: anyio.Event) -> None:
        with anyio.move_on_after(seconds):
            while self._wanted is None and not done.is_set():
                self._wake = anyio.Event()
                with anyio.move_on_after(0.5):
                    await self._wake.wait()

    async def _up(self, wave: int) -> None:
        """`pods` more nodes' worth of big pods than the group has Nodes (up to maxSize):
        a scale-up whenever the group is below its maxSize."""
        s = self.scaling
        cpu = amount("cpu", s.cpu)
        live = len(self.record.live_nodes())
        big = max(1, min(s.maxSize, live + s.pods))
        await self._replica_set(f"big-{wave}", big, int(cpu * BIG_SHARE))
        await self._replica_set(f"small-{wave}", s.pods, int(cpu * SMALL_SHARE))

    async def _replica_set(self, name: str, replicas: int, millicpu: int) -> None:
        obj = (
            make_replica_set(name).namespace(NAMESPACE).replicas(replicas).selector(app=name).obj()
        )
        tmpl = obj.spec.template
        tmpl.spec.CopyFrom(
            make_pod("x")
            .req(cpu=f"{millicpu}m", memory="64Mi")
            .node_selector({GROUP_LABEL: GROUP})
            .grace(1)
            .obj()
            .spec
        )
        tmpl.metadata.annotations[SHUTDOWN_ANNOTATION] = "1s"
        await self._retry(f"create replicaset {name}", lambda: self.client.create(obj))

    async def _delete(self, name: str) -> None:
        async def delete() -> object:
            try:
                return await self.client.delete(types_pb2.ReplicaSet, name, NAMESPACE)
            except NotFound:
                return None

        await self._retry(f"delete replicaset {name}", delete)

    async def _retry(self, what: str, call: Callable[[], Awaitable[object]]) -> None:
        """A write of the phase, repeated while the control plane is down (an apiserver or
        etcd fault); AlreadyExists after a retry means the first attempt went through."""
        deadline = time.monotonic() + 60
        while True:
            try:
                await call()
                return
            except AlreadyExists:
                return
            except ApiError as e:
                if time.monotonic() > deadline:
                    logger.warning("%s: giving up: %s", what, e)
                    return
                await anyio.sleep(0.5)

    async def settle(self, timeout: float) -> list[str]:  # noqa: ASYNC109
        """Waits for the wave pods to be gone and the group to be consistent (target ==
        instances == Nodes, each instance with its Node); violations if it never is."""
        last: list[str] = []

        async def consistent() -> bool:
            nonlocal last
            last = await self._mismatches()
            assert not last, last
            return True

        try:
            await eventually(consistent, timeout=timeout, interval=0.5)
        except AssertionError:
            return [f"node group {GROUP} {timeout:g}s after the last fault: {m}" for m in last]
        return []

    async def _mismatches(self) -> list[str]:
        out = []
        pods = (await self.client.list(types_pb2.Pod, NAMESPACE)).items
        if pods:
            out.append(f"{len(pods)} wave pods still exist")
        target = await self.cloud.target_size(GROUP)
        every = {i.id for i in await self.cloud.nodes(GROUP)}
        instances = {i.id for i in await self._instances()}
        nodes = (
            await self.client.list(types_pb2.Node, label_selector=f"{GROUP_LABEL}={GROUP}")
        ).items
        registered = {n.spec.provider_id for n in nodes}
        if target != len(instances):
            out.append(f"target size {target} but {len(instances)} instances")
        for leaked in sorted(instances - registered):
            out.append(f"instance {leaked} has no Node (leaked)")
        for lost in sorted(registered - every):
            out.append(f"Node of {lost} has no instance (lost)")
        return out

    def check(self) -> list[str]:
        return check_bounds(self.record.samples, self.scaling) + check_node_deletions(
            self.record.nodes, self.record.pods, self.record.samples, self.scaling
        )

    def figures(self) -> dict[str, int]:
        targets = [s.target for s in self.record.samples]
        ups = sum(1 for a, b in zip(targets, targets[1:], strict=False) if b > a)
        downs = sum(1 for a, b in zip(targets, targets[1:], strict=False) if b < a)
        deleted = sum(1 for vs in self.record.nodes.versions.values() if vs[-1].type == "DELETED")
        return {
            "waves": self.record.waves_done,
            "scale_ups": ups,
            "scale_downs": downs,
            "nodes_seen": len(self.record.nodes.versions),
            "nodes_deleted": deleted,
            "max_target": max(targets, default=0),
        }


def check_bounds(samples: list[CloudSample], s: Scaling) -> list[str]:
    """The cloud's target size and instances stayed within [minSize, maxSize]."""
    out = []
    for sample in samples:
        for what, value in (("target size", sample.target), ("instances", len(sample.instances))):
            if value > s.maxSize:
                out.append(f"{GROUP} {what} {value} above its maxSize {s.maxSize}")
            if what == "target size" and value < s.minSize:
                out.append(f"{GROUP} {what} {value} below its minSize {s.minSize}")
    return sorted(set(out))


def check_node_deletions(
    nodes: NodeHistory, pods: PodHistory, samples: list[CloudSample], s: Scaling
) -> list[str]:
    """Ordered by resourceVersion: no Node deleted when that leaves the group fewer than
    minSize members, nor while a live pod (not terminal, not deleted) is bound or nominated to
    it. A member is a live Node, or an instance still booting: one the cloud listed (not being
    deleted) in its last sample before the deletion was recorded, that no Node has registered
    for yet. Upstream bounds the target size, not the Nodes (the scale-down planner's
    NodeGroupMinSizeReached: target size minus deletions in progress), so an unready node may
    go while its replacement boots (CI AG: chaos-pool-4 deleted, chaos-pool-5 booting)."""
    out: list[str] = []
    node_events = sorted(
        (v for vs in nodes.versions.values() for v in vs),
        key=lambda v: (v.resource_version or 0, v.seq),
    )
    live: set[str] = set()
    registered: set[str] = set()  # the provider ids of every Node seen so far
    for version in node_events:
        node = version.node
        registered.add(node.spec.provider_id)
        if version.type != "DELETED":
            live.add(node.metadata.uid)
            continue
        live.discard(node.metadata.uid)
        before = [x for x in samples if x.node_events <= version.seq]
        booting = before[-1].instances - registered if before else frozenset()
        if len(live) + len(booting) < s.minSize:
            out.append(
                f"{node.metadata.name} deleted at rv {version.resource_version}: "
                f"{len(live)} Nodes left and {len(booting)} instances booting "
                f"(minSize {s.minSize})"
            )
    return out + node_deletions_under_pods(nodes, pods)
