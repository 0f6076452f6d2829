"""The cloud's config file (`--config FILE`, YAML): its node groups.

    nodeGroups:
    - name: pool-a
      minSize: 0
      maxSize: 5
      template:
        capacity: {cpu: "2", memory: 4Gi, pods: "20"}
        labels: {disk: ssd}
        taints: []                   # as in a Node spec
        kubeletArgs: ["--emulated-version", "1.36"]
      externalNodes: false           # true: the cloud runs no kubelet for its instances
      resourceSlices:                # the DRA devices its nodes publish (optional)
      - apiVersion: resource.k8s.io/v1
        kind: ResourceSlice
        spec:
          driver: gpu.example.com
          devices: [{name: gpu-0}, {name: gpu-1}]
      failures:                      # kemu's injected failures (optional)
        neverReady: 0                # the next N instances never come up
        outOfCapacity: false         # new instances fail with OutOfResources

`externalNodes: true` is for loads larger than one kubelet process per instance allows (the
autoscaler bench's 1000 nodes): the group's instances run no kubelet; whoever makes the load
registers each instance's Node (its name, `spec.providerID` kemu://<group>/<instance>, the
label kemu.io/node-group) and the instance is running while that Node is Ready.

`resourceSlices`: ResourceSlice manifests, the shape of a kubelet's `--dra-slice-file` (its
kemu annotations too): every instance's kubelet publishes them as its node's pool (the cloud
writes them to a file and passes --dra-slice-file), and the group's template node carries them
(NodeGroupTemplateNodeInfo's resource_slice_bytes: upstream TemplateNodeInfo's
LocalResourceSlices), so that a group scaled to zero still scales up for a pod's claims.
What a kubelet fills in (metadata.name, generateName, ownerReferences, spec.nodeName,
spec.pool, nodeSelector, allNodes, perDeviceNodeSelection) must not be set.

Unknown fields and bad values are a ConfigError naming the field (`nodeGroups[0].maxSize:
...`). Group names become part of instance and Node names, so they are DNS labels.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import yaml

from kemu.api.v1 import types_pb2
from kemu.machinery.convert import fill_message
from kemu.machinery.dra_slice_file import read_manifests, slices_for_node
from kemu.machinery.errors import Invalid
from kemu.machinery.quantity import format_resource, to_int
from kemu.machinery.validation.meta import validate_labels

NODE_GROUP_LABEL: Final = "kemu.io/node-group"
"""The label every instance's Node carries: the name of its group."""

_DNS_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_MAX_GROUP_NAME: Final = 40
_TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# The kubelet flags the cloud sets itself for every instance.
_RESERVED_KUBELET_FLAGS: Final = (
    "--server",
    "--server-order",
    "--node-name",
    "--nodes",
    "--node-name-prefix",
    "--node-control",
    "--capacity",
    "--node-labels",
    "--register-with-taints",
    "--provider-id",
    "--node-ip",
    "--root-dir",
    "--metrics-port",
    "--dra-slice-file",
)


class ConfigError(ValueError):
    """The config is malformed; the message names the field."""


@dataclass(frozen=True)
class Failures:
    """kemu's injected failures of a group (see the module docstring)."""

    never_ready: int = 0
    out_of_capacity: bool = False


@dataclass(frozen=True)
class NodeTemplate:
    capacity: Mapping[str, str]
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[types_pb2.Taint, ...] = ()
    kubelet_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeGroupConfig:
    name: str
    min_size: int
    max_size: int
    template: NodeTemplate
    failures: Failures = Failures()
    external_nodes: bool = False
    """externalNodes: the instances run no kubelet; their Nodes are registered by others."""
    resource_slices: tuple[Mapping[str, object], ...] = ()
    """resourceSlices: the manifests as given (what the kubelets' --dra-slice-file holds)."""

    def template_resource_slices(self, node_name: str) -> list[types_pb2.ResourceSlice]:
        """The slices a node `node_name` of the group publishes, as its kubelet fills them in
        (spec.nodeName, spec.pool: name = the node, generation 1, resourceSliceCount = the
        driver's slices), kemu's annotations dropped (upstream's template node's
        LocalResourceSlices)."""
        drivers = read_manifests([("", m) for m in self.resource_slices])
        parsed: list[types_pb2.ResourceSlice] = []
        for driver in drivers.drivers:
            for s in slices_for_node(driver, node_name, node_uid="", generation=1):
                s.metadata.name = f"{node_name}-{driver.driver}-{len(parsed)}".replace("/", "-")
                s.metadata.generate_name = ""
                del s.metadata.owner_references[:]
                parsed.append(s)
        return parsed


