"""rbac.authorization.k8s.io/v1's defaults (upstream pkg/apis/rbac/v1/defaults.go). kemu's
authorization stays AlwaysAllow: Roles and bindings are stored objects that nothing reads."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from kemu.api.v1 import types_pb2

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
SERVICE_ACCOUNT_KIND: Final = "ServiceAccount"
USER_KIND: Final = "User"
GROUP_KIND: Final = "Group"


def default_subjects(subjects: Iterable[types_pb2.Subject]) -> None:
    """SetDefaults_Subject: a User's or Group's apiGroup is rbac.authorization.k8s.io (a
    ServiceAccount's stays "")."""
    for s in subjects:
        if not s.api_group and s.kind in (USER_KIND, GROUP_KIND):
            s.api_group = RBAC_GROUP


def default_role_ref(ref: types_pb2.RoleRef) -> None:
    """SetDefaults_RoleRef: apiGroup rbac.authorization.k8s.io."""
    if not ref.api_group:
        ref.api_group = RBAC_GROUP


def set_defaults_binding(obj: types_pb2.RoleBinding | types_pb2.ClusterRoleBinding) -> None:
    default_role_ref(obj.role_ref)
    default_subjects(obj.subjects)
