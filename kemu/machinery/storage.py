"""core/v1 PersistentVolumes and PersistentVolumeClaims, storage.k8s.io/v1 StorageClasses and
core/v1 Secrets: the names and defaults the apiserver, kubectl's tables and the controllers
share.

Defaulting as upstream's pkg/apis/core/v1/defaults.go (SetDefaults_PersistentVolume,
SetDefaults_PersistentVolumeClaimSpec, SetDefaults_Secret) and pkg/apis/storage/v1/defaults.go
(SetDefaults_StorageClass); a Secret's write-only stringData merged into data as core/v1's
conversion does (Convert_v1_Secret_To_core_Secret: the internal type has no stringData).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.convert import timestamp

READ_WRITE_ONCE: Final = "ReadWriteOnce"
READ_ONLY_MANY: Final = "ReadOnlyMany"
READ_WRITE_MANY: Final = "ReadWriteMany"
READ_WRITE_ONCE_POD: Final = "ReadWriteOncePod"
ACCESS_MODES: Final = (READ_WRITE_ONCE, READ_ONLY_MANY, READ_WRITE_MANY, READ_WRITE_ONCE_POD)
_ACCESS_MODE_ABBREVIATIONS: Final = ("RWO", "ROX", "RWX", "RWOP")

FILESYSTEM: Final = "Filesystem"
BLOCK: Final = "Block"
VOLUME_MODES: Final = (BLOCK, FILESYSTEM)

RETAIN: Final = "Retain"
DELETE: Final = "Delete"
RECYCLE: Final = "Recycle"
PV_RECLAIM_POLICIES: Final = (DELETE, RECYCLE, RETAIN)
SC_RECLAIM_POLICIES: Final = (DELETE, RETAIN)

IMMEDIATE: Final = "Immediate"
WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"
BINDING_MODES: Final = (IMMEDIATE, WAIT_FOR_FIRST_CONSUMER)

# PersistentVolume phases (core/v1 types.go) and claim phases.
VOLUME_PENDING: Final = "Pending"
VOLUME_AVAILABLE: Final = "Available"
VOLUME_BOUND: Final = "Bound"
VOLUME_RELEASED: Final = "Released"
VOLUME_FAILED: Final = "Failed"
CLAIM_PENDING: Final = "Pending"
CLAIM_BOUND: Final = "Bound"
CLAIM_LOST: Final = "Lost"

STORAGE: Final = "storage"
"""The resource name of a volume's capacity and a claim's request."""

# The binding annotations (upstream pkg/controller/volume/persistentvolume/util, shared by the
# PersistentVolume controller, the provisioners and the scheduler's VolumeBinding).
ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
"""On a claim: the controller finished binding it (syncClaim tells bound from unbound by it)."""
ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
"""On a volume or claim: the controller, not the user, made the binding."""
ANN_DYNAMICALLY_PROVISIONED: Final = "pv.kubernetes.io/provisioned-by"
ANN_STORAGE_PROVISIONER: Final = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER: Final = "volume.beta.kubernetes.io/storage-provisioner"
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
ANN_MIGRATED_PLUGINS: Final = "storage.alpha.kubernetes.io/migrated-plugins"
AWS_EBS_PLUGIN: Final = "kubernetes.io/aws-ebs"
"""The in-tree AWS EBS plugin's name (a StorageClass provisioner, a migrated plugin)."""
AWS_EBS_CSI_DRIVER: Final = "ebs.csi.aws.com"
"""The CSI driver in-tree EBS volumes migrate to."""
"""On a CSINode: the in-tree volume plugins (comma-separated) migrated to CSI drivers on the
node (upstream v1.MigratedPluginsAnnotationKey)."""
NOT_SUPPORTED_PROVISIONER: Final = "kubernetes.io/no-provisioner"
"""A class whose volumes are all created by hand: nothing provisions them."""
PVC_PROTECTION_FINALIZER: Final = "kubernetes.io/pvc-protection"
"""A claim in use by a pod is kept until the pod goes (the StorageObjectInUseProtection
admission adds it, the pvc-protection controller removes it)."""
PV_PROTECTION_FINALIZER: Final = "kubernetes.io/pv-protection"
"""A Bound volume is kept until it is released (admission adds, pv-protection removes)."""
DEFAULT_CLASS_ANNOTATION: Final = "storageclass.kubernetes.io/is-default-class"
BETA_DEFAULT_CLASS_ANNOTATION: Final = "storageclass.beta.kubernetes.io/is-default-class"
BETA_STORAGE_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"
"""The deprecated class annotation of volumes and claims (it wins over the field)."""

SECRET_OPAQUE: Final = "Opaque"
SECRET_SERVICE_ACCOUNT_TOKEN: Final = "kubernetes.io/service-account-token"
SECRET_DOCKERCFG: Final = "kubernetes.io/dockercfg"
SECRET_DOCKER_CONFIG_JSON: Final = "kubernetes.io/dockerconfigjson"
SECRET_BASIC_AUTH: Final = "kubernetes.io/basic-auth"
SECRET_SSH_AUTH: Final = "kubernetes.io/ssh-auth"
SECRET_TLS: Final = "kubernetes.io/tls"
MAX_SECRET_SIZE: Final = 1024 * 1024