@dataclass(frozen=True)
class CloudConfig:
    node_groups: tuple[NodeGroupConfig, ...]

    def group(self, name: str) -> NodeGroupConfig | None:
        return next((g for g in self.node_groups if g.name == name), None)


def load_config(path: Path) -> CloudConfig:
    """Reads and validates the file; ConfigError (naming the file and field) otherwise."""
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror or e}") from None
    try:
        return parse_config(text)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def parse_config(text: str) -> CloudConfig:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"not valid YAML: {e}") from None
    if data is None:
        data = {}
    obj = _object(data, "<root>", {"nodeGroups"})
    groups_data = obj.get("nodeGroups", [])
    if not isinstance(groups_data, list):
        raise ConfigError(f"nodeGroups: expected a list, got {_type(groups_data)}")
    groups = tuple(_group(g, f"nodeGroups[{i}]") for i, g in enumerate(groups_data))
    seen: set[str] = set()
    for i, g in enumerate(groups):
        if g.name in seen:
            raise ConfigError(f"nodeGroups[{i}].name: duplicate group name {g.name!r}")
        seen.add(g.name)
    return CloudConfig(node_groups=groups)


def _group(data: object, path: str) -> NodeGroupConfig:
    obj = _object(
        data,
        path,
        {"name", "minSize", "maxSize", "template", "failures", "externalNodes", "resourceSlices"},
    )
    for required in ("name", "maxSize", "template"):
        if required not in obj:
            raise ConfigError(f"{path}.{required}: required")
    name = obj["name"]
    if not isinstance(name, str) or not _DNS_LABEL.match(name) or len(name) > _MAX_GROUP_NAME:
        raise ConfigError(
            f"{path}.name: {name!r} must be a DNS label of at most {_MAX_GROUP_NAME} characters "
            "(lower-case letters, digits and '-')"
        )
    min_size = _int(obj.get("minSize", 0), f"{path}.minSize")
    max_size = _int(obj["maxSize"], f"{path}.maxSize")
    if max_size < min_size:
        raise ConfigError(f"{path}.maxSize: {max_size} is less than minSize {min_size}")
    external = obj.get("externalNodes", False)
    if not isinstance(external, bool):
        raise ConfigError(f"{path}.externalNodes: expected true or false")
    return NodeGroupConfig(
        name=name,
        min_size=min_size,
        max_size=max_size,
        template=_template(obj["template"], f"{path}.template", name),
        failures=_failures(obj.get("failures", {}), f"{path}.failures"),
        external_nodes=external,
        resource_slices=_resource_slices(obj.get("resourceSlices", []), f"{path}.resourceSlices"),
    )


def _resource_slices(data: object, path: str) -> tuple[Mapping[str, object], ...]:
    """The group's ResourceSlice manifests, checked as the kubelet's --dra-slice-file is
    (kemu.machinery.dra_slice_file)."""
    if not isinstance(data, list):
        raise ConfigError(f"{path}: expected a list, got {_type(data)}")
    objects = [_object(item, f"{path}[{i}]", None) for i, item in enumerate(data)]
    try:
        read_manifests([(f"{path}[{i}]", obj) for i, obj in enumerate(objects)])
    except ValueError as e:
        raise ConfigError(str(e)) from None
    return tuple(objects)


