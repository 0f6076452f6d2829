"""The plugin registry: in-tree plugins, and which extension points a factory's class has."""

from __future__ import annotations

from pathlib import Path

import pytest

from kemu.scheduling import emulation
from kemu.scheduling.config import default_config, scheduler_registry
from kemu.scheduling.interface import FilterPlugin, Handle, PluginArgs, ScorePlugin
from kemu.scheduling.plugins.registry import (
    ENTRY_POINT_GROUP,
    extension_points,
    in_tree_registry,
    installed_registry,
    merge,
    plugin_class,
)
from kemu.scheduling.runtime import Framework
from tests.unit.scheduling.fakes import FakeFilterScore, FakePreBind

IN_TREE = {
    "PrioritySort",
    "SchedulingGates",
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "DeferredPodScheduling",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "NodeResourcesBalancedAllocation",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
    "DefaultPreemption",
    "DefaultBinder",
    "GangScheduling",
    "TopologyPlacementGenerator",
    "PodGroupPodsCount",
}
EMULATION = {"SlowPreBind", "WaitingPermit", "TokenFilter", "NodePoolPlacement"}


def annotated_factory(args: PluginArgs, handle: Handle) -> FakePreBind:
    return FakePreBind(args, handle)


def unannotated_factory(args, handle):
    return FakePreBind(args, handle)


def test_the_class_comes_from_the_factory_or_its_return_annotation() -> None:
    assert plugin_class(FakeFilterScore) is FakeFilterScore
    assert plugin_class(annotated_factory) is FakePreBind
    with pytest.raises(ValueError, match="annotate its return type"):
        plugin_class(unannotated_factory)


def test_extension_points_are_the_methods_the_class_has() -> None:
    assert extension_points(annotated_factory) == {"preBind"}
    assert extension_points(FakeFilterScore) == {"preFilter", "filter", "preScore", "score"}


def test_protocol_classes_alone_do_not_count_as_plugins_of_other_points() -> None:
    class OnlyFilter(FilterPlugin):
        NAME = "OnlyFilter"

    class FilterAndScore(FilterPlugin, ScorePlugin):
        NAME = "FilterAndScore"

    assert extension_points(OnlyFilter) == {"filter"}  # type: ignore[arg-type]
    assert extension_points(FilterAndScore) == {"filter", "score"}  # type: ignore[arg-type]


def test_the_scheduler_merges_the_emulation_plugins_into_the_in_tree_registry() -> None:
    assert set(in_tree_registry()) == IN_TREE
    assert set(emulation.registry()) == EMULATION
    assert scheduler_registry() == {**in_tree_registry(), **emulation.registry()}
    with pytest.raises(ValueError, match="a plugin named SlowPreBind already exists"):
        merge(emulation.registry(), emulation.registry())


def test_in_tree_registry_and_default_framework() -> None:
    registry = scheduler_registry()
    assert set(registry) == IN_TREE | EMULATION
    config = default_config(registry)
    fwk = Framework(config.profiles[0], registry)
    plugins = fwk.list_plugins()
    assert plugins["queueSort"] == ("PrioritySort",)
    assert plugins["bind"] == ("DefaultBinder",)
    assert "NodeResourcesFit" in plugins["filter"]
    assert plugins["postFilter"] == ("DynamicResources", "DefaultPreemption")
    assert plugins["preEnqueue"] == (
        "SchedulingGates",
        "DynamicResources",
        "DefaultPreemption",
        "GangScheduling",
    )
    # KEP-5836: DeferredPodScheduling filters before NodeResourcesFit (its rejection of a node
    # that disables resize preemption must be the node's status) and is the only Permit plugin.
    assert plugins["filter"] == (
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "DeferredPodScheduling",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
    )
    # The volume plugins in upstream's order; VolumeBinding reserves, pre-binds and unreserves;
    # DynamicResources (before DefaultPreemption in upstream's list) after it: its PreBind runs
    # once VolumeBinding's is done (KEP-5278's "Handling ResourceClaim status updates").
    assert plugins["reserve"] == ("VolumeBinding", "DynamicResources", "GangScheduling")
    assert plugins["preBind"] == ("VolumeBinding", "DynamicResources")
    # Upstream's default score weights (v1 default_plugins.go).
    assert dict(config.profiles[0].score_weights) == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
        "DynamicResources": 1,  # (its Score from 1.36, for firstAvailable)
        "NodeResourcesBalancedAllocation": 1,
    }
    assert plugins["permit"] == ("DeferredPodScheduling", "GangScheduling")
    # KEP-5732's placement points (run by the pod-group cycle with its gate on), weights 1.
    assert plugins["placementGenerate"] == ("TopologyPlacementGenerator",)
    assert plugins["placementScore"] == ("NodeResourcesFit", "PodGroupPodsCount")
    assert dict(config.profiles[0].placement_score_weights) == {
        "NodeResourcesFit": 1,
        "PodGroupPodsCount": 1,
    }
    # The emulation plugins are registered but only run when a profile enables them.
    for name in EMULATION:
        assert all(name not in names for names in plugins.values())


# ---------------------------------------------------------------- installed (out-of-tree)


def _install(root: Path, name: str, entries: dict[str, str]) -> None:
    """A distribution's metadata as pip leaves it: NAME.dist-info with its entry points."""
    info = root / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = [f"[{ENTRY_POINT_GROUP}]", *(f"{k} = {v}" for k, v in entries.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


def test_installed_plugins_are_found_by_entry_point_and_merged_by_the_scheduler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_plugins.py").write_text(
        "from tests.unit.scheduling.fakes import FakeFilterScore\n"
        "def new(args, handle) -> FakeFilterScore:\n"
        "    return FakeFilterScore(args, handle)\n"
    )
    _install(tmp_path, "my_plugins", {"MyFilter": "my_plugins:new"})
    monkeypatch.syspath_prepend(str(tmp_path))
    installed = installed_registry()
    assert set(installed) == {"MyFilter"}
    assert extension_points(installed["MyFilter"]) >= {"filter", "score"}
    registry = scheduler_registry()
    assert set(registry) == IN_TREE | EMULATION | {"MyFilter"}
    # Given in code too (upstream's app.WithPlugin); a name taken twice is refused.
    assert "Mine" in scheduler_registry({"Mine": installed["MyFilter"]})
    with pytest.raises(ValueError, match="a plugin named MyFilter already exists"):
        scheduler_registry({"MyFilter": installed["MyFilter"]})


def test_an_installed_plugin_that_does_not_load_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(tmp_path, "broken_plugins", {"Broken": "no_such_module_here:new"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError) as raised:
        installed_registry()
    message = str(raised.value)
    assert message.startswith("plugin Broken (no_such_module_here:new, entry point group ")
    assert "does not load: ModuleNotFoundError" in message
