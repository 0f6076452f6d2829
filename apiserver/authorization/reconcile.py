"""The RBAC bootstrap reconciler (issue #60 item 3): upstream's post-start hook
rbac/bootstrap-roles (pkg/registry/rbac/rest/storage_rbac.go EnsureRBACPolicy) over the
reconciliation of pkg/registry/rbac/reconciliation (clusterrole_interfaces.go,
reconcile_role.go, reconcile_rolebindings.go), as `kubectl auth reconcile` does it too:

- a missing role or binding is created;
- an existing one keeps everything it has (reconciliation adds, never removes: upstream's hook
  runs with RemoveExtraPermissions and RemoveExtraSubjects false): the expected labels and
  annotations it lacks are added (its own values win), the expected rules it does not cover
  are appended (broken down into one verb, group, resource and name each, as
  validation.Covers reports them), the aggregation rule's missing selectors and the binding's
  missing subjects likewise;
- an object annotated rbac.authorization.kubernetes.io/autoupdate "false" is left alone
  (Protected), whatever it lacks;
- a binding whose roleRef differs (immutable) is deleted and created again (RecreateNeeded),
  unless protected;
- an aggregated role (admin, edit, view) gets no rules here: the clusterrole-aggregation
  controller of the controller-manager writes them (controllermanager/
  clusterrole_aggregation.py), as upstream's.

Pure: apiserver/rbac_bootstrap.py reads, writes and retries (the post-start hook). The
reconciliation of upstream's 1.9 migration
(copying admin/edit/view's old rules into system:aggregate-to-*, splitting
system:discovery's binding) is not modelled: kemu has no stored cluster from before it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

from apiserver.authorization.bootstrap_policy import AUTOUPDATE_ANNOTATION
from kemu.api.v1 import types_pb2

RoleT = TypeVar("RoleT", types_pb2.ClusterRole, types_pb2.Role)
BindingT = TypeVar("BindingT", types_pb2.ClusterRoleBinding, types_pb2.RoleBinding)


class Operation(Enum):
    """reconciliation.ReconcileOperation."""

    NONE = "none"
    CREATE = "create"
    UPDATE = "update"
    RECREATE = "recreate"


@dataclass(frozen=True)
class Result:
    """What reconciling one object decided: the object to write (for NONE, the existing one)
    and whether its autoupdate annotation forbids the write."""

    operation: Operation
    obj: (
        types_pb2.ClusterRole
        | types_pb2.Role
        | types_pb2.ClusterRoleBinding
        | types_pb2.RoleBinding
    )
    protected: bool = False

    @property
    def writes(self) -> bool:
        return self.operation is not Operation.NONE and not self.protected


# ---------------------------------------------------------------- validation.Covers


def _atoms(rule: types_pb2.PolicyRule) -> Iterator[types_pb2.PolicyRule]:
    """BreakdownRule: one rule per group, resource, verb (and name) or per URL and verb."""
    for group in rule.api_groups:
        for resource in rule.resources:
            for verb in rule.verbs:
                if rule.resource_names:
                    for name in rule.resource_names:
                        yield types_pb2.PolicyRule(
                            verbs=[verb],
                            api_groups=[group],
                            resources=[resource],
                            resource_names=[name],
                        )
                else:
                    yield types_pb2.PolicyRule(
                        verbs=[verb], api_groups=[group], resources=[resource]
                    )
    for url in rule.non_resource_urls:
        for verb in rule.verbs:
            yield types_pb2.PolicyRule(verbs=[verb], non_resource_urls=[url])


def _has(values: Iterable[str], value: str) -> bool:
    return any(v == "*" or v == value for v in values)


def _resource_covered(owner: Iterable[str], resource: str) -> bool:
    """resourceCoversAll: "*", the resource itself, "*/sub" for any resource's subresource
    sub, "res/*" for any subresource of res."""
    for r in owner:
        if r == "*" or r == resource:
            return True
        if r.startswith("*/") and "/" in resource and resource.split("/", 1)[1] == r[2:]:
            return True
        if r.endswith("/*") and resource.startswith(r[:-1]):
            return True
    return False


def _url_covered(owner: Iterable[str], url: str) -> bool:
    return any(u == "*" or u == url or (u.endswith("*") and url.startswith(u[:-1])) for u in owner)


def _rule_covers(owner: types_pb2.PolicyRule, atom: types_pb2.PolicyRule) -> bool:
    """ruleCovers, for an atomic `atom`."""
    if not _has(owner.verbs, atom.verbs[0]):
        return False
    if atom.non_resource_urls:
        return _url_covered(owner.non_resource_urls, atom.non_resource_urls[0])
    return (
        _has(owner.api_groups, atom.api_groups[0])
        and _resource_covered(owner.resources, atom.resources[0])
        and (
            not owner.resource_names
            or bool(atom.resource_names)
            and atom.resource_names[0] in owner.resource_names
        )
    )


def uncovered(
    owner: Iterable[types_pb2.PolicyRule], requested: Iterable[types_pb2.PolicyRule]
) -> list[types_pb2.PolicyRule]:
    """validation.Covers' second result: the atoms of `requested` no rule of `owner` covers."""
    owned = list(owner)
    out: list[types_pb2.PolicyRule] = []
    for rule in requested:
        for atom in _atoms(rule):
            if not any(_rule_covers(o, atom) for o in owned) and atom not in out:
                out.append(atom)
    return out


