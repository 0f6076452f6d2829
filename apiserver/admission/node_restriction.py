"""NodeRestriction (`--enable-admission-plugins NodeRestriction`; not in upstream's default-on
set: kubeadm, and so kind, turn it on): upstream's plugin/pkg/admission/noderestriction/
admission.go. It narrows what the Node authorizer lets a kubelet write to what is its own:

- pods: a node creates only mirror pods bound to itself, owned by its own Node (a single
  controller owner reference, no blockOwnerDeletion, the Node's UID) and referencing no
  service account, secret, configmap or claim; deletes only pods bound to itself; updates
  the status of pods bound to itself only, without changing their labels or resource claim
  statuses; evicts only pods bound to itself; any other subresource (binding, resize) is
  refused.
- nodes: only its own Node (create, update, status, delete); it may not change its taints,
  nor set or change labels under node-restriction.kubernetes.io/ or any kubernetes.io/k8s.io
  label the kubelet does not own (k8s.io/kubelet/pkg/apis IsKubeletLabel).
- persistentvolumeclaims: only their status, and of it only capacity, conditions (and with
  RecoverVolumeExpansionFailure the allocated resources).
- leases: only in kube-node-lease, only its own. csinodes: only its own. resourceslices: a
  create or delete only of slices that name the node.

Every refusal is a 403 Forbidden in upstream's words (admission.NewForbidden:
`<resource> "<name>" is forbidden: <why>`). Requests of users that are not nodes pass; a node
user without a name is refused.

Not modelled: serviceaccounts/token (kemu's TokenRequest is served by the REST edge outside the
registry's admission), CSRs, PodCertificateRequests, the node's configSource (kemu's Node has
none), and DeleteCollection (kemu's gRPC Api has none).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Final

from google.protobuf.message import Message

from apiserver.authorization.node import node_identity
from apiserver.authorization.node_graph import pod_configmap_names, pod_secret_names
from kemu.api.v1 import api_pb2, types_pb2
from kemu.machinery.errors import Forbidden, NotFound, Subject
from kemu.machinery.namespaces import NAMESPACE_NODE_LEASE
from kemu.machinery.pod_types import MIRROR_ANNOTATION
from kemu.machinery.user import UserInfo

NAME: Final = "NodeRestriction"

CREATE: Final = "CREATE"
UPDATE: Final = "UPDATE"
DELETE: Final = "DELETE"
"""admission.Operation."""

NODE_RESTRICTION_LABEL_NAMESPACE: Final = "node-restriction.kubernetes.io"
"""v1.LabelNamespaceNodeRestriction: labels only an administrator sets on a node."""

KUBELET_LABELS: Final = frozenset(
    {
        "kubernetes.io/hostname",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "beta.kubernetes.io/instance-type",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "node.kubernetes.io/instance-type",
    }
)
KUBELET_LABEL_NAMESPACES: Final = ("kubelet.kubernetes.io", "node.kubernetes.io")
"""k8s.io/kubelet/pkg/apis well_known_labels.go: the labels (and label namespaces) a kubelet
may set on its own Node."""

PodLookup = Callable[[str, str], Awaitable[types_pb2.Pod | None]]
NodeLookup = Callable[[str], Awaitable[types_pb2.Node | None]]


@dataclass(frozen=True)
class Request:
    """What the plugin reads of admission.Attributes."""

    operation: str
    resource: str
    group: str
    subresource: str
    namespace: str
    name: str
    obj: Message | None = None
    old: Message | None = None


def forbidden(req: Request, why: str) -> Forbidden:
    """admission.NewForbidden: named after the request's resource (its group, not its
    subresource) and name (the object's, on create)."""
    name = req.name
    if not name and req.obj is not None:
        name = req.obj.metadata.name  # type: ignore[attr-defined]
    resource = f"{req.resource}.{req.group}" if req.group else req.resource
    message = (
        f'{resource} "{name}" is forbidden: {why}' if name else f"{resource} is forbidden: {why}"
    )
    return Forbidden(message, subject=Subject(name, req.group, req.resource))


def _label_namespace(key: str) -> str:
    prefix, slash, _ = key.partition("/")
    return prefix if slash else ""


def is_kubelet_label(key: str) -> bool:
    if key in KUBELET_LABELS:
        return True
    ns = _label_namespace(key)
    return any(ns == a or ns.endswith("." + a) for a in KUBELET_LABEL_NAMESPACES)


def _is_kubernetes_label(key: str) -> bool:
    ns = _label_namespace(key)
    return any(ns == d or ns.endswith("." + d) for d in ("kubernetes.io", "k8s.io"))


def modified_labels(new: Mapping[str, str], old: Mapping[str, str]) -> set[str]:
    """getModifiedLabels: the keys added, removed or changed."""
    return {k for k in new.keys() | old.keys() if new.get(k) != old.get(k)}


def forbidden_labels(modified: set[str]) -> list[str]:
    """getForbiddenLabels, sorted as sets.String.List()."""
    out = set()
    for key in modified:
        ns = _label_namespace(key)
        if ns == NODE_RESTRICTION_LABEL_NAMESPACE or ns.endswith(
            "." + NODE_RESTRICTION_LABEL_NAMESPACE
        ):
            out.add(key)
        if _is_kubernetes_label(key) and not is_kubelet_label(key):
            out.add(key)
    return sorted(out)


class NodeRestriction:
    """The plugin; `pods` and `nodes` read the apiserver's caches (upstream's listers)."""

    def __init__(
        self, pods: PodLookup, nodes: NodeLookup, *, expansion_recovery: bool = True
    ) -> None:
        """`expansion_recovery`: the RecoverVolumeExpansionFailure gate (beta on from 1.32)."""
        self._pods = pods
        self._nodes = nodes
        self._expansion_recovery = expansion_recovery

    async def admit(self, req: Request, user: UserInfo | None) -> None:
        """Admit: raises Forbidden (or NotFound, for a pod that is not there) when a node
        oversteps."""
        if user is None:
            return  # the apiserver's own write
        node_name, is_node = node_identity(user)
        if not is_node:
            return
        if not node_name:
            raise forbidden(req, f'could not determine node from user "{user.name}"')
        if req.group == "":
            if req.resource == "pods":
                if req.subresource == "":
                    return await self._pod(node_name, req)
                if req.subresource == "status":
                    return self._pod_status(node_name, req)
                if req.subresource == "eviction":
                    return await self._pod_eviction(node_name, req)
                raise forbidden(
                    req,
                    f"unexpected pod subresource \"{req.subresource}\", only 'status' and "
                    "'eviction' are allowed",
                )
            if req.resource == "nodes":
                return self._node(node_name, req)
            if req.resource == "persistentvolumeclaims":
                if req.subresource == "status":
                    return self._pvc_status(node_name, req)
                raise forbidden(req, "may only update PVC status")
        elif req.group == "coordination.k8s.io" and req.resource == "leases":
            return self._lease(node_name, req)
        elif req.group == "storage.k8s.io" and req.resource == "csinodes":
            return self._csi_node(node_name, req)
        elif req.group == "resource.k8s.io" and req.resource == "resourceslices":
            return self._resource_slice(node_name, req)
        return None

    # ------------------------------------------------------------ pods

    async def _existing_pod(self, req: Request, name: str) -> types_pb2.Pod:
        pod = await self._pods(req.namespace, name)
        if pod is None:
            raise NotFound(f'pods "{name}" not found', subject=Subject(name, "", "pods"))
        return pod

    async def _pod(self, node_name: str, req: Request) -> None:
        if req.operation == CREATE:
            return await self._pod_create(node_name, req)
        if req.operation == DELETE:
            existing = await self._existing_pod(req, req.name)
            if existing.spec.node_name != node_name:
                raise forbidden(
                    req, f'node "{node_name}" can only delete pods with spec.nodeName set to itself'
                )
            return None
        raise forbidden(
            req,
            f'unexpected operation "{req.operation}", node "{node_name}" can only create and '
            "delete mirror pods",
        )

    async def _pod_create(self, node_name: str, req: Request) -> None:
        pod = req.obj
        assert isinstance(pod, types_pb2.Pod)
        n = f'node "{node_name}"'
        if MIRROR_ANNOTATION not in pod.metadata.annotations:
            raise forbidden(
                req,
                f'pod does not have "{MIRROR_ANNOTATION}" annotation, {n} can only create '
                "mirror pods",
            )
        if pod.spec.node_name != node_name:
            raise forbidden(req, f"{n} can only create pods with spec.nodeName set to itself")
        owners = pod.metadata.owner_references
        if len(owners) > 1:
            raise forbidden(
                req, f"{n} can only create pods with a single owner reference set to itself"
            )
        if not owners:
            raise forbidden(req, f"{n} can only create pods with an owner reference set to itself")
        owner = owners[0]
        if owner.api_version != "v1" or owner.kind != "Node" or owner.name != node_name:
            raise forbidden(req, f"{n} can only create pods with an owner reference set to itself")
        if not owner.controller:
            raise forbidden(
                req, f"{n} can only create pods with a controller owner reference set to itself"
            )
        if owner.block_owner_deletion:
            raise forbidden(req, f"{n} must not set blockOwnerDeletion on an owner reference")
        node = await self._nodes(node_name)
        if node is None:
            raise NotFound(
                f'nodes "{node_name}" not found', subject=Subject(node_name, "", "nodes")
            )
        if owner.uid != node.metadata.uid:
            raise forbidden(
                req,
                f"node {node_name} UID mismatch: expected {owner.uid} got {node.metadata.uid}",
            )
        # a node may not create a pod that references other API objects
        if pod.spec.service_account_name:
            raise forbidden(req, f"{n} can not create pods that reference a service account")
        if pod_secret_names(pod):
            raise forbidden(req, f"{n} can not create pods that reference secrets")
        if pod_configmap_names(pod):
            raise forbidden(req, f"{n} can not create pods that reference configmaps")
        if any(v.HasField("persistent_volume_claim") for v in pod.spec.volumes):
            raise forbidden(req, f"{n} can not create pods that reference persistentvolumeclaims")
        return None

    def _pod_status(self, node_name: str, req: Request) -> None:
        if req.operation != UPDATE:
            raise forbidden(req, f'unexpected operation "{req.operation}"')
        old, new = req.old, req.obj
        assert isinstance(old, types_pb2.Pod) and isinstance(new, types_pb2.Pod)
        if old.spec.node_name != node_name:
            raise forbidden(
                req,
                f'node "{node_name}" can only update pod status for pods with spec.nodeName '
                "set to itself",
            )
        if dict(old.metadata.labels) != dict(new.metadata.labels):
            raise forbidden(req, f'node "{node_name}" cannot update labels through pod status')
        if list(old.status.resource_claim_statuses) != list(new.status.resource_claim_statuses):
            raise forbidden(req, f'node "{node_name}" cannot update resource claim statues')
        return None

    async def _pod_eviction(self, node_name: str, req: Request) -> None:
        if req.operation != CREATE:
            raise forbidden(req, f"unexpected operation {req.operation}")
        name = req.name
        if not name:
            if not isinstance(req.obj, api_pb2.Eviction) or not req.obj.metadata.name:
                raise forbidden(req, "could not determine pod from request data")
            name = req.obj.metadata.name
        existing = await self._existing_pod(req, name)
        if existing.spec.node_name != node_name:
            raise forbidden(
                req, f"node {node_name} can only evict pods with spec.nodeName set to itself"
            )
        return None

    # ------------------------------------------------------------ the rest

    def _pvc_status(self, node_name: str, req: Request) -> None:
        if req.operation != UPDATE:
            raise forbidden(req, f'unexpected operation "{req.operation}"')
        old, new = types_pb2.PersistentVolumeClaim(), types_pb2.PersistentVolumeClaim()
        assert isinstance(req.old, types_pb2.PersistentVolumeClaim)
        assert isinstance(req.obj, types_pb2.PersistentVolumeClaim)
        old.CopyFrom(req.old)
        new.CopyFrom(req.obj)
        for pvc in (old, new):
            pvc.metadata.resource_version = ""
            del pvc.metadata.managed_fields[:]
            pvc.status.capacity.clear()
            del pvc.status.conditions[:]
            if self._expansion_recovery:
                pvc.status.allocated_resources.clear()
        if old != new:
            raise forbidden(
                req,
                f'node "{node_name}" is not allowed to update fields other than '
                "status.capacity and status.conditions",
            )
        return None

    def _node(self, node_name: str, req: Request) -> None:
        requested = req.name
        if not requested and req.obj is not None:
            requested = req.obj.metadata.name  # type: ignore[attr-defined]
        if requested != node_name:
            raise forbidden(req, f'node "{node_name}" is not allowed to modify node "{requested}"')
        if req.operation == CREATE:
            node = req.obj
            assert isinstance(node, types_pb2.Node)
            if bad := forbidden_labels(modified_labels(node.metadata.labels, {})):
                raise forbidden(
                    req,
                    f'node "{node_name}" is not allowed to set the following labels: '
                    + ", ".join(bad),
                )
        elif req.operation == UPDATE:
            node, old = req.obj, req.old
            assert isinstance(node, types_pb2.Node) and isinstance(old, types_pb2.Node)
            if list(node.spec.taints) != list(old.spec.taints):
                raise forbidden(req, f'node "{node_name}" is not allowed to modify taints')
            modified = modified_labels(node.metadata.labels, old.metadata.labels)
            if bad := forbidden_labels(modified):
                raise forbidden(req, "is not allowed to modify labels: " + ", ".join(bad))
        return None

    def _lease(self, node_name: str, req: Request) -> None:
        if req.namespace != NAMESPACE_NODE_LEASE:
            raise forbidden(
                req, f'can only access leases in the "{NAMESPACE_NODE_LEASE}" system namespace'
            )
        name = req.name
        if req.operation == CREATE and req.obj is not None:
            name = req.obj.metadata.name  # type: ignore[attr-defined]
        if name != node_name:
            raise forbidden(
                req, "can only access node lease with the same name as the requesting node"
            )
        return None

    def _csi_node(self, node_name: str, req: Request) -> None:
        name = req.name
        if req.operation == CREATE and req.obj is not None:
            name = req.obj.metadata.name  # type: ignore[attr-defined]
        if name != node_name:
            raise forbidden(
                req, "can only access CSINode with the same name as the requesting node"
            )
        return None

    def _resource_slice(self, node_name: str, req: Request) -> None:
        if req.operation == CREATE:
            obj = req.obj
            assert isinstance(obj, types_pb2.ResourceSlice)
            if obj.spec.node_name != node_name:
                raise forbidden(
                    req,
                    "can only create ResourceSlice with the same NodeName as the requesting node",
                )
        elif req.operation == DELETE:
            old = req.old
            if isinstance(old, types_pb2.ResourceSlice) and old.spec.node_name != node_name:
                raise forbidden(
                    req,
                    "can only delete ResourceSlice with the same NodeName as the requesting node",
                )
        return None
