"""The serviceaccount controller (upstream pkg/controller/serviceaccount/
serviceaccounts_controller.go): every active namespace has the ServiceAccount `default`.

A namespace added or updated is synced; so is the namespace of a deleted ServiceAccount (the
`default` one comes back). A sync creates the missing accounts unless the namespace is
terminating; AlreadyExists is success (another writer was first)."""

from __future__ import annotations

import logging
from typing import Final

from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from kemu.api.v1 import types_pb2
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.errors import AlreadyExists

logger = logging.getLogger(__name__)

NAME: Final = "serviceaccount"
DEFAULT_SERVICE_ACCOUNTS: Final = ("default",)
"""DefaultServiceAccountsControllerOptions: the accounts every namespace gets."""
DEFAULT_WORKERS: Final = 1
"""--concurrent-serviceaccount-syncs' default."""
ACTIVE: Final = "Active"


class ServiceAccountsController:
    """See the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        names: tuple[str, ...] = DEFAULT_SERVICE_ACCOUNTS,
        workers: int = DEFAULT_WORKERS,
    ) -> None:
        self._client = client
        self._names = names
        self._workers = workers
        self.queue = WorkQueue(clock, name=NAME)
        self._namespaces: Informer[types_pb2.Namespace] = informers.informer(types_pb2.Namespace)
        self._accounts: Informer[types_pb2.ServiceAccount] = informers.informer(
            types_pb2.ServiceAccount
        )
        self._namespaces.add_event_handler(
            FuncHandler(self._enqueue_namespace, lambda _old, new: self._enqueue_namespace(new))
        )
        self._accounts.add_event_handler(FuncHandler(on_delete=self._on_account_delete))

    @property
    def name(self) -> str:
        return NAME

    def _enqueue_namespace(self, ns: types_pb2.Namespace) -> None:
        self.queue.add(ns.metadata.name)

    def _on_account_delete(self, sa: types_pb2.ServiceAccount) -> None:
        if sa.metadata.name in self._names:
            self.queue.add(sa.metadata.namespace)

    async def sync(self, namespace: str) -> None:
        """syncNamespace: the missing accounts of an active namespace created."""
        ns = self._namespaces.lister.get(namespace)
        if ns is None or ns.status.phase not in ("", ACTIVE):
            return
        for name in self._names:
            if self._accounts.lister.get(name, namespace) is not None:
                continue
            sa = types_pb2.ServiceAccount()
            sa.metadata.name, sa.metadata.namespace = name, namespace
            try:
                await self._client.create(sa)
            except AlreadyExists:
                continue
            logger.debug("created serviceaccount %s/%s", namespace, name)

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "syncing namespace", logger)

    async def run(self) -> None:
        await run_controller(
            "service account controller",
            logger,
            synced=(self._namespaces, self._accounts),
            queues=(self.queue,),
            tasks=workers(NAME, self._workers, self._worker),
        )


def new_controller(ctx: ControllerContext) -> ServiceAccountsController:
    """The init function registered as "serviceaccount"."""
    return ServiceAccountsController(ctx.client, ctx.informers, ctx.clock)
