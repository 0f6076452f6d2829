"""Upstream's bootstrap RBAC policy (issue #60 item 3): the ClusterRoles, ClusterRoleBindings,
Roles and RoleBindings the kube-apiserver writes at start (plugin/pkg/auth/authorizer/rbac/
bootstrappolicy: policy.go ClusterRoles/ClusterRoleBindings, controller_policy.go
buildControllerRoles, namespace_policy.go), written as kemu's own builders.

What it is checked against (tests/unit/apiserver/test_bootstrap_policy.py): the testdata/
*.yaml of that package as the search index stores them, cluster-roles.yaml at kubernetes
commit 025f2834 (the newest stored: no DRA rules, which upstream writes only with the
DynamicResourceAllocation gate, default on from 1.34), controller-roles.yaml,
namespace-roles.yaml and namespace-role-bindings.yaml at 008b3652, controller-role-bindings.yaml
at 0158d1b4.

kemu models the newest policy; what differs by the emulated version is keyed where it was
verified:
- the DynamicResourceAllocation gate (a gate of the apiserver, as upstream's
  utilfeature.DefaultFeatureGate checks): system:node's `get resourceclaims`, the
  system:kube-scheduler's resource.k8s.io rules and the resource-claim-controller's role
  (policy.go nodeRules, controller_policy.go);
- the version rule `rbac_self_subject_review` (kemu/component/version_rules.py): system:basic-user
  may create authentication.k8s.io selfsubjectreviews from 1.27 (kubernetes#116274).
Every other role is the newest upstream's at every emulated version (a known gap: older
releases lacked some rules, e.g. leasecandidates in the leader-locking roles before 1.31).

The controllers' roles are those of the controllers kemu's controller-manager runs
(controllermanager/app.py CONTROLLERS), plus clusterrole-aggregation-controller's; upstream
writes one for every controller of kube-controller-manager.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import (
    COMPOSITE_POD_GROUP,
    DRA_DEVICE_TAINT_RULES,
    DRA_EXTENDED_RESOURCE,
    DYNAMIC_RESOURCE_ALLOCATION,
    GENERIC_WORKLOAD,
    FeatureGates,
)
from kemu.component.version_rules import VersionRules
from kemu.machinery.namespaces import NAMESPACE_PUBLIC, NAMESPACE_SYSTEM
from kemu.machinery.rbac import GROUP_KIND, RBAC_GROUP, SERVICE_ACCOUNT_KIND, USER_KIND

AUTOUPDATE_ANNOTATION: Final = "rbac.authorization.kubernetes.io/autoupdate"
"""rbacv1.AutoUpdateAnnotationKey: "false" on an object keeps the reconciler off it."""
BOOTSTRAPPING_LABEL: Final = "kubernetes.io/bootstrapping"
BOOTSTRAPPING_VALUE: Final = "rbac-defaults"
AGGREGATE_TO_ADMIN: Final = "rbac.authorization.k8s.io/aggregate-to-admin"
AGGREGATE_TO_EDIT: Final = "rbac.authorization.k8s.io/aggregate-to-edit"
AGGREGATE_TO_VIEW: Final = "rbac.authorization.k8s.io/aggregate-to-view"
CONTROLLER_ROLE_PREFIX: Final = "system:controller:"
"""controller_policy.go saRolePrefix."""

READ: Final = ("get", "list", "watch")
READ_WRITE: Final = (
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
)
WRITE: Final = ("create", "update", "patch", "delete", "deletecollection")
READ_UPDATE: Final = ("get", "list", "watch", "update", "patch")

LEGACY: Final = ""
APPS: Final = "apps"
AUTHENTICATION: Final = "authentication.k8s.io"
AUTHORIZATION: Final = "authorization.k8s.io"
AUTOSCALING: Final = "autoscaling"
BATCH: Final = "batch"
CERTIFICATES: Final = "certificates.k8s.io"
COORDINATION: Final = "coordination.k8s.io"
DISCOVERY: Final = "discovery.k8s.io"
EVENTS: Final = "events.k8s.io"
EXTENSIONS: Final = "extensions"
NETWORKING: Final = "networking.k8s.io"
POLICY: Final = "policy"
SCHEDULING: Final = "scheduling.k8s.io"
RESOURCE: Final = "resource.k8s.io"
STORAGE: Final = "storage.k8s.io"

SYSTEM_MASTERS: Final = "system:masters"
ALL_AUTHENTICATED: Final = "system:authenticated"
ALL_UNAUTHENTICATED: Final = "system:unauthenticated"
MONITORING_GROUP: Final = "system:monitoring"
ALL_SERVICE_ACCOUNTS: Final = "system:serviceaccounts"
KUBE_PROXY: Final = "system:kube-proxy"
KUBE_CONTROLLER_MANAGER: Final = "system:kube-controller-manager"
KUBE_SCHEDULER: Final = "system:kube-scheduler"


def rule(
    verbs: Iterable[str],
    groups: Iterable[str] = (),
    resources: Iterable[str] = (),
    *,
    names: Iterable[str] = (),
    urls: Iterable[str] = (),
) -> types_pb2.PolicyRule:
    """rbacv1helpers.NewRule(...).Groups(...).Resources(...).RuleOrDie(): every list sorted
    and without duplicates, as upstream's builder leaves it."""
    return types_pb2.PolicyRule(
        verbs=sorted(set(verbs)),
        api_groups=sorted(set(groups)),
        resources=sorted(set(resources)),
        resource_names=sorted(set(names)),
        non_resource_urls=sorted(set(urls)),
    )


