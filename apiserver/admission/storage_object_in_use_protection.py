"""The StorageObjectInUseProtection admission plugin (upstream plugin/pkg/admission/storage/
storageobjectinuseprotection/admission.go), on by default at every emulated version: a new
PersistentVolumeClaim gets the finalizer kubernetes.io/pvc-protection and a new
PersistentVolume kubernetes.io/pv-protection in the create response (unless already there),
so that they are protected from their first moment; the pvc-protection and pv-protection
controllers remove them when the object is no longer in use."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.machinery.storage import PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER


def admit(obj: types_pb2.PersistentVolumeClaim | types_pb2.PersistentVolume) -> None:
    finalizer = (
        PVC_PROTECTION_FINALIZER
        if isinstance(obj, types_pb2.PersistentVolumeClaim)
        else PV_PROTECTION_FINALIZER
    )
    if finalizer not in obj.metadata.finalizers:
        obj.metadata.finalizers.append(finalizer)
