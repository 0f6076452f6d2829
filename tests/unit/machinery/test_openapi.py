"""kemu.machinery.openapi: upstream's definitions per minor, the typed lookups server-side
apply and kubectl read, and the fields upstream's encoder always writes (S-API-OPENAPI-3,
S-API-JSON-4)."""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery import convert, openapi
from kemu.machinery.kinds import KINDS
from kemu.testing.builders import make_pod


def _descriptor(msg: Message) -> Descriptor:
    desc: Descriptor = msg.DESCRIPTOR  # type: ignore[assignment]
    return desc


def test_every_kind_has_its_definition_at_every_version_it_is_served() -> None:
    for minor in range(21, openapi.NEWEST_MINOR + 1):
        for kind in KINDS:
            for gv in kind.api_versions_at(minor):
                schema = openapi.schema_for(kind.kind, gv, minor)
                assert schema.description, (minor, gv, kind.kind)
                group, _, version = gv.rpartition("/")
                assert openapi.GroupVersionKind(group, version, kind.kind) in schema.gvks


def test_list_map_keys_and_patch_strategies_come_from_upstream() -> None:
    assert openapi.list_map_keys("Pod", "v1", ("spec", "containers")) == ("name",)
    ports = ("spec", "containers", "ports")
    assert openapi.list_map_keys("Pod", "v1", ports) == ("containerPort", "protocol")
    assert openapi.list_type("Pod", "v1", ("spec", "tolerations")) == "atomic"
    assert openapi.list_type("Pod", "v1", ("metadata", "finalizers")) == "set"
    volumes = openapi.field("Pod", "v1", ("spec", "volumes"))
    assert volumes is not None and volumes.patch_strategy == "merge,retainKeys"
    assert volumes.patch_merge_key == "name" and volumes.items is not None
    assert volumes.items.ref == "io.k8s.api.core.v1.Volume"
    svc_ports = ("spec", "ports")
    assert openapi.list_map_keys("Service", "v1", svc_ports) == ("port", "protocol")
    assert openapi.field("Pod", "v1", ("spec", "nope")) is None
    assert openapi.list_map_keys("Pod", "v1", ("spec", "nodeName")) == ()


def test_older_minors_are_the_newest_with_their_differences() -> None:
    # resource.k8s.io/v1 is 1.34's; 1.21..1.24 read 1.25's definitions
    assert "io.k8s.api.resource.v1.DeviceClass" in openapi.definitions(37)
    assert "io.k8s.api.resource.v1.DeviceClass" not in openapi.definitions(33)
    assert openapi.raw_definitions(21) is openapi.raw_definitions(25)
    pod_spec_37 = openapi.definitions(37)["io.k8s.api.core.v1.PodSpec"].properties
    pod_spec_25 = openapi.definitions(25)["io.k8s.api.core.v1.PodSpec"].properties
    assert "resourceClaims" in pod_spec_37 and "resourceClaims" not in pod_spec_25
    assert pod_spec_25["containers"].list_map_keys == ()  # (1.25's had none)
    assert pod_spec_25["containers"].patch_merge_key == "name"


def test_kemus_messages_map_to_upstreams_definitions() -> None:
    status = openapi.definition_of_message(_descriptor(types_pb2.ContainerStatus()))
    assert status is not None and status.name == "io.k8s.api.core.v1.ContainerStatus"
    written = dict(openapi.always_written(_descriptor(types_pb2.NodeSystemInfo())))
    assert len(written) == 10 and written["machineID"] == ""


def test_wire_json_writes_what_upstreams_encoder_always_writes() -> None:
    pod = make_pod("p").obj()
    cs = pod.status.container_statuses.add()
    cs.name = "c"
    wire: Any = convert.to_dict(pod, wire=True)
    status = wire["status"]["containerStatuses"][0]
    assert status["restartCount"] == 0 and status["imageID"] == "" and status["ready"] is False
    node = types_pb2.Node()
    node.metadata.name = "n"
    node.status.node_info.kubelet_version = "v1.37.0"
    wired: Any = convert.to_dict(node, wire=True)
    info = wired["status"]["nodeInfo"]
    assert info["kubeletVersion"] == "v1.37.0" and info["bootID"] == "" and len(info) == 10
    # what is stored round-trips unchanged (the registry's patches)
    stored: Any = convert.to_dict(pod)
    assert "restartCount" not in stored["status"]["containerStatuses"][0]