def events_rule() -> types_pb2.PolicyRule:
    """policy.go eventsRule: create, update and patch events in both event groups."""
    return rule(("create", "update", "patch"), (LEGACY, EVENTS), ("events",))


def _meta(meta: types_pb2.ObjectMeta, name: str, namespace: str = "") -> None:
    """addDefaultMetadata: the bootstrapping label and the autoupdate annotation."""
    meta.name = name
    if namespace:
        meta.namespace = namespace
    meta.labels[BOOTSTRAPPING_LABEL] = BOOTSTRAPPING_VALUE
    meta.annotations[AUTOUPDATE_ANNOTATION] = "true"


def cluster_role(
    name: str,
    rules: Iterable[types_pb2.PolicyRule] = (),
    *,
    labels: dict[str, str] | None = None,
    aggregate_from: str = "",
) -> types_pb2.ClusterRole:
    role = types_pb2.ClusterRole(rules=list(rules))
    _meta(role.metadata, name)
    role.metadata.labels.update(labels or {})
    if aggregate_from:
        role.aggregation_rule.cluster_role_selectors.add().match_labels[aggregate_from] = "true"
    return role


def role(namespace: str, name: str, rules: Iterable[types_pb2.PolicyRule]) -> types_pb2.Role:
    out = types_pb2.Role(rules=list(rules))
    _meta(out.metadata, name, namespace)
    return out


def user(name: str) -> types_pb2.Subject:
    return types_pb2.Subject(kind=USER_KIND, api_group=RBAC_GROUP, name=name)


def group(name: str) -> types_pb2.Subject:
    return types_pb2.Subject(kind=GROUP_KIND, api_group=RBAC_GROUP, name=name)


def service_account(namespace: str, name: str) -> types_pb2.Subject:
    return types_pb2.Subject(kind=SERVICE_ACCOUNT_KIND, namespace=namespace, name=name)


def cluster_role_binding(
    name: str, *subjects: types_pb2.Subject, role_name: str = ""
) -> types_pb2.ClusterRoleBinding:
    """rbacv1helpers.NewClusterBinding(name): bound to the ClusterRole of the same name."""
    out = types_pb2.ClusterRoleBinding(subjects=list(subjects))
    _meta(out.metadata, name)
    out.role_ref.api_group, out.role_ref.kind = RBAC_GROUP, "ClusterRole"
    out.role_ref.name = role_name or name
    return out


def role_binding(
    namespace: str, name: str, role_name: str, *subjects: types_pb2.Subject
) -> types_pb2.RoleBinding:
    out = types_pb2.RoleBinding(subjects=list(subjects))
    _meta(out.metadata, name, namespace)
    out.role_ref.api_group, out.role_ref.kind, out.role_ref.name = RBAC_GROUP, "Role", role_name
    return out


@dataclass(frozen=True)
class BootstrapPolicy:
    """Everything the reconciler writes, in upstream's order (the hook's: cluster roles,
    cluster role bindings, namespaced roles, namespaced role bindings)."""

    cluster_roles: tuple[types_pb2.ClusterRole, ...]
    cluster_role_bindings: tuple[types_pb2.ClusterRoleBinding, ...]
    roles: tuple[types_pb2.Role, ...]
    role_bindings: tuple[types_pb2.RoleBinding, ...]


def bootstrap_policy(gates: FeatureGates, rules: VersionRules) -> BootstrapPolicy:
    """The policy of an apiserver with these gates at this emulated version: upstream's, then
    kemu's own (`kemu_policy`)."""
    controller_roles, controller_bindings = controller_policy(gates)
    own_roles, own_bindings = kemu_policy()
    return BootstrapPolicy(
        cluster_roles=(*cluster_roles(gates, rules), *controller_roles, *own_roles),
        cluster_role_bindings=(*cluster_role_bindings(), *controller_bindings, *own_bindings),
        roles=namespace_roles(),
        role_bindings=namespace_role_bindings(),
    )


# ---------------------------------------------------------------- policy.go


def _node_rules(gates: FeatureGates) -> list[types_pb2.PolicyRule]:
    """policy.go NodeRules: the kubelet's rights (the Node authorizer narrows them)."""
    out = [
        rule(("create",), (AUTHENTICATION,), ("tokenreviews",)),
        rule(("create",), (AUTHORIZATION,), ("subjectaccessreviews", "localsubjectaccessreviews")),
        rule(READ, (LEGACY,), ("services",)),
        rule(("create", "get", "list", "watch"), (LEGACY,), ("nodes",)),
        rule(("update", "patch"), (LEGACY,), ("nodes/status",)),
        rule(("update", "patch"), (LEGACY,), ("nodes",)),
        rule(("create", "update", "patch"), (LEGACY,), ("events",)),
        rule(READ, (LEGACY,), ("pods",)),
        rule(("create", "delete"), (LEGACY,), ("pods",)),
        rule(("update", "patch"), (LEGACY,), ("pods/status",)),
        rule(("create",), (LEGACY,), ("pods/eviction",)),
        rule(READ, (LEGACY,), ("secrets", "configmaps")),
        rule(("get",), (LEGACY,), ("persistentvolumeclaims", "persistentvolumes")),
        rule(("get",), (LEGACY,), ("endpoints",)),
        rule(("create", "get", "list", "watch"), (CERTIFICATES,), ("certificatesigningrequests",)),
        rule(("get", "create", "update", "patch", "delete"), (COORDINATION,), ("leases",)),
        rule(("get",), (STORAGE,), ("volumeattachments",)),
        rule(("create",), (LEGACY,), ("serviceaccounts/token",)),
        rule(("get", "update", "patch"), (LEGACY,), ("persistentvolumeclaims/status",)),
        rule(READ, (STORAGE,), ("csidrivers",)),
        rule(("get", "create", "update", "patch", "delete"), (STORAGE,), ("csinodes",)),
        rule(READ, ("node.k8s.io",), ("runtimeclasses",)),
    ]
    if gates.enabled(DYNAMIC_RESOURCE_ALLOCATION):
        out.append(rule(("get",), (RESOURCE,), ("resourceclaims",)))
    return out


