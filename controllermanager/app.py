"""kube-controller-manager: runs the controllers of CONTROLLERS against the apiserver.

    python -m controllermanager --server HOST:PORT [--leader-elect] [--controllers *,-name]

Start-up waits for the apiserver (it may start after us), then keeps the component identity
lease (kube-system/kube-controller-manager-<identity>) renewed. Without --leader-elect the
controllers run at once. With it, only the holder of the Lease
kube-system/kube-controller-manager runs them; a leader that fails to renew its lease exits
with code 1 (as upstream: another instance may already lead), and on SIGTERM a leader cancels
its controllers, releases the lease and exits 0.

/readyz: without leader election, ready once the informers have synced; with it, ready while
the election runs and, when leading, once the informers have synced (a standby is ready: it is
healthy and waiting for the lease).
"""

from __future__ import annotations

import argparse
import functools
import logging
import re
import socket
import uuid
from collections.abc import Mapping, Sequence
from typing import Final

import anyio
from anyio.abc import TaskStatus
from prometheus_client import Gauge

from controllermanager import disruption
from controllermanager.controller import ControllerContext, ControllerInit
from kemu.client.client import Client
from kemu.client.identity import run_identity_heartbeat
from kemu.client.informer import InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.leaderelection import LeaderElectionConfig, LeaderElector, LeadershipLost
from kemu.component.options import new_parser, parse_component_args
from kemu.component.runner import (
    ComponentContext,
    cleanup_scope,
    retry_until_ready,
    run_component,
)
from kemu.component.version import BINARY_VERSION
from kemu.machinery.errors import Timeout, Unavailable

logger = logging.getLogger(__name__)

COMPONENT: Final = "kube-controller-manager"
DEFAULT_METRICS_PORT: Final = 10257
LEASE_NAMESPACE: Final = "kube-system"
LEASE_NAME: Final = "kube-controller-manager"

CONTROLLERS: Final[dict[str, ControllerInit]] = {
    disruption.NAME: disruption.new_controller,
}
"""Every controller by name, as upstream's NewControllerDescriptors: add new ones here."""

_DURATION_PART: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|us|µs|ns|m|s)")
_UNITS: Final = {
    "h": 3600.0,
    "m": 60.0,
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "ns": 1e-9,
}


class DurationError(argparse.ArgumentTypeError, ValueError):
    """A malformed duration flag (argparse prints its message)."""


def parse_duration(text: str) -> float:
    """A Go duration ("15s", "1m30s", "500ms") or a bare number of seconds, in seconds."""
    text = text.strip()
    if re.fullmatch(r"\d+(\.\d*)?", text):
        return float(text)
    pos, total = 0, 0.0
    while pos < len(text):
        match = _DURATION_PART.match(text, pos)
        if match is None:
            raise DurationError(f"invalid duration {text!r} (e.g. 15s, 1m30s)")
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if not text:
        raise DurationError("invalid duration ''")
    return total


