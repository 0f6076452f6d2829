"""rbac.authorization.k8s.io/v1: Roles, ClusterRoles and their bindings (upstream
pkg/apis/rbac/validation/validation.go). Names are path segments only
(minimalNameRequirements: path.IsValidPathSegmentName); a binding's roleRef cannot change.
Authorization stays AlwaysAllow: the objects are stored, nothing reads them."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause
from kemu.machinery.rbac import GROUP_KIND, RBAC_GROUP, SERVICE_ACCOUNT_KIND, USER_KIND
from kemu.machinery.validation.field import invalid, not_supported, required
from kemu.machinery.validation.meta import validate_label_selector, validate_object_meta
from kemu.machinery.validation.names import name_is_dns_subdomain


def is_valid_path_segment_name(name: str, prefix: bool = False) -> list[str]:
    """apimachinery's path.IsValidPathSegmentName (a prefix is checked as a name)."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def _meta(meta: types_pb2.ObjectMeta, namespaced: bool) -> list[Cause]:
    return validate_object_meta(meta, namespaced=namespaced, name_fn=is_valid_path_segment_name)


def _policy_rule(rule: types_pb2.PolicyRule, namespaced: bool, path: str) -> list[Cause]:
    """validatePolicyRule."""
    causes: list[Cause] = []
    if not rule.verbs:
        causes.append(required(f"{path}.verbs", "verbs must contain at least one value"))
    if rule.non_resource_urls:
        urls = list(rule.non_resource_urls)
        if namespaced:
            causes.append(
                invalid(
                    f"{path}.nonResourceURLs",
                    urls,
                    "namespaced rules cannot apply to non-resource URLs",
                )
            )
        if rule.api_groups or rule.resources or rule.resource_names:
            causes.append(
                invalid(
                    f"{path}.nonResourceURLs",
                    urls,
                    "rules cannot apply to both regular resources and non-resource URLs",
                )
            )
        return causes
    if not rule.api_groups:
        causes.append(
            required(f"{path}.apiGroups", "resource rules must supply at least one api group")
        )
    if not rule.resources:
        causes.append(
            required(f"{path}.resources", "resource rules must supply at least one resource")
        )
    if rule.resource_names and len(rule.resources) > 1:
        causes.append(
            required(f"{path}.resourceNames", "resource names cannot apply to multiple resources")
        )
    return causes


def validate_role(role: types_pb2.Role) -> list[Cause]:
    causes = _meta(role.metadata, True)
    for i, rule in enumerate(role.rules):
        causes.extend(_policy_rule(rule, True, f"rules[{i}]"))
    return causes


def validate_cluster_role(role: types_pb2.ClusterRole) -> list[Cause]:
    causes = _meta(role.metadata, False)
    for i, rule in enumerate(role.rules):
        causes.extend(_policy_rule(rule, False, f"rules[{i}]"))
    # pkg/registry/rbac/clusterrole/strategy.go validates the aggregation rule's selectors
    # (ValidateClusterRole's options: a rule with no selector is refused).
    if role.HasField("aggregation_rule"):
        selectors = role.aggregation_rule.cluster_role_selectors
        if not selectors:
            causes.append(
                required(
                    "aggregationRule.clusterRoleSelectors",
                    "at least one clusterRoleSelector required if aggregationRule is non-nil",
                )
            )
        for i, sel in enumerate(selectors):
            causes.extend(
                validate_label_selector(sel, f"aggregationRule.clusterRoleSelectors[{i}]")
            )
    return causes


def _subject(subject: types_pb2.Subject, namespaced: bool, path: str) -> list[Cause]:
    """validateRoleBindingSubject."""
    causes: list[Cause] = []
    if not subject.name:
        causes.append(required(f"{path}.name"))
    if subject.kind == SERVICE_ACCOUNT_KIND:
        if subject.name:
            causes.extend(
                invalid(f"{path}.name", subject.name, m)
                for m in name_is_dns_subdomain(subject.name)
            )
        if subject.api_group:
            causes.append(not_supported(f"{path}.apiGroup", subject.api_group, [""]))
        if not namespaced and not subject.namespace:
            causes.append(required(f"{path}.namespace"))
    elif subject.kind in (USER_KIND, GROUP_KIND):
        if not subject.name:
            what = "user" if subject.kind == USER_KIND else "group"
            causes.append(invalid(f"{path}.name", subject.name, f"{what} name cannot be empty"))
        if subject.api_group != RBAC_GROUP:
            causes.append(not_supported(f"{path}.apiGroup", subject.api_group, [RBAC_GROUP]))
    else:
        causes.append(
            not_supported(
                f"{path}.kind", subject.kind, [SERVICE_ACCOUNT_KIND, USER_KIND, GROUP_KIND]
            )
        )
    return causes


def _binding(
    meta: types_pb2.ObjectMeta,
    ref: types_pb2.RoleRef,
    subjects: list[types_pb2.Subject],
    namespaced: bool,
) -> list[Cause]:
    causes = _meta(meta, namespaced)
    if ref.api_group != RBAC_GROUP:
        causes.append(not_supported("roleRef.apiGroup", ref.api_group, [RBAC_GROUP]))
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    if ref.kind not in kinds:
        causes.append(not_supported("roleRef.kind", ref.kind, kinds))
    if not ref.name:
        causes.append(required("roleRef.name"))
    else:
        causes.extend(
            invalid("roleRef.name", ref.name, m) for m in is_valid_path_segment_name(ref.name)
        )
    for i, subject in enumerate(subjects):
        causes.extend(_subject(subject, namespaced, f"subjects[{i}]"))
    return causes


def validate_role_binding(rb: types_pb2.RoleBinding) -> list[Cause]:
    return _binding(rb.metadata, rb.role_ref, list(rb.subjects), True)


def validate_cluster_role_binding(crb: types_pb2.ClusterRoleBinding) -> list[Cause]:
    return _binding(crb.metadata, crb.role_ref, list(crb.subjects), False)


def _role_ref_text(ref: types_pb2.RoleRef) -> str:
    return f"{{APIGroup:{ref.api_group} Kind:{ref.kind} Name:{ref.name}}}"


def validate_binding_update(
    new: types_pb2.RoleBinding | types_pb2.ClusterRoleBinding,
    old: types_pb2.RoleBinding | types_pb2.ClusterRoleBinding,
) -> list[Cause]:
    """Validate(Cluster)RoleBindingUpdate: "cannot change roleRef" (the Go struct printed as
    field.Invalid prints it)."""
    if new.role_ref != old.role_ref:
        return [
            Cause(
                "roleRef",
                f'Invalid value: "{_role_ref_text(new.role_ref)}": cannot change roleRef',
            )
        ]
    return []
