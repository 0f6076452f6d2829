"""Field selectors per kind."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import BadRequest
from kemu.machinery.fields import parse_field_selector
from kemu.machinery.kinds import KINDS, Kind


def _pod(name="p", ns="default", node="", phase="Pending", nnn="") -> types_pb2.Pod:
    pod = types_pb2.Pod()
    pod.metadata.name, pod.metadata.namespace = name, ns
    pod.spec.node_name = node
    pod.status.phase = phase
    pod.status.nominated_node_name = nnn
    return pod


@pytest.mark.parametrize(
    ("text", "bound", "unbound"),
    [
        ("", True, True),
        ("spec.nodeName=node1", True, False),
        ("spec.nodeName==node1", True, False),
        ("spec.nodeName!=node1", False, True),
        ("spec.nodeName=", False, True),  # unscheduled pods
        ("spec.nodeName!=", True, False),
        ("metadata.name=p", True, True),
        ("metadata.namespace=kube-system", False, False),
        ("status.phase=Running,spec.nodeName=node1", True, False),
        ("status.phase!=Running", False, True),
        ("status.nominatedNodeName=node2", False, True),
        ("spec.nodeName=node1,", True, False),
    ],
)
def test_pod_field_selectors(text: str, bound: bool, unbound: bool) -> None:
    s = parse_field_selector("pods", text)
    assert s.matches(_pod(node="node1", phase="Running")) is bound
    assert s.matches(_pod(nnn="node2")) is unbound


def test_requirements_and_exact_value_for_the_index() -> None:
    s = parse_field_selector("pods", "spec.nodeName=node1,status.phase!=Failed")
    assert [(r.field, r.operator, r.value) for r in s.requirements] == [
        ("spec.nodeName", "=", "node1"),
        ("status.phase", "!=", "Failed"),
    ]
    assert s.exact("spec.nodeName") == "node1"
    assert s.exact("status.phase") is None
    assert str(s) == "spec.nodeName=node1,status.phase!=Failed"
    assert parse_field_selector("pods", "").empty


def test_escaped_values() -> None:
    s = parse_field_selector("pods", r"metadata.name=a\,b\=c\\d")
    assert s.exact("metadata.name") == "a,b=c\\d"
    assert s.matches(_pod(name="a,b=c\\d"))
    assert parse_field_selector("pods", str(s)) == s


def test_node_and_event_fields() -> None:
    node = types_pb2.Node()
    node.metadata.name = "n1"
    assert parse_field_selector("nodes", "spec.unschedulable=false").matches(node)
    node.spec.unschedulable = True
    assert parse_field_selector("nodes", "spec.unschedulable=true,metadata.name=n1").matches(node)
    ev = types_pb2.Event()
    ev.metadata.namespace = "default"
    ev.involved_object.kind, ev.involved_object.name = "Pod", "p"
    ev.reason, ev.source.component = "Preempted", "default-scheduler"
    s = parse_field_selector(
        "events", "involvedObject.kind=Pod,involvedObject.name=p,source=default-scheduler"
    )
    assert s.matches(ev)
    assert not parse_field_selector("events", "reason=Scheduled").matches(ev)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.resource)
def test_every_kind_is_selected_by_its_name_as_kubectl_delete_waits_on_it(kind: Kind) -> None:
    """Upstream's default field label conversion: metadata.name on every kind (kubectl delete
    watches an object a finalizer keeps with metadata.name=<name>)."""
    obj = kind.message()
    obj.metadata.name = "x"  # type: ignore[attr-defined]
    assert parse_field_selector(kind.resource, "metadata.name=x").matches(obj)
    assert not parse_field_selector(kind.resource, "metadata.name=y").matches(obj)


def test_a_persistent_volume_claim_is_selected_by_name_and_namespace() -> None:
    claim = types_pb2.PersistentVolumeClaim()
    claim.metadata.name, claim.metadata.namespace = "data", "ns1"
    s = parse_field_selector("persistentvolumeclaims", "metadata.name=data,metadata.namespace=ns1")
    assert s.matches(claim)
    with pytest.raises(BadRequest, match="field label not supported: spec.volumeName"):
        parse_field_selector("persistentvolumeclaims", "spec.volumeName=v")


@pytest.mark.parametrize(
    ("resource", "text", "message"),
    [
        ("pods", "spec.foo=x", "field label not supported: spec.foo"),
        ("nodes", "metadata.namespace=x", "field label not supported: metadata.namespace"),
        ("pods", "spec.nodeName", "invalid field selector: 'spec.nodeName': can't understand"),
        ("pods", "spec.nodeName=a=b", "unescaped '='"),
        ("pods", r"spec.nodeName=a\x", "invalid escape sequence"),
        ("widgets", "a=b", "the server could not find the requested resource"),
    ],
)
def test_bad_field_selectors(resource: str, text: str, message: str) -> None:
    with pytest.raises(BadRequest, match=message.replace("\\", "\\\\")):
        parse_field_selector(resource, text)
