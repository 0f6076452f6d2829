"""The Node authorizer (`--authorization-mode Node`): upstream's plugin/pkg/auth/authorizer/
node/node_authorizer.go, with its graph (node_graph.py) fed from the apiserver's watch caches
as graph_populator.go feeds it from informers.

It has an opinion only on a kubelet's requests: a user named system:node:<nodeName> in the
group system:nodes (pkg/auth/nodeidentifier; one without a name gets NoOpinion, "unknown node
for user ..."). For such a user:

- secrets, configmaps (get, list, watch of one object), persistentvolumeclaims, persistent
  volumes, resourceclaims (get) and serviceaccounts/token (create): allowed only when the
  object is reachable in the graph from the node (a pod bound to the node references it, or
  the claim of such a pod's volume); otherwise NoOpinion "no relationship found between node
  '<n>' and this object". PVC status: update and patch, reachable alike.
- leases (in kube-node-lease only) and csinodes: get, create, update, patch, delete of the
  object named after the node (a create's name is NodeRestriction's to check).
- resourceslices: create allowed (NodeRestriction checks spec.nodeName); get, update, patch,
  delete when the slice names the node; list, watch, deletecollection with
  AuthorizeNodeWithSelectors only with a `spec.nodeName=<node>` field selector (kemu's
  field label for upstream's `nodeName`), without it any.
- nodes and pods, with AuthorizeNodeWithSelectors (beta, on, from 1.32; GA 1.34): a node reads
  only its own Node (create, update, patch and status writes are allowed and left to
  NodeRestriction); it gets a pod bound to it, lists and watches pods only with the field
  selector `spec.nodeName=<node>`, creates and deletes (mirror) pods, updates pod status and
  creates evictions (all of which NodeRestriction narrows to its own pods). Without the gate
  (before 1.32, or turned off) nodes and pods fall to the static rules below, as upstream.
- everything else: the static node rules (bootstrappolicy.NodeRules(), the system:node
  ClusterRole's rules, given by the caller: apiserver/authorization/bootstrap_policy.py
  owns them); allowed when one matches, otherwise NoOpinion, so that RBAC (next in
  `--authorization-mode Node,RBAC`) decides. Events, services, endpoints, namespaces'
  reads, CSR creation, tokenreviews and subjectaccessreviews, runtimeclasses, the volume
  attachment reads... are left to those rules, NoOpinion when they do not match.

RulesFor: incomplete for a node ("node authorizer does not support user rule resolution"),
nothing for anyone else.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from google.protobuf.message import Message

from apiserver.authorization.authorizer import NO_OPINION, Decision, Rules, Verdict
from apiserver.authorization.node_graph import (
    CONFIGMAP,
    POD,
    PV,
    PVC,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
    SECRET,
    SERVICE_ACCOUNT,
    Graph,
    Vertex,
    claims_key,
)
from apiserver.storage.watch_cache import CacheObserver, WatchCache
from kemu.api.v1 import types_pb2
from kemu.component.version import Version
from kemu.machinery.errors import BadRequest
from kemu.machinery.fields import parse_field_selector
from kemu.machinery.namespaces import NAMESPACE_NODE_LEASE
from kemu.machinery.rbac_rules import Attributes, rule_allows
from kemu.machinery.user import NODE_USER_PREFIX, NODES_GROUP, UserInfo

logger = logging.getLogger(__name__)

NAME: Final = "Node"
ALLOW: Final = Decision(Verdict.ALLOW)
RESOURCE_GROUP: Final = "resource.k8s.io"
STORAGE_GROUP: Final = "storage.k8s.io"
COORDINATION_GROUP: Final = "coordination.k8s.io"
POD_NODE_FIELD: Final = "spec.nodeName"
SLICE_NODE_FIELD: Final = "spec.nodeName"
"""Upstream's resourceslices field label is `spec.nodeName` as well (resource/v1
ResourceSliceSpec's field selector)."""


SELECTORS_DEFAULT_SINCE: Final = Version(1, 32)


def with_selectors_by_default(version: Version) -> bool:
    """The AuthorizeNodeWithSelectors gate's default at an emulated version (alpha, off, in
    1.31; beta, on, from 1.32; GA and locked on from 1.34: pkg/features/kube_features.go).
    kemu's gate table does not hold it; `--authorization-mode Node` passes this to
    NodeAuthorizer's `with_selectors`."""
    return version >= SELECTORS_DEFAULT_SINCE


