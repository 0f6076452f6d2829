"""The apiserver's settings: one frozen tree, built once in `app.main` from the flags (the
apiserver reads no config file), and handed down in parts: each piece of the process takes the
part that is its own (upstream's ServerRunOptions, split as its option groups are:
k8s.io/kubernetes/cmd/kube-apiserver/app/options)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from apiserver.admission.default_toleration_seconds import DefaultTolerationSeconds
from apiserver.admission.plugins import DEFAULT_PLUGINS, AdmissionPlugins
from apiserver.authentication.service_accounts import AuthenticationSettings
from apiserver.authorization.modes import DEFAULT_MODES
from kemu.component.latency import CallLatency
from kemu.component.secure_serving import SecureServing
from kemu.machinery.runtime_config import RuntimeConfig

DEFAULT_BOOKMARK_FREQUENCY: Final = 60.0  # upstream cacher's bookmarkFrequency (1 min)
DEFAULT_MAX_REQUESTS_INFLIGHT: Final = 400
DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT: Final = 200


@dataclass(frozen=True)
class ServingSettings:
    """Where the apiserver listens (--bind-address, --port, --rest-port)."""

    bind_address: str
    port: int
    rest_port: int
    """The REST edge's port; 0: no REST edge."""
    secure: SecureServing = SecureServing()
    """TLS on both edges (kemu.component.secure_serving; not enabled: plaintext)."""

    @property
    def address(self) -> str:
        """The gRPC address, which is also the apiserver's identity (its version and the
        cluster clock's peer key name it)."""
        return f"{self.bind_address}:{self.port}"


@dataclass(frozen=True)
class EtcdSettings:
    """etcd (--etcd-servers, --etcd-compaction-interval, --etcd-latency)."""

    servers: tuple[str, ...]
    compaction_interval: float
    """Seconds between compactions of the history older than it; 0: never."""
    latency: CallLatency = CallLatency()
    """--etcd-latency and its seed: what every round trip of the API to etcd waits."""


@dataclass(frozen=True)
class InflightSettings:
    """The max-in-flight filter (--max-requests-inflight, --max-mutating-requests-inflight);
    0 lifts a bound. With priority and fairness (--enable-priority-and-fairness, default
    true) their sum is its server concurrency limit instead."""

    max_requests: int
    max_mutating_requests: int
    priority_and_fairness: bool = True

    @property
    def server_concurrency_limit(self) -> int:
        return self.max_requests + self.max_mutating_requests


@dataclass(frozen=True)
class ApiserverSettings:
    serving: ServingSettings
    etcd: EtcdSettings
    inflight: InflightSettings
    toleration_seconds: DefaultTolerationSeconds
    watch_bookmark_frequency: float
    """Seconds between the bookmarks of an idle watch that allows them."""
    shutdown_delay: float
    """--shutdown-delay-duration: seconds between SIGTERM and the drain, serving as before
    with /readyz failing (wall time: it is for clients on their way out)."""
    clock_start: float | None
    """With --clock virtual: the virtual time a fresh cluster's clock starts at (seconds since
    the epoch); None: the apiserver's start."""
    runtime_config: RuntimeConfig
    """--runtime-config: the API group versions enabled beyond (or disabled from) the emulated
    version's defaults (checked at start-up: kemu.machinery.kinds `resource_config`)."""
    admission: AdmissionPlugins = DEFAULT_PLUGINS
    """--enable-admission-plugins and --disable-admission-plugins over upstream's default-on
    set."""
    authentication: AuthenticationSettings = AuthenticationSettings()
    """--anonymous-auth, --service-account-* and --api-audiences."""
    authorization_modes: tuple[str, ...] = DEFAULT_MODES
    """--authorization-mode, validated (apiserver/authorization/modes.py)."""
