from __future__ import annotations

import argparse

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client import fencing
from kemu.client.fake import FakeClient
from kemu.client.interface import M
from kemu.client.leaderelection import (
    RELEASE_TIMEOUT,
    LeaderElectionConfig,
    LeaderElector,
    LeadershipLost,
    add_leader_election_flags,
    leader_election_config,
)
from kemu.component.clock import FakeClock
from kemu.machinery.errors import Unavailable
from kemu.machinery.fencing import FencingToken
from kemu.testing.fake_time import advance, settle, wait_until

Lease = types_pb2.Lease


def config(identity: str) -> LeaderElectionConfig:
    return LeaderElectionConfig("kube-system", "kube-scheduler", identity)


async def lease(fake: FakeClient) -> Lease:
    return await fake.get(Lease, "kube-scheduler", "kube-system")


class Leading:
    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled = False

    async def __call__(self) -> None:
        self.started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise


def test_config_is_validated() -> None:
    with pytest.raises(ValueError):
        LeaderElectionConfig("kube-system", "x", "me", lease_duration=5, renew_deadline=10)
    with pytest.raises(ValueError):
        LeaderElectionConfig("kube-system", "x", "")
    assert LeaderElectionConfig(lock_name="x", identity="me").lock_namespace == "kube-system"


@pytest.mark.anyio
async def test_acquires_a_missing_lease_renews_it_and_releases_on_cancel() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    statuses: list[bool] = []
    elector = LeaderElector(fake, config("a"), clock, on_leader_status=statuses.append)
    leading = Leading()
    async with anyio.create_task_group() as tg:
        tg.start_soon(elector.run, leading)
        with anyio.fail_after(2):
            await leading.started.wait()
        assert elector.is_leader()
        first = await lease(fake)
        assert first.spec.holder_identity == "a"
        assert first.spec.lease_duration_seconds == 15
        assert first.spec.lease_transitions == 0
        assert first.spec.acquire_time == first.spec.renew_time

        await advance(clock, 2.5)
        renewed = await lease(fake)
        assert renewed.spec.renew_time.seconds > first.spec.renew_time.seconds
        assert renewed.spec.acquire_time == first.spec.acquire_time
        assert renewed.spec.lease_transitions == 0
        tg.cancel_scope.cancel()
    assert leading.cancelled
    assert not elector.is_leader()
    assert statuses == [True, False]
    released = await lease(fake)
    assert released.spec.holder_identity == ""
    assert released.spec.lease_duration_seconds == 1

    # A released lease is taken at once, as a new transition.
    other = LeaderElector(fake, config("b"), clock)
    assert await other.try_acquire_or_renew()
    taken = await lease(fake)
    assert (taken.spec.holder_identity, taken.spec.lease_transitions) == ("b", 1)


@pytest.mark.anyio
async def test_takes_over_only_after_the_lease_has_expired() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    holder = LeaderElector(fake, config("old"), clock)
    assert await holder.try_acquire_or_renew()  # then "old" dies without releasing
    new_leaders: list[str] = []
    elector = LeaderElector(fake, config("new"), clock, on_new_leader=new_leaders.append)
    leading = Leading()
    async with anyio.create_task_group() as tg:
        tg.start_soon(elector.run, leading)
        await advance(clock, 14)
        assert not leading.started.is_set()
        assert new_leaders == ["old"]
        await advance(clock, 6)  # 15 s since the candidate first saw the record, plus a retry
        with anyio.fail_after(2):
            await leading.started.wait()
        taken = await lease(fake)
        assert taken.spec.holder_identity == "new"
        assert taken.spec.lease_transitions == 1
        assert taken.spec.acquire_time.seconds >= int(clock.now()) - 5
        assert new_leaders == ["old", "new"]
        tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_a_renewing_holder_keeps_the_lease() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    leader = LeaderElector(fake, config("a"), clock)
    candidate = LeaderElector(fake, config("b"), clock)
    leading_a, leading_b = Leading(), Leading()
    async with anyio.create_task_group() as tg:
        tg.start_soon(leader.run, leading_a)
        with anyio.fail_after(2):
            await leading_a.started.wait()
        tg.start_soon(candidate.run, leading_b)
        await advance(clock, 60)
        assert not leading_b.started.is_set()
        assert leader.is_leader() and not candidate.is_leader()
        assert (await lease(fake)).spec.holder_identity == "a"
        tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_failing_to_renew_cancels_leading_and_raises_leadership_lost() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    elector = LeaderElector(fake, config("a"), clock)
    leading = Leading()
    outcome: list[BaseException] = []

    async def run() -> None:
        try:
            await elector.run(leading)
        except LeadershipLost as e:
            outcome.append(e)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        with anyio.fail_after(2):
            await leading.started.wait()
        fake.fail("update", Unavailable("apiserver down"), resource="leases")
        await advance(clock, 2 + 9)
        assert not outcome  # still inside renew_deadline
        await advance(clock, 3)
        await wait_until(lambda: bool(outcome))
    assert leading.cancelled
    assert not elector.is_leader()
    assert isinstance(outcome[0], LeadershipLost)
    # The lease was not released (it could not be): it still names "a" until it expires.
    fake.heal()
    assert (await lease(fake)).spec.holder_identity == "a"


