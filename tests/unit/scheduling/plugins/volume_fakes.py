"""Storage objects and listers for the volume plugins' unit tests."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from typing import Any

from kemu.api.v1 import types_pb2
from kemu.machinery.storage import (
    ANN_BIND_COMPLETED,
)
from kemu.scheduling.plugins.volumes import (
    VolumeListers,
)
from kemu.testing import storage


class Lister:
    """An informer's lister over the given objects, keyed by (namespace, name)."""

    def __init__(self, objs: Iterable[Any] = ()) -> None:
        self.objs: dict[tuple[str, str], Any] = {}
        for o in objs:
            self.put(o)

    def put(self, obj: Any) -> None:
        self.objs[(obj.metadata.namespace, obj.metadata.name)] = obj

    def get(self, name: str, namespace: str = "") -> Any | None:
        return self.objs.get((namespace, name))

    def list(self, namespace: str | None = None) -> builtins.list[Any]:
        return [o for (ns, _), o in self.objs.items() if namespace is None or ns == namespace]


def listers(
    claims: Sequence[types_pb2.PersistentVolumeClaim] = (),
    volumes: Sequence[types_pb2.PersistentVolume] = (),
    classes: Sequence[types_pb2.StorageClass] = (),
    csi_nodes: Sequence[types_pb2.CSINode] = (),
) -> VolumeListers:
    return VolumeListers(Lister(claims), Lister(volumes), Lister(classes), Lister(csi_nodes))


def bound_claim(
    name: str, pv: str, class_name: str = "sc", *, access_modes: Sequence[str] = ("ReadWriteOnce",)
) -> types_pb2.PersistentVolumeClaim:
    c = storage.claim("default", name, class_name, access_modes=access_modes)
    c.metadata.uid = f"uid-{name}"
    c.metadata.resource_version = "1"
    c.spec.volume_name = pv
    c.metadata.annotations[ANN_BIND_COMPLETED] = "yes"
    return c


def unbound_claim(
    name: str, class_name: str = "sc", *, size: str = "1Gi"
) -> types_pb2.PersistentVolumeClaim:
    c = storage.claim("default", name, class_name, size=size)
    c.metadata.uid = f"uid-{name}"
    c.metadata.resource_version = "1"
    return c


def available(pv: types_pb2.PersistentVolume) -> types_pb2.PersistentVolume:
    pv.status.phase = "Available"
    pv.metadata.resource_version = "1"
    return pv
