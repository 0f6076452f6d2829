"""kemu's bootstrap RBAC policy against upstream's expected output
(plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/*.yaml of kubernetes/kubernetes).

Those files carry no licence header, so they are not stored here: the expectations below are
counts, names and rules read from them, written as `verbs|groups|resources|names` (each list
sorted and comma-joined, as upstream's builder sorts them; `url:` for non-resource URLs):
cluster-roles.yaml at commit 025f2834 (the newest stored; upstream writes its DRA rules only
with the DynamicResourceAllocation gate, so it is compared at 1.33 where the gate is off by
default), controller-roles.yaml, namespace-roles.yaml, namespace-role-bindings.yaml at
008b3652, controller-role-bindings.yaml at 0158d1b4."""

from __future__ import annotations

import pytest

from apiserver.authorization.bootstrap_policy import (
    AUTOUPDATE_ANNOTATION,
    BOOTSTRAPPING_LABEL,
    KEMU_PREFIX,
    BootstrapPolicy,
    bootstrap_policy,
)
from kemu.api.v1 import types_pb2
from kemu.component.featuregate import FeatureGates
from kemu.component.version import Version
from kemu.component.version_rules import VersionRules


def _policy(minor: int) -> BootstrapPolicy:
    version = Version(1, minor)
    return bootstrap_policy(FeatureGates.for_version(version), VersionRules.at(version))


def _text(rule: types_pb2.PolicyRule) -> str:
    verbs = ",".join(rule.verbs)
    if rule.non_resource_urls:
        return f"{verbs}|url:{','.join(rule.non_resource_urls)}"
    out = f"{verbs}|{','.join(rule.api_groups)}|{','.join(rule.resources)}"
    return out + (f"|{','.join(rule.resource_names)}" if rule.resource_names else "")


def _rules(roles: object, name: str, namespace: str = "") -> list[str]:
    for r in roles:  # type: ignore[attr-defined]
        if r.metadata.name == name and r.metadata.namespace == namespace:
            return [_text(x) for x in r.rules]
    raise AssertionError(f"no role {namespace}/{name}")


EV = "create,patch,update|,events.k8s.io|events"
READ = "get,list,watch"
WRITE = "create,delete,deletecollection,patch,update"

UPSTREAM_CLUSTER_ROLES = [
    "admin",
    "cluster-admin",
    "edit",
    "system:aggregate-to-admin",
    "system:aggregate-to-edit",
    "system:aggregate-to-view",
    "system:auth-delegator",
    "system:basic-user",
    "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
    "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
    "system:certificates.k8s.io:kube-apiserver-client-approver",
    "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
    "system:certificates.k8s.io:kubelet-serving-approver",
    "system:certificates.k8s.io:legacy-unknown-approver",
    "system:discovery",
    "system:heapster",
    "system:kube-aggregator",
    "system:kube-controller-manager",
    "system:kube-dns",
    "system:kube-scheduler",
    "system:kubelet-api-admin",
    "system:monitoring",
    "system:node",
    "system:node-bootstrapper",
    "system:node-problem-detector",
    "system:node-proxier",
    "system:persistent-volume-provisioner",
    "system:public-info-viewer",
    "system:service-account-issuer-discovery",
    "system:volume-scheduler",
    "view",
]
"""cluster-roles.yaml's 31 items, in its order."""

