"""NodeRestriction (issue #60 item 3): upstream's plugin/pkg/admission/noderestriction/
admission_test.go cases on kemu's kinds, with upstream's messages."""

from __future__ import annotations

import pytest

from apiserver.admission import request_user
from apiserver.admission.chain import AdmissionChain
from apiserver.admission.node_restriction import (
    CREATE,
    DELETE,
    UPDATE,
    NodeRestriction,
    Request,
    forbidden_labels,
)
from apiserver.admission.plugins import AdmissionPlugins
from kemu.api.v1 import api_pb2, types_pb2
from kemu.machinery.errors import Forbidden, NotFound
from kemu.machinery.pod_types import MIRROR_ANNOTATION
from kemu.machinery.user import UserInfo, node_user
from kemu.testing.builders import make_node, make_pod

pytestmark = pytest.mark.anyio

N1 = node_user("n1")
PODS = {
    ("ns", "mine"): make_pod("mine").namespace("ns").node("n1").obj(),
    ("ns", "theirs"): make_pod("theirs").namespace("ns").node("n2").obj(),
}
NODE1 = make_node("n1").obj()
NODE1.metadata.uid = "uid-n1"


async def _pod(namespace: str, name: str) -> types_pb2.Pod | None:
    return PODS.get((namespace, name))


async def _node(name: str) -> types_pb2.Node | None:
    return NODE1 if name == "n1" else None


PLUGIN = NodeRestriction(_pod, _node)


async def refused(req: Request, user: UserInfo = N1) -> str:
    with pytest.raises(Forbidden) as e:
        await PLUGIN.admit(req, user)
    return e.value.message


def pod_status(name: str, new_labels: dict[str, str] | None = None) -> Request:
    old = PODS[("ns", name)]
    new = types_pb2.Pod()
    new.CopyFrom(old)
    new.status.phase = "Running"
    if new_labels is not None:
        new.metadata.labels.update(new_labels)
    return Request(UPDATE, "pods", "", "status", "ns", name, new, old)


async def test_users_that_are_not_nodes_pass_and_a_nameless_node_is_refused() -> None:
    req = Request(UPDATE, "nodes", "", "status", "", "n2", NODE1, NODE1)
    await PLUGIN.admit(req, UserInfo("admin", ("system:masters",)))
    await PLUGIN.admit(req, None)  # the apiserver's own write
    nameless = UserInfo("system:node:", ("system:nodes",))
    assert await refused(req, nameless) == (
        'nodes "n2" is forbidden: could not determine node from user "system:node:"'
    )


async def test_a_node_updates_only_its_own_node_and_not_its_taints_or_restricted_labels() -> None:
    other = make_node("n2").obj()
    assert await refused(Request(UPDATE, "nodes", "", "status", "", "n2", other, other)) == (
        'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"'
    )
    await PLUGIN.admit(Request(UPDATE, "nodes", "", "status", "", "n1", NODE1, NODE1), N1)
    tainted = types_pb2.Node()
    tainted.CopyFrom(NODE1)
    tainted.spec.taints.add(key="k", effect="NoSchedule")
    assert await refused(Request(UPDATE, "nodes", "", "", "", "n1", NODE1, tainted)) == (
        'nodes "n1" is forbidden: node "n1" is not allowed to modify taints'
    )
    relabelled = types_pb2.Node()
    relabelled.CopyFrom(NODE1)
    relabelled.metadata.labels["node-restriction.kubernetes.io/pool"] = "gpu"
    relabelled.metadata.labels["kubernetes.io/role"] = "master"
    relabelled.metadata.labels["node.kubernetes.io/instance-type"] = "big"  # the kubelet's
    relabelled.metadata.labels["example.com/team"] = "a"  # not kubernetes.io's
    assert await refused(Request(UPDATE, "nodes", "", "", "", "n1", relabelled, NODE1)) == (
        'nodes "n1" is forbidden: is not allowed to modify labels: kubernetes.io/role, '
        "node-restriction.kubernetes.io/pool"
    )
    created = make_node("n1").label("kubernetes.io/hostname", "n1").obj()
    await PLUGIN.admit(Request(CREATE, "nodes", "", "", "", "", created), N1)
    created.metadata.labels["node-role.kubernetes.io/control-plane"] = ""
    assert await refused(Request(CREATE, "nodes", "", "", "", "", created)) == (
        'nodes "n1" is forbidden: node "n1" is not allowed to set the following labels: '
        "node-role.kubernetes.io/control-plane"
    )


def test_the_kubelets_own_labels_are_allowed() -> None:
    assert forbidden_labels({"kubernetes.io/hostname", "topology.kubernetes.io/zone"}) == []
    assert forbidden_labels({"a.kubelet.kubernetes.io/x", "foo.k8s.io/bar"}) == ["foo.k8s.io/bar"]


