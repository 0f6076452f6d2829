"""The RBAC authorizer (plugin/pkg/auth/authorizer/rbac/rbac.go) over the apiserver's watch
caches of Role, ClusterRole, RoleBinding and ClusterRoleBinding, as upstream's reads its
informers' listers: a binding written is in force once the cache has its event, without a
restart. The evaluation is kemu/machinery/rbac_rules.py's.

Each cache is indexed (by namespace, by name) the first time it is read after a change, and
the rules that apply to a user in a namespace (what VisitRulesFor walks every binding for)
are kept until one of the four caches changes: a request of a user seen before reads its own
few rules, not the whole policy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, Generic, Protocol, TypeVar, runtime_checkable

from apiserver.authorization.authorizer import NO_OPINION, Decision, Rules, Verdict
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import types_pb2
from kemu.machinery import rbac_rules
from kemu.machinery.rbac_rules import Attributes
from kemu.machinery.user import UserInfo

_M = TypeVar("_M")


class _Index(Generic[_M]):
    """One kind's objects of a watch cache by (namespace, name) and by namespace, rebuilt
    when the cache has seen a change since."""

    def __init__(self, cache: WatchCache, kind: type[_M]) -> None:
        self._cache = cache
        self._kind = kind
        self._revision = -1
        self._by_key: dict[tuple[str, str], _M] = {}
        self._by_namespace: dict[str, list[_M]] = {}

    def _fresh(self) -> None:
        revision = self._cache.event_revision
        if revision == self._revision:
            return
        by_key: dict[tuple[str, str], _M] = {}
        by_namespace: dict[str, list[_M]] = {}
        for co in self._cache.objects():
            obj = co.obj
            if not isinstance(obj, self._kind):
                continue
            meta: types_pb2.ObjectMeta = obj.metadata  # type: ignore[attr-defined]
            by_key[(meta.namespace, meta.name)] = obj
            by_namespace.setdefault(meta.namespace, []).append(obj)
        for objs in by_namespace.values():  # (a stable order: the reasons name the first)
            objs.sort(key=_name)
        self._by_key, self._by_namespace, self._revision = by_key, by_namespace, revision

    def get(self, namespace: str, name: str) -> _M | None:
        self._fresh()
        return self._by_key.get((namespace, name))

    def in_namespace(self, namespace: str) -> list[_M]:
        self._fresh()
        return self._by_namespace.get(namespace, [])


def _name(obj: object) -> str:
    meta: types_pb2.ObjectMeta = obj.metadata  # type: ignore[attr-defined]
    return meta.name


class CachePolicy:
    """rbac_rules.Policy over the watch caches (keyed by resource, as the apiserver's)."""

    def __init__(self, caches: Mapping[str, WatchCache]) -> None:
        self._caches = tuple(
            caches[r] for r in ("roles", "clusterroles", "rolebindings", "clusterrolebindings")
        )
        self._roles = _Index(caches["roles"], types_pb2.Role)
        self._cluster_roles = _Index(caches["clusterroles"], types_pb2.ClusterRole)
        self._role_bindings = _Index(caches["rolebindings"], types_pb2.RoleBinding)
        self._cluster_role_bindings = _Index(
            caches["clusterrolebindings"], types_pb2.ClusterRoleBinding
        )

    @property
    def revision(self) -> tuple[int, ...]:
        """Changes when any of the four kinds changes."""
        return tuple(c.event_revision for c in self._caches)

    def cluster_role_bindings(self) -> Iterable[types_pb2.ClusterRoleBinding]:
        return self._cluster_role_bindings.in_namespace("")

    def role_bindings(self, namespace: str) -> Iterable[types_pb2.RoleBinding]:
        return self._role_bindings.in_namespace(namespace)

    def cluster_role(self, name: str) -> types_pb2.ClusterRole | None:
        return self._cluster_roles.get("", name)

    def role(self, namespace: str, name: str) -> types_pb2.Role | None:
        return self._roles.get(namespace, name)


@runtime_checkable
class VersionedPolicy(rbac_rules.Policy, Protocol):
    """A policy that says when it changed (CachePolicy): its rules per user may be kept."""

    @property
    def revision(self) -> tuple[int, ...]: ...


MAX_KEPT: Final = 4096
"""(user, namespace) pairs whose rules are kept at most; past it they are all dropped."""


class RBACAuthorizer:
    """Allows what a rule bound to the user allows ("RBAC: allowed by ..."); otherwise no
    opinion, the missing roles met on the way as the reason (rbac.go Authorize)."""

    def __init__(self, policy: rbac_rules.Policy) -> None:
        self.policy = policy
        self._kept: dict[tuple[UserInfo, str], list[rbac_rules.Visited]] = {}
        self._kept_at: tuple[int, ...] | None = None
        self._versioned = policy if isinstance(policy, VersionedPolicy) else None

    def _rules(self, user: UserInfo, namespace: str) -> Iterable[rbac_rules.Visited]:
        """visit_rules, kept per user and namespace while a CachePolicy does not change."""
        if self._versioned is None:
            return rbac_rules.visit_rules(self.policy, user, namespace)
        revision = self._versioned.revision
        if revision != self._kept_at or len(self._kept) >= MAX_KEPT:
            self._kept.clear()
            self._kept_at = revision
        key = (user, namespace)
        rules = self._kept.get(key)
        if rules is None:
            rules = self._kept[key] = list(rbac_rules.visit_rules(self.policy, user, namespace))
        return rules

    @classmethod
    def over(cls, caches: Mapping[str, WatchCache]) -> RBACAuthorizer:
        return cls(CachePolicy(caches))

    def authorize(self, attrs: Attributes) -> Decision:
        decision = rbac_rules.decide(self._rules(attrs.user, attrs.namespace), attrs)
        if decision.allowed:
            return Decision(Verdict.ALLOW, decision.reason)
        return Decision(Verdict.NO_OPINION, decision.reason) if decision.reason else NO_OPINION

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        """rbac.go RulesFor: each rule that applies, among the resource rules when it names
        resources and among the non-resource ones when it names URLs; complete, the missing
        roles as the error (the rule resolver's aggregate)."""
        resource: list[types_pb2.PolicyRule] = []
        non_resource: list[types_pb2.PolicyRule] = []
        errors: list[str] = []
        for visited in self._rules(user, namespace):
            if visited.error:
                errors.append(visited.error)
            rule = visited.rule
            if rule is None:
                continue
            if rule.resources:
                resource.append(
                    types_pb2.PolicyRule(
                        verbs=rule.verbs,
                        api_groups=rule.api_groups,
                        resources=rule.resources,
                        resource_names=rule.resource_names,
                    )
                )
            if rule.non_resource_urls:
                non_resource.append(
                    types_pb2.PolicyRule(verbs=rule.verbs, non_resource_urls=rule.non_resource_urls)
                )
        error = errors[0] if len(errors) == 1 else ("[" + ", ".join(errors) + "]" if errors else "")
        return Rules(resource, non_resource, False, error)
