"""Publishing the simulated drivers' ResourceSlices (upstream staging/src/k8s.io/
dynamic-resource-allocation/resourceslice/resourceslicecontroller.go, which a driver's kubelet
plugin runs with the Node as owner).

Once a node's Node exists (the node informer shows it), each driver of --dra-slice-file
(kemu.machinery.dra_slice_file) has its pool published for the node: pool name = the node's name,
`spec.nodeName` = the node, one slice per slice of the file, each owned by the Node (so the
garbage collector removes them when the Node goes, as upstream). The slices already there for
the node are reconciled as upstream's syncPool does: when they match what the file says
(same devices, owner the current Node) nothing is written; otherwise the pool gets the next
generation and the existing slices are updated in place, missing ones created, surplus ones
deleted. Slices of a driver the file no longer names are deleted. A Node created again (a new
uid) is published again.

Each node's slices are written as its node's user (`client_of`): under the Node authorizer a
node creates slices (NodeRestriction: naming itself) and updates and deletes those naming it.
The informer that shows them is a one-node kubelet's own, with upstream's field selector
`spec.nodeName=<node>` (the Node authorizer's condition for a node's list and watch of
slices: kubelet/app.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Final

import anyio
from anyio.abc import TaskStatus

from kemu.api.v1 import types_pb2
from kemu.client.informer import Informer
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.dra_slice_file import DraDrivers, DriverSlices, slices_for_node
from kemu.machinery.errors import ApiError, NotFound

logger = logging.getLogger(__name__)

_RETRY_BASE_DELAY: Final = 0.5
_RETRY_MAX_DELAY: Final = 30.0


def _content(s: types_pb2.ResourceSlice) -> bytes:
    """What a slice publishes, its pool's generation and its identity left out."""
    spec = types_pb2.ResourceSliceSpec()
    spec.CopyFrom(s.spec)
    spec.pool.generation = 0
    return (
        spec.SerializeToString(deterministic=True)
        + repr(sorted(s.metadata.labels.items())).encode()
    )


def _owned_by(s: types_pb2.ResourceSlice, uid: str) -> bool:
    return any(r.kind == "Node" and r.uid == uid for r in s.metadata.owner_references)


class ResourceSlicePublisher:
    """The slices of the nodes this process runs; feed it the nodes (`node_changed`)."""

    def __init__(
        self,
        client_of: Callable[[str], ApiClient],
        drivers: DraDrivers,
        slices: Informer[types_pb2.ResourceSlice],
        *,
        clock: Clock,
    ) -> None:
        """`client_of`: a node's client, by its name (its node's user); `slices`: an
        informer holding (at least) this process's nodes' slices."""
        self._client_of = client_of
        self._drivers = drivers
        self._slices = slices
        self._uids: dict[str, str] = {}
        """Node name -> the uid of its Node as last seen."""
        self._published: dict[str, str] = {}
        """Node name -> the Node uid its slices were last published for."""
        self.queue = WorkQueue(
            clock,
            name="resource slices",
            base_delay=_RETRY_BASE_DELAY,
            max_delay=_RETRY_MAX_DELAY,
        )

    def node_changed(self, node: types_pb2.Node) -> None:
        name, uid = node.metadata.name, node.metadata.uid
        if not uid or self._uids.get(name) == uid:
            return
        self._uids[name] = uid
        self.queue.add(name)

    def forget_node(self, name: str) -> None:
        """The process no longer runs the node: its slices are left to the garbage
        collector (the Node's deletion)."""
        self._uids.pop(name, None)
        self._published.pop(name, None)

    async def sync(self, node: str) -> None:
        uid = self._uids.get(node)
        if uid is None or self._published.get(node) == uid:
            return
        existing = [s for s in self._slices.lister.list() if s.spec.node_name == node]
        names = {d.driver for d in self._drivers.drivers}
        for driver in self._drivers.drivers:
            mine = [s for s in existing if s.spec.driver == driver.driver]
            await self._sync_pool(node, uid, driver.driver, mine, driver)
        for s in existing:
            if s.spec.driver not in names:
                await self._delete(node, s)
        self._published[node] = uid

    async def _sync_pool(
        self,
        node: str,
        uid: str,
        name: str,
        mine: Sequence[types_pb2.ResourceSlice],
        driver: DriverSlices,
    ) -> None:
        """syncPool: nothing written when the node's slices of the driver say what the file
        does; otherwise the next generation (1 for a new pool: upstream bumps the highest
        generation seen, 0 when none, before a change)."""
        generation = max((s.spec.pool.generation for s in mine), default=0)
        desired = slices_for_node(driver, node, node_uid=uid, generation=generation)
        if (
            len(mine) == len(desired)
            and all(_owned_by(s, uid) for s in mine)
            and len({s.spec.pool.generation for s in mine}) == 1
            and sorted(_content(s) for s in mine) == sorted(_content(s) for s in desired)
        ):
            logger.info(
                "node %s: driver %s's pool is up to date (generation %d)", node, name, generation
            )
            return
        generation += 1
        desired = slices_for_node(driver, node, node_uid=uid, generation=generation)
        client = self._client_of(node)
        for old, new in zip(mine, desired, strict=False):
            new.metadata.name = old.metadata.name
            new.metadata.resource_version = old.metadata.resource_version
            new.metadata.generate_name = old.metadata.generate_name
            try:
                await client.update(new)
            except NotFound:
                new.metadata.name, new.metadata.resource_version = "", ""
                await client.create(new)
        for new in desired[len(mine) :]:
            await client.create(new)
        for old in mine[len(desired) :]:
            await self._delete(node, old)
        logger.info(
            "node %s: published driver %s's pool: %d slice(s), generation %d",
            node,
            name,
            len(desired),
            generation,
        )

    async def _delete(self, node: str, s: types_pb2.ResourceSlice) -> None:
        try:
            await self._client_of(node).delete(
                types_pb2.ResourceSlice, s.metadata.name, uid=s.metadata.uid
            )
        except NotFound:
            pass

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Publishes until cancelled; start it once the slice informer has synced."""
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(self.queue.run)
                tg.start_soon(self._worker, name="resource slice publisher")
                task_status.started()
        finally:
            self.queue.shut_down()

    async def _worker(self) -> None:
        while (node := await self.queue.get()) is not None:
            try:
                await self.sync(node)
                self.queue.forget(node)
            except ApiError as e:
                delay = self.queue.add_rate_limited(node)
                logger.warning(
                    "node %s: publishing its ResourceSlices failed (%s), retrying in %.1fs",
                    node,
                    e,
                    delay,
                )
            finally:
                self.queue.done(node)