def _scheduler_rules(gates: FeatureGates) -> list[types_pb2.PolicyRule]:
    out = [
        events_rule(),
        rule(("create",), (COORDINATION,), ("leases",)),
        rule(("get", "update"), (COORDINATION,), ("leases",), names=("kube-scheduler",)),
        rule(READ, (LEGACY,), ("nodes",)),
        rule(("get", "list", "watch", "delete"), (LEGACY,), ("pods",)),
        rule(("create",), (LEGACY,), ("pods/binding", "bindings")),
        rule(("patch", "update"), (LEGACY,), ("pods/status",)),
        rule(READ, (LEGACY,), ("replicationcontrollers", "services")),
        rule(READ, (APPS, EXTENSIONS), ("replicasets",)),
        rule(READ, (APPS,), ("statefulsets",)),
        rule(READ, (POLICY,), ("poddisruptionbudgets",)),
        rule(READ, (LEGACY,), ("persistentvolumeclaims", "persistentvolumes")),
        rule(("create",), (AUTHENTICATION,), ("tokenreviews",)),
        rule(("create",), (AUTHORIZATION,), ("subjectaccessreviews",)),
        rule(READ, (STORAGE,), ("csinodes",)),
        rule(READ, (LEGACY,), ("namespaces",)),
        rule(READ, (STORAGE,), ("csidrivers",)),
        rule(READ, (STORAGE,), ("csistoragecapacities",)),
    ]
    if gates.enabled(DYNAMIC_RESOURCE_ALLOCATION):
        # policy.go: the scheduler reads claims, classes and slices and writes a claim's
        # allocation (status)
        # (the claim's finalizer in a plain update before the status write: dynamicresources.go
        # bindClaim, so resourceclaims are updated too)
        out.append(rule(READ, (RESOURCE,), ("deviceclasses", "resourceslices")))
        out.append(rule(READ_UPDATE, (RESOURCE,), ("resourceclaims", "resourceclaims/status")))
        if gates.enabled(DRA_EXTENDED_RESOURCE):
            # (the special claim of a pod's extended resources backed by devices, created in
            # PreBind and deleted when the binding fails: dynamicresources.go)
            out.append(rule(("create", "delete"), (RESOURCE,), ("resourceclaims",)))
        if gates.enabled(DRA_DEVICE_TAINT_RULES):  # (the DeviceTaintRules DynamicResources reads)
            out.append(rule(READ, (RESOURCE,), ("devicetaintrules",)))
    if gates.enabled(GENERIC_WORKLOAD):  # (the Workloads and PodGroups GangScheduling reads)
        groups: tuple[str, ...] = ("workloads", "podgroups")
        if gates.enabled(COMPOSITE_POD_GROUP):
            groups = (*groups, "compositepodgroups")
        out.append(rule(READ, (SCHEDULING,), groups))
        # (a group's PodGroupScheduled condition, patched through the status subresource:
        # scheduler/schedule_one_podgroup.py)
        statuses = tuple(f"{g}/status" for g in groups if g != "workloads")
        out.append(rule(("get", "patch", "update"), (SCHEDULING,), statuses))
    return out


def _aggregate_to_edit() -> list[types_pb2.PolicyRule]:
    return [
        rule(READ, (LEGACY,), (
            "pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets",
            "services/proxy",
        )),
        rule(("impersonate",), (LEGACY,), ("serviceaccounts",)),
        rule(WRITE, (LEGACY,), ("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward")),
        rule(("create",), (LEGACY,), ("pods/eviction",)),
        rule(WRITE, (LEGACY,), (
            "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
            "services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets",
            "events",
        )),
        rule(("create",), (LEGACY,), ("serviceaccounts/token",)),
        rule(WRITE, (APPS,), (
            "statefulsets", "statefulsets/scale", "daemonsets", "deployments",
            "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale",
        )),
        rule(WRITE, (AUTOSCALING,), ("horizontalpodautoscalers",)),
        rule(WRITE, (BATCH,), ("jobs", "cronjobs")),
        rule(WRITE, (EXTENSIONS,), (
            "daemonsets", "deployments", "deployments/scale", "deployments/rollback",
            "ingresses", "replicasets", "replicasets/scale", "replicationcontrollers/scale",
            "networkpolicies",
        )),
        rule(WRITE, (POLICY,), ("poddisruptionbudgets",)),
        rule(WRITE, (NETWORKING,), ("networkpolicies", "ingresses")),
        rule(READ_WRITE, (COORDINATION,), ("leases",)),
    ]  # fmt: skip


