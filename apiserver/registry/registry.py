"""The REST semantics of every resource: what create, update, patch and delete do to stored
objects, and which handler serves each subresource.

Upstream's registries (pkg/registry/<group>/<kind>/storage): the generic store (store.py:
compare-and-swap writes from the watch cache's first guess, graceful deletion, dry run) with each
kind's strategy (kemu/machinery/strategy.py: defaults, what the server owns, what a status update
may change, when the generation bumps), admission on create and update (apiserver/admission), and
the subresources' handlers (subresources.py, eviction.py). Writes retry on Conflict unless the
caller pinned a resourceVersion.
"""

from __future__ import annotations

import copy
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from google.protobuf.message import Message

from apiserver.admission.chain import AdmissionChain
from apiserver.admission.default_toleration_seconds import (
    DEFAULT_TOLERATIONS,
    DefaultTolerationSeconds,
)
from apiserver.admission.namespace_lifecycle import NamespaceLifecycle
from apiserver.admission.plugins import (
    DEFAULT_PLUGINS,
    NAMESPACE_LIFECYCLE,
    POD_TOPOLOGY_LABELS,
    RESOURCE_QUOTA,
    AdmissionPlugins,
)
from apiserver.admission.pod_topology_labels import TOPOLOGY_LABELS
from apiserver.admission.resource_quota import ResourceQuotaAdmission
from apiserver.registry.eviction import EvictionREST
from apiserver.registry.field_managers import FieldTracker, apply_conflict
from apiserver.registry.names import RANDOM_NAMES, NameGenerator
from apiserver.registry.patch import merge_patched, parse_patch
from apiserver.registry.store import GenericStore, Mutation, Stored, copy_of, meta_of, subject
from apiserver.registry.subresources import (
    ApprovalREST,
    BindingREST,
    FinalizeREST,
    ObjectREST,
    ResizeREST,
    StatusREST,
    UpdateREST,
)
from apiserver.storage.etcd import EtcdStore
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import api_pb2, types_pb2
from kemu.component.clock import Clock, RealClock
from kemu.component.featuregate import (
    POD_DISRUPTION_CONDITIONS,
    POD_TOPOLOGY_LABELS_ADMISSION,
    RETRY_GENERATE_NAME,
    FeatureGates,
)
from kemu.component.strategy_options import strategy_options
from kemu.component.version import DEFAULT_VERSION, Version
from kemu.component.version_rules import VersionRules
from kemu.machinery import convert, jsonutil, podgroups, subresources
from kemu.machinery import namespaces as ns_rules
from kemu.machinery import patch as patches
from kemu.machinery.delete_options import check_preconditions
from kemu.machinery.deletion import DeleteOptions
from kemu.machinery.errors import AlreadyExists, BadRequest, Invalid, NotFound, Subject
from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.machinery.kinds import BY_KIND, Kind, Served, kind_for_resource, kind_of
from kemu.machinery.managedfields import apply as apply_rules
from kemu.machinery.managedfields.typed import InvalidValue
from kemu.machinery.managedfields.updater import Conflicts
from kemu.machinery.runtime_config import NO_RUNTIME_CONFIG, RuntimeConfig
from kemu.machinery.strategy import strategy_for
from kemu.machinery.update_strategy import check_update_uid, has_generation
from kemu.machinery.validation.objects import validate_object

logger = logging.getLogger(__name__)

_POD: Final = BY_KIND["Pod"]
_NAMESPACE: Final = BY_KIND["Namespace"]
_SERVICE_ACCOUNT: Final = BY_KIND["ServiceAccount"]
GENERATE_NAME_ATTEMPTS: Final = 8
"""store.go's maxNameGenerationCreateAttempts: with RetryGenerateName, a create by
generateName tries this many names in all before it answers AlreadyExists."""


def _never_taken(name: str) -> bool:
    del name
    return False


