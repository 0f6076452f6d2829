"""The controller-manager's settings, built once by `main` from its flags and frozen.

`ControllerConfigurations` holds the controllers' own flags, one group per controller as
upstream's KubeControllerManagerConfiguration does (pkg/controller/apis/config/types.go:
NodeLifecycleController, PodGCController, GarbageCollectorController, NodeIPAMController,
PersistentVolumeBinderController, HPAController; kemu's simulated provisioner besides);
`ControllerManagerSettings` is the whole tree `run` takes. Each group's defaults live here, the
flags that set them in controllermanager.options.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Final

from controllermanager.cidrset import IPNetwork
from kemu.client.leaderelection import LeaderElectionConfig
from kemu.component.client_connection import ClientConnection
from kemu.component.latency import CallLatency
from kemu.component.version import Version
from kemu.component.version_rules import VersionRules
from kemu.machinery.kubeconfig import ClientTLS

DEFAULT_CLIENT_CONNECTION: Final = ClientConnection(20.0, 30)
"""--kube-api-qps and --kube-api-burst's defaults (cmd/kube-controller-manager/app/options:
the generic options' ClientConnection, 20 and 30)."""
QPS_FLAG: Final = "--kube-api-qps"
BURST_FLAG: Final = "--kube-api-burst"

DEFAULT_NODE_MONITOR_PERIOD: Final = 5.0
DEFAULT_NODE_MONITOR_GRACE_PERIOD: Final = 50.0
"""Upstream's default from 1.32 (kubernetes/kubernetes#126287); 40 s before."""
LEGACY_NODE_MONITOR_GRACE_PERIOD: Final = 40.0


def default_grace_period(version: Version) -> float:
    """--node-monitor-grace-period's default at an emulated version."""
    if VersionRules.at(version).node_monitor_grace_period_50s:
        return DEFAULT_NODE_MONITOR_GRACE_PERIOD
    return LEGACY_NODE_MONITOR_GRACE_PERIOD


class Credentials(enum.Enum):
    """Whom the controllers act as (controllermanager/clientbuilder.py)."""

    PROCESS = "process"
    SERVICE_ACCOUNTS = "service-accounts"
    """--use-service-account-credentials"""


@dataclass(frozen=True)
class NodeLifecycleOptions:
    node_monitor_period: float = DEFAULT_NODE_MONITOR_PERIOD
    node_monitor_grace_period: float | None = None
    """None: the emulated version's default (`default_grace_period`)."""

    def __post_init__(self) -> None:
        if self.node_monitor_period <= 0:
            raise ValueError("--node-monitor-period must be greater than 0")
        if self.node_monitor_grace_period is not None and self.node_monitor_grace_period <= 0:
            raise ValueError("--node-monitor-grace-period must be greater than 0")

    def grace_period(self, version: Version) -> float:
        if self.node_monitor_grace_period is not None:
            return self.node_monitor_grace_period
        return default_grace_period(version)


DEFAULT_QUARANTINE: Final = 40.0
GC_CHECK_PERIOD: Final = 20.0
"""How often every pod is checked (upstream gcCheckPeriod)."""
DEFAULT_TERMINATED_POD_GC_THRESHOLD: Final = 12500


@dataclass(frozen=True)
class PodGCOptions:
    quarantine: float = DEFAULT_QUARANTINE
    gc_check_period: float = GC_CHECK_PERIOD
    terminated_pod_gc_threshold: int = DEFAULT_TERMINATED_POD_GC_THRESHOLD

    def __post_init__(self) -> None:
        if self.quarantine < 0:
            raise ValueError("--pod-gc-quarantine must not be negative")
        if self.gc_check_period <= 0:
            raise ValueError("--pod-gc-check-period must be greater than 0")
        if self.terminated_pod_gc_threshold < 0:
            raise ValueError("--terminated-pod-gc-threshold must not be negative")


DEFAULT_NODE_CIDR_MASK_SIZE: Final = {4: 24, 6: 64}
"""Upstream's --node-cidr-mask-size defaults, by IP family."""


@dataclass(frozen=True)
class NodeIpamOptions:
    cluster_cidr: IPNetwork
    node_cidr_mask_size: int


DEFAULT_CONCURRENT_GC_SYNCS: Final = 20


@dataclass(frozen=True)
class GarbageCollectorOptions:
    concurrent_gc_syncs: int = DEFAULT_CONCURRENT_GC_SYNCS

    def __post_init__(self) -> None:
        if self.concurrent_gc_syncs < 1:
            raise ValueError("--concurrent-gc-syncs must be at least 1")


