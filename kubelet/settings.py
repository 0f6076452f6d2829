"""The kubelet's settings: one frozen tree (`KubeletSettings`), built once by `main` from the
flags (kubelet.options), its parts handed down to the nodes (NodeConfig, NodeTiming) and the pod
workers (PodWorkerOptions), as upstream's KubeletConfiguration (pkg/kubelet/apis/config)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.component.client_connection import ClientConnection
from kemu.component.latency import CallLatency
from kemu.component.version_rules import VersionRules
from kemu.machinery.dra_slice_file import NO_DRIVERS, DraDrivers
from kemu.machinery.kubeconfig import ClientTLS
from kemu.machinery.quantity import to_int
from kemu.machinery.resources import DEFAULT_OPTIONS, PodResourcesOptions
from kubelet.resize_retry import DEFAULT_RETRY_PERIOD
from kubelet.runtime import DEFAULT_SHUTDOWN_DURATION

DEFAULT_LEASE_DURATION_SECONDS: Final = 40
LEASE_RENEW_INTERVAL_FRACTION: Final = 0.25
"""The Lease is renewed every this much of its duration unless --node-lease-renew-interval
says otherwise (upstream pkg/kubelet/kubelet.go nodeLeaseRenewIntervalFraction)."""
DEFAULT_LEASE_RENEW_INTERVAL: Final = DEFAULT_LEASE_DURATION_SECONDS * LEASE_RENEW_INTERVAL_FRACTION
DEFAULT_STATUS_UPDATE_FREQUENCY: Final = 10.0
DEFAULT_STATUS_REPORT_FREQUENCY: Final = 300.0
DEFAULT_MAX_PODS: Final = "110"
DEFAULT_WORKERS: Final = 32
DEFAULT_ACTUATION_DELAY: Final = 0.5


@dataclass(frozen=True)
class NodeConfig:
    """What one (real or hollow) node registers with."""

    name: str
    capacity: Mapping[str, str]
    allocatable: Mapping[str, str]
    kubelet_version: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[types_pb2.Taint] = ()
    provider_id: str = ""
    """spec.providerID, set at registration (upstream's --provider-id); "" leaves it unset."""
    node_ip: str = ""
    """The node's InternalIP address (--node-ip); "" reports no addresses."""

    def addresses(self) -> list[types_pb2.NodeAddress]:
        """status.addresses: InternalIP, then Hostname (upstream's NodeAddress setter)."""
        if not self.node_ip:
            return []
        return [
            types_pb2.NodeAddress(type="InternalIP", address=self.node_ip),
            types_pb2.NodeAddress(type="Hostname", address=self.name),
        ]

    def allocatable_ints(self) -> dict[str, int]:
        return {name: to_int(name, text) for name, text in self.allocatable.items()}


@dataclass(frozen=True)
class NodeTiming:
    lease_renew_interval: float = DEFAULT_LEASE_RENEW_INTERVAL
    lease_duration_seconds: int = DEFAULT_LEASE_DURATION_SECONDS
    status_update_frequency: float = DEFAULT_STATUS_UPDATE_FREQUENCY
    status_report_frequency: float = DEFAULT_STATUS_REPORT_FREQUENCY


@dataclass(frozen=True)
class PodWorkerOptions:
    startup_delay: float = 0.5
    """Seconds from admission to running containers, unless the pod's annotation says."""
    shutdown_duration: float | None = DEFAULT_SHUTDOWN_DURATION
    """Seconds a container takes to exit on SIGTERM (default: at once); None: it ignores
    SIGTERM (killed at the end of the grace period). The pod's annotation overrides it."""
    workers: int = DEFAULT_WORKERS
    in_place_resize: bool = True
    """Gate InPlacePodVerticalScaling: resize running pods when their spec changes."""
    counting: PodResourcesOptions = DEFAULT_OPTIONS
    """How a pod's sizes are counted (kemu.component.pod_resources): the PodLevelResources
    gate (spec.resources requests replace the containers' sum) and the emulated version's rule
    for a resizing pod's allocated and actual sizes (`per_container_max` before 1.37: each
    container's larger one, summed; kemu.machinery.resources)."""
    resize_actuation_delay: float = DEFAULT_ACTUATION_DELAY
    """Seconds from accepting a resize to the containers running at the new size."""
    resize_retry_period: float = DEFAULT_RETRY_PERIOD
    """How long after a node's last retry its Deferred resizes are retried again if no event
    retries them first (upstream's 3 minutes; the first periodic retry comes 30 s after start,
    or after this period if it is shorter)."""
    observed_generation: bool = True
    """Gate PodObservedGenerationTracking: report status.observedGeneration and the
    observedGeneration of the conditions the kubelet owns."""
    report_resources: bool = True
    """Report containerStatuses[].resources and allocatedResources: upstream's kubelet does
    only with InPlacePodVerticalScaling on, and the apiserver refuses to resize a running pod
    whose kubelet does not (KEP-1287's skew rule)."""
    host_ips: bool = True
    """Gate PodHostIPs: report status.hostIPs besides hostIP."""
    scheduler_preempts_for_resizes: bool = False
    """Gate InPlacePodVerticalScalingSchedulerPreemption (KEP-5836): the scheduler preempts
    for a Deferred resize, and the kubelet, which otherwise preempts for a critical pod's
    resize (kubelet.preemption), preempts for none."""
    disruption_conditions: bool = True
    """Gate PodDisruptionConditions: a pod the kubelet preempts for a critical one gets the
    condition DisruptionTarget (kubelet.preemption)."""


def kube_api_defaults(rules: VersionRules) -> ClientConnection:
    """kubeAPIQPS and kubeAPIBurst's defaults at the emulated version (VersionRules
    `kubelet_kube_api_qps_50`: 50 and 100 from 1.27, 5 and 10 before)."""
    return (
        ClientConnection(50.0, 100) if rules.kubelet_kube_api_qps_50 else ClientConnection(5.0, 10)
    )


@dataclass(frozen=True)
class KubeletSettings:
    """Everything `python -m kubelet` was told, validated: built once by `main`
    (`settings_from_args`), grouped as the nodes' NodeConfig, their NodeTiming and the
    PodWorkerOptions."""

    server: str
    nodes: tuple[NodeConfig, ...]
    timing: NodeTiming
    pods: PodWorkerOptions
    root_dir: Path | None
    lease_batch: bool = False
    """--node-lease-batch: the renewals of the process's nodes due at one instant travel as
    one UpdateBatch call (kubelet/lease_batch.py); a process of one node sends each alone."""
    template: NodeConfig | None = None
    """--node-control: what the nodes added at run time share (each has its own name,
    providerID and IP); `nodes` is empty."""
    dra: DraDrivers = NO_DRIVERS
    """--dra-slice-file: the simulated DRA drivers every node of the process runs."""
    client_connection: ClientConnection = ClientConnection(50.0, 100)
    """--kube-api-qps and --kube-api-burst (kubeAPIQPS, kubeAPIBurst): the client of every
    node of the process (kemu.component.client_connection; `kube_api_defaults`)."""
    apiserver_latency: CallLatency = CallLatency()
    """--apiserver-latency and its seed: what every call of the client waits."""
    tls: ClientTLS | None = None
    """--kubeconfig's TLS to the apiserver: its CA and this component's client certificate
    (None: plaintext)."""