UPSTREAM_CLUSTER_ROLE_RULES = {
    "cluster-admin": ["*|*|*", "*|url:*"],
    "system:discovery": [
        "get|url:/api,/api/*,/apis,/apis/*,/healthz,/livez,/openapi,/openapi/*,/readyz,"
        "/version,/version/"
    ],
    "system:monitoring": [
        "get|url:/healthz,/healthz/*,/livez,/livez/*,/metrics,/metrics/slis,/readyz,/readyz/*"
    ],
    "system:public-info-viewer": ["get|url:/healthz,/livez,/readyz,/version,/version/"],
    "system:basic-user": [
        "create|authorization.k8s.io|selfsubjectaccessreviews,selfsubjectrulesreviews",
        "create|authentication.k8s.io|selfsubjectreviews",
    ],
    "system:aggregate-to-admin": [
        "create|authorization.k8s.io|localsubjectaccessreviews",
        "create,delete,deletecollection,get,list,patch,update,watch|rbac.authorization.k8s.io|"
        "rolebindings,roles",
    ],
    "system:aggregate-to-edit": [
        f"{READ}||pods/attach,pods/exec,pods/portforward,pods/proxy,secrets,services/proxy",
        "impersonate||serviceaccounts",
        f"{WRITE}||pods,pods/attach,pods/exec,pods/portforward,pods/proxy",
        "create||pods/eviction",
        f"{WRITE}||configmaps,events,persistentvolumeclaims,replicationcontrollers,"
        "replicationcontrollers/scale,secrets,serviceaccounts,services,services/proxy",
        "create||serviceaccounts/token",
        f"{WRITE}|apps|daemonsets,deployments,deployments/rollback,deployments/scale,"
        "replicasets,replicasets/scale,statefulsets,statefulsets/scale",
        f"{WRITE}|autoscaling|horizontalpodautoscalers",
        f"{WRITE}|batch|cronjobs,jobs",
        f"{WRITE}|extensions|daemonsets,deployments,deployments/rollback,deployments/scale,"
        "ingresses,networkpolicies,replicasets,replicasets/scale,replicationcontrollers/scale",
        f"{WRITE}|policy|poddisruptionbudgets",
        f"{WRITE}|networking.k8s.io|ingresses,networkpolicies",
        "create,delete,deletecollection,get,list,patch,update,watch|coordination.k8s.io|leases",
    ],
    "system:aggregate-to-view": [
        f"{READ}||configmaps,endpoints,persistentvolumeclaims,persistentvolumeclaims/status,pods,"
        "replicationcontrollers,replicationcontrollers/scale,serviceaccounts,services,"
        "services/status",
        f"{READ}||bindings,events,limitranges,namespaces/status,pods/log,pods/status,"
        "replicationcontrollers/status,resourcequotas,resourcequotas/status",
        f"{READ}||namespaces",
        f"{READ}|discovery.k8s.io|endpointslices",
        f"{READ}|apps|controllerrevisions,daemonsets,daemonsets/status,deployments,"
        "deployments/scale,deployments/status,replicasets,replicasets/scale,replicasets/status,"
        "statefulsets,statefulsets/scale,statefulsets/status",
        f"{READ}|autoscaling|horizontalpodautoscalers,horizontalpodautoscalers/status",
        f"{READ}|batch|cronjobs,cronjobs/status,jobs,jobs/status",
        f"{READ}|extensions|daemonsets,daemonsets/status,deployments,deployments/scale,"
        "deployments/status,ingresses,ingresses/status,networkpolicies,replicasets,"
        "replicasets/scale,replicasets/status,replicationcontrollers/scale",
        f"{READ}|policy|poddisruptionbudgets,poddisruptionbudgets/status",
        f"{READ}|networking.k8s.io|ingresses,ingresses/status,networkpolicies",
    ],
    "system:kube-controller-manager": [
        EV,
        "create|coordination.k8s.io|leases",
        "get,update|coordination.k8s.io|leases|kube-controller-manager",
        "create||secrets,serviceaccounts",
        "delete||secrets",
        "get||configmaps,namespaces,secrets,serviceaccounts",
        "update||secrets,serviceaccounts",
        "create|authentication.k8s.io|tokenreviews",
        "create|authorization.k8s.io|subjectaccessreviews",
        "list,watch|*|*",
        "create||serviceaccounts/token",
    ],
    "system:kube-scheduler": [
        EV,
        "create|coordination.k8s.io|leases",
        "get,update|coordination.k8s.io|leases|kube-scheduler",
        f"{READ}||nodes",
        "delete,get,list,watch||pods",
        "create||bindings,pods/binding",
        "patch,update||pods/status",
        f"{READ}||replicationcontrollers,services",
        f"{READ}|apps,extensions|replicasets",
        f"{READ}|apps|statefulsets",
        f"{READ}|policy|poddisruptionbudgets",
        f"{READ}||persistentvolumeclaims,persistentvolumes",
        "create|authentication.k8s.io|tokenreviews",
        "create|authorization.k8s.io|subjectaccessreviews",
        f"{READ}|storage.k8s.io|csinodes",
        f"{READ}||namespaces",
        f"{READ}|storage.k8s.io|csidrivers",
        f"{READ}|storage.k8s.io|csistoragecapacities",
    ],
    "system:node": [
        "create|authentication.k8s.io|tokenreviews",
        "create|authorization.k8s.io|localsubjectaccessreviews,subjectaccessreviews",
        f"{READ}||services",
        "create,get,list,watch||nodes",
        "patch,update||nodes/status",
        "patch,update||nodes",
        "create,patch,update||events",
        f"{READ}||pods",
        "create,delete||pods",
        "patch,update||pods/status",
        "create||pods/eviction",
        f"{READ}||configmaps,secrets",
        "get||persistentvolumeclaims,persistentvolumes",
        "get||endpoints",
        "create,get,list,watch|certificates.k8s.io|certificatesigningrequests",
        "create,delete,get,patch,update|coordination.k8s.io|leases",
        "get|storage.k8s.io|volumeattachments",
        "create||serviceaccounts/token",
        "get,patch,update||persistentvolumeclaims/status",
        f"{READ}|storage.k8s.io|csidrivers",
        "create,delete,get,patch,update|storage.k8s.io|csinodes",
        f"{READ}|node.k8s.io|runtimeclasses",
    ],
    "system:node-proxier": [
        "list,watch||endpoints,services",
        f"{READ}||nodes",
        EV,
        "list,watch|discovery.k8s.io|endpointslices",
    ],
    "system:volume-scheduler": [
        "get,list,patch,update,watch||persistentvolumes",
        f"{READ}|storage.k8s.io|storageclasses",
        "get,list,patch,update,watch||persistentvolumeclaims",
    ],
    "system:kubelet-api-admin": [
        f"{READ}||nodes",
        "proxy||nodes",
        "*||nodes/log,nodes/metrics,nodes/proxy,nodes/stats",
    ],
    "system:certificates.k8s.io:kubelet-serving-approver": [
        "approve|certificates.k8s.io|signers|kubernetes.io/kubelet-serving"
    ],
    "system:persistent-volume-provisioner": [
        "create,delete,get,list,watch||persistentvolumes",
        "get,list,update,watch||persistentvolumeclaims",
        f"{READ}|storage.k8s.io|storageclasses",
        "watch||events",
        EV,
    ],
}

