"""The node IPAM controller (upstream pkg/controller/nodeipam with the RangeAllocator,
ipam/range_allocator.go and ipam/cidrset/cidr_set.go): gives every Node a pod CIDR,
spec.podCIDR and spec.podCIDRs, a range of --cluster-cidr of --node-cidr-mask-size bits
(default /24 for IPv4, /64 for IPv6), which the node's kubelet hands out pod IPs from.

It runs only with --allocate-node-cidrs (upstream's default is false; kemu's Procfile and test
harness turn it on, as kubeadm does when given a pod network CIDR), and then --cluster-cidr is
required. kemu takes one cluster CIDR (no dual-stack).

- The ranges in use are the nodes' podCIDRs, occupied from the node informer's first list before
  any is handed out: a restarted controller (or a new leader) never hands a range twice.
- A node without podCIDRs gets the next free range after the last one handed out (upstream's
  round robin: a range freed by a deleted node is handed out again only once the others have
  been), written with a merge patch of spec.podCIDR and spec.podCIDRs. The apiserver lets a
  node's podCIDRs be set once: if another writer got there first, the patch is refused and the
  range freed again. A range whose patch failed otherwise stays the node's reservation for the
  retry (upstream keeps it rather than risk a write that did go through).
- A deleted node's range is freed.
- No free range left: the Normal event CIDRNotAvailable on the node (upstream's
  RecordNodeStatusChange); tried again on the node's next update. A failed write is retried
  with backoff.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from typing import Final

from controllermanager.cidrset import CIDRSet, CIDRSetFull, IPNetwork
from controllermanager.config import NodeIpamOptions
from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.errors import Invalid, NotFound
from kemu.machinery.kinds import EVENT_NORMAL

logger = logging.getLogger(__name__)

NAME: Final = "nodeipam"
EVENT_SOURCE: Final = "cidrAllocator"
WORKERS: Final = 4


def pod_cidrs(node: types_pb2.Node) -> list[str]:
    """The node's pod CIDRs (podCIDRs, or the singular field an old writer set)."""
    if node.spec.pod_cidrs:
        return list(node.spec.pod_cidrs)
    return [node.spec.pod_cidr] if node.spec.pod_cidr else []


class NodeIpamController:
    """See the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        options: NodeIpamOptions,
        *,
        recorder: EventRecorder | None = None,
    ) -> None:
        self._client = client
        self.options = options
        self.cidrs = CIDRSet(options.cluster_cidr, options.node_cidr_mask_size)
        self._recorder = recorder or EventRecorder(
            client, EVENT_SOURCE, host=socket.gethostname(), clock=clock
        )
        self.queue = WorkQueue(clock, name=NAME)
        self._nodes: Informer[types_pb2.Node] = informers.informer(types_pb2.Node)
        self._reserved: dict[str, IPNetwork] = {}
        """Node name -> the range handed to it whose write is not yet seen on the node."""
        self._nodes.add_event_handler(
            FuncHandler(self._enqueue, lambda _old, new: self._enqueue(new), self._on_delete)
        )

    @property
    def name(self) -> str:
        return NAME

    def _enqueue(self, node: types_pb2.Node) -> None:
        if not pod_cidrs(node) or node.metadata.name in self._reserved:
            self.queue.add(node.metadata.name)

    def _on_delete(self, node: types_pb2.Node) -> None:
        """ReleaseCIDR: a deleted node's range is free (and so is a reservation it had)."""
        name = node.metadata.name
        for text in pod_cidrs(node):
            self._release(name, text)
        reserved = self._reserved.pop(name, None)
        if reserved is not None:
            self.cidrs.release(reserved)

    def _release(self, name: str, text: str) -> None:
        try:
            self.cidrs.release(ipaddress.ip_network(text, strict=False))
        except ValueError as e:
            logger.warning("node %s: podCIDR %r not released: %s", name, text, e)

    def occupy_existing(self) -> None:
        """The ranges the nodes hold are in use (NewCIDRRangeAllocator's occupyCIDRs of the
        node list): called once the informer has synced, before any range is handed out."""
        for node in self._nodes.lister.list():
            self._occupy(node)
        logger.info(
            "%d of %d /%d ranges of %s in use",
            self.cidrs.in_use(),
            self.cidrs.max_cidrs,
            self.cidrs.mask_size,
            self.cidrs.cluster,
        )

    def _occupy(self, node: types_pb2.Node) -> None:
        for text in pod_cidrs(node):
            try:
                self.cidrs.occupy(ipaddress.ip_network(text, strict=False))
            except ValueError as e:
                # Upstream's allocator refuses to start; kemu logs and leaves it alone.
                logger.error("node %s: podCIDR %r not occupied: %s", node.metadata.name, text, e)

    async def sync(self, name: str) -> None:
        """AllocateOrOccupyCIDR and updateCIDRsAllocation for one node."""
        node = self._nodes.lister.get(name)
        if node is None:
            return
        reserved = self._reserved.get(name)
        if pod_cidrs(node):
            self._occupy(node)
            if reserved is not None and [str(reserved)] != pod_cidrs(node):
                self.cidrs.release(reserved)  # another writer gave it one first
            self._reserved.pop(name, None)
            return
        if reserved is None:
            try:
                reserved = self.cidrs.allocate_next()
            except CIDRSetFull as e:
                # Tried again on the node's next update, as upstream's update handler does.
                logger.error("node %s: %s", name, e)
                self._recorder.event(
                    node,
                    EVENT_NORMAL,
                    "CIDRNotAvailable",
                    "",
                    f"Node {name} status is now: CIDRNotAvailable",
                )
                return
            self._reserved[name] = reserved
        cidr = str(reserved)
        try:
            await self._client.patch(
                types_pb2.Node, name, {"spec": {"podCIDR": cidr, "podCIDRs": [cidr]}}
            )
        except NotFound:
            self._reserved.pop(name, None)
            self.cidrs.release(reserved)
            return
        except Invalid as e:
            # The node got a range meanwhile (podCIDRs are set once): ours is free again.
            logger.warning("node %s: podCIDR %s not set: %s", name, cidr, e)
            self._reserved.pop(name, None)
            self.cidrs.release(reserved)
            return
        logger.info("node %s: set podCIDR %s", name, cidr)

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "allocating a CIDR for", logger)

    async def run(self) -> None:
        """Hands out ranges until cancelled; the informer must be running."""
        await run_controller(
            f"the node IPAM controller (cluster CIDR {self.cidrs.cluster}, node CIDR mask "
            f"size {self.cidrs.mask_size})",
            logger,
            synced=(self._nodes,),
            queues=(self.queue,),
            on_synced=self.occupy_existing,
            tasks=[
                ("nodeipam events", self._recorder.run),
                *workers(NAME, WORKERS, self._worker),
            ],
        )


def new_controller(
    ctx: ControllerContext, options: NodeIpamOptions | None = None
) -> NodeIpamController:
    """The init function registered as "nodeipam" (app.py binds the flags' options and leaves
    the controller out without --allocate-node-cidrs)."""
    if options is None:
        raise ValueError("the nodeipam controller needs --allocate-node-cidrs and --cluster-cidr")
    return NodeIpamController(ctx.client, ctx.informers, ctx.clock, options)
