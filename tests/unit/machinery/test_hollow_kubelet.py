"""The RBAC of a hollow kubelet process's own user (kemu/machinery/hollow_kubelet.py)."""

from __future__ import annotations

import pytest

from kemu.machinery.hollow_kubelet import hollow_kubelet_rbac
from kemu.machinery.rbac_rules import Attributes, rule_allows
from kemu.machinery.user import UserInfo

HOLLOW = UserInfo("hollow", ())


def _allowed(nodes: tuple[str, ...] | None, attrs: Attributes) -> bool:
    role, _ = hollow_kubelet_rbac(HOLLOW.name, nodes)
    return any(rule_allows(attrs, rule) for rule in role.rules)


@pytest.mark.parametrize(
    ("nodes", "attrs", "allowed"),
    [
        (("h-0",), Attributes(HOLLOW, "watch", "pods"), True),
        (("h-0",), Attributes(HOLLOW, "list", "resourceslices", "resource.k8s.io"), True),
        (("h-0",), Attributes(HOLLOW, "create", "events", namespace="default"), True),
        (("h-0",), Attributes(HOLLOW, "update", "pods"), False),
        (("h-0",), Attributes(HOLLOW, "list", "resourceclaims", "resource.k8s.io"), False),
        (("h-0",), Attributes(HOLLOW, "impersonate", "users", name="system:node:h-0"), True),
        (("h-0",), Attributes(HOLLOW, "impersonate", "users", name="system:node:h-1"), False),
        (None, Attributes(HOLLOW, "impersonate", "users", name="system:node:h-1"), True),
        (("h-0",), Attributes(HOLLOW, "impersonate", "groups", name="system:nodes"), True),
        (("h-0",), Attributes(HOLLOW, "impersonate", "groups", name="system:masters"), False),
    ],
)
def test_the_role_grants_the_shared_watches_events_and_its_nodes_users(nodes, attrs, allowed):
    assert _allowed(nodes, attrs) is allowed


def test_the_binding_names_the_user_and_the_role():
    role, binding = hollow_kubelet_rbac(HOLLOW.name, ("h-0",))
    ((kind, name),) = [(s.kind, s.name) for s in binding.subjects]
    assert (kind, name) == ("User", HOLLOW.name)
    assert (binding.role_ref.kind, binding.role_ref.name) == ("ClusterRole", role.metadata.name)


def test_no_nodes_is_refused_rather_than_every_user():
    with pytest.raises(ValueError, match="nodes: empty"):
        hollow_kubelet_rbac(HOLLOW.name, ())
