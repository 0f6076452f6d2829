"""The REST semantics of every resource: what create, update, patch, delete and the
subresources (status, binding, resize, eviction, finalize) do to stored objects.

Upstream's registries (pkg/registry/<group>/<kind>/storage): the generic store
(apiserver/registry/store.py: compare-and-swap writes from the watch cache's first guess, graceful
deletion, dry run) with each kind's strategy (kemu/machinery/strategy.py: defaults, what the
server owns, what a status update may change, when the generation bumps), admission on create
and update, and the subresources' handlers. Writes retry on Conflict unless the caller pinned a
resourceVersion.
"""

from __future__ import annotations

import copy
import functools
import logging
import secrets
import string
import uuid
from collections.abc import Callable
from typing import Any, Final

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from apiserver.admission import plugins as admission
from apiserver.admission import service_ips as services
from apiserver.admission.namespace_lifecycle import NamespaceLifecycle, check_deletable
from apiserver.registry.eviction import EvictionREST
from apiserver.registry.store import GenericStore, Mutation, Stored, copy_of, meta_of
from apiserver.storage.etcd import EtcdStore
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import api_pb2, types_pb2
from kemu.component.clock import Clock, RealClock
from kemu.component.featuregate import (
    CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING,
    IN_PLACE_POD_VERTICAL_SCALING,
    POD_DISRUPTION_CONDITIONS,
    POD_OBSERVED_GENERATION_TRACKING,
    FeatureGates,
)
from kemu.component.strategy_options import strategy_options
from kemu.component.version import DEFAULT_VERSION, Version
from kemu.component.version_rules import VersionRules
from kemu.machinery import convert, jsonutil, subresources
from kemu.machinery import namespaces as ns_rules
from kemu.machinery import patch as patches
from kemu.machinery.defaults import set_defaults
from kemu.machinery.delete_options import check_preconditions
from kemu.machinery.deletion import DeleteOptions
from kemu.machinery.errors import BadRequest, Conflict, Invalid, NotFound
from kemu.machinery.kinds import BY_KIND, Kind, kind_for_resource, kind_of
from kemu.machinery.pod_conditions import set_scheduled
from kemu.machinery.pod_strategy import check_bindable, check_binding_preconditions
from kemu.machinery.qos import compute_qos_class
from kemu.machinery.strategy import before_update, strategy_for
from kemu.machinery.subresources import Subresource
from kemu.machinery.update_strategy import (
    check_update_uid,
)
from kemu.machinery.validation import validate_object, validate_status_update

logger = logging.getLogger(__name__)


_POD: Final = BY_KIND["Pod"]
_NAMESPACE: Final = BY_KIND["Namespace"]
_meta = meta_of
_copy = copy_of

_Write = Callable[[Kind, Message, Message], Message]
_WRITES: Final = {
    "": "_update_main",
    subresources.STATUS.name: "_update_status",
    subresources.RESIZE.name: "_resize",
    subresources.FINALIZE.name: "_finalize",
}
"""What an update or patch of each subresource stores: the registry's method of that name."""


