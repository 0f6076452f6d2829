"""The gRPC edge of the cloud: kemu.api.cloud.v1.CloudProvider over `Cloud`.

Errors travel as the apiserver's do (kemu.wire): an unknown group is NOT_FOUND, a bad delta or
a node of another group INVALID_ARGUMENT with the field named; NodeGroupGetOptions is
UNIMPLEMENTED, which upstream's protocol allows.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

import grpc

from cloud.config import Failures, NodeGroupConfig
from cloud.provider import RUNNING, Cloud
from cloud.state import DELETING
from kemu import wire
from kemu.api.cloud.v1 import cloud_pb2, cloud_pb2_grpc
from kemu.machinery.errors import ApiError, InternalError, Invalid

logger = logging.getLogger(__name__)

T = TypeVar("T")

_STATES: Final = {
    RUNNING: cloud_pb2.InstanceStatus.instanceRunning,
    DELETING: cloud_pb2.InstanceStatus.instanceDeleting,
}


def _group(g: NodeGroupConfig) -> cloud_pb2.NodeGroup:
    return cloud_pb2.NodeGroup(
        id=g.name,
        min_size=g.min_size,
        max_size=g.max_size,
        debug=f"{g.name} (min {g.min_size}, max {g.max_size}, capacity "
        + ",".join(f"{k}={v}" for k, v in g.template.capacity.items())
        + ")",
    )


class CloudProviderServicer(cloud_pb2_grpc.CloudProviderServicer):
    def __init__(self, cloud: Cloud) -> None:
        self._cloud = cloud

    async def _call(
        self, context: grpc.aio.ServicerContext[object, object], fn: Callable[[], Awaitable[T]]
    ) -> T:
        try:
            return await fn()
        except ApiError as e:
            err = e
        except Exception as e:
            logger.exception("cloud provider call failed")
            err = InternalError(f"internal error: {e}")
        code, details, md = wire.status_of(err)
        context.set_trailing_metadata(md)
        await context.abort(code, details)
        raise AssertionError("unreachable: abort raises")

    async def NodeGroups(
        self,
        request: cloud_pb2.NodeGroupsRequest,
        context: grpc.aio.ServicerContext[object, object],
    ) -> cloud_pb2.NodeGroupsResponse:
        return cloud_pb2.NodeGroupsResponse(
            node_groups=[_group(g) for g in self._cloud.config.node_groups]
        )

    async def NodeGroupForNode(
        self,
        request: cloud_pb2.NodeGroupForNodeRequest,
        context: grpc.aio.ServicerContext[object, object],
    ) -> cloud_pb2.NodeGroupForNodeResponse:
        g = self._cloud.group_for_node(request.node.provider_id, request.node.name)
        return cloud_pb2.NodeGroupForNodeResponse(
            node_group=_group(g) if g is not None else cloud_pb2.NodeGroup()
        )

    async def Refresh(
        self, request: cloud_pb2.RefreshRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> cloud_pb2.RefreshResponse:
        async def refresh() -> cloud_pb2.RefreshResponse:
            await self._cloud.reconcile()
            return cloud_pb2.RefreshResponse()

        return await self._call(context, refresh)

    async def Cleanup(
        self, request: cloud_pb2.CleanupRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> cloud_pb2.CleanupResponse:
        return cloud_pb2.CleanupResponse()

    async def NodeGroupTargetSize(
        self,
        request: cloud_pb2.NodeGroupTargetSizeRequest,
        context: grpc.aio.ServicerContext[object, object],
    ) -> cloud_pb2.NodeGroupTargetSizeResponse:
        async def target() -> cloud_pb2.NodeGroupTargetSizeResponse:
            return cloud_pb2.NodeGroupTargetSizeResponse(
                target_size=self._cloud.target_size(request.id)
            )

        return await self._call(context, target)

    async def NodeGroupIncreaseSize(
        self,
        request: cloud_pb2.NodeGroupIncreaseSizeRequest,
        context: grpc.aio.ServicerContext[object, object],
    ) -> cloud_pb2.NodeGroupIncreaseSizeResponse:
        async def increase() -> cloud_pb2.NodeGroupIncreaseSizeResponse:
            await self._cloud.increase_size(request.id, request.delta)
            return cloud_pb2.NodeGroupIncreaseSizeResponse()

        return await self._call(context, increase)

    async def NodeGroupDeleteNodes(
        self,
        request: cloud_pb2.NodeGroupDeleteNodesRequest,
        context: grpc.aio.ServicerContext[object, object],
    ) -> cloud_pb2.NodeGroupDeleteNodesResponse:
        async def delete() -> cloud_pb2.NodeGroupDeleteNodesResponse:
            await self._cloud.delete_nodes(
                request.id, [(n.provider_id, n.name) for n in request.nodes]
            )
            return cloud_pb2.NodeGroupDeleteNodesResponse()

        return await self._call(context, delete)

    async def NodeGroupDecreaseTargetSize(
        self,
        request: cloud_pb2.NodeGroupDecreaseTargetSizeRequest,
        context: grpc.aio.ServicerContext[object, object],
    ) -> cloud_pb2.NodeGroupDecreaseTargetSizeResponse:
        async def decrease() -> cloud_pb2.NodeGroupDecreaseTargetSizeResponse:
            await self._cloud.decrease_target_size(request.id, request.delta)
            return cloud_pb2.NodeGroupDecreaseTargetSizeResponse()

        return await self._call(context, decrease)

    async def NodeGroupNodes(
        self,
        request: cloud_pb2.NodeGroupNodesRequest,
        context: grpc.aio.ServicerContext[object, object],
    ) -> cloud_pb2.NodeGroupNodesResponse:
        async def nodes() -> cloud_pb2.NodeGroupNodesResponse:
            out = cloud_pb2.NodeGroupNodesResponse()
            for view in self._cloud.instances(request.id):
                inst = out.instances.add(id=view.provider_id)
                inst.status.instance_state = _STATES.get(
                    view.state, cloud_pb2.InstanceStatus.instanceCreating
                )
                if view.error_code:
                    inst.status.error_info.error_code = view.error_code
                    inst.status.error_info.error_message = view.error_message
                    inst.status.error_info.instance_error_class = view.error_class
            return out

        return await self._call(context, nodes)

    async def NodeGroupTemplateNodeInfo(
        self,
        request: cloud_pb2.NodeGroupTemplateNodeInfoRequest,
        context: grpc.aio.ServicerContext[object, object],
    ) -> cloud_pb2.NodeGroupTemplateNodeInfoResponse:
        async def template() -> cloud_pb2.NodeGroupTemplateNodeInfoResponse:
            node = self._cloud.template_node(request.id)
            slices = self._cloud.template_resource_slices(request.id)
            return cloud_pb2.NodeGroupTemplateNodeInfoResponse(
                node_bytes=node.SerializeToString(),
                resource_slice_bytes=[s.SerializeToString() for s in slices],
            )

        return await self._call(context, template)

    async def NodeGroupGetOptions(
        self,
        request: cloud_pb2.NodeGroupAutoscalingOptionsRequest,
        context: grpc.aio.ServicerContext[object, object],
    ) -> cloud_pb2.NodeGroupAutoscalingOptionsResponse:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "kemu's cloud has no per-group options")
        raise AssertionError("unreachable: abort raises")

    async def KemuSetFailures(
        self,
        request: cloud_pb2.KemuSetFailuresRequest,
        context: grpc.aio.ServicerContext[object, object],
    ) -> cloud_pb2.KemuSetFailuresResponse:
        async def set_failures() -> cloud_pb2.KemuSetFailuresResponse:
            f = request.failures
            if f.never_ready < 0:
                raise Invalid.field("failures.neverReady", "must not be negative")
            await self._cloud.set_failures(
                request.id, Failures(never_ready=f.never_ready, out_of_capacity=f.out_of_capacity)
            )
            return cloud_pb2.KemuSetFailuresResponse()

        return await self._call(context, set_failures)