def _aggregate_to_view() -> list[types_pb2.PolicyRule]:
    return [
        rule(READ, (LEGACY,), (
            "pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
            "services", "services/status", "endpoints", "persistentvolumeclaims",
            "persistentvolumeclaims/status", "configmaps",
        )),
        rule(READ, (LEGACY,), (
            "limitranges", "resourcequotas", "bindings", "events", "pods/status",
            "resourcequotas/status", "namespaces/status", "replicationcontrollers/status",
            "pods/log",
        )),
        rule(READ, (LEGACY,), ("namespaces",)),
        rule(READ, (DISCOVERY,), ("endpointslices",)),
        rule(READ, (APPS,), (
            "controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale",
            "daemonsets", "daemonsets/status", "deployments", "deployments/status",
            "deployments/scale", "replicasets", "replicasets/status", "replicasets/scale",
        )),
        rule(READ, (AUTOSCALING,), ("horizontalpodautoscalers", "horizontalpodautoscalers/status")),
        rule(READ, (BATCH,), ("jobs", "cronjobs", "cronjobs/status", "jobs/status")),
        rule(READ, (EXTENSIONS,), (
            "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
            "deployments/status", "ingresses", "ingresses/status", "replicasets",
            "replicasets/scale", "replicasets/status", "replicationcontrollers/scale",
            "networkpolicies",
        )),
        rule(READ, (POLICY,), ("poddisruptionbudgets", "poddisruptionbudgets/status")),
        rule(READ, (NETWORKING,), ("networkpolicies", "ingresses", "ingresses/status")),
    ]  # fmt: skip


def _approver(name: str, signer: str) -> types_pb2.ClusterRole:
    return cluster_role(
        f"system:certificates.k8s.io:{name}",
        [rule(("approve",), (CERTIFICATES,), ("signers",), names=(signer,))],
    )


def node_rules(gates: FeatureGates) -> list[types_pb2.PolicyRule]:
    """The system:node ClusterRole's rules (policy.go NodeRules): the Node authorizer's static
    rules."""
    return _node_rules(gates)


