"""`python -m autoscaler`: its flags (upstream's defaults, errors naming the flag) and the
component on a FakeClient and a fake cloud (leader election, readiness, a scale-up)."""

from __future__ import annotations

import functools

import anyio
import anyio.abc
import pytest

from autoscaler import app, options
from autoscaler.config import AutoscalerSettings, AutoscalingOptions
from kemu.api.v1 import types_pb2
from kemu.client.controlplane import LEASE_NAMESPACE
from kemu.client.fake import FakeClient
from kemu.client.leaderelection import LeaderElectionConfig
from kemu.component.clock import FakeClock
from kemu.component.health import CheckResult
from kemu.component.options import ComponentOptions
from kemu.component.runner import ComponentContext, run_component_async
from kemu.component.version import Version
from kemu.testing.builders import make_pod
from kemu.testing.fake_time import advance, wait_until
from tests.unit.autoscaler.fakes import FakeCloud, FakeGroup, template

pytestmark = pytest.mark.anyio

CLOUD = ["--cloud-provider-address", "127.0.0.1:8086"]


def test_flags_default_to_upstream_and_take_go_durations() -> None:
    args = options.build_parser().parse_args(CLOUD)
    assert args.scan_interval == 10
    assert args.max_node_provision_time == 900
    assert args.expendable_pods_priority_cutoff == -10
    assert args.expander == "least-waste"
    assert args.new_pod_scale_up_delay == 0
    assert args.scale_down_enabled is True
    args = options.build_parser().parse_args(
        [*CLOUD, "--scan-interval", "1s", "--max-node-provision-time", "2m30s"]
    )
    assert (args.scan_interval, args.max_node_provision_time) == (1, 150)


def test_scale_down_flags_default_to_upstream() -> None:
    args = options.build_parser().parse_args(CLOUD)
    assert args.scale_down_utilization_threshold == 0.5
    assert args.scale_down_unneeded_time == 600
    assert args.scale_down_unready_time == 1200
    assert args.scale_down_delay_after_add == 600
    assert args.scale_down_delay_after_delete == 0
    assert args.scale_down_delay_after_failure == 180
    assert args.max_empty_bulk_delete == 10
    assert args.max_drain_parallelism == 1
    assert args.max_graceful_termination_sec == 600
    assert args.max_pod_eviction_time == 120
    assert args.node_delete_delay_after_taint == 5
    assert args.unremovable_node_recheck_timeout == 300
    assert args.write_status_configmap is True
    assert args.daemonset_eviction_for_empty_nodes is False
    assert args.daemonset_eviction_for_occupied_nodes is True
    assert args.skip_nodes_with_custom_controller_pods is True
    args = options.build_parser().parse_args([*CLOUD, "--write-status-configmap", "false"])
    assert args.write_status_configmap is False
    assert args.skip_nodes_with_system_pods is True
    assert args.skip_nodes_with_local_storage is True
    args = options.build_parser().parse_args([*CLOUD, "--skip-nodes-with-local-storage=false"])
    assert args.skip_nodes_with_local_storage is False
    args = options.build_parser().parse_args([*CLOUD, "--scale-down-unneeded-time", "2s"])
    assert args.scale_down_unneeded_time == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cloud-provider-address", "nope"], "--cloud-provider-address: 'nope' is not HOST:PORT"),
        ([*CLOUD, "--expander", "cheapest"], "--expander: unknown expander 'cheapest'"),
        ([*CLOUD, "--scan-interval", "0s"], "--scan-interval: must be greater than 0"),
        ([*CLOUD, "--scan-interval", "10"], 'missing unit in duration "10"'),
        ([*CLOUD, "--new-pod-scale-up-delay=-1s"], 'invalid duration "-1s": must not be negative'),
        ([*CLOUD, "--scale-down-enabled", "maybe"], "'maybe' is not a boolean"),
        ([*CLOUD, "--scale-down-unneeded-time", "10"], 'missing unit in duration "10"'),
        (
            [*CLOUD, "--scale-down-utilization-threshold", "1.5"],
            "--scale-down-utilization-threshold: must be between 0 and 1",
        ),
        ([*CLOUD, "--max-empty-bulk-delete", "-1"], "--max-empty-bulk-delete: must not be"),
        ([*CLOUD, "--emulated-version", "1.38"], "--emulated-version"),
    ],
)
def test_bad_flags_stop_start_up_with_one_line_naming_the_flag(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        app.main(argv)
    assert exc.value.code not in (0, None)
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert message in err[-1]


async def start(
    tg: anyio.abc.TaskGroup,
    fake: FakeClient,
    cloud: FakeCloud,
    clock: FakeClock,
    identity: str,
    codes: dict[str, int],
) -> ComponentContext:
    election = LeaderElectionConfig(
        lock_namespace=LEASE_NAMESPACE,
        lock_name=options.LEASE_NAME,
        identity=identity,
        lease_duration=15,
        renew_deadline=10,
        retry_period=2,
    )
    settings = AutoscalerSettings(
        server="",
        cloud_provider_address="",
        autoscaling_options=AutoscalingOptions(version=Version(1, 37), scan_interval=1.0),
        election=election,
        seed=1,
    )
    body = functools.partial(app.serve, fake, cloud, settings, identity=identity)

    async def component(*, task_status: anyio.abc.TaskStatus[ComponentContext]) -> None:
        codes[identity] = await run_component_async(
            options.COMPONENT,
            ComponentOptions.for_tests(options.COMPONENT),
            body,
            clock=clock,
            handle_signals=False,
            task_status=task_status,
        )

    ctx: ComponentContext = await tg.start(component)
    return ctx


async def test_only_the_leader_scales_up() -> None:
    clock = FakeClock()
    pending = (
        make_pod("p").uid("p").req(cpu="1").condition("PodScheduled", "False", "Unschedulable")
    )
    fake = FakeClient(pending.obj(), clock=clock)
    leader_cloud = FakeCloud(FakeGroup("pool-a", 0, 3, template("pool-a")))
    standby_cloud = FakeCloud(FakeGroup("pool-a", 0, 3, template("pool-a")))
    codes: dict[str, int] = {}
    async with anyio.create_task_group() as tg:
        leader = await start(tg, fake, leader_cloud, clock, "a", codes)
        await wait_until(lambda: leader_cloud.calls == [("increase", "pool-a", 1)])
        standby = await start(tg, fake, standby_cloud, clock, "b", codes)
        await advance(clock, 5)
        assert standby_cloud.calls == []
        assert standby.checks.run_one("autoscaler") == CheckResult("autoscaler", True)
        assert leader.checks.run_one("autoscaler") == CheckResult("autoscaler", True)
        lease = await fake.get(types_pb2.Lease, options.LEASE_NAME, LEASE_NAMESPACE)
        assert lease.spec.holder_identity == "a"
        # The upcoming node holds the pod: a loop later, nothing more is asked.
        assert leader_cloud.calls == [("increase", "pool-a", 1)]

        async def event_written() -> bool:
            events = (await fake.list(types_pb2.Event, "default")).items
            return [e.reason for e in events] == ["TriggeredScaleUp"]

        for _ in range(50):
            if await event_written():
                break
            await advance(clock, 0.5)
        assert await event_written()
        leader.request_stop()
        standby.request_stop()
    assert codes == {"a": 0, "b": 0}
