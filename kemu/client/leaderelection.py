"""Leader election on a Lease, as client-go's tools/leaderelection.

A candidate tries every retry_period (jittered) to create the Lease or to take it over: a
lease held by another identity can be taken once it has not changed for its
leaseDurationSeconds, measured on the candidate's own clock from when it last saw the record
change (upstream's observedTime: immune to clock skew between holders). A new holder
increments leaseTransitions and sets acquireTime; renewing only moves renewTime. Writes are
compare-and-swap on resourceVersion, so two candidates cannot both win: the loser's Conflict
just means "try again later".

Once leader, `leading()` runs next to a renew loop. If the lease cannot be renewed for
renew_deadline, `leading()` is cancelled and `run` raises LeadershipLost: the component must
stop (as upstream's OnStoppedLeading exits), because another may already lead; kemu's runner
then starts it again from nothing as a candidate (kemu.component.runner.RestartInPlace). Every write
`leading()` makes carries the term's fencing token (kemu.client.fencing); with `fencing` the
apiserver refuses those of an ended term, and the first refusal stops leading the same way. When `run` is
cancelled, or `leading()` returns, a lease still held is released (holderIdentity "",
leaseDurationSeconds 1) so that a successor need not wait (ReleaseOnCancel). The release is one
attempt, as upstream's: on a stop the apiserver may be draining or gone, so it does not wait for
the server (give the elector a `release_client` that fails fast, `Client.one_attempt`), is
bounded by RELEASE_TIMEOUT, and on failure logs one line and returns: the lease then expires
after its leaseDurationSeconds.
"""

from __future__ import annotations

import argparse
import logging
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

import anyio

from kemu.api.v1 import types_pb2
from kemu.client.fencing import Fence, leading_as
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock, RealClock
from kemu.component.options import duration_flag
from kemu.component.runner import RestartInPlace
from kemu.component.virtual_clock import move_on_after, sleep_jittered
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import AlreadyExists, ApiError, Conflict, Fenced, NotFound
from kemu.machinery.fencing import FencingToken

logger = logging.getLogger(__name__)

JITTER_FACTOR: Final = 1.2
DEFAULT_LOCK_NAMESPACE: Final = "kube-system"
RELEASE_TIMEOUT: Final = 1.0
"""Bounds the one release attempt on stop (an answering server takes milliseconds)."""


class LeadershipLost(RestartInPlace):
    """The lease could not be renewed within renew_deadline, another holder was seen, or a
    write of the term was fenced: the component must stop leading and drop what it built as
    leader. The component runner starts it again from nothing, a candidate again."""


@dataclass(frozen=True)
class LeaderElectionConfig:
    lock_namespace: str = DEFAULT_LOCK_NAMESPACE
    lock_name: str = ""
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True
    fencing: bool = False
    """--leader-elect-fencing (kemu only): the apiserver refuses the writes of a term that has
    ended instead of letting them through as upstream does (kemu.machinery.fencing). Either
    way the writes made while leading carry the term's token."""

    def __post_init__(self) -> None:
        if not self.lock_name:
            raise ValueError("leader election: lock_name is required")
        if not self.identity:
            raise ValueError("leader election: identity is required")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("leader election: lease_duration must be greater than renew_deadline")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(
                f"leader election: renew_deadline must be greater than retry_period*{JITTER_FACTOR}"
            )
        if self.retry_period <= 0:
            raise ValueError("leader election: retry_period must be positive")


