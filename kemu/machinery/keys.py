"""The key of an API object in logs, caches and queues: "namespace/name", or "name" for a
cluster-scoped object, as client-go's cache.MetaNamespaceKeyFunc
(staging/src/k8s.io/client-go/tools/cache/store.go) builds it and klog.KObj prints it.

The apiserver's storage key (the etcd path of a kind's object) is another thing:
apiserver/registry/registry.py builds it."""

from __future__ import annotations

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2


def object_meta(obj: Message) -> types_pb2.ObjectMeta:
    """An API object's metadata (every kind has one; protobuf's Message does not say so)."""
    meta: types_pb2.ObjectMeta = obj.metadata  # type: ignore[attr-defined]
    return meta


def object_key(obj: Message) -> str:
    """ "namespace/name" of an API object, or "name" for a cluster-scoped one."""
    meta = object_meta(obj)
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


def revision_of(obj: Message) -> int:
    """An API object's resourceVersion as a number (kemu's are etcd revisions), to tell which
    of two copies of one object is newer; 0 when it has none (or it does not parse)."""
    meta = object_meta(obj)
    try:
        return int(meta.resource_version or 0)
    except ValueError:
        return 0