UPSTREAM_CONTROLLER_ROLES = [
    "attachdetach-controller",
    "certificate-controller",
    "clusterrole-aggregation-controller",
    "cronjob-controller",
    "daemon-set-controller",
    "deployment-controller",
    "device-taint-eviction-controller",
    "disruption-controller",
    "endpoint-controller",
    "endpointslice-controller",
    "endpointslicemirroring-controller",
    "ephemeral-volume-controller",
    "expand-controller",
    "generic-garbage-collector",
    "horizontal-pod-autoscaler",
    "job-controller",
    "legacy-service-account-token-cleaner",
    "namespace-controller",
    "node-controller",
    "persistent-volume-binder",
    "pod-garbage-collector",
    "pv-protection-controller",
    "pvc-protection-controller",
    "replicaset-controller",
    "replication-controller",
    "resource-claim-controller",
    "resourcequota-controller",
    "root-ca-cert-publisher",
    "route-controller",
    "selinux-warning-controller",
    "service-account-controller",
    "service-cidrs-controller",
    "service-controller",
    "statefulset-controller",
    "ttl-after-finished-controller",
    "ttl-controller",
    "validatingadmissionpolicy-status-controller",
    "volumeattributesclass-protection-controller",
    "podgroup-protection-controller",  # (1.36's, after the file's commit: kemu's rules)
]
"""controller-roles.yaml's items (system:controller: stripped)."""

