"""The namespace controller (upstream pkg/controller/namespace and its deletion package,
namespaced_resources_deleter.go): empties a terminating namespace, then lets it go.

Every namespace event with a deletionTimestamp queues the namespace. A sync reads it afresh
and, while it still carries the "kubernetes" finalizer:
1. makes sure its phase is Terminating (status);
2. deletes every object of every namespaced kind kemu serves (kinds.KINDS) in it, one DELETE
   each with the object's own defaults (bound pods go gracefully: their kubelets finish them);
3. lists again; while anything remains, the sync is retried after upstream's estimate: half the
   longest terminationGracePeriodSeconds of the pods still running there, plus one second;
4. once nothing remains, removes "kubernetes" from spec.finalizers through the namespace's
   `finalize` subresource (a merge patch of spec.finalizers), the write upon which the apiserver
   deletes a namespace whose finalizers are all gone (ShouldDeleteNamespaceDuringUpdate).

Failures are retried with the work queue's rate limit. Not modelled: the namespace's status
conditions (NamespaceContentRemaining, ...) and the 5-minute resync.
"""

from __future__ import annotations

import logging
from typing import Final

from controllermanager.controller import ControllerContext, run_controller, workers
from kemu.api.v1 import types_pb2
from kemu.client.informer import FuncHandler, Informer
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.apiextensions import crd as apiextensions
from kemu.machinery.delete_options import BACKGROUND
from kemu.machinery.errors import ApiError, Conflict, NotFound
from kemu.machinery.kinds import KINDS, Kind
from kemu.machinery.namespaces import (
    FINALIZE_SUBRESOURCE,
    FINALIZER_KUBERNETES,
    NAMESPACE_TERMINATING,
)
from kemu.machinery.pod_strategy import TERMINAL_PHASES

logger = logging.getLogger(__name__)

NAME: Final = "namespace"
WORKERS: Final = 2
"""Namespaces emptied at once (upstream --concurrent-namespace-syncs defaults to 10)."""

NAMESPACED_KINDS: Final[tuple[Kind, ...]] = tuple(k for k in KINDS if k.namespaced)


class ContentRemaining(Exception):
    """Objects are still in the namespace; sync again after `estimate` seconds."""

    def __init__(self, estimate: int) -> None:
        super().__init__(f"content remains, estimated {estimate}s to go")
        self.estimate = estimate


def _grace_estimate(pods: list[types_pb2.Pod]) -> int:
    """The longest grace period among the namespace's unfinished pods (upstream's
    estimateGracefulTerminationForPods)."""
    estimate = 0
    for pod in pods:
        if pod.status.phase in TERMINAL_PHASES:
            continue
        if pod.spec.HasField("termination_grace_period_seconds"):
            estimate = max(estimate, pod.spec.termination_grace_period_seconds)
    return estimate


