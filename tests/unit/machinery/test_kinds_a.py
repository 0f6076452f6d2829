"""Issue #57's RBAC, networking, certificates, apiregistration, LimitRange and ResourceQuota
kinds in the machinery: defaulted, validated, prepared, admitted and printed as upstream
(pkg/apis/{rbac,networking,certificates,core}/validation and v1/defaults.go,
kube-aggregator's apiregistration validation, plugin/pkg/admission/limitranger,
apiserver/pkg/admission/plugin/resourcequota, pkg/quota/v1/evaluator/core,
pkg/printers/internalversion/printers.go)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery import certificates, convert, limit_ranger, printers, quota
from kemu.machinery.convert import timestamp
from kemu.machinery.defaults import set_defaults
from kemu.machinery.errors import Forbidden
from kemu.machinery.kinds import BY_KIND
from kemu.machinery.strategy import StrategyOptions, strategy_for
from kemu.machinery.validation.objects import validate_object

ON = StrategyOptions()


def obj(data: dict[str, Any]) -> Message:
    out = convert.from_dict(BY_KIND[data["kind"]], data)
    set_defaults(out)
    return out


def messages(o: Message, old: Message | None = None) -> dict[str, str]:
    return {c.field: c.message for c in validate_object(o, old=old)}


def binding(kind: str = "RoleBinding", **ref: str) -> Message:
    return obj(
        {
            "kind": kind,
            "metadata": {"name": "rb", "namespace": "default" if kind == "RoleBinding" else ""},
            "subjects": [{"kind": "User", "name": "jane"}],
            "roleRef": {"kind": "Role", "name": "reader", **ref},
        }
    )


# ---------------------------------------------------------------- RBAC


def test_s_api_rbac_defaults_subjects_and_role_ref() -> None:
    """S-API-RBAC-4: SetDefaults_Subject and SetDefaults_RoleRef fill the rbac group."""
    rb = binding()
    assert isinstance(rb, types_pb2.RoleBinding)
    assert rb.role_ref.api_group == "rbac.authorization.k8s.io"
    assert rb.subjects[0].api_group == "rbac.authorization.k8s.io"
    assert messages(rb) == {}


def test_s_api_rbac_rule_and_binding_rules() -> None:
    """S-API-RBAC-5: validatePolicyRule's and a ClusterRoleBinding's messages."""
    role = obj(
        {
            "kind": "Role",
            "metadata": {"name": "r", "namespace": "default"},
            "rules": [{"resources": ["pods"]}, {"verbs": ["get"], "nonResourceURLs": ["/x"]}],
        }
    )
    got = messages(role)
    assert got["rules[0].verbs"] == "Required value: verbs must contain at least one value"
    assert got["rules[0].apiGroups"].endswith("resource rules must supply at least one api group")
    assert "namespaced rules cannot apply to non-resource URLs" in got["rules[1].nonResourceURLs"]
    crb = binding("ClusterRoleBinding")
    assert messages(crb)["roleRef.kind"] == (
        'Unsupported value: "Role": supported values: "ClusterRole"'
    )


def test_s_api_rbac_role_ref_is_immutable() -> None:
    """S-API-RBAC-3 (unit): ValidateRoleBindingUpdate's "cannot change roleRef"."""
    old = binding()
    new = binding(name="writer")
    assert "cannot change roleRef" in messages(new, old)["roleRef"]


def test_s_api_rbac_aggregation_rule_needs_a_selector() -> None:
    cr = obj({"kind": "ClusterRole", "metadata": {"name": "agg"}, "aggregationRule": {}})
    assert "aggregationRule.clusterRoleSelectors" in messages(cr)


# ---------------------------------------------------------------- networking


def test_s_api_net_ingress_rules() -> None:
    """S-API-NET-4: an Ingress needs rules or a default backend; a path its pathType; a
    backend a service port."""
    ing = obj({"kind": "Ingress", "metadata": {"name": "i", "namespace": "default"}})
    assert messages(ing)["spec.rules"].endswith(
        "either `defaultBackend` or `rules` must be specified"
    )
    ing = obj(
        {
            "kind": "Ingress",
            "metadata": {"name": "i", "namespace": "default"},
            "spec": {
                "rules": [
                    {
                        "host": "10.0.0.1",
                        "http": {"paths": [{"path": "/", "backend": {"service": {"name": "s"}}}]},
                    }
                ]
            },
        }
    )
    got = messages(ing)
    assert got["spec.rules[0].host"].endswith("must be a DNS name, not an IP address")
    assert got["spec.rules[0].http.paths[0].pathType"] == (
        "Required value: pathType must be specified"
    )
    assert got["spec.rules[0].http.paths[0].backend.service.port"] == (
        "Required value: port name or number is required"
    )