def new_identity() -> str:
    """hostname_uuid, as upstream's leader election identity."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def add_leader_election_flags(parser: argparse.ArgumentParser, *, lease_name: str) -> None:
    group = parser.add_argument_group("leader election")
    group.add_argument(
        "--leader-elect",
        action="store_true",
        help=f"do the work only while holding the lease {DEFAULT_LOCK_NAMESPACE}/{lease_name}",
    )
    group.add_argument(
        "--leader-elect-fencing",
        action="store_true",
        help="kemu only: the apiserver refuses this component's writes made as leader once "
        "its lease term has ended (upstream lets a stale leader write until it notices)",
    )
    group.add_argument(
        "--leader-elect-lease-duration",
        type=duration_flag,
        default=15.0,
        metavar="DURATION",
        help="how long a standby waits after the last renewal before taking the lease (15s)",
    )
    group.add_argument(
        "--leader-elect-renew-deadline",
        type=duration_flag,
        default=10.0,
        metavar="DURATION",
        help="how long the leader retries renewing before it gives up (10s)",
    )
    group.add_argument(
        "--leader-elect-retry-period",
        type=duration_flag,
        default=2.0,
        metavar="DURATION",
        help="how long to wait between attempts to acquire or renew the lease (2s)",
    )


def leader_election_config(
    args: argparse.Namespace, *, lease_name: str
) -> LeaderElectionConfig | None:
    """The election of the flags above, or None without --leader-elect. ValueError when the
    durations are inconsistent (renew deadline >= lease duration, ...) or when
    --leader-elect-fencing is given without --leader-elect."""
    if not args.leader_elect:
        if args.leader_elect_fencing:
            raise ValueError("--leader-elect-fencing needs --leader-elect")
        return None
    return LeaderElectionConfig(
        lock_namespace=DEFAULT_LOCK_NAMESPACE,
        lock_name=lease_name,
        identity=new_identity(),
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
        fencing=args.leader_elect_fencing,
    )


class LeaderElector:
    """Runs `leading` only while holding the lease. One elector runs once."""

    def __init__(
        self,
        client: ApiClient,
        config: LeaderElectionConfig,
        clock: Clock | None = None,
        *,
        on_new_leader: Callable[[str], None] | None = None,
        on_leader_status: Callable[[bool], None] | None = None,
        release_client: ApiClient | None = None,
    ) -> None:
        """on_new_leader(identity) is called whenever the observed holder changes (itself
        included); on_leader_status(True/False) when this elector starts or stops leading (a
        hook for a leader_election_master_status gauge). `release_client` (default `client`)
        makes the release on stop: one that does not wait for an unready server."""
        self._client = client
        self._release_client = release_client if release_client is not None else client
        self.config = config
        self._clock: Clock = clock or RealClock()
        self._on_new_leader = on_new_leader
        self._on_leader_status = on_leader_status
        self._lease: types_pb2.Lease | None = None  # the last version read or written
        self._observed_spec = b""
        self._observed_time = 0.0
        self._observed_holder = ""
        self._leading = False

    def is_leader(self) -> bool:
        return self._leading

    @property
    def leader(self) -> str:
        """The holder this elector last observed ("" if none)."""
        return self._observed_holder

    # ------------------------------------------------------------ one attempt

    def _observe(self, lease: types_pb2.Lease) -> None:
        spec = lease.spec.SerializeToString(deterministic=True)
        if spec != self._observed_spec:
            self._observed_spec = spec
            self._observed_time = self._clock.monotonic()
        self._lease = lease
        holder = lease.spec.holder_identity
        if holder != self._observed_holder:
            self._observed_holder = holder
            if holder:
                logger.info(
                    "lease %s/%s: new leader %s",
                    self.config.lock_namespace,
                    self.config.lock_name,
                    holder,
                )
                if self._on_new_leader is not None:
                    self._on_new_leader(holder)

    def _set_leading(self, leading: bool) -> None:
        if leading != self._leading:
            self._leading = leading
            if self._on_leader_status is not None:
                self._on_leader_status(leading)

    async def try_acquire_or_renew(self) -> bool:
        """One attempt to become or stay the holder; False on any failure."""
        cfg = self.config
        now = self._clock.now()
        duration = max(1, round(cfg.lease_duration))
        try:
            lease = await self._client.get(types_pb2.Lease, cfg.lock_name, cfg.lock_namespace)
        except NotFound:
            lease = types_pb2.Lease(
                metadata=types_pb2.ObjectMeta(name=cfg.lock_name, namespace=cfg.lock_namespace),
                spec=types_pb2.LeaseSpec(
                    holder_identity=cfg.identity,
                    lease_duration_seconds=duration,
                    acquire_time=timestamp(now),
                    renew_time=timestamp(now),
                    lease_transitions=0,
                ),
            )
            try:
                created = await self._client.create(lease)
            except (AlreadyExists, Conflict):
                return False
            except ApiError as e:
                logger.warning(
                    "lease %s/%s: create failed: %s", cfg.lock_namespace, cfg.lock_name, e
                )
                return False
            self._observe(created)
            return True
        except ApiError as e:
            logger.warning("lease %s/%s: get failed: %s", cfg.lock_namespace, cfg.lock_name, e)
            return False

        self._observe(lease)
        holder = lease.spec.holder_identity
        held_by_other = bool(holder) and holder != cfg.identity
        if held_by_other and not self._leading:
            expires = self._observed_time + lease.spec.lease_duration_seconds
            if self._clock.monotonic() < expires:
                logger.debug("lease %s/%s is held by %s", cfg.lock_namespace, cfg.lock_name, holder)
                return False
        if held_by_other and self._leading:
            # Someone took the lease from us (we must have missed renewing it).
            logger.warning(
                "lease %s/%s was taken over by %s", cfg.lock_namespace, cfg.lock_name, holder
            )
            return False

        updated = types_pb2.Lease()
        updated.CopyFrom(lease)
        spec = updated.spec
        if holder != cfg.identity:
            spec.acquire_time.CopyFrom(timestamp(now))
            spec.lease_transitions = lease.spec.lease_transitions + 1
        spec.holder_identity = cfg.identity
        spec.lease_duration_seconds = duration
        spec.renew_time.CopyFrom(timestamp(now))
        try:
            written = await self._client.update(updated)
        except ApiError as e:
            level = logging.DEBUG if isinstance(e, Conflict) else logging.WARNING
            logger.log(
                level, "lease %s/%s: update failed: %s", cfg.lock_namespace, cfg.lock_name, e
            )
            return False
        self._observe(written)
        return True

    # ------------------------------------------------------------ loops

    async def _acquire(self) -> None:
        cfg = self.config
        logger.info("attempting to acquire leader lease %s/%s", cfg.lock_namespace, cfg.lock_name)
        while not await self.try_acquire_or_renew():
            await sleep_jittered(self._clock, cfg.retry_period, JITTER_FACTOR)
        logger.info(
            "successfully acquired lease %s/%s as %s",
            cfg.lock_namespace,
            cfg.lock_name,
            cfg.identity,
        )
        self._set_leading(True)

    async def _renew_until_lost(self) -> None:
        """Renews every retry_period; returns when renewing has failed for renew_deadline,
        at once when another identity is seen holding the lease, and before any attempt
        once lease_duration has passed since the last renewal (a process that was frozen
        that long may have been replaced: it stops leading as soon as it runs again)."""
        cfg = self.config
        renewed = self._clock.monotonic()
        while True:
            await self._clock.sleep(cfg.retry_period)
            deadline = self._clock.monotonic() + cfg.renew_deadline
            while True:
                if self._clock.monotonic() - renewed >= cfg.lease_duration:
                    logger.error(
                        "lease %s/%s expired: not renewed for %.1fs",
                        cfg.lock_namespace,
                        cfg.lock_name,
                        self._clock.monotonic() - renewed,
                    )
                    return
                # Bounds an attempt that hangs (a frozen server); calls answer in milliseconds.
                async with move_on_after(
                    self._clock, max(deadline - self._clock.monotonic(), 0.001)
                ):
                    if await self.try_acquire_or_renew():
                        renewed = self._clock.monotonic()
                        break
                if self._observed_holder not in ("", cfg.identity):
                    return  # taken over: another may be acting as leader already
                if self._clock.monotonic() >= deadline:
                    logger.error(
                        "failed to renew lease %s/%s within %.1fs",
                        cfg.lock_namespace,
                        cfg.lock_name,
                        cfg.renew_deadline,
                    )
                    return
                await self._clock.sleep(cfg.retry_period)

    async def _release(self) -> None:
        cfg = self.config
        lease = self._lease
        if lease is None or lease.spec.holder_identity != cfg.identity:
            return
        released = types_pb2.Lease()
        released.CopyFrom(lease)
        now = timestamp(self._clock.now())
        released.spec.holder_identity = ""
        released.spec.lease_duration_seconds = 1
        released.spec.acquire_time.CopyFrom(now)
        released.spec.renew_time.CopyFrom(now)
        written = None
        with anyio.move_on_after(RELEASE_TIMEOUT):
            try:
                written = await self._release_client.update(released)
            except ApiError as e:
                logger.warning(
                    "lease %s/%s: release failed, it will expire in %ds: %s",
                    cfg.lock_namespace,
                    cfg.lock_name,
                    lease.spec.lease_duration_seconds,
                    e,
                )
                return
        if written is None:
            logger.warning(
                "lease %s/%s: release got no answer within %gs, it will expire in %ds",
                cfg.lock_namespace,
                cfg.lock_name,
                RELEASE_TIMEOUT,
                lease.spec.lease_duration_seconds,
            )
            return
        self._observe(written)
        logger.info("released lease %s/%s", cfg.lock_namespace, cfg.lock_name)

    async def run(self, leading: Callable[[], Awaitable[None]]) -> None:
        """Acquires the lease (waiting as long as it takes), then runs `leading` while renewing.

        Returns when `leading` returns; raises LeadershipLost when renewing fails (after
        cancelling `leading`). Exceptions from `leading` propagate.
        """
        lost = False
        try:
            await self._acquire()
            assert self._lease is not None
            fence = Fence(FencingToken.of(self._lease, enforce=self.config.fencing))
            async with anyio.create_task_group() as tg:

                async def renew() -> None:
                    nonlocal lost
                    await self._renew_until_lost()
                    lost = True
                    tg.cancel_scope.cancel()

                async def fenced() -> None:
                    await fence.lost.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(renew, name="leader-election renew")
                tg.start_soon(fenced, name="leader-election fence")
                try:
                    # Every write `leading` makes, in any task it starts, carries the term.
                    with leading_as(fence):
                        await leading()
                except Fenced:
                    if not fence.lost.is_set():
                        raise  # not a write of this term's (cannot be: the client marks it)
                finally:
                    tg.cancel_scope.cancel()
            if fence.lost.is_set():
                logger.error(
                    "lease %s: stopped leading: a write was refused: %s",
                    fence.token.lease,
                    fence.refusal,
                )
                lost = True
        except BaseExceptionGroup as eg:
            # Only the host task can fail (renew never raises): surface its own exception.
            if len(eg.exceptions) == 1:
                raise eg.exceptions[0] from None
            raise
        finally:
            self._set_leading(False)
            if self.config.release_on_cancel and not lost:
                # Shielded (the run is being cancelled); _release bounds itself.
                with anyio.CancelScope(shield=True):
                    await self._release()
        if lost:
            raise LeadershipLost(f"lost lease {self.config.lock_namespace}/{self.config.lock_name}")
