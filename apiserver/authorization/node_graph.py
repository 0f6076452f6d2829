"""The Node authorizer's graph (upstream's plugin/pkg/auth/authorizer/node/graph.go): which
objects a node may read because a pod bound to it references them, kept up to date from the
apiserver's watch caches (graph_populator.go: `NodeGraphPopulator`), never recomputed per
request.

Vertices are (type, namespace, name); an edge points from a referenced object towards the node
that needs it:

    pod -> node                   (the pod is bound to the node)
    secret | configmap | pvc | serviceaccount | resourceclaim -> pod   (the pod references it)
    pv -> pvc                     (the volume's claimRef: not tied to one node)
    resourceslice -> node         (the slice's spec.nodeName)

An edge into a pod or a node is a *destination edge*: it carries the node it leads to, and
each vertex counts its destination edges per node (upstream's destinationEdgeIndex, which it
keeps only for vertices of many edges; here for all: a Counter per vertex). "Is object X
reachable from node N" is then a count lookup for a secret, configmap, claim or service
account, and a walk over the few plain edges (pv -> pvc) for a volume: a secret that 10,000
pods reference answers in O(1), not in the number of its pods.

A vertex exists while it has an edge: deleting a pod removes its edges, and any neighbour left
without edges goes too (deleteVertexLocked), so a node none of whose pods remains has no
vertex and reaches nothing.

Not modelled (kemu has no such kinds or fields): VolumeAttachments, PodCertificateRequests, the
node's configSource configmap, ephemeral volumes' claims, CSI and PV secret references
(pvutil.VisitPVSecretNames: kemu's PV sources carry none).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Final, NamedTuple

from kemu.api.v1 import types_pb2
from kemu.machinery.pod_types import is_mirror_pod

NODE: Final = "node"
POD: Final = "pod"
SECRET: Final = "secret"
CONFIGMAP: Final = "configmap"
PVC: Final = "pvc"
PV: Final = "pv"
SERVICE_ACCOUNT: Final = "serviceAccount"
RESOURCE_CLAIM: Final = "resourceclaim"
RESOURCE_SLICE: Final = "resourceslice"
"""Vertex types, named as upstream's vertexTypes (its error messages print them)."""


class Vertex(NamedTuple):
    type: str
    namespace: str
    name: str


def _node(name: str) -> Vertex:
    return Vertex(NODE, "", name)


