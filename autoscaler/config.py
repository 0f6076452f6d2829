"""The autoscaler's settings, built once by `main` from its flags and frozen (upstream's
cluster-autoscaler/config/autoscaling_options.go `AutoscalingOptions`; the scale-down group is
autoscaler/scaledown/options.py `ScaleDownOptions`).

`AutoscalerSettings` is the whole tree `run` takes: where the apiserver and the cloud are, the
leader election, the loop's `AutoscalingOptions`, the profile the simulations run, and the
kemu-only knobs (`--seed`, `--record-decisions`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from autoscaler.scaledown.options import ScaleDownOptions
from kemu.client.leaderelection import LeaderElectionConfig
from kemu.component.client_connection import DEFAULT_BURST, DEFAULT_QPS, ClientConnection
from kemu.component.latency import CallLatency
from kemu.component.version import Version
from kemu.component.version_rules import VersionRules
from kemu.machinery.kubeconfig import ClientTLS
from kemu.machinery.resources import SCHEDULER_DEFAULTS, PodResourcesOptions
from kemu.scheduling.plugins.registry import Registry, in_tree_registry
from kemu.scheduling.profile import Profile, default_profile


@dataclass(frozen=True)
class AutoscalingOptions:
    """Upstream's flags with their defaults (cluster-autoscaler FAQ)."""

    version: Version
    scan_interval: float = 10.0
    max_node_provision_time: float = 15 * 60.0
    expendable_pods_priority_cutoff: int = -10
    expander: str = "least-waste"
    new_pod_scale_up_delay: float = 0.0
    scale_down_enabled: bool = True
    write_status_configmap: bool = True
    """--write-status-configmap: kube-system/cluster-autoscaler-status after every loop."""
    initial_node_group_backoff_duration: float = 5 * 60.0
    max_node_group_backoff_duration: float = 30 * 60.0
    node_group_backoff_reset_timeout: float = 3 * 3600.0
    counting: PodResourcesOptions = SCHEDULER_DEFAULTS
    """How pods are counted (kemu.component.pod_resources: the InPlacePodVerticalScaling and
    PodLevelResources gates, the version's aggregation rule), as the scheduler does."""
    scale_down: ScaleDownOptions = field(default_factory=ScaleDownOptions)
    rules: VersionRules = field(init=False)
    """The rules without a gate of `version` (kemu.component.version_rules), resolved once."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "rules", VersionRules.at(self.version))


@dataclass(frozen=True)
class Simulation:
    """What the autoscaler's scheduling simulations run: a profile and the plugins it names
    (upstream's --scheduler-config-file; kemu's also loads out-of-tree plugins)."""

    profile: Profile
    registry: Registry

    @classmethod
    def default(cls) -> Simulation:
        """The in-tree default profile."""
        registry = in_tree_registry()
        return cls(default_profile(registry), registry)


@dataclass(frozen=True)
class AutoscalerSettings:
    """Everything `python -m autoscaler` was told, validated (see the module docstring)."""

    server: str
    cloud_provider_address: str
    autoscaling_options: AutoscalingOptions
    simulation: Simulation = field(default_factory=Simulation.default)
    election: LeaderElectionConfig | None = None
    seed: int | None = None
    """--seed: of the random expander's choices."""
    record_decisions: bool = False
    """--record-decisions: every loop recorded, served at /debug/decisions."""
    client_connection: ClientConnection = ClientConnection(DEFAULT_QPS, DEFAULT_BURST)
    """--kube-client-qps and --kube-client-burst (upstream's defaults are client-go's: 5
    and 10, cluster-autoscaler/config/flags)."""
    apiserver_latency: CallLatency = CallLatency()
    """--apiserver-latency and its seed: what every call of the client waits."""
    tls: ClientTLS | None = None
    """--kubeconfig's TLS to the apiserver: its CA and this component's client certificate
    (None: plaintext)."""
