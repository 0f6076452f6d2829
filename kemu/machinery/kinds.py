"""The kinds kemu serves: their resource names, scope and message classes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from google.protobuf.message import Message

from kemu.api.v1 import api_pb2, types_pb2
from kemu.machinery.errors import BadRequest


@dataclass(frozen=True)
class Kind:
    kind: str  # Pod
    resource: str  # pods
    api_version: str  # v1, policy/v1, ...
    namespaced: bool
    message: type[Message]
    field: str  # the Object oneof field: pod, node, ...
    short_names: tuple[str, ...] = ()
    has_status: bool = True

    def new(self) -> Message:
        return self.message()


KINDS: Final[tuple[Kind, ...]] = (
    Kind("Pod", "pods", "v1", True, types_pb2.Pod, "pod", ("po",)),
    Kind("Node", "nodes", "v1", False, types_pb2.Node, "node", ("no",)),
    Kind(
        "PriorityClass",
        "priorityclasses",
        "scheduling.k8s.io/v1",
        False,
        types_pb2.PriorityClass,
        "priority_class",
        ("pc",),
        has_status=False,
    ),
    Kind(
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        "policy/v1",
        True,
        types_pb2.PodDisruptionBudget,
        "pod_disruption_budget",
        ("pdb",),
    ),
    Kind(
        "Lease",
        "leases",
        "coordination.k8s.io/v1",
        True,
        types_pb2.Lease,
        "lease",
        has_status=False,
    ),
    Kind("Event", "events", "v1", True, types_pb2.Event, "event", ("ev",), has_status=False),
    Kind("Namespace", "namespaces", "v1", False, types_pb2.Namespace, "namespace", ("ns",)),
    Kind("Service", "services", "v1", True, types_pb2.Service, "service", ("svc",)),
    Kind(
        "ConfigMap",
        "configmaps",
        "v1",
        True,
        types_pb2.ConfigMap,
        "config_map",
        ("cm",),
        has_status=False,
    ),
    Kind(
        "ReplicaSet", "replicasets", "apps/v1", True, types_pb2.ReplicaSet, "replica_set", ("rs",)
    ),
    Kind(
        "Deployment",
        "deployments",
        "apps/v1",
        True,
        types_pb2.Deployment,
        "deployment",
        ("deploy",),
    ),
    Kind("Job", "jobs", "batch/v1", True, types_pb2.Job, "job"),
    Kind("DaemonSet", "daemonsets", "apps/v1", True, types_pb2.DaemonSet, "daemon_set", ("ds",)),
    Kind(
        "PersistentVolume",
        "persistentvolumes",
        "v1",
        False,
        types_pb2.PersistentVolume,
        "persistent_volume",
        ("pv",),
    ),
    Kind(
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        "v1",
        True,
        types_pb2.PersistentVolumeClaim,
        "persistent_volume_claim",
        ("pvc",),
    ),
    Kind(
        "StorageClass",
        "storageclasses",
        "storage.k8s.io/v1",
        False,
        types_pb2.StorageClass,
        "storage_class",
        ("sc",),
        has_status=False,
    ),
    Kind(
        "CSINode",
        "csinodes",
        "storage.k8s.io/v1",
        False,
        types_pb2.CSINode,
        "csi_node",
        has_status=False,
    ),
    Kind(
        "StatefulSet",
        "statefulsets",
        "apps/v1",
        True,
        types_pb2.StatefulSet,
        "stateful_set",
        ("sts",),
    ),
    Kind(
        "ServiceAccount",
        "serviceaccounts",
        "v1",
        True,
        types_pb2.ServiceAccount,
        "service_account",
        ("sa",),
        has_status=False,
    ),
    Kind("Secret", "secrets", "v1", True, types_pb2.Secret, "secret", has_status=False),
    Kind("CronJob", "cronjobs", "batch/v1", True, types_pb2.CronJob, "cron_job", ("cj",)),
    Kind(
        "Workload",
        "workloads",
        "scheduling.k8s.io/v1beta1",
        True,
        types_pb2.Workload,
        "workload",
        has_status=False,
    ),
    Kind(
        "PodGroup", "podgroups", "scheduling.k8s.io/v1beta1", True, types_pb2.PodGroup, "pod_group"
    ),
)

BY_KIND: Final[dict[str, Kind]] = {k.kind: k for k in KINDS}
BY_RESOURCE: Final[dict[str, Kind]] = {k.resource: k for k in KINDS}
BY_FIELD: Final[dict[str, Kind]] = {k.field: k for k in KINDS}
BY_MESSAGE: Final[dict[str, Kind]] = {k.message.DESCRIPTOR.full_name: k for k in KINDS}

_ALIASES: Final[dict[str, Kind]] = {
    alias: k
    for k in KINDS
    for alias in (k.kind.lower(), k.resource, k.resource.rstrip("s"), *k.short_names)
}


def kind_for_resource(resource: str) -> Kind:
    """The kind served under a resource name (pods); BadRequest for an unknown one."""
    k = BY_RESOURCE.get(resource)
    if k is None:
        raise BadRequest(f"the server could not find the requested resource {resource!r}")
    return k


def lookup(name: str) -> Kind:
    """Resolves what a user types (pod, pods, po, Pod, PodDisruptionBudget, pdb)."""
    k = BY_KIND.get(name) or _ALIASES.get(name.lower())
    if k is None:
        raise BadRequest(f'the server doesn\'t have a resource type "{name}"')
    return k


def kind_of(obj: Message) -> Kind:
    k = BY_MESSAGE.get(obj.DESCRIPTOR.full_name)
    if k is None:
        raise BadRequest(f"{obj.DESCRIPTOR.full_name} is not an API kind")
    return k


def wrap(obj: Message) -> api_pb2.Object:
    """Puts an object into the Object envelope (copying it)."""
    out = api_pb2.Object()
    getattr(out, kind_of(obj).field).CopyFrom(obj)
    return out


def unwrap(envelope: api_pb2.Object) -> Message:
    """The object inside an envelope (a reference into it, not a copy)."""
    which = envelope.WhichOneof("kind")
    if which is None:
        raise BadRequest("object: a kind is required")
    msg: Message = getattr(envelope, which)
    return msg


# Event.type values (upstream core/v1 EventTypeNormal and EventTypeWarning).
EVENT_NORMAL: Final = "Normal"
EVENT_WARNING: Final = "Warning"


INITIAL_EVENTS_END_ANNOTATION: Final = "k8s.io/initial-events-end"
"""On the BOOKMARK that ends a watch's initial events (sendInitialEvents), value "true"."""
