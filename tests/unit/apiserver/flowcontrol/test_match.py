"""Classification by upstream's bootstrap FlowSchemas (match.go; issue #58 item 3)."""

from __future__ import annotations

import pytest

from apiserver.endpoints import identity
from apiserver.endpoints.identity import ANONYMOUS, UserInfo
from apiserver.endpoints.inflight import RequestInfo
from apiserver.flowcontrol import match
from apiserver.flowcontrol.apf_filter import bootstrap_config
from kemu.api.v1 import types_pb2
from kemu.machinery.user import node_user

SCHEDULER = identity.of_user_agent("kube-scheduler grpc-python-asyncio/1.66")
KCM = identity.of_user_agent("kube-controller-manager")
KUBELET = identity.of_user_agent("kubelet")
ADMIN = identity.of_headers("admin", ["system:masters"])
COORD = "coordination.k8s.io"


def _classify(info: RequestInfo) -> tuple[str, str, str]:
    schemas, levels = bootstrap_config()
    got = match.classify(match.ordered(schemas), {pl.metadata.name for pl in levels}, info)
    assert got is not None
    return got.flow_schema_name, got.level, got.distinguisher


@pytest.mark.parametrize(
    ("info", "expected"),
    [
        (
            RequestInfo("update", "leases", "kube-system", api_group=COORD, user=SCHEDULER),
            ("system-leader-election", "leader-election", "system:kube-scheduler"),
        ),
        (
            RequestInfo("get", "leases", "kube-system", api_group=COORD, user=KCM),
            ("system-leader-election", "leader-election", "system:kube-controller-manager"),
        ),
        (
            RequestInfo("list", "pods", "ns", user=SCHEDULER),
            ("kube-scheduler", "workload-high", "ns"),
        ),
        (
            RequestInfo("create", "pods", "ns", subresource="binding", user=SCHEDULER),
            ("kube-scheduler", "workload-high", "ns"),
        ),
        (
            RequestInfo("update", "nodes", subresource="status", user=KUBELET),
            ("system-node-high", "node-high", "system:node:kubelet"),
        ),
        (
            RequestInfo("update", "leases", "kube-node-lease", api_group=COORD, user=KUBELET),
            ("system-node-high", "node-high", "system:node:kubelet"),
        ),
        (
            RequestInfo("get", "pods", "ns", user=KUBELET),
            ("system-nodes", "system", "system:node:kubelet"),
        ),
        (RequestInfo("get", path="/healthz"), ("probes", "exempt", "")),
        (RequestInfo("get", path="/version"), ("global-default", "global-default", ANONYMOUS.name)),
        (RequestInfo("list", "pods"), ("global-default", "global-default", ANONYMOUS.name)),
        (RequestInfo("delete", "pods", "ns", user=ADMIN), ("exempt", "exempt", "")),
        (
            RequestInfo("list", "pods", "ns", user=identity.of_user_agent("cluster-autoscaler")),
            ("kube-system-service-accounts", "workload-high", "ns"),
        ),
        (
            RequestInfo(
                "list",
                "pods",
                "ns",
                user=UserInfo("system:serviceaccount:apps:x", ("system:serviceaccounts",)),
            ),
            ("service-accounts", "workload-low", "system:serviceaccount:apps:x"),
        ),
        (
            # a lease in a user's namespace is not leader election: the scheduler's own schema
            RequestInfo("update", "leases", "default", api_group=COORD, user=SCHEDULER),
            ("system-leader-election", "leader-election", "system:kube-scheduler"),
        ),
    ],
)
def test_bootstrap_flow_schemas_classify_as_upstream(
    info: RequestInfo, expected: tuple[str, str, str]
) -> None:
    assert _classify(info) == expected


def test_a_user_with_no_group_falls_to_catch_all() -> None:
    """catch-all (precedence 10000) matches system:authenticated/unauthenticated; a user in
    neither matches nothing but the schemas naming it."""
    schemas, levels = bootstrap_config()
    names = {pl.metadata.name for pl in levels}
    nobody = RequestInfo("get", "pods", "ns", user=UserInfo("nobody"))
    assert match.classify(match.ordered(schemas), names, nobody) is None


