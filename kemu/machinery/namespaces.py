"""What every component knows about Namespaces (upstream core/v1 and pkg/registry/core/namespace).

A namespace is created Active with the finalizer "kubernetes" in spec.finalizers and the label
kubernetes.io/metadata.name=<name>. Deleting it sets deletionTimestamp and phase Terminating;
the namespace controller then deletes its content and removes its finalizer through the
`finalize` subresource, after which the delete removes it. default, kube-system and
kube-public cannot be deleted; the apiserver creates them and kube-node-lease at start-up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2

NAMESPACE_ACTIVE: Final = "Active"
NAMESPACE_TERMINATING: Final = "Terminating"
FINALIZER_KUBERNETES: Final = "kubernetes"
# The label every namespace carries with its own name (upstream NamespaceDefaultLabelName).
METADATA_NAME_LABEL: Final = "kubernetes.io/metadata.name"
FINALIZE_SUBRESOURCE: Final = "finalize"

NAMESPACE_DEFAULT: Final = "default"
NAMESPACE_SYSTEM: Final = "kube-system"
NAMESPACE_PUBLIC: Final = "kube-public"
NAMESPACE_NODE_LEASE: Final = "kube-node-lease"
SYSTEM_NAMESPACES: Final = (
    NAMESPACE_DEFAULT,
    NAMESPACE_SYSTEM,
    NAMESPACE_PUBLIC,
    NAMESPACE_NODE_LEASE,
)
IMMORTAL_NAMESPACES: Final = frozenset({NAMESPACE_DEFAULT, NAMESPACE_SYSTEM, NAMESPACE_PUBLIC})


def new_namespace(
    name: str, labels: Mapping[str, str] | None = None, *, finalizers: Sequence[str] = ()
) -> types_pb2.Namespace:
    ns = types_pb2.Namespace()
    ns.metadata.name = name
    ns.metadata.labels.update(labels or {})
    ns.spec.finalizers.extend(finalizers)
    return ns


def default_namespace(ns: types_pb2.Namespace) -> None:
    """SetDefaults_Namespace: the name label, kept equal to the name on every write."""
    if ns.metadata.name:
        ns.metadata.labels[METADATA_NAME_LABEL] = ns.metadata.name


def prepare_for_create(ns: types_pb2.Namespace) -> None:
    """namespaceStrategy.PrepareForCreate: Active, with the "kubernetes" finalizer."""
    ns.ClearField("status")
    ns.status.phase = NAMESPACE_ACTIVE
    if FINALIZER_KUBERNETES not in ns.spec.finalizers:
        ns.spec.finalizers.append(FINALIZER_KUBERNETES)
    default_namespace(ns)


def prepare_for_update(new: types_pb2.Namespace, old: types_pb2.Namespace) -> None:
    """An update of the main resource changes neither spec.finalizers nor status."""
    new.spec.ClearField("finalizers")
    new.spec.finalizers.extend(old.spec.finalizers)
    default_namespace(new)


def prepare_for_finalize(new: types_pb2.Namespace, old: types_pb2.Namespace) -> types_pb2.Namespace:
    """namespaceFinalizeStrategy: only spec.finalizers changes."""
    out = types_pb2.Namespace()
    out.CopyFrom(old)
    out.spec.ClearField("finalizers")
    out.spec.finalizers.extend(new.spec.finalizers)
    return out


def begin_deletion(ns: types_pb2.Namespace, now: Timestamp) -> None:
    """The first delete of a namespace: deletionTimestamp and phase Terminating."""
    if not ns.metadata.HasField("deletion_timestamp"):
        ns.metadata.deletion_timestamp.CopyFrom(now)
    ns.status.phase = NAMESPACE_TERMINATING


def is_terminating(ns: types_pb2.Namespace) -> bool:
    return ns.status.phase == NAMESPACE_TERMINATING or ns.metadata.HasField("deletion_timestamp")
