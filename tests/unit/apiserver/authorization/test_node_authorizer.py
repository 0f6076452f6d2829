"""The Node authorizer and its graph (issue #60 item 3): upstream's plugin/pkg/auth/authorizer/
node/node_authorizer_test.go and graph_test.go, on kemu's kinds."""

from __future__ import annotations

import pytest

from apiserver.authorization.authorizer import Verdict
from apiserver.authorization.node import (
    NodeAuthorizer,
    NodeGraphPopulator,
    node_identity,
    with_selectors_by_default,
)
from apiserver.authorization.node_graph import PVC, SECRET, Graph, Vertex
from kemu.api.v1 import types_pb2
from kemu.component.version import Version
from kemu.machinery.pod_types import MIRROR_ANNOTATION
from kemu.machinery.rbac_rules import Attributes, authorize
from kemu.machinery.user import UserInfo, node_user
from kemu.testing.builders import make_pod

EVENTS_RULE = types_pb2.PolicyRule(verbs=["create", "update", "patch"], resources=["events"])
EVENTS_RULE.api_groups.append("")
NODE_RULES = [EVENTS_RULE]
"""A stand-in for bootstrappolicy.NodeRules(): one of its rules (events)."""


def pod_on(
    name: str,
    node: str,
    *,
    secret: str = "",
    configmap: str = "",
    claim: str = "",
    sa: str = "",
    namespace: str = "ns",
) -> types_pb2.Pod:
    pod = make_pod(name).namespace(namespace).obj()
    pod.metadata.uid = f"uid-{name}"
    pod.spec.node_name = node
    if secret:
        pod.spec.volumes.add(name="s").secret.secret_name = secret
    if configmap:
        env = pod.spec.containers[0].env.add(name="E")
        env.value_from.config_map_key_ref.name = configmap
        env.value_from.config_map_key_ref.key = "k"
    if claim:
        pod.spec.volumes.add(name="v").persistent_volume_claim.claim_name = claim
    if sa:
        pod.spec.service_account_name = sa
    return pod


def get(user: UserInfo, resource: str, name: str, namespace: str = "ns", **kw: str) -> Attributes:
    return Attributes(user, kw.pop("verb", "get"), resource, namespace=namespace, name=name, **kw)


@pytest.fixture
def graph() -> Graph:
    return Graph()


def authorizer(graph: Graph, *, with_selectors: bool = True) -> NodeAuthorizer:
    return NodeAuthorizer(graph, NODE_RULES, with_selectors=with_selectors)


def test_only_named_users_in_system_nodes_are_nodes() -> None:
    assert node_identity(node_user("n1")) == ("n1", True)
    assert node_identity(UserInfo("system:node:n1")) == ("", False)  # not in the group
    assert node_identity(UserInfo("alice", ("system:nodes",))) == ("", False)
    assert node_identity(UserInfo("system:node:", ("system:nodes",))) == ("", True)


def test_no_opinion_for_users_that_are_not_nodes_and_for_nameless_nodes(graph: Graph) -> None:
    a = authorizer(graph)
    graph.add_pod(pod_on("p", "n1", secret="s"))
    alice = UserInfo("alice", ("system:authenticated",))
    assert a.authorize(get(alice, "secrets", "s")).verdict is Verdict.NO_OPINION
    nameless = a.authorize(get(UserInfo("system:node:", ("system:nodes",)), "secrets", "s"))
    assert nameless.verdict is Verdict.NO_OPINION
    assert nameless.reason == 'unknown node for user "system:node:"'
    assert a.rules_for(alice, "ns").incomplete is False
    rules = a.rules_for(node_user("n1"), "ns")
    assert (
        rules.incomplete and rules.error == "node authorizer does not support user rule resolution"
    )