class Registry:
    def __init__(
        self,
        store: EtcdStore,
        caches: dict[str, WatchCache],
        gates: FeatureGates,
        *,
        clock: Clock | None = None,
        version: Version = DEFAULT_VERSION,
        toleration_seconds: admission.DefaultTolerationSeconds = admission.DEFAULT_TOLERATIONS,
    ) -> None:
        self.store = GenericStore(store, caches, clock or RealClock())
        self._toleration_seconds = toleration_seconds
        self._caches = caches
        self._gates = gates
        self._strategy_options = strategy_options(gates)
        self._clock = self.store.clock
        self._now = self._clock.now
        self.lifecycle = NamespaceLifecycle(
            self._cached_namespace, self._live_namespace, clock=self._clock
        )
        self._eviction_rules = VersionRules.at(version)
        self.eviction = self._eviction_rest()

    def now(self) -> float:
        return self._now()

    def dry_run(self) -> Registry:
        """This registry with writes checked but not made (dryRun=All): see dry_run.py."""
        clone = copy.copy(self)
        clone.store = self.store.dry_run_store()
        clone.eviction = clone._eviction_rest()
        return clone

    def _eviction_rest(self) -> EvictionREST:
        return EvictionREST(
            self.store,
            self.lifecycle,
            self._eviction_rules,
            disruption_conditions=self._gates.enabled(POD_DISRUPTION_CONDITIONS),
        )

    async def read(self, kind: Kind, namespace: str, name: str) -> Stored:
        return await self.store.read(kind, namespace, name)

    async def get_bytes(self, kind: Kind, namespace: str, name: str) -> bytes:
        return await self.store.get_bytes(kind, namespace, name)

    async def guaranteed_update(
        self, kind: Kind, namespace: str, name: str, mutate: Mutation, *, precondition_rv: str = ""
    ) -> Message:
        return await self.store.guaranteed_update(
            kind, namespace, name, mutate, precondition_rv=precondition_rv
        )

    # ------------------------------------------------------------ namespaces

    def _cached_namespace(self, name: str) -> types_pb2.Namespace | None:
        obj = self.store.cached(_NAMESPACE, "", name)
        return obj if isinstance(obj, types_pb2.Namespace) else None

    async def _live_namespace(self, name: str) -> types_pb2.Namespace | None:
        try:
            obj = (await self.read(_NAMESPACE, "", name)).obj
        except NotFound:
            return None
        assert isinstance(obj, types_pb2.Namespace)
        return obj

    async def _delete_namespace(
        self, name: str, *, uid: str | None, resource_version: str | None
    ) -> Message:
        """The first delete marks the namespace Terminating; once the namespace controller has
        removed its finalizer (see `patch` with the finalize subresource), it is removed."""
        check_deletable(name)
        current = await self.read(_NAMESPACE, "", name)
        ns = current.obj
        assert isinstance(ns, types_pb2.Namespace)
        check_preconditions(ns.metadata, uid=uid, resource_version=resource_version)
        if not ns.metadata.HasField("deletion_timestamp"):

            def mutate(obj: Message) -> Message:
                assert isinstance(obj, types_pb2.Namespace)
                check_preconditions(obj.metadata, uid=uid, resource_version=None)
                ns_rules.begin_deletion(obj, convert.timestamp(self._now()))
                return obj

            result = await self.guaranteed_update(
                _NAMESPACE, "", name, mutate, precondition_rv=resource_version or ""
            )
            if not self.store.dry_run:
                self.lifecycle.deleting(name)
            return result
        if ns.spec.finalizers or ns.metadata.finalizers:
            return ns
        return await self.store.remove(_NAMESPACE, ns, current.revision)

    # ------------------------------------------------------------ create

    async def create(self, obj: Message) -> Message:
        return (await self.create_owned(_copy(obj)))[0]

    async def create_owned(self, obj: Message) -> tuple[Message, bytes]:
        """Creates `obj`, which the caller hands over (it is mutated). Returns the stored object
        and its Object envelope bytes as served, so the gRPC edge need not re-encode it."""
        kind = kind_of(obj)
        meta = _meta(obj)
        if meta.resource_version:
            raise Invalid.field(
                "metadata.resourceVersion",
                "resourceVersion should not be set on objects to be created",
            )
        if kind.namespaced:
            meta.namespace = meta.namespace or "default"
        else:
            meta.namespace = ""
        if not meta.name and meta.generate_name:
            suffix = "".join(
                secrets.choice(string.ascii_lowercase + string.digits) for _ in range(5)
            )
            meta.name = meta.generate_name + suffix
        if kind.namespaced:
            await self.lifecycle.admit_create(kind.resource, meta.name, meta.namespace)
        meta.uid = str(uuid.uuid4())
        meta.creation_timestamp.CopyFrom(convert.timestamp(self._now()))
        meta.ClearField("deletion_timestamp")
        meta.ClearField("deletion_grace_period_seconds")
        meta.generation = 1
        self._prepare_for_create(kind, obj)
        if kind.kind == "Pod":
            assert isinstance(obj, types_pb2.Pod)
            await self._admit_pod(obj)
        causes = validate_object(obj)
        if causes:
            raise Invalid.from_causes(f'{kind.kind} "{meta.name}"', causes)
        if isinstance(obj, types_pb2.Pod):
            # Quantities are valid by now; pod-level resources decide with their gate.
            obj.status.qos_class = compute_qos_class(
                obj, pod_level_resources=self._strategy_options.pod_level_resources
            )
        return obj, await self.store.create(kind, obj)

    def _prepare_for_create(self, kind: Kind, obj: Message) -> None:
        strategy_for(kind).prepare_for_create(obj, self._strategy_options, self._now())
        if isinstance(obj, types_pb2.Service):
            # The service REST storage's allocators (BeginCreate), after the strategy.
            services.allocate(
                obj,
                (
                    co.obj
                    for co in self._caches["services"].objects()
                    if isinstance(co.obj, types_pb2.Service)
                ),
            )

    async def _admit_pod(self, pod: types_pb2.Pod) -> None:
        cache = self._caches["priorityclasses"]
        # Read-your-writes within this apiserver: a pod created right after its PriorityClass
        # (the create returned) must find it, so the cache is first brought to this apiserver's
        # last PriorityClass write (upstream's Priority plugin reads an informer's lister and
        # has that window: plugin/pkg/admission/priority/admission.go). Past wait_fresh's
        # timeout it admits with what the cache holds.
        written = self.store.written.get("priorityclasses", 0)
        if written > cache.revision:
            await cache.wait_fresh(written)
        classes = [co.obj for co in cache.objects()]
        admission.admit_priority(pod, classes)  # type: ignore[arg-type]
        admission.admit_default_toleration_seconds(pod, self._toleration_seconds)

    # ------------------------------------------------------------ update

    async def update(self, obj: Message, *, subresource: str = "") -> Message:
        """A PUT of the object or of its subresource (status, resize, finalize)."""
        kind = kind_of(obj)
        write = self._write_of(kind, subresources.check(kind, subresource, subresources.UPDATE))
        meta = _meta(obj)
        namespace = (meta.namespace or "default") if kind.namespaced else ""

        def mutate(current: Message) -> Message:
            check_update_uid(kind, current, obj)
            return write(kind, current, obj)

        result = await self.guaranteed_update(
            kind, namespace, meta.name, mutate, precondition_rv=meta.resource_version
        )
        return await self._after_write(subresource, result)

    # The subresources' writes: what an update or patch of each stores, from the stored object
    # and the one sent (which is only read).

    def _write_of(self, kind: Kind, sub: Subresource | None) -> _Write:
        method = _WRITES.get(sub.name if sub is not None else "")
        if method is None:
            assert sub is not None
            raise BadRequest(
                f"{kind.resource}/{sub.name} is served by the REST edge only "
                "(a Scale is not an Object of kemu's gRPC Api)"
            )
        write: _Write = getattr(self, method)  # (this registry's: a dry-run view has its own)
        return write

    async def _after_write(self, subresource: str, written: Message) -> Message:
        if subresource == subresources.FINALIZE.name:
            return await self._remove_if_finalized(written)
        return written

    def _update_main(self, kind: Kind, current: Message, new: Message) -> Message:
        sent = _copy(new)
        set_defaults(sent)  # upstream defaults every decoded object
        if isinstance(sent, types_pb2.Pod):  # admission runs on create and update
            admission.admit_default_toleration_seconds(sent, self._toleration_seconds)
        return self._validated(
            kind, current, before_update(kind, current, sent, self._strategy_options)
        )

    def _update_status(self, kind: Kind, current: Message, new: Message) -> Message:
        strategy = strategy_for(kind)
        written = strategy.prepare_for_status_update(
            new, current, self._strategy_options, self._now()
        )
        causes = validate_status_update(written, current)
        if causes:
            raise Invalid.from_causes(f'{kind.kind} "{_meta(current).name}"', causes)
        return written

    @staticmethod
    def _validated(kind: Kind, current: Message, result: Message) -> Message:
        causes = validate_object(result, old=current)
        if causes:
            raise Invalid.from_causes(f'{kind.kind} "{_meta(current).name}"', causes)
        return result

    # ------------------------------------------------------------ patch

    async def patch(
        self,
        resource: str,
        namespace: str,
        name: str,
        patch_text: str,
        subresource: str,
        patch_type: str = patches.MERGE,
        unknown: convert.UnknownFields | None = None,
    ) -> Message:
        """A PATCH of any type (kemu.machinery.patch) on the stored object's JSON, in the
        compare-and-swap loop; then the same rules as an update of the subresource. Unknown
        fields in the result: see convert.UnknownFields (fieldValidation)."""
        kind = kind_for_resource(resource)
        namespace = (namespace or "default") if kind.namespaced else ""
        if patch_type == patches.MERGE:
            patch: Any = admission.parse_patch(patch_text)
        else:
            patch = jsonutil.loads(patch_text, "the patch")
        write = self._write_of(kind, subresources.check(kind, subresource, subresources.PATCH))
        pinned = ""
        meta_patch = patch.get("metadata") if isinstance(patch, dict) else None
        if isinstance(meta_patch, dict) and meta_patch.get("resourceVersion") is not None:
            pinned = str(meta_patch["resourceVersion"])

        def mutate(current: Message) -> Message:
            if unknown is not None:
                unknown.found.clear()  # this attempt's (the loop may retry)
            try:
                if patch_type == patches.MERGE and subresource == subresources.STATUS.name:
                    # (the status strategy takes every other field from `current`)
                    patched = merge_patched(kind, current, patch, unknown)
                else:
                    patched_dict = patches.apply(patch_type, convert.to_dict(current), patch, kind)
                    patched = convert.from_dict(kind, patched_dict, unknown)
            except Invalid as e:
                raise Invalid(f"the patch is invalid: {e.message}", e.causes) from None
            _meta(patched).resource_version = _meta(current).resource_version
            return write(kind, current, patched)

        result = await self.guaranteed_update(kind, namespace, name, mutate, precondition_rv=pinned)
        return await self._after_write(subresource, result)

    def _finalize(self, kind: Kind, current: Message, new: Message) -> Message:
        """namespaces/finalize: spec.finalizers only (upstream namespaceFinalizeStrategy)."""
        assert isinstance(current, types_pb2.Namespace) and isinstance(new, types_pb2.Namespace)
        return self._validated(kind, current, ns_rules.prepare_for_finalize(new, current))

    async def _remove_if_finalized(self, ns: Message) -> Message:
        """Upstream's ShouldDeleteNamespaceDuringUpdate: a terminating namespace whose last
        finalizer is gone is deleted by the write that removed it."""
        assert isinstance(ns, types_pb2.Namespace)
        meta = ns.metadata
        if not meta.HasField("deletion_timestamp") or ns.spec.finalizers or meta.finalizers:
            return ns
        try:
            return await self.store.remove(_NAMESPACE, ns, int(meta.resource_version))
        except (Conflict, NotFound):
            return ns  # someone else wrote or removed it since: their write decides

    # ------------------------------------------------------------ delete

    async def delete(
        self,
        resource: str,
        namespace: str,
        name: str,
        *,
        grace_period: int | None,
        uid: str | None,
        resource_version: str | None,
        propagation_policy: str | None = None,
        orphan_dependents: bool | None = None,
    ) -> Message:
        """Deletes, or marks deleting (graceful pods, finalizers): see kemu.machinery.deletion.
        Returns the object as it stands after the call."""
        kind = kind_for_resource(resource)
        namespace = (namespace or "default") if kind.namespaced else ""
        options = DeleteOptions(
            grace_period=grace_period,
            uid=uid,
            resource_version=resource_version,
            propagation_policy=propagation_policy,
            orphan_dependents=orphan_dependents,
        )
        options.validate()
        if kind is _NAMESPACE:
            return await self._delete_namespace(name, uid=uid, resource_version=resource_version)
        return await self.store.delete(kind, namespace, name, options)

    # ------------------------------------------------------------ pods/binding

    async def bind(self, binding: api_pb2.Binding) -> None:
        namespace = binding.metadata.namespace or "default"
        name = binding.metadata.name
        node = binding.target.name
        if not name:
            raise Invalid.field("metadata.name", "Required value")
        if not node:
            raise Invalid.field("target.name", "Required value")
        if binding.target.kind not in ("", "Node"):
            raise Invalid.field("target.kind", f'must be "Node", not "{binding.target.kind}"')
        clear_nnn = self._gates.enabled(CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING)
        await self.lifecycle.admit_create("pods", name, namespace)  # pods/binding is a create
        # The binding's uid and resourceVersion are storage preconditions, as upstream's
        # BindingREST: a pod deleted and re-created under the same name is never bound to
        # the node chosen for the old one.
        # (In the mutation: on a stale guess from the watch cache they are confirmed on the
        # current pod before a Conflict is returned, as upstream's storage preconditions.)
        uid = binding.metadata.uid
        pinned = binding.metadata.resource_version

        def mutate(obj: Message) -> Message:
            assert isinstance(obj, types_pb2.Pod)
            check_binding_preconditions(obj, uid=uid, resource_version=pinned)
            check_bindable(obj)
            obj.spec.node_name = node
            for k, v in binding.metadata.annotations.items():
                obj.metadata.annotations[k] = v
            if clear_nnn:
                obj.status.nominated_node_name = ""
            set_scheduled(
                obj, self._now(), tracking=self._gates.enabled(POD_OBSERVED_GENERATION_TRACKING)
            )
            return obj

        await self.guaranteed_update(_POD, namespace, name, mutate)

    # ------------------------------------------------------------ pods/resize

    async def resize(self, pod: types_pb2.Pod) -> types_pb2.Pod:
        result = await self.update(pod, subresource=subresources.RESIZE.name)
        assert isinstance(result, types_pb2.Pod)
        return result

    def _resize(self, kind: Kind, current: Message, desired: Message) -> Message:
        assert isinstance(current, types_pb2.Pod) and isinstance(desired, types_pb2.Pod)
        if not self._gates.enabled(IN_PLACE_POD_VERTICAL_SCALING):
            raise NotFound(
                "the server could not find the requested resource (pods/resize): "
                "feature gate InPlacePodVerticalScaling is disabled"
            )
        result = admission.resize_pod(current, desired)
        # Not validated as an update: resize changes what updates may not.
        causes = validate_object(result)
        if causes:
            raise Invalid.from_causes(f'Pod "{current.metadata.name}"', causes)
        admission.check_resize_qos(
            current, result, pod_level_resources=self._strategy_options.pod_level_resources
        )
        return result

    # ------------------------------------------------------------ pods/eviction

    async def evict(self, eviction: api_pb2.Eviction) -> None:
        await self.eviction.create(eviction)