class Graph:
    """The vertices and edges; every method is synchronous and runs on the apiserver's event
    loop, so no lock is needed (upstream's RWMutex guards informer goroutines)."""

    def __init__(self) -> None:
        self._dest_out: dict[Vertex, dict[Vertex, str]] = {}
        """from -> {to: the node the edge leads to} (edges into pods and nodes)"""
        self._dest_count: dict[Vertex, Counter[str]] = {}
        """from -> how many of its destination edges lead to each node"""
        self._plain_out: dict[Vertex, set[Vertex]] = {}
        """from -> to, edges that lead to no node of their own (pv -> pvc)"""
        self._in: dict[Vertex, set[Vertex]] = {}

    # ------------------------------------------------------------ queries

    def has(self, v: Vertex) -> bool:
        return v in self._in or v in self._dest_out or v in self._plain_out

    def __len__(self) -> int:
        """How many vertices."""
        return len(self._in.keys() | self._dest_out.keys() | self._plain_out.keys())

    def reaches(self, start: Vertex, node_name: str) -> bool:
        """Whether a path leads from `start` to the node (hasPathFrom without its errors)."""
        return self.path_error(start, node_name) == ""

    def path_error(self, start: Vertex, node_name: str) -> str:
        """ "" when a path leads from `start` to the node, else why not (hasPathFrom's error
        text, which upstream logs)."""
        if not self.has(_node(node_name)):
            return (
                f"unknown node '{node_name}' cannot get {start.type} {start.namespace}/{start.name}"
            )
        if not self.has(start):
            return (
                f"node '{node_name}' cannot get unknown {start.type} {start.namespace}/{start.name}"
            )
        # Destination edges that lead elsewhere are never followed (upstream's EdgeFilter);
        # those that lead to this node are counted; so only plain edges are walked.
        seen = {start}
        stack = [start]
        while stack:
            v = stack.pop()
            counts = self._dest_count.get(v)
            if counts is not None and counts[node_name]:
                return ""
            for to in self._plain_out.get(v, ()):
                if to not in seen:
                    seen.add(to)
                    stack.append(to)
        return (
            f"node '{node_name}' cannot get {start.type} {start.namespace}/{start.name}, no "
            "relationship to this object was found in the node authorizer graph"
        )

    # ------------------------------------------------------------ edges

    def _add_edge(self, frm: Vertex, to: Vertex, destination: str | None) -> None:
        """addEdgeLocked: a destination edge when `destination` names a node."""
        if destination is None:
            self._plain_out.setdefault(frm, set()).add(to)
        else:
            out = self._dest_out.setdefault(frm, {})
            old = out.get(to)
            if old == destination:
                return
            counts = self._dest_count.setdefault(frm, Counter())
            if old is not None:
                self._uncount(frm, counts, old)
            out[to] = destination
            counts[destination] += 1
        self._in.setdefault(to, set()).add(frm)

    def _uncount(self, frm: Vertex, counts: Counter[str], destination: str) -> None:
        counts[destination] -= 1
        if counts[destination] <= 0:
            del counts[destination]
        if not counts:
            del self._dest_count[frm]

    def _remove_edge(self, frm: Vertex, to: Vertex) -> None:
        out = self._dest_out.get(frm)
        if out is not None and to in out:
            self._uncount(frm, self._dest_count[frm], out.pop(to))
            if not out:
                del self._dest_out[frm]
        plain = self._plain_out.get(frm)
        if plain is not None:
            plain.discard(to)
            if not plain:
                del self._plain_out[frm]
        into = self._in.get(to)
        if into is not None:
            into.discard(frm)
            if not into:
                del self._in[to]

    def _neighbours_out(self, v: Vertex) -> Iterator[Vertex]:
        yield from self._dest_out.get(v, {})
        yield from self._plain_out.get(v, ())

    def delete_vertex(self, v: Vertex) -> None:
        """deleteVertexLocked: `v`'s edges go, and so does each neighbour left without any."""
        for to in list(self._neighbours_out(v)):
            self._remove_edge(v, to)
        for frm in list(self._in.get(v, ())):
            self._remove_edge(frm, v)
        # (a neighbour left without edges has no entry any more: has() is False by itself)

    # ------------------------------------------------------------ objects

    def add_pod(self, pod: types_pb2.Pod) -> None:
        """AddPod, for a pod bound to a node: pod -> node and what the pod references ->
        pod. A mirror pod gets only its pod -> node edge: a node must never grant itself
        access to other objects by creating a pod."""
        meta = pod.metadata
        node_name = pod.spec.node_name
        pod_v = Vertex(POD, meta.namespace, meta.name)
        self.delete_vertex(pod_v)
        self._add_edge(pod_v, _node(node_name), node_name)
        if is_mirror_pod(pod):
            return
        ns = meta.namespace
        if pod.spec.service_account_name:
            self._add_edge(
                Vertex(SERVICE_ACCOUNT, ns, pod.spec.service_account_name), pod_v, node_name
            )
        for name in pod_secret_names(pod):
            self._add_edge(Vertex(SECRET, ns, name), pod_v, node_name)
        for name in pod_configmap_names(pod):
            self._add_edge(Vertex(CONFIGMAP, ns, name), pod_v, node_name)
        for volume in pod.spec.volumes:
            if (
                volume.HasField("persistent_volume_claim")
                and volume.persistent_volume_claim.claim_name
            ):
                claim = volume.persistent_volume_claim.claim_name
                self._add_edge(Vertex(PVC, ns, claim), pod_v, node_name)
        for name in pod_resource_claim_names(pod):
            self._add_edge(Vertex(RESOURCE_CLAIM, ns, name), pod_v, node_name)

    def delete_pod(self, namespace: str, name: str) -> None:
        self.delete_vertex(Vertex(POD, namespace, name))

    def add_pv(self, pv: types_pb2.PersistentVolume) -> None:
        """AddPV: pv -> pvc of its claimRef (an edge that names no node: the claim's pods
        say which)."""
        pv_v = Vertex(PV, "", pv.metadata.name)
        self.delete_vertex(pv_v)
        ref = pv.spec.claim_ref
        if pv.spec.HasField("claim_ref") and ref.name:
            self._add_edge(pv_v, Vertex(PVC, ref.namespace, ref.name), None)

    def delete_pv(self, name: str) -> None:
        self.delete_vertex(Vertex(PV, "", name))

    def add_resource_slice(self, name: str, node_name: str) -> None:
        """AddResourceSlice: slice -> node when the slice names a node."""
        slice_v = Vertex(RESOURCE_SLICE, "", name)
        self.delete_vertex(slice_v)
        if node_name:
            self._add_edge(slice_v, _node(node_name), node_name)

    def delete_resource_slice(self, name: str) -> None:
        self.delete_vertex(Vertex(RESOURCE_SLICE, "", name))


