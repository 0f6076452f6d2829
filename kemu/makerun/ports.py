"""Every port `make run`'s processes listen on, in one table: the only place their numbers live.

The Procfile names each port by its environment variable (`$KEMU_PORT_APISERVER`, ...), which
`python -m kemu.makerun` writes to `.kemu/ports.env` and hands to honcho (`honcho start -e`).
Without a base the ports are the ones upstream's components and etcd use by default where there
is one (etcd 2379/2380, the apiserver 6443, the controller-manager 10257, the scheduler 10259,
the kubelet 10255) and kemu's own beside them; with a base (`make run PORT_BASE=20000`, or
KEMU_PORT_BASE in the environment) every port is the base plus its row's index, so that one
number moves the whole cluster (two clusters on one machine need bases at least `len(TABLE)`
apart).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

LOOPBACK: Final = "127.0.0.1"
ENV_PREFIX: Final = "KEMU_PORT_"
BASE_ENV: Final = "KEMU_PORT_BASE"
MIN_BASE: Final = 1024
"""Below it a port needs privileges."""


@dataclass(frozen=True)
class PortSpec:
    name: str
    """The environment variable's suffix: the Procfile reads $KEMU_PORT_<name>."""
    what: str
    """What listens on it, as a user reads it in a message."""
    default: int

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name


TABLE: Final[tuple[PortSpec, ...]] = (
    PortSpec("ETCD", "etcd client", 2379),
    PortSpec("ETCD_PEER", "etcd peer", 2380),
    PortSpec("APISERVER", "apiserver gRPC", 6443),
    PortSpec("APISERVER_METRICS", "apiserver metrics", 6444),
    PortSpec("APISERVER_REST", "apiserver REST", 6445),
    PortSpec("CONTROLLER_MANAGER_METRICS", "controller-manager metrics", 10257),
    PortSpec("SCHEDULER_METRICS", "scheduler metrics", 10259),
    PortSpec("KUBELET_A_METRICS", "kubelet node-a metrics", 10255),
    PortSpec("KUBELET_B_METRICS", "kubelet node-b metrics", 10265),
    PortSpec("KUBELET_C_METRICS", "kubelet node-c metrics", 10275),
    PortSpec("CLOUD", "cloud gRPC", 8086),
    PortSpec("CLOUD_METRICS", "cloud metrics", 8087),
    PortSpec("AUTOSCALER_METRICS", "autoscaler metrics", 8085),
)
MAX_BASE: Final = 65536 - len(TABLE)


class PortBaseError(ValueError):
    """A base that does not give every row a usable port."""


@dataclass(frozen=True)
class Ports:
    """The ports of one `make run`: the defaults (base None) or base + index."""

    base: int | None = None

    def __post_init__(self) -> None:
        if self.base is not None and not MIN_BASE <= self.base <= MAX_BASE:
            raise PortBaseError(
                f"PORT_BASE={self.base}: must be {MIN_BASE} to {MAX_BASE} "
                f"(it moves {len(TABLE)} ports: PORT_BASE to PORT_BASE+{len(TABLE) - 1})"
            )

    @classmethod
    def parse(cls, text: str | None) -> Ports:
        """The ports of PORT_BASE's text; empty or None: the defaults."""
        if text is None or not text.strip():
            return cls()
        try:
            base = int(text)
        except ValueError:
            raise PortBaseError(f"PORT_BASE={text}: not a port number") from None
        return cls(base)

    def port(self, name: str) -> int:
        for index, spec in enumerate(TABLE):
            if spec.name == name:
                return spec.default if self.base is None else self.base + index
        raise KeyError(name)

    def items(self) -> list[tuple[PortSpec, int]]:
        return [(spec, self.port(spec.name)) for spec in TABLE]

    def environment(self) -> Mapping[str, str]:
        """$KEMU_PORT_<name> for every row, as the Procfile reads them."""
        return {spec.env: str(port) for spec, port in self.items()}

    @property
    def moved(self) -> bool:
        return self.base is not None

    @property
    def server(self) -> str:
        """The apiserver's gRPC address (kemuctl's --server, KEMU_SERVER)."""
        return f"{LOOPBACK}:{self.port('APISERVER')}"

    @property
    def rest_url(self) -> str:
        """The apiserver's REST edge (the kubeconfig's server), over TLS."""
        return f"https://{LOOPBACK}:{self.port('APISERVER_REST')}"

    @property
    def scheduler_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port('SCHEDULER_METRICS')}"

    @property
    def autoscaler_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port('AUTOSCALER_METRICS')}"

    @property
    def span(self) -> str:
        """The ports as a user reads them in one line."""
        numbers = [port for _, port in self.items()]
        return f"{min(numbers)}-{max(numbers)}" if self.moved else ", ".join(map(str, numbers))