def node_identity(user: UserInfo) -> tuple[str, bool]:
    """nodeidentifier.NodeIdentity: (nodeName, isNode). A node is a user in system:nodes
    whose name starts with system:node:; its name may be empty (an unidentifiable node)."""
    if not user.name.startswith(NODE_USER_PREFIX) or NODES_GROUP not in user.groups:
        return "", False
    return user.name[len(NODE_USER_PREFIX) :], True


def _no(reason: str) -> Decision:
    return Decision(Verdict.NO_OPINION, reason)


def _no_relationship(node_name: str) -> Decision:
    return _no(f"no relationship found between node '{node_name}' and this object")


class NodeAuthorizer:
    """authorizer.Authorizer and RuleResolver for kubelets (see the module's docstring)."""

    def __init__(
        self,
        graph: Graph,
        node_rules: Sequence[types_pb2.PolicyRule],
        *,
        with_selectors: bool = True,
    ) -> None:
        """`with_selectors`: the AuthorizeNodeWithSelectors gate."""
        self._graph = graph
        self._rules = tuple(node_rules)
        self._with_selectors = with_selectors

    @classmethod
    def from_caches(
        cls,
        caches: Mapping[str, WatchCache],
        node_rules: Sequence[types_pb2.PolicyRule],
        *,
        with_selectors: bool = True,
    ) -> NodeAuthorizer:
        """An authorizer whose graph the apiserver's watch caches of pods, persistent volumes
        and resource slices keep (those it has: a registry of fewer kinds feeds fewer)."""
        graph = Graph()
        NodeGraphPopulator(graph).observe(caches)
        return cls(graph, node_rules, with_selectors=with_selectors)

    # ------------------------------------------------------------ RuleResolver

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        if node_identity(user)[1]:
            return Rules(
                incomplete=True, error="node authorizer does not support user rule resolution"
            )
        return Rules()

    # ------------------------------------------------------------ Authorizer

    def authorize(self, attrs: Attributes) -> Decision:
        node_name, is_node = node_identity(attrs.user)
        if not is_node:
            return NO_OPINION
        if not node_name:
            return _no(f'unknown node for user "{attrs.user.name}"')
        if attrs.is_resource_request:
            decided = self._subdivided(node_name, attrs)
            if decided is not None:
                return decided
        if any(rule_allows(attrs, rule) for rule in self._rules):
            return ALLOW
        return NO_OPINION

    def _subdivided(self, node_name: str, attrs: Attributes) -> Decision | None:
        """The resources whose access the node authorizer subdivides (None: the static
        rules decide)."""
        group, resource = attrs.api_group, attrs.resource
        if group == "":
            if resource == "secrets":
                return self._read_namespaced(node_name, SECRET, attrs)
            if resource == "configmaps":
                return self._read_namespaced(node_name, CONFIGMAP, attrs)
            if resource == "persistentvolumeclaims":
                if attrs.subresource == "status":
                    return self._status_update(node_name, PVC, attrs)
                return self._get(node_name, PVC, attrs)
            if resource == "persistentvolumes":
                return self._get(node_name, PV, attrs)
            if resource == "serviceaccounts":
                return self._create_token(node_name, attrs)
            if resource == "nodes" and self._with_selectors:
                return self._node(node_name, attrs)
            if resource == "pods" and self._with_selectors:
                return self._pod(node_name, attrs)
        elif group == RESOURCE_GROUP:
            if resource == "resourceclaims":
                return self._get(node_name, RESOURCE_CLAIM, attrs)
            if resource == "resourceslices":
                return self._resource_slice(node_name, attrs)
        elif group == COORDINATION_GROUP and resource == "leases":
            return self._lease(node_name, attrs)
        elif group == STORAGE_GROUP and resource == "csinodes":
            return self._csi_node(node_name, attrs)
        return None

    def _reachable(self, node_name: str, vertex_type: str, attrs: Attributes) -> Decision:
        """authorize: a path from the named object to the node."""
        if not attrs.name:
            return _no("No Object name found")
        error = self._graph.path_error(Vertex(vertex_type, attrs.namespace, attrs.name), node_name)
        if error:
            logger.debug("NODE DENY: %s", error)
            return _no_relationship(node_name)
        return ALLOW

    def _status_update(self, node_name: str, vertex_type: str, attrs: Attributes) -> Decision:
        if attrs.verb not in ("update", "patch"):
            return _no("can only get/update/patch this type")
        if attrs.subresource != "status":
            return _no("can only update status subresource")
        return self._reachable(node_name, vertex_type, attrs)

    def _get(self, node_name: str, vertex_type: str, attrs: Attributes) -> Decision:
        if attrs.verb != "get":
            return _no("can only get individual resources of this type")
        if attrs.subresource:
            return _no("cannot get subresource")
        return self._reachable(node_name, vertex_type, attrs)

    def _read_namespaced(self, node_name: str, vertex_type: str, attrs: Attributes) -> Decision:
        if attrs.verb not in ("get", "list", "watch"):
            return _no("can only read resources of this type")
        if attrs.subresource:
            return _no("cannot read subresource")
        if not attrs.namespace:
            return _no("can only read namespaced object of this type")
        return self._reachable(node_name, vertex_type, attrs)

    def _create_token(self, node_name: str, attrs: Attributes) -> Decision:
        if attrs.verb != "create" or not attrs.name:
            return _no("can only create tokens for individual service accounts")
        if attrs.subresource != "token":
            return _no("can only create token subresource of serviceaccount")
        if self._graph.path_error(Vertex(SERVICE_ACCOUNT, attrs.namespace, attrs.name), node_name):
            return _no_relationship(node_name)
        return ALLOW

    def _lease(self, node_name: str, attrs: Attributes) -> Decision:
        if attrs.verb not in ("get", "create", "update", "patch", "delete"):
            return _no("can only get, create, update, patch, or delete a node lease")
        if attrs.namespace != NAMESPACE_NODE_LEASE:
            return _no(f'can only access leases in the "{NAMESPACE_NODE_LEASE}" system namespace')
        # a create's name is not known here: NodeRestriction checks it
        if attrs.verb != "create" and attrs.name != node_name:
            return _no("can only access node lease with the same name as the requesting node")
        return ALLOW

    def _csi_node(self, node_name: str, attrs: Attributes) -> Decision:
        if attrs.verb not in ("get", "create", "update", "patch", "delete"):
            return _no("can only get, create, update, patch, or delete a CSINode")
        if attrs.subresource:
            return _no("cannot authorize CSINode subresources")
        if attrs.verb != "create" and attrs.name != node_name:
            return _no("can only access CSINode with the same name as the requesting node")
        return ALLOW

    def _resource_slice(self, node_name: str, attrs: Attributes) -> Decision:
        if attrs.subresource:
            return _no("cannot authorize ResourceSlice subresources")
        verb = attrs.verb
        if verb == "create":
            return ALLOW  # NodeRestriction checks spec.nodeName
        if verb in ("get", "update", "patch", "delete"):
            return self._reachable(node_name, RESOURCE_SLICE, attrs)
        if verb in ("watch", "list", "deletecollection"):
            if not self._with_selectors:
                return ALLOW
            if _selects(attrs, "resourceslices", SLICE_NODE_FIELD, node_name):
                return ALLOW
            return _no(
                "can only list/watch/deletecollection resourceslices with nodeName field selector"
            )
        return _no(
            "only the following verbs are allowed for a ResourceSlice: get, watch, list, "
            "create, update, patch, delete, deletecollection"
        )

    def _node(self, node_name: str, attrs: Attributes) -> Decision:
        verb = attrs.verb
        if attrs.subresource == "":
            if verb in ("create", "update", "patch"):
                return ALLOW  # NodeRestriction limits a node to its own Node object
            if verb in ("get", "list", "watch"):
                # the name, not the graph: a kubelet reads its Node before creating it
                if attrs.name == node_name:
                    return ALLOW
                if not attrs.name:
                    return _no(
                        f"node '{node_name}' cannot read all nodes, only its own Node object"
                    )
                return _no(
                    f"node '{node_name}' cannot read '{attrs.name}', only its own Node object"
                )
        elif attrs.subresource == "status" and verb in ("update", "patch"):
            return ALLOW  # NodeRestriction limits a node to its own Node's status
        return NO_OPINION

    def _pod(self, node_name: str, attrs: Attributes) -> Decision:
        verb, sub = attrs.verb, attrs.subresource
        if sub == "":
            if verb == "get":
                return self._get(node_name, POD, attrs)
            if verb in ("list", "watch"):
                if _selects(attrs, "pods", POD_NODE_FIELD, node_name):
                    return ALLOW
                if attrs.name:
                    return self._reachable(node_name, POD, attrs)
                return _no("can only list/watch pods with spec.nodeName field selector")
            if verb in ("create", "delete"):
                return ALLOW  # mirror pods; NodeRestriction limits them to the node's own
        elif sub == "status" and verb in ("update", "patch"):
            return ALLOW  # NodeRestriction: only of pods bound to the node
        elif sub == "eviction" and verb == "create":
            return ALLOW  # NodeRestriction: only of pods bound to the node
        return NO_OPINION


