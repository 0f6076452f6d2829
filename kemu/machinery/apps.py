"""apps/v1: what the apiserver, the ReplicaSet and Deployment controllers and kemuctl share.

Defaulting as upstream's pkg/apis/apps/v1/defaults.go (the pod template's own defaults are the
pod's, applied by the apiserver), the label and annotation names of deployment/util, the
pod-template hash, and the IntOrString arithmetic of maxSurge and maxUnavailable.
"""

from __future__ import annotations

import math
import re
from typing import Final

from kemu.api.v1 import types_pb2

DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY: Final = "pod-template-hash"
REVISION_ANNOTATION: Final = "deployment.kubernetes.io/revision"
REVISION_HISTORY_ANNOTATION: Final = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS_ANNOTATION: Final = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION: Final = "deployment.kubernetes.io/max-replicas"
CHANGE_CAUSE_ANNOTATION: Final = "kubernetes.io/change-cause"
RESTARTED_AT_ANNOTATION: Final = "kubectl.kubernetes.io/restartedAt"
LAST_APPLIED_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"

ROLLING_UPDATE: Final = "RollingUpdate"
RECREATE: Final = "Recreate"
STRATEGY_TYPES: Final = (RECREATE, ROLLING_UPDATE)

DEFAULT_REPLICAS: Final = 1
DEFAULT_MAX_SURGE: Final = "25%"
DEFAULT_MAX_UNAVAILABLE: Final = "25%"
DEFAULT_REVISION_HISTORY_LIMIT: Final = 10
DEFAULT_PROGRESS_DEADLINE_SECONDS: Final = 600

_PERCENT: Final = re.compile(r"^[0-9]+%$")
# k8s.io/apimachinery/pkg/util/rand SafeEncodeString's alphabet: no vowels, no 0/1/3.
SAFE_ALPHANUMS: Final = "bcdfghjklmnpqrstvwxz2456789"
_FNV32_OFFSET: Final = 0x811C9DC5
_FNV32_PRIME: Final = 0x01000193


# ---------------------------------------------------------------- defaulting


def set_defaults_replica_set(rs: types_pb2.ReplicaSet) -> None:
    if not rs.spec.HasField("replicas"):
        rs.spec.replicas = DEFAULT_REPLICAS


def set_defaults_deployment(d: types_pb2.Deployment) -> None:
    spec = d.spec
    if not spec.HasField("replicas"):
        spec.replicas = DEFAULT_REPLICAS
    if not spec.strategy.type:
        spec.strategy.type = ROLLING_UPDATE
    if spec.strategy.type == ROLLING_UPDATE:
        ru = spec.strategy.rolling_update
        if not ru.HasField("max_unavailable"):
            ru.max_unavailable.str_val = DEFAULT_MAX_UNAVAILABLE
        if not ru.HasField("max_surge"):
            ru.max_surge.str_val = DEFAULT_MAX_SURGE
    if not spec.HasField("revision_history_limit"):
        spec.revision_history_limit = DEFAULT_REVISION_HISTORY_LIMIT
    if not spec.HasField("progress_deadline_seconds"):
        spec.progress_deadline_seconds = DEFAULT_PROGRESS_DEADLINE_SECONDS


# ---------------------------------------------------------------- IntOrString


