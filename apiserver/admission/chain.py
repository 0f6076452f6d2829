"""The admission the apiserver runs on a create or update, for the kinds it has rules for, after
the kind's strategy prepared the object and before it is validated: upstream's mutating
admission chain (k8s.io/apiserver/pkg/admission, the plugins enabled by default in
pkg/kubeapiserver/options/plugins.go) and, for a Service, its REST storage's allocators
(pkg/registry/core/service/storage/alloc.go, BeginCreate). NamespaceLifecycle, which refuses
before anything is prepared, is namespace_lifecycle.py.
"""

from __future__ import annotations

from collections.abc import Mapping

from google.protobuf.message import Message

from apiserver.admission.default_toleration_seconds import (
    DEFAULT_TOLERATIONS,
    DefaultTolerationSeconds,
    admit_default_toleration_seconds,
)
from apiserver.admission.priority import admit_pod_group_priority, admit_priority
from apiserver.admission.service_ips import allocate
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import types_pb2
from kemu.machinery.podgroups import DEFAULT_RULES, PodGroupRules


class AdmissionChain:
    def __init__(
        self,
        caches: Mapping[str, WatchCache],
        written: Mapping[str, int],
        toleration_seconds: DefaultTolerationSeconds = DEFAULT_TOLERATIONS,
        pod_groups: PodGroupRules = DEFAULT_RULES,
    ) -> None:
        """`written`: per resource, the etcd revision of this apiserver's last write (the
        generic store's): the Priority plugin reads its own writes."""
        self._caches = caches
        self._written = written
        self._toleration_seconds = toleration_seconds
        self._pod_groups = pod_groups

    async def admit_create(self, obj: Message) -> None:
        if isinstance(obj, types_pb2.Pod):
            admit_priority(obj, await self._priority_classes())
            admit_default_toleration_seconds(obj, self._toleration_seconds)
        elif isinstance(obj, types_pb2.PodGroup):
            classes = await self._priority_classes()
            admit_pod_group_priority(obj, classes, self._pod_groups)
        elif isinstance(obj, types_pb2.Service):
            services = self._caches["services"].objects()
            allocate(obj, (co.obj for co in services if isinstance(co.obj, types_pb2.Service)))

    def admit_update(self, obj: Message) -> None:
        if isinstance(obj, types_pb2.Pod):
            admit_default_toleration_seconds(obj, self._toleration_seconds)

    async def _priority_classes(self) -> list[types_pb2.PriorityClass]:
        cache = self._caches["priorityclasses"]
        # Read-your-writes within this apiserver: a pod created right after its PriorityClass
        # (the create returned) must find it, so the cache is first brought to this apiserver's
        # last PriorityClass write (upstream's Priority plugin reads an informer's lister and
        # has that window: plugin/pkg/admission/priority/admission.go). Past wait_fresh's
        # timeout it admits with what the cache holds.
        written = self._written.get("priorityclasses", 0)
        if written > cache.revision:
            await cache.wait_fresh(written)
        return [co.obj for co in cache.objects() if isinstance(co.obj, types_pb2.PriorityClass)]
