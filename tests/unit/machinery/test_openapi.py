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


def test_s_api_json_5_struct_fields_are_upstreams_object_refs() -> None:
    """struct_fields.json against upstream's OpenAPI: each listed field is a property of
    its definition that refers to an object definition (a Go struct value, which upstream's
    OpenAPI v3 marks `default: {}`), never a list, map or scalar."""
    defs = openapi.definitions(openapi.NEWEST_MINOR)
    listed = openapi._struct_fields()
    assert "io.k8s.api.core.v1.ServiceStatus" in listed
    for name, fields in listed.items():
        assert name in defs, name
        for f in fields:
            prop = defs[name].properties.get(f)
            assert prop is not None and prop.ref, (name, f)
            assert defs[prop.ref].type == "object", (name, f)


def _struct_paths(value: Any, definition: str, path: str) -> list[str]:
    """Every path under `value` (upstream's JSON of `definition`) where upstream's encoder
    writes a struct value, found by walking the OpenAPI refs (not kemu's descriptors)."""
    defs = openapi.definitions(openapi.NEWEST_MINOR)
    listed = openapi._struct_fields()
    out: list[str] = []
    if not isinstance(value, dict) or definition not in defs:
        return out
    for f in listed.get(definition, ()):
        out.append(f"{path}.{f}")
    for key, sub in value.items():
        prop = defs[definition].properties.get(key)
        if prop is None:
            continue
        if prop.ref:
            out += _struct_paths(sub, prop.ref, f"{path}.{key}")
        elif prop.items is not None and prop.items.ref and isinstance(sub, list):
            for i, item in enumerate(sub):
                out += _struct_paths(item, prop.items.ref, f"{path}.{key}[{i}]")
    return out


def _has(value: Any, path: str) -> bool:
    for part in path.strip(".").split("."):
        name, _, index = part.partition("[")
        if not isinstance(value, dict) or name not in value:
            return False
        value = value[name]
        if index:
            value = value[int(index.rstrip("]"))]
    return isinstance(value, dict)


def test_s_api_json_5_every_served_kind_writes_its_empty_structs() -> None:
    """Over every kind (an empty object, and one with a container, a container status, a
    template and an ingress backend where the kind has them): wherever upstream's Go type has
    a struct value that kemu's message models, the wire JSON has an object there, empty or
    not; the stored JSON (the registry's patch round trip) writes none of them."""
    checked = 0
    for kind in KINDS:
        msg = kind.message()
        if isinstance(msg, types_pb2.CustomObject):
            continue
        spec = getattr(msg, "spec", None)
        template = getattr(spec, "template", None)
        if isinstance(template, types_pb2.PodTemplateSpec):
            template.spec.containers.add(name="c")
        if isinstance(msg, types_pb2.Pod):
            msg.spec.containers.add(name="c")
            msg.status.container_statuses.add(name="c")
        if isinstance(msg, types_pb2.Ingress):
            msg.spec.rules.add().http.paths.add().backend.service.name = "s"
        wire: Any = convert.to_dict(msg, wire=True)
        definition = openapi.schema_for(kind.kind, kind.api_version).name
        for path in _struct_paths(wire, definition, ""):
            parent, _, field = path.rpartition(".")
            modelled = _modelled(msg, parent, field)
            if modelled:
                assert _has(wire, path), (kind.kind, path)
                checked += 1
        assert "status" not in convert.to_dict(kind.message()) or kind.kind == "Namespace"
    assert checked > 100, checked
    svc: Any = convert.to_dict(types_pb2.Service(), wire=True)
    assert svc["status"] == {"loadBalancer": {}}
    ing: Any = convert.to_dict(types_pb2.Ingress(), wire=True)
    assert ing["status"] == {"loadBalancer": {}}
    deploy = types_pb2.Deployment()
    deploy.spec.template.spec.containers.add(name="c")
    d: Any = convert.to_dict(deploy, wire=True)
    assert d["spec"]["template"]["metadata"] == {} and d["spec"]["strategy"] == {}
    assert d["spec"]["template"]["spec"]["containers"][0]["resources"] == {}


def _modelled(msg: Message, parent: str, field: str) -> bool:
    """kemu's message at `parent` (a JSON path) has the JSON field `field`."""
    desc = _descriptor(msg)
    for part in [p for p in parent.strip(".").split(".") if p]:
        name = part.partition("[")[0]
        fd = next((f for f in desc.fields if f.json_name == name), None)
        if fd is None or fd.message_type is None:
            return False
        desc = fd.message_type
    return any(f.json_name == field for f in desc.fields)


def test_s_api_json_5_every_kinds_spec_and_status_are_listed_struct_values() -> None:
    """Every kind kemu serves declares its spec and status as struct values upstream (never
    pointers): a kind added without its entry in struct_fields.json fails here."""
    listed = openapi._struct_fields()
    for kind in KINDS:
        for gv in kind.api_versions_at(openapi.NEWEST_MINOR):
            definition = openapi.schema_for(kind.kind, gv)
            for name in ("spec", "status"):
                prop = definition.properties.get(name)
                if prop is not None and prop.ref:
                    assert name in listed.get(definition.name, ()), (definition.name, name)
