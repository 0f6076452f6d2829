"""The node groups as the cloud and the API show them at the start of a loop (upstream
clusterstate.ClusterStateRegistry, reduced to what scale-up needs): target sizes, instances,
the Nodes registered for them, the upcoming nodes (asked for, not registered yet), and the
instances that failed: an instance with a creation error, or still not Ready
--max-node-provision-time after the autoscaler first saw it, is deleted and its group backed
off (upstream handleInstanceCreationErrors and the max-node-provision-time timeout)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

from autoscaler.backoff import Backoff
from autoscaler.metrics import Metrics
from kemu.api.cloud.v1 import cloud_pb2
from kemu.api.v1 import types_pb2
from kemu.client.clock import PeerCalls
from kemu.client.cloudprovider import NodeGroupTemplate
from kemu.component.clock import Clock
from kemu.machinery.errors import ApiError
from kemu.machinery.node_conditions import is_node_ready

logger = logging.getLogger(__name__)

CREATING: Final = cloud_pb2.InstanceStatus.instanceCreating
DELETING: Final = cloud_pb2.InstanceStatus.instanceDeleting


class CloudApi(Protocol):
    """What the autoscaler asks of the cloud (kemu.client.cloudprovider.CloudProviderClient;
    a fake in unit tests)."""

    requests_in_flight: int
    """Calls being made (the event-driven clock waits for them: kemu.client.clock)."""
    peer_calls: PeerCalls
    """The calls made, counted for the event-driven clock."""

    async def refresh(self) -> None: ...

    async def node_groups(self) -> list[cloud_pb2.NodeGroup]: ...

    async def target_size(self, group: str) -> int: ...

    async def increase_size(self, group: str, delta: int) -> None: ...

    async def delete_nodes(self, group: str, nodes: Sequence[tuple[str, str]]) -> None: ...

    async def nodes(self, group: str) -> list[cloud_pb2.Instance]: ...

    async def template(self, group: str) -> NodeGroupTemplate: ...


def instance_name(provider_id: str) -> str:
    """kemu://<group>/<instance> -> <instance> (the Node's name)."""
    return provider_id.rsplit("/", 1)[-1]


@dataclass
class GroupState:
    id: str
    min_size: int
    max_size: int
    target: int
    instances: list[cloud_pb2.Instance] = field(default_factory=list)
    nodes: list[types_pb2.Node] = field(default_factory=list)
    """The registered Nodes of the group's instances."""

    @property
    def ready(self) -> int:
        return sum(1 for n in self.nodes if is_node_ready(n))

    @property
    def upcoming(self) -> int:
        """Asked for and not registered yet: counted as capacity in simulations."""
        return max(0, self.target - len(self.nodes))


class ClusterState:
    def __init__(
        self,
        cloud: CloudApi,
        clock: Clock,
        backoff: Backoff,
        metrics: Metrics,
        *,
        max_node_provision_time: float,
    ) -> None:
        self._cloud = cloud
        self._clock = clock
        self.backoff = backoff
        self._metrics = metrics
        self._max_provision = max_node_provision_time
        # Instance id -> when this autoscaler first saw it creating (monotonic).
        self._creating_since: dict[str, float] = {}
        self._templates: dict[str, NodeGroupTemplate] = {}
        # Group -> when this autoscaler last grew it (monotonic): its new instances count
        # their provisioning time from then.
        self._scaled_up_at: dict[str, float] = {}

    def register_scale_up(self, group: str, now: float) -> None:
        self._scaled_up_at[group] = now

    async def template(self, group: str) -> NodeGroupTemplate:
        """The group's template Node and its ResourceSlices (asked once per group)."""
        t = self._templates.get(group)
        if t is None:
            t = self._templates[group] = await self._cloud.template(group)
        return t

    async def update(self, nodes: Sequence[types_pb2.Node]) -> dict[str, GroupState]:
        """Reads every group from the cloud, deletes failed instances (backing their groups
        off) and returns the groups as they stand after that."""
        await self._cloud.refresh()
        groups = await self._read(nodes)
        if await self._delete_failed(groups):
            groups = await self._read(nodes)
        for g in groups.values():
            if g.id in self._scaled_up_at and g.upcoming == 0:
                # The scale-up completed: a later failure backs off from the start again
                # (upstream removes the back-off when a scale-up request is fulfilled).
                del self._scaled_up_at[g.id]
                self.backoff.remove(g.id)
        self._metrics.node_groups_count.labels("autoscaled").set(len(groups))
        return groups

    async def _read(self, nodes: Sequence[types_pb2.Node]) -> dict[str, GroupState]:
        by_provider = {n.spec.provider_id: n for n in nodes if n.spec.provider_id}
        out: dict[str, GroupState] = {}
        seen: set[str] = set()
        for g in await self._cloud.node_groups():
            state = GroupState(g.id, g.min_size, g.max_size, await self._cloud.target_size(g.id))
            state.instances = await self._cloud.nodes(g.id)
            for inst in state.instances:
                seen.add(inst.id)
                node = by_provider.get(inst.id)
                if node is not None and inst.status.instance_state != DELETING:
                    state.nodes.append(node)
            out[g.id] = state
        for gone in set(self._creating_since) - seen:
            del self._creating_since[gone]
        return out

    async def _delete_failed(self, groups: dict[str, GroupState]) -> bool:
        now = self._clock.monotonic()
        deleted = False
        for g in groups.values():
            failed: list[tuple[cloud_pb2.Instance, str]] = []
            for inst in g.instances:
                if inst.status.instance_state != CREATING:
                    self._creating_since.pop(inst.id, None)
                    continue
                since = self._creating_since.setdefault(inst.id, self._scaled_up_at.get(g.id, now))
                err = inst.status.error_info
                if err.error_code:
                    failed.append((inst, f"{err.error_code}: {err.error_message}"))
                elif now - since >= self._max_provision:
                    failed.append((inst, f"not ready after {self._max_provision:g}s"))
            if not failed:
                continue
            reason = failed[0][1]
            code = failed[0][0].status.error_info.error_code or "timeout"
            until = self.backoff.backoff(g.id, reason, now, code)
            # The scale-up failed: it is not fulfilled by the group shrinking back.
            self._scaled_up_at.pop(g.id, None)
            self._metrics.failed_scale_ups.labels(
                "timeout" if not failed[0][0].status.error_info.error_code else "cloudProviderError"
            ).inc()
            logger.warning(
                "node group %s: deleting %d failed instance(s) (%s: %s); backed off for %gs",
                g.id,
                len(failed),
                ", ".join(instance_name(i.id) for i, _ in failed),
                reason,
                until - now,
            )
            try:
                await self._cloud.delete_nodes(
                    g.id, [(i.id, instance_name(i.id)) for i, _ in failed]
                )
                deleted = True
            except ApiError as e:
                logger.warning("node group %s: deleting failed instances: %s", g.id, e)
            for i, _ in failed:
                self._creating_since.pop(i.id, None)
        return deleted