# ---------------------------------------------------------------- reconcile_role.go


def _merged(expected: Mapping[str, str], existing: Mapping[str, str]) -> dict[str, str]:
    """merge(expected, existing): the existing values win."""
    return {**expected, **existing}


def _protected(meta: types_pb2.ObjectMeta) -> bool:
    return meta.annotations.get(AUTOUPDATE_ANNOTATION) == "false"


def _merge_meta(out: types_pb2.ObjectMeta, expected: types_pb2.ObjectMeta) -> None:
    labels = _merged(expected.labels, out.labels)
    annotations = _merged(expected.annotations, out.annotations)
    out.labels.clear()
    out.labels.update(labels)
    out.annotations.clear()
    out.annotations.update(annotations)


def reconcile_role(expected: RoleT, existing: RoleT | None) -> Result:
    """computeReconciledRole with RemoveExtraPermissions false."""
    if existing is None:
        return Result(Operation.CREATE, expected)
    out = type(existing)()
    out.CopyFrom(existing)
    _merge_meta(out.metadata, expected.metadata)
    missing = uncovered(existing.rules, expected.rules)
    out.rules.extend(missing)
    if isinstance(expected, types_pb2.ClusterRole) and isinstance(out, types_pb2.ClusterRole):
        if expected.HasField("aggregation_rule"):
            have = list(out.aggregation_rule.cluster_role_selectors)
            for selector in expected.aggregation_rule.cluster_role_selectors:
                if selector not in have:
                    out.aggregation_rule.cluster_role_selectors.append(selector)
    changed = out != existing
    return Result(
        Operation.UPDATE if changed else Operation.NONE,
        out,
        protected=_protected(existing.metadata),
    )


# ---------------------------------------------------------------- reconcile_rolebindings.go


def reconcile_binding(expected: BindingT, existing: BindingT | None) -> Result:
    """computeReconciledRoleBinding with RemoveExtraSubjects false."""
    if existing is None:
        return Result(Operation.CREATE, expected)
    protected = _protected(existing.metadata)
    out = type(existing)()
    out.CopyFrom(existing)
    _merge_meta(out.metadata, expected.metadata)
    recreate = out.role_ref != expected.role_ref
    if recreate:  # (roleRef is immutable: the binding is made again, with the expected one)
        out.role_ref.CopyFrom(expected.role_ref)
    for s in expected.subjects:
        if s not in out.subjects:
            out.subjects.append(s)
    if recreate:
        return Result(Operation.RECREATE, out, protected=protected)
    changed = out != existing
    return Result(Operation.UPDATE if changed else Operation.NONE, out, protected=protected)
