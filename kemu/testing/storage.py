"""Storage objects for the scheduler's volume tests, and the PV controller's part of a
binding done by the test, as upstream's scheduler integration tests do
(test/integration/volumescheduling): StorageClasses, claims and PersistentVolumes built here;
`complete_binding` writes what the PV controller writes once a claim and a volume belong
together; `provision_when_selected` is an external provisioner for one claim (it waits for the
scheduler's `volume.kubernetes.io/selected-node`, creates a CSI volume reachable from that
node only and binds it).

Where a cluster runs a PersistentVolume controller (its controller-manager), these steps are
its own: create the objects and `wait_claim_bound`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
)
from kemu.testing.eventually import eventually, retrying_conflicts

NO_PROVISIONER: Final = NOT_SUPPORTED_PROVISIONER
OBJECT_NAME_FIELD: Final = "metadata.name"


def storage_class(
    name: str, provisioner: str = NO_PROVISIONER, *, wait_for_first_consumer: bool = True
) -> types_pb2.StorageClass:
    sc = types_pb2.StorageClass(provisioner=provisioner)
    sc.metadata.name = name
    sc.volume_binding_mode = "WaitForFirstConsumer" if wait_for_first_consumer else "Immediate"
    return sc


def claim(
    namespace: str,
    name: str,
    class_name: str,
    *,
    size: str = "1Gi",
    access_modes: Sequence[str] = ("ReadWriteOnce",),
) -> types_pb2.PersistentVolumeClaim:
    c = types_pb2.PersistentVolumeClaim()
    c.metadata.name, c.metadata.namespace = name, namespace
    c.spec.storage_class_name = class_name
    c.spec.access_modes.extend(access_modes)
    c.spec.resources.requests["storage"] = size
    return c


def volume(
    name: str,
    class_name: str,
    *,
    size: str = "1Gi",
    access_modes: Sequence[str] = ("ReadWriteOnce",),
    node: str = "",
    driver: str = "",
    labels: dict[str, str] | None = None,
) -> types_pb2.PersistentVolume:
    """A PV; `node`: reachable from that node only (required node affinity on its name);
    `driver`: a CSI volume of that driver (its handle the PV's name), else a local one."""
    pv = types_pb2.PersistentVolume()
    pv.metadata.name = name
    pv.metadata.labels.update(labels or {})
    pv.spec.storage_class_name = class_name
    pv.spec.capacity["storage"] = size
    pv.spec.access_modes.extend(access_modes)
    pv.spec.persistent_volume_reclaim_policy = "Retain"
    if driver:
        pv.spec.csi.driver = driver
        pv.spec.csi.volume_handle = name
    else:
        pv.spec.host_path.path = f"/tmp/{name}"
    if node:
        term = pv.spec.node_affinity.required.node_selector_terms.add()
        term.match_fields.add(key=OBJECT_NAME_FIELD, operator="In", values=[node])
    return pv


async def create_available(client: Client, pv: types_pb2.PersistentVolume) -> None:
    """Creates the PV and makes it Available (the PV controller's syncVolume for an unbound
    volume)."""
    created = await client.create(pv)
    created.status.phase = "Available"
    await client.update_status(created)


async def wait_claim_bound(
    client: Client,
    namespace: str,
    claim_name: str,
    *,
    timeout: float = 30.0,  # noqa: ASYNC109
) -> types_pb2.PersistentVolumeClaim:
    """Waits until the claim is Bound (by the cluster's PersistentVolume controller)."""

    async def bound() -> types_pb2.PersistentVolumeClaim:
        c = await client.get(types_pb2.PersistentVolumeClaim, claim_name, namespace)
        assert c.status.phase == "Bound", f"{namespace}/{claim_name} is {c.status.phase!r}"
        return c

    claim: types_pb2.PersistentVolumeClaim = await eventually(bound, timeout=timeout)
    return claim


async def complete_binding(
    client: Client,
    pv_name: str,
    namespace: str,
    claim_name: str,
    *,
    timeout: float = 30.0,  # noqa: ASYNC109
) -> None:
    """The PV controller's bind (bindVolumeToClaim, bindClaimToVolume, both phases Bound): the
    PV's claimRef names the claim, the claim names the PV with bind-completed, and both
    statuses are Bound. Each write retried on a Conflict with a fresh read."""

    async def bind_volume() -> None:
        c = await client.get(types_pb2.PersistentVolumeClaim, claim_name, namespace)
        pv = await client.get(types_pb2.PersistentVolume, pv_name)
        ref = pv.spec.claim_ref
        if ref.name != claim_name or ref.namespace != namespace or ref.uid != c.metadata.uid:
            ref.Clear()
            ref.kind, ref.api_version = "PersistentVolumeClaim", "v1"
            ref.namespace, ref.name, ref.uid = namespace, claim_name, c.metadata.uid
            pv = await client.update(pv)
        if pv.status.phase != "Bound":
            pv.status.phase = "Bound"
            await client.update_status(pv)

    async def bind_claim() -> None:
        c = await client.get(types_pb2.PersistentVolumeClaim, claim_name, namespace)
        c.spec.volume_name = pv_name
        c.metadata.annotations[ANN_BIND_COMPLETED] = "yes"
        c.metadata.annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        c = await client.update(c)
        c.status.phase = "Bound"
        c.status.access_modes[:] = list(c.spec.access_modes)
        c.status.capacity["storage"] = c.spec.resources.requests.get("storage", "0")
        await client.update_status(c)

    for step in (bind_volume, bind_claim):
        await eventually(retrying_conflicts(step), timeout=timeout)


async def provision_when_selected(
    client: Client,
    namespace: str,
    claim_name: str,
    driver: str,
    *,
    timeout: float = 30.0,  # noqa: ASYNC109
) -> str:
    """An external provisioner for one claim: once the scheduler selected a node for it, a CSI
    volume of `driver` reachable from that node only is created and bound. The node."""

    async def selected() -> str:
        c = await client.get(types_pb2.PersistentVolumeClaim, claim_name, namespace)
        node = c.metadata.annotations.get(ANN_SELECTED_NODE, "")
        assert node, f"{namespace}/{claim_name} has no selected node yet"
        return node

    node: str = await eventually(selected, timeout=timeout)
    c = await client.get(types_pb2.PersistentVolumeClaim, claim_name, namespace)
    pv = volume(
        f"pvc-{c.metadata.uid}",
        c.spec.storage_class_name,
        size=c.spec.resources.requests.get("storage", "1Gi"),
        access_modes=list(c.spec.access_modes),
        node=node,
        driver=driver,
    )
    await client.create(pv)
    await complete_binding(client, pv.metadata.name, namespace, claim_name, timeout=timeout)
    return node