@pytest.mark.anyio
async def test_leading_returning_ends_run_and_releases() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    elector = LeaderElector(fake, config("a"), clock)
    done: list[bool] = []

    async def leading() -> None:
        await settle()
        done.append(True)

    with anyio.fail_after(2):
        await elector.run(leading)
    assert done == [True]
    assert (await lease(fake)).spec.holder_identity == ""


@pytest.mark.anyio
async def test_an_exception_in_leading_propagates_unwrapped() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    elector = LeaderElector(fake, config("a"), clock)

    async def leading() -> None:
        raise RuntimeError("controller crashed")

    with pytest.raises(RuntimeError, match="controller crashed"):
        await elector.run(leading)


@pytest.mark.anyio
async def test_two_candidates_racing_for_a_missing_lease_elect_one() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    a = LeaderElector(fake, config("a"), clock)
    b = LeaderElector(fake, config("b"), clock)
    results: dict[str, bool] = {}

    async def attempt(name: str, e: LeaderElector) -> None:
        results[name] = await e.try_acquire_or_renew()

    async with anyio.create_task_group() as tg:
        tg.start_soon(attempt, "a", a)
        tg.start_soon(attempt, "b", b)
    assert sorted(results.values()) == [False, True]
    winner = "a" if results["a"] else "b"
    assert (await lease(fake)).spec.holder_identity == winner


async def _run_until_lost(
    elector: LeaderElector, leading: Leading, out: list[BaseException]
) -> None:
    try:
        await elector.run(leading)
    except LeadershipLost as e:
        out.append(e)


@pytest.mark.anyio
async def test_a_leader_that_sees_another_holder_stops_at_once() -> None:
    """Chaos harness finding (seed 1, a paused scheduler leader): a leader that finds the
    lease held by another identity stops leading at that attempt, not after renew_deadline
    of retries during which it would still schedule next to the new leader."""
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    elector = LeaderElector(fake, config("a"), clock)
    leading = Leading()
    outcome: list[BaseException] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_run_until_lost, elector, leading, outcome)
        with anyio.fail_after(2):
            await leading.started.wait()
        taken = await lease(fake)
        taken.spec.holder_identity = "b"
        await fake.update(taken)
        await advance(clock, 2.5)  # one retry period: one attempt, well inside renew_deadline
        await wait_until(lambda: bool(outcome))
    assert leading.cancelled
    assert isinstance(outcome[0], LeadershipLost)