def test_a_node_gets_a_secret_only_while_a_pod_bound_to_it_references_it(graph: Graph) -> None:
    a = authorizer(graph)
    n1, n2 = node_user("n1"), node_user("n2")
    # no pod yet: n1 is unknown to the graph
    assert a.authorize(get(n1, "secrets", "s")).verdict is Verdict.NO_OPINION
    graph.add_pod(pod_on("p", "n1", secret="s", configmap="cm", sa="sa"))
    assert a.authorize(get(n1, "secrets", "s")).allowed
    assert a.authorize(get(n1, "secrets", "s", verb="list")).allowed
    assert a.authorize(get(n1, "configmaps", "cm")).allowed
    denied = a.authorize(get(n2, "secrets", "s"))
    assert denied.verdict is Verdict.NO_OPINION
    assert denied.reason == "no relationship found between node 'n2' and this object"
    graph.add_pod(pod_on("q", "n2", secret="other"))
    assert not a.authorize(get(n2, "secrets", "s")).allowed
    assert not a.authorize(get(n1, "secrets", "s", namespace="elsewhere")).allowed
    # read verbs only, no subresources, namespaced
    assert a.authorize(get(n1, "secrets", "s", verb="update")).reason == (
        "can only read resources of this type"
    )
    assert not a.authorize(get(n1, "secrets", "s", namespace="")).allowed
    # the token of the pod's service account
    token = Attributes(n1, "create", "serviceaccounts", "", "token", "ns", "sa")
    assert a.authorize(token).allowed
    assert not a.authorize(
        Attributes(n2, "create", "serviceaccounts", "", "token", "ns", "sa")
    ).allowed
    graph.delete_pod("ns", "p")
    assert not a.authorize(get(n1, "secrets", "s")).allowed
    assert not graph.has(Vertex(SECRET, "ns", "s"))  # its last edge went with the pod


def test_a_secret_of_many_pods_is_reachable_from_each_of_their_nodes(graph: Graph) -> None:
    a = authorizer(graph)
    for i in range(50):
        graph.add_pod(pod_on(f"p{i}", f"n{i % 5}", secret="shared"))
    for i in range(5):
        assert a.authorize(get(node_user(f"n{i}"), "secrets", "shared")).allowed
    for i in range(50):
        if i % 5 == 0:
            graph.delete_pod("ns", f"p{i}")
    assert not a.authorize(get(node_user("n0"), "secrets", "shared")).allowed
    assert a.authorize(get(node_user("n1"), "secrets", "shared")).allowed


def test_a_volume_is_reachable_through_its_claim_and_a_mirror_pod_grants_nothing(
    graph: Graph,
) -> None:
    a = authorizer(graph)
    pv = types_pb2.PersistentVolume()
    pv.metadata.name = "pv1"
    pv.spec.claim_ref.namespace = "ns"
    pv.spec.claim_ref.name = "data"
    graph.add_pv(pv)
    n1 = node_user("n1")
    assert not a.authorize(get(n1, "persistentvolumes", "pv1", namespace="")).allowed
    graph.add_pod(pod_on("p", "n1", claim="data"))
    assert a.authorize(get(n1, "persistentvolumeclaims", "data")).allowed
    assert a.authorize(get(n1, "persistentvolumes", "pv1", namespace="")).allowed
    assert a.authorize(
        Attributes(n1, "patch", "persistentvolumeclaims", "", "status", "ns", "data")
    ).allowed
    assert not a.authorize(get(n1, "persistentvolumeclaims", "data", verb="list")).allowed
    mirror = pod_on("m", "n1", secret="m-secret")
    mirror.metadata.annotations[MIRROR_ANNOTATION] = "x"
    graph.add_pod(mirror)
    assert not a.authorize(get(n1, "secrets", "m-secret")).allowed
    assert a.authorize(get(n1, "pods", "m")).allowed  # the pod itself is the node's


def test_resource_claims_follow_the_pods_claim_statuses(graph: Graph) -> None:
    a = authorizer(graph)
    pod = pod_on("p", "n1")
    pod.spec.resource_claims.add(name="gpu", resource_claim_template_name="tmpl")
    pod.spec.resource_claims.add(name="direct", resource_claim_name="shared-claim")
    graph.add_pod(pod)
    n1 = node_user("n1")

    def claim(name: str) -> Attributes:
        return Attributes(n1, "get", "resourceclaims", "resource.k8s.io", "", "ns", name)

    assert a.authorize(claim("shared-claim")).allowed
    assert not a.authorize(claim("p-gpu-abcde")).allowed  # not generated yet
    pod.status.resource_claim_statuses.add(name="gpu", resource_claim_name="p-gpu-abcde")
    graph.add_pod(pod)
    assert a.authorize(claim("p-gpu-abcde")).allowed


