"""`--dra-slice-file FILE`: the simulated DRA drivers of a kubelet and the devices they publish
(and a cloud node group's `resourceSlices`, the same manifests: cloud/config.py).

A real node runs one DRA driver per device vendor; each driver's kubelet plugin publishes the
node's devices as ResourceSlices (upstream staging/src/k8s.io/dynamic-resource-allocation/
kubeletplugin and resourceslice/resourceslicecontroller.go). kemu's kubelet plays every driver
the file names. The file is YAML: ResourceSlice manifests (apiVersion resource.k8s.io/v1, kind
ResourceSlice), one per document, or a `kind: List` / a YAML list of them. Each gives
`spec.driver` and either `spec.devices` (attributes, capacity, consumesCounters, taints,
bindsToNode, bindingConditions, bindingFailureConditions, allowMultipleAllocations) or
`spec.sharedCounters`; metadata labels are published as given. The kubelet fills in what is the
node's: `spec.nodeName`, `spec.pool` (name = the node's name, generation, resourceSliceCount =
the driver's slices in the file), the generated name `<node>-<driver>-<random>` and the owner
reference to the Node; a manifest that sets any of these is refused. Several drivers may share
the file; a driver's slices form its pool.

What the simulated driver does is set by annotations of a slice (kemu's, not published):

- `kubelet.kemu.io/prepare-delay: DURATION`: how long the driver's NodePrepareResources takes
  on the cluster's clock (default 0; one value per driver: its slices must agree);
- `kubelet.kemu.io/binding-delay: DURATION`: how long after a claim's allocation the driver
  reports the binding conditions of the slice's devices allocated in it (status.devices[]
  .conditions; default 0);
- `kubelet.kemu.io/binding-failure-devices: NAME[,NAME...]`: devices of the slice whose
  binding fails: the driver sets their first bindingFailureCondition True instead.

A file that does not parse or breaks these rules is one ValueError naming the document and
the field (the kubelet prints it and exits 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, cast

import yaml

from kemu.api.v1 import types_pb2
from kemu.machinery.convert import from_dict
from kemu.machinery.duration import DurationError, parse_duration
from kemu.machinery.errors import Invalid
from kemu.machinery.kinds import kind_of

PREPARE_DELAY_ANNOTATION: Final = "kubelet.kemu.io/prepare-delay"
BINDING_DELAY_ANNOTATION: Final = "kubelet.kemu.io/binding-delay"
BINDING_FAILURE_DEVICES_ANNOTATION: Final = "kubelet.kemu.io/binding-failure-devices"
_KEMU_PREFIX: Final = "kubelet.kemu.io/"


@dataclass(frozen=True)
class DeviceBinding:
    """How the driver answers the binding conditions of one device."""

    delay: float = 0.0
    fails: bool = False


@dataclass(frozen=True)
class DriverSlices:
    """One simulated driver: its slices as the file gives them (no node, no pool) and its
    behaviour."""

    driver: str
    slices: tuple[types_pb2.ResourceSlice, ...]
    prepare_delay: float = 0.0
    bindings: Mapping[str, DeviceBinding] = field(default_factory=dict)
    """Device name -> how its binding conditions are answered (every device of the driver)."""

    def binding(self, device: str) -> DeviceBinding:
        return self.bindings.get(device, DeviceBinding())


@dataclass(frozen=True)
class DraDrivers:
    """Every driver of the file, in the order it names them."""

    drivers: tuple[DriverSlices, ...] = ()

    def driver(self, name: str) -> DriverSlices | None:
        for d in self.drivers:
            if d.driver == name:
                return d
        return None

    def __bool__(self) -> bool:
        return bool(self.drivers)

    def binds_devices(self) -> bool:
        """Whether a device of the file has bindingConditions (its driver then answers them,
        as a driver's controller: kubelet/dra_driver.py)."""
        return any(
            device.binding_conditions
            for driver in self.drivers
            for s in driver.slices
            for device in s.spec.devices
        )


NO_DRIVERS: Final = DraDrivers()


def load_slice_file(path: str | Path) -> DraDrivers:
    """Reads and checks the file; ValueError naming the document and field otherwise."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ValueError(f"cannot read it: {e.strerror}") from None
    return parse_slice_file(text)


def parse_slice_file(text: str) -> DraDrivers:
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as e:
        raise ValueError(f"not YAML: {str(e).splitlines()[0]}") from None
    manifests: list[tuple[str, object]] = []
    for i, doc in enumerate(documents):
        where = f"document {i + 1}"
        if isinstance(doc, list):
            manifests.extend((f"{where}[{j}]", item) for j, item in enumerate(doc))
        elif isinstance(doc, dict) and doc.get("kind") == "List":
            items = doc.get("items", [])
            if not isinstance(items, list):
                raise ValueError(f"{where}: items: expected a list")
            manifests.extend((f"{where}: items[{j}]", item) for j, item in enumerate(items))
        else:
            manifests.append((where, doc))
    if not manifests:
        raise ValueError("no ResourceSlice in the file")
    return read_manifests(manifests)


def read_manifests(manifests: Sequence[tuple[str, object]]) -> DraDrivers:
    """The drivers of ResourceSlice manifests, each given with where it is (named in the
    errors): the file's documents, or a cloud node group's `resourceSlices`."""
    by_driver: dict[str, list[tuple[str, types_pb2.ResourceSlice]]] = {}
    for where, manifest in manifests:
        slice_ = _read_slice(where, manifest)
        by_driver.setdefault(slice_.spec.driver, []).append((where, slice_))
    return DraDrivers(tuple(_driver(name, slices) for name, slices in by_driver.items()))


def _read_slice(where: str, manifest: object) -> types_pb2.ResourceSlice:
    try:
        msg = from_dict(kind_of(types_pb2.ResourceSlice()), manifest)
    except Invalid as e:
        raise ValueError(f"{where}: {e}") from None
    slice_ = cast(types_pb2.ResourceSlice, msg)
    meta, spec = slice_.metadata, slice_.spec
    for path, given in (
        ("metadata.name", bool(meta.name)),
        ("metadata.generateName", bool(meta.generate_name)),
        ("metadata.ownerReferences", bool(meta.owner_references)),
        ("spec.nodeName", spec.HasField("node_name")),
        ("spec.pool", spec.HasField("pool")),
        ("spec.nodeSelector", spec.HasField("node_selector")),
        ("spec.allNodes", spec.HasField("all_nodes")),
        ("spec.perDeviceNodeSelection", spec.HasField("per_device_node_selection")),
    ):
        if given:
            raise ValueError(f"{where}: {path}: must not be set: the kubelet sets it")
    if not spec.driver:
        raise ValueError(f"{where}: spec.driver: Required value")
    if not spec.devices and not spec.shared_counters:
        raise ValueError(f"{where}: spec.devices: Required value: no devices nor sharedCounters")
    names = [d.name for d in spec.devices]
    for i, name in enumerate(names):
        if not name:
            raise ValueError(f"{where}: spec.devices[{i}].name: Required value")
    return slice_


def _seconds(where: str, annotations: Mapping[str, str], key: str) -> float | None:
    text = annotations.get(key)
    if text is None:
        return None
    try:
        value = parse_duration(text)
    except DurationError:
        raise ValueError(
            f"{where}: metadata.annotations[{key}]: {text!r} is not a duration"
        ) from None
    if value < 0:
        raise ValueError(f"{where}: metadata.annotations[{key}]: must not be negative")
    return value


def _driver(name: str, slices: Sequence[tuple[str, types_pb2.ResourceSlice]]) -> DriverSlices:
    prepare: float | None = None
    bindings: dict[str, DeviceBinding] = {}
    published: list[types_pb2.ResourceSlice] = []
    for where, slice_ in slices:
        annotations = dict(slice_.metadata.annotations)
        delay = _seconds(where, annotations, PREPARE_DELAY_ANNOTATION)
        if delay is not None:
            if prepare is not None and delay != prepare:
                raise ValueError(
                    f"{where}: metadata.annotations[{PREPARE_DELAY_ANNOTATION}]: driver "
                    f"{name} already has a prepare delay of {prepare:g}s"
                )
            prepare = delay
        binding_delay = _seconds(where, annotations, BINDING_DELAY_ANNOTATION) or 0.0
        devices = {d.name for d in slice_.spec.devices}
        failing = {
            n.strip()
            for n in annotations.get(BINDING_FAILURE_DEVICES_ANNOTATION, "").split(",")
            if n.strip()
        }
        unknown = sorted(failing - devices)
        if unknown:
            raise ValueError(
                f"{where}: metadata.annotations[{BINDING_FAILURE_DEVICES_ANNOTATION}]: "
                f"no device {unknown[0]!r} in this slice"
            )
        for device in slice_.spec.devices:
            if device.name in bindings:
                raise ValueError(
                    f"{where}: spec.devices: Duplicate value: device {device.name!r} of driver "
                    f"{name} is named twice"
                )
            bindings[device.name] = DeviceBinding(binding_delay, device.name in failing)
        out = types_pb2.ResourceSlice()
        out.CopyFrom(slice_)
        for key in annotations:
            if key.startswith(_KEMU_PREFIX):
                del out.metadata.annotations[key]
        published.append(out)
    return DriverSlices(name, tuple(published), prepare or 0.0, bindings)


def slices_for_node(
    driver: DriverSlices, node: str, *, node_uid: str, generation: int
) -> list[types_pb2.ResourceSlice]:
    """The driver's slices as the node publishes them at pool `generation`: nodeName and
    pool filled in, generateName `<node>-<driver>-` and the Node as controlling owner
    (upstream's resourceslice controller, whose owner is the Node for a kubelet plugin)."""
    out = []
    for template in driver.slices:
        s = types_pb2.ResourceSlice()
        s.CopyFrom(template)
        s.metadata.generate_name = f"{node}-{driver.driver}-".replace("/", "-")
        ref = s.metadata.owner_references.add()
        ref.api_version, ref.kind, ref.name, ref.uid = "v1", "Node", node, node_uid
        ref.controller = True
        s.spec.node_name = node
        s.spec.pool.name = node
        s.spec.pool.generation = generation
        s.spec.pool.resource_slice_count = len(driver.slices)
        out.append(s)
    return out
