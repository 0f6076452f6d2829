"""A status subresource write's validation (upstream ValidatePodStatusUpdate): the pod's spec
is the stored one, so only the metadata and status rules run, and they find what the full
update validation finds."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.usage import CPU_USAGE_ANNOTATION
from kemu.machinery.validation.objects import validate_object, validate_status_update
from kemu.testing.builders import make_pod

STORED = make_pod("p").namespace("ns").uid("u1").req(cpu="100m").label("app", "a").node("n1").obj()
STORED.status.qos_class = "Burstable"
STORED.status.phase = "Running"


def _written(change: Callable[[types_pb2.Pod], None]) -> types_pb2.Pod:
    """What a status write stores: the stored pod (its spec kept) with `change` applied."""
    new = types_pb2.Pod()
    new.CopyFrom(STORED)
    change(new)
    return new


def _nominate(name: str) -> Callable[[types_pb2.Pod], None]:
    def change(p: types_pb2.Pod) -> None:
        p.status.nominated_node_name = name

    return change


def _pod_ip(ip: str) -> Callable[[types_pb2.Pod], None]:
    def change(p: types_pb2.Pod) -> None:
        p.status.pod_ip = ip
        p.status.pod_ips.add(ip=ip)

    return change


def _qos(value: str) -> Callable[[types_pb2.Pod], None]:
    def change(p: types_pb2.Pod) -> None:
        p.status.qos_class = value

    return change


def _label(key: str) -> Callable[[types_pb2.Pod], None]:
    def change(p: types_pb2.Pod) -> None:
        p.metadata.labels[key] = "v"

    return change


def _uid(value: str) -> Callable[[types_pb2.Pod], None]:
    def change(p: types_pb2.Pod) -> None:
        p.metadata.uid = value

    return change


def _usage(value: str) -> Callable[[types_pb2.Pod], None]:
    def change(p: types_pb2.Pod) -> None:
        p.metadata.annotations[CPU_USAGE_ANNOTATION] = value

    return change


CASES: dict[str, tuple[Callable[[types_pb2.Pod], None], str | None]] = {
    "a valid status": (_pod_ip("10.0.0.5"), None),
    "a nominated node that is no name": (_nominate("Not_A_Node"), "status.nominatedNodeName"),
    "a pod IP that is no address": (_pod_ip("10.0.0.300"), "status.podIPs[0]"),
    "the QoS class changed": (_qos("Guaranteed"), "status.qosClass"),
    "a label key that is no name": (_label("bad key!"), "metadata.labels"),
    "the uid changed": (_uid("u2"), "metadata.uid"),
    "a usage annotation that is no quantity": (
        _usage("lots"),
        f"metadata.annotations[{CPU_USAGE_ANNOTATION}]",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_pod_status_write_finds_what_the_full_update_validation_finds(case: str) -> None:
    change, field = CASES[case]
    new = _written(change)
    causes = validate_status_update(new, STORED)
    assert causes == validate_object(new, old=STORED)
    if field is None:
        assert causes == []
    else:
        assert causes and all(c.field.startswith(field) for c in causes), causes


def test_a_pod_status_write_does_not_validate_the_stored_spec_again() -> None:
    """The spec is the stored one: a rule the spec would break (a stored pod from before a
    rule existed, say) does not refuse a status write, as upstream's status update."""
    stored = types_pb2.Pod()
    stored.CopyFrom(STORED)
    stored.spec.containers[0].name = "Not_A_Name"
    new = types_pb2.Pod()
    new.CopyFrom(stored)
    new.status.phase = "Succeeded"
    assert any(c.field == "spec.containers[0].name" for c in validate_object(new, old=stored))
    assert validate_status_update(new, stored) == []


def test_another_kinds_status_write_is_validated_as_an_update() -> None:
    old = types_pb2.Node()
    old.metadata.name, old.metadata.uid = "n1", "u1"
    new = types_pb2.Node()
    new.CopyFrom(old)
    new.metadata.uid = "u2"
    assert validate_status_update(new, old) == validate_object(new, old=old) != []
    with pytest.raises(TypeError, match="old is kemu.api.v1.Node, not kemu.api.v1.Pod"):
        validate_status_update(STORED, old)