def select_controllers(spec: str, known: Mapping[str, ControllerInit]) -> dict[str, ControllerInit]:
    """upstream --controllers: names to enable, "*" for every one, "-name" to disable one.

    ValueError names an unknown controller.
    """
    items = [s.strip() for s in spec.split(",") if s.strip()]
    for item in items:
        name = item.removeprefix("-")
        if name != "*" and name not in known:
            raise ValueError(
                f"{name!r} is not a known controller (known: {', '.join(sorted(known))})"
            )
    star = "*" in items
    return {
        name: init
        for name, init in known.items()
        if f"-{name}" not in items and (name in items or star)
    }


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser(
        "controllermanager",
        "kemu kube-controller-manager",
        default_metrics_port=DEFAULT_METRICS_PORT,
    )
    parser.add_argument(
        "--server",
        default="127.0.0.1:6443",
        help="the apiserver, HOST:PORT (default 127.0.0.1:6443)",
    )
    parser.add_argument(
        "--controllers",
        default="*",
        metavar="NAMES",
        help="controllers to run: '*' for all, 'name' to enable one, '-name' to disable one "
        f"(known: {', '.join(sorted(CONTROLLERS))}; default '*')",
    )
    group = parser.add_argument_group("leader election")
    group.add_argument(
        "--leader-elect",
        action="store_true",
        help=f"run the controllers only while holding the lease {LEASE_NAMESPACE}/{LEASE_NAME}",
    )
    group.add_argument(
        "--leader-elect-lease-duration",
        type=parse_duration,
        default=15.0,
        metavar="DURATION",
        help="how long a standby waits after the last renewal before taking the lease (15s)",
    )
    group.add_argument(
        "--leader-elect-renew-deadline",
        type=parse_duration,
        default=10.0,
        metavar="DURATION",
        help="how long the leader retries renewing before it gives up (10s)",
    )
    group.add_argument(
        "--leader-elect-retry-period",
        type=parse_duration,
        default=2.0,
        metavar="DURATION",
        help="how long to wait between attempts to acquire or renew the lease (2s)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, options = parse_component_args(parser, argv, COMPONENT)
    try:
        controllers = select_controllers(args.controllers, CONTROLLERS)
    except ValueError as e:
        parser.error(f"--controllers: {e}")
    election: LeaderElectionConfig | None = None
    if args.leader_elect:
        try:
            election = LeaderElectionConfig(
                lock_namespace=LEASE_NAMESPACE,
                lock_name=LEASE_NAME,
                identity=new_identity(),
                lease_duration=args.leader_elect_lease_duration,
                renew_deadline=args.leader_elect_renew_deadline,
                retry_period=args.leader_elect_retry_period,
            )
        except ValueError as e:
            parser.error(str(e))
    client = functools.partial(Client, args.server, user_agent=COMPONENT)
    return run_component(COMPONENT, options, functools.partial(run, client, controllers, election))


def new_identity() -> str:
    """hostname_uuid, as upstream's leader election identity."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class ControllerManager:
    """The controllers of one process, started together; readiness for /readyz."""

    def __init__(
        self,
        client: ApiClient,
        ctx: ComponentContext,
        controllers: Mapping[str, ControllerInit],
    ) -> None:
        self.client = client
        self.component = ctx
        self.controllers = dict(controllers)
        self.informers: InformerFactory | None = None
        self.elector: LeaderElector | None = None

    def ready(self) -> bool:
        """The readiness check (see the module docstring)."""
        if self.elector is not None and not self.elector.is_leader():
            return True
        if self.informers is None or not self.informers.has_synced():
            raise RuntimeError("the informers have not synced yet")
        return True

    async def run_controllers(
        self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Builds every controller, starts the informers, and once they are synced runs the
        controllers until cancelled (task_status reports the sync)."""
        ctx = self.component
        informers = InformerFactory(self.client, clock=ctx.clock)
        cctx = ControllerContext(
            client=self.client,
            informers=informers,
            clock=ctx.clock,
            gates=ctx.gates,
            registry=ctx.registry,
        )
        built = [init(cctx) for init in self.controllers.values()]
        self.informers = informers
        async with anyio.create_task_group() as tg:
            informers.start(tg)
            await informers.wait_for_cache_sync()
            logger.info("caches synced, starting controllers: %s", ", ".join(c.name for c in built))
            for controller in built:
                tg.start_soon(controller.run, name=f"controller {controller.name}")
            task_status.started()

    async def run(self, election: LeaderElectionConfig | None) -> None:
        """Runs the controllers (only while leading when `election` is given) until cancelled.
        Raises LeadershipLost when the lease is lost."""
        if election is None:
            await self.run_controllers()
            return
        status = Gauge(
            "leader_election_master_status",
            "1 while this instance holds the lease, else 0.",
            ["name"],
            registry=self.component.registry,
        ).labels(election.lock_name)
        status.set(0)
        self.elector = LeaderElector(
            self.client,
            election,
            self.component.clock,
            on_leader_status=lambda leading: status.set(1 if leading else 0),
        )
        await self.elector.run(self.run_controllers)


async def run(
    new_client: functools.partial[Client],
    controllers: Mapping[str, ControllerInit],
    election: LeaderElectionConfig | None,
    ctx: ComponentContext,
) -> None:
    client = new_client()
    try:
        await run_with_client(client, controllers, election, ctx)
    finally:
        with cleanup_scope():
            await client.close()


async def run_with_client(
    client: ApiClient,
    controllers: Mapping[str, ControllerInit],
    election: LeaderElectionConfig | None,
    ctx: ComponentContext,
    *,
    identity: str | None = None,
) -> None:
    """The body of the component over any ApiClient (tests pass a FakeClient)."""
    manager = ControllerManager(client, ctx, controllers)
    ctx.add_readiness_check("controllers", manager.ready)
    identity = identity or (election.identity if election is not None else new_identity())
    lost: LeadershipLost | None = None
    async with anyio.create_task_group() as tg:

        async def stop_when_asked() -> None:
            await ctx.stopping.wait()
            logger.info("stopping the controllers")
            tg.cancel_scope.cancel()

        async def work() -> None:
            nonlocal lost
            # Client.wait_ready already waits; the retry makes any ApiClient wait the same way.
            await retry_until_ready(
                "the apiserver", client.wait_ready, clock=ctx.clock, retry_on=(Unavailable, Timeout)
            )
            logger.info("the apiserver is ready")
            tg.start_soon(
                functools.partial(
                    run_identity_heartbeat,
                    client,
                    COMPONENT,
                    identity,
                    str(ctx.options.version),
                    BINARY_VERSION,
                    [(g.name, g.enabled, str(g.stage), g.locked) for g in ctx.gates.states()],
                    clock=ctx.clock,
                ),
                name="identity heartbeat",
            )
            try:
                await manager.run(election)
            except LeadershipLost as e:
                logger.error("leader election lost: %s", e)
                lost = e
            tg.cancel_scope.cancel()

        tg.start_soon(stop_when_asked, name="stop on signal")
        tg.start_soon(work, name="controller manager")
    if lost is not None:
        raise lost
