"""The admission the apiserver runs on a create or update, for the kinds it has rules for, after
the kind's strategy prepared the object and before it is validated: upstream's mutating
admission chain (k8s.io/apiserver/pkg/admission, the plugins enabled by default in
pkg/kubeapiserver/options/plugins.go) and, for a Service, its REST storage's allocators
(pkg/registry/core/service/storage/alloc.go, BeginCreate). NamespaceLifecycle, which refuses
before anything is prepared, is namespace_lifecycle.py. The validating plugins
(`validate_create`: 1.36's PodGroupWorkloadExists, 1.37's PodGroupProtection for a pod of a
PodGroup or a child of a CompositePodGroup) run after the object is validated. A new
PersistentVolumeClaim gets its default class from DefaultStorageClass
(default_storage_class.py), and a new claim or volume its protection finalizer
(storage_object_in_use_protection.py). A pod created bound, and a pods/binding, get the
node's topology labels (PodTopologyLabels, pod_topology_labels.py). NodeRestriction
(node_restriction.py) checks a kubelet's creates, updates, deletes, bindings and evictions
against the request's user (request_user.py). Each plugin runs only when
--enable-/--disable-admission-plugins leave it on (plugins.py: upstream's names and default-on
set; every plugin kemu models is on by default but NodeRestriction, as upstream).
"""

from __future__ import annotations

from collections.abc import Mapping

import anyio
from google.protobuf.message import Message

from apiserver.admission import (
    default_storage_class,
    limit_ranger,
    request_user,
    storage_object_in_use_protection,
)
from apiserver.admission.default_toleration_seconds import (
    DEFAULT_TOLERATIONS,
    DefaultTolerationSeconds,
    admit_default_toleration_seconds,
)
from apiserver.admission.dra_admin_access import admin_access_spec, validate_admin_access
from apiserver.admission.node_restriction import CREATE, DELETE, UPDATE, NodeRestriction, Request
from apiserver.admission.plugins import (
    DEFAULT_PLUGINS,
    DEFAULT_STORAGE_CLASS,
    DEFAULT_TOLERATION_SECONDS,
    LIMIT_RANGER,
    NODE_RESTRICTION,
    POD_GROUP_PROTECTION,
    POD_GROUP_WORKLOAD_EXISTS,
    PRIORITY,
    SERVICE_ACCOUNT,
    STORAGE_OBJECT_IN_USE_PROTECTION,
    AdmissionPlugins,
)
from apiserver.admission.pod_topology_labels import copy_topology_labels
from apiserver.admission.podgroup import admit_pod_group_workload_exists
from apiserver.admission.podgroup_protection import (
    admit_composite_pod_group_protection,
    admit_pod_group_protection,
    referenced_pod_group,
    validate_parent_not_deleting,
    validate_pod_group_not_deleting,
)
from apiserver.admission.priority import (
    admit_composite_pod_group_priority,
    admit_pod_group_priority,
    admit_priority,
)
from apiserver.admission.service_account import (
    LookUp,
    ServiceAccountAdmission,
    VolumeName,
    simple_name,
)
from apiserver.admission.service_ips import allocate
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import api_pb2, types_pb2
from kemu.component.version_rules import VersionRules
from kemu.machinery.kinds import Kind, kind_of
from kemu.machinery.podgroups import DEFAULT_RULES, PodGroupRules
from kemu.machinery.subresources import RESIZE

DEFAULT_VERSION_RULES = VersionRules.default()


