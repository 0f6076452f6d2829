"""The plugin registry: plugin name -> factory (upstream framework/runtime/registry.go and
plugins/registry.go).

Each in-tree plugin module has `NAME` and a factory `new(args, handle)`. `in_tree_registry()`
imports them when called, not when this module is imported, so the registry (and the profile
configuration that uses it) can be loaded with test registries.

`extension_points(factory)` says which extension points a plugin implements, from its class:
the class is the factory itself, or the factory's return annotation (the convention
`def new(args, handle) -> NodeResourcesFit`). A class implements a point when it has the
point's method (`filter`, `score`, ...), which is what `isinstance` against a runtime-checkable
protocol would check; plugins subclass the protocols, so the methods are there.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Final

from kemu.scheduling.interface import PluginFactory

Registry = dict[str, PluginFactory]

# Extension point (as spelled in KubeSchedulerConfiguration) -> the method that implements it.
POINT_METHODS: Final[dict[str, str]] = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "less",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}

# Modules of kemu.scheduling.plugins that every build has.
IN_TREE_MODULES: Final = (
    "queue_sort",  # PrioritySort
    "scheduling_gates",  # SchedulingGates
    "node_unschedulable",  # NodeUnschedulable
    "node_name",  # NodeName
    "taint_toleration",  # TaintToleration
    "node_affinity",  # NodeAffinity
    "node_resources_fit",  # NodeResourcesFit
    "balanced_allocation",  # NodeResourcesBalancedAllocation
    "inter_pod_affinity",  # InterPodAffinity
    "default_preemption",  # DefaultPreemption
    "default_binder",  # DefaultBinder
    "slow_pre_bind",  # SlowPreBind (emulation, KEP-5278 scenarios)
    "waiting_permit",  # WaitingPermit (emulation)
    "token_filter",  # TokenFilter (emulation)
)
_PACKAGE: Final = "kemu.scheduling.plugins"


def _register(registry: Registry, module_name: str) -> None:
    module = importlib.import_module(f"{_PACKAGE}.{module_name}")
    name = module.NAME
    factory = module.new
    if not isinstance(name, str) or not callable(factory):
        raise TypeError(f"plugin module {module_name} must define NAME (str) and new()")
    if name in registry:
        raise ValueError(f"plugin {name!r} registered twice (module {module_name})")
    registry[name] = factory


def in_tree_registry() -> Registry:
    """Every in-tree plugin, by name. Imports the plugin modules."""
    registry: Registry = {}
    for module_name in IN_TREE_MODULES:
        _register(registry, module_name)
    return registry


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
    cls = plugin_class(factory)
    return frozenset(
        point for point, method in POINT_METHODS.items() if callable(getattr(cls, method, None))
    )