# ---------------------------------------------------------------- what a pod references


def _containers(pod: types_pb2.Pod) -> Iterable[types_pb2.Container]:
    """podutil.AllContainers, of the kinds kemu's PodSpec has (no ephemeral containers)."""
    yield from pod.spec.init_containers
    yield from pod.spec.containers


def pod_secret_names(pod: types_pb2.Pod) -> set[str]:
    """podutil.VisitPodSecretNames over kemu's fields: image pull secrets, env and envFrom
    references, secret volumes and projected secrets."""
    names = {ref.name for ref in pod.spec.image_pull_secrets if ref.name}
    for c in _containers(pod):
        names.update(e.secret_ref.name for e in c.env_from if e.secret_ref.name)
        names.update(
            e.value_from.secret_key_ref.name for e in c.env if e.value_from.secret_key_ref.name
        )
    for v in pod.spec.volumes:
        if v.secret.secret_name:
            names.add(v.secret.secret_name)
        names.update(s.secret.name for s in v.projected.sources if s.secret.name)
    return names


def pod_configmap_names(pod: types_pb2.Pod) -> set[str]:
    """podutil.VisitPodConfigmapNames: env and envFrom references, configMap volumes and
    projected configMaps."""
    names: set[str] = set()
    for c in _containers(pod):
        names.update(e.config_map_ref.name for e in c.env_from if e.config_map_ref.name)
        names.update(
            e.value_from.config_map_key_ref.name
            for e in c.env
            if e.value_from.config_map_key_ref.name
        )
    for v in pod.spec.volumes:
        if v.config_map.name:
            names.add(v.config_map.name)
        names.update(s.config_map.name for s in v.projected.sources if s.config_map.name)
    return names


def pod_resource_claim_names(pod: types_pb2.Pod) -> list[str]:
    """resourceclaim.Name for each of the pod's claims: its resourceClaimName, or for a
    template the claim status.resourceClaimStatuses names (none yet: no edge; a status entry
    without a name: none needed); and the extended resources' claim
    (status.extendedResourceClaimStatus)."""
    generated = {
        s.name: s.resource_claim_name
        for s in pod.status.resource_claim_statuses
        if s.HasField("resource_claim_name")
    }
    names = []
    for claim in pod.spec.resource_claims:
        if claim.HasField("resource_claim_name"):
            names.append(claim.resource_claim_name)
        elif claim.name in generated:
            names.append(generated[claim.name])
    extended = pod.status.extended_resource_claim_status.resource_claim_name
    if extended:
        names.append(extended)
    return names


def claims_key(pod: types_pb2.Pod) -> tuple[tuple[str, str | None], ...]:
    """What of a pod's status changes its edges: its claim statuses and extended claim."""
    return (
        *(
            (s.name, s.resource_claim_name if s.HasField("resource_claim_name") else None)
            for s in pod.status.resource_claim_statuses
        ),
        ("", pod.status.extended_resource_claim_status.resource_claim_name),
    )