def scaled_value(value: types_pb2.IntOrString, total: int, *, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent: an integer as is, a percentage of `total` rounded
    up or down. ValueError for a string that is not a percentage."""
    if value.WhichOneof("value") != "str_val":
        return value.int_val
    text = value.str_val
    if not _PERCENT.match(text):
        raise ValueError(f"invalid value for IntOrString: {text!r} is not a percentage")
    scaled = int(text[:-1]) * total
    return math.ceil(scaled / 100) if round_up else scaled // 100


def resolve_fenceposts(
    max_surge: types_pb2.IntOrString, max_unavailable: types_pb2.IntOrString, desired: int
) -> tuple[int, int]:
    """deployment/util ResolveFenceposts: (surge, unavailable) in pods; surge rounds up,
    unavailability down, and both 0 makes unavailability 1 (so a rollout can progress)."""
    surge = scaled_value(max_surge, desired, round_up=True)
    unavailable = scaled_value(max_unavailable, desired, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(d: types_pb2.Deployment) -> int:
    """The surge of a rolling Deployment in pods (0 for Recreate)."""
    if d.spec.strategy.type != ROLLING_UPDATE:
        return 0
    ru = d.spec.strategy.rolling_update
    return resolve_fenceposts(ru.max_surge, ru.max_unavailable, d.spec.replicas)[0]


def max_unavailable(d: types_pb2.Deployment) -> int:
    """deployment/util MaxUnavailable: 0 for Recreate or no replicas, at most spec.replicas."""
    if d.spec.strategy.type != ROLLING_UPDATE or d.spec.replicas == 0:
        return 0
    ru = d.spec.strategy.rolling_update
    unavailable = resolve_fenceposts(ru.max_surge, ru.max_unavailable, d.spec.replicas)[1]
    return min(unavailable, d.spec.replicas)


# ---------------------------------------------------------------- the pod-template hash


def fnv32a(data: bytes) -> int:
    """hash/fnv New32a's Sum32 of `data`."""
    h = _FNV32_OFFSET
    for b in data:
        h = ((h ^ b) * _FNV32_PRIME) & 0xFFFFFFFF
    return h


def safe_encode(text: str) -> str:
    """rand.SafeEncodeString: each character mapped into an alphabet that cannot spell words."""
    return "".join(SAFE_ALPHANUMS[ord(ch) % len(SAFE_ALPHANUMS)] for ch in text)


def template_without_hash(template: types_pb2.PodTemplateSpec) -> types_pb2.PodTemplateSpec:
    """A copy of `template` without the pod-template-hash label (EqualIgnoreHash's view)."""
    out = types_pb2.PodTemplateSpec()
    out.CopyFrom(template)
    out.metadata.labels.pop(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY, None)
    return out


def compute_hash(template: types_pb2.PodTemplateSpec, collision_count: int | None) -> str:
    """The pod-template-hash of a template (controller.ComputeHash's role and encoding).

    Not upstream's value: upstream hashes a spew dump of the Go struct, which has no Python
    equivalent. kemu hashes the template's deterministic protobuf bytes (its pod-template-hash
    label left out) with FNV-1a 32, appends the collision count as upstream does, and encodes
    the decimal number with SafeEncodeString as upstream does: stable across processes and
    restarts, and changed by any change of the template.
    """
    data = template_without_hash(template).SerializeToString(deterministic=True)
    if collision_count is not None:
        data += collision_count.to_bytes(4, "little", signed=False)
    return safe_encode(str(fnv32a(data)))


def equal_ignore_hash(a: types_pb2.PodTemplateSpec, b: types_pb2.PodTemplateSpec) -> bool:
    """deployment/util EqualIgnoreHash: the templates are equal but for pod-template-hash."""
    return template_without_hash(a).SerializeToString(deterministic=True) == template_without_hash(
        b
    ).SerializeToString(deterministic=True)


def revision_of(meta: types_pb2.ObjectMeta) -> int:
    """The deployment.kubernetes.io/revision annotation as a number (0 when absent or bad)."""
    text = meta.annotations.get(REVISION_ANNOTATION, "")
    try:
        return int(text)
    except ValueError:
        return 0


# ---------------------------------------------------------------- DaemonSets

ON_DELETE: Final = "OnDelete"
DAEMON_SET_STRATEGY_TYPES: Final = (ON_DELETE, ROLLING_UPDATE)
DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY: Final = "controller-revision-hash"
DAEMON_SET_TEMPLATE_GENERATION_KEY: Final = "pod-template-generation"
"""The label of a daemon pod: the templateGeneration of the DaemonSet that created it."""
TEMPLATE_GENERATION_ANNOTATION: Final = "deprecated.daemonset.template.generation"
"""Where apps/v1 keeps a DaemonSet's templateGeneration (1, bumped on every template change)."""


def set_defaults_daemon_set(ds: types_pb2.DaemonSet) -> None:
    """SetDefaults_DaemonSet: RollingUpdate with maxUnavailable 1 and maxSurge 0,
    revisionHistoryLimit 10."""
    strategy = ds.spec.update_strategy
    if not strategy.type:
        strategy.type = ROLLING_UPDATE
    if strategy.type == ROLLING_UPDATE:
        ru = strategy.rolling_update
        if not ru.HasField("max_unavailable"):
            ru.max_unavailable.int_val = 1
        if not ru.HasField("max_surge"):
            ru.max_surge.int_val = 0
    if not ds.spec.HasField("revision_history_limit"):
        ds.spec.revision_history_limit = DEFAULT_REVISION_HISTORY_LIMIT


def template_generation(ds: types_pb2.DaemonSet) -> int | None:
    """The DaemonSet's templateGeneration (None when the annotation is absent or bad, as
    upstream GetTemplateGeneration's nil)."""
    text = ds.metadata.annotations.get(TEMPLATE_GENERATION_ANNOTATION)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def prepare_daemon_set_for_create(ds: types_pb2.DaemonSet) -> None:
    """The DaemonSet strategy's PrepareForCreate: templateGeneration 1."""
    ds.metadata.annotations[TEMPLATE_GENERATION_ANNOTATION] = "1"


def prepare_daemon_set_for_update(new: types_pb2.DaemonSet, old: types_pb2.DaemonSet) -> None:
    """The DaemonSet strategy's PrepareForUpdate: the templateGeneration is the old one, bumped
    when the template changed (what the user sent in the annotation does not count)."""
    generation = template_generation(old) or 1
    if new.spec.template.SerializeToString(
        deterministic=True
    ) != old.spec.template.SerializeToString(deterministic=True):
        generation += 1
    new.metadata.annotations[TEMPLATE_GENERATION_ANNOTATION] = str(generation)


# ---------------------------------------------------------------- StatefulSets

ORDERED_READY: Final = "OrderedReady"
PARALLEL: Final = "Parallel"
RETAIN_PVC: Final = "Retain"
DELETE_PVC: Final = "Delete"
"""StatefulSetPersistentVolumeClaimRetentionPolicy's values."""


def set_defaults_stateful_set(sts: types_pb2.StatefulSet) -> None:
    """SetDefaults_StatefulSet: podManagementPolicy OrderedReady, RollingUpdate with partition
    0, replicas 1, revisionHistoryLimit 10, the claim retention policy Retain/Retain."""
    spec = sts.spec
    if not spec.pod_management_policy:
        spec.pod_management_policy = ORDERED_READY
    strategy = spec.update_strategy
    if not strategy.type:
        strategy.type = ROLLING_UPDATE
    if strategy.type == ROLLING_UPDATE and not strategy.rolling_update.HasField("partition"):
        strategy.rolling_update.partition = 0
    policy = spec.persistent_volume_claim_retention_policy
    if not policy.when_deleted:
        policy.when_deleted = RETAIN_PVC
    if not policy.when_scaled:
        policy.when_scaled = RETAIN_PVC
    if not spec.HasField("replicas"):
        spec.replicas = DEFAULT_REPLICAS
    if not spec.HasField("revision_history_limit"):
        spec.revision_history_limit = DEFAULT_REVISION_HISTORY_LIMIT


# ---- kinds-b (issue #57): core/v1 ReplicationController


def set_defaults_replication_controller(rc: types_pb2.ReplicationController) -> None:
    """SetDefaults_ReplicationController (pkg/apis/core/v1/defaults.go): the selector and
    the labels default to the template's labels, replicas to 1."""
    labels = rc.spec.template.metadata.labels
    if labels:
        if not rc.spec.selector:
            rc.spec.selector.update(labels)
        if not rc.metadata.labels:
            rc.metadata.labels.update(labels)
    if not rc.spec.HasField("replicas"):
        rc.spec.replicas = DEFAULT_REPLICAS
