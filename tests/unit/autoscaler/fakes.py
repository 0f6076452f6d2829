"""A fake cloud for the autoscaler's unit tests (the CloudApi protocol): groups whose
instances the test brings up (`register`) or fails; every call recorded."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kemu.api.cloud.v1 import cloud_pb2
from kemu.api.v1 import types_pb2
from kemu.client.clock import PeerCalls
from kemu.client.cloudprovider import NodeGroupTemplate
from kemu.machinery.errors import ApiError, Invalid
from kemu.testing.builders import make_node

RUNNING = cloud_pb2.InstanceStatus.instanceRunning
CREATING = cloud_pb2.InstanceStatus.instanceCreating
DELETING = cloud_pb2.InstanceStatus.instanceDeleting


@dataclass
class FakeGroup:
    id: str
    min_size: int
    max_size: int
    template: types_pb2.Node
    instances: list[cloud_pb2.Instance] = field(default_factory=list)
    resource_slices: list[types_pb2.ResourceSlice] = field(default_factory=list)
    counter: int = 0
    error: str = ""
    """Instances created while set carry this creation error code."""


class FakeCloud:
    def __init__(self, *groups: FakeGroup) -> None:
        self.groups = {g.id: g for g in groups}
        self.requests_in_flight = 0
        self.peer_calls = PeerCalls()
        self.calls: list[tuple[str, str, object]] = []
        self.failures: dict[str, ApiError] = {}
        """Method name ("delete_nodes", "nodes") -> the error it raises while set."""
        self.lost_delete_answer: ApiError | None = None
        """While set, delete_nodes marks the instances deleting and then raises it (the cloud
        took the call in; its answer was lost)."""

    async def refresh(self) -> None:
        pass

    async def node_groups(self) -> list[cloud_pb2.NodeGroup]:
        return [
            cloud_pb2.NodeGroup(id=g.id, min_size=g.min_size, max_size=g.max_size)
            for g in self.groups.values()
        ]

    async def target_size(self, group: str) -> int:
        return len(self.groups[group].instances)

    async def increase_size(self, group: str, delta: int) -> None:
        g = self.groups[group]
        self.calls.append(("increase", group, delta))
        if len(g.instances) + delta > g.max_size:
            raise Invalid.field("delta", f"size increase too large for {group}")
        for _ in range(delta):
            name = f"{group}-{g.counter}"
            g.counter += 1
            inst = cloud_pb2.Instance(id=f"kemu://{group}/{name}")
            inst.status.instance_state = CREATING
            if g.error:
                inst.status.error_info.error_code = g.error
                inst.status.error_info.instance_error_class = 1
            g.instances.append(inst)

    async def delete_nodes(self, group: str, nodes: Sequence[tuple[str, str]]) -> None:
        self.calls.append(("delete", group, [n for _, n in nodes]))
        if "delete_nodes" in self.failures:
            raise self.failures["delete_nodes"]
        if self.lost_delete_answer is not None:
            for inst in self.groups[group].instances:
                if inst.id in {p for p, _ in nodes}:
                    inst.status.instance_state = DELETING
            raise self.lost_delete_answer
        ids = {p for p, _ in nodes}
        g = self.groups[group]
        g.instances = [i for i in g.instances if i.id not in ids]

    async def nodes(self, group: str) -> list[cloud_pb2.Instance]:
        if "nodes" in self.failures:
            raise self.failures["nodes"]
        return list(self.groups[group].instances)

    async def template(self, group: str) -> NodeGroupTemplate:
        g = self.groups[group]
        return NodeGroupTemplate(g.template, tuple(g.resource_slices))

    def register(self, group: str) -> list[types_pb2.Node]:
        """Every creating instance of `group` becomes running; returns their Ready Nodes."""
        g = self.groups[group]
        nodes = []
        for inst in g.instances:
            inst.status.instance_state = RUNNING
            name = inst.id.rsplit("/", 1)[-1]
            node = types_pb2.Node()
            node.CopyFrom(g.template)
            node.metadata.name = name
            node.metadata.labels["kubernetes.io/hostname"] = name
            node.spec.provider_id = inst.id
            node.status.conditions.add(type="Ready", status="True")
            nodes.append(node)
        return nodes


def template(group: str, cpu: str = "2", memory: str = "4Gi", **labels: str) -> types_pb2.Node:
    b = make_node(f"{group}-template").capacity(cpu=cpu, memory=memory, pods=20)
    b = b.label("kemu.io/node-group", group).labels(labels)
    return b.obj()