def cluster_roles(gates: FeatureGates, rules: VersionRules) -> list[types_pb2.ClusterRole]:
    """policy.go ClusterRoles, sorted by name as upstream's testdata lists them."""
    basic_user = [
        rule(("create",), (AUTHORIZATION,), ("selfsubjectaccessreviews", "selfsubjectrulesreviews"))
    ]
    if rules.rbac_self_subject_review:
        basic_user.append(rule(("create",), (AUTHENTICATION,), ("selfsubjectreviews",)))
    out = [
        cluster_role("cluster-admin", [
            rule(("*",), ("*",), ("*",)),
            rule(("*",), urls=("*",)),
        ]),
        cluster_role("system:discovery", [rule(("get",), urls=(
            "/healthz", "/livez", "/readyz", "/version", "/version/",
            "/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*",
        ))]),
        cluster_role("system:monitoring", [rule(("get",), urls=(
            "/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz",
            "/livez/*", "/readyz/*", "/healthz/*",
        ))]),
        cluster_role("system:basic-user", basic_user),
        cluster_role("system:public-info-viewer", [rule(("get",), urls=(
            "/healthz", "/livez", "/readyz", "/version", "/version/",
        ))]),
        cluster_role("admin", aggregate_from=AGGREGATE_TO_ADMIN),
        cluster_role("edit", labels={AGGREGATE_TO_ADMIN: "true"}, aggregate_from=AGGREGATE_TO_EDIT),
        cluster_role("view", labels={AGGREGATE_TO_EDIT: "true"}, aggregate_from=AGGREGATE_TO_VIEW),
        cluster_role("system:aggregate-to-admin", [
            rule(("create",), (AUTHORIZATION,), ("localsubjectaccessreviews",)),
            rule(READ_WRITE, (RBAC_GROUP,), ("roles", "rolebindings")),
        ], labels={AGGREGATE_TO_ADMIN: "true"}),
        cluster_role("system:aggregate-to-edit", _aggregate_to_edit(),
                     labels={AGGREGATE_TO_EDIT: "true"}),
        cluster_role("system:aggregate-to-view", _aggregate_to_view(),
                     labels={AGGREGATE_TO_VIEW: "true"}),
        cluster_role("system:heapster", [
            rule(READ, (LEGACY,), ("events", "pods", "nodes", "namespaces")),
            rule(READ, (EXTENSIONS,), ("deployments",)),
        ]),
        cluster_role("system:node", _node_rules(gates)),
        cluster_role("system:node-problem-detector", [
            rule(("get",), (LEGACY,), ("nodes",)),
            rule(("patch",), (LEGACY,), ("nodes/status",)),
            events_rule(),
        ]),
        cluster_role("system:node-proxier", [
            rule(("list", "watch"), (LEGACY,), ("services", "endpoints")),
            rule(READ, (LEGACY,), ("nodes",)),
            events_rule(),
            rule(("list", "watch"), (DISCOVERY,), ("endpointslices",)),
        ]),
        cluster_role("system:kubelet-api-admin", [
            rule(READ, (LEGACY,), ("nodes",)),
            rule(("proxy",), (LEGACY,), ("nodes",)),
            rule(("*",), (LEGACY,), ("nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log")),
        ]),
        cluster_role("system:node-bootstrapper", [
            rule(("create", "get", "list", "watch"), (CERTIFICATES,), ("certificatesigningrequests",)),
        ]),
        cluster_role("system:auth-delegator", [
            rule(("create",), (AUTHENTICATION,), ("tokenreviews",)),
            rule(("create",), (AUTHORIZATION,), ("subjectaccessreviews",)),
        ]),
        cluster_role("system:kube-aggregator", [
            rule(READ, (LEGACY,), ("services", "endpoints")),
        ]),
        cluster_role("system:kube-controller-manager", [
            events_rule(),
            rule(("create",), (COORDINATION,), ("leases",)),
            rule(("get", "update"), (COORDINATION,), ("leases",), names=("kube-controller-manager",)),
            rule(("create",), (LEGACY,), ("secrets", "serviceaccounts")),
            rule(("delete",), (LEGACY,), ("secrets",)),
            rule(("get",), (LEGACY,), ("namespaces", "secrets", "serviceaccounts", "configmaps")),
            rule(("update",), (LEGACY,), ("secrets", "serviceaccounts")),
            rule(("create",), (AUTHENTICATION,), ("tokenreviews",)),
            rule(("create",), (AUTHORIZATION,), ("subjectaccessreviews",)),
            rule(("list", "watch"), ("*",), ("*",)),
            rule(("create",), (LEGACY,), ("serviceaccounts/token",)),
        ]),
        cluster_role("system:kube-dns", [
            rule(("list", "watch"), (LEGACY,), ("endpoints", "services")),
        ]),
        cluster_role("system:persistent-volume-provisioner", [
            rule(("get", "list", "watch", "create", "delete"), (LEGACY,), ("persistentvolumes",)),
            rule(("get", "list", "watch", "update"), (LEGACY,), ("persistentvolumeclaims",)),
            rule(READ, (STORAGE,), ("storageclasses",)),
            rule(("watch",), (LEGACY,), ("events",)),
            events_rule(),
        ]),
        _approver("kube-apiserver-client-approver", "kubernetes.io/kube-apiserver-client"),
        _approver(
            "kube-apiserver-client-kubelet-approver", "kubernetes.io/kube-apiserver-client-kubelet"
        ),
        _approver("kubelet-serving-approver", "kubernetes.io/kubelet-serving"),
        _approver("legacy-unknown-approver", "kubernetes.io/legacy-unknown"),
        cluster_role("system:certificates.k8s.io:certificatesigningrequests:nodeclient", [
            rule(("create",), (CERTIFICATES,), ("certificatesigningrequests/nodeclient",)),
        ]),
        cluster_role("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", [
            rule(("create",), (CERTIFICATES,), ("certificatesigningrequests/selfnodeclient",)),
        ]),
        cluster_role("system:volume-scheduler", [
            rule(READ_UPDATE, (LEGACY,), ("persistentvolumes",)),
            rule(READ, (STORAGE,), ("storageclasses",)),
            rule(READ_UPDATE, (LEGACY,), ("persistentvolumeclaims",)),
        ]),
        cluster_role("system:service-account-issuer-discovery", [
            rule(("get",), urls=("/.well-known/openid-configuration", "/openid/v1/jwks")),
        ]),
        cluster_role("system:kube-scheduler", _scheduler_rules(gates)),
    ]  # fmt: skip
    return sorted(out, key=lambda r: r.metadata.name)


def cluster_role_bindings() -> list[types_pb2.ClusterRoleBinding]:
    """policy.go ClusterRoleBindings. system:node's binding has no subjects: the group
    system:nodes left it in 1.8, for the Node authorizer (the reconciler never removes a
    subject, so a cluster upgraded from 1.7 keeps it)."""
    out = [
        cluster_role_binding("cluster-admin", group(SYSTEM_MASTERS)),
        cluster_role_binding("system:monitoring", group(MONITORING_GROUP)),
        cluster_role_binding("system:discovery", group(ALL_AUTHENTICATED)),
        cluster_role_binding("system:basic-user", group(ALL_AUTHENTICATED)),
        cluster_role_binding(
            "system:public-info-viewer", group(ALL_AUTHENTICATED), group(ALL_UNAUTHENTICATED)
        ),
        cluster_role_binding("system:node-proxier", user(KUBE_PROXY)),
        cluster_role_binding("system:kube-controller-manager", user(KUBE_CONTROLLER_MANAGER)),
        cluster_role_binding("system:kube-dns", service_account(NAMESPACE_SYSTEM, "kube-dns")),
        cluster_role_binding("system:kube-scheduler", user(KUBE_SCHEDULER)),
        cluster_role_binding("system:volume-scheduler", user(KUBE_SCHEDULER)),
        cluster_role_binding("system:node"),
        cluster_role_binding(
            "system:service-account-issuer-discovery", group(ALL_SERVICE_ACCOUNTS)
        ),
    ]
    return sorted(out, key=lambda b: b.metadata.name)


# ---------------------------------------------------------------- controller_policy.go