async def test_pod_status_and_evictions_only_of_pods_bound_to_the_node() -> None:
    await PLUGIN.admit(pod_status("mine"), N1)
    assert await refused(pod_status("theirs")) == (
        'pods "theirs" is forbidden: node "n1" can only update pod status for pods with '
        "spec.nodeName set to itself"
    )
    assert await refused(pod_status("mine", {"role": "leader"})) == (
        'pods "mine" is forbidden: node "n1" cannot update labels through pod status'
    )
    eviction = api_pb2.Eviction()
    eviction.metadata.namespace, eviction.metadata.name = "ns", "theirs"
    assert await refused(Request(CREATE, "pods", "", "eviction", "ns", "theirs", eviction)) == (
        'pods "theirs" is forbidden: node n1 can only evict pods with spec.nodeName set to itself'
    )
    await PLUGIN.admit(Request(CREATE, "pods", "", "eviction", "ns", "mine", eviction), N1)
    assert await refused(Request(DELETE, "pods", "", "", "ns", "theirs")) == (
        'pods "theirs" is forbidden: node "n1" can only delete pods with spec.nodeName set to '
        "itself"
    )
    with pytest.raises(NotFound):
        await PLUGIN.admit(Request(DELETE, "pods", "", "", "ns", "gone"), N1)
    assert await refused(Request(CREATE, "pods", "", "binding", "ns", "mine")) == (
        'pods "mine" is forbidden: unexpected pod subresource "binding", only \'status\' and '
        "'eviction' are allowed"
    )


async def test_a_node_creates_only_mirror_pods_of_its_own_that_reference_nothing() -> None:
    pod = make_pod("static").namespace("ns").node("n1").obj()
    req = Request(CREATE, "pods", "", "", "ns", "", pod)
    assert await refused(req) == (
        'pods "static" is forbidden: pod does not have "kubernetes.io/config.mirror" '
        'annotation, node "n1" can only create mirror pods'
    )
    pod.metadata.annotations[MIRROR_ANNOTATION] = "hash"
    assert await refused(req) == (
        'pods "static" is forbidden: node "n1" can only create pods with an owner reference '
        "set to itself"
    )
    owner = pod.metadata.owner_references.add(
        api_version="v1", kind="Node", name="n1", uid="uid-n1", controller=True
    )
    await PLUGIN.admit(req, N1)
    owner.uid = "stale"
    assert await refused(req) == (
        'pods "static" is forbidden: node n1 UID mismatch: expected stale got uid-n1'
    )
    owner.uid = "uid-n1"
    pod.spec.volumes.add(name="s").secret.secret_name = "token"
    assert await refused(req) == (
        'pods "static" is forbidden: node "n1" can not create pods that reference secrets'
    )


async def test_leases_csinodes_and_slices_only_of_the_node_itself() -> None:
    lease = types_pb2.Lease()
    lease.metadata.name = "n2"
    assert await refused(
        Request(CREATE, "leases", "coordination.k8s.io", "", "kube-node-lease", "", lease)
    ) == (
        'leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same '
        "name as the requesting node"
    )
    assert await refused(
        Request(UPDATE, "leases", "coordination.k8s.io", "", "kube-system", "n1")
    ) == (
        'leases.coordination.k8s.io "n1" is forbidden: can only access leases in the '
        '"kube-node-lease" system namespace'
    )
    await PLUGIN.admit(
        Request(UPDATE, "leases", "coordination.k8s.io", "", "kube-node-lease", "n1"), N1
    )
    assert await refused(Request(DELETE, "csinodes", "storage.k8s.io", "", "", "n2")) == (
        'csinodes.storage.k8s.io "n2" is forbidden: can only access CSINode with the same name '
        "as the requesting node"
    )
    rs = types_pb2.ResourceSlice()
    rs.metadata.name = "s"
    rs.spec.node_name = "n2"
    assert await refused(Request(CREATE, "resourceslices", "resource.k8s.io", "", "", "", rs)) == (
        'resourceslices.resource.k8s.io "s" is forbidden: can only create ResourceSlice with the '
        "same NodeName as the requesting node"
    )


async def test_a_node_updates_only_capacity_and_conditions_of_a_claims_status() -> None:
    old = types_pb2.PersistentVolumeClaim()
    old.metadata.name = "data"
    new = types_pb2.PersistentVolumeClaim()
    new.CopyFrom(old)
    new.status.capacity["storage"] = "2Gi"
    req = Request(UPDATE, "persistentvolumeclaims", "", "status", "ns", "data", new, old)
    await PLUGIN.admit(req, N1)
    new.status.phase = "Lost"
    assert await refused(req) == (
        'persistentvolumeclaims "data" is forbidden: node "n1" is not allowed to update fields '
        "other than status.capacity and status.conditions"
    )
    spec = Request(UPDATE, "persistentvolumeclaims", "", "", "ns", "data", new, old)
    assert (
        await refused(spec)
        == 'persistentvolumeclaims "data" is forbidden: may only update PVC status'
    )


async def test_the_chain_runs_it_for_the_requests_user_only_when_enabled() -> None:
    node = make_node("n2").obj()
    on = AdmissionChain({}, {}, plugins=AdmissionPlugins.from_flags(["NodeRestriction"], []))
    await on.admit_create(node)  # no user: the apiserver's own
    with request_user.serving(N1), pytest.raises(Forbidden) as e:
        await on.admit_create(node)
    assert (
        e.value.message == 'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"'
    )
    with request_user.serving(N1):
        await AdmissionChain({}, {}).admit_create(node)  # off by default