def test_leases_csinodes_and_slices_of_the_node_itself(graph: Graph) -> None:
    a = authorizer(graph)
    n1 = node_user("n1")
    lease = Attributes(n1, "update", "leases", "coordination.k8s.io", "", "kube-node-lease", "n1")
    assert a.authorize(lease).allowed
    other = Attributes(n1, "update", "leases", "coordination.k8s.io", "", "kube-node-lease", "n2")
    assert a.authorize(other).reason == (
        "can only access node lease with the same name as the requesting node"
    )
    elsewhere = Attributes(n1, "get", "leases", "coordination.k8s.io", "", "kube-system", "n1")
    assert a.authorize(elsewhere).reason == (
        'can only access leases in the "kube-node-lease" system namespace'
    )
    assert a.authorize(
        Attributes(n1, "create", "leases", "coordination.k8s.io", "", "kube-node-lease")
    ).allowed
    assert a.authorize(Attributes(n1, "get", "csinodes", "storage.k8s.io", name="n1")).allowed
    assert not a.authorize(Attributes(n1, "get", "csinodes", "storage.k8s.io", name="n2")).allowed
    slice_get = Attributes(n1, "get", "resourceslices", "resource.k8s.io", name="s1")
    assert not a.authorize(slice_get).allowed
    graph.add_resource_slice("s1", "n1")
    assert a.authorize(slice_get).allowed
    slices = Attributes(n1, "list", "resourceslices", "resource.k8s.io")
    assert not a.authorize(slices).allowed
    selected = Attributes(
        n1, "list", "resourceslices", "resource.k8s.io", field_selector="spec.nodeName=n1"
    )
    assert a.authorize(selected).allowed
    assert authorizer(graph, with_selectors=False).authorize(slices).allowed


def test_nodes_and_pods_with_authorize_node_with_selectors(graph: Graph) -> None:
    a = authorizer(graph)
    n1 = node_user("n1")
    assert a.authorize(Attributes(n1, "get", "nodes", name="n1")).allowed
    assert a.authorize(Attributes(n1, "get", "nodes", name="n2")).reason == (
        "node 'n1' cannot read 'n2', only its own Node object"
    )
    assert a.authorize(Attributes(n1, "list", "nodes")).reason == (
        "node 'n1' cannot read all nodes, only its own Node object"
    )
    assert a.authorize(Attributes(n1, "update", "nodes", subresource="status", name="n2")).allowed
    pods = Attributes(n1, "watch", "pods", field_selector="spec.nodeName=n1")
    assert a.authorize(pods).allowed
    assert not a.authorize(
        Attributes(n1, "watch", "pods", field_selector="spec.nodeName=n2")
    ).allowed
    assert a.authorize(Attributes(n1, "list", "pods")).reason == (
        "can only list/watch pods with spec.nodeName field selector"
    )
    assert a.authorize(
        Attributes(n1, "create", "pods", subresource="eviction", namespace="ns")
    ).allowed
    assert a.authorize(
        Attributes(n1, "update", "pods", subresource="status", namespace="ns")
    ).allowed
    assert not a.authorize(Attributes(n1, "update", "pods", namespace="ns", name="p")).allowed
    # without the gate (before 1.32), the static rules decide: here, none matches
    assert with_selectors_by_default(Version(1, 32))
    assert not with_selectors_by_default(Version(1, 31))
    legacy = authorizer(graph, with_selectors=False)
    assert legacy.authorize(Attributes(n1, "list", "nodes")).verdict is Verdict.NO_OPINION


def test_other_resources_follow_the_static_node_rules(graph: Graph) -> None:
    a = authorizer(graph)
    n1 = node_user("n1")
    assert a.authorize(Attributes(n1, "create", "events", namespace="ns")).allowed
    assert a.authorize(Attributes(n1, "delete", "events", namespace="ns")).verdict is (
        Verdict.NO_OPINION
    )
    assert a.authorize(Attributes(n1, "get", "services", namespace="ns")).verdict is (
        Verdict.NO_OPINION
    )