def _controller_roles(gates: FeatureGates) -> list[types_pb2.ClusterRole]:
    """buildControllerRoles, for kemu's controllers; each named system:controller:<its
    service account>."""
    ev = events_rule()
    roles: list[tuple[str, list[types_pb2.PolicyRule]]] = [
        ("clusterrole-aggregation-controller", [
            rule(("escalate", "get", "list", "watch", "update", "patch"), (RBAC_GROUP,),
                 ("clusterroles",)),
        ]),
        ("cronjob-controller", [
            rule(("get", "list", "watch", "update"), (BATCH,), ("cronjobs",)),
            rule(("get", "list", "watch", "create", "update", "delete", "patch"), (BATCH,),
                 ("jobs",)),
            rule(("update",), (BATCH,), ("cronjobs/status",)),
            rule(("update",), (BATCH,), ("cronjobs/finalizers",)),
            rule(("list", "watch", "delete"), (LEGACY,), ("pods",)),
            ev,
        ]),
        ("daemon-set-controller", [
            rule(READ, (EXTENSIONS, APPS), ("daemonsets",)),
            rule(("update",), (EXTENSIONS, APPS), ("daemonsets/status",)),
            rule(("update",), (EXTENSIONS, APPS), ("daemonsets/finalizers",)),
            rule(("list", "watch"), (LEGACY,), ("nodes",)),
            rule(("list", "watch", "create", "delete", "patch"), (LEGACY,), ("pods",)),
            rule(("create",), (LEGACY,), ("pods/binding",)),
            rule(("get", "list", "watch", "create", "delete", "update", "patch"), (APPS,),
                 ("controllerrevisions",)),
            ev,
        ]),
        ("deployment-controller", [
            rule(("get", "list", "watch", "update"), (EXTENSIONS, APPS), ("deployments",)),
            rule(("update",), (EXTENSIONS, APPS), ("deployments/status",)),
            rule(("update",), (EXTENSIONS, APPS), ("deployments/finalizers",)),
            rule(("get", "list", "watch", "create", "update", "patch", "delete"),
                 (EXTENSIONS, APPS), ("replicasets",)),
            rule(("get", "list", "watch", "update"), (LEGACY,), ("pods",)),
            ev,
        ]),
        ("disruption-controller", [
            rule(READ, (EXTENSIONS, APPS), ("deployments",)),
            rule(READ, (APPS, EXTENSIONS), ("replicasets",)),
            rule(READ, (LEGACY,), ("replicationcontrollers",)),
            rule(READ, (POLICY,), ("poddisruptionbudgets",)),
            rule(READ, (APPS,), ("statefulsets",)),
            rule(("update",), (POLICY,), ("poddisruptionbudgets/status",)),
            rule(("patch", "update"), (LEGACY,), ("pods/status",)),
            rule(("get",), ("*",), ("*/scale",)),
            ev,
        ]),
        ("endpoint-controller", [
            rule(READ, (LEGACY,), ("services", "pods")),
            rule(("get", "list", "create", "update", "delete", "watch"), (LEGACY,), ("endpoints",)),
            rule(("create",), (LEGACY,), ("endpoints/restricted",)),
            ev,
        ]),
        ("endpointslice-controller", [
            rule(READ, (LEGACY,), ("services", "pods", "nodes")),
            rule(("update",), (LEGACY,), ("services/finalizers",)),
            rule(("get", "list", "create", "update", "delete", "watch"), (DISCOVERY,),
                 ("endpointslices",)),
            ev,
        ]),
        ("generic-garbage-collector", [
            rule(("get", "list", "watch", "patch", "update", "delete"), ("*",), ("*",)),
            ev,
        ]),
        ("horizontal-pod-autoscaler", [
            rule(READ, (AUTOSCALING,), ("horizontalpodautoscalers",)),
            rule(("update",), (AUTOSCALING,), ("horizontalpodautoscalers/status",)),
            rule(("get", "update"), ("*",), ("*/scale",)),
            rule(("list", "watch"), (LEGACY,), ("pods",)),
            rule(("list", "watch"), ("metrics.k8s.io",), ("pods",)),
            rule(READ, ("custom.metrics.k8s.io",), ("*",)),
            rule(READ, ("external.metrics.k8s.io",), ("*",)),
            ev,
        ]),
        ("job-controller", [
            rule(("get", "list", "watch", "update", "patch"), (BATCH,), ("jobs",)),
            rule(("update",), (BATCH,), ("jobs/status",)),
            rule(("update",), (BATCH,), ("jobs/finalizers",)),
            rule(("list", "watch", "create", "delete", "patch"), (LEGACY,), ("pods",)),
            ev,
        ]),
        ("namespace-controller", [
            rule(("get", "list", "watch", "delete"), (LEGACY,), ("namespaces",)),
            rule(("update",), (LEGACY,), ("namespaces/finalize", "namespaces/status")),
            rule(("get", "list", "watch", "delete", "deletecollection"), ("*",), ("*",)),
        ]),
        ("node-controller", [
            rule(("get", "list", "update", "delete", "patch", "watch"), (LEGACY,), ("nodes",)),
            rule(("patch", "update"), (LEGACY,), ("nodes/status",)),
            rule(("patch", "update"), (LEGACY,), ("pods/status",)),
            rule(("list", "watch", "delete", "get"), (LEGACY,), ("pods",)),
            ev,
        ]),
        ("persistent-volume-binder", [
            rule(("get", "list", "watch", "update", "create", "delete"), (LEGACY,),
                 ("persistentvolumes",)),
            rule(("update",), (LEGACY,), ("persistentvolumes/status",)),
            rule(("get", "list", "watch", "update"), (LEGACY,), ("persistentvolumeclaims",)),
            rule(("update",), (LEGACY,), ("persistentvolumeclaims/status",)),
            rule(("list", "watch", "get", "create", "delete"), (LEGACY,), ("pods",)),
            rule(READ, (STORAGE,), ("storageclasses",)),
            rule(("list", "watch"), (LEGACY,), ("nodes",)),
            ev,
            rule(("watch",), (LEGACY,), ("events",)),
        ]),
        ("pod-garbage-collector", [
            rule(("list", "watch", "delete"), (LEGACY,), ("pods",)),
            rule(READ, (LEGACY,), ("nodes",)),
            rule(("patch",), (LEGACY,), ("pods/status",)),
        ]),
        ("pv-protection-controller", [
            rule(("get", "list", "watch", "update"), (LEGACY,), ("persistentvolumes",)),
            ev,
        ]),
        ("pvc-protection-controller", [
            rule(("get", "list", "watch", "update"), (LEGACY,), ("persistentvolumeclaims",)),
            rule(("update",), (LEGACY,), ("persistentvolumeclaims/status",)),
            rule(READ, (LEGACY,), ("pods",)),
            ev,
        ]),
        ("replicaset-controller", [
            rule(("get", "list", "watch", "update"), (APPS, EXTENSIONS), ("replicasets",)),
            rule(("update",), (APPS, EXTENSIONS), ("replicasets/status",)),
            rule(("update",), (APPS, EXTENSIONS), ("replicasets/finalizers",)),
            rule(("list", "watch", "patch", "create", "delete"), (LEGACY,), ("pods",)),
            ev,
        ]),
        ("replication-controller", [
            rule(("get", "list", "watch", "update"), (LEGACY,), ("replicationcontrollers",)),
            rule(("update",), (LEGACY,), ("replicationcontrollers/status",)),
            rule(("update",), (LEGACY,), ("replicationcontrollers/finalizers",)),
            rule(("list", "watch", "patch", "create", "delete"), (LEGACY,), ("pods",)),
            ev,
        ]),
        ("resourcequota-controller", [
            rule(("list", "watch"), ("*",), ("*",)),
            rule(("update",), (LEGACY,), ("resourcequotas/status",)),
            ev,
        ]),
        ("root-ca-cert-publisher", [
            rule(("create", "update"), (LEGACY,), ("configmaps",)),
            ev,
        ]),
        ("service-account-controller", [
            rule(("create",), (LEGACY,), ("serviceaccounts",)),
            ev,
        ]),
        ("statefulset-controller", [
            rule(("list", "watch"), (LEGACY,), ("pods",)),
            rule(READ, (APPS,), ("statefulsets",)),
            rule(("update",), (APPS,), ("statefulsets/status",)),
            rule(("update",), (APPS,), ("statefulsets/finalizers",)),
            rule(("get", "create", "delete", "update", "patch"), (LEGACY,), ("pods",)),
            rule(("get", "create", "delete", "update", "patch", "list", "watch"), (APPS,),
                 ("controllerrevisions",)),
            rule(("get", "create", "list", "watch"), (LEGACY,), ("persistentvolumeclaims",)),
            rule(("update", "delete"), (LEGACY,), ("persistentvolumeclaims",)),
            rule(("update",), (LEGACY,), ("pods/finalizers",)),
            ev,
        ]),
    ]  # fmt: skip
    if gates.enabled(GENERIC_WORKLOAD):
        # (its finalizer on PodGroups, removed once no pod of the group is left:
        # controllermanager/podgroup_protection.py)
        roles.append(("podgroup-protection-controller", [
            rule(("get", "list", "watch", "update", "patch"), (SCHEDULING,), ("podgroups",)),
            rule(("list", "watch"), (LEGACY,), ("pods",)),
            ev,
        ]))  # fmt: skip
    if gates.enabled(DYNAMIC_RESOURCE_ALLOCATION):
        roles.append(("resource-claim-controller", [
            rule(READ, (LEGACY,), ("pods",)),
            rule(("update",), (LEGACY,), ("pods/finalizers",)),
            rule(("get", "list", "watch", "create", "delete"), (RESOURCE,), ("resourceclaims",)),
            rule(("update", "patch"), (RESOURCE,), ("resourceclaims", "resourceclaims/status")),
            rule(("update", "patch"), (LEGACY,), ("pods/status",)),
            ev,
            rule(("update", "patch"), (RESOURCE,), ("resourceclaims/binding",)),
        ]))  # fmt: skip
    return [cluster_role(CONTROLLER_ROLE_PREFIX + name, rules) for name, rules in roles]


