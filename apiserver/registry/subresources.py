"""The writes of an object and of its subresources: one handler object per subresource, as
upstream's REST storages beside a kind's (pkg/registry/core/pod/storage/storage.go: StatusREST,
BindingREST, ResizeREST; pkg/registry/core/namespace/storage/storage.go: FinalizeREST;
pods/eviction is eviction.py's EvictionREST). kemu.machinery.subresources is the table of which
exist for which kinds and verbs; the registry maps each name that an update or patch may carry
to its handler here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Protocol

from google.protobuf.message import Message

from apiserver.admission.chain import AdmissionChain
from apiserver.admission.dra_admin_access import validate_admin_access_status
from apiserver.admission.namespace_lifecycle import NamespaceLifecycle
from apiserver.registry.pod_resize import check_resize_qos, resize_pod
from apiserver.registry.store import GenericStore, copy_of, meta_of
from kemu.api.v1 import api_pb2, types_pb2
from kemu.component.featuregate import (
    CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING,
    IN_PLACE_POD_VERTICAL_SCALING,
    POD_OBSERVED_GENERATION_TRACKING,
    POD_TOPOLOGY_LABELS_ADMISSION,
    FeatureGates,
)
from kemu.machinery import certificates
from kemu.machinery import namespaces as ns_rules
from kemu.machinery.convert import timestamp
from kemu.machinery.defaults import set_defaults
from kemu.machinery.errors import Conflict, Invalid, NotFound, Subject
from kemu.machinery.kinds import BY_KIND, Kind
from kemu.machinery.pod_conditions import set_scheduled
from kemu.machinery.pod_strategy import check_bindable, check_binding_preconditions
from kemu.machinery.strategy import StrategyOptions, before_update, strategy_for
from kemu.machinery.validation.objects import validate_object, validate_status_update

DEFAULT_OPTIONS: Final = StrategyOptions()

_POD: Final = BY_KIND["Pod"]
_NAMESPACE: Final = BY_KIND["Namespace"]


class UpdateREST(Protocol):
    """What an update or patch of an object (or of one of its subresources) stores, from the
    stored object and the one sent (which is only read), inside the store's compare-and-swap
    loop; then what follows the write."""

    def write(self, kind: Kind, current: Message, sent: Message) -> Message: ...

    async def after_write(self, written: Message) -> Message: ...


def _validated(
    kind: Kind, current: Message, result: Message, options: StrategyOptions = DEFAULT_OPTIONS
) -> Message:
    causes = validate_object(result, old=current, pod_groups=options.pod_groups, dra=options.dra)
    if causes:
        raise Invalid.from_causes(
            f'{kind.qualified_kind} "{meta_of(current).name}"',
            causes,
            Subject(meta_of(current).name, kind.group, kind.kind),
        )
    return result


class ObjectREST:
    """An update of the object itself: the decoder's defaults, admission, the kind's strategy
    (PrepareForUpdate: what the server owns is kept), validation against the stored object."""

    def __init__(self, options: StrategyOptions, admission: AdmissionChain) -> None:
        self._options = options
        self._admission = admission

    def write(self, kind: Kind, current: Message, sent: Message) -> Message:
        new = copy_of(sent)
        set_defaults(new)  # upstream defaults every decoded object
        self._admission.admit_update(new)  # admission runs on create and update
        return _validated(
            kind,
            current,
            before_update(kind, current, new, self._options),
            self._options,
        )

    async def after_write(self, written: Message) -> Message:
        return written


class StatusREST:
    """The status subresource: the status strategy takes the status sent and keeps the rest
    (upstream's StatusREST over the kind's StatusStrategy)."""

    def __init__(
        self,
        options: StrategyOptions,
        now: Callable[[], float],
        namespace_of: Callable[[str], types_pb2.Namespace | None],
    ) -> None:
        """`namespace_of`: a namespace as the watch cache holds it (a ResourceClaim's status
        granting admin access needs its namespace's label)."""
        self._options = options
        self._now = now
        self._namespace_of = namespace_of

    def write(self, kind: Kind, current: Message, sent: Message) -> Message:
        written = strategy_for(kind).prepare_for_status_update(
            sent, current, self._options, self._now()
        )
        causes = validate_status_update(
            written, current, pod_groups=self._options.pod_groups, dra=self._options.dra
        )
        if causes:
            raise Invalid.from_causes(
                f'{kind.qualified_kind} "{meta_of(current).name}"',
                causes,
                Subject(meta_of(current).name, kind.group, kind.kind),
            )
        validate_admin_access_status(written, current, self._namespace_of)
        return written

    async def after_write(self, written: Message) -> Message:
        return written


class ResizeREST:
    """pods/resize (KEP-1287): container resources and resize policies only (pod_resize.py)."""

    def __init__(self, options: StrategyOptions, gates: FeatureGates) -> None:
        self._options = options
        self._gates = gates

    def write(self, kind: Kind, current: Message, sent: Message) -> Message:
        assert isinstance(current, types_pb2.Pod) and isinstance(sent, types_pb2.Pod)
        if not self._gates.enabled(IN_PLACE_POD_VERTICAL_SCALING):
            raise NotFound(
                "the server could not find the requested resource (pods/resize): "
                "feature gate InPlacePodVerticalScaling is disabled"
            )
        result = resize_pod(current, sent)
        # Not validated as an update: resize changes what updates may not.
        causes = validate_object(result)
        if causes:
            raise Invalid.from_causes(f'Pod "{current.metadata.name}"', causes)
        check_resize_qos(current, result, pod_level_resources=self._options.pod_level_resources)
        return result

    async def after_write(self, written: Message) -> Message:
        return written


class FinalizeREST:
    """namespaces/finalize: spec.finalizers only (upstream's namespaceFinalizeStrategy); the
    write that removes a terminating namespace's last finalizer deletes it."""

    def __init__(self, store: GenericStore) -> None:
        self._store = store

    def write(self, kind: Kind, current: Message, sent: Message) -> Message:
        assert isinstance(current, types_pb2.Namespace) and isinstance(sent, types_pb2.Namespace)
        return _validated(kind, current, ns_rules.prepare_for_finalize(sent, current))

    async def after_write(self, written: Message) -> Message:
        """Upstream's ShouldDeleteNamespaceDuringUpdate."""
        assert isinstance(written, types_pb2.Namespace)
        meta = written.metadata
        if not meta.HasField("deletion_timestamp") or written.spec.finalizers or meta.finalizers:
            return written
        try:
            return await self._store.remove(_NAMESPACE, written, int(meta.resource_version))
        except (Conflict, NotFound):
            return written  # someone else wrote or removed it since: their write decides


class BindingREST:
    """pods/binding: sets a pod's node (upstream's BindingREST.Create and assignPod)."""

    def __init__(
        self,
        store: GenericStore,
        lifecycle: NamespaceLifecycle,
        gates: FeatureGates,
        admission: AdmissionChain,
    ) -> None:
        self._store = store
        self._lifecycle = lifecycle
        self._gates = gates
        self._admission = admission

    async def create(self, binding: api_pb2.Binding) -> None:
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
        tracking = self._gates.enabled(POD_OBSERVED_GENERATION_TRACKING)
        # (upstream's setPodNodeAndMetadata copies the binding's labels only with the gate)
        copy_labels = self._gates.enabled(POD_TOPOLOGY_LABELS_ADMISSION)
        await self._lifecycle.admit_create("pods", name, namespace)  # pods/binding is a create
        await self._admission.admit_binding(binding)
        # The binding's uid and resourceVersion are storage preconditions, as upstream's
        # BindingREST: a pod deleted and re-created under the same name is never bound to
        # the node chosen for the old one.
        # (In the mutation: on a stale guess from the watch cache they are confirmed on the
        # current pod before a Conflict is returned, as upstream's storage preconditions.)
        uid = binding.metadata.uid
        pinned = binding.metadata.resource_version
        now = self._store.now

        def mutate(obj: Message) -> Message:
            assert isinstance(obj, types_pb2.Pod)
            check_binding_preconditions(obj, uid=uid, resource_version=pinned)
            check_bindable(obj)
            obj.spec.node_name = node
            for k, v in binding.metadata.annotations.items():
                obj.metadata.annotations[k] = v
            if copy_labels:
                for k, v in binding.metadata.labels.items():
                    obj.metadata.labels[k] = v
            if clear_nnn:
                obj.status.nominated_node_name = ""
            set_scheduled(obj, now(), tracking=tracking)
            return obj

        await self._store.guaranteed_update(_POD, namespace, name, mutate)


class ApprovalREST:
    """certificatesigningrequests/approval (issue #57 kinds-a): the conditions sent over the
    stored request (csrApprovalStrategy), validated as an update."""

    def __init__(self, options: StrategyOptions, now: Callable[[], float]) -> None:
        self._options = options
        self._now = now

    def write(self, kind: Kind, current: Message, sent: Message) -> Message:
        assert isinstance(current, types_pb2.CertificateSigningRequest)
        assert isinstance(sent, types_pb2.CertificateSigningRequest)
        result = certificates.prepare_for_approval(sent, current, timestamp(self._now()))
        return _validated(kind, current, result, self._options)

    async def after_write(self, written: Message) -> Message:
        return written