UPSTREAM_CONTROLLER_ROLE_RULES = {
    "disruption-controller": [
        f"{READ}|apps,extensions|deployments",
        f"{READ}|apps,extensions|replicasets",
        f"{READ}||replicationcontrollers",
        f"{READ}|policy|poddisruptionbudgets",
        f"{READ}|apps|statefulsets",
        "update|policy|poddisruptionbudgets/status",
        "patch,update||pods/status",
        "get|*|*/scale",
        EV,
    ],
    "statefulset-controller": [
        "list,watch||pods",
        f"{READ}|apps|statefulsets",
        "update|apps|statefulsets/status",
        "update|apps|statefulsets/finalizers",
        "create,delete,get,patch,update||pods",
        "create,delete,get,list,patch,update,watch|apps|controllerrevisions",
        "create,get,list,watch||persistentvolumeclaims",
        "delete,update||persistentvolumeclaims",
        "update||pods/finalizers",
        EV,
    ],
    "resource-claim-controller": [
        f"{READ}||pods",
        "update||pods/finalizers",
        "create,delete,get,list,watch|resource.k8s.io|resourceclaims",
        "patch,update|resource.k8s.io|resourceclaims,resourceclaims/status",
        "patch,update||pods/status",
        EV,
        "patch,update|resource.k8s.io|resourceclaims/binding",
    ],
    "namespace-controller": [
        "delete,get,list,watch||namespaces",
        "update||namespaces/finalize,namespaces/status",
        "delete,deletecollection,get,list,watch|*|*",
    ],
    "pod-garbage-collector": [
        "delete,list,watch||pods",
        f"{READ}||nodes",
        "patch||pods/status",
    ],
    "node-controller": [
        "delete,get,list,patch,update,watch||nodes",
        "patch,update||nodes/status",
        "patch,update||pods/status",
        "delete,get,list,watch||pods",
        EV,
    ],
    "clusterrole-aggregation-controller": [
        "escalate,get,list,patch,update,watch|rbac.authorization.k8s.io|clusterroles"
    ],
}

UPSTREAM_NAMESPACE_ROLES = {
    ("kube-public", "system:controller:bootstrap-signer"): [
        f"{READ}||configmaps",
        "update||configmaps|cluster-info",
        EV,
    ],
    ("kube-system", "extension-apiserver-authentication-reader"): [
        f"{READ}||configmaps|extension-apiserver-authentication"
    ],
    ("kube-system", "system::leader-locking-kube-controller-manager"): [
        "create,get,list,update,watch|coordination.k8s.io|leases",
        "create,get,list,update,watch|coordination.k8s.io|leasecandidates",
    ],
    ("kube-system", "system::leader-locking-kube-scheduler"): [
        "create,get,list,update,watch|coordination.k8s.io|leases",
        "create,get,list,update,watch|coordination.k8s.io|leasecandidates",
    ],
    ("kube-system", "system:controller:bootstrap-signer"): [f"{READ}||secrets"],
    ("kube-system", "system:controller:cloud-provider"): ["create,get,list,watch||configmaps"],
    ("kube-system", "system:controller:token-cleaner"): ["delete,get,list,watch||secrets", EV],
}

UPSTREAM_NAMESPACE_ROLE_BINDINGS = {
    ("kube-public", "system:controller:bootstrap-signer"): (
        "system:controller:bootstrap-signer",
        ["ServiceAccount kube-system/bootstrap-signer"],
    ),
    ("kube-system", "system::extension-apiserver-authentication-reader"): (
        "extension-apiserver-authentication-reader",
        ["User system:kube-controller-manager", "User system:kube-scheduler"],
    ),
    ("kube-system", "system::leader-locking-kube-controller-manager"): (
        "system::leader-locking-kube-controller-manager",
        [
            "User system:kube-controller-manager",
            "ServiceAccount kube-system/kube-controller-manager",
            "ServiceAccount kube-system/leader-election-controller",
        ],
    ),
    ("kube-system", "system::leader-locking-kube-scheduler"): (
        "system::leader-locking-kube-scheduler",
        ["User system:kube-scheduler", "ServiceAccount kube-system/kube-scheduler"],
    ),
    ("kube-system", "system:controller:bootstrap-signer"): (
        "system:controller:bootstrap-signer",
        ["ServiceAccount kube-system/bootstrap-signer"],
    ),
    ("kube-system", "system:controller:cloud-provider"): (
        "system:controller:cloud-provider",
        ["ServiceAccount kube-system/cloud-provider"],
    ),
    ("kube-system", "system:controller:token-cleaner"): (
        "system:controller:token-cleaner",
        ["ServiceAccount kube-system/token-cleaner"],
    ),
}


def _subject(s: types_pb2.Subject) -> str:
    if s.kind == "ServiceAccount":
        assert not s.api_group
        return f"{s.kind} {s.namespace}/{s.name}"
    assert s.api_group == "rbac.authorization.k8s.io"
    return f"{s.kind} {s.name}"