DEFAULT_SYNC_PERIOD: Final = 15.0


@dataclass(frozen=True)
class PVBinderOptions:
    sync_period: float = DEFAULT_SYNC_PERIOD

    def __post_init__(self) -> None:
        if self.sync_period <= 0:
            raise ValueError("--pvclaimbinder-sync-period must be greater than 0")


@dataclass(frozen=True)
class SimulatedProvisionerOptions:
    seed: int = 0


DEFAULT_HPA_SYNC_PERIOD: Final = 15.0
DEFAULT_HPA_DOWNSCALE_STABILIZATION: Final = 300.0
DEFAULT_HPA_TOLERANCE: Final = 0.1
DEFAULT_HPA_CPU_INITIALIZATION_PERIOD: Final = 300.0
DEFAULT_HPA_INITIAL_READINESS_DELAY: Final = 30.0
DEFAULT_CONCURRENT_HPA_SYNCS: Final = 5


@dataclass(frozen=True)
class HPAControllerOptions:
    """upstream's HPAControllerConfiguration (pkg/controller/podautoscaler/config/types.go)
    and its flags' defaults (cmd/kube-controller-manager/app/options/hpacontroller.go)."""

    sync_period: float = DEFAULT_HPA_SYNC_PERIOD
    downscale_stabilization: float = DEFAULT_HPA_DOWNSCALE_STABILIZATION
    tolerance: float = DEFAULT_HPA_TOLERANCE
    cpu_initialization_period: float = DEFAULT_HPA_CPU_INITIALIZATION_PERIOD
    initial_readiness_delay: float = DEFAULT_HPA_INITIAL_READINESS_DELAY
    concurrent_syncs: int = DEFAULT_CONCURRENT_HPA_SYNCS

    def __post_init__(self) -> None:
        if self.sync_period <= 0:
            raise ValueError("--horizontal-pod-autoscaler-sync-period must be greater than 0")
        for flag, value in (
            ("--horizontal-pod-autoscaler-downscale-stabilization", self.downscale_stabilization),
            ("--horizontal-pod-autoscaler-tolerance", self.tolerance),
            (
                "--horizontal-pod-autoscaler-cpu-initialization-period",
                self.cpu_initialization_period,
            ),
            ("--horizontal-pod-autoscaler-initial-readiness-delay", self.initial_readiness_delay),
        ):
            if value < 0:
                raise ValueError(f"{flag} must not be negative")
        if self.concurrent_syncs < 1:
            raise ValueError("--concurrent-horizontal-pod-autoscaler-syncs must be at least 1")


@dataclass(frozen=True)
class ControllerConfigurations:
    node_lifecycle_controller: NodeLifecycleOptions = field(default_factory=NodeLifecycleOptions)
    garbage_collector_controller: GarbageCollectorOptions = field(
        default_factory=GarbageCollectorOptions
    )
    node_ipam_controller: NodeIpamOptions | None = None
    """None without --allocate-node-cidrs: the nodeipam controller does not run."""
    pod_gc_controller: PodGCOptions = field(default_factory=PodGCOptions)
    persistent_volume_binder_controller: PVBinderOptions = field(default_factory=PVBinderOptions)
    simulated_provisioner: SimulatedProvisionerOptions = field(
        default_factory=SimulatedProvisionerOptions
    )
    hpa_controller: HPAControllerOptions = field(default_factory=HPAControllerOptions)


@dataclass(frozen=True)
class ControllerManagerSettings:
    """Everything `python -m controllermanager` was told, validated."""

    server: str
    controllers: tuple[str, ...]
    """The controllers --controllers enables, by name."""
    configurations: ControllerConfigurations = field(default_factory=ControllerConfigurations)
    election: LeaderElectionConfig | None = None
    client_connection: ClientConnection = DEFAULT_CLIENT_CONNECTION
    """--kube-api-qps and --kube-api-burst."""
    apiserver_latency: CallLatency = CallLatency()
    """--apiserver-latency and its seed: what every call of the client waits."""
    tls: ClientTLS | None = None
    """--kubeconfig's TLS to the apiserver: its CA and this component's client certificate
    (None: plaintext)."""
    credentials: Credentials = Credentials.PROCESS
    """--use-service-account-credentials: each controller as its ServiceAccount."""