def test_dangling_schemas_are_skipped_and_precedence_then_name_orders() -> None:
    def fs(name: str, level: str, precedence: int) -> types_pb2.FlowSchema:
        out = types_pb2.FlowSchema()
        out.metadata.name = name
        out.spec.priority_level_configuration.name = level
        out.spec.matching_precedence = precedence
        rules = out.spec.rules.add()
        rules.subjects.add(kind="Group", group=types_pb2.GroupSubject(name="*"))
        rules.non_resource_rules.add(verbs=["get"], non_resource_urls=["/metrics/*"])
        return out

    ordered = match.ordered([fs("b", "l1", 10), fs("a", "l1", 10), fs("first", "gone", 1)])
    assert [f.metadata.name for f in ordered] == ["first", "a", "b"]
    got = match.classify(ordered, {"l1"}, RequestInfo("get", path="/metrics/x"))
    assert got is not None and got.flow_schema_name == "a"
    assert match.classify(ordered, {"l1"}, RequestInfo("get", path="/metrics")) is None
    assert match.classify(ordered, {"l1"}, RequestInfo("get", path="/other")) is None


def test_the_flow_hash_is_stable_and_depends_on_schema_and_distinguisher() -> None:
    schemas, _ = bootstrap_config()
    fs = schemas[0]
    a = match.Classification(fs, "l", "u1")
    assert a.flow_hash() == match.Classification(fs, "l", "u1").flow_hash()
    assert a.flow_hash() != match.Classification(fs, "l", "u2").flow_hash()
    assert 0 <= a.flow_hash() < 2**64


def test_a_kubelet_claiming_its_node_is_a_flow_of_its_own() -> None:
    """Each kubelet's client claims system:node:<name> (kemu.machinery.user; upstream's node
    client certificate), so system-nodes' ByUser gives each node its flow."""
    a = identity.of_metadata([("user-agent", "kubelet"), *node_user("a").metadata()])
    b = identity.of_metadata([("user-agent", "kubelet"), *node_user("b").metadata()])
    assert a == UserInfo("system:node:a", ("system:nodes", "system:authenticated"))
    got = {_classify(RequestInfo("get", "pods", "ns", user=u)) for u in (a, b)}
    assert got == {
        ("system-nodes", "system", "system:node:a"),
        ("system-nodes", "system", "system:node:b"),
    }
    # without a claim: the user agent's component, else anonymous
    assert identity.of_metadata([("user-agent", "kubelet/1.0")]) == KUBELET
    assert identity.of_metadata([]) == ANONYMOUS


def test_requests_alike_but_for_the_object_they_name_are_classified_alike() -> None:
    """classified_as keeps what classification reads: a pod's name or a selector does not
    change it; the user, verb, namespace, subresource and a non-resource path do."""
    base = RequestInfo("patch", "pods", "ns", subresource="status", user=KUBELET, name="a")
    same = [
        RequestInfo("patch", "pods", "ns", subresource="status", user=KUBELET, name="b"),
        RequestInfo(
            "patch", "pods", "ns", subresource="status", user=KUBELET, field_selector="x=y"
        ),
    ]
    other = [
        RequestInfo("patch", "pods", "ns", subresource="status", user=SCHEDULER, name="a"),
        RequestInfo("update", "pods", "ns", subresource="status", user=KUBELET, name="a"),
        RequestInfo("patch", "pods", "ns2", subresource="status", user=KUBELET, name="a"),
        RequestInfo("patch", "pods", "ns", user=KUBELET, name="a"),
    ]
    assert {match.classified_as(i) for i in same} == {match.classified_as(base)}
    assert match.classified_as(base) not in {match.classified_as(i) for i in other}
    assert match.classified_as(RequestInfo("get", path="/healthz")) != match.classified_as(
        RequestInfo("get", path="/version")
    )
    # and what classify answers agrees for every one of them
    for info in [*same, *other]:
        if match.classified_as(info) == match.classified_as(base):
            assert _classify(info) == _classify(base)