def _selects(attrs: Attributes, resource: str, field: str, node_name: str) -> bool:
    """Whether the request's field selector has `field=node_name` (a malformed one selects
    nothing here: the request itself fails on it later)."""
    if not attrs.field_selector:
        return False
    try:
        selector = parse_field_selector(resource, attrs.field_selector)
    except BadRequest:
        return False
    return any(
        r.field == field and r.operator == "=" and r.value == node_name
        for r in selector.requirements
    )


# ---------------------------------------------------------------- graph_populator.go


class NodeGraphPopulator:
    """Keeps a Graph from the watch caches' events (upstream's graphPopulator's handlers)."""

    def __init__(self, graph: Graph) -> None:
        self._graph = graph

    def observe(self, caches: Mapping[str, WatchCache]) -> None:
        observers: dict[str, CacheObserver] = {
            "pods": _Pods(self._graph),
            "persistentvolumes": _PersistentVolumes(self._graph),
            "resourceslices": _ResourceSlices(self._graph),
        }
        for resource, observer in observers.items():
            cache = caches.get(resource)
            if cache is not None:
                cache.observe(observer)


class _Pods:
    def __init__(self, graph: Graph) -> None:
        self._graph = graph
        self._known: set[tuple[str, str]] = set()

    def replaced(self, objects: Iterable[Message]) -> None:
        for namespace, name in self._known:
            self._graph.delete_pod(namespace, name)
        self._known.clear()
        for obj in objects:
            self.changed("ADDED", obj, None)

    def changed(self, event_type: str, obj: Message, prev: Message | None) -> None:
        assert isinstance(obj, types_pb2.Pod)
        meta = obj.metadata
        if event_type == "DELETED":
            self._known.discard((meta.namespace, meta.name))
            self._graph.delete_pod(meta.namespace, meta.name)
            return
        if not obj.spec.node_name:
            return  # upstream waits for the pod to be bound
        if (
            isinstance(prev, types_pb2.Pod)
            and prev.spec.node_name == obj.spec.node_name
            and prev.metadata.uid == meta.uid
            and claims_key(prev) == claims_key(obj)
        ):
            return  # (what the graph holds of a bound pod does not change: updatePod)
        self._known.add((meta.namespace, meta.name))
        self._graph.add_pod(obj)


