"""The RBAC a hollow kubelet process's own user needs under `--authorization-mode Node,RBAC`
(issue #60; docs/security.md "What a kubelet reads and writes").

A hollow process (`python -m kubelet --nodes K`, the cloud's node-group kubelets) makes each
node's calls as that node's user, impersonated, which the Node authorizer and NodeRestriction
judge as a real kubelet's. What it does for no one node is its certificate's user's: one watch
per kind for all its nodes (every bound pod, every Node, every ResourceSlice: a field selector
takes one value, and a watch per node would be walked by every event), and its events. That
user is no node (a node may watch only its own objects), so RBAC must grant it these, as
kubemark's hollow nodes' credentials would be granted theirs.
"""

from __future__ import annotations

from collections.abc import Sequence

from kemu.api.v1 import types_pb2
from kemu.machinery.rbac import RBAC_GROUP
from kemu.machinery.user import AUTHENTICATED, NODE_USER_PREFIX, NODES_GROUP


def hollow_kubelet_rbac(
    user: str, nodes: Sequence[str] | None
) -> tuple[types_pb2.ClusterRole, types_pb2.ClusterRoleBinding]:
    """A ClusterRole named `user` and its binding to the user `user`: the shared watches, the
    events, and impersonating the users of `nodes` (None: of any node, for a process whose
    nodes are added at run time: `impersonate` on every user) and their groups. ValueError
    for no nodes (a rule without resourceNames would name every user)."""
    if nodes is not None and not nodes:
        raise ValueError("nodes: empty (None for any node's user)")
    role = types_pb2.ClusterRole(metadata=types_pb2.ObjectMeta(name=user))
    read = ["get", "list", "watch"]
    role.rules.add(verbs=read, api_groups=[""], resources=["pods", "nodes"])
    role.rules.add(verbs=read, api_groups=["resource.k8s.io"], resources=["resourceslices"])
    role.rules.add(verbs=["create", "patch", "update"], api_groups=[""], resources=["events"])
    users = role.rules.add(verbs=["impersonate"], api_groups=[""], resources=["users"])
    if nodes is not None:
        users.resource_names.extend(NODE_USER_PREFIX + n for n in nodes)
    role.rules.add(
        verbs=["impersonate"],
        api_groups=[""],
        resources=["groups"],
        resource_names=[NODES_GROUP, AUTHENTICATED],
    )
    binding = types_pb2.ClusterRoleBinding(metadata=types_pb2.ObjectMeta(name=user))
    binding.subjects.add(kind="User", api_group=RBAC_GROUP, name=user)
    binding.role_ref.api_group = RBAC_GROUP
    binding.role_ref.kind = "ClusterRole"
    binding.role_ref.name = user
    return role, binding
