"""How fast a component's client may call the apiserver: the `qps` and `burst` of upstream's
ClientConnectionConfiguration (k8s.io/component-base/config) and of client-go's rest.Config,
with their rules in one place.

- rest.Config (client-go rest/config.go, RESTClientFor): a QPS of 0 means DefaultQPS 5, a
  burst of 0 DefaultBurst 10, and a negative QPS no rate limiter at all (`limits()`).
- Each component has its own opinion first (its flag's or field's default, `add_flags`):
  the scheduler's KubeSchedulerConfiguration `clientConnection` 50/100 (kemu.scheduling.config),
  kube-controller-manager's `--kube-api-qps`/`--kube-api-burst` 20/30, the kubelet's 50/100
  from 1.27 and 5/10 before (kubernetes#116121, VersionRules `kubelet_kube_api_qps_50`),
  cluster-autoscaler's `--kube-client-qps`/`--kube-client-burst` 5/10 (rest's defaults,
  kubernetes/autoscaler cluster-autoscaler/config/flags), kubectl's (and kemuctl's) none:
  rest's 5/10.
- A burst below 0 is refused naming the flag or field (component-base's
  ValidateClientConnectionConfiguration: "must be non-negative"); the kubelet also refuses a
  negative QPS (pkg/kubelet/apis/config/validation: "must not be a negative number").

The token bucket itself is kemu.client.flowcontrol's.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Final

__all__ = [
    "DEFAULT_BURST",
    "DEFAULT_QPS",
    "REST_DEFAULTS",
    "UNLIMITED",
    "ClientConnection",
    "add_flags",
    "from_args",
]

DEFAULT_QPS: Final = 5.0
"""client-go rest.DefaultQPS: what a QPS of 0 means."""
DEFAULT_BURST: Final = 10
"""client-go rest.DefaultBurst: what a burst of 0 means."""


@dataclass(frozen=True, slots=True)
class ClientConnection:
    """`qps` and `burst` as configured (0: rest.Config's default; a negative qps: no rate
    limiter)."""

    qps: float
    burst: int

    def limits(self) -> tuple[float, int] | None:
        """The token bucket's (qps, burst) as rest.Config makes it, or None: not limited."""
        if self.qps < 0:
            return None
        return (self.qps or DEFAULT_QPS, self.burst or DEFAULT_BURST)

    def check(self, qps_name: str, burst_name: str, *, negative_qps: bool = True) -> None:
        """ValueError naming the field or flag for a value upstream refuses, or one a
        bucket cannot have (a QPS that is not a finite number); `negative_qps` False: a
        negative QPS is refused (the kubelet's rule) instead of turning the limiter off."""
        if not math.isfinite(self.qps):
            raise ValueError(f"{qps_name}: {self.qps} is not a finite number")
        if self.burst < 0:
            raise ValueError(f"{burst_name}: Invalid value: {self.burst}: must be non-negative")
        if not negative_qps and self.qps < 0:
            raise ValueError(f"{qps_name}: {self.qps:g} must not be a negative number")


REST_DEFAULTS: Final = ClientConnection(0.0, 0)
"""A rest.Config that sets neither QPS nor burst: 5/10 (cluster-autoscaler's events client,
made from the kubeconfig alone: cluster-autoscaler/main.go)."""

UNLIMITED: Final = ClientConnection(-1.0, 0)
"""No rate limiter: the client of a test or a benchmark's driver, as upstream's test
harnesses set QPS -1 or very high (scheduler_perf's 5000/5000)."""


def add_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    *,
    qps_flag: str,
    burst_flag: str,
    default: ClientConnection | None,
    default_text: str = "",
) -> None:
    """`qps_flag` and `burst_flag` (upstream's names) with `default` (None: the component
    resolves it later, e.g. by version, and `default_text` says how)."""
    qps_default = default_text or (f"{default.qps:g}" if default else "")
    burst_default = default_text or (str(default.burst) if default else "")
    parser.add_argument(
        qps_flag,
        type=float,
        default=None if default is None else default.qps,
        metavar="QPS",
        help=f"QPS to use while talking with the apiserver (default {qps_default}; 0: "
        f"client-go's {DEFAULT_QPS:g}; negative: no client-side rate limit)",
    )
    parser.add_argument(
        burst_flag,
        type=int,
        default=None if default is None else default.burst,
        metavar="N",
        help=f"burst to use while talking with the apiserver (default {burst_default}; 0: "
        f"client-go's {DEFAULT_BURST})",
    )


def from_args(
    args: argparse.Namespace,
    *,
    qps_flag: str,
    burst_flag: str,
    default: ClientConnection | None = None,
    negative_qps: bool = True,
) -> ClientConnection:
    """The checked value of the flags `add_flags` added (`default` for a flag not given
    when the table has none); ValueError naming the flag."""
    qps = getattr(args, _dest(qps_flag))
    burst = getattr(args, _dest(burst_flag))
    if default is not None:
        qps = default.qps if qps is None else qps
        burst = default.burst if burst is None else burst
    connection = ClientConnection(float(qps), int(burst))
    connection.check(qps_flag, burst_flag, negative_qps=negative_qps)
    return connection


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")