def test_s_api_net_network_policy_defaults_and_peers() -> None:
    """S-API-NET-5: policyTypes and port protocol defaulted; an ipBlock's except must be
    inside its cidr; a peer with nothing is refused."""
    np = obj(
        {
            "kind": "NetworkPolicy",
            "metadata": {"name": "n", "namespace": "default"},
            "spec": {
                "podSelector": {},
                "ingress": [{"ports": [{"port": 80}], "from": [{}]}],
                "egress": [
                    {"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16"]}}]}
                ],
            },
        }
    )
    assert isinstance(np, types_pb2.NetworkPolicy)
    assert list(np.spec.policy_types) == ["Ingress", "Egress"]
    assert np.spec.ingress[0].ports[0].protocol == "TCP"
    got = messages(np)
    assert got["spec.ingress[0].from[0]"] == "Required value: must specify a peer"
    assert got["spec.egress[0].to[0].ipBlock.except[0]"].endswith(
        "must be a strict subset of `cidr`"
    )


def test_s_api_net_ingress_class_controller_immutable() -> None:
    old = obj({"kind": "IngressClass", "metadata": {"name": "c"}, "spec": {"controller": "a.io/x"}})
    new = obj({"kind": "IngressClass", "metadata": {"name": "c"}, "spec": {"controller": "b.io/x"}})
    assert messages(new, old)["spec.controller"].endswith("field is immutable")


# ---------------------------------------------------------------- certificates

_PEM = b"-----BEGIN CERTIFICATE REQUEST-----\nMIIBAA==\n-----END CERTIFICATE REQUEST-----\n"


def csr(request: bytes = _PEM, **spec: Any) -> types_pb2.CertificateSigningRequest:
    o = obj(
        {
            "kind": "CertificateSigningRequest",
            "metadata": {"name": "c"},
            "spec": {
                "request": base64.b64encode(request).decode(),
                "signerName": "example.com/signer",
                "usages": ["client auth"],
                **spec,
            },
        }
    )
    assert isinstance(o, types_pb2.CertificateSigningRequest)
    return o


def test_s_api_csr_validation() -> None:
    """S-API-CSR-2: a PEM CERTIFICATE REQUEST, a qualified signer, known usages, 600 s at
    least."""
    assert messages(csr()) == {}
    bad = csr(b"junk", signerName="nodomain", usages=["flying"], expirationSeconds=60)
    got = messages(bad)
    assert got["spec.request"].endswith("PEM block type must be CERTIFICATE REQUEST")
    assert "example.com/signer-name" in got["spec.signerName"]
    assert got["spec.usages[0" + "]"].startswith('Unsupported value: "flying"')
    assert got["spec.expirationSeconds"].endswith("(10 minutes)")


def test_s_api_csr_create_and_approval() -> None:
    """S-API-CSR-3: the requester is recorded; /approval takes only the conditions and
    stamps their times; Approved and Denied together are refused."""
    c = csr()
    strategy_for(BY_KIND["CertificateSigningRequest"]).prepare_for_create(c, ON, 100.0)
    assert c.spec.username == "system:anonymous"
    sent = types_pb2.CertificateSigningRequest()
    sent.CopyFrom(c)
    sent.spec.signer_name = "other.io/x"  # ignored by /approval
    sent.status.conditions.add(type="Approved", status="True", reason="KubectlApprove")
    out = certificates.prepare_for_approval(sent, c, timestamp(200.0))
    assert out.spec.signer_name == "example.com/signer"
    assert out.status.conditions[0].last_update_time.seconds == 200
    assert messages(out, c) == {}
    assert printers.csr_condition(out) == "Approved"
    out.status.conditions.add(type="Denied", status="True")
    assert "mutually exclusive" in messages(out, c)["status.conditions"]


# ---------------------------------------------------------------- apiregistration


def test_s_api_net_api_service_name_is_version_group() -> None:
    svc = obj(
        {
            "kind": "APIService",
            "metadata": {"name": "v1.wrong"},
            "spec": {
                "group": "apps",
                "version": "v1",
                "groupPriorityMinimum": 17800,
                "versionPriority": 15,
            },
        }
    )
    assert messages(svc)["metadata.name"].endswith(
        'must be `spec.version+"."+spec.group`: "v1.apps"'
    )


# ---------------------------------------------------------------- LimitRange

LIMITS: dict[str, Any] = {
    "kind": "LimitRange",
    "metadata": {"name": "l", "namespace": "default"},
    "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"cpu": "50m"}}]},
}


def pod(**resources: dict[str, str]) -> types_pb2.Pod:
    p = types_pb2.Pod()
    p.metadata.name = "p"
    p.metadata.namespace = "default"
    c = p.spec.containers.add(name="app", image="nginx")
    c.resources.requests.update(resources.get("requests", {}))
    c.resources.limits.update(resources.get("limits", {}))
    return p