class _PersistentVolumes:
    def __init__(self, graph: Graph) -> None:
        self._graph = graph
        self._known: set[str] = set()

    def replaced(self, objects: Iterable[Message]) -> None:
        for name in self._known:
            self._graph.delete_pv(name)
        self._known.clear()
        for obj in objects:
            self.changed("ADDED", obj, None)

    def changed(self, event_type: str, obj: Message, prev: Message | None) -> None:
        assert isinstance(obj, types_pb2.PersistentVolume)
        name = obj.metadata.name
        if event_type == "DELETED":
            self._known.discard(name)
            self._graph.delete_pv(name)
            return
        if (
            isinstance(prev, types_pb2.PersistentVolume)
            and prev.spec.claim_ref == obj.spec.claim_ref
        ):
            return
        self._known.add(name)
        self._graph.add_pv(obj)


class _ResourceSlices:
    def __init__(self, graph: Graph) -> None:
        self._graph = graph
        self._known: set[str] = set()

    def replaced(self, objects: Iterable[Message]) -> None:
        for name in self._known:
            self._graph.delete_resource_slice(name)
        self._known.clear()
        for obj in objects:
            self.changed("ADDED", obj, None)

    def changed(self, event_type: str, obj: Message, prev: Message | None) -> None:
        assert isinstance(obj, types_pb2.ResourceSlice)
        name = obj.metadata.name
        if event_type == "DELETED":
            self._known.discard(name)
            self._graph.delete_resource_slice(name)
            return
        if isinstance(prev, types_pb2.ResourceSlice) and prev.spec.node_name == obj.spec.node_name:
            return
        self._known.add(name)
        self._graph.add_resource_slice(name, obj.spec.node_name)
