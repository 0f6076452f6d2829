"""VolumeBinding's binder (upstream volumebinding/binder.go and assume_cache.go): which claims a
pod has, which volumes would serve them on a node, what to assume and what to write.

- `pod_volume_claims` (GetPodVolumeClaims): bound claims (volumeName set and the PV
  controller's bind-completed annotation), claims to bind (unbound, class WaitForFirstConsumer)
  and unbound immediate claims.
- `find_pod_volumes` (FindPodVolumes) on one node: a bound claim's volume must exist and reach
  the node; a claim to bind gets the smallest static volume of its class that is Available,
  unclaimed (or pre-bound to it), large enough, with the claim's access modes and volume mode,
  matching its selector and reaching the node; else it is provisioned if its class has a
  provisioner, its allowedTopologies match the node and no other node was selected for it.
- `AssumeCache`: an informer's objects with the scheduler's assumptions laid over them (a PV's
  claimRef, a claim's selected-node annotation) until the informer shows a newer version.
- `checkBindings` is `bindings_done`: the claims are fully bound, the volumes still theirs, the
  selected node still this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Generic, TypeVar

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Invalid
from kemu.machinery.storage import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    claim_class,
)
from kemu.scheduling.interface import ObjectLister
from kemu.scheduling.plugins.volumes import (
    VolumeListers,
    is_delay_binding,
    is_fully_bound,
    storage_request,
)
from kemu.scheduling.pv_helpers import (
    check_node_affinity,
    find_matching_volume,
    is_volume_bound_to_claim,
)

ERR_REASON_BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT: Final = "node(s) had volume node affinity conflict"
ERR_REASON_PV_NOT_EXIST: Final = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)
ERR_REASON_UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"


M = TypeVar("M", bound=Message)


def _rv(obj: Message) -> int:
    text: str = getattr(obj, "metadata").resource_version  # noqa: B009
    return int(text) if text.isdigit() else 0


class AssumeCache(Generic[M]):
    """An informer's lister with assumed versions laid over it (upstream AssumeCache): an
    assumed object is returned until the informer holds a newer version (or the same one, when
    the assumption came from the API's answer); an object the informer no longer has takes
    its assumption with it."""

    def __init__(self, lister: ObjectLister[M]) -> None:
        self.lister = lister
        # key -> (assumed object, from the API's answer)
        self._assumed: dict[tuple[str, str], tuple[M, bool]] = {}

    def get(self, name: str, namespace: str = "") -> M | None:
        current = self.lister.get(name, namespace)
        entry = self._assumed.get((namespace, name))
        if entry is None:
            return current
        assumed, from_api = entry
        if current is None:  # deleted: the assumption goes with it
            del self._assumed[(namespace, name)]
            return None
        a, c = _rv(assumed), _rv(current)
        if c > a or (c == a and from_api):
            del self._assumed[(namespace, name)]
            return current
        return assumed

    def list(self) -> list[M]:
        out: list[M] = []
        for obj in self.lister.list():
            meta = getattr(obj, "metadata")  # noqa: B009
            got = self.get(meta.name, meta.namespace)
            if got is not None:
                out.append(got)
        return out

    def assume(self, obj: M, *, from_api: bool = False) -> None:
        meta = getattr(obj, "metadata")  # noqa: B009
        self._assumed[(meta.namespace, meta.name)] = (obj, from_api)

    def restore(self, name: str, namespace: str = "") -> None:
        """Drops the assumption: the informer's version again."""
        self._assumed.pop((namespace, name), None)

    def assumed_count(self) -> int:
        return len(self._assumed)

    def prune(self) -> None:
        """Drops the assumptions the informer has caught up with or whose object is gone."""
        for namespace, name in list(self._assumed):
            self.get(name, namespace)


@dataclass(frozen=True, slots=True)
class PodVolumeClaims:
    bound: tuple[types_pb2.PersistentVolumeClaim, ...] = ()
    to_bind: tuple[types_pb2.PersistentVolumeClaim, ...] = ()
    unbound_immediate: tuple[types_pb2.PersistentVolumeClaim, ...] = ()
    # The volumes of each class of `to_bind`, read once per cycle (upstream's
    # unboundVolumesDelayBinding): Filter looks only at these on each node.
    volumes_by_class: Mapping[str, tuple[types_pb2.PersistentVolume, ...]] = field(
        default_factory=dict
    )


@dataclass(slots=True)
class PodVolumes:
    """What a node needs done for the pod: static volumes to bind (the PV with its claimRef
    set, the claim) and claims to provision (with the selected-node annotation)."""

    static_bindings: list[tuple[types_pb2.PersistentVolume, types_pb2.PersistentVolumeClaim]] = (
        field(default_factory=list)
    )
    dynamic_provisions: list[types_pb2.PersistentVolumeClaim] = field(default_factory=list)

    def empty(self) -> bool:
        return not self.static_bindings and not self.dynamic_provisions


class Binder:
    """The scheduler's side of volume binding, over the listers' objects and its assumptions."""

    def __init__(self, listers: VolumeListers) -> None:
        self.listers = listers
        self.claims: AssumeCache[types_pb2.PersistentVolumeClaim] = AssumeCache(listers.claims)
        self.volumes: AssumeCache[types_pb2.PersistentVolume] = AssumeCache(listers.volumes)

    def pod_volume_claims(self, pod: types_pb2.Pod, names: list[str]) -> PodVolumeClaims:
        """Every claim must exist (checked by the caller)."""
        if self.claims.assumed_count():
            self.claims.prune()
        if self.volumes.assumed_count():
            self.volumes.prune()
        bound: list[types_pb2.PersistentVolumeClaim] = []
        to_bind: list[types_pb2.PersistentVolumeClaim] = []
        immediate: list[types_pb2.PersistentVolumeClaim] = []
        ns = pod.metadata.namespace
        for name in names:
            claim = self.claims.get(name, ns)
            if claim is None:
                continue
            if is_fully_bound(claim):
                bound.append(claim)
            elif is_delay_binding(claim, self.listers.classes) and not claim.spec.volume_name:
                to_bind.append(claim)
            else:
                immediate.append(claim)
        by_class: dict[str, list[types_pb2.PersistentVolume]] = {}
        if to_bind:
            wanted = {claim_class(c) for c in to_bind}
            by_class = {k: [] for k in wanted}
            for pv in self.volumes.list():
                if pv.spec.storage_class_name in wanted:
                    by_class[pv.spec.storage_class_name].append(pv)
        return PodVolumeClaims(
            tuple(bound),
            tuple(to_bind),
            tuple(immediate),
            {k: tuple(v) for k, v in by_class.items()},
        )

    def find_pod_volumes(
        self, claims: PodVolumeClaims, node: types_pb2.Node
    ) -> tuple[PodVolumes, list[str]]:
        """The work the node needs and the reasons it cannot serve the pod (empty: it can)."""
        reasons: list[str] = []
        volumes = PodVolumes()
        found, satisfied = True, True
        for claim in claims.bound:
            pv = self.volumes.get(claim.spec.volume_name)
            if pv is None:
                found = False
                break
            if not check_node_affinity(pv, node):
                satisfied = False
        if not found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        elif not satisfied:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if claims.to_bind and not self._find_unbound(claims, node, volumes):
            reasons.append(ERR_REASON_BIND_CONFLICT)
        return volumes, reasons

    def _find_unbound(self, claims: PodVolumeClaims, node: types_pb2.Node, out: PodVolumes) -> bool:
        """FindPodVolumes' unbound half (binder.go): a claim whose provisioning already chose a
        node (the selected-node annotation) is looked at first: any other node is refused at
        once, and on that node the claim goes on to provisioning without a look at the static
        volumes; the other claims, smallest request first (byPVCSize), take a matching volume
        each, and those left over are provisioned too."""
        node_name = node.metadata.name
        to_provision: list[types_pb2.PersistentVolumeClaim] = []
        to_match: list[types_pb2.PersistentVolumeClaim] = []
        for claim in claims.to_bind:
            selected = claim.metadata.annotations.get(ANN_SELECTED_NODE)
            if selected is None:
                to_match.append(claim)
            elif selected != node_name:
                return False
            else:
                to_provision.append(claim)
        chosen: set[str] = set()
        for claim in sorted(to_match, key=storage_request):
            candidates = claims.volumes_by_class.get(claim_class(claim), ())
            try:
                pv = find_matching_volume(claim, candidates, node=node, excluded=frozenset(chosen))
            except Invalid:  # a claim selector that does not parse matches nothing
                pv = None
            if pv is None:
                to_provision.append(claim)
                continue
            chosen.add(pv.metadata.name)
            out.static_bindings.append((_with_claim_ref(pv, claim), claim))
        return self._check_provisions(to_provision, node, out)

    def _check_provisions(
        self,
        to_provision: list[types_pb2.PersistentVolumeClaim],
        node: types_pb2.Node,
        out: PodVolumes,
    ) -> bool:
        """checkVolumeProvisions: each claim's class must provision, on this node's topology."""
        node_name = node.metadata.name
        for claim in to_provision:
            sc = self.listers.classes.get(claim_class(claim))
            if sc is None or sc.provisioner == NOT_SUPPORTED_PROVISIONER:
                return False
            if sc.allowed_topologies and not _topology_allows(sc, node):
                return False
            provisioned = types_pb2.PersistentVolumeClaim()
            provisioned.CopyFrom(claim)
            provisioned.metadata.annotations[ANN_SELECTED_NODE] = node_name
            out.dynamic_provisions.append(provisioned)
        return True

    def assume(self, volumes: PodVolumes) -> None:
        """AssumePodVolumes: the PVs' claimRefs and the claims' selected node, in memory."""
        for pv, _ in volumes.static_bindings:
            self.volumes.assume(pv)
        for claim in volumes.dynamic_provisions:
            self.claims.assume(claim)

    def revert(self, volumes: PodVolumes) -> None:
        """RevertAssumedPodVolumes."""
        for pv, _ in volumes.static_bindings:
            self.volumes.restore(pv.metadata.name)
        for claim in volumes.dynamic_provisions:
            self.claims.restore(claim.metadata.name, claim.metadata.namespace)

    def bindings_done(
        self, volumes: PodVolumes, node: types_pb2.Node | None, node_name: str
    ) -> bool:
        """checkBindings: True when every claim is fully bound; False while waiting;
        BindingFailed when the binding went wrong (a claimRef reset, the selected node reset
        or changed by a failed provisioning, a volume that does not reach the node)."""
        for pv_assumed, claim in volumes.static_bindings:
            pv = self.volumes.get(pv_assumed.metadata.name)
            if pv is None:
                raise BindingFailed(
                    f'failed to check binding: pv "{pv_assumed.metadata.name}" not found'
                )
            if _rv(pv_assumed) > _rv(pv):
                return False
            if node is not None and not check_node_affinity(pv, node):
                raise BindingFailed(
                    f'pv "{pv.metadata.name}" node affinity doesn\'t match node "{node_name}"'
                )
            if not pv.spec.HasField("claim_ref") or not pv.spec.claim_ref.uid:
                raise BindingFailed(f'ClaimRef got reset for pv "{pv.metadata.name}"')
            current = self.claims.get(claim.metadata.name, claim.metadata.namespace)
            if current is None or not is_fully_bound(current):
                return False
        for wanted in volumes.dynamic_provisions:
            current = self.claims.get(wanted.metadata.name, wanted.metadata.namespace)
            if current is None:
                raise BindingFailed(
                    f'failed to check provisioning pvc: persistentvolumeclaim "{wanted.metadata.name}" not found'
                )
            if _rv(wanted) > _rv(current):
                return False
            selected = current.metadata.annotations.get(ANN_SELECTED_NODE)
            if selected is None:
                raise BindingFailed(
                    f'selectedNode annotation reset for PVC "{current.metadata.name}"'
                )
            if selected != node_name:
                raise BindingFailed(f'provisioning failed for PVC "{current.metadata.name}"')
            if current.spec.volume_name:
                pv = self.volumes.get(current.spec.volume_name)
                if pv is None:
                    return False  # not seen yet
                if node is not None and not check_node_affinity(pv, node):
                    raise BindingFailed(
                        f'pv "{pv.metadata.name}" node affinity doesn\'t match node "{node_name}"'
                    )
            if not is_fully_bound(current):
                return False
        return True


class BindingFailed(Exception):
    """The binding of the pod's volumes failed: the pod is to be scheduled again."""


def _with_claim_ref(
    pv: types_pb2.PersistentVolume, claim: types_pb2.PersistentVolumeClaim
) -> types_pb2.PersistentVolume:
    """The PV bound to the claim, as the PV controller's GetBindVolumeToClaim makes it."""
    out = types_pb2.PersistentVolume()
    out.CopyFrom(pv)
    if not is_volume_bound_to_claim(pv, claim) or not pv.spec.claim_ref.uid:
        ref = out.spec.claim_ref
        ref.Clear()
        ref.kind = "PersistentVolumeClaim"
        ref.api_version = "v1"
        ref.namespace = claim.metadata.namespace
        ref.name = claim.metadata.name
        ref.uid = claim.metadata.uid
        ref.resource_version = claim.metadata.resource_version
        out.metadata.annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
    return out


def _topology_allows(sc: types_pb2.StorageClass, node: types_pb2.Node) -> bool:
    """Some allowedTopologies term matches the node's labels (every requirement's key has one
    of its values)."""
    labels = node.metadata.labels
    for term in sc.allowed_topologies:
        if all(labels.get(req.key) in set(req.values) for req in term.match_label_expressions):
            return True
    return False