def test_s_api_limit_defaults_from_max_and_min() -> None:
    """S-API-LIMIT-2: SetDefaults_LimitRangeItem: default from max, defaultRequest from
    default (then min)."""
    lr = obj(LIMITS)
    assert isinstance(lr, types_pb2.LimitRange)
    item = lr.spec.limits[0]
    assert dict(item.default_limit) == {"cpu": "2"}
    assert dict(item.default_request) == {"cpu": "2"}
    assert messages(lr) == {}


def test_s_api_limit_validation_min_over_max() -> None:
    lr = obj(
        {
            "kind": "LimitRange",
            "metadata": {"name": "l", "namespace": "default"},
            "spec": {"limits": [{"type": "Pod", "max": {"cpu": "1"}, "min": {"cpu": "2"}}]},
        }
    )
    assert messages(lr)["spec.limits[0].min[cpu]"].endswith(
        "min value 2 is greater than max value 1"
    )


def test_s_api_limit_ranger_defaults_and_bounds() -> None:
    """S-API-LIMIT-3: LimitRanger sets missing requests and limits, then refuses a container
    over max with upstream's message."""
    lr = obj(LIMITS)
    assert isinstance(lr, types_pb2.LimitRange)
    p = pod()
    limit_ranger.mutate_pod(p, [lr])
    assert dict(p.spec.containers[0].resources.limits) == {"cpu": "2"}
    assert p.metadata.annotations["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu request for container app; cpu limit for container app"
    )
    limit_ranger.validate_pod(p, [lr])
    big = pod(requests={"cpu": "1"}, limits={"cpu": "3"})
    with pytest.raises(Forbidden) as e:
        limit_ranger.validate_pod(big, [lr])
    assert e.value.message == (
        'pods "p" is forbidden: maximum cpu usage per Container is 2, but limit is 3'
    )


# ---------------------------------------------------------------- ResourceQuota


def rq(hard: dict[str, str], used: dict[str, str] | None = None) -> types_pb2.ResourceQuota:
    q = types_pb2.ResourceQuota()
    q.metadata.name = "q"
    q.metadata.namespace = "default"
    q.spec.hard.update(hard)
    q.status.hard.update(hard)
    q.status.used.update(used or {})
    return q


def test_s_api_quota_usage_and_exceeded_message() -> None:
    """S-API-QUOTA-2: a pod charges pods and its requests; over the hard limit the admission
    answers upstream's "exceeded quota" Forbidden (prettyPrint: sorted name=value)."""
    p = pod(requests={"cpu": "500m", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"})
    usage = quota.pod_usage(p, 0.0)
    assert str(usage["requests.cpu"]) == "500m" and str(usage["limits.memory"]) == "1Gi"
    assert quota.charge(p, "pods", "p", rq({"pods": "2"}, {"pods": "1"}), 0.0) == {"pods": "2"}
    with pytest.raises(Forbidden) as e:
        quota.charge(
            p,
            "pods",
            "p",
            rq({"pods": "2", "requests.cpu": "1"}, {"pods": "2", "requests.cpu": "600m"}),
            0.0,
        )
    assert e.value.message == (
        'pods "p" is forbidden: exceeded quota: q, requested: pods=1,requests.cpu=500m, '
        "used: pods=2,requests.cpu=600m, limited: pods=2,requests.cpu=1"
    )


def test_s_api_quota_must_specify_and_status_unknown() -> None:
    """S-API-QUOTA-3: a quota on cpu needs each container's request; a quota without its
    computed status refuses until the controller has written it."""
    with pytest.raises(Forbidden) as e:
        quota.charge(pod(), "pods", "p", rq({"requests.cpu": "1"}), 0.0)
    assert e.value.message.endswith("failed quota: q: must specify requests.cpu for: app")
    unknown = rq({"pods": "1"})
    unknown.status.ClearField("hard")
    with pytest.raises(Forbidden) as e:
        quota.charge(pod(), "pods", "p", unknown, 0.0)
    assert e.value.message.endswith("status unknown for quota: q, resource: pods")


def test_s_api_quota_controller_counts_and_scopes() -> None:
    """S-API-QUOTA-4: compute_used counts what the quota limits (a finished pod is free; a
    BestEffort-scoped quota counts only BestEffort pods); the table prints used/hard."""
    done = pod()
    done.status.phase = "Succeeded"
    cm = types_pb2.ConfigMap()
    cm.metadata.namespace = "default"
    q = rq({"pods": "5", "configmaps": "3", "count/configmaps": "3"})
    used = quota.compute_used(q, [pod(), done, cm], 0.0)
    assert used == {"pods": "1", "configmaps": "1", "count/configmaps": "1"}
    scoped = rq({"pods": "5"})
    scoped.spec.scopes.append("BestEffort")
    assert quota.compute_used(scoped, [pod(), pod(requests={"cpu": "1"})], 0.0) == {"pods": "1"}
    q.status.used.update(used)
    row = printers.row(BY_KIND["ResourceQuota"], q, 0.0, wide=False, with_namespace=False)
    assert row[2] == "configmaps: 1/3, count/configmaps: 1/3, pods: 1/5"
