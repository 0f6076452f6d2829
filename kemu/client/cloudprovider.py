"""A typed async client of the emulated cloud's node-group API (kemu.api.cloud.v1), for the
autoscaler and the tests: one method per RPC, kemu's typed errors (kemu.wire) on failure."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, TypeVar, cast

import anyio
import anyio.lowlevel
import grpc
from google.protobuf.message import Message

from kemu import wire
from kemu.api.cloud.v1 import cloud_pb2
from kemu.api.v1 import types_pb2
from kemu.client.clock import PeerCalls

_SERVICE: Final = "/kemu.api.cloud.v1.CloudProvider/"
DEFAULT_TIMEOUT: Final = 30.0

Resp = TypeVar("Resp", bound=Message)


@dataclass(frozen=True)
class NodeGroupTemplate:
    """NodeGroupTemplateNodeInfo's answer: the Node a new instance registers and the node-local
    ResourceSlices it publishes (upstream TemplateNodeInfo's LocalResourceSlices)."""

    node: types_pb2.Node
    resource_slices: tuple[types_pb2.ResourceSlice, ...] = ()


class CloudProviderClient:
    def __init__(self, address: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.address = address
        self.timeout = timeout
        self._channel = grpc.aio.insecure_channel(address)
        self.requests_in_flight = 0
        """Calls being made (the autoscaler's work the event-driven clock waits for: the
        cloud is not the apiserver, whose calls the clock counts itself)."""
        self.peer_calls = PeerCalls()
        """The calls made, for the event-driven clock (kemu.client.clock)."""

    async def close(self) -> None:
        await self._channel.close(None)

    async def _call(self, method: str, request: Message, response: type[Resp]) -> Resp:
        tags = self.peer_calls.metadata()
        call = self._channel.unary_unary(
            _SERVICE + method,
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=response.FromString,
        )(
            request,
            timeout=self.timeout,
            wait_for_ready=True,
            metadata=tags or None,
        )
        self.requests_in_flight += 1
        try:
            return await call  # type: ignore[no-any-return]
        except grpc.aio.AioRpcError as e:
            metadata = cast(list[tuple[str, str | bytes]], list(e.trailing_metadata() or ()))
            if tags and not wire.answered(metadata):
                self.peer_calls.abandoned += 1
            raise wire.error_from_status(e.code(), e.details(), metadata) from None
        except asyncio.CancelledError:
            if tags:
                self.peer_calls.abandoned += 1
            call.cancel()
            await anyio.lowlevel.checkpoint()
            raise
        finally:
            self.requests_in_flight -= 1

    async def node_groups(self) -> list[cloud_pb2.NodeGroup]:
        out = await self._call(
            "NodeGroups", cloud_pb2.NodeGroupsRequest(), cloud_pb2.NodeGroupsResponse
        )
        return list(out.node_groups)

    async def node_group_for_node(self, provider_id: str, name: str = "") -> str:
        """The node's group id, "" for none."""
        req = cloud_pb2.NodeGroupForNodeRequest(
            node=cloud_pb2.ExternalGrpcNode(provider_id=provider_id, name=name)
        )
        out = await self._call("NodeGroupForNode", req, cloud_pb2.NodeGroupForNodeResponse)
        return out.node_group.id

    async def refresh(self) -> None:
        await self._call("Refresh", cloud_pb2.RefreshRequest(), cloud_pb2.RefreshResponse)

    async def target_size(self, group: str) -> int:
        out = await self._call(
            "NodeGroupTargetSize",
            cloud_pb2.NodeGroupTargetSizeRequest(id=group),
            cloud_pb2.NodeGroupTargetSizeResponse,
        )
        return out.target_size

    async def increase_size(self, group: str, delta: int) -> None:
        await self._call(
            "NodeGroupIncreaseSize",
            cloud_pb2.NodeGroupIncreaseSizeRequest(id=group, delta=delta),
            cloud_pb2.NodeGroupIncreaseSizeResponse,
        )

    async def delete_nodes(self, group: str, nodes: Sequence[tuple[str, str]]) -> None:
        """Deletes (providerID, node name) pairs from `group`."""
        req = cloud_pb2.NodeGroupDeleteNodesRequest(
            id=group,
            nodes=[cloud_pb2.ExternalGrpcNode(provider_id=p, name=n) for p, n in nodes],
        )
        await self._call("NodeGroupDeleteNodes", req, cloud_pb2.NodeGroupDeleteNodesResponse)

    async def decrease_target_size(self, group: str, delta: int) -> None:
        await self._call(
            "NodeGroupDecreaseTargetSize",
            cloud_pb2.NodeGroupDecreaseTargetSizeRequest(id=group, delta=delta),
            cloud_pb2.NodeGroupDecreaseTargetSizeResponse,
        )

    async def nodes(self, group: str) -> list[cloud_pb2.Instance]:
        out = await self._call(
            "NodeGroupNodes",
            cloud_pb2.NodeGroupNodesRequest(id=group),
            cloud_pb2.NodeGroupNodesResponse,
        )
        return list(out.instances)

    async def template_node(self, group: str) -> types_pb2.Node:
        return (await self.template(group)).node

    async def template(self, group: str) -> NodeGroupTemplate:
        """The group's template node and the ResourceSlices it publishes."""
        out = await self._call(
            "NodeGroupTemplateNodeInfo",
            cloud_pb2.NodeGroupTemplateNodeInfoRequest(id=group),
            cloud_pb2.NodeGroupTemplateNodeInfoResponse,
        )
        return NodeGroupTemplate(
            types_pb2.Node.FromString(out.node_bytes),
            tuple(types_pb2.ResourceSlice.FromString(b) for b in out.resource_slice_bytes),
        )

    async def set_failures(
        self, group: str, *, never_ready: int = 0, out_of_capacity: bool = False
    ) -> None:
        """kemu's own: replaces the group's injected failures."""
        req = cloud_pb2.KemuSetFailuresRequest(
            id=group,
            failures=cloud_pb2.KemuFailures(
                never_ready=never_ready, out_of_capacity=out_of_capacity
            ),
        )
        await self._call("KemuSetFailures", req, cloud_pb2.KemuSetFailuresResponse)