def test_the_cluster_roles_are_upstreams_by_name_and_order() -> None:
    policy = _policy(33)
    names = [
        r.metadata.name
        for r in policy.cluster_roles
        if not r.metadata.name.startswith(("system:controller:", KEMU_PREFIX))
    ]
    assert names == UPSTREAM_CLUSTER_ROLES


@pytest.mark.parametrize("name", sorted(UPSTREAM_CLUSTER_ROLE_RULES))
def test_a_cluster_roles_rules_are_upstreams_rule_by_rule(name: str) -> None:
    assert _rules(_policy(33).cluster_roles, name) == UPSTREAM_CLUSTER_ROLE_RULES[name]


def test_every_object_has_the_bootstrapping_label_and_the_autoupdate_annotation() -> None:
    policy = _policy(37)
    metas = [
        o.metadata
        for group in (policy.cluster_roles, policy.cluster_role_bindings, policy.roles)
        for o in group
    ] + [o.metadata for o in policy.role_bindings]
    assert len(metas) > 100
    for meta in metas:
        assert meta.labels[BOOTSTRAPPING_LABEL] == "rbac-defaults", meta.name
        assert meta.annotations[AUTOUPDATE_ANNOTATION] == "true", meta.name


def test_admin_edit_and_view_are_aggregated_with_upstreams_labels() -> None:
    roles = {r.metadata.name: r for r in _policy(37).cluster_roles}
    for name, aggregates_to, source in [
        ("admin", None, "admin"),
        ("edit", "admin", "edit"),
        ("view", "edit", "view"),
    ]:
        role = roles[name]
        assert not role.rules
        [selector] = role.aggregation_rule.cluster_role_selectors
        assert dict(selector.match_labels) == {
            f"rbac.authorization.k8s.io/aggregate-to-{source}": "true"
        }
        extra = {k for k in role.metadata.labels if k != BOOTSTRAPPING_LABEL}
        assert extra == (
            {f"rbac.authorization.k8s.io/aggregate-to-{aggregates_to}"} if aggregates_to else set()
        )
    for source in ("admin", "edit", "view"):
        label = f"rbac.authorization.k8s.io/aggregate-to-{source}"
        assert roles[f"system:aggregate-to-{source}"].metadata.labels[label] == "true"


def test_the_controller_roles_are_upstreams_and_each_bound_to_its_service_account() -> None:
    policy = _policy(37)
    controllers = [
        r.metadata.name.removeprefix("system:controller:")
        for r in policy.cluster_roles
        if r.metadata.name.startswith("system:controller:")
    ]
    assert controllers == sorted(controllers)
    assert set(controllers) <= set(UPSTREAM_CONTROLLER_ROLES)
    assert len(controllers) == 23  # (resource-claim-controller: DRA is on at 1.37)
    bindings = {b.metadata.name: b for b in policy.cluster_role_bindings}
    for name in controllers:
        b = bindings[f"system:controller:{name}"]
        assert (b.role_ref.kind, b.role_ref.name) == ("ClusterRole", f"system:controller:{name}")
        assert [_subject(s) for s in b.subjects] == [f"ServiceAccount kube-system/{name}"]


@pytest.mark.parametrize("name", sorted(UPSTREAM_CONTROLLER_ROLE_RULES))
def test_a_controller_roles_rules_are_upstreams_rule_by_rule(name: str) -> None:
    got = _rules(_policy(37).cluster_roles, f"system:controller:{name}")
    assert got == UPSTREAM_CONTROLLER_ROLE_RULES[name]


def test_the_namespaced_roles_and_bindings_are_upstreams() -> None:
    policy = _policy(37)
    roles = {
        (r.metadata.namespace, r.metadata.name): [_text(x) for x in r.rules] for r in policy.roles
    }
    assert roles == UPSTREAM_NAMESPACE_ROLES
    bindings = {
        (b.metadata.namespace, b.metadata.name): (
            b.role_ref.name,
            [_subject(s) for s in b.subjects],
        )
        for b in policy.role_bindings
    }
    assert bindings == UPSTREAM_NAMESPACE_ROLE_BINDINGS
    assert all(b.role_ref.kind == "Role" for b in policy.role_bindings)