@dataclass(frozen=True)
class RegistrySettings:
    """What the registry is configured with: the feature gates and emulated version its rules
    follow, and the admission plugins' settings."""

    gates: FeatureGates
    version: Version = DEFAULT_VERSION
    toleration_seconds: DefaultTolerationSeconds = DEFAULT_TOLERATIONS
    runtime_config: RuntimeConfig = NO_RUNTIME_CONFIG
    """--runtime-config: with the version and the gates, what is served (`Served.at`)."""
    admission: AdmissionPlugins = DEFAULT_PLUGINS
    """The admission plugins enabled (--enable-/--disable-admission-plugins)."""
    names: NameGenerator = RANDOM_NAMES
    """What makes up the names of creates by generateName (apiserver.registry.names)."""


class Registry:
    def __init__(
        self,
        store: EtcdStore,
        caches: Mapping[str, WatchCache],
        settings: RegistrySettings,
        clock: Clock | None = None,
    ) -> None:
        self.store = GenericStore(store, caches, clock or RealClock())
        self._gates = settings.gates
        self._names = settings.names
        self._strategy_options = strategy_options(settings.gates)
        self._clock = self.store.clock
        self._now = self._clock.now
        plugins = settings.admission
        self.admission = AdmissionChain(
            caches,
            self.store.written,
            settings.toleration_seconds,
            self._strategy_options.pod_groups,
            VersionRules.at(settings.version),
            TOPOLOGY_LABELS
            if settings.gates.enabled(POD_TOPOLOGY_LABELS_ADMISSION)
            and plugins.on(POD_TOPOLOGY_LABELS)
            else (),
            plugins,
            self._live_service_account,
            self._volume_name,
        )
        self.lifecycle = NamespaceLifecycle(
            self._cached_namespace,
            self._live_namespace,
            clock=self._clock,
            enabled=plugins.on(NAMESPACE_LIFECYCLE),
        )
        self._eviction_rules = VersionRules.at(settings.version)
        # issue #57 kinds-a; without the plugin there is no quota to charge
        self._quota_cache = (
            caches.get(BY_KIND["ResourceQuota"].resource) if plugins.on(RESOURCE_QUOTA) else None
        )
        self.served = Served.at(
            settings.version.minor, settings.gates.enabled, settings.runtime_config
        )
        """The kinds and group versions served at the emulated version with the gates and the
        runtime config: a
        write or get of another kind is NotFound on both edges. (Lists and watches of the
        gRPC edge serve every kind: kemu's controllers list them all, where upstream's find
        the served ones by discovery.)"""
        self.fields = FieldTracker(self.served)  # issue #57: managedFields
        self._serve_subresources()

    def _serve_subresources(self) -> None:
        """The subresources' handlers, over this registry's store (a dry-run view has its
        own)."""
        options = self._strategy_options
        self._updates: dict[str, UpdateREST] = {
            "": ObjectREST(options, self.admission),
            subresources.STATUS.name: StatusREST(options, self._now, self._cached_namespace),
            subresources.RESIZE.name: ResizeREST(options, self._gates),
            subresources.FINALIZE.name: FinalizeREST(self.store),
            subresources.APPROVAL.name: ApprovalREST(options, self._now),  # issue #57 kinds-a
        }
        self.binding = BindingREST(self.store, self.lifecycle, self._gates, self.admission)
        self._quota = ResourceQuotaAdmission(self.store, self._quota_cache)  # issue #57 kinds-a
        self.eviction = EvictionREST(
            self.store,
            self.lifecycle,
            self._eviction_rules,
            disruption_conditions=self._gates.enabled(POD_DISRUPTION_CONDITIONS),
        )

    def now(self) -> float:
        return self._now()

    def dry_run(self) -> Registry:
        """This registry with writes checked but not made (dryRun=All): see dry_run.py."""
        clone = copy.copy(self)
        clone.store = self.store.dry_run_store()
        clone._serve_subresources()
        return clone

    async def read(self, kind: Kind, namespace: str, name: str) -> Stored:
        return await self.store.read(kind, namespace, name)

    async def get_bytes(self, kind: Kind, namespace: str, name: str) -> bytes:
        """A get from either edge (NotFound for a kind not served)."""
        self.served.check(kind)
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

    def _volume_name(self, pod: types_pb2.Pod, base: str) -> str:
        """The ServiceAccount plugin's token volume's name (SimpleNameGenerator, as upstream's
        plugin): a sequence of the pod's own, so that a pod's volume is named alike each run
        on the virtual clock."""
        meta = pod.metadata
        return self._names.generate(
            "pods/volumes", f"{meta.namespace}/{meta.name}", base, _never_taken
        )

    async def _live_service_account(
        self, namespace: str, name: str
    ) -> types_pb2.ServiceAccount | None:
        try:
            obj = (await self.read(_SERVICE_ACCOUNT, namespace, name)).obj
        except NotFound:
            return None
        assert isinstance(obj, types_pb2.ServiceAccount)
        return obj

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
        self.lifecycle.check_deletable(name)
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
        return (await self.create_owned(copy_of(obj)))[0]

    async def create_owned(
        self, obj: Message, managed_fields: list[types_pb2.ManagedFieldsEntry] | None = None
    ) -> tuple[Message, bytes]:
        """Creates `obj`, which the caller hands over (it is mutated). Returns the stored object
        and its Object envelope bytes as served, so the gRPC edge need not re-encode it.
        `managed_fields`: the entries of a create by server-side apply (else the request's
        manager owns what it set: FieldTracker.created)."""
        kind = kind_of(obj)
        self.served.check(kind)
        meta = meta_of(obj)
        if meta.resource_version:
            raise Invalid.field(
                "metadata.resourceVersion",
                "resourceVersion should not be set on objects to be created",
            )
        if kind.namespaced:
            meta.namespace = meta.namespace or "default"
        else:
            meta.namespace = ""
        if meta.name or not meta.generate_name:
            return await self._create(kind, obj, managed_fields)
        # store.go Create: with RetryGenerateName, each attempt is a whole create of a copy
        # under a new name (createWithGenerateNameRetry); a name still taken at the end is
        # rest.CheckGeneratedNameError's conflict.
        attempts = GENERATE_NAME_ATTEMPTS if self._gates.enabled(RETRY_GENERATE_NAME) else 1
        for attempt in range(attempts):
            candidate = obj if attempt == attempts - 1 else copy_of(obj)
            async with self._names.turn(kind.resource, meta.namespace, meta.generate_name):
                meta_of(candidate).name = self._names.generate(
                    kind.resource,
                    meta.namespace,
                    meta.generate_name,
                    lambda name: self.store.cached(kind, meta.namespace, name) is not None,
                )
                try:
                    return await self._create(kind, candidate, managed_fields)
                except AlreadyExists as e:
                    taken = meta_of(candidate).name
                    logger.info("generated name %s of %s taken: %s", taken, kind.resource, e)
        raise AlreadyExists(
            f'{kind.qualified_resource} "{taken}" already exists, the server was not able to '
            "generate a unique name for the object",
            subject=subject(kind, taken),
        )

    async def _create(
        self,
        kind: Kind,
        obj: Message,
        managed_fields: list[types_pb2.ManagedFieldsEntry] | None,
    ) -> tuple[Message, bytes]:
        """One attempt of create_owned, once `obj` has its name and namespace."""
        meta = meta_of(obj)
        if kind.namespaced:
            await self.lifecycle.admit_create(kind.resource, meta.name, meta.namespace)
        meta.uid = str(uuid.uuid4())
        meta.creation_timestamp.CopyFrom(convert.timestamp(self._now()))
        meta.ClearField("deletion_timestamp")
        meta.ClearField("deletion_grace_period_seconds")
        meta.generation = 1 if has_generation(obj) else 0
        # The kind's strategy (PrepareForCreate: defaults, what the server owns, a pod's QoS
        # class), then admission, then validation. (Upstream's mutating admission runs before
        # PrepareForCreate on an object its decoder has defaulted; kemu's strategies do the
        # defaulting, so admission follows them and reads the defaulted object.)
        strategy_for(kind).prepare_for_create(obj, self._strategy_options, self._now())
        await self.admission.admit_create(obj)
        causes = validate_object(
            obj, pod_groups=self._strategy_options.pod_groups, dra=self._strategy_options.dra
        )
        if causes:
            raise Invalid.from_causes(
                f'{kind.qualified_kind} "{meta.name}"',
                causes,
                Subject(meta.name, kind.group, kind.kind),
            )
        await self.admission.validate_create(obj)
        await self._quota.admit_create(obj)  # issue #57 kinds-a
        if managed_fields is None:
            self.fields.created(kind, obj, self._now())
        else:
            del meta.managed_fields[:]
            meta.managed_fields.extend(managed_fields)
        return obj, await self.store.create(kind, obj)

    # ------------------------------------------------------------ update

    async def update(self, obj: Message, *, subresource: str = "") -> Message:
        """A PUT of the object or of its subresource (status, resize, finalize)."""
        kind = kind_of(obj)
        self.served.check(kind)
        rest = self._update_rest(kind, subresources.check(kind, subresource, subresources.UPDATE))
        meta = meta_of(obj)
        namespace = (meta.namespace or "default") if kind.namespaced else ""

        async def mutate(current: Message) -> Message:
            check_update_uid(kind, current, obj)
            written = rest.write(kind, current, obj)
            self.fields.updated(kind, current, written, subresource, self._now())
            return await self._admit_update(current, written, subresource)

        result = await self.guaranteed_update(
            kind, namespace, meta.name, mutate, precondition_rv=meta.resource_version
        )
        return await rest.after_write(result)

    async def _admit_update(self, current: Message, new: Message, subresource: str) -> Message:
        """The validating admission of an update, inside the compare-and-swap loop as upstream's
        (LimitRanger, then ResourceQuota charging what the update adds: issue #57 gcquota)."""
        await self.admission.validate_update(new, subresource, current)
        await self._quota.admit_update(new, current, subresource)
        return new

    def _update_rest(self, kind: Kind, sub: subresources.Subresource | None) -> UpdateREST:
        rest = self._updates.get(sub.name if sub is not None else "")
        if rest is None:
            assert sub is not None
            raise BadRequest(
                f"{kind.resource}/{sub.name} is served by the REST edge only "
                "(a Scale is not an Object of kemu's gRPC Api)"
            )
        return rest

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
        *,
        api_version: str = "",
    ) -> Message:
        """A PATCH of any type (kemu.machinery.patch) on the stored object's JSON, in the
        compare-and-swap loop; then the same rules as an update of the subresource. Unknown
        fields in the result: see convert.UnknownFields (fieldValidation). `api_version`: the
        group version the patch is written in, when not the kind's message's own (the REST
        edge's scheduling.k8s.io/v1alpha2: kemu.machinery.podgroups converts)."""
        kind = kind_for_resource(resource)
        self.served.check(kind)
        versioned = bool(api_version) and podgroups.converts(kind, api_version)
        namespace = (namespace or "default") if kind.namespaced else ""
        if patch_type == patches.MERGE:
            patch: JSON = parse_patch(patch_text)
        else:
            patch = jsonutil.loads(patch_text, "the patch")
        rest = self._update_rest(kind, subresources.check(kind, subresource, subresources.PATCH))
        pinned = ""
        meta_patch = patch.get("metadata") if isinstance(patch, dict) else None
        if isinstance(meta_patch, dict) and meta_patch.get("resourceVersion") is not None:
            pinned = str(meta_patch["resourceVersion"])

        async def mutate(current: Message) -> Message:
            if unknown is not None:
                unknown.found.clear()  # this attempt's (the loop may retry)
            try:
                if versioned:
                    patched_dict = patches.apply(
                        patch_type, podgroups.to_versioned(current, api_version), patch, kind
                    )
                    patched = podgroups.from_versioned(kind, patched_dict, api_version, unknown)
                elif (
                    patch_type == patches.MERGE
                    and subresource == subresources.STATUS.name
                    and isinstance(patch, dict)  # (a merge patch always is: parse_patch)
                ):
                    # (the status strategy takes every other field from `current`)
                    patched = merge_patched(kind, current, patch, unknown)
                else:
                    patched_dict = patches.apply(patch_type, convert.to_dict(current), patch, kind)
                    patched = convert.from_dict(kind, patched_dict, unknown)
            except Invalid as e:
                raise Invalid(f"the patch is invalid: {e.message}", e.causes) from None
            meta_of(patched).resource_version = meta_of(current).resource_version
            written = rest.write(kind, current, patched)
            self.fields.updated(kind, current, written, subresource, self._now())
            return await self._admit_update(current, written, subresource)

        result = await self.guaranteed_update(kind, namespace, name, mutate, precondition_rv=pinned)
        return await rest.after_write(result)

    # ------------------------------------------------------------ apply

    async def apply(
        self,
        resource: str,
        namespace: str,
        name: str,
        config: JSONObject,
        subresource: str,
        *,
        manager: str,
        force: bool,
        unknown: convert.UnknownFields | None = None,
        api_version: str = "",
    ) -> tuple[Message, bool]:
        """Server-side apply (PATCH application/apply-patch+yaml): `config` merged into the
        stored object as structured-merge-diff merges (kemu.machinery.managedfields), or
        created when there is none; then the same rules as an update (or a create). A change
        to fields other managers own is a 409 Conflict naming them unless `force`. Returns
        the object and whether it was created."""
        kind = kind_for_resource(resource)
        self.served.check(kind)
        namespace = (namespace or "default") if kind.namespaced else ""
        version = api_version or kind.api_version
        apply_rules.check_config(kind, config, version, name, namespace)
        rest = self._update_rest(kind, subresources.check(kind, subresource, subresources.PATCH))
        try:
            await self.read(kind, namespace, name)
        except NotFound:
            if subresource:
                raise
            merged, managed = self._applied(kind, None, (), config, manager, force, "")
            obj = podgroups.from_versioned(kind, merged, version, unknown)
            meta = meta_of(obj)
            meta.name = name
            if kind.namespaced:
                meta.namespace = namespace
            created, _ = await self.create_owned(obj, managed)
            return created, True

        async def mutate(current: Message) -> Message:
            if unknown is not None:
                unknown.found.clear()
            live = podgroups.to_versioned(current, version)
            merged, managed = self._applied(
                kind, live, meta_of(current).managed_fields, config, manager, force, subresource
            )
            try:
                patched = podgroups.from_versioned(kind, merged, version, unknown)
            except Invalid as e:
                raise Invalid(f"the patch is invalid: {e.message}", e.causes) from None
            meta_of(patched).resource_version = meta_of(current).resource_version
            written = rest.write(kind, current, patched)
            del meta_of(written).managed_fields[:]
            meta_of(written).managed_fields.extend(managed)
            return await self._admit_update(current, written, subresource)

        result = await self.guaranteed_update(kind, namespace, name, mutate)
        return await rest.after_write(result), False

    def _applied(
        self,
        kind: Kind,
        live: JSONObject | None,
        live_entries: Sequence[types_pb2.ManagedFieldsEntry],
        config: JSONObject,
        manager: str,
        force: bool,
        subresource: str,
    ) -> tuple[JSONObject, list[types_pb2.ManagedFieldsEntry]]:
        try:
            return self.fields.applied(
                kind, live, live_entries, config, manager, force, subresource, self._now()
            )
        except Conflicts as e:
            raise apply_conflict(e, live_entries) from None
        except InvalidValue as e:
            raise Invalid(f"the applied configuration is invalid: {e}") from None

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
        self.served.check(kind)
        namespace = (namespace or "default") if kind.namespaced else ""
        options = DeleteOptions(
            grace_period=grace_period,
            uid=uid,
            resource_version=resource_version,
            propagation_policy=propagation_policy,
            orphan_dependents=orphan_dependents,
        )
        options.validate()
        await self.admission.admit_delete(kind, namespace, name)
        if kind is _NAMESPACE:
            return await self._delete_namespace(name, uid=uid, resource_version=resource_version)
        return await self.store.delete(kind, namespace, name, options)

    # ------------------------------------------------------------ pods subresources

    async def bind(self, binding: api_pb2.Binding) -> None:
        await self.binding.create(binding)

    async def resize(self, pod: types_pb2.Pod) -> types_pb2.Pod:
        result = await self.update(pod, subresource=subresources.RESIZE.name)
        assert isinstance(result, types_pb2.Pod)
        return result

    async def evict(self, eviction: api_pb2.Eviction) -> None:
        await self.admission.admit_eviction(eviction)
        await self.eviction.create(eviction)