class NamespaceController:
    """Deletes the content of terminating namespaces; see the module docstring."""

    def __init__(self, client: ApiClient, informer: Informer[types_pb2.Namespace], clock: Clock):
        self._client = client
        self._clock = clock
        self.queue = WorkQueue(clock, name=NAME)
        self._namespaces = informer
        informer.add_event_handler(
            FuncHandler(self._enqueue, lambda _old, new: self._enqueue(new), None)
        )

    @property
    def name(self) -> str:
        return NAME

    def _enqueue(self, ns: types_pb2.Namespace) -> None:
        if ns.metadata.HasField("deletion_timestamp"):
            self.queue.add(ns.metadata.name)

    # ------------------------------------------------------------ sync

    async def sync(self, name: str) -> None:
        """Empties and finalizes namespace `name` if it is terminating; ContentRemaining or an
        ApiError to be retried."""
        try:
            ns = await self._client.get(types_pb2.Namespace, name)
        except NotFound:
            return
        if not ns.metadata.HasField("deletion_timestamp"):
            return
        if ns.status.phase != NAMESPACE_TERMINATING:
            ns.status.phase = NAMESPACE_TERMINATING
            ns = await self._client.update_status(ns)
        if FINALIZER_KUBERNETES not in ns.spec.finalizers:
            return  # finalized: the apiserver removes it once the other finalizers are gone
        remaining, estimate = await self._delete_all_content(name)
        if remaining:
            logger.info(
                "namespace %s: %d objects remain, checking again in %ds",
                name,
                remaining,
                estimate // 2 + 1,
            )
            raise ContentRemaining(estimate)
        await self._finalize(ns)

    async def _delete_all_content(self, namespace: str) -> tuple[int, int]:
        """Deletes every object in `namespace`; returns how many remain and the grace estimate."""
        remaining = 0
        estimate = 0
        for kind in NAMESPACED_KINDS:
            listed = await self._client.list_all(kind.message, namespace)
            if kind.kind == "Pod":
                estimate = _grace_estimate(listed.items)  # type: ignore[arg-type]
            for obj in listed.items:
                meta: types_pb2.ObjectMeta = obj.metadata  # type: ignore[attr-defined]
                if meta.HasField("deletion_timestamp"):
                    continue  # being deleted already: its kubelet (or owner) finishes it
                try:
                    # Background, as upstream: no kind's default (a Job's is Orphan) may
                    # leave a finalizer the namespace would wait on.
                    await self._client.delete(
                        kind.message,
                        meta.name,
                        namespace,
                        uid=meta.uid,
                        propagation_policy=BACKGROUND,
                    )
                except (NotFound, Conflict):
                    pass  # gone, or replaced: the next list sees what is there
            left = await self._client.list(kind.message, namespace, limit=1)
            remaining += len(left.items)
        remaining += await self._delete_custom_resources(namespace)
        return remaining, estimate

    async def _delete_custom_resources(self, namespace: str) -> int:
        """The namespaced custom resources of every established CRD (upstream finds them by
        discovery); how many remain."""
        remaining = 0
        crds = await self._client.list_all(types_pb2.CustomResourceDefinition)
        for crd in crds.items:
            if not apiextensions.is_established(crd):
                continue
            definition = apiextensions.definition_of(crd)
            if not definition.namespaced:
                continue
            try:
                items = await self._client.list_custom(definition.resource, namespace)
            except NotFound:
                continue  # its CRD went since the list
            for obj in items:
                if obj.metadata.HasField("deletion_timestamp"):
                    continue
                try:
                    await self._client.delete_custom(
                        definition.resource,
                        obj.metadata.name,
                        namespace,
                        uid=obj.metadata.uid,
                        propagation_policy=BACKGROUND,
                    )
                except (NotFound, Conflict):
                    continue
            if items:
                remaining += len(await self._client.list_custom(definition.resource, namespace))
        return remaining

    async def _finalize(self, ns: types_pb2.Namespace) -> None:
        finalizers = [f for f in ns.spec.finalizers if f != FINALIZER_KUBERNETES]
        name = ns.metadata.name
        try:
            await self._client.patch(
                types_pb2.Namespace,
                name,
                {
                    "metadata": {"resourceVersion": ns.metadata.resource_version},
                    "spec": {"finalizers": finalizers},
                },
                subresource=FINALIZE_SUBRESOURCE,
            )
        except NotFound:
            return
        logger.info("namespace %s: content deleted, finalized", name)

    # ------------------------------------------------------------ workers

    async def _worker(self) -> None:
        while (key := await self.queue.get()) is not None:
            try:
                await self.sync(key)
            except ContentRemaining as e:
                self.queue.add_after(key, e.estimate // 2 + 1)
            except ApiError as e:
                logger.warning("namespace %s: deletion failed, requeuing: %s", key, e)
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
            finally:
                self.queue.done(key)

    async def run(self) -> None:
        """Empties terminating namespaces until cancelled; the informer must be running."""
        await run_controller(
            "the namespace controller",
            logger,
            synced=(self._namespaces,),
            queues=(self.queue,),
            tasks=workers("namespace", WORKERS, self._worker),
        )


def new_controller(ctx: ControllerContext) -> NamespaceController:
    """The init function registered as "namespace"."""
    return NamespaceController(ctx.client, ctx.informers.informer(types_pb2.Namespace), ctx.clock)