def _template(data: object, path: str, group: str) -> NodeTemplate:
    obj = _object(data, path, {"capacity", "labels", "taints", "kubeletArgs"})
    if "capacity" not in obj:
        raise ConfigError(f"{path}.capacity: required")
    capacity_data = _object(obj["capacity"], f"{path}.capacity", None)
    capacity: dict[str, str] = {}
    for name, value in capacity_data.items():
        fpath = f"{path}.capacity.{name}"
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ConfigError(f"{fpath}: expected a quantity, got {_type(value)}")
        try:
            capacity[name] = format_resource(name, to_int(name, str(value), fpath))
        except Invalid as e:
            raise ConfigError(str(e)) from None
    if "cpu" not in capacity or "memory" not in capacity:
        raise ConfigError(f"{path}.capacity: cpu and memory are required")
    capacity.setdefault("pods", "110")
    labels_data = _object(obj.get("labels", {}), f"{path}.labels", None)
    labels: dict[str, str] = {}
    for key, value in labels_data.items():
        if not isinstance(value, str):
            raise ConfigError(f"{path}.labels.{key}: expected a string, got {_type(value)}")
        labels[key] = value
    causes = validate_labels(labels, f"{path}.labels")
    if causes:
        raise ConfigError(f"{causes[0].field}: {causes[0].message}")
    if NODE_GROUP_LABEL in labels and labels[NODE_GROUP_LABEL] != group:
        raise ConfigError(f"{path}.labels.{NODE_GROUP_LABEL}: the cloud sets it to {group!r}")
    taints = _taints(obj.get("taints", []), f"{path}.taints")
    args = obj.get("kubeletArgs", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{path}.kubeletArgs: expected a list of strings")
    for i, arg in enumerate(args):
        flag = arg.split("=", 1)[0]
        if flag in _RESERVED_KUBELET_FLAGS:
            raise ConfigError(f"{path}.kubeletArgs[{i}]: {flag} is set by the cloud")
    return NodeTemplate(
        capacity=capacity, labels=labels, taints=tuple(taints), kubelet_args=tuple(args)
    )


def _taints(data: object, path: str) -> list[types_pb2.Taint]:
    if not isinstance(data, list):
        raise ConfigError(f"{path}: expected a list, got {_type(data)}")
    taints = []
    for i, item in enumerate(data):
        ipath = f"{path}[{i}]"
        taint = types_pb2.Taint()
        try:
            fill_message(taint, item, ipath)
        except Invalid as e:
            raise ConfigError(str(e)) from None
        if not taint.key:
            raise ConfigError(f"{ipath}.key: required")
        if taint.effect not in _TAINT_EFFECTS:
            raise ConfigError(
                f"{ipath}.effect: {taint.effect!r} must be one of {', '.join(_TAINT_EFFECTS)}"
            )
        taints.append(taint)
    return taints


def _failures(data: object, path: str) -> Failures:
    obj = _object(data, path, {"neverReady", "outOfCapacity"})
    never_ready = _int(obj.get("neverReady", 0), f"{path}.neverReady")
    out_of_capacity = obj.get("outOfCapacity", False)
    if not isinstance(out_of_capacity, bool):
        raise ConfigError(f"{path}.outOfCapacity: expected true or false")
    return Failures(never_ready=never_ready, out_of_capacity=out_of_capacity)


def _object(data: object, path: str, known: set[str] | None) -> dict[str, object]:
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected an object, got {_type(data)}")
    for key in data:
        if not isinstance(key, str):
            raise ConfigError(f"{path}: keys must be strings, got {key!r}")
        if known is not None and key not in known:
            prefix = "" if path == "<root>" else f"{path}."
            raise ConfigError(f'{prefix}{key}: unknown field "{key}"')
    return data


def _int(value: object, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{path}: expected an integer, got {_type(value)}")
    if value < 0:
        raise ConfigError(f"{path}: {value} must not be negative")
    return value


def _type(value: object) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )
