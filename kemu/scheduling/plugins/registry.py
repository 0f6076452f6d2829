"""The plugin registry: plugin name -> factory (upstream framework/runtime/registry.go and
plugins/registry.go): a plain map built from the plugin modules' `NAME` and `new`. The in-tree
registry holds upstream's plugins only; kemu's emulation plugins (kemu.scheduling.emulation)
are merged in explicitly (`merge`), as upstream merges out-of-tree registries.

`extension_points(factory)` says which extension points a plugin implements, from its class:
the class is the factory itself, or the factory's return annotation (the convention
`def new(args, handle) -> NodeResourcesFit`). Profiles need this before any plugin exists; the
runtime checks each instance against the point's protocol with isinstance.
"""

from __future__ import annotations

import importlib.metadata
import inspect
from typing import Final

from kemu.scheduling.interface import PluginFactory, implemented_points
from kemu.scheduling.plugins import (
    balanced_allocation,
    default_binder,
    default_preemption,
    deferred_pod_scheduling,
    dynamic_resources,
    gang_scheduling,
    inter_pod_affinity,
    node_affinity,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    node_volume_limits,
    pod_group_pods_count,
    pod_topology_spread,
    queue_sort,
    scheduling_gates,
    taint_toleration,
    topology_placement,
    volume_binding,
    volume_restrictions,
    volume_zone,
)

Registry = dict[str, PluginFactory]

ENTRY_POINT_GROUP: Final = "kemu.scheduler.plugins"
"""The entry-point group through which an installed package registers plugins: each entry
names a plugin and points at its factory, `new(args, handle)` (docs/plugins.md)."""


def in_tree_registry() -> Registry:
    """Every in-tree plugin, by name (upstream NewInTreeRegistry)."""
    return {
        queue_sort.NAME: queue_sort.new,  # PrioritySort
        scheduling_gates.NAME: scheduling_gates.new,  # SchedulingGates
        node_unschedulable.NAME: node_unschedulable.new,  # NodeUnschedulable
        node_name.NAME: node_name.new,  # NodeName
        taint_toleration.NAME: taint_toleration.new,  # TaintToleration
        node_affinity.NAME: node_affinity.new,  # NodeAffinity
        node_ports.NAME: node_ports.new,  # NodePorts
        deferred_pod_scheduling.NAME: deferred_pod_scheduling.new,  # DeferredPodScheduling
        node_resources_fit.NAME: node_resources_fit.new,  # NodeResourcesFit
        volume_restrictions.NAME: volume_restrictions.new,  # VolumeRestrictions
        node_volume_limits.NAME: node_volume_limits.new,  # NodeVolumeLimits
        volume_binding.NAME: volume_binding.new,  # VolumeBinding
        volume_zone.NAME: volume_zone.new,  # VolumeZone
        pod_topology_spread.NAME: pod_topology_spread.new,  # PodTopologySpread
        balanced_allocation.NAME: balanced_allocation.new,  # NodeResourcesBalancedAllocation
        inter_pod_affinity.NAME: inter_pod_affinity.new,  # InterPodAffinity
        dynamic_resources.NAME: dynamic_resources.new,  # DynamicResources
        default_preemption.NAME: default_preemption.new,  # DefaultPreemption
        default_binder.NAME: default_binder.new,  # DefaultBinder
        gang_scheduling.NAME: gang_scheduling.new,  # GangScheduling
        topology_placement.NAME: topology_placement.new,  # TopologyPlacementGenerator
        pod_group_pods_count.NAME: pod_group_pods_count.new,  # PodGroupPodsCount
    }


def installed_registry(group: str = ENTRY_POINT_GROUP) -> Registry:
    """The plugins installed packages register under `group`, by name (the out-of-tree
    registry upstream builds with app.WithPlugin). ValueError naming an entry that does not
    load or is not a factory."""
    out: Registry = {}
    for entry in sorted(importlib.metadata.entry_points(group=group), key=lambda e: e.name):
        try:
            factory = entry.load()
        except Exception as err:
            raise ValueError(
                f"plugin {entry.name} ({entry.value}, entry point group {group}) does not load: "
                f"{type(err).__name__}: {err}"
            ) from err
        if not callable(factory):
            raise ValueError(
                f"plugin {entry.name} ({entry.value}, entry point group {group}) is not a "
                f"factory: {factory!r}"
            )
        out[entry.name] = factory
    return out


def merge(*registries: Registry) -> Registry:
    """One registry of several (upstream Registry.Merge: the in-tree registry and the
    out-of-tree ones, e.g. kemu.scheduling.emulation's); a name in two of them is an error."""
    out: Registry = {}
    for registry in registries:
        for name, factory in registry.items():
            if name in out:
                raise ValueError(f"a plugin named {name} already exists")
            out[name] = factory
    return out


def plugin_class(factory: PluginFactory) -> type:
    """The class a factory builds: the factory itself if it is a class, otherwise its return
    annotation (resolved in the factory's module). ValueError when it cannot be told."""
    if isinstance(factory, type):
        return factory
    try:
        annotation = inspect.signature(factory).return_annotation
    except (TypeError, ValueError) as err:
        raise ValueError(f"cannot inspect plugin factory {factory!r}: {err}") from err
    if isinstance(annotation, str):
        # `from __future__ import annotations`: a name (possibly dotted) in the factory's module.
        head, *rest = annotation.split(".")
        scope = getattr(factory, "__globals__", {})
        resolved: object = scope.get(head)
        for part in rest:
            resolved = getattr(resolved, part, None)
        annotation = resolved
    if annotation is inspect.Signature.empty or not isinstance(annotation, type):
        raise ValueError(
            f"cannot tell the class of plugin factory {factory!r}: annotate its return type"
        )
    return annotation


def extension_points(factory: PluginFactory) -> frozenset[str]:
    """The extension points (configuration spelling) the factory's plugin class implements."""
    return implemented_points(plugin_class(factory))
