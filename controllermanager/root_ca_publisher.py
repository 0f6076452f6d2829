"""The root CA certificate publisher (upstream pkg/controller/certificates/
rootcacertpublisher/publisher.go): every active namespace has the ConfigMap `kube-root-ca.crt`
with the cluster's CA bundle under `ca.crt`, for pods to verify the apiserver.

A namespace added or updated is synced, and so is the namespace of that ConfigMap when it is
deleted or changed: a sync creates it, or puts the bundle and the description annotation back.

The bundle is kemu's cluster CA certificate (`CLUSTER_CA_PEM`): kemu's apiserver serves
plaintext until its security issue, so nothing verifies with it yet; upstream takes it from
--root-ca-file or the controller-manager's kubeconfig."""

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
from kemu.machinery.errors import AlreadyExists, NotFound

logger = logging.getLogger(__name__)

NAME: Final = "root-ca-cert-publisher"
ROOT_CA_CONFIG_MAP: Final = "kube-root-ca.crt"
CA_KEY: Final = "ca.crt"
DESCRIPTION_ANNOTATION: Final = "kubernetes.io/description"
DESCRIPTION: Final = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)
CLUSTER_CA_PEM: Final = """-----BEGIN CERTIFICATE-----
MIIBfDCCASGgAwIBAgIUcgSptlOHcOKJXfXH1a+rbpRyr8kwCgYIKoZIzj0EAwIw
EjEQMA4GA1UEAwwHa2VtdS1jYTAgFw0yNjExMjgwNjM3MzlaGA8yMTI2MTEwNDA2
MzczOVowEjEQMA4GA1UEAwwHa2VtdS1jYTBZMBMGByqGSM49AgEGCCqGSM49AwEH
A0IABMVsCGyAXNqWjSR31RVAciwNQWBZNDeXcFhB7jSKMbA3l/T7qUmfW56lBuSP
+ockyJYnH28sZeIO1gZrVWMFghajUzBRMB0GA1UdDgQWBBSklr80/QnRID+bqyZo
EmhpWr50sjAfBgNVHSMEGDAWgBSklr80/QnRID+bqyZoEmhpWr50sjAPBgNVHRMB
Af8EBTADAQH/MAoGCCqGSM49BAMCA0kAMEYCIQCfW7v79c7szEdjkjm0HrXhYW3R
+QrIMJU0VRCbHWEfGgIhAMbe/bv/L/BIc9iHVadSuKNJhDh/Rf/0ack1ONo6WMAI
-----END CERTIFICATE-----
"""
"""kemu's cluster CA certificate (EC P-256, CN kemu-ca, generated once with openssl; its
key is not kept: nothing signs with it until the security issue brings TLS)."""
ACTIVE: Final = "Active"


class Publisher:
    """See the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        root_ca: str = CLUSTER_CA_PEM,
    ) -> None:
        self._client = client
        self._root_ca = root_ca
        self.queue = WorkQueue(clock, name=NAME)
        self._namespaces: Informer[types_pb2.Namespace] = informers.informer(types_pb2.Namespace)
        self._config_maps: Informer[types_pb2.ConfigMap] = informers.informer(types_pb2.ConfigMap)
        self._namespaces.add_event_handler(
            FuncHandler(self._enqueue_namespace, lambda _old, new: self._enqueue_namespace(new))
        )
        self._config_maps.add_event_handler(
            FuncHandler(
                on_update=lambda _old, new: self._on_config_map(new),
                on_delete=self._on_config_map,
            )
        )

    @property
    def name(self) -> str:
        return NAME

    def _enqueue_namespace(self, ns: types_pb2.Namespace) -> None:
        self.queue.add(ns.metadata.name)

    def _on_config_map(self, cm: types_pb2.ConfigMap) -> None:
        if cm.metadata.name == ROOT_CA_CONFIG_MAP:
            self.queue.add(cm.metadata.namespace)

    def _wanted(self, namespace: str) -> types_pb2.ConfigMap:
        cm = types_pb2.ConfigMap()
        cm.metadata.name, cm.metadata.namespace = ROOT_CA_CONFIG_MAP, namespace
        cm.metadata.annotations[DESCRIPTION_ANNOTATION] = DESCRIPTION
        cm.data[CA_KEY] = self._root_ca
        return cm

    async def sync(self, namespace: str) -> None:
        """syncNamespace: create the ConfigMap, or restore its data and annotation."""
        ns = self._namespaces.lister.get(namespace)
        if ns is None or ns.status.phase not in ("", ACTIVE):
            return
        current = self._config_maps.lister.get(ROOT_CA_CONFIG_MAP, namespace)
        if current is None:
            try:
                await self._client.create(self._wanted(namespace))
            except (AlreadyExists, NotFound):
                # created meanwhile, or the namespace is gone
                return
            return
        if (
            dict(current.data) == {CA_KEY: self._root_ca}
            and current.metadata.annotations.get(DESCRIPTION_ANNOTATION) == DESCRIPTION
        ):
            return
        fixed = types_pb2.ConfigMap()
        fixed.CopyFrom(current)
        fixed.data.clear()
        fixed.data[CA_KEY] = self._root_ca
        fixed.binary_data.clear()
        fixed.metadata.annotations[DESCRIPTION_ANNOTATION] = DESCRIPTION
        await self._client.update(fixed)

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "syncing namespace", logger)

    async def run(self) -> None:
        await run_controller(
            "root CA certificate configmap publisher",
            logger,
            synced=(self._namespaces, self._config_maps),
            queues=(self.queue,),
            tasks=workers(NAME, 1, self._worker),
        )


def new_controller(ctx: ControllerContext) -> Publisher:
    """The init function registered as "root-ca-cert-publisher"."""
    return Publisher(ctx.client, ctx.informers, ctx.clock)
