"""Informers of the custom resources of every established CustomResourceDefinition, started
when a CRD is established and stopped when it goes, with no restart of the controller-manager
(what upstream's controllers that cover every resource get from dynamic discovery: the
garbage collector's monitors, GraphBuilder.syncMonitors; the resourcequota controller's
quotable resources). Each informer's kind is registered in the process (kinds.register_custom)
so that references to it resolve."""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
from anyio.abc import TaskGroup
from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock
from kemu.machinery.apiextensions import crd as apiextensions
from kemu.machinery.kinds import Kind, register_custom

logger = logging.getLogger(__name__)

OnInformer = Callable[[Kind, Informer[Message]], None]
"""Called with each new informer before it starts (to add its event handlers)."""


class CustomResourceInformers:
    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        on_informer: OnInformer,
        *,
        owner: str,
    ) -> None:
        """`owner`: the controller, in task names and logs."""
        self._client = client
        self._clock = clock
        self._on_informer = on_informer
        self._owner = owner
        self.crds: Informer[types_pb2.CustomResourceDefinition] = informers.informer(
            types_pb2.CustomResourceDefinition
        )
        self.crds.add_event_handler(
            FuncHandler(
                lambda _: self._changed(),
                lambda _old, _new: self._changed(),
                lambda _: self._changed(),
            )
        )
        self._event: anyio.Event | None = None
        self.running: dict[str, tuple[Informer[Message], anyio.CancelScope]] = {}
        """resource (plural.group) -> the informer of an established CRD's resources."""

    def _changed(self) -> None:
        if self._event is not None:
            self._event.set()

    def established(self) -> dict[str, Kind]:
        """The kinds of the custom resources of every established CRD the informer holds."""
        out: dict[str, Kind] = {}
        for crd in self.crds.lister.list():
            if apiextensions.is_established(crd):
                kind = apiextensions.definition_of(crd).to_kind()  # valid: it is established
                out[kind.resource] = kind
        return out

    def informers(self) -> list[Informer[Message]]:
        return [inf for inf, _ in self.running.values()]

    def resync(self, tg: TaskGroup) -> None:
        """Starts an informer for each newly established CRD's resource and stops those whose
        CRD is gone."""
        wanted = self.established()
        for resource, kind in wanted.items():
            register_custom(kind)
            if resource in self.running:
                continue
            informer: Informer[Message] = Informer(
                self._client, types_pb2.CustomObject, custom_resource=resource, clock=self._clock
            )
            self._on_informer(kind, informer)
            scope = anyio.CancelScope()
            self.running[resource] = (informer, scope)
            tg.start_soon(self._run, informer, scope, name=f"{self._owner} informer {resource}")
            logger.info("%s: watching %s", self._owner, resource)
        for resource in [r for r in self.running if r not in wanted]:
            _, scope = self.running.pop(resource)
            scope.cancel()
            logger.info("%s: stopped watching %s", self._owner, resource)

    @staticmethod
    async def _run(informer: Informer[Message], scope: anyio.CancelScope) -> None:
        with scope:
            await informer.run()

    async def run(self, tg: TaskGroup) -> None:
        """Resyncs on every change of the CRDs until cancelled (the informers run in `tg`)."""
        while True:
            event = self._event = anyio.Event()
            self.resync(tg)
            await event.wait()
