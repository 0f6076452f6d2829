"""The controller-manager's settings, built once by `main` from its flags and frozen.

`ControllerConfigurations` holds the controllers' own flags, one group per controller as
upstream's KubeControllerManagerConfiguration does (pkg/controller/apis/config/types.go:
NodeLifecycleController, PodGCController, GarbageCollectorController, NodeIPAMController,
PersistentVolumeBinderController; kemu's simulated provisioner besides);
`ControllerManagerSettings` is the whole tree `run` takes.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection
from dataclasses import dataclass, field

from controllermanager import node_ipam, node_lifecycle, podgc
from controllermanager.garbagecollector import garbagecollector
from controllermanager.persistentvolume import pv_controller, simulated_provisioner
from kemu.client.leaderelection import LeaderElectionConfig


@dataclass(frozen=True)
class ControllerConfigurations:
    node_lifecycle_controller: node_lifecycle.NodeLifecycleOptions = field(
        default_factory=node_lifecycle.NodeLifecycleOptions
    )
    garbage_collector_controller: garbagecollector.GarbageCollectorOptions = field(
        default_factory=garbagecollector.GarbageCollectorOptions
    )
    node_ipam_controller: node_ipam.NodeIpamOptions | None = None
    """None without --allocate-node-cidrs: the nodeipam controller does not run."""
    pod_gc_controller: podgc.PodGCOptions = field(default_factory=podgc.PodGCOptions)
    persistent_volume_binder_controller: pv_controller.PVBinderOptions = field(
        default_factory=pv_controller.PVBinderOptions
    )
    simulated_provisioner: simulated_provisioner.SimulatedProvisionerOptions = field(
        default_factory=simulated_provisioner.SimulatedProvisionerOptions
    )

    @classmethod
    def from_args(
        cls, args: argparse.Namespace, enabled: Collection[str] | None = None
    ) -> ControllerConfigurations:
        """The groups of the `enabled` controllers (every one by default) from their flags, the
        others at their defaults (a flag of a disabled controller is not checked, as
        upstream's, which reads a controller's options when it starts it). ValueError naming
        the flag for a bad value."""

        def on(name: str) -> bool:
            return enabled is None or name in enabled

        d = cls()
        return cls(
            node_lifecycle_controller=node_lifecycle.options_from_args(args)
            if on(node_lifecycle.NAME)
            else d.node_lifecycle_controller,
            garbage_collector_controller=garbagecollector.options_from_args(args)
            if on(garbagecollector.NAME)
            else d.garbage_collector_controller,
            node_ipam_controller=node_ipam.options_from_args(args) if on(node_ipam.NAME) else None,
            pod_gc_controller=podgc.options_from_args(args)
            if on(podgc.NAME)
            else d.pod_gc_controller,
            persistent_volume_binder_controller=pv_controller.options_from_args(args)
            if on(pv_controller.NAME)
            else d.persistent_volume_binder_controller,
            simulated_provisioner=simulated_provisioner.options_from_args(args)
            if on(simulated_provisioner.NAME)
            else d.simulated_provisioner,
        )


@dataclass(frozen=True)
class ControllerManagerSettings:
    """Everything `python -m controllermanager` was told, validated."""

    server: str
    controllers: tuple[str, ...]
    """The controllers --controllers enables, by name."""
    configurations: ControllerConfigurations = field(default_factory=ControllerConfigurations)
    election: LeaderElectionConfig | None = None