class AdmissionChain:
    def __init__(
        self,
        caches: Mapping[str, WatchCache],
        written: Mapping[str, int],
        toleration_seconds: DefaultTolerationSeconds = DEFAULT_TOLERATIONS,
        pod_groups: PodGroupRules = DEFAULT_RULES,
        rules: VersionRules = DEFAULT_VERSION_RULES,
        topology_labels: tuple[str, ...] = (),
        plugins: AdmissionPlugins = DEFAULT_PLUGINS,
        live_service_account: LookUp | None = None,
        volume_name: VolumeName = simple_name,
    ) -> None:
        """`written`: per resource, the etcd revision of this apiserver's last write (the
        generic store's): the Priority plugin reads its own writes. `live_service_account`:
        a ServiceAccount read from storage, for the ServiceAccount plugin's retries (None: a
        registry of a unit test's few kinds, where the cache is all there is). `volume_name`: the
        ServiceAccount plugin's name of the token volume."""
        self._caches = caches
        self._written = written
        self._toleration_seconds = toleration_seconds
        self._pod_groups = pod_groups
        self._rules = rules
        self._topology_labels = topology_labels
        """The node labels PodTopologyLabels copies onto a bound pod (none: its gate or the
        plugin is off)."""
        self._on = plugins.on
        self._service_accounts = ServiceAccountAdmission(
            self._cached_service_account,
            live_service_account or self._cached_service_account,
            # wall time, also with --clock virtual: the wait is for another process's write
            # (the serviceaccount controller's), not a simulated timer
            anyio.sleep,
            volume_name,
        )
        self._node_restriction = (
            NodeRestriction(self._pod, self._node) if plugins.on(NODE_RESTRICTION) else None
        )

    async def _restrict(self, req: Request) -> None:
        """NodeRestriction, when on, for the request's user (issue #60 item 3)."""
        if self._node_restriction is not None:
            await self._node_restriction.admit(req, request_user.current())

    async def admit_create(self, obj: Message) -> None:
        on = self._on
        if self._node_restriction is not None:
            kind = kind_of(obj)
            meta = obj.metadata  # type: ignore[attr-defined]
            await self._restrict(
                Request(CREATE, kind.resource, kind.group, "", meta.namespace, meta.name, obj)
            )
        if isinstance(obj, types_pb2.Pod):
            if on(LIMIT_RANGER):  # issue #57 kinds-a: LimitRanger's defaults
                limit_ranger.admit(obj, await self._limit_ranges(obj.metadata.namespace))
            if on(SERVICE_ACCOUNT):
                await self._service_accounts.admit(obj)
            if on(PRIORITY):
                admit_priority(obj, await self._priority_classes())
            if on(DEFAULT_TOLERATION_SECONDS):
                admit_default_toleration_seconds(obj, self._toleration_seconds)
            if obj.spec.node_name and self._topology_labels:
                node = await self._node(obj.spec.node_name)
                copy_topology_labels(obj.metadata.labels, node, self._topology_labels)
        elif isinstance(obj, types_pb2.PodGroup):
            if on(PRIORITY):
                classes = await self._priority_classes()
                admit_pod_group_priority(obj, classes, self._pod_groups)
            if on(POD_GROUP_PROTECTION):
                admit_pod_group_protection(obj, self._pod_groups)
        elif isinstance(obj, types_pb2.CompositePodGroup):
            if on(PRIORITY):
                classes = await self._priority_classes()
                admit_composite_pod_group_priority(obj, classes, self._pod_groups)
            if on(POD_GROUP_PROTECTION):
                admit_composite_pod_group_protection(obj, self._pod_groups)
        elif isinstance(obj, types_pb2.PersistentVolumeClaim):
            if on(DEFAULT_STORAGE_CLASS):
                default_storage_class.admit(obj, await self._storage_classes(), self._rules)
            if on(STORAGE_OBJECT_IN_USE_PROTECTION):
                storage_object_in_use_protection.admit(obj)
        elif isinstance(obj, types_pb2.PersistentVolume):
            if on(STORAGE_OBJECT_IN_USE_PROTECTION):
                storage_object_in_use_protection.admit(obj)
        elif isinstance(obj, types_pb2.Service):
            # the REST storage's allocators, not a plugin: always
            services = self._caches["services"].objects()
            allocate(obj, (co.obj for co in services if isinstance(co.obj, types_pb2.Service)))

    async def validate_create(self, obj: Message) -> None:
        """The validating plugins on create: after the object's own validation, as
        upstream's validating admission follows the strategy's Validate. (ResourceQuota,
        last, charges the quota: the registry runs it, apiserver/admission/
        resource_quota.py.)"""
        on = self._on
        if not on(LIMIT_RANGER):
            pass
        elif isinstance(obj, types_pb2.Pod):  # issue #57 kinds-a: LimitRanger's bounds
            limit_ranger.validate(obj, await self._limit_ranges(obj.metadata.namespace))
        elif isinstance(obj, types_pb2.PersistentVolumeClaim):  # issue #57 gcquota
            limit_ranger.validate_pvc(obj, await self._limit_ranges(obj.metadata.namespace))
        protection = on(POD_GROUP_PROTECTION)
        if protection and isinstance(obj, types_pb2.Pod) and (group := referenced_pod_group(obj)):
            named = await self._fresh_one("podgroups", obj.metadata.namespace, group)
            validate_pod_group_not_deleting(
                obj, [named] if isinstance(named, types_pb2.PodGroup) else [], self._pod_groups
            )
        if admin_access_spec(obj) is not None:
            ns_name = obj.metadata.namespace  # type: ignore[attr-defined]
            namespaces = await self._fresh_cache("namespaces")
            found = namespaces.get(f"{namespaces.prefix}{ns_name}")
            namespace = None if found is None else found.obj
            validate_admin_access(
                obj, namespace if isinstance(namespace, types_pb2.Namespace) else None
            )
        if isinstance(obj, types_pb2.PodGroup) and on(POD_GROUP_WORKLOAD_EXISTS):
            workloads = await self._fresh("workloads")
            admit_pod_group_workload_exists(
                obj,
                (w for w in workloads if isinstance(w, types_pb2.Workload)),
                self._pod_groups,
            )
        if (
            protection
            and isinstance(obj, types_pb2.PodGroup | types_pb2.CompositePodGroup)
            and obj.spec.HasField("parent_composite_pod_group_name")
        ):
            composites = await self._fresh("compositepodgroups")
            validate_parent_not_deleting(
                obj,
                (c for c in composites if isinstance(c, types_pb2.CompositePodGroup)),
                self._pod_groups,
            )

    async def admit_binding(self, binding: api_pb2.Binding) -> None:
        """pods/binding's admission: PodTopologyLabels adds the node's topology labels to the
        binding, which BindingREST copies onto the pod. (NodeRestriction refuses a node's.)"""
        meta = binding.metadata
        await self._restrict(Request(CREATE, "pods", "", "binding", meta.namespace, meta.name))
        if self._topology_labels and binding.target.kind in ("", "Node"):
            node = await self._node(binding.target.name)
            copy_topology_labels(binding.metadata.labels, node, self._topology_labels)

    def admit_update(self, obj: Message) -> None:
        if isinstance(obj, types_pb2.Pod) and self._on(DEFAULT_TOLERATION_SECONDS):
            admit_default_toleration_seconds(obj, self._toleration_seconds)

    async def validate_update(
        self, obj: Message, subresource: str, old: Message | None = None
    ) -> None:
        """The validating plugins on an update (of `subresource`, "" the object) of `old`:
        NodeRestriction, LimitRanger on a pod's resize and on a PersistentVolumeClaim
        (issue #57 gcquota)."""
        if self._node_restriction is not None and old is not None:
            kind = kind_of(obj)
            meta = obj.metadata  # type: ignore[attr-defined]
            await self._restrict(
                Request(
                    UPDATE,
                    kind.resource,
                    kind.group,
                    subresource,
                    meta.namespace,
                    meta.name,
                    obj,
                    old,
                )
            )
        if not self._on(LIMIT_RANGER):
            return
        if isinstance(obj, types_pb2.Pod) and subresource == RESIZE.name:
            limit_ranger.validate(obj, await self._limit_ranges(obj.metadata.namespace))
        elif isinstance(obj, types_pb2.PersistentVolumeClaim) and not subresource:
            limit_ranger.validate_pvc(obj, await self._limit_ranges(obj.metadata.namespace))

    async def admit_delete(self, kind: Kind, namespace: str, name: str) -> None:
        """The admission of a delete: NodeRestriction (a node deletes only its own pods,
        Node, Lease, CSINode and slices)."""
        if self._node_restriction is None:
            return
        old = None
        if kind.resource in self._caches:
            cache = self._caches[kind.resource]
            key = f"{cache.prefix}{namespace}/{name}" if namespace else f"{cache.prefix}{name}"
            found = cache.get(key)
            old = None if found is None else found.obj
        await self._restrict(
            Request(DELETE, kind.resource, kind.group, "", namespace, name, old=old)
        )

    async def admit_eviction(self, eviction: api_pb2.Eviction) -> None:
        """pods/eviction's admission: NodeRestriction (a node evicts only its own pods)."""
        meta = eviction.metadata
        await self._restrict(
            Request(CREATE, "pods", "", "eviction", meta.namespace, meta.name, eviction)
        )

    async def _pod(self, namespace: str, name: str) -> types_pb2.Pod | None:
        found = await self._fresh_one("pods", namespace, name)
        return found if isinstance(found, types_pb2.Pod) else None

    async def _limit_ranges(self, namespace: str) -> list[types_pb2.LimitRange]:
        if "limitranges" not in self._caches:  # (a registry of a unit test's few kinds)
            return []
        return limit_ranger.in_namespace(await self._fresh("limitranges"), namespace)

    async def _cached_service_account(
        self, namespace: str, name: str
    ) -> types_pb2.ServiceAccount | None:
        if "serviceaccounts" not in self._caches:  # (a registry of a unit test's few kinds)
            return None
        found = await self._fresh_one("serviceaccounts", namespace, name)
        return found if isinstance(found, types_pb2.ServiceAccount) else None

    async def _node(self, name: str) -> types_pb2.Node | None:
        if "nodes" not in self._caches:  # (a registry of a unit test's few kinds)
            return None
        cache = await self._fresh_cache("nodes")
        found = cache.get(f"{cache.prefix}{name}")
        return found.obj if found is not None and isinstance(found.obj, types_pb2.Node) else None

    async def _storage_classes(self) -> list[types_pb2.StorageClass]:
        if "storageclasses" not in self._caches:  # (a registry of a unit test's few kinds)
            return []
        objs = await self._fresh("storageclasses")
        return [o for o in objs if isinstance(o, types_pb2.StorageClass)]

    async def _priority_classes(self) -> list[types_pb2.PriorityClass]:
        objs = await self._fresh("priorityclasses")
        return [o for o in objs if isinstance(o, types_pb2.PriorityClass)]

    async def _fresh_one(self, resource: str, namespace: str, name: str) -> Message | None:
        """One object of `resource` as `_fresh` sees it (None: not there), by its key."""
        cache = await self._fresh_cache(resource)
        co = cache.get(f"{cache.prefix}{namespace}/{name}")
        return None if co is None else co.obj

    async def _fresh(self, resource: str) -> list[Message]:
        """What the watch cache of `resource` holds once it has seen this apiserver's own
        last write of it. Read-your-writes within this apiserver: a pod created right after
        its PriorityClass (the create returned) must find it (upstream's Priority plugin
        reads an informer's lister and has that window: plugin/pkg/admission/priority/
        admission.go; PodGroupWorkloadExists GETs on a lister miss). Past wait_fresh's
        timeout it admits with what the cache holds."""
        return [co.obj for co in (await self._fresh_cache(resource)).objects()]

    async def _fresh_cache(self, resource: str) -> WatchCache:
        cache = self._caches[resource]
        written = self._written.get(resource, 0)
        if written > cache.revision:
            await cache.wait_fresh(written)
        return cache
