"""The controller-manager process: flags, the controller registry, leader election wiring."""

from __future__ import annotations

import functools
from collections.abc import Mapping

import anyio
import pytest

from controllermanager import app
from controllermanager.app import (
    CONTROLLERS,
    TAINT_MANAGER_OF_NODE_LIFECYCLE,
    place_taint_eviction,
    run_with_client,
)
from controllermanager.config import ControllerConfigurations
from controllermanager.controller import Controller, ControllerContext, ControllerInit
from controllermanager.options import COMPONENT, LEASE_NAME, build_parser, select_controllers
from kemu.api.v1 import types_pb2
from kemu.client.controlplane import LEASE_NAMESPACE
from kemu.client.endpoints import apiserver_connection
from kemu.client.fake import FakeClient
from kemu.client.leaderelection import LeaderElectionConfig
from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGateError, FeatureGates
from kemu.component.health import CheckResult
from kemu.component.options import ComponentOptions
from kemu.component.runner import ComponentContext, run_component_async
from kemu.component.version import Version
from kemu.machinery.errors import Unavailable
from kemu.testing.builders import make_pdb, make_pod
from kemu.testing.fake_time import advance, settle, wait_until

pytestmark = pytest.mark.anyio


# ---------------------------------------------------------------- flags


def test_duration_flags_are_go_durations() -> None:
    args = build_parser().parse_args(
        ["--leader-elect-lease-duration", "1m30s", "--leader-elect-retry-period", "500ms"]
    )
    assert (args.leader_elect_lease_duration, args.leader_elect_retry_period) == (90.0, 0.5)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("2", 'time: missing unit in duration "2"'),
        ("15x", 'time: unknown unit "x" in duration "15x"'),
        ("-1s", 'time: invalid duration "-1s": must not be negative'),
        ("abc", 'time: invalid duration "abc"'),
    ],
)
def test_bad_duration_flags_exit_1_naming_the_flag(
    value: str, error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        app.main([f"--leader-elect-renew-deadline={value}"])
    assert exc.value.code == 1
    assert f"argument --leader-elect-renew-deadline: {error}" in capsys.readouterr().err


def test_controllers_flag_enables_and_disables_by_name() -> None:
    def init(ctx: ControllerContext) -> Controller:
        raise AssertionError

    known: dict[str, ControllerInit] = {"a": init, "b": init, "c": init}
    assert list(select_controllers("*", known)) == ["a", "b", "c"]
    assert list(select_controllers("*,-b", known)) == ["a", "c"]
    assert list(select_controllers("b", known)) == ["b"]
    assert list(select_controllers("", known)) == []
    with pytest.raises(ValueError, match="'nope' is not a known controller"):
        select_controllers("*,-nope", known)
    assert "disruption" in CONTROLLERS


@pytest.mark.parametrize(
    ("minor", "overrides", "separate"),
    [
        (28, {}, False),  # before KEP-3902: the node lifecycle controller's taint manager
        (29, {}, True),
        (33, {"SeparateTaintEvictionController": False}, False),
        (34, {}, True),
        (37, {}, True),  # the gate is removed, the controller stays separate
    ],
)
def test_separate_taint_eviction_controller_decides_who_runs_the_taint_eviction(
    minor: int, overrides: dict[str, bool], separate: bool
) -> None:
    """upstream SeparateTaintEvictionController: beta (on) 1.29, GA locked 1.34, removed 1.37.
    Without it, disabling taint-eviction-controller changes nothing: the taint manager comes
    with the node lifecycle controller; with it, that flag turns the eviction off."""
    gates = FeatureGates.for_version(Version(1, minor), overrides)
    for spec in ("*", "*,-taint-eviction-controller"):
        placed = place_taint_eviction(select_controllers(spec, CONTROLLERS), gates)
        evicting = (
            "taint-eviction-controller" in placed or TAINT_MANAGER_OF_NODE_LIFECYCLE in placed
        )
        assert evicting == (spec == "*" or not separate), (spec, list(placed))
        assert (TAINT_MANAGER_OF_NODE_LIFECYCLE in placed) == (not separate)
    without_lifecycle = select_controllers("*,-nodelifecycle", CONTROLLERS)
    placed = place_taint_eviction(without_lifecycle, gates)
    assert ("taint-eviction-controller" in placed) == separate
    assert TAINT_MANAGER_OF_NODE_LIFECYCLE not in placed


def test_separate_taint_eviction_controller_is_locked_from_1_34_and_gone_from_1_37() -> None:
    with pytest.raises(FeatureGateError, match="SeparateTaintEvictionController"):
        FeatureGates.for_version(Version(1, 34), {"SeparateTaintEvictionController": False})
    with pytest.raises(FeatureGateError, match="removed in 1.37"):
        FeatureGates.for_version(Version(1, 37), {"SeparateTaintEvictionController": True})
    with pytest.raises(FeatureGateError, match="does not exist at emulated version 1.28"):
        FeatureGates.for_version(Version(1, 28), {"SeparateTaintEvictionController": True})


def test_flag_errors_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        app.main(["--controllers", "bogus"])
    assert exc.value.code == 1
    assert "--controllers: 'bogus' is not a known controller" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        app.main(["--leader-elect", "--leader-elect-renew-deadline", "20s"])
    assert exc.value.code == 1
    assert "lease_duration must be greater than renew_deadline" in capsys.readouterr().err


def test_parser_defaults() -> None:
    args = build_parser().parse_args([])
    assert apiserver_connection(args) == ("127.0.0.1:6443", None)  # plaintext, no --kubeconfig
    assert args.metrics_port == 10257
    assert not args.leader_elect
    assert (
        args.leader_elect_lease_duration,
        args.leader_elect_renew_deadline,
        args.leader_elect_retry_period,
    ) == (15.0, 10.0, 2.0)


# ---------------------------------------------------------------- running


class Probe:
    """A controller that records that it ran, for the instance named `owner`."""

    def __init__(self, owner: str, running: set[str]) -> None:
        self.owner = owner
        self.running = running

    @property
    def name(self) -> str:
        return "probe"

    async def run(self) -> None:
        self.running.add(self.owner)
        try:
            await anyio.sleep_forever()
        finally:
            self.running.discard(self.owner)


def controllers(owner: str, running: set[str]) -> Mapping[str, ControllerInit]:
    """Every controller as the default flags configure them (nodeipam left out), and a
    probe."""
    configured = app.configure_controllers(CONTROLLERS, ControllerConfigurations())
    return {**configured, "probe": lambda ctx: Probe(owner, running)}


def election(identity: str) -> LeaderElectionConfig:
    return LeaderElectionConfig(
        lock_namespace=LEASE_NAMESPACE,
        lock_name=LEASE_NAME,
        identity=identity,
        lease_duration=15,
        renew_deadline=10,
        retry_period=2,
    )


async def start(
    tg: anyio.abc.TaskGroup,
    fake: FakeClient,
    clock: FakeClock,
    owner: str,
    running: set[str],
    codes: dict[str, int],
    config: LeaderElectionConfig | None,
) -> ComponentContext:
    options = ComponentOptions.for_tests(COMPONENT, shutdown_grace_period=60)
    body = functools.partial(
        run_with_client, fake, controllers(owner, running), config, identity=owner
    )

    async def component(*, task_status: anyio.abc.TaskStatus[ComponentContext]) -> None:
        codes[owner] = await run_component_async(
            COMPONENT,
            options,
            body,
            clock=clock,
            handle_signals=False,
            task_status=task_status,
        )

    ctx: ComponentContext = await tg.start(component)
    return ctx


def pdb_status(fake: FakeClient) -> int:
    pdb = fake._objects[("poddisruptionbudgets", "default", "pdb")]
    assert isinstance(pdb, types_pb2.PodDisruptionBudget)
    return pdb.status.disruptions_allowed


def world(clock: FakeClock) -> FakeClient:
    return FakeClient(
        make_pod("a").labels(app="web").condition("Ready").obj(),
        make_pod("b").labels(app="web").condition("Ready").obj(),
        make_pdb("pdb").selector(app="web").min_available(1).obj(),
        clock=clock,
    )


async def test_without_leader_election_controllers_run_and_readiness_follows_the_sync() -> None:
    clock = FakeClock()
    fake = world(clock)
    running: set[str] = set()
    codes: dict[str, int] = {}
    async with anyio.create_task_group() as tg:
        ctx = await start(tg, fake, clock, "solo", running, codes, None)
        await wait_until(lambda: running == {"solo"} and pdb_status(fake) == 1)
        assert ctx.checks.run_one("controllers") == CheckResult("controllers", True)
        lease = await fake.get(types_pb2.Lease, "kube-controller-manager-solo", "kube-system")
        assert lease.metadata.labels["kemu.io/component"] == "kube-controller-manager"
        ctx.request_stop()
    assert codes == {"solo": 0}
    assert running == set()


async def test_only_the_leader_runs_controllers_and_a_successor_takes_over_on_sigterm() -> None:
    clock = FakeClock()
    fake = world(clock)
    running: set[str] = set()
    codes: dict[str, int] = {}
    async with anyio.create_task_group() as tg:
        first = await start(tg, fake, clock, "first", running, codes, election("first"))
        await wait_until(lambda: running == {"first"})
        second = await start(tg, fake, clock, "second", running, codes, election("second"))
        await advance(clock, 10)
        assert running == {"first"}, "a standby must not run controllers"
        await wait_until(lambda: pdb_status(fake) == 1)
        lease = await fake.get(types_pb2.Lease, LEASE_NAME, LEASE_NAMESPACE)
        assert lease.spec.holder_identity == "first"

        first.request_stop()
        await wait_until(lambda: "first" in codes)
        assert codes["first"] == 0
        lease = await fake.get(types_pb2.Lease, LEASE_NAME, LEASE_NAMESPACE)
        assert lease.spec.holder_identity == "", "a leader stopping releases its lease"

        # The standby takes over at its next attempt, without waiting out the lease duration.
        await advance(clock, 5)
        await wait_until(lambda: running == {"second"})
        lease = await fake.get(types_pb2.Lease, LEASE_NAME, LEASE_NAMESPACE)
        assert lease.spec.holder_identity == "second"

        # The new leader reconciles: a pod going away is reflected in the PDB.
        await fake.delete(types_pb2.Pod, "b")
        await wait_until(lambda: pdb_status(fake) == 0)
        second.request_stop()
    assert codes == {"first": 0, "second": 0}


async def test_a_leader_that_cannot_renew_its_lease_exits_non_zero() -> None:
    clock = FakeClock()
    fake = world(clock)
    running: set[str] = set()
    codes: dict[str, int] = {}
    async with anyio.create_task_group() as tg:
        await start(tg, fake, clock, "only", running, codes, election("only"))
        await wait_until(lambda: running == {"only"})
        fake.fail("update", Unavailable("etcd is down"), resource="leases")
        for _ in range(20):
            await advance(clock, 1)
            if "only" in codes:
                break
        await wait_until(lambda: "only" in codes)
    assert codes == {"only": 1}
    assert running == set()


async def test_waits_for_the_apiserver_instead_of_failing() -> None:
    clock = FakeClock()
    fake = world(clock)
    fake.fail("version", Unavailable("connection refused"), times=3)
    running: set[str] = set()
    codes: dict[str, int] = {}
    async with anyio.create_task_group() as tg:
        ctx = await start(tg, fake, clock, "late", running, codes, None)
        await settle()
        assert running == set()
        result = ctx.checks.run_one("controllers")
        assert result is not None and not result.ok, "not ready before the informers synced"
        await advance(clock, 10)
        await wait_until(lambda: running == {"late"})
        assert fake.verbs().count("version") == 4
        ctx.request_stop()
    assert codes == {"late": 0}


async def test_a_standby_is_ready_and_a_leader_once_synced() -> None:
    clock = FakeClock()
    fake = world(clock)
    running: set[str] = set()
    codes: dict[str, int] = {}
    async with anyio.create_task_group() as tg:
        leader = await start(tg, fake, clock, "l", running, codes, election("l"))
        await wait_until(lambda: running == {"l"})
        standby = await start(tg, fake, clock, "s", running, codes, election("s"))
        await advance(clock, 3)
        assert leader.checks.is_ready()
        assert standby.checks.is_ready()
        assert running == {"l"}
        leader.request_stop()
        standby.request_stop()
    assert codes == {"l": 0, "s": 0}