def set_defaults_persistent_volume(pv: types_pb2.PersistentVolume) -> None:
    """SetDefaults_PersistentVolume: phase Pending, reclaim policy Retain, volumeMode
    Filesystem; a hostPath's type "" (unset)."""
    if not pv.status.phase:
        pv.status.phase = VOLUME_PENDING
    if not pv.spec.persistent_volume_reclaim_policy:
        pv.spec.persistent_volume_reclaim_policy = RETAIN
    if not pv.spec.HasField("volume_mode"):
        pv.spec.volume_mode = FILESYSTEM
    # SetDefaults_HostPathVolumeSource (a PV's hostPath is the same type as a pod's)
    if pv.spec.HasField("host_path") and not pv.spec.host_path.HasField("type"):
        pv.spec.host_path.type = ""


def set_defaults_claim(claim: types_pb2.PersistentVolumeClaim) -> None:
    """SetDefaults_PersistentVolumeClaim (phase Pending) and _PersistentVolumeClaimSpec
    (volumeMode Filesystem); a StatefulSet's claim templates get them too."""
    if not claim.status.phase:
        claim.status.phase = CLAIM_PENDING
    if not claim.spec.HasField("volume_mode"):
        claim.spec.volume_mode = FILESYSTEM


def set_defaults_storage_class(sc: types_pb2.StorageClass) -> None:
    """SetDefaults_StorageClass: reclaimPolicy Delete, volumeBindingMode Immediate."""
    if not sc.HasField("reclaim_policy"):
        sc.reclaim_policy = DELETE
    if not sc.HasField("volume_binding_mode"):
        sc.volume_binding_mode = IMMEDIATE


def set_defaults_secret(secret: types_pb2.Secret) -> None:
    """SetDefaults_Secret (type Opaque) and the conversion's stringData: each key written into
    data (a stringData value wins over data's), stringData never stored."""
    if not secret.type:
        secret.type = SECRET_OPAQUE
    for key, value in secret.string_data.items():
        secret.data[key] = value.encode()
    secret.ClearField("string_data")


def access_modes_string(modes: list[str]) -> str:
    """helper.GetAccessModesAsString: the abbreviations, each once, in a fixed order."""
    return ",".join(
        abbr
        for mode, abbr in zip(ACCESS_MODES, _ACCESS_MODE_ABBREVIATIONS, strict=True)
        if mode in modes
    )


def volume_class(pv: types_pb2.PersistentVolume) -> str:
    """storage util GetPersistentVolumeClass: the beta annotation, else the field."""
    annotation = pv.metadata.annotations.get(BETA_STORAGE_CLASS_ANNOTATION)
    return annotation if annotation is not None else pv.spec.storage_class_name


def claim_class(pvc: types_pb2.PersistentVolumeClaim) -> str:
    """storage util GetPersistentVolumeClaimClass: the beta annotation, else the field ("" when
    unset)."""
    annotation = pvc.metadata.annotations.get(BETA_STORAGE_CLASS_ANNOTATION)
    if annotation is not None:
        return annotation
    return pvc.spec.storage_class_name


def is_default_class(sc: types_pb2.StorageClass) -> bool:
    """storage util IsDefaultAnnotation: either annotation "true"."""
    annotations = sc.metadata.annotations
    return (
        annotations.get(DEFAULT_CLASS_ANNOTATION) == "true"
        or annotations.get(BETA_DEFAULT_CLASS_ANNOTATION) == "true"
    )


def claim_has_class(claim: types_pb2.PersistentVolumeClaim) -> bool:
    """PersistentVolumeClaimHasClass: the claim asked for a class, "" included."""
    return BETA_STORAGE_CLASS_ANNOTATION in claim.metadata.annotations or claim.spec.HasField(
        "storage_class_name"
    )


def default_classes(classes: Iterable[types_pb2.StorageClass]) -> list[types_pb2.StorageClass]:
    """The classes marked default (is_default_class)."""
    return [c for c in classes if is_default_class(c)]


def default_class(classes: Iterable[types_pb2.StorageClass]) -> types_pb2.StorageClass | None:
    """pkg/volume/util GetDefaultClass (from 1.26, kubernetes#110559): of the classes marked
    default, the newest (by creation time, then name, as upstream's sort); None when there is
    none."""
    defaults = default_classes(classes)
    if not defaults:
        return None
    return max(
        defaults,
        key=lambda c: (c.metadata.creation_timestamp.ToNanoseconds(), c.metadata.name),
    )


def record_phase_transition(
    new: types_pb2.PersistentVolumeStatus, old: types_pb2.PersistentVolumeStatus, now: float
) -> None:
    """persistentvolumeStatusStrategy.PrepareForUpdate: a status update that keeps the phase
    and leaves lastPhaseTransitionTime unset keeps the stored one; one that changes the phase
    without setting a new time (unset, or the old one) records `now`."""
    sent = new.HasField("last_phase_transition_time")
    if new.phase == old.phase and not sent:
        if old.HasField("last_phase_transition_time"):
            new.last_phase_transition_time.CopyFrom(old.last_phase_transition_time)
    elif new.phase != old.phase and (
        not sent or new.last_phase_transition_time == old.last_phase_transition_time
    ):
        new.last_phase_transition_time.CopyFrom(timestamp(now))
