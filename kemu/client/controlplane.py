"""What every control-plane client component (controller-manager, scheduler, autoscaler) does
around its own work: waiting for the apiserver, the identity lease that the Version RPC reports,
and running the work only while holding the lease. The leader-election flags are in
kemu.client.leaderelection (no gRPC), which a process's options module reads.

    parser = new_parser(...)
    add_leader_election_flags(parser, lease_name="kube-scheduler")   # kemu.client.leaderelection
    ...
    election = leader_election_config(args, lease_name="kube-scheduler")   # None without --leader-elect
    await run_elected(client, ctx, component="kube-scheduler", election=election, work=work)

A leader that cannot renew stops with LeadershipLost (another instance may already be
leading): upstream's exits, kemu's runner starts the process again from nothing, a candidate
again (kemu.component.runner.RestartInPlace), so that the local cluster under honcho, which
stops everything when one process exits, keeps running; on SIGTERM the work is cancelled and the
lease released by one attempt that does not wait for the apiserver (which may be draining too):
if it fails the lease simply expires.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Final

import anyio
from prometheus_client import Gauge

from kemu.client.client import Client, sibling_of
from kemu.client.clock import PeerCalls, follow_cluster_clock
from kemu.client.flowcontrol import ClientLimits
from kemu.client.identity import ComponentIdentity, run_identity_heartbeat
from kemu.client.interface import ApiClient
from kemu.client.leaderelection import (
    DEFAULT_LOCK_NAMESPACE,
    RELEASE_TIMEOUT,
    LeaderElectionConfig,
    LeaderElector,
    LeadershipLost,
    new_identity,
)
from kemu.component.client_connection import ClientConnection
from kemu.component.latency import CallLatency
from kemu.component.runner import ComponentContext, retry_until_ready
from kemu.component.version import BINARY_VERSION
from kemu.component.virtual_clock import VirtualClock
from kemu.machinery.errors import Timeout, Unavailable
from kemu.machinery.kubeconfig import ClientTLS
from kemu.machinery.user import UserInfo

logger = logging.getLogger(__name__)

LEASE_NAMESPACE: Final = DEFAULT_LOCK_NAMESPACE


def component_identity(component: str, ctx: ComponentContext) -> ComponentIdentity:
    """What the Version RPC reports of this process: its emulated and binary versions and
    its feature gates."""
    return ComponentIdentity(
        component,
        str(ctx.options.version),
        BINARY_VERSION,
        tuple((g.name, g.enabled, str(g.stage), g.locked) for g in ctx.gates.states()),
    )


Announce = Callable[
    [ApiClient, ComponentContext, ComponentIdentity, str], Coroutine[Any, Any, None]
]
"""How a process keeps its identity before the Version RPC (client, context, identity, the
process's identity string), running until cancelled."""


async def identity_lease(
    client: ApiClient, ctx: ComponentContext, identity: ComponentIdentity, holder: str
) -> None:
    """The identity lease kube-system/<component>-<holder> (kemu.client.identity)."""
    await run_identity_heartbeat(
        client,
        identity.component,
        holder,
        identity.emulated_version,
        identity.binary_version,
        identity.gates,
        clock=ctx.clock,
    )


async def carried_by_the_work(
    client: ApiClient, ctx: ComponentContext, identity: ComponentIdentity, holder: str
) -> None:
    """No lease of its own: the work carries the identity (a kubelet's node Lease)."""


class Elected:
    """The leader election of one process; `is_standby()` for readiness checks."""

    def __init__(self) -> None:
        self.elector: LeaderElector | None = None

    def is_standby(self) -> bool:
        return self.elector is not None and not self.elector.is_leader()


def component_client(
    server: str,
    component: str,
    connection: ClientConnection,
    ctx: ComponentContext,
    latency: CallLatency | None = None,
    user: UserInfo | None = None,
    *,
    tls: ClientTLS | None = None,
) -> Client:
    """The component's client of the apiserver at `server`, rate limited by `connection`
    (its flags' or configuration's qps and burst) on its clock, the waits observed on its
    /metrics (kemu.client.flowcontrol), each call after its token waiting `latency`
    (--apiserver-latency, kemu.component.latency) on that clock too; claiming `user` (a
    kubelet's node) where given, else named by the apiserver from `component`; over TLS with
    `tls` (its --kubeconfig's), else plaintext."""
    limits = ClientLimits(connection, ctx.clock, host=server, registry=ctx.registry)
    delay = latency.on(ctx.clock) if latency is not None else None
    return Client(server, user_agent=component, limits=limits, latency=delay, user=user, tls=tls)


async def run_elected(
    client: ApiClient,
    ctx: ComponentContext,
    *,
    component: str,
    election: LeaderElectionConfig | None,
    work: Callable[[], Awaitable[None]],
    identity: str | None = None,
    elected: Elected | None = None,
    busy: Callable[[], bool] = lambda: False,
    peers: PeerCalls | None = None,
    on_clock: Callable[[], None] = lambda: None,
    announce: Announce = identity_lease,
) -> None:
    """Waits for the apiserver, keeps the identity lease, and runs `work` (only while leading
    when `election` is given) until SIGTERM; raises LeadershipLost when the lease is lost.
    `busy` and `peers`: work of the process the event-driven clock cannot see, calls to
    components other than the apiserver (kemu.client.clock). `on_clock`: what the process
    does leading or not (a scheduler's informers), started once its calls and watches carry
    its clock identity (in virtual time: a watch opened before would never be counted, and
    the event-driven clock could jump while one of its events is on the way). `announce`:
    how the process keeps its identity for the Version RPC (its identity lease, or
    `carried_by_the_work`)."""
    identity = identity or (election.identity if election is not None else new_identity())
    lost: LeadershipLost | None = None
    async with anyio.create_task_group() as tg:

        async def stop_when_asked() -> None:
            await ctx.stopping.wait()
            logger.info("stopping %s", component)
            tg.cancel_scope.cancel()

        async def lead() -> None:
            nonlocal lost
            # Client.wait_ready already waits; the retry makes any ApiClient wait the same way.
            await retry_until_ready(
                "the apiserver", client.wait_ready, clock=ctx.clock, retry_on=(Unavailable, Timeout)
            )
            logger.info("the apiserver is ready")
            if isinstance(ctx.clock, VirtualClock) and isinstance(client, Client):
                # --clock virtual: on the cluster clock before any work reads the time
                await tg.start(
                    functools.partial(
                        follow_cluster_clock,
                        client,
                        ctx.clock,
                        component=component,
                        identity=identity,
                        busy=busy,
                        ready=ctx.checks.is_ready,
                        peers=peers,
                    ),
                    name="clock session",
                )
            on_clock()
            tg.start_soon(
                announce,
                sibling_of(client),
                ctx,
                component_identity(component, ctx),
                identity,
                name="identity heartbeat",
            )
            try:
                if election is None:
                    await work()
                else:
                    status = Gauge(
                        "leader_election_master_status",
                        "1 while this instance holds the lease, else 0.",
                        ["name"],
                        registry=ctx.registry,
                    ).labels(election.lock_name)
                    status.set(0)
                    # Upstream's leader election has a clientset of its own
                    # (resourcelock.NewFromKubeconfig): a lease renewal never waits behind
                    # the work's calls on one rate limiter.
                    lease_client = sibling_of(client)
                    elector = LeaderElector(
                        lease_client,
                        election,
                        ctx.clock,
                        on_leader_status=lambda leading: status.set(1 if leading else 0),
                        # On stop the apiserver may be draining: one attempt, no waiting.
                        release_client=(
                            lease_client.one_attempt(RELEASE_TIMEOUT)
                            if isinstance(lease_client, Client)
                            else None
                        ),
                    )
                    if elected is not None:
                        elected.elector = elector
                    await elector.run(work)
            except LeadershipLost as e:
                logger.error("leader election lost: %s", e)
                lost = e
            tg.cancel_scope.cancel()

        tg.start_soon(stop_when_asked, name="stop on signal")
        tg.start_soon(lead, name=component)
    if lost is not None:
        raise lost