def test_the_populator_follows_cache_events_and_relists(graph: Graph) -> None:
    pods = _FakeCache()
    NodeGraphPopulator(graph).observe({"pods": pods})  # type: ignore[dict-item]
    unbound = pod_on("p", "", claim="data")
    pods.emit("ADDED", unbound)
    assert not graph.has(Vertex(PVC, "ns", "data"))  # not bound yet
    bound = pod_on("p", "n1", claim="data")
    pods.emit("MODIFIED", bound, unbound)
    assert graph.reaches(Vertex(PVC, "ns", "data"), "n1")
    pods.emit("DELETED", bound)
    assert not graph.has(Vertex(PVC, "ns", "data"))
    pods.emit("ADDED", bound)
    pods.replace([pod_on("q", "n2", claim="other")])
    assert not graph.has(Vertex(PVC, "ns", "data"))
    assert graph.reaches(Vertex(PVC, "ns", "other"), "n2")


class _FakeCache:
    """The part of WatchCache the populator uses."""

    def __init__(self) -> None:
        self.observers: list[object] = []

    def observe(self, observer: object) -> None:
        self.observers.append(observer)

    def emit(self, event_type: str, obj: object, prev: object = None) -> None:
        for o in self.observers:
            o.changed(event_type, obj, prev)  # type: ignore[attr-defined]

    def replace(self, objects: list[types_pb2.Pod]) -> None:
        for o in self.observers:
            o.replaced(objects)  # type: ignore[attr-defined]


class _Policy:
    """rbac_rules.Policy over one RoleBinding of one Role, in namespace "ns"."""

    def __init__(self, role: types_pb2.Role, binding: types_pb2.RoleBinding) -> None:
        self._role, self._binding = role, binding

    def cluster_role_bindings(self) -> list[types_pb2.ClusterRoleBinding]:
        return []

    def role_bindings(self, namespace: str) -> list[types_pb2.RoleBinding]:
        return [self._binding] if namespace == "ns" else []

    def cluster_role(self, name: str) -> types_pb2.ClusterRole | None:
        return None

    def role(self, namespace: str, name: str) -> types_pb2.Role | None:
        return self._role if (namespace, name) == ("ns", self._role.metadata.name) else None


def _union(node: NodeAuthorizer, policy: _Policy, attrs: Attributes) -> tuple[bool, str]:
    """A test's `--authorization-mode Node,RBAC`: the first decision that is not NoOpinion
    (k8s.io/apiserver/pkg/authorization/union), RBAC's allow or its no."""
    decided = node.authorize(attrs)
    if decided.verdict is not Verdict.NO_OPINION:
        return decided.allowed, decided.reason
    rbac = authorize(policy, attrs)
    return rbac.allowed, rbac.reason or decided.reason


def test_node_then_rbac_a_node_reads_an_unrelated_secret_only_when_rbac_grants_it(
    graph: Graph,
) -> None:
    role = types_pb2.Role(metadata=types_pb2.ObjectMeta(name="read-cm", namespace="ns"))
    role.rules.add(verbs=["get"], api_groups=[""], resources=["configmaps"])
    binding = types_pb2.RoleBinding(metadata=types_pb2.ObjectMeta(name="n1-cm", namespace="ns"))
    binding.subjects.add(kind="User", name="system:node:n1")
    binding.role_ref.kind, binding.role_ref.name = "Role", "read-cm"
    policy = _Policy(role, binding)
    a = authorizer(graph)
    graph.add_pod(pod_on("p", "n1", secret="s"))
    n1 = node_user("n1")
    assert _union(a, policy, get(n1, "secrets", "s")) == (True, "")
    refused = _union(a, policy, get(n1, "secrets", "other"))
    assert refused == (False, "no relationship found between node 'n1' and this object")
    # the Node authorizer has no opinion on this configmap; RBAC's binding allows it
    allowed, reason = _union(a, policy, get(n1, "configmaps", "cm"))
    assert allowed and reason.startswith('RBAC: allowed by RoleBinding "n1-cm/ns"')