def controller_policy(
    gates: FeatureGates,
) -> tuple[list[types_pb2.ClusterRole], list[types_pb2.ClusterRoleBinding]]:
    """addControllerRole: each role, and its binding to the controller's service account in
    kube-system (kube-controller-manager's --use-service-account-credentials)."""
    roles = sorted(_controller_roles(gates), key=lambda r: r.metadata.name)
    bindings = [
        cluster_role_binding(
            r.metadata.name,
            service_account(NAMESPACE_SYSTEM, r.metadata.name.removeprefix(CONTROLLER_ROLE_PREFIX)),
        )
        for r in roles
    ]
    return roles, bindings


# ---------------------------------------------------------------- kemu's own

KEMU_PREFIX: Final = "kemu:"
CLUSTER_CLOCK_PATH: Final = "/clock"
"""The cluster clock's non-resource path (apiserver/endpoints/inflight.py: the Clock service's
calls are authorized as GET or PUT of it)."""


def kemu_policy() -> tuple[list[types_pb2.ClusterRole], list[types_pb2.ClusterRoleBinding]]:
    """What kemu's own parts need under RBAC, named kemu:...: `kemu:cluster-clock`, reading the
    cluster clock and holding a clock session (every component does in virtual time; moving
    the clock, a PUT, is cluster-admin's), for every authenticated user; and
    `kemu:simulated-csi-provisioner` for the controller-manager's simulated provisioner
    (controllermanager/simulated_provisioner.py, which stands in for an external provisioner:
    the rules of the external-provisioner-runner ClusterRole kubernetes-csi's deployments bind
    its ServiceAccount to), bound to its kube-system ServiceAccount."""
    clock = cluster_role(f"{KEMU_PREFIX}cluster-clock", [
        rule(("get",), urls=(CLUSTER_CLOCK_PATH,)),
    ])  # fmt: skip
    provisioner = cluster_role(f"{KEMU_PREFIX}simulated-csi-provisioner", [
        rule(("get", "list", "watch", "create", "delete", "patch"), (LEGACY,),
             ("persistentvolumes",)),
        rule(("get", "list", "watch", "update", "patch"), (LEGACY,), ("persistentvolumeclaims",)),
        rule(READ, (STORAGE,), ("storageclasses", "csinodes")),
        rule(READ, (LEGACY,), ("nodes",)),
        rule(("list", "watch", "create", "update", "patch"), (LEGACY,), ("events",)),
        events_rule(),
    ])  # fmt: skip
    return [clock, provisioner], [
        cluster_role_binding(clock.metadata.name, group(ALL_AUTHENTICATED)),
        cluster_role_binding(
            provisioner.metadata.name,
            service_account(NAMESPACE_SYSTEM, "simulated-csi-provisioner"),
        ),
    ]