@pytest.mark.anyio
async def test_a_leader_frozen_past_its_lease_duration_stops_before_renewing() -> None:
    """A leader whose process did not run for lease_duration (SIGSTOP) may have been
    replaced: it stops leading when it runs again, without renewing."""
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    elector = LeaderElector(fake, config("a"), clock)
    leading = Leading()
    outcome: list[BaseException] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_run_until_lost, elector, leading, outcome)
        with anyio.fail_after(2):
            await leading.started.wait()
        before = await lease(fake)
        clock.advance(20)  # frozen: one jump past the lease duration (15s)
        await wait_until(lambda: bool(outcome))
    assert leading.cancelled
    assert isinstance(outcome[0], LeadershipLost)
    assert (await lease(fake)).spec.renew_time == before.spec.renew_time


class _Hanging(FakeClient):
    """A server that takes the update and never answers (a frozen apiserver)."""

    def __init__(self) -> None:
        super().__init__()
        self.updates = 0

    async def update(self, obj: M) -> M:
        self.updates += 1
        await anyio.sleep_forever()
        raise AssertionError


@pytest.mark.anyio
async def test_the_release_is_one_attempt_over_the_release_client(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    releaser = FakeClient(clock=clock)
    releaser.fail("update", Unavailable("the apiserver is draining"), resource="leases")
    elector = LeaderElector(fake, config("a"), clock, release_client=releaser)

    async def leading() -> None:
        await settle()

    with anyio.fail_after(2):
        await elector.run(leading)
    assert releaser.verbs("leases") == ["update"]  # one attempt, on the release client
    assert fake.verbs("leases") == ["get", "create"]  # the acquisition only
    # Not released: it still names "a" and expires after its duration, as upstream.
    assert (await lease(fake)).spec.holder_identity == "a"
    failed = [r.getMessage() for r in caplog.records if "release failed" in r.getMessage()]
    assert len(failed) == 1 and "expire in 15s" in failed[0], failed


@pytest.mark.anyio
async def test_a_release_that_gets_no_answer_gives_up_after_the_release_timeout() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    hanging = _Hanging()
    elector = LeaderElector(fake, config("a"), clock, release_client=hanging)
    leading = Leading()
    start = anyio.current_time()
    with anyio.fail_after(RELEASE_TIMEOUT + 2):
        async with anyio.create_task_group() as tg:
            tg.start_soon(elector.run, leading)
            await leading.started.wait()
            tg.cancel_scope.cancel()
    assert hanging.updates == 1
    assert anyio.current_time() - start >= RELEASE_TIMEOUT
    assert (await lease(fake)).spec.holder_identity == "a"


@pytest.mark.anyio
@pytest.mark.parametrize("enforce", [False, True])
async def test_what_leading_writes_carries_the_term_it_leads_in(enforce: bool) -> None:
    """kemu.client.fencing: inside `leading`, and in the tasks it starts, the fence names the
    lease, its leaseTransitions as acquired and the holder; outside it, nothing."""
    fake = FakeClient()
    seen: list[FencingToken | None] = []

    async def leading() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: _note(seen))
        _note_now(seen)

    cfg = LeaderElectionConfig("kube-system", "kube-scheduler", "a", fencing=enforce)
    with anyio.fail_after(5):
        await LeaderElector(fake, cfg, FakeClock()).run(leading)
    term = FencingToken("kube-system", "kube-scheduler", 0, "a", enforce)
    assert seen == [term, term]
    assert fencing.current() is None


async def _note(seen: list[FencingToken | None]) -> None:
    _note_now(seen)


def _note_now(seen: list[FencingToken | None]) -> None:
    fence = fencing.current()
    seen.append(fence.token if fence is not None else None)


def test_fencing_needs_leader_election() -> None:
    parser = argparse.ArgumentParser()
    add_leader_election_flags(parser, lease_name="kube-scheduler")
    with pytest.raises(ValueError, match="--leader-elect-fencing needs --leader-elect"):
        leader_election_config(
            parser.parse_args(["--leader-elect-fencing"]), lease_name="kube-scheduler"
        )
    elected = leader_election_config(
        parser.parse_args(["--leader-elect", "--leader-elect-fencing"]), lease_name="x"
    )
    assert elected is not None and elected.fencing
    plain = leader_election_config(parser.parse_args(["--leader-elect"]), lease_name="x")
    assert plain is not None and not plain.fencing