def test_the_cluster_role_bindings_are_upstreams() -> None:
    bindings = {
        b.metadata.name: [_subject(s) for s in b.subjects]
        for b in _policy(37).cluster_role_bindings
        if not b.metadata.name.startswith(("system:controller:", KEMU_PREFIX))
    }
    assert bindings == {
        "cluster-admin": ["Group system:masters"],
        "system:basic-user": ["Group system:authenticated"],
        "system:discovery": ["Group system:authenticated"],
        "system:kube-controller-manager": ["User system:kube-controller-manager"],
        "system:kube-dns": ["ServiceAccount kube-system/kube-dns"],
        "system:kube-scheduler": ["User system:kube-scheduler"],
        "system:monitoring": ["Group system:monitoring"],
        "system:node": [],
        "system:node-proxier": ["User system:kube-proxy"],
        "system:public-info-viewer": ["Group system:authenticated", "Group system:unauthenticated"],
        "system:service-account-issuer-discovery": ["Group system:serviceaccounts"],
        "system:volume-scheduler": ["User system:kube-scheduler"],
    }


def test_with_dynamic_resource_allocation_the_scheduler_node_and_claim_controller_get_dra_rules() -> (
    None
):
    on, off = _policy(37), _policy(33)
    dra = [
        f"{READ}|resource.k8s.io|deviceclasses,resourceslices",
        "get,list,patch,update,watch|resource.k8s.io|resourceclaims,resourceclaims/status",
        "create,delete|resource.k8s.io|resourceclaims",  # (DRAExtendedResource, on at 1.37)
        f"{READ}|resource.k8s.io|devicetaintrules",  # (DRADeviceTaintRules, on at 1.37)
    ]
    assert _rules(on.cluster_roles, "system:kube-scheduler") == (
        UPSTREAM_CLUSTER_ROLE_RULES["system:kube-scheduler"] + dra
    )
    assert _rules(on.cluster_roles, "system:node")[-1] == "get|resource.k8s.io|resourceclaims"
    assert len(_rules(off.cluster_roles, "system:node")) == 22
    names = {r.metadata.name for r in off.cluster_roles}
    assert "system:controller:resource-claim-controller" not in names
    assert "system:controller:resource-claim-controller" not in {
        b.metadata.name for b in off.cluster_role_bindings
    }


def test_before_1_27_system_basic_user_cannot_create_self_subject_reviews() -> None:
    assert _rules(_policy(26).cluster_roles, "system:basic-user") == [
        "create|authorization.k8s.io|selfsubjectaccessreviews,selfsubjectrulesreviews"
    ]
    assert len(_rules(_policy(27).cluster_roles, "system:basic-user")) == 2


def test_with_generic_workload_the_scheduler_reads_pod_groups_and_their_controller_has_a_role() -> (
    None
):
    version = Version(1, 37)
    gates = FeatureGates.for_version(version, {"GenericWorkload": True})
    on = bootstrap_policy(gates, VersionRules.at(version))
    off = _policy(37)
    assert f"{READ}|scheduling.k8s.io|podgroups,workloads" in _rules(
        on.cluster_roles, "system:kube-scheduler"
    )
    assert "get,patch,update|scheduling.k8s.io|podgroups/status" in _rules(
        on.cluster_roles, "system:kube-scheduler"
    )
    assert f"{READ}|scheduling.k8s.io|podgroups,workloads" not in _rules(
        off.cluster_roles, "system:kube-scheduler"
    )
    names = {r.metadata.name for r in on.cluster_roles}
    assert "system:controller:podgroup-protection-controller" in names
    assert "system:controller:podgroup-protection-controller" not in {
        r.metadata.name for r in off.cluster_roles
    }


def test_kemus_own_roles_let_every_user_read_the_cluster_clock_and_the_provisioner_write_volumes() -> (
    None
):
    policy = _policy(37)
    assert _rules(policy.cluster_roles, "kemu:cluster-clock") == ["get|url:/clock"]
    bindings = {
        b.metadata.name: [_subject(s) for s in b.subjects] for b in policy.cluster_role_bindings
    }
    assert bindings["kemu:cluster-clock"] == ["Group system:authenticated"]
    assert bindings["kemu:simulated-csi-provisioner"] == [
        "ServiceAccount kube-system/simulated-csi-provisioner"
    ]
    provisioner = _rules(policy.cluster_roles, "kemu:simulated-csi-provisioner")
    assert "create,delete,get,list,patch,watch||persistentvolumes" in provisioner