# ---------------------------------------------------------------- namespace_policy.go

_LEADER_LOCKING: Final = (
    rule(("watch", "get", "list", "create", "update"), (COORDINATION,), ("leases",)),
    rule(("watch", "get", "list", "create", "update"), (COORDINATION,), ("leasecandidates",)),
)


def namespace_roles() -> tuple[types_pb2.Role, ...]:
    """NamespaceRoles: kube-system's and kube-public's."""
    return (
        role(NAMESPACE_SYSTEM, "extension-apiserver-authentication-reader", [
            rule(READ, (LEGACY,), ("configmaps",),
                 names=("extension-apiserver-authentication",)),
        ]),
        role(NAMESPACE_SYSTEM, "system::leader-locking-kube-controller-manager", _LEADER_LOCKING),
        role(NAMESPACE_SYSTEM, "system::leader-locking-kube-scheduler", _LEADER_LOCKING),
        role(NAMESPACE_SYSTEM, "system:controller:bootstrap-signer", [
            rule(READ, (LEGACY,), ("secrets",)),
        ]),
        role(NAMESPACE_SYSTEM, "system:controller:cloud-provider", [
            rule(("create", "get", "list", "watch"), (LEGACY,), ("configmaps",)),
        ]),
        role(NAMESPACE_SYSTEM, "system:controller:token-cleaner", [
            rule(("delete", "get", "list", "watch"), (LEGACY,), ("secrets",)),
            events_rule(),
        ]),
        role(NAMESPACE_PUBLIC, "system:controller:bootstrap-signer", [
            rule(READ, (LEGACY,), ("configmaps",)),
            rule(("update",), (LEGACY,), ("configmaps",), names=("cluster-info",)),
            events_rule(),
        ]),
    )  # fmt: skip


def namespace_role_bindings() -> tuple[types_pb2.RoleBinding, ...]:
    """NamespaceRoleBindings."""
    system = NAMESPACE_SYSTEM
    return (
        role_binding(
            system, "system::extension-apiserver-authentication-reader",
            "extension-apiserver-authentication-reader",
            user(KUBE_CONTROLLER_MANAGER), user(KUBE_SCHEDULER),
        ),
        role_binding(
            system, "system::leader-locking-kube-controller-manager",
            "system::leader-locking-kube-controller-manager",
            user(KUBE_CONTROLLER_MANAGER),
            service_account(system, "kube-controller-manager"),
            service_account(system, "leader-election-controller"),
        ),
        role_binding(
            system, "system::leader-locking-kube-scheduler",
            "system::leader-locking-kube-scheduler",
            user(KUBE_SCHEDULER), service_account(system, "kube-scheduler"),
        ),
        role_binding(
            system, "system:controller:bootstrap-signer", "system:controller:bootstrap-signer",
            service_account(system, "bootstrap-signer"),
        ),
        role_binding(
            system, "system:controller:cloud-provider", "system:controller:cloud-provider",
            service_account(system, "cloud-provider"),
        ),
        role_binding(
            system, "system:controller:token-cleaner", "system:controller:token-cleaner",
            service_account(system, "token-cleaner"),
        ),
        role_binding(
            NAMESPACE_PUBLIC, "system:controller:bootstrap-signer",
            "system:controller:bootstrap-signer",
            service_account(system, "bootstrap-signer"),
        ),
    )  # fmt: skip