@functools.cache
def _patchable_fields(desc: Descriptor) -> dict[str, str]:
    """The top-level fields of a kind that a merge patch can rewrite one at a time: JSON name
    to field name of each singular field of a plain message type (metadata, spec, status)."""
    out = {}
    for fd in sorted(desc.fields, key=lambda fd: fd.number):
        sub = fd.message_type
        if (
            sub is None
            or fd.is_repeated
            or sub.full_name in ("google.protobuf.Timestamp", "kemu.api.v1.IntOrString")
        ):
            continue
        out[fd.json_name] = fd.name
    return out


@functools.cache
def _string_fields(desc: Descriptor) -> dict[str, str]:
    """JSON name to field name of a message's singular string fields."""
    return {
        fd.json_name: fd.name
        for fd in desc.fields
        if fd.type == FieldDescriptor.TYPE_STRING and not fd.is_repeated
    }


def merge_patched(
    kind: Kind,
    current: Message,
    patch: dict[str, Any],
    unknown: convert.UnknownFields | None = None,
) -> Message:
    """`from_dict(kind, merge_patch(to_dict(current), patch), unknown)`, converting only the
    top-level fields the patch names (the status PATCHes of schedulers and kubelets convert
    metadata and status, not the spec): a merge patch leaves every other top-level key as it
    was. The patched fields are filled in the order the whole object's JSON would list them
    (set fields in field order, then new ones in the patch's order), so the first Invalid
    field and the unknown fields found are the same. A patch naming anything else
    (apiVersion, kind, a scalar or unknown field) takes the whole round trip.

    An untouched field is the current one, where the round trip would give back its JSON
    reading: the same but for what the JSON cannot carry (an IntOrString holding neither an
    int nor a string). So the registry uses this for the status subresource only, whose
    strategy takes every field but the status (and the metadata the patch names) from the
    stored object."""
    fields = _patchable_fields(current.DESCRIPTOR)
    if not all(key in fields for key in patch):
        return convert.from_dict(
            kind, patches.apply(patches.MERGE, convert.to_dict(current), patch, kind), unknown
        )
    present = [key for key in fields if key in patch and current.HasField(fields[key])]
    absent = [key for key in patch if key not in present]
    out = _copy(current)
    for key in (*present, *absent):
        name = fields[key]
        value = patch[key]
        if value is None:  # null removes the field
            out.ClearField(name)
            continue
        strings = _string_fields(getattr(current, name).DESCRIPTOR)
        if (
            isinstance(value, dict)
            and value
            and all(k in strings and isinstance(v, str) for k, v in value.items())
        ):
            # Strings set, nothing else (a status PATCH's metadata.resourceVersion): what
            # the round trip would give, without it.
            child = getattr(out, name)
            for k, v in value.items():
                setattr(child, strings[k], v)
            child.SetInParent()
            continue
        before = convert.message_to_dict(getattr(current, name)) if key in present else None
        out.ClearField(name)
        child = getattr(out, name)
        convert.fill_message(child, convert.merge_patch(before, value), key, unknown)
        child.SetInParent()
    if unknown is not None:
        unknown.check()
    return out
